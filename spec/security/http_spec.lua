-- The HTTP listener (burrow mcp --http) as an attack surface, on the
-- resolver under test (the runner sets BURROW_RESOLVER; the server inherits
-- it): one tenant's token reaching for another tenant's files through every
-- path shape and tool, a session of one tenant used with another's token,
-- requests without a valid token or with a foreign Host/Origin running
-- nothing. Drives the real binary with curl; both tenants mount their
-- folder as /workspace, so the same agent path names two places.

local F = require "spec.security.fixture"
local json = require("burrow.core").json

local BIN = F.REPO .. "/build/burrow"
local TOK_A, TOK_B = "tenant-a-token-1f2e3d", "tenant-b-token-9a8b7c"

local function sha(text)
  return (F.sh("printf %s " .. F.q(text) .. " | sha256sum"):match("^(%x+)"))
end

describe(F.tag("the HTTP listener: tenants, tokens, Host/Origin"), function()
  local base, url, pid, A, B

  local function curl(args)
    local out = F.sh("curl -s -o " .. F.q(base .. "/body") .. " -w '%{http_code}' --max-time 20 " .. args)
    local f = io.open(base .. "/body", "rb")
    local body = f and f:read("a") or ""
    if f then f:close() end
    return tonumber(out), body
  end

  local function post(token, sid, msg, extra)
    local h = "-H 'Content-Type: application/json' -H 'Accept: application/json' "
    if token then h = h .. "-H " .. F.q("Authorization: Bearer " .. token) .. " " end
    if sid then h = h .. "-H " .. F.q("Mcp-Session-Id: " .. sid) .. " " end
    return curl("-X POST " .. h .. (extra or "") .. " --data-binary " .. F.q(json.encode(msg)) .. " " .. F.q(url))
  end

  local function session(token)
    local out = F.sh("curl -s -D - -o /dev/null --max-time 20 -X POST -H 'Content-Type: application/json' "
      .. "-H 'Accept: application/json' -H " .. F.q("Authorization: Bearer " .. token) .. " --data-binary "
      .. F.q('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        .. '"capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}') .. " " .. F.q(url))
    return (assert(out:match("[Mm]cp%-[Ss]ession%-[Ii]d: (%x+)"), out))
  end

  local function call(token, sid, tool, args)
    local status, body = post(token, sid, { jsonrpc = "2.0", id = 2, method = "tools/call",
      params = { name = tool, arguments = args } })
    return status, body
  end

  -- A request of MCP 2026-07-28: no session; its revision, method and
  -- name in headers that match the body
  local function stateless(token, method, params, extra, name_h)
    params = params or {}
    local p = {}
    for k, v in pairs(params) do p[k] = v end
    p._meta = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
      ["io.modelcontextprotocol/clientCapabilities"] = { elicitation = { form = {} } } }
    local name = name_h or (method == "tools/call" and params.name) or (method == "resources/read" and params.uri) or nil
    local h = "-H 'MCP-Protocol-Version: 2026-07-28' -H " .. F.q("Mcp-Method: " .. method) .. " "
      .. (name and ("-H " .. F.q("Mcp-Name: " .. name) .. " ") or "") .. (extra or "")
    return post(token, nil, { jsonrpc = "2.0", id = 9, method = method, params = p }, h)
  end

  local function tree_of(dir)
    return F.sh("cd " .. F.q(dir) .. " && find . -printf '%p %y %s\\n' | sort && find . -type f -exec sha256sum {} + | sort")
  end

  setup(function()
    base = F.sh("mktemp -d"):gsub("%s+$", "")
    A, B = base .. "/a", base .. "/b"
    F.sh(("mkdir -p %s/sub %s %s/main"):format(F.q(B), F.q(A), F.q(base)))
    F.sh(("printf 'bravo secret\\n' > %s/secret.txt; printf 'bravo deep\\n' > %s/sub/deep.txt"):format(F.q(B), F.q(B)))
    F.sh(("printf 'alpha\\n' > %s/mine.txt"):format(F.q(A)))
    F.sh(("ln -s %s/secret.txt %s/link; ln -s %s %s/dirlink; ln -s ../b %s/rel"):format(F.q(B), F.q(A), F.q(B), F.q(A), F.q(A)))
    F.sh(("printf 'roots:\\n  - {path: a, mount: /workspace}\\n' > %s/a.yaml"):format(F.q(base)))
    F.sh(("printf 'roots:\\n  - {path: b, mount: /workspace}\\n' > %s/b.yaml"):format(F.q(base)))
    local cfg = ("roots: [main]\nhttp:\n  tenants:\n    a: {config: a.yaml}\n    b: {config: b.yaml}\n"
      .. "  tokens:\n    - {sha256: %s, tenant: a}\n    - {sha256: %s, tenant: b}\n"):format(sha(TOK_A), sha(TOK_B))
    local f = assert(io.open(base .. "/server.yaml", "w"))
    f:write(cfg)
    f:close()
    pid = F.sh(("%s mcp --config %s/server.yaml --http 127.0.0.1:0 >/dev/null 2>%s/log & echo $!")
      :format(F.q(BIN), F.q(base), F.q(base))):match("%d+")
    for _ = 1, 100 do
      local l = io.open(base .. "/log")
      local text = l and l:read("a") or ""
      if l then l:close() end
      url = text:match("at (http://%S+/mcp)")
      if url then break end
      F.sh("sleep 0.1")
    end
    assert(url, "the server did not start")
  end)

  teardown(function()
    if pid then F.run("kill " .. pid .. " 2>/dev/null; sleep 0.2") end
    if base then F.run("rm -rf " .. F.q(base)) end
  end)

  local function tries() return { -- B is set once setup has run
      { "read_file", { path = "/workspace/secret.txt" } },
      { "read_file", { path = "secret.txt" } },
      { "read_file", { path = B .. "/secret.txt" } },
      { "read_file", { path = "../b/secret.txt" } },
      { "read_file", { path = "/workspace/../b/secret.txt" } },
      { "read_file", { path = "link" } },
      { "read_file", { path = "dirlink/secret.txt" } },
      { "read_file", { path = "rel/sub/deep.txt" } },
      { "list_dir", { path = "dirlink" } },
      { "list_dir", { path = B } },
      { "stat", { path = "rel/secret.txt" } },
      { "grep", { pattern = "bravo", path = "/" } },
      { "grep", { pattern = "bravo" } },
      { "glob", { pattern = "**/deep.txt" } },
      { "copy", { source = "dirlink/secret.txt", destination = "got.txt" } },
      { "copy", { source = "rel", destination = "gotdir" } },
      { "write_file", { path = "dirlink/planted.txt", content = "x" } },
      { "write_file", { path = B .. "/planted.txt", content = "x" } },
      { "edit_file", { path = "link", edits = { { old_text = "bravo", new_text = "owned" } } } },
      { "append_file", { path = "rel/secret.txt", content = "x" } },
      { "move", { source = "dirlink/sub", destination = "moved" } },
      { "remove", { path = "dirlink/sub", recursive = true } },
      { "mkdir", { path = "rel/newdir" } },
  } end
  local URIS = { "file:///workspace/secret.txt", "file://%s/secret.txt", "file:///workspace/link",
    "file:///workspace/dirlink/secret.txt", "file:///workspace/rel/sub/deep.txt", "file:///workspace/%%2e%%2e/b/secret.txt" }

  it("gives tenant A none of tenant B's files, by any path or tool", function()
    local before = tree_of(B)
    local sa, sb = session(TOK_A), session(TOK_B)
    local st, body = call(TOK_B, sb, "read_file", { path = "/workspace/secret.txt" })
    assert.equal(200, st)
    assert.matches("bravo secret", body) -- B reads its own
    for _, t in ipairs(tries()) do
      local status, text = call(TOK_A, sa, t[1], t[2])
      assert.equal(200, status)
      assert.is_nil(text:find("bravo secret", 1, true), t[1] .. " " .. json.encode(t[2]) .. ": " .. text)
      assert.is_nil(text:find("bravo deep", 1, true), t[1] .. " " .. json.encode(t[2]) .. ": " .. text)
      if not json.encode(t[2]):find("deep.txt", 1, true) then
        assert.is_nil(text:find("deep.txt", 1, true), t[1] .. " named a file only B has: " .. text)
      end
    end
    for _, u in ipairs(URIS) do
      local uri = u:format(B)
      for _, method in ipairs { "resources/read", "resources/subscribe" } do
        local status, text = post(TOK_A, sa, { jsonrpc = "2.0", id = 5, method = method, params = { uri = uri } })
        assert.equal(200, status)
        assert.is_nil(text:find("bravo", 1, true), method .. " " .. uri .. ": " .. text)
      end
    end
    assert.equal(before, tree_of(B), "B's tree is unchanged")
    for _, f in ipairs { "got.txt", "gotdir/secret.txt", "moved/deep.txt" } do
      local h = io.open(A .. "/" .. f)
      local text = h and h:read("a") or ""
      if h then h:close() end
      assert.is_nil(text:find("bravo", 1, true), f)
    end
  end)

  it("gives tenant A none of tenant B's files through stateless 2026-07-28 requests either", function()
    local before = tree_of(B)
    local st, body = stateless(TOK_B, "tools/call", { name = "read_file", arguments = { path = "/workspace/secret.txt" } })
    assert.equal(200, st)
    assert.matches("bravo secret", body) -- B reads its own, without a session
    for _, t in ipairs(tries()) do
      local status, text = stateless(TOK_A, "tools/call", { name = t[1], arguments = t[2] })
      assert.equal(200, status, text)
      assert.is_nil(text:find("bravo secret", 1, true), t[1] .. " " .. json.encode(t[2]) .. ": " .. text)
      assert.is_nil(text:find("bravo deep", 1, true), t[1] .. " " .. json.encode(t[2]) .. ": " .. text)
      if not json.encode(t[2]):find("deep.txt", 1, true) then
        assert.is_nil(text:find("deep.txt", 1, true), t[1] .. " named a file only B has: " .. text)
      end
    end
    for _, u in ipairs(URIS) do
      local status, text = stateless(TOK_A, "resources/read", { uri = u:format(B) })
      assert.is_true(status == 200 or status == 400, text)
      assert.is_nil(text:find("bravo", 1, true), u .. ": " .. text)
    end
    assert.equal(before, tree_of(B), "B's tree is unchanged")
    -- no token, a wrong one, a foreign Host or Origin: nothing runs
    local n = 0
    local function write_try(token, extra)
      n = n + 1
      return stateless(token, "tools/call", { name = "write_file", arguments = { path = "sl-pwned" .. n .. ".txt", content = "x" } }, extra)
    end
    assert.equal(401, (write_try(nil)))
    assert.equal(401, (write_try("wrong")))
    assert.equal(403, (write_try(TOK_A, "-H 'Host: evil.example.com' ")))
    assert.equal(403, (write_try(TOK_A, "-H 'Origin: http://evil.example.com' ")))
    -- a header that names a harmless tool over a body that writes: refused
    assert.equal(400, (stateless(TOK_A, "tools/call", { name = "write_file", arguments = { path = "sl-pwned0.txt", content = "x" } },
      nil, "read_file")))
    for i = 0, n do
      local _, exists = F.run("test -e " .. F.q(A .. "/sl-pwned" .. i .. ".txt"))
      assert.is_false(exists, "sl-pwned" .. i .. ".txt was written")
    end
  end)

  it("answers a session of B used with A's token 404, running nothing", function()
    local sb = session(TOK_B)
    local status, body = call(TOK_A, sb, "read_file", { path = "secret.txt" })
    assert.equal(404, status)
    assert.is_nil(body:find("bravo", 1, true))
    assert.equal(404, (curl("-X DELETE -H " .. F.q("Authorization: Bearer " .. TOK_A) .. " -H "
      .. F.q("Mcp-Session-Id: " .. sb) .. " " .. F.q(url))))
    assert.equal(200, (call(TOK_B, sb, "stat", { path = "secret.txt" })))
  end)

  it("runs nothing without a valid token, or from a foreign Host or Origin", function()
    local sa = session(TOK_A)
    local n = 0
    local function write_try(token, extra)
      n = n + 1
      return post(token, sa, { jsonrpc = "2.0", id = 3, method = "tools/call",
        params = { name = "write_file", arguments = { path = "pwned" .. n .. ".txt", content = "x" } } }, extra)
    end
    assert.equal(401, (write_try(nil)))
    assert.equal(401, (write_try("wrong")))
    assert.equal(401, (write_try(TOK_A .. "x")))
    assert.equal(403, (write_try(TOK_A, "-H 'Host: evil.example.com'")))
    assert.equal(403, (write_try(TOK_A, "-H 'Origin: http://evil.example.com'")))
    F.sh("sleep 0.2")
    for i = 1, n do
      local _, exists = F.run("test -e " .. F.q(A .. "/pwned" .. i .. ".txt"))
      assert.is_false(exists, "pwned" .. i .. ".txt was written")
    end
    assert.equal(200, (post(TOK_A, sa, { jsonrpc = "2.0", id = 4, method = "ping" }))) -- the session lives on
  end)
end)
