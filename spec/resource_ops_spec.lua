-- The resource operations strawman (burrow.mcp.resource_ops, issue 42) on an
-- in-process Server (the stdio path's Server:handle): resources/stat,
-- create, update with ifMatch and delete in both eras, each judged as the
-- tool that does the same thing (write_file, remove, stat): its policies,
-- quotas, approvals (MRTR in 2026-07-28), read-only roots, the operator's
-- tool set, and undo.

local H = require "helpers"
local mcp = require "burrow.mcp"
local resources = require "burrow.mcp.resources"
local core = require "burrow.core"
local json = H.json

-- Answers of an in-process Server on ws to msgs (requests of the era), by id.
local function serve(ws, msgs, server)
  local out = {}
  server = server or mcp.new(ws, { channel = mcp.channel(function(m) out[#out + 1] = m end) })
  for _, m in ipairs(msgs) do
    m.jsonrpc = "2.0"
    server:handle(m)
  end
  local by_id = {}
  for _, m in ipairs(out) do if m.id ~= nil then by_id[m.id] = m end end
  return by_id
end

describe(H.tag("resource operations (io.modelcontextprotocol/resource-operations)"), function()
  local dir, ws
  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, { ["a.md"] = "# A\n", ["d/x.txt"] = "x\n", ["lock/k.txt"] = "k\n" })
  end)
  after_each(function()
    if ws then ws:close() end
    ws = nil
    H.cleanup()
  end)
  local function uri(rel) return "file://" .. dir .. "/" .. rel end
  local function open(opts)
    opts = opts or {}
    opts.roots = opts.roots or { { path = dir } }
    opts.policies = opts.policies or { "default" }
    ws = H.open(opts)
    return ws
  end
  local function text(u, t) return { uri = u, text = t } end

  H.both_eras(it, "the capability is declared, under extensions and experimental", function(req, pre)
    open()
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "server/discover", {})
    local got = serve(ws, msgs)
    local caps = (got.init or got[1]).result.capabilities
    assert.same({ directoryRead = false }, caps.extensions["io.modelcontextprotocol/resource-operations"])
    assert.same({ directoryRead = false }, caps.experimental["io.modelcontextprotocol/resource-operations"])
  end)

  H.both_eras(it, "stat, update, a stale update, create, create on a file, delete", function(req, pre)
    open()
    local u, n = uri("a.md"), uri("new/b.dat")
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "resources/stat", { uri = u })
    local got = serve(ws, msgs)
    local st = got[1].result
    assert.is_table(st, json.encode(got[1]))
    local hash = H.sha256_of("# A\n")
    -- the version: the content hash, ".", 16 hex of the SHA-256 of the mimeType
    assert.equal(hash .. "." .. core.sha256("text/markdown"):sub(8, 23), st.version)
    assert.equal("text/markdown", st.resource.mimeType)
    assert.equal(4, st.resource.size)
    assert.is_string(st.resource.annotations.lastModified)
    got = serve(ws, {
      req(2, "resources/update", { uri = u, contents = text(u, "# B\n"), ifMatch = st.version }),
      req(3, "resources/update", { uri = u, contents = text(u, "# C\n"), ifMatch = st.version }),
      req(4, "resources/create", { uri = u, contents = text(u, "no") }),
      req(5, "resources/create", { uri = n, contents = { uri = n, blob = core.base64_encode("\0\1") } }),
      req(6, "resources/update", { uri = u, contents = text(u, "# D\n"), ifMatch = "W/\"nonsense\"" }),
      req(7, "resources/update", { uri = u, contents = text(u, "# D\n"), ifMatch = hash }), -- the bare hash is not a version
    })
    local up = got[2].result
    assert.is_table(up, json.encode(got[2]))
    assert.equal("# B\n", H.read(dir .. "/a.md"))
    assert.same({ { uri = u, effect = "updated", previousVersion = st.version, version = up.version } }, up.changes)
    for _, id in ipairs { 3, 6, 7 } do
      local e = got[id].error
      assert.equal(-32010, e.code, json.encode(got[id]))
      assert.equal("versionMismatch", e.data.reason)
      assert.equal(up.version, e.data.currentVersion)
    end
    assert.equal(-32010, got[4].error.code)
    assert.equal("alreadyExists", got[4].error.data.reason)
    assert.equal(up.version, got[4].error.data.currentVersion)
    assert.equal("# B\n", H.read(dir .. "/a.md"))
    assert.equal("created", got[5].result.changes[1].effect)
    assert.equal("application/octet-stream", got[5].result.resource.mimeType)
    assert.equal("\0\1", H.read(dir .. "/new/b.dat"))
    got = serve(ws, {
      req(8, "resources/delete", { uri = n, ifMatch = st.version }),
      req(9, "resources/delete", { uri = n, ifMatch = got[5].result.version }),
      req(10, "resources/delete", { uri = uri("d") }),
      req(11, "resources/delete", { uri = uri("d/x.txt") }),
      req(12, "resources/update", { uri = n, contents = text(n, "z"), ifMatch = st.version }),
      req(13, "resources/stat", { uri = uri("d") }),
      req(14, "resources/update", { uri = uri("zz/yy/f.txt"), contents = text(uri("zz/yy/f.txt"), "z"), ifMatch = st.version }),
    })
    assert.equal("notFound", got[14].error.data.reason, json.encode(got[14]))
    assert.is_false(H.exists(dir, "zz"), "an update makes no folder")
    assert.equal("versionMismatch", got[8].error.data.reason)
    assert.is_table(got[9].result, json.encode(got[9]))
    assert.is_nil(H.read(dir .. "/new/b.dat"))
    assert.equal(-32011, got[10].error.code, "a directory is not deleted")
    assert.is_true(H.exists(dir, "d"))
    assert.is_table(got[11].result, "delete without ifMatch")
    assert.is_nil(H.read(dir .. "/d/x.txt"))
    assert.equal(-32602, got[12].error.code)
    assert.equal("notFound", got[12].error.data.reason)
    assert.equal("inode/directory", got[13].result.resource.mimeType)
  end)

  H.both_eras(it, "malformed requests: invalidUri, and nothing written", function(req, pre)
    open()
    local u = uri("a.md")
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "resources/update", { uri = u, contents = text(uri("d/x.txt"), "w"), ifMatch = "x" })
    msgs[#msgs + 1] = req(2, "resources/update", { uri = u, contents = text(u, "w") })
    msgs[#msgs + 1] = req(3, "resources/create", { uri = "mem://x", contents = text("mem://x", "w") })
    msgs[#msgs + 1] = req(4, "resources/create", { uri = uri("c.txt"), contents = { uri = uri("c.txt"), text = "a", blob = "YQ==" } })
    msgs[#msgs + 1] = req(5, "resources/create", { uri = uri("c.md"), contents = { uri = uri("c.md"), text = "a", mimeType = "text/html" } })
    msgs[#msgs + 1] = req(6, "resources/stat", { uri = 7 })
    local got = serve(ws, msgs)
    for id = 1, 4 do
      assert.equal(-32602, got[id].error.code, json.encode(got[id]))
      assert.equal("invalidUri", got[id].error.data.reason)
    end
    assert.equal(-32011, got[5].error.code, "a mimeType other than the name's")
    assert.equal(-32602, got[6].error.code)
    assert.equal("# A\n", H.read(dir .. "/a.md"))
    assert.is_nil(H.read(dir .. "/c.txt"))
    assert.is_nil(H.read(dir .. "/c.md"))
  end)

  H.both_eras(it, "a policy on write_file, a quota, a read-only root, a tool not served: refused, nothing written", function(req, pre)
    local pol = H.write(H.tmpdir(), "nowrite.lua", [[return { name = "nowrite", check = function(r)
      if r.tool == "write_file" and r.path:find("/lock/", 1, true) then return "deny", "write_file may not touch lock/" end
      if r.tool == "remove" and r.path:find("/lock/", 1, true) then return "deny", "remove may not touch lock/" end
      return "allow" end }]])
    open { policies = { "default", pol, { name = "quotas", max_bytes_written = 16 } } }
    local k = uri("lock/k.txt")
    local v = resources.version(dir .. "/lock/k.txt", H.sha256_of("k\n"))
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "resources/update", { uri = k, contents = text(k, "w"), ifMatch = v })
    msgs[#msgs + 1] = req(2, "resources/delete", { uri = k, ifMatch = v })
    msgs[#msgs + 1] = req(3, "resources/create", { uri = uri("big.txt"), contents = text(uri("big.txt"), ("x"):rep(64)) })
    msgs[#msgs + 1] = req(4, "resources/stat", { uri = k })
    local got = serve(ws, msgs)
    for _, id in ipairs { 1, 2, 3 } do
      assert.equal(-32011, got[id].error.code, json.encode(got[id]))
      assert.equal("POLICY_DENIED", got[id].error.data.code)
    end
    assert.matches("lock/", got[1].error.message)
    assert.equal(v, got[4].result.version, "a read is not refused")
    assert.equal("k\n", H.read(dir .. "/lock/k.txt"))
    assert.is_nil(H.read(dir .. "/big.txt"))
    ws:close()
    local ro = H.tmpdir()
    H.write_all(ro, { ["r.txt"] = "r\n" })
    ws = H.open { roots = { { path = dir }, { path = ro, mode = "ro" } }, tools = { "read_file", "stat", "write_file" } }
    local r = "file://" .. ro .. "/r.txt"
    local rv = resources.version(ro .. "/r.txt", H.sha256_of("r\n"))
    got = serve(ws, { table.unpack(pre) })
    msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(5, "resources/update", { uri = r, contents = text(r, "w"), ifMatch = rv })
    msgs[#msgs + 1] = req(6, "resources/delete", { uri = uri("a.md") })
    got = serve(ws, msgs)
    assert.equal(-32011, got[5].error.code)
    assert.equal("READ_ONLY_ROOT", got[5].error.data.code)
    assert.equal(-32011, got[6].error.code, "remove is not among the tools")
    assert.matches("remove is not among", got[6].error.message)
    assert.equal("r\n", H.read(ro .. "/r.txt"))
    assert.equal("# A\n", H.read(dir .. "/a.md"))
  end)

  H.both_eras(it, "an update lands in undo as write_file's does", function(req, pre)
    open()
    local u = uri("a.md")
    local v = resources.version(dir .. "/a.md", H.sha256_of("# A\n"))
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "resources/update", { uri = u, contents = text(u, "# Z\n"), ifMatch = v })
    msgs[#msgs + 1] = req(2, "tools/call", { name = "undo_edit", arguments = { path = dir .. "/a.md" } })
    local got = serve(ws, msgs)
    assert.is_table(got[1].result, json.encode(got[1]))
    assert.is_nil(got[2].result.isError, json.encode(got[2]))
    assert.equal("# A\n", H.read(dir .. "/a.md"))
  end)

  it("the binary over stdio, both eras: stat, a stale update refused, an update written", function()
    local cfg = H.write(H.tmpdir(), "burrow.yaml", ("roots: [%s]\n"):format(dir))
    local u = uri("a.md")
    local v = resources.version(dir .. "/a.md", H.sha256_of("# A\n"))
    local stale = resources.version(dir .. "/a.md", H.sha256_of("old"))
    local meta = H.META_2026
    local got, err = H.mcp_config(cfg, {
      { id = 1, method = "initialize", params = { protocolVersion = "2025-11-25", capabilities = {},
        clientInfo = { name = "busted", version = "1" } } },
      { method = "notifications/initialized" },
      { id = 2, method = "resources/stat", params = { uri = u } },
      { id = 3, method = "resources/update", params = { uri = u, contents = text(u, "# S\n"), ifMatch = stale } },
      { id = 4, method = "resources/update", params = { uri = u, contents = text(u, "# S\n"), ifMatch = v } },
      { id = 5, method = "resources/stat", params = { uri = u, _meta = meta } },
      { id = 6, method = "resources/update", params = { uri = u, contents = text(u, "# T\n"), ifMatch = v, _meta = meta } },
    })
    assert.equal(v, got[2].result and got[2].result.version, err)
    assert.equal(-32010, got[3].error.code)
    assert.equal(v, got[3].error.data.currentVersion)
    local v2 = got[4].result.version
    assert.equal(resources.version(dir .. "/a.md", H.sha256_of("# S\n")), v2)
    assert.equal(v2, got[5].result.version)
    assert.equal("complete", got[5].result.resultType)
    assert.equal(-32010, got[6].error.code)
    assert.equal(v2, got[6].error.data.currentVersion)
    assert.equal("# S\n", H.read(dir .. "/a.md"))
  end)

  it("2026-07-28: an ask on write_file is an input_required round; the retry writes", function()
    local pol = H.write(H.tmpdir(), "ask.lua", [[return { name = "ask", check = function(r)
      if r.operation == "write" then return "ask", "a human decides" end
      return "allow" end }]])
    open { policies = { "default", pol } }
    local server = mcp.new(ws, { channel = mcp.channel(function() end) })
    local out = {}
    server.channel = mcp.channel(function(m) out[#out + 1] = m end)
    local u = uri("a.md")
    local v = resources.version(dir .. "/a.md", H.sha256_of("# A\n"))
    local p = { uri = u, contents = text(u, "# Q\n"), ifMatch = v, _meta = H.META_2026_ELICIT }
    serve(ws, { { id = 1, method = "resources/update", params = p } }, server)
    local r1 = out[#out].result
    assert.equal("input_required", r1.resultType, json.encode(out[#out]))
    assert.equal("# A\n", H.read(dir .. "/a.md"), "nothing written before the answer")
    local p2 = { uri = u, contents = text(u, "# Q\n"), ifMatch = v, _meta = H.META_2026_ELICIT,
      requestState = r1.requestState, inputResponses = { approve = { action = "accept", content = { approve = false } } } }
    serve(ws, { { id = 2, method = "resources/update", params = p2 } }, server)
    assert.equal(-32011, out[#out].error.code, json.encode(out[#out]))
    assert.equal("POLICY_DENIED", out[#out].error.data.code)
    assert.equal("# A\n", H.read(dir .. "/a.md"))
    serve(ws, { { id = 3, method = "resources/update", params = p } }, server)
    local r3 = out[#out].result
    local p3 = { uri = u, contents = text(u, "# Q\n"), ifMatch = v, _meta = H.META_2026_ELICIT,
      requestState = r3.requestState, inputResponses = { approve = { action = "accept", content = { approve = true } } } }
    serve(ws, { { id = 4, method = "resources/update", params = p3 } }, server)
    assert.is_table(out[#out].result, json.encode(out[#out]))
    assert.equal("# Q\n", H.read(dir .. "/a.md"))
    -- the state of a write_file retry opens no other content
    serve(ws, { { id = 5, method = "resources/update", params = p } }, server)
    local r5 = out[#out].result
    local other = { uri = u, contents = text(u, "# EVIL\n"), ifMatch = resources.version(dir .. "/a.md", H.sha256_of("# Q\n")),
      _meta = H.META_2026_ELICIT, requestState = r5.requestState,
      inputResponses = { approve = { action = "accept", content = { approve = true } } } }
    serve(ws, { { id = 6, method = "resources/update", params = other } }, server)
    assert.equal(-32602, out[#out].error.code, json.encode(out[#out]))
    assert.equal("# Q\n", H.read(dir .. "/a.md"))
  end)

  it("a session: an ask with no client to answer is refused, nothing written", function()
    local pol = H.write(H.tmpdir(), "ask.lua", [[return { name = "ask", check = function(r)
      if r.operation == "write" then return "ask", "a human decides" end
      return "allow" end }]])
    open { policies = { "default", pol } }
    local u = uri("a.md")
    local got = serve(ws, {
      { id = "init", method = "initialize", params = { protocolVersion = "2025-11-25", capabilities = {}, clientInfo = { name = "b", version = "1" } } },
      { id = 1, method = "resources/update", params = { uri = u, contents = text(u, "# Q\n"),
        ifMatch = resources.version(dir .. "/a.md", H.sha256_of("# A\n")) } },
    })
    assert.equal(-32011, got[1].error.code, json.encode(got[1]))
    assert.equal("POLICY_DENIED", got[1].error.data.code)
    assert.equal("# A\n", H.read(dir .. "/a.md"))
  end)
end)
