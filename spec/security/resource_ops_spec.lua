-- Issue 42: the resource operations (resources/stat, create, update,
-- delete) reach no file a direct tool call is denied. A URI is parsed
-- strictly, then its path goes to stat, write_file or remove as any
-- absolute path does: "..", "%2e%2e", a link out of the root (a file link,
-- a folder link on the way), a file:// URI outside every root, the host
-- path of a mounted root and a read-only root's mount are refused, and
-- nothing outside changes. A version is no oracle: a denied file is
-- refused the same whatever ifMatch says, and create on it tells no
-- currentVersion. On the resolver under test.

local F = require "security.fixture"
local core = require "burrow.core"
local json = core.json
local mcp = require "burrow.mcp"
local resources = require "burrow.mcp.resources"

local SECRET = "API_KEY=s3cr3t\n"

describe(F.tag("security: resource operations reach what the tools reach, no more (issue 42)"), function()
  local w, ro, outside, ws, server, out

  before_each(function()
    w, ro, outside = F.mktemp(), F.mktemp(), F.mktemp()
    F.write_host(w .. "/ok.txt", "fine\n")
    F.write_host(w .. "/.env", SECRET)
    F.write_host(ro .. "/r.txt", "read only\n")
    F.write_host(outside .. "/out.txt", SECRET)
    F.sh("ln -s " .. F.q(outside .. "/out.txt") .. " " .. F.q(w .. "/out-link")
      .. " && ln -s " .. F.q(outside) .. " " .. F.q(w .. "/dir-link"))
    ws = F.open({ { path = w, mount = "/w", mode = "rw" }, { path = ro, mount = "/ro", mode = "ro" } },
      { policies = { "default", "secrets" } })
    out = {}
    server = mcp.new(ws, { channel = mcp.channel(function(m) out[#out + 1] = m end) })
    server:handle { jsonrpc = "2.0", id = "init", method = "initialize",
      params = { protocolVersion = "2025-11-25", capabilities = {}, clientInfo = { name = "sec", version = "1" } } }
  end)

  after_each(function()
    ws:close()
    F.rmtree(w)
    F.rmtree(ro)
    F.rmtree(outside)
  end)

  local function call(method, params)
    server:handle { jsonrpc = "2.0", id = #out + 1, method = method, params = params }
    return out[#out]
  end
  local function ver(path, body) return resources.version(path, core.sha256(body)) end
  local function unchanged()
    assert.equal(SECRET, F.read_host(outside .. "/out.txt"))
    assert.same({ "out.txt" }, F.ls(outside))
    assert.equal("read only\n", F.read_host(ro .. "/r.txt"))
    assert.equal(SECRET, F.read_host(w .. "/.env"))
    assert.equal("link", (F.lstat(w .. "/out-link") or {}).type:match("link"))
  end

  -- every operation on u: refused with a JSON-RPC error whose data.code is
  -- one of codes (or an invalid URI), nothing changed
  local function all_refused(u, codes)
    local v = ver("/w/x", SECRET)
    for _, m in ipairs {
      { "resources/stat", { uri = u } },
      { "resources/create", { uri = u, contents = { uri = u, text = "pwned\n" } } },
      { "resources/update", { uri = u, contents = { uri = u, text = "pwned\n" }, ifMatch = v } },
      { "resources/delete", { uri = u, ifMatch = v } },
      { "resources/delete", { uri = u } },
    } do
      local r = call(m[1], m[2])
      assert.is_table(r.error, m[1] .. " " .. u .. ": " .. json.encode(r))
      assert.is_nil(r.error.data.currentVersion, "no version of what is refused")
      local code = r.error.data.code or r.error.data.reason -- a link is no resource: notSupported
      local hit = false
      for _, c in ipairs(codes) do hit = hit or c == code end
      assert.is_true(hit, m[1] .. " " .. u .. ": " .. json.encode(r))
      unchanged()
    end
  end

  it("'..' and an encoded '%2e%2e' out of the root", function()
    for _, u in ipairs { "file:///w/../" .. outside:sub(2) .. "/out.txt", "file:///w/%2e%2e/%2E%2E" .. outside .. "/out.txt",
      "file:///w/..%2f..%2f" .. outside:sub(2) .. "/out.txt" } do
      all_refused(u, { "OUTSIDE_ROOT" })
    end
  end)

  it("a link out of the root: the file link, a folder link on the way", function()
    all_refused("file:///w/out-link", { "OUTSIDE_ROOT", "notSupported" })
    all_refused("file:///w/dir-link/out.txt", { "OUTSIDE_ROOT" })
    all_refused("file:///w/dir-link/new.txt", { "OUTSIDE_ROOT" })
  end)

  it("a file:// URI outside every root, and the host path of a mounted root", function()
    all_refused("file://" .. outside .. "/out.txt", { "OUTSIDE_ROOT" })
    all_refused("file:///etc/passwd", { "OUTSIDE_ROOT" })
    all_refused("file://" .. w .. "/ok.txt", { "OUTSIDE_ROOT" })
    assert.equal("fine\n", F.read_host(w .. "/ok.txt"))
  end)

  it("another root's mount: read-only, so no write lands there", function()
    local u = "file:///ro/r.txt"
    local st = call("resources/stat", { uri = u })
    assert.is_table(st.result, json.encode(st))
    for _, m in ipairs {
      { "resources/create", { uri = "file:///ro/new.txt", contents = { uri = "file:///ro/new.txt", text = "x" } } },
      { "resources/update", { uri = u, contents = { uri = u, text = "x" }, ifMatch = st.result.version } },
      { "resources/delete", { uri = u, ifMatch = st.result.version } },
    } do
      local r = call(m[1], m[2])
      assert.equal("READ_ONLY_ROOT", r.error and r.error.data.code, json.encode(r))
    end
    unchanged()
    assert.same({ "r.txt" }, F.ls(ro))
  end)

  it("a denied file: the same refusal whatever ifMatch says; create tells no version", function()
    local u = "file:///w/.env"
    local answers = {}
    for _, v in ipairs { ver("/w/.env", SECRET), ver("/w/.env", "other"), "sha256:00.00", "x" } do
      local r = call("resources/update", { uri = u, contents = { uri = u, text = "x" }, ifMatch = v })
      r.id = nil
      answers[#answers + 1] = json.encode(r)
    end
    for i = 2, #answers do assert.equal(answers[1], answers[i]) end
    assert.matches("POLICY_DENIED", answers[1])
    local c = call("resources/create", { uri = u, contents = { uri = u, text = "x" } })
    assert.equal("POLICY_DENIED", c.error.data.code, json.encode(c))
    assert.is_nil(c.error.data.currentVersion)
    local s = call("resources/stat", { uri = u })
    assert.equal("POLICY_DENIED", s.error.data.code, json.encode(s))
    unchanged()
  end)

  it("the stat tool's content_hash: no hash of a denied file, of a link's target, or through a link out", function()
    local r, _, code = ws:call("stat", { path = "/w/.env", content_hash = true })
    assert.is_nil(r)
    assert.equal("POLICY_DENIED", code)
    r = assert(ws:call("stat", { path = "/w/out-link", content_hash = true }))
    assert.equal("symlink", r.type)
    assert.is_nil(r.content_hash)
    r, _, code = ws:call("stat", { path = "/w/dir-link/out.txt", content_hash = true })
    assert.is_nil(r)
    assert.equal("OUTSIDE_ROOT", code)
    r = assert(ws:call("stat", { path = "/w/ok.txt", content_hash = true }))
    assert.equal(core.sha256("fine\n"), r.content_hash)
  end)

  it("a malformed URI is refused before any path is made of it", function()
    for _, u in ipairs { "file://evil.example/w/ok.txt", "file:///w/ok.txt?x", "file:///w/ok%2", "file:///w/ok%00.txt",
      "file:w/ok.txt", "/w/ok.txt" } do
      local r = call("resources/update", { uri = u, contents = { uri = u, text = "x" }, ifMatch = ver("/w/ok.txt", "fine\n") })
      assert.equal(-32602, r.error and r.error.code, u .. ": " .. json.encode(r))
      assert.equal("invalidUri", r.error.data.reason)
    end
    assert.equal("fine\n", F.read_host(w .. "/ok.txt"))
  end)
end)
