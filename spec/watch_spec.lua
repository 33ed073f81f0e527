-- The file watch: ws:watch / ws:poll_watch (lua/burrow/watch.lua) on the
-- inotify core (host/src/core/watch.c): files, folders, coalescing, the cap,
-- a queue overflow, closing.

local H = require "helpers"
local core = H.core

local function settle(s)
  local t = core.now()
  while core.now() - t < (s or 0.12) do end
end

-- Poll until fn-collected events arrive or a deadline passes.
local function poll_until(ws, got, n, secs)
  local t = core.now()
  repeat
    ws:poll_watch()
    if #got >= n then return true end
    settle(0.01)
  until core.now() - t > (secs or 10) -- a deadline, not a wait: it returns at the state
  return false
end

describe(H.tag("watch"), function()
  after_each(H.cleanup)

  it("reports a changed file, once per interval however many changes", function()
    local d = H.tmpdir()
    H.write(d, "a.txt", "1")
    -- an interval long enough that 500 writes fit in it on a loaded machine
    local ws = H.open(d, { watch_interval_ms = 2000 })
    local got = {}
    local w = assert(ws:watch("a.txt", function(ev) got[#got + 1] = ev end))
    for _ = 1, 500 do
      local f = assert(io.open(d .. "/a.txt", "a"))
      f:write("x")
      f:close()
    end
    assert.is_true(poll_until(ws, got, 1))
    assert.are.equal("a.txt", got[1].path)
    assert.is_true(got[1].changed)
    -- changes within the interval are held, then reported once
    for _ = 1, 500 do
      local f = assert(io.open(d .. "/a.txt", "a"))
      f:write("y")
      f:close()
    end
    local ran, next_s = ws:poll_watch()
    assert.are.equal(0, ran)
    assert.is_number(next_s)
    assert.is_true(next_s <= 2)
    assert.is_true(poll_until(ws, got, 2)) -- at the interval's end
    assert.are.equal(2, #got)
    settle(0.05)
    ws:poll_watch()
    assert.are.equal(2, #got) -- once
    w:close()
    H.write(d, "a.txt", "after close")
    settle(0.12)
    assert.are.equal(0, (ws:poll_watch()))
  end)

  it("follows the name: an atomic replace and a re-creation are changes", function()
    local d = H.tmpdir()
    H.write(d, "a.txt", "1")
    local ws = H.open(d)
    local got = {}
    assert(ws:watch("a.txt", function(ev) got[#got + 1] = ev end))
    H.write(d, "new.tmp", "2")
    assert(os.rename(d .. "/new.tmp", d .. "/a.txt"))
    assert.is_true(poll_until(ws, got, 1))
    settle(0.12)
    ws:poll_watch()
    local n = #got
    -- a write through burrow is the same replace
    assert(ws:call("write_file", { path = "a.txt", content = "3" }))
    assert.is_true(poll_until(ws, got, n + 1))
    -- a sibling's change is not this file's
    settle(0.12)
    ws:poll_watch()
    n = #got
    H.write(d, "other.txt", "x")
    settle(0.15)
    ws:poll_watch()
    assert.are.equal(n, #got)
  end)

  it("a folder: entries created and removed are list changes", function()
    local d = H.tmpdir()
    H.mkdir(d, "dir")
    local ws = H.open(d)
    local got = {}
    assert(ws:watch("dir", function(ev) got[#got + 1] = ev end))
    H.write(d, "dir/n.txt", "x")
    assert.is_true(poll_until(ws, got, 1))
    assert.is_true(got[1].list)
    settle(0.12)
    os.remove(d .. "/dir/n.txt")
    assert.is_true(poll_until(ws, got, 2))
    assert.is_true(got[2].list)
  end)

  it("is capped at max_watches", function()
    local d = H.tmpdir()
    H.write_all(d, { a = "1", b = "2", c = "3" })
    local ws = H.open(d, { max_watches = 2 })
    local a = assert(ws:watch("a", function() end))
    assert(ws:watch("b", function() end))
    local none, msg, code = ws:watch("c", function() end)
    assert.is_nil(none)
    assert.are.equal("TOO_LARGE", code, msg)
    a:close()
    assert(ws:watch("c", function() end))
  end)

  it("two watches of one folder share the kernel's watch; closing one keeps the other", function()
    local d = H.tmpdir()
    H.write_all(d, { a = "1", b = "2" })
    local ws = H.open(d)
    local ga, gb = {}, {}
    local a = assert(ws:watch("a", function(ev) ga[#ga + 1] = ev end))
    assert(ws:watch("b", function(ev) gb[#gb + 1] = ev end))
    a:close()
    H.write(d, "b", "changed")
    assert.is_true(poll_until(ws, gb, 1))
    assert.are.equal(0, #ga)
  end)

  it("survives an inotify queue overflow: every watch is reported", function()
    local d = H.tmpdir()
    H.write_all(d, { hot = "", cold = "" })
    local w = core.watcher(8, 0)
    local ws = H.open(d)
    local h1 = assert(ws.roots:handle(1, "hot", false))
    local h2 = assert(ws.roots:handle(1, "cold", false))
    local hot, cold = assert(w:add(ws.roots, h1)), assert(w:add(ws.roots, h2))
    -- alternating events are not merged by the kernel: past the queue
    local max = tonumber(io.open("/proc/sys/fs/inotify/max_queued_events"):read("l"))
    for _ = 1, max // 2 + 100 do
      local f = io.open(d .. "/hot", "a")
      f:write("x")
      f:close()
    end
    local read = w:read()
    assert.is_true(read <= max + 1, "the kernel dropped events: " .. read)
    local seen = {}
    for _, ev in ipairs((w:due(core.now()))) do seen[ev.id] = ev.changed end
    assert.is_true(seen[hot])
    assert.is_true(seen[cold], "an overflow marks every watch, the quiet one too")
    w:close()
  end)

  it("poll_watch and watch_fd before any watch; closing the workspace closes its watches", function()
    local d = H.tmpdir()
    H.write(d, "a", "1")
    local ws = H.open(d)
    assert.are.equal(0, (ws:poll_watch()))
    assert.is_nil(ws:watch_fd())
    assert(ws:watch("a", function() end))
    assert.is_number(ws:watch_fd())
    ws:close()
  end)
end)
