-- Client roots (roots_from_client): the client's folders narrow the
-- configured roots and nothing gets out of them: not by "..", not by a
-- link inside a folder, not by a move or copy to outside, not by a walk;
-- a client folder outside every root, or reached through a link out, is
-- ignored. Policies keep judging in-root paths of the configured root.
-- Runs on both resolvers (BURROW_RESOLVER=walk).

local H = require "helpers"
local client_roots = require "burrow.mcp.client_roots"

local function server(ws)
  return setmetatable({ ws = ws, subs = {}, logged = {}, session = { id = "client-roots" } }, { __index = {
    notify = function() end,
    log = function(self, _, msg) self.logged[#self.logged + 1] = msg end,
  } })
end

describe(H.tag("security: client roots"), function()
  local B, root, ws, srv
  before_each(function()
    B = H.tmpdir()
    root = B .. "/ws"
    H.write_all(B, {
      ["ws/a/in.txt"] = "in\n",
      ["ws/b/other.txt"] = "other\n",
      ["ws/private/p.txt"] = "p\n",
      ["ws/top.txt"] = "top\n",
      ["outside/secret.txt"] = "TOPSECRET\n",
    })
    H.symlink(root .. "/b", B, "ws/a/to-b")
    H.symlink(B .. "/outside", B, "ws/link-out")
    H.write(B, "deny-private.lua", [[
      return { name = "deny-private", rules = { { deny = "all", paths = { "private/**" }, reason = "private" } } }
    ]])
    ws = H.open({ roots = { { path = root } }, roots_from_client = true,
      policies = { "default", B .. "/deny-private.lua" } })
    srv = server(ws)
  end)
  after_each(H.cleanup)

  local function serve(list)
    srv.session.client_root_list = {}
    for i, p in ipairs(list) do srv.session.client_root_list[i] = { uri = "file://" .. p } end
    client_roots.apply(srv)
  end

  local function code_of(tool, args)
    local res, _, code = ws:call(tool, args, { session = srv.session }) -- the session's call
    return res and "OK" or code
  end

  it("only the client's folder is served; every way out is OUTSIDE_ROOT", function()
    serve { root .. "/a" }
    assert.are.equal("OK", code_of("read_file", { path = root .. "/a/in.txt" }))
    for _, p in ipairs { "top.txt", root .. "/top.txt", root .. "/a/../top.txt", root .. "/a/to-b/other.txt",
      root .. "/b/other.txt", root .. "/link-out/secret.txt", B .. "/outside/secret.txt" } do
      assert.are.equal("OUTSIDE_ROOT", code_of("read_file", { path = p }), p)
    end
    assert.are.equal("OUTSIDE_ROOT", code_of("write_file", { path = root .. "/b/new.txt", content = "x" }))
    assert.are.equal("OUTSIDE_ROOT", code_of("move", { source = root .. "/a/in.txt", destination = root .. "/moved.txt" }))
    assert.are.equal("OUTSIDE_ROOT", code_of("copy", { source = root .. "/b/other.txt", destination = root .. "/a/c.txt" }))
    assert.are.equal("OUTSIDE_ROOT", code_of("grep", { pattern = "other", path = root }))
    local g = assert(ws:call("grep", { pattern = ".", path = root .. "/a" }, { session = srv.session }))
    assert.is_nil(tostring(require("burrow.core").json.encode(g)):find("other", 1, true), "a walk crossed the link")
    assert.is_false(H.exists(root, "moved.txt"))
    assert.is_false(H.exists(root, "a/c.txt"))
    -- a watch is judged the same way
    assert.is_nil((require("burrow.workspace.watch").new {}:add(ws, root .. "/b/other.txt", function() end, srv.session)))
  end)

  it("a client folder outside every root, or through a link out, is ignored", function()
    serve { B .. "/outside", root .. "/link-out", "/etc" }
    assert.are.same({}, srv.session.scope)
    assert.are.equal(3, #srv.logged - 1) -- three ignored, then "serving ... none"
    assert.are.equal("OUTSIDE_ROOT", code_of("read_file", { path = root .. "/top.txt" }))
    assert.are.equal("OUTSIDE_ROOT", code_of("read_file", { path = B .. "/outside/secret.txt" }))
  end)

  it("naming a denied folder as the root does not re-anchor the rule", function()
    serve { root .. "/private" }
    assert.are.equal(1, #srv.session.scope)
    local _, msg, code = ws:call("read_file", { path = root .. "/private/p.txt" }, { session = srv.session })
    assert.are.equal("POLICY_DENIED", code, msg)
  end)

  it("a configured root inside the client's folder is served whole", function()
    serve { B }
    assert.are.equal("OK", code_of("read_file", { path = root .. "/top.txt" }))
    assert.are.equal("OUTSIDE_ROOT", code_of("read_file", { path = B .. "/outside/secret.txt" }))
  end)

  it("without roots_from_client the client's roots change nothing", function()
    ws.roots_from_client = false
    serve { root .. "/a" }
    assert.is_nil(srv.session.scope)
    assert.are.equal("OK", code_of("read_file", { path = root .. "/top.txt" }))
  end)

  -- Issue 26: a scope is the session's. Two sessions of one tenant share
  -- the workspace (one worker of burrow mcp --http serves both): what the
  -- second's client names neither widens nor empties the first's.
  it("another session's roots reach neither this session's scope nor the workspace", function()
    serve { root .. "/a" }
    local other = server(ws)
    other.session = { id = "other" }
    other.session.client_root_list = { { uri = "file://" .. root } }
    client_roots.apply(other)
    assert.are.equal("OUTSIDE_ROOT", code_of("read_file", { path = root .. "/top.txt" }), "widened by the other session")
    assert.are.equal("OK", code_of("read_file", { path = root .. "/a/in.txt" }))
    assert.is_truthy(ws:call("read_file", { path = root .. "/top.txt" }, { session = other.session }))
    other.session.client_root_list = {}
    client_roots.apply(other) -- an empty list: the other session serves nothing
    assert.are.equal("OK", code_of("read_file", { path = root .. "/a/in.txt" }), "emptied by the other session")
    assert.are.equal("OUTSIDE_ROOT", select(3, ws:call("read_file", { path = root .. "/a/in.txt" }, { session = other.session })))
    -- the Lua API's own calls (no session) keep the configured roots
    assert.is_truthy(ws:call("read_file", { path = root .. "/top.txt" }))
  end)
end)
