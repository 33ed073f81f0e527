-- The command line: build/burrow call/tools/version, exit statuses
-- (0 ok, 1 tool error, 2 usage), JSON on stdout, messages on stderr.

local H = require "helpers"
local json = H.json

local function burrow(args, stdin)
  return H.burrow_cmd(args, stdin)
end

describe(H.tag("burrow CLI"), function()
  local dir

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "a.txt", "alpha\nbeta\n")
  end)

  after_each(H.cleanup)

  it("is built", function()
    local _, ok = H.run("test -x " .. H.q(H.BURROW))
    assert.is_true(ok, "build/burrow is missing: run make")
  end)

  describe("help and usage errors", function()
    for _, args in ipairs { { "--help" }, { "-h" }, { "help" }, { "mcp", "--help" }, { "call", "-h" } } do
      it(table.concat(args, " ") .. ": the usage on stdout, exit 0", function()
        local out, err, code = burrow(args)
        assert.equal(0, code)
        assert.matches("^usage:\n  burrow mcp", out)
        assert.equal("", err)
      end)
    end

    for _, c in ipairs {
      { { "nope" }, 'unknown command "nope"' },
      { {}, "a command is required" },
      { { "call", "read_file", "--bogus" }, "unknown option %-%-bogus" },
      { { "call", "read_file", "--root" }, "%-%-root needs a value" },
    } do
      it(("%s: one line on stderr naming the mistake and --help, exit 2"):format(table.concat(c[1], " ")), function()
        local out, err, code = burrow(c[1])
        assert.equal(2, code)
        assert.equal("", out)
        assert.matches("^burrow: " .. c[2] .. ".*burrow %-%-help[^\n]*\n$", err)
      end)
    end
  end)

  describe("mcp: a network configuration never starts a stdio server by mistake", function()
    it("a typo in an http: section stops the start (exit 2) with or without --http, naming the nearest key", function()
      H.write(dir, "c.yaml", "roots: [.]\nhttp:\n  listne: 127.0.0.1:0\n")
      for _, extra in ipairs { {}, { "--http", "127.0.0.1:0" } } do
        local args = { "mcp", "--config", dir .. "/c.yaml" }
        for _, a in ipairs(extra) do args[#args + 1] = a end
        local _, err, code = burrow(args)
        assert.equal(2, code)
        assert.matches('c%.yaml:3:3: unknown key "listne" in http: did you mean "listen"%?', err)
        assert.matches("nothing was started", err, 1, true)
      end
    end)

    it("an http: section without listen needs --http", function()
      H.write(dir, "d.yaml", "roots: [.]\nhttp:\n  workers: 2\n")
      local _, err, code = burrow { "mcp", "--config", dir .. "/d.yaml" }
      assert.equal(2, code)
      assert.matches("http.listen is required", err, 1, true)
    end)

    it("a tenant's file with an http: section of its own is refused", function()
      H.write(dir, "t.yaml", "roots: [.]\nhttp: {workers: 1}\n")
      H.write(dir, "e.yaml", "roots: [.]\nhttp: {tenants: {t: {config: t.yaml}}}\n")
      local _, err, code = burrow { "mcp", "--config", dir .. "/e.yaml", "--http", "127.0.0.1:0" }
      assert.equal(2, code)
      assert.matches("http.tenants.t.config: .*has an http: section of its own", err)
    end)

    it("a bad flag over stdio: the banner serves nothing and says to restart, not to send SIGHUP", function()
      local _, err, code = burrow({ "mcp", "--root", dir .. "/missing" }, "")
      assert.equal(0, code) -- the client sees CONFIG_ERROR on each call; stdin closed: done
      assert.matches("fix the command line and restart", err, 1, true)
      assert.matches("serving nothing (the configuration did not load)", err, 1, true)
    end)
  end)

  describe("call", function()
    it("exits 0 with the JSON result on stdout", function()
      local out, _, code = burrow { "call", "read_file", '{"path":"a.txt"}', "--root", dir }
      assert.equal(0, code)
      local res = json.decode(out)
      assert.is_table(res)
      assert.equal("1\talpha\n2\tbeta\n", res.content)
      assert.equal(2, res.total_lines)
      assert.equal(H.sha256sum(dir, "a.txt"), res.content_hash)
    end)

    it("prints exactly one JSON line on stdout", function()
      local out = burrow { "call", "stat", '{"path":"a.txt"}', "--root", dir }
      local lines = {}
      for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal(1, #lines)
      assert.equal("\n", out:sub(-1))
      assert.equal("file", json.decode(lines[1]).type)
    end)

    it("exits 1 on a tool error with {\"error\":{\"code\":...}} on stdout", function()
      local out, err, code = burrow { "call", "read_file", '{"path":"missing.txt"}', "--root", dir }
      assert.equal(1, code)
      local res = json.decode(out)
      assert.equal("ENOENT", res.error.code)
      assert.matches("missing.txt", res.error.message, 1, true)
      assert.matches("ENOENT", err, 1, true)
    end)

    it("exits 1 with INVALID_ARGUMENT for arguments that fail the schema", function()
      local out, _, code = burrow { "call", "read_file", '{"path":"a.txt","limit":"x"}', "--root", dir }
      assert.equal(1, code)
      local res = json.decode(out)
      assert.equal("INVALID_ARGUMENT", res.error.code)
      assert.matches("'limit'", res.error.message, 1, true)
    end)

    it("never reports an internal error for a JSON array as arguments", function()
      local out, _, code = burrow { "call", "read_file", "[]", "--root", dir }
      assert.is_true(code == 1 or code == 2, "exit " .. tostring(code))
      if code == 1 then
        assert.equal("INVALID_ARGUMENT", json.decode(out).error.code)
      end
    end)

    it("writes files: the change is on disk", function()
      local out, _, code = burrow { "call", "write_file", '{"path":"sub/new.txt","content":"x\\ny\\n"}', "--root", dir }
      assert.equal(0, code)
      local res = json.decode(out)
      assert.is_true(res.created)
      assert.equal("x\ny\n", H.read(dir, "sub/new.txt"))
    end)

    it("reads the arguments from stdin with -", function()
      local out, _, code = burrow({ "call", "read_file", "-", "--root", dir }, '{"path": "a.txt", "offset": 2}')
      assert.equal(0, code)
      assert.equal("2\tbeta\n", json.decode(out).content)
    end)

    it("reads large arguments from stdin", function()
      local content = ("0123456789abcdef"):rep(64 * 1024) -- 1 MiB
      local args = json.encode { path = "big.txt", content = content }
      local out, _, code = burrow({ "call", "write_file", "-", "--root", dir }, args)
      assert.equal(0, code)
      assert.equal(#content, json.decode(out).bytes)
      assert.equal(content, H.read(dir, "big.txt"))
    end)

    it("takes no arguments as {}", function()
      local out, _, code = burrow { "call", "list_dir", "--root", dir }
      assert.equal(0, code)
      assert.equal("a.txt", json.decode(out).entries[1].path)
    end)

    it("loads a Lua C module for an operator's tool (Lua is linked whole into the command, its API exported)", function()
      local cfg = H.tmpdir()
      H.write(cfg, "tools/cmod.lua", [[
return {
  name = "cmod", description = "loads LuaFileSystem, a C module",
  input_schema = { type = "object", properties = {} },
  handler = function()
    local lfs = require "lfs"
    return { text = lfs._VERSION .. " " .. lfs.attributes("/", "mode") }
  end,
}]])
      H.write(cfg, "burrow.yaml", "tools: [stat, ./tools/cmod.lua]\n")
      local out, _, code = burrow { "call", "cmod", "{}", "--config", cfg .. "/burrow.yaml", "--root", dir }
      assert.equal(0, code, out)
      assert.matches("^LuaFileSystem [%d.]+ directory$", json.decode(out).text)
    end)

    it("serves a root under a virtual mount", function()
      local out, _, code = burrow { "call", "read_file", '{"path":"/workspace/a.txt"}', "--root", dir .. ":/workspace" }
      assert.equal(0, code)
      assert.equal("1\talpha\n2\tbeta\n", json.decode(out).content)
    end)

    it("refuses writes to a :ro root with READ_ONLY_ROOT", function()
      local out, _, code = burrow { "call", "write_file", '{"path":"a.txt","content":"x"}', "--root", dir .. ":ro" }
      assert.equal(1, code)
      assert.equal("READ_ONLY_ROOT", json.decode(out).error.code)
      assert.equal("alpha\nbeta\n", H.read(dir, "a.txt"))
    end)

    it("applies --cap", function()
      H.write(dir, "big.txt", ("z"):rep(200))
      local out, _, code = burrow { "call", "read_file", '{"path":"big.txt"}', "--root", dir, "--cap", "max_file_size=100" }
      assert.equal(1, code)
      assert.equal("TOO_LARGE", json.decode(out).error.code)
      out, _, code = burrow { "call", "read_file", '{"path":"big.txt"}', "--root", dir, "--cap", "max_file_size=1KiB" }
      assert.equal(0, code)
    end)

    it("serves the current directory by default", function()
      local out, _, code = H.run("cd " .. H.q(dir) .. " && " .. H.q(H.BURROW)
        .. " call read_file '{\"path\":\"a.txt\"}' 2>/dev/null")
      assert.equal(0, code)
      assert.equal("1\talpha\n2\tbeta\n", json.decode(out).content)
    end)
  end)

  describe("usage errors exit 2", function()
    local function usage(args)
      local out, err, code = burrow(args)
      assert.equal(2, code, "exit status for " .. table.concat(args, " "))
      assert.equal("", out, "nothing on stdout for a usage error")
      assert.is_true(#err > 0, "a message on stderr")
      return err
    end

    it("without a command", function()
      usage {}
    end)

    it("for an unknown command", function()
      assert.matches("frobnicate", usage { "frobnicate" }, 1, true)
    end)

    it("for an unknown option", function()
      usage { "call", "read_file", '{"path":"a.txt"}', "--root", dir, "--verbose-please" }
    end)

    it("for a --root that does not exist", function()
      usage { "call", "read_file", '{"path":"a.txt"}', "--root", dir .. "/no/such/dir" }
    end)

    it("for an empty --root", function()
      usage { "call", "read_file", '{"path":"a.txt"}', "--root", "" }
    end)

    it("for --root without a value", function()
      usage { "call", "read_file", '{"path":"a.txt"}', "--root" }
    end)

    it("for an unknown --cap key", function()
      assert.matches("max_bogus", usage { "call", "read_file", '{"path":"a.txt"}', "--root", dir, "--cap", "max_bogus=1" }, 1, true)
    end)

    it("for a --cap without KEY=VALUE", function()
      usage { "call", "read_file", '{"path":"a.txt"}', "--root", dir, "--cap", "max_file_size" }
    end)

    it("for call without a tool", function()
      usage { "call", "--root", dir }
    end)

    it("for call with an unknown tool", function()
      usage { "call", "rm_rf", "{}", "--root", dir }
    end)

    it("for call with arguments that are not JSON", function()
      usage { "call", "read_file", "{path: a.txt}", "--root", dir }
    end)

    it("for tools with an unknown format", function()
      usage { "tools", "--format", "gemini" }
    end)
  end)

  describe("tools", function()
    local function names(list, key)
      local t = {}
      for _, e in ipairs(list) do t[#t + 1] = key(e) end
      table.sort(t)
      return t
    end

    local native = { table.unpack(require("burrow.workspace.registry").native) }
    table.sort(native)

    it("prints a table by default: each tool, read or write, what it does", function()
      local out, _, code = burrow { "tools", "--root", dir }
      assert.equal(0, code)
      assert.matches("^TOOL%s+MODE%s+WHAT IT DOES\n", out)
      assert.matches("\nread_file%s+read%s+Read a file inside the workspace%.\n", out)
      assert.matches("\nwrite_file%s+write%s+", out)
      assert.matches(("\n%d tools; burrow tools NAME describes one; %%-%%-format mcp|openai|anthropic prints their schemas as JSON\n$")
        :format(#native), out)
    end)

    it("describes one tool by name: its description and every argument of its schema", function()
      local schema
      for _, t in ipairs(json.decode((burrow { "tools", "--format", "mcp", "--root", dir }))) do
        if t.name == "edit_file" then schema = t end
      end
      local out, err, code = burrow { "tools", "edit_file", "--root", dir }
      assert.equal(0, code, err)
      local head = "edit_file (writes)\n\n" .. schema.description .. "\n\narguments:\n"
      assert.equal(head, out:sub(1, #head))
      -- the required one first, each with its type and description; an
      -- array of objects' own below it
      assert.matches("arguments:\n  path %(string, required%): [^\n]+\n", out)
      for name, p in pairs(schema.inputSchema.properties) do
        assert.matches("\n  " .. name .. " %(" .. p.type, out)
        assert.matches(p.description, out, 1, true)
      end
      assert.matches("\n  edits %(array of object%): [^\n]+\n    old_text %(string, required%)", out)
      assert.matches('match %(string: "exact"|"loose"%)', out)
      -- with --format, its JSON in that shape
      out, err, code = burrow { "tools", "--format", "openai", "read_file", "--root", dir }
      assert.equal(0, code, err)
      local t = json.decode(out)
      assert.equal("read_file", t["function"].name)
      assert.equal("object", t["function"].parameters.type)
      -- a pack's tools by their own names
      out, err, code = burrow { "tools", "Read", "--pack", "claude_code", "--root", dir }
      assert.equal(0, code, err)
      assert.matches("^Read %(read%-only%)\n", out)
    end)

    it("exits 2 for a tool it does not serve, naming the ones it does", function()
      local out, err, code = burrow { "tools", "read_fil", "--root", dir }
      assert.equal(2, code)
      assert.equal("", out)
      assert.matches('unknown tool "read_fil" (the tools served: read_file, write_file, ', err, 1, true)
      _, err, code = burrow { "tools", "read_file", "--pack", "claude_code", "--root", dir }
      assert.equal(2, code)
      assert.matches('unknown tool "read_file" (the tools served: Read, ', err, 1, true)
    end)

    it("lists the tools in MCP shape with --format mcp", function()
      local out, _, code = burrow { "tools", "--format", "mcp", "--root", dir }
      assert.equal(0, code)
      local list = json.decode(out)
      assert.same(native, names(list, function(e) return e.name end))
      for _, e in ipairs(list) do assert.equal("object", e.inputSchema.type) end
    end)

    it("lists the tools in OpenAI shape with --format openai", function()
      local out, _, code = burrow { "tools", "--format", "openai", "--root", dir }
      assert.equal(0, code)
      local list = json.decode(out)
      assert.same(native, names(list, function(e) return e["function"].name end))
      for _, e in ipairs(list) do
        assert.equal("function", e.type)
        assert.equal("object", e["function"].parameters.type)
      end
    end)

    it("lists the tools in Anthropic shape with --format anthropic", function()
      local out, _, code = burrow { "tools", "--format", "anthropic", "--root", dir }
      assert.equal(0, code)
      local list = json.decode(out)
      assert.same(native, names(list, function(e) return e.name end))
      for _, e in ipairs(list) do assert.equal("object", e.input_schema.type) end
    end)
  end)

  describe("version", function()
    it("prints the version and the resolver in use, exit 0", function()
      local out, _, code = burrow { "version" }
      assert.equal(0, code)
      assert.matches("^burrow %d+%.%d+%.%d+", out)
      assert.matches("resolver: " .. H.BACKEND, out, 1, true)
    end)

    it("agrees with burrow.core.version", function()
      local out = burrow { "version" }
      assert.matches(H.core.version, out, 1, true)
    end)

    it("answers --version too", function()
      local out, _, code = burrow { "--version" }
      assert.equal(0, code)
      assert.matches("^burrow ", out)
    end)
  end)

  -- With the fault shim failing the stdio server's threads in turn (the
  -- stdin reader, the SIGHUP watcher): one line saying which and why,
  -- exit 2, no Lua traceback; the third thread it makes is not needed
  -- to answer a ping. (Under `make sanitize` the shim comes before the
  -- ASan runtime in the preload list, which ASan accepts when told.)
  describe("mcp whose stdio threads cannot start", function()
    it("says which in one line and exits 2", function()
      local shim = H.REPO .. "/" .. (os.getenv("BURROW_BUILD") or "build") .. "/faults.so"
      local dir = H.tmpdir()
      for n, want in pairs { [0] = "cannot start the stdin reader", [1] = "cannot start the SIGHUP watcher" } do
        local cmd = ("printf '%%s\\n' '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}' | LD_PRELOAD=%s ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 BURROW_FAULT=pthread_create:EAGAIN:after=%d:times=1 %s mcp --root %s 2>&1; echo \"rc=$?\"")
          :format(H.q(shim), n, H.q(H.BURROW), H.q(dir))
        local out = H.sh(cmd)
        assert.matches("burrow: " .. want .. ": Resource temporarily unavailable", out, 1, true)
        assert.matches("rc=2", out, 1, true)
        assert.is_nil(out:find("stack traceback", 1, true), out)
      end
      H.cleanup()
    end)
  end)
end)
