-- The burrow binary carries the Lua it runs (host/embed.c, lbuiltin.c):
-- copied anywhere, with no Lua directory beside it and none installed at
-- the compiled-in place, it answers version, lists its tools, checks a
-- config and serves MCP (stdio and HTTP workers) with its built-in tools,
-- policies and packs. A built-in path is never looked for on disk: a
-- "[burrow]/lua/..." tree in the working directory changes nothing.

local H = require "helpers"

describe("a copied binary", function()
  local dir, bin
  setup(function()
    dir = H.tmpdir()
    H.sh(("mkdir -p %s && cp %s %s"):format(H.q(dir .. "/bin"), H.q(H.BURROW), H.q(dir .. "/bin/burrow")))
    bin = dir .. "/bin/burrow"
    H.write_all(dir, {
      ["ws/a.txt"] = "hello\n",
      ["ws/.env"] = "TOKEN=s3cret\n",
      ["burrow.yaml"] = "roots: [ws]\npolicies: [default, secrets]\npacks: [claude_code]\n",
      -- what a hostile working directory could offer in the built-in's name
      ["[burrow]/lua/burrow/transport/cli.lua"] = "io.stdout:write('PWNED\\n') os.exit(0)\n",
      ["[burrow]/lua/policy/default.lua"] = "return { name = 'default', check = function() return 'allow' end }\n",
    })
  end)
  teardown(H.cleanup)

  -- run the copy from dir, with no Lua directory named anywhere
  local function run(args, stdin)
    local cmd = ("cd %s && env -u BURROW_LUA_DIR timeout 60 %s %s"):format(H.q(dir), H.q(bin), args)
    if stdin then
      H.write(dir, "stdin", stdin)
      cmd = cmd .. " < stdin"
    end
    return H.run(cmd .. " 2>&1")
  end

  it("answers version and lists its tools", function()
    local out, ok = run("version")
    assert.is_true(ok, out)
    assert.matches("^burrow %d+%.%d+%.%d+", out)
    assert.not_matches("PWNED", out)
    out, ok = run("tools")
    assert.is_true(ok, out)
    assert.matches("read_file", out)
    assert.matches("grep", out)
  end)

  it("checks a config with built-in policies and a pack", function()
    local out, ok = run("check --config burrow.yaml")
    assert.is_true(ok, out)
    assert.matches("policies: protected, default, secrets", out, 1, true)
    assert.matches("Read, Write", out, 1, true)
  end)

  it("serves MCP over stdio: a read, a pack's tool, a built-in policy's denial", function()
    local msgs = {
      { jsonrpc = "2.0", id = 1, method = "initialize", params = { protocolVersion = "2025-11-25", capabilities = {},
        clientInfo = { name = "busted", version = "1" } } },
      { jsonrpc = "2.0", id = 2, method = "tools/call", params = { name = "Read", arguments = { file_path = dir .. "/ws/a.txt" } } },
      { jsonrpc = "2.0", id = 3, method = "tools/call", params = { name = "Read", arguments = { file_path = dir .. "/ws/.env" } } },
      { jsonrpc = "2.0", id = 4, method = "tools/call", params = { name = "Grep", arguments = { pattern = "hel" } } },
    }
    local lines = {}
    for i, m in ipairs(msgs) do lines[i] = H.json.encode(m) end
    local out = run("mcp --config burrow.yaml", table.concat(lines, "\n") .. "\n")
    assert.not_matches("PWNED", out)
    local by = {}
    for line in out:gmatch("[^\n]+") do
      local m = line:sub(1, 1) == "{" and H.json.decode(line)
      if m and m.id then by[m.id] = m end
    end
    assert.matches("hello", by[2].result.content[1].text)
    assert.is_true(by[3].result.isError, "the secrets policy (built in) denies .env")
    assert.are.equal("POLICY_DENIED", by[3].result._meta["burrow/code"])
    assert.is_nil(by[4].result.isError)
  end)

  it("runs under --landlock: its built-in files need no path on disk", function()
    local msgs = {
      { jsonrpc = "2.0", id = 1, method = "initialize", params = { protocolVersion = "2025-11-25", capabilities = {},
        clientInfo = { name = "busted", version = "1" } } },
      { jsonrpc = "2.0", id = 2, method = "tools/call", params = { name = "read_file", arguments = { path = "a.txt" } } },
    }
    local lines = {}
    for i, m in ipairs(msgs) do lines[i] = H.json.encode(m) end
    local out = run("mcp --landlock --root ws", table.concat(lines, "\n") .. "\n")
    if out:match("has no Landlock") or out:match("Landlock is not") then return pending("SKIP: no Landlock here") end
    local reply
    for line in out:gmatch("[^\n]+") do
      local m = line:sub(1, 1) == "{" and H.json.decode(line)
      if m and m.id == 2 then reply = m end
    end
    assert.is_table(reply, out)
    assert.matches("hello", reply.result.content[1].text)
  end)

  it("serves MCP over HTTP: its workers load the built-in Lua too", function()
    local log = dir .. "/http.log"
    H.sh(("cd %s && (env -u BURROW_LUA_DIR %s mcp --config burrow.yaml --http 127.0.0.1:0 > /dev/null 2> %s & echo $! > %s)")
      :format(H.q(dir), H.q(bin), H.q(log), H.q(dir .. "/pid")))
    local url
    -- a state: its start-up line, or its end
    local pid = H.read(dir, "pid"):match("%d+")
    while true do
      url = (H.read(dir, "http.log") or ""):match("at (http://%S+/mcp)")
      if url or not select(2, H.run("kill -0 " .. pid .. " 2>/dev/null")) then break end
      H.run("sleep 0.05")
    end
    assert.is_string(url, H.read(dir, "http.log"))
    local body = H.json.encode { jsonrpc = "2.0", id = 1, method = "tools/call", params = { name = "Read",
      arguments = { file_path = dir .. "/ws/a.txt" }, _meta = H.META_2026 } }
    local out = H.sh(("curl -s -X POST %s -H 'Content-Type: application/json' -H 'Accept: application/json' "
      .. "-H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H 'Mcp-Name: Read' --data-binary %s")
      :format(H.q(url), H.q(body)))
    H.run("kill " .. pid)
    local r = H.json.decode(out)
    assert.is_table(r and r.result, out .. "\n" .. (H.read(dir, "http.log") or ""))
    assert.matches("hello", r.result.content[1].text)
    assert.not_matches("worker %d failed", H.read(dir, "http.log"))
  end)
end)
