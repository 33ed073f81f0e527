-- Changes heard through the state store (host/src/core/changes.c): a
-- write burrow makes through one workspace reaches the watches of another
-- that shares the store, where inotify cannot see it (two folders whose
-- relation only the store knows, the watching root's inotify off), and an
-- inotify report of the same change is not told twice.

local H = require "helpers"
local core = H.core

local function settle(s)
  local t = core.now()
  while core.now() - t < (s or 0.12) do end
end

-- Poll until n events came or secs passed.
local function poll_until(ws, got, n, secs)
  local t = core.now()
  repeat
    ws:poll_watch()
    if #got >= n then return true end
    settle(0.01)
  until core.now() - t > (secs or 5)
  return false
end

-- Two workspaces on two folders, both mounted at /w; a watches with
-- inotify off, b writes. store: the one they share (nil: each its own).
local function pair(store, b_store, a_files, b_files)
  local da, db = H.tmpdir(), H.tmpdir()
  H.write_all(da, a_files or { ["f.txt"] = "a" })
  H.write_all(db, b_files or { ["f.txt"] = "b" })
  local a = H.open { roots = { { path = da, mount = "/w", inotify = false } }, state = store }
  local b = H.open { roots = { { path = db, mount = "/w" } }, state = b_store or store }
  return a, b, da, db
end

describe(H.tag("changes through the state store"), function()
  after_each(H.cleanup)

  it("a write through one workspace reaches another's watch where inotify is off", function()
    local st = core.state_open { kind = "memory" }
    local a, b = pair(st)
    assert.is_true(a.changes)
    local got = {}
    assert(a:watch("/w/f.txt", function(ev) got[#got + 1] = ev end))
    assert(b:call("write_file", { path = "/w/f.txt", content = "changed" }))
    assert.is_true(poll_until(a, got, 1))
    assert.are.equal("/w/f.txt", got[1].path)
    assert.is_true(got[1].changed)
    -- a folder watch hears an entry made, and one removed
    local seen = {}
    assert(a:call("mkdir", { path = "/w/d" }))
    assert(a:watch("/w/d", function(ev) seen[#seen + 1] = ev end))
    assert(b:call("mkdir", { path = "/w/d" }))
    assert(b:call("write_file", { path = "/w/d/new.txt", content = "n" }))
    assert.is_true(poll_until(a, seen, 1))
    assert.is_true(seen[1].list)
    st:close()
  end)

  it("hears nothing when the stores differ (the test above is not inotify's doing)", function()
    local a, b = pair(core.state_open { kind = "memory" }, core.state_open { kind = "memory" })
    local got = {}
    assert(a:watch("/w/f.txt", function(ev) got[#got + 1] = ev end))
    assert(b:call("write_file", { path = "/w/f.txt", content = "changed" }))
    assert.is_false(poll_until(a, got, 1, 0.5))
  end)

  it("a root with inotify off hears its own workspace's writes, and not outside ones", function()
    local d = H.tmpdir()
    H.write(d, "f.txt", "1")
    local ws = H.open { roots = { { path = d, inotify = false } } }
    local got = {}
    assert(ws:watch("f.txt", function(ev) got[#got + 1] = ev end))
    H.write(d, "f.txt", "from outside")
    assert.is_false(poll_until(ws, got, 1, 0.4))
    assert(ws:call("write_file", { path = "f.txt", content = "through burrow" }))
    assert.is_true(poll_until(ws, got, 1))
  end)

  it("one report for a change inotify and the store both tell", function()
    local st = core.state_open { kind = "memory" }
    local d = H.tmpdir()
    H.write(d, "f.txt", "1")
    -- a second root with inotify off makes this workspace publish
    local other = H.tmpdir()
    local ws = H.open { roots = { { path = d, mount = "/w" }, { path = other, mount = "/o", inotify = false } },
      state = st }
    assert.is_true(ws.changes)
    local got = {}
    assert(ws:watch("/w/f.txt", function(ev) got[#got + 1] = ev end))
    assert(ws:call("write_file", { path = "/w/f.txt", content = "2" }))
    assert.is_true(poll_until(ws, got, 1))
    -- past several intervals: no second report of the same change
    assert.is_false(poll_until(ws, got, 2, 0.5))
    assert.are.equal(1, #got)
    -- the store's word arriving after inotify's report (another
    -- instance's echo, late): taken as the same change
    H.write(d, "f.txt", "3")
    assert.is_true(poll_until(ws, got, 2))
    assert(st:change("", "/w", "f.txt", false))
    assert.is_false(poll_until(ws, got, 3, 0.5))
    assert.are.equal(2, #got)
    -- while a change told only by the store, later, still is
    local p = H.tmpdir()
    H.write(p, "f.txt", "x")
    local far = H.open { roots = { { path = p, mount = "/w" } }, state = st }
    settle(1.1) -- past the echo window (BW_WATCH_ECHO_MS) of the last inotify report
    assert(far:call("write_file", { path = "/w/f.txt", content = "from afar" }))
    assert.is_true(poll_until(ws, got, 3))
    st:close()
  end)

  it("a tenant hears only its own tenant's changes", function()
    local st = core.state_open { kind = "memory" }
    local da, db = H.tmpdir(), H.tmpdir()
    H.write(da, "f.txt", "a")
    H.write(db, "f.txt", "b")
    local a = H.open { roots = { { path = da, mount = "/w", inotify = false } }, state = st,
      session = { id = "a", tenant = "alpha" } }
    local b = H.open { roots = { { path = db, mount = "/w" } }, state = st, session = { id = "b", tenant = "beta" } }
    local b2 = H.open { roots = { { path = db, mount = "/w" } }, state = st, session = { id = "c", tenant = "alpha" } }
    local got = {}
    assert(a:watch("/w/f.txt", function(ev) got[#got + 1] = ev end))
    assert(b:call("write_file", { path = "/w/f.txt", content = "beta's" }))
    assert.is_false(poll_until(a, got, 1, 0.4))
    assert(b2:call("write_file", { path = "/w/f.txt", content = "alpha's" }))
    assert.is_true(poll_until(a, got, 1))
    st:close()
  end)

  it("a dry run, a read and a refused write tell nothing", function()
    local st = core.state_open { kind = "memory" }
    local a, b = pair(st, nil, { ["f.txt"] = "old\n" }, { ["f.txt"] = "old\n" })
    local got = {}
    assert(a:watch("/w/f.txt", function(ev) got[#got + 1] = ev end))
    assert(b:call("edit_file", { path = "/w/f.txt", edits = { { old_text = "old", new_text = "new" } }, dry_run = true }))
    assert(b:call("read_file", { path = "/w/f.txt" }))
    assert.is_nil(b:call("write_file", { path = "/w/../escape.txt", content = "x" }))
    assert.is_false(poll_until(a, got, 1, 0.4))
    st:close()
  end)

  it("the file store says it has none, naming those that do", function()
    local path = H.tmpfile("counters")
    local st = core.state_open { kind = "file", path = path }
    local ok, msg, code = st:publish("t", "changes", "x")
    assert.is_nil(ok)
    assert.are.equal("INVALID_ARGUMENT", code)
    assert.matches("embedded", msg)
    assert.matches("Redis", msg)
    local d = H.tmpdir()
    local ws, err = H.burrow.open { roots = { { path = d, inotify = false } }, state = st }
    assert.is_nil(ws)
    assert.matches("inotify: false", err)
    st:close()
  end)
end)
