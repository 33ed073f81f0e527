-- Issue 28: the resolver is fixed when a root is opened. A workspace
-- opened without resolver= takes the process default as it is then; a
-- later burrow.set_resolver changes the workspaces opened after it, never
-- one already open (at b663a06 it was read live, at every resolution).

local H = require "helpers"
local burrow = require "burrow"

describe(H.tag("the resolver, fixed at open"), function()
  local before
  before_each(function() before = burrow.set_resolver() end)
  after_each(function()
    burrow.set_resolver(before)
    H.cleanup()
  end)

  it("a later set_resolver does not change an open workspace's roots", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "a\n")
    local other = before == "walk" and "openat2" or "walk"
    local ws = assert(burrow.open { roots = { { path = dir } } })
    assert.are.equal(before, ws.roots:info(1).resolver)
    assert(burrow.set_resolver(other))
    assert.are.equal(before, ws.roots:info(1).resolver, "the open workspace kept its resolver")
    assert(ws:call("read_file", { path = "a.txt" }))
    -- a workspace opened after takes the default then ($BURROW_RESOLVER,
    -- which each open applies, else the one just set)
    local env = os.getenv("BURROW_RESOLVER")
    local ws2 = assert(burrow.open { roots = { { path = dir } } })
    assert.are.equal(env and env ~= "" and env or other, ws2.roots:info(1).resolver)
    ws:close()
    ws2:close()
  end)

  it("is each workspace's own: two in one process resolve each with its own, and the core has no process setting", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "a\n")
    local walk = assert(burrow.open { roots = { { path = dir } }, resolver = "walk" })
    local at2 = assert(burrow.open { roots = { { path = dir } }, resolver = "openat2" })
    assert.are.equal("walk", walk.roots:info(1).resolver)
    assert.are.equal(H.core.backend() == "walk" and "walk" or "openat2", at2.roots:info(1).resolver)
    assert(walk:call("read_file", { path = "a.txt" }))
    assert(at2:call("read_file", { path = "a.txt" }))
    -- the core's backend() only reports the kernel's default: no setter
    local ok, err = pcall(H.core.backend, "walk")
    assert.is_false(ok)
    assert.matches("the resolver is a workspace's own", err, 1, true)
    -- a workspace opened again on another host state (ws:submit) keeps its own
    assert.are.equal("walk", walk.resolver)
    local done
    walk:submit("stat", { path = "a.txt" }, function(res) done = res end)
    local t0 = os.time()
    while not done and os.time() - t0 < 20 do walk:poll() H.core.sleep(0.005) end
    assert.truthy(done)
    walk:close()
    at2:close()
  end)
end)
