-- Resources and the file watch: what an agent (or a client) can name by
-- URI or subscription is what read_file can read, nothing more.
--   * resource URIs that escape (outside, "..", "%2e%2e", "%2f", links out)
--     are refused exactly as read_file refuses the path;
--   * denied files are not listed, read or subscribed;
--   * a watch stays on the object that was judged: a path swapped for a
--     link (before or after the watch is added) never watches the target.
--   * subscriptions/listen (MCP 2026-07-28) watches what subscribe would
--     and nothing else: an escaping or denied URI is left out of what it
--     honours; what one listen may hold is bounded.
-- Runs on both resolvers (BURROW_RESOLVER=walk).

local H = require "helpers"
local resources = require "burrow.mcp.resources"
local listen = require "burrow.mcp.listen"
local core = H.core

local function settle(s)
  local t = core.now()
  while core.now() - t < s do end
end

-- The MCP server's side resources.lua uses, recording what it sends.
local function server(ws)
  local sent = {}
  local channel = require("burrow.mcp").channel()
  channel.can_listen = true
  local s = setmetatable({ ws = ws, subs = {}, sent = sent, listens = {}, channel = channel }, { __index = {
    notify = function(self, method, params) self.sent[#self.sent + 1] = { method = method, params = params } end,
    send = function(self, msg) self.sent[#self.sent + 1] = msg end,
    log = function() end,
  } })
  return s
end

local function uri(p) return resources.uri(p) end

describe(H.tag("security: resources and watch"), function()
  local B, root, ws, srv
  before_each(function()
    B = H.tmpdir()
    root = B .. "/ws"
    H.write_all(B, {
      ["ws/ok.txt"] = "ok\n",
      ["ws/credentials.json"] = "{}",
      ["ws/.ssh/id"] = "key",
      ["ws/sub/in.txt"] = "in\n",
      ["outside/secret.txt"] = "TOPSECRET\n",
    })
    H.symlink(B .. "/outside/secret.txt", B, "ws/link-file")
    H.symlink(B .. "/outside", B, "ws/link-dir")
    ws = H.open({ roots = { { path = root } }, policies = { "default", "secrets" } })
    srv = server(ws)
  end)
  after_each(H.cleanup)

  local function refused_like_read(u, path)
    local res, rpc, msg, data = resources.read(srv, { uri = u })
    assert.is_nil(res, u .. " was read")
    local direct, _, code = ws:call("read_file", { path = path })
    assert.is_nil(direct, path .. " was read by read_file")
    assert.are.equal(code, data and data.code, u .. ": " .. tostring(msg))
    assert.is_number(rpc)
    local sub, _, _, sdata = resources.subscribe(srv, { uri = u })
    assert.is_nil(sub, u .. " was subscribed")
    assert.is_truthy(sdata and sdata.code, u)
    -- a listen naming it watches nothing, and says so in its acknowledgement
    local watching = srv.watches and srv.watches:count() or 0
    assert.is_nil((listen.open(srv, { notifications = { resourceSubscriptions = H.json.array { u } } }, "L " .. u)))
    local ack = srv.sent[#srv.sent]
    assert.are.equal("notifications/subscriptions/acknowledged", ack.method)
    assert.are.equal(0, #ack.params.notifications.resourceSubscriptions, u .. " was honoured")
    assert.are.equal(u, ack.params._meta["burrow/refused"][1].uri)
    assert.are.equal(watching, srv.watches and srv.watches:count() or 0, u .. " was watched")
  end

  it("URIs that escape are refused as read_file refuses them", function()
    refused_like_read("file://" .. B .. "/outside/secret.txt", B .. "/outside/secret.txt")
    refused_like_read("file://" .. root .. "/../outside/secret.txt", root .. "/../outside/secret.txt")
    refused_like_read("file://" .. root .. "/%2e%2e/outside/secret.txt", root .. "/../outside/secret.txt")
    refused_like_read("file://" .. root .. "/sub%2f%2E%2E%2f%2e%2e%2foutside/secret.txt", root .. "/sub/../../outside/secret.txt")
    refused_like_read(uri(root .. "/link-file"), root .. "/link-file")
    refused_like_read(uri(root .. "/link-dir/secret.txt"), root .. "/link-dir/secret.txt")
    refused_like_read(uri(root .. "/credentials.json"), root .. "/credentials.json")
    refused_like_read(uri(root .. "/.ssh/id"), root .. "/.ssh/id")
  end)

  it("a listen holds at most MAX_URIS URIs, a connection at most MAX listens; a bad filter is refused whole", function()
    local many = H.json.array {}
    for i = 1, listen.MAX_URIS + 1 do many[i] = uri(root .. "/ok.txt") .. "?" .. i end
    local ok, rpc, msg = listen.open(srv, { notifications = { resourceSubscriptions = many } }, "big")
    assert.is_nil(ok)
    assert.are.equal(-32602, rpc)
    assert.matches("at most " .. listen.MAX_URIS, msg)
    for _, f in ipairs { "x", H.json.array {}, { toolsListChanged = "yes" }, { resourceSubscriptions = { a = 1 } },
      { resourceSubscriptions = H.json.array { 7 } } } do
      local none, code = listen.open(srv, { notifications = f }, "bad")
      assert.is_nil(none)
      assert.are.equal(-32602, code)
    end
    assert.is_nil(next(srv.listens), "a refused listen was kept")
    for i = 1, listen.MAX do assert.is_nil((listen.open(srv, { notifications = {} }, i))) end
    local over, code, why = listen.open(srv, { notifications = {} }, "one more")
    assert.is_nil(over)
    assert.are.equal(-32000, code)
    assert.matches("cancel one first", why)
    -- an open listen's id cannot be taken again; 1 and 1.0 are one id
    local dup, dcode = listen.open(srv, { notifications = {} }, 1.0)
    assert.is_nil(dup)
    assert.is_true(dcode == -32600 or dcode == -32000)
    listen.cancel(srv, { requestId = 1.0 })
    assert.is_nil(srv.listens[listen.key(1)], "the cancel naming 1.0 ended listen 1")
  end)

  it("malformed URIs are invalid params, never a path", function()
    for _, u in ipairs { "file://other/" .. root .. "/ok.txt", "file:" .. root .. "/ok.txt", root .. "/ok.txt",
      "file://" .. root .. "/ok.txt%", "file://" .. root .. "/ok%2.txt", "file://" .. root .. "/ok%00.txt",
      "file://" .. root .. "/ok.txt#x", "file://" .. root .. "/ok.txt?x" } do
      local res, rpc = resources.read(srv, { uri = u })
      assert.is_nil(res, u)
      assert.are.equal(-32602, rpc, u)
    end
  end)

  it("denied files and what links lead to are not listed", function()
    local res = assert(resources.list(srv, {}))
    local names = {}
    for _, r in ipairs(res.resources) do names[#names + 1] = r.name end
    table.sort(names)
    assert.are.same({ "ok.txt", "sub/in.txt" }, names)
  end)

  it("a denied folder cannot be watched", function()
    local none, _, code = ws:watch(".ssh", function() end)
    assert.is_nil(none)
    assert.are.equal("POLICY_DENIED", code)
  end)

  it("a file swapped for a link after the watch: the target's changes are never reported", function()
    local got = {}
    assert(ws:watch("ok.txt", function(ev) got[#got + 1] = ev end))
    os.remove(root .. "/ok.txt")
    H.symlink(B .. "/outside/secret.txt", B, "ws/ok.txt")
    settle(0.15)
    ws:poll_watch() -- the swap itself is a change of the name
    local n = #got
    for i = 1, 5 do
      H.write(B, "outside/secret.txt", "changed " .. i)
      settle(0.03)
    end
    settle(0.15)
    ws:poll_watch()
    assert.are.equal(n, #got, "a change outside the root was reported")
    -- and a read through the name is refused
    assert.is_nil((ws:call("read_file", { path = "ok.txt" })))
  end)

  -- A folder swapped for a link to the outside after its watch was added
  -- in w: the link's target is never reported; the folder judged, moved
  -- away, is followed when nothing is hidden and, with policies that hide
  -- entries (secrets), reports no entry change (fail closed:
  -- watch_view_spec.lua).
  local function swapped_folder(w, followed)
    local got = {}
    assert(w:watch("sub", function(ev) got[#got + 1] = ev end))
    assert(os.rename(root .. "/sub", root .. "/sub.old"))
    H.symlink(B .. "/outside", B, "ws/sub")
    settle(0.15)
    w:poll_watch()
    local n = #got
    H.write(B, "outside/new.txt", "x")
    settle(0.15)
    w:poll_watch()
    assert.are.equal(n, #got, "an entry created outside the root was reported")
    -- a plain watcher on the folder judged shows when the kernel's event
    -- for the write there has come (a state, not a time)
    local raw = core.watcher(4, 0)
    local h = assert(w.roots:handle(w.roots:map("sub.old")))
    assert(raw:add(w.roots, h))
    h:close()
    H.write(root, "sub.old/new.txt", "x")
    if not followed then
      local deadline = core.now() + 20
      repeat
        raw:read()
        assert.is_true(core.now() < deadline, "the kernel's event never came")
      until #raw:due(core.now()) > 0
      repeat -- then until the watch under test holds nothing more
        local _, next_s = w:poll_watch()
        assert.is_true(core.now() < deadline, "the watch kept an event held")
      until next_s == nil
      raw:close()
      assert.are.equal(n, #got)
      return
    end
    raw:close()
    local deadline = core.now() + 20 -- a state, not a time: until it is reported
    repeat
      w:poll_watch()
      assert.is_true(core.now() < deadline, "a change of the folder judged was never reported")
    until #got > n
  end

  it("a folder swapped for a link: the watch stays on the folder judged", function()
    swapped_folder(ws, false)
  end)

  it("a folder swapped for a link, nothing hidden: the watch stays on the folder judged", function()
    swapped_folder(H.open({ roots = { { path = root } }, policies = { "default" } }), true)
  end)

  it("a file swapped for a link between resolution and the watch: EAGAIN, nothing watched", function()
    local w = core.watcher(4, 0)
    local h = assert(ws.roots:handle(1, "ok.txt", false))
    os.remove(root .. "/ok.txt")
    H.symlink(B .. "/outside/secret.txt", B, "ws/ok.txt")
    local id, _, code = w:add(ws.roots, h)
    assert.is_nil(id)
    assert.are.equal("EAGAIN", code)
    assert.are.equal(0, w:count())
    h:close()
    w:close()
  end)

  it("a watch handle of another workspace is refused", function()
    local other = H.open(B .. "/outside")
    local w = core.watcher(4, 0)
    local h = assert(other.roots:handle(1, "secret.txt", false))
    assert.has_error(function() w:add(ws.roots, h) end)
    w:close()
  end)
end)
