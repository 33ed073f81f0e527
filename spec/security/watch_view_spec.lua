-- A folder watch tells nothing the policies hide. inotify names every
-- entry created, removed or moved in a watched directory, and a watch
-- reported each as a change of the folder: with `secrets`, a subscription
-- to "." was notified when credentials.json appeared, and one to the outer
-- path of a nested root when an entry that root's rules hide did (an
-- existence and activity oracle for what a listing leaves out). Now a
-- folder's entry changes are reported only when its listing, as the
-- watching session may see it, changed; a folder too big to list at each
-- change (watch.VIEW_MAX entries) reports none of them (fail closed).
-- Every case waits for the kernel's event to reach the process (a plain
-- watcher on the same folder reports it) before asking whether the watch
-- under test said anything. Both resolvers.

local F = require "security.fixture"
local core = require "burrow.core"
local watch = require "burrow.workspace.watch"

-- The policies under test: a declared rule (secrets) and a check() that
-- hides names starting with "private" (judged per object).
local CHECK = [[return { name = "noprivate", check = function(req)
  if req.resolved and req.resolved:match("^private") or (req.resolved or ""):match("/private[^/]*$") then
    return "deny", "private"
  end
end }]]

-- A plain watcher on path (no views): it shows when the kernel's event
-- for a change there has come; and the wait for it (a state, not a time).
local function kernel_watch(ws, path)
  local raw = core.watcher(4, 0)
  local h = assert(ws.roots:handle(ws.roots:map(path)))
  assert(raw:add(ws.roots, h))
  h:close()
  return raw, function()
    local deadline = core.now() + 20
    repeat
      raw:read()
      if #raw:due(core.now()) > 0 then return end
      assert(core.now() < deadline, "the kernel's event never came")
    until false
  end
end

describe(F.tag("security: a folder watch tells nothing the policies hide"), function()
  local W

  before_each(function()
    W = F.mktemp()
    F.sh(("mkdir -p %s/ws/sub %s/ws/lib/vendor"):format(F.q(W), F.q(W)))
    F.write_host(W .. "/ws/a.txt", "a\n")
    F.write_host(W .. "/ws/lib/vendor/pub.txt", "public\n")
  end)
  after_each(function() F.rmtree(W) end)

  -- the set under test (every event due at once) and a plain watcher on
  -- the same folder, which shows when the kernel's event has come
  local function watching(ws, path)
    local got = {}
    local set = watch.new { max = 8, interval_ms = 0 }
    assert(set:add(ws, path, function(ev) got[#got + 1] = ev end))
    -- until the kernel's event for the last change is here, then what
    -- the set under test reports
    local raw, arrived = kernel_watch(ws, path)
    local function settle()
      arrived()
      set:poll()
    end
    return got, settle, function() set:close(); raw:close() end
  end

  it("secrets: an entry the rules hide appears and goes unseen; a visible one is reported", function()
    local ws = F.open({ { path = W .. "/ws", mount = "/workspace", mode = "rw" } }, { policies = { "default", "secrets" } })
    local got, settle, close = watching(ws, "/workspace")
    F.write_host(W .. "/ws/credentials.json", "{}")
    settle()
    assert.equal(0, #got, "the creation of a hidden entry was reported")
    os.remove(W .. "/ws/credentials.json")
    settle()
    assert.equal(0, #got, "the removal of a hidden entry was reported")
    F.write_host(W .. "/ws/b.txt", "b\n")
    settle()
    assert.equal(1, #got, "a visible entry's creation was not reported")
    assert.is_true(got[1].list)
    -- a visible file replaced by a rename over it (an editor's save, an
    -- atomic write): its name stays, its size and time change
    F.write_host(W .. "/ws/sub/b.new", "a longer b\n")
    assert(os.rename(W .. "/ws/sub/b.new", W .. "/ws/b.txt"))
    settle()
    assert.equal(2, #got, "a visible file replaced under its name was not reported")
    os.remove(W .. "/ws/b.txt")
    settle()
    assert.equal(3, #got, "a visible entry's removal was not reported")
    close()
  end)

  it("check(): an entry a policy's check() hides goes unseen, also renamed into view and back", function()
    F.write_host(W .. "/p.lua", CHECK)
    local ws = F.open({ { path = W .. "/ws", mount = "/workspace", mode = "rw" } }, { policies = { "default", W .. "/p.lua" } })
    local got, settle, close = watching(ws, "/workspace/sub")
    F.write_host(W .. "/ws/sub/private-plan.txt", "x\n")
    settle()
    assert.equal(0, #got)
    -- renamed to a visible name: a listing shows it now
    assert(os.rename(W .. "/ws/sub/private-plan.txt", W .. "/ws/sub/plan.txt"))
    settle()
    assert.equal(1, #got)
    assert(os.rename(W .. "/ws/sub/plan.txt", W .. "/ws/sub/private-plan.txt"))
    settle()
    assert.equal(2, #got, "the visible name going away was not reported")
    close()
  end)

  it("a nested root's rules hold for a watch of its folder through the outer root", function()
    F.write_host(W .. "/p.lua", [[return { name = "noconf", rules = { { deny = { "read", "list" },
      paths = { "conf", "conf/**" }, reason = "conf is private" } } }]])
    -- the rule is the nested root's: scoped by req.root in a check() would
    -- do the same; a declared rule applies to every root, so the outer
    -- root's own lib/vendor/conf is the nested one's conf too
    local ws = F.open({ { path = W .. "/ws", mount = "/workspace", mode = "rw" },
      { path = W .. "/ws/lib/vendor", mount = "/vendor", mode = "rw" } },
      { policies = { "default", W .. "/p.lua" } })
    local got, settle, close = watching(ws, "/workspace/lib/vendor")
    F.sh(("mkdir %s/ws/lib/vendor/conf"):format(F.q(W)))
    settle()
    assert.equal(0, #got, "the nested root's hidden folder was reported through the outer path")
    F.write_host(W .. "/ws/lib/vendor/new.txt", "n\n")
    settle()
    assert.equal(1, #got)
    close()
  end)

  it("the view is the watcher's, so a set adopted by another Lua state (an HTTP worker) judges alike", function()
    local ws = F.open({ { path = W .. "/ws", mount = "/workspace", mode = "rw" } }, { policies = { "default", "secrets" } })
    local owner = watch.new { max = 8, interval_ms = 0 }
    local id = assert(owner:add(ws, "/workspace", function() end))
    local wid = owner:id()
    local got = {}
    local adopted = watch.adopt(assert(core.watcher_find(wid)))
    adopted:track(id, "/workspace", function(ev) got[#got + 1] = ev end, ws, ws.session)
    local raw, arrived = kernel_watch(ws, "/workspace")
    local function settle()
      arrived()
      adopted:poll()
    end
    F.write_host(W .. "/ws/id_rsa", "key")
    settle()
    assert.equal(0, #got)
    F.write_host(W .. "/ws/c.txt", "c\n")
    settle()
    assert.equal(1, #got)
    raw:close()
    owner:drop()
    owner:close()
  end)

  it("a folder past watch.VIEW_MAX entries reports no entry change (fail closed)", function()
    local ws = F.open({ { path = W .. "/ws", mount = "/workspace", mode = "rw" } }, { policies = { "default", "secrets" } })
    local max = watch.VIEW_MAX
    watch.VIEW_MAX = 3
    for i = 1, 3 do F.write_host(W .. "/ws/sub/f" .. i, "x") end
    local ok, err = pcall(function()
      local got, settle, close = watching(ws, "/workspace/sub")
      F.write_host(W .. "/ws/sub/f4", "x")
      settle()
      assert.equal(0, #got)
      close()
    end)
    watch.VIEW_MAX = max
    assert(ok, err)
  end)

  it("with nothing hidden (no rules, no check() of objects) every entry change is reported as before", function()
    local ws = F.open({ { path = W .. "/ws", mount = "/workspace", mode = "rw" } }, { policies = { "default" } })
    local got, settle, close = watching(ws, "/workspace")
    F.write_host(W .. "/ws/credentials.json", "{}")
    settle()
    assert.equal(1, #got)
    close()
  end)
end)
