-- Structured errors: a failed call returns nil, message, code, details;
-- the details carry the facts a program (or a pack) words its own message
-- from, so the message text is never an API (docs/tools.md "Errors").

local H = require "helpers"
local json = H.json

describe(H.tag("error details"), function()
  after_each(H.cleanup)

  it("an ambiguous edit: the edit, how many places, their lines, the level", function()
    local ws = H.workspace { ["a.txt"] = "x\ny\nx\n" }
    local r, msg, code, d = ws:call("edit_file", { path = "a.txt", edits = {
      { old_text = "y", new_text = "Y" }, { old_text = "x", new_text = "z" } } })
    assert.is_nil(r)
    assert.equal("AMBIGUOUS_TEXT", code)
    assert.matches("matches 2 places", msg)
    assert.same({ path = "a.txt", edit = 2, matches = 2, lines = { 1, 3 }, level = "exact" }, d)
  end)

  it("text not found: the edit and the nearest line", function()
    local ws = H.workspace { ["a.txt"] = "alpha beta\ngamma\n" }
    local _, _, code, d = ws:call("edit_file", { path = "a.txt", old_text = "alpha betx", new_text = "q" })
    assert.equal("NOT_FOUND_TEXT", code)
    assert.equal(1, d.edit)
    assert.equal(1, d.near_line)
    assert.equal("alpha beta", d.near_text)
  end)

  it("a stale hash: the hash expected and the current one", function()
    local ws = H.workspace { ["a.txt"] = "one\n" }
    local stale = "sha256:" .. ("0"):rep(64)
    local _, _, code, d = ws:call("edit_file", { path = "a.txt", old_text = "one", new_text = "two", expected_hash = stale })
    assert.equal("HASH_MISMATCH", code)
    assert.equal(stale, d.expected)
    assert.equal(ws:call("read_file", { path = "a.txt" }).content_hash, d.current)
  end)

  it("a cap: which limit, and its value", function()
    local ws = H.workspace({ ["big.txt"] = ("x"):rep(5000) }, { max_file_size = 1000 })
    local _, _, code, d = ws:call("read_file", { path = "big.txt" })
    assert.equal("TOO_LARGE", code)
    assert.same({ path = "big.txt", limit = "max_file_size", max = 1000 }, d)
  end)

  it("a bad argument: the field", function()
    local ws = H.workspace { ["a.txt"] = "one\n" }
    local _, _, code, d = ws:call("read_file", { path = "a.txt", offset = 0 })
    assert.equal("INVALID_ARGUMENT", code)
    assert.equal("offset", d.argument)
    local _, _, _, d2 = ws:call("edit_file", { path = "a.txt", edits = { { old_text = "one" } } })
    assert.equal("edits[0].new_text", d2.argument)
  end)

  it("a refused search names the argument at fault: the regex (with PCRE2's reason) or the glob", function()
    local ws = H.workspace { ["a.txt"] = "one\n" }
    local _, _, code, d = ws:call("grep", { pattern = "(" })
    assert.equal("INVALID_ARGUMENT", code)
    assert.same({ argument = "pattern", reason = "missing closing parenthesis" }, d)
    _, _, code, d = ws:call("grep", { pattern = "x", include = { "*.c", "a/../b" } })
    assert.equal("INVALID_ARGUMENT", code)
    assert.same({ argument = "include[1]" }, d)
  end)

  it("a path failure passed on by the tool keeps its details (path, allowed roots)", function()
    local ws, dir = H.workspace { ["a.txt"] = "one\n" }
    local _, _, code, d = ws:call("read_file", { path = "nope.txt" })
    assert.equal("ENOENT", code)
    assert.equal("nope.txt", d.path)
    local _, _, code2, d2 = ws:call("read_file", { path = "../x" })
    assert.equal("OUTSIDE_ROOT", code2)
    assert.same({ path = "../x", allowed = { dir } }, d2)
  end)

  it("over MCP: _meta burrow/details beside burrow/code", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "x\nx\n")
    local lines = {
      json.encode { jsonrpc = "2.0", id = 1, method = "initialize", params = { protocolVersion = "2025-06-18",
        capabilities = {}, clientInfo = { name = "busted", version = "1" } } },
      json.encode { jsonrpc = "2.0", id = 2, method = "tools/call",
        params = { name = "edit_file", arguments = { path = "a.txt", old_text = "x", new_text = "y" } } },
    }
    local out = H.burrow_cmd({ "mcp", "--root", dir }, table.concat(lines, "\n") .. "\n")
    local reply
    for line in out:gmatch("[^\n]+") do
      local m = json.decode(line)
      if m.id == 2 then reply = m end
    end
    assert.is_true(reply.result.isError)
    assert.equal("AMBIGUOUS_TEXT", reply.result._meta["burrow/code"])
    local d = reply.result._meta["burrow/details"]
    assert.equal(2, d.matches)
    assert.same({ 1, 2 }, d.lines)
  end)

  describe("POLICY_DENIED", function()
    local function open(files, policies, extra)
      local root, pdir = H.tmpdir(), H.tmpdir()
      for name, body in pairs(files) do H.write(root, name, body) end
      local list = {}
      for name, src in pairs(policies) do list[#list + 1] = H.write(pdir, name .. ".lua", src) end
      local opts = { resolver = H.RESOLVER, roots = { { path = root } }, policies = list }
      for k, v in pairs(extra or {}) do opts[k] = v end
      local ws = assert(H.burrow.open(opts))
      return ws, root
    end
    local NO_SECRETS = [[return { name = "no_secrets", check = function(req)
      if req.path:find("secret") then return "deny", "secrets stay put" end end }]]
    local ASK = [[return { name = "asker", check = function(req)
      if req.operation == "write" then return "ask", "writing needs a human" end end }]]

    it("a refusal: the path, the operation and the policy that refused", function()
      local ws = open({ ["secret.txt"] = "s\n" }, { no_secrets = NO_SECRETS })
      local r, msg, code, d = ws:call("read_file", { path = "secret.txt" })
      ws:close()
      assert.is_nil(r)
      assert.equal("POLICY_DENIED", code)
      assert.matches("secrets stay put", msg, 1, true)
      assert.same({ path = "secret.txt", operation = "read", policy = "no_secrets" }, d)
    end)

    it("an ask: how it ended (no way to ask, or not approved)", function()
      local ws = open({}, { asker = ASK })
      local _, _, code, d = ws:call("write_file", { path = "a.txt", content = "x" })
      ws:close()
      assert.equal("POLICY_DENIED", code)
      assert.same({ path = "a.txt", operation = "write", policy = "asker", approval = "unavailable" }, d)
      ws = open({}, { asker = ASK }, { approve = function() return false, "no" end })
      _, _, code, d = ws:call("write_file", { path = "a.txt", content = "x" })
      ws:close()
      assert.equal("POLICY_DENIED", code)
      assert.same({ path = "a.txt", operation = "write", policy = "asker", approval = "denied" }, d)
    end)

    it("a folder with refused entries: how many, and which policy; the entries are not named", function()
      local ws, root = open({ ["d/a.txt"] = "a", ["d/secret1"] = "s", ["d/e/secret2"] = "s" }, { no_secrets = NO_SECRETS })
      local _, msg, code, d = ws:call("remove", { path = "d", recursive = true })
      ws:close()
      assert.equal("POLICY_DENIED", code)
      assert.same({ path = "d", operation = "delete", refused = 2, policy = "no_secrets" }, d)
      assert.not_matches("secret1", msg, 1, true)
      assert.is_true(H.exists(root, "d/a.txt"))
    end)

    it("a policy's error: flagged, its Lua text in neither the message nor the details", function()
      local ws = open({ ["a.txt"] = "a" }, { boom = [[return { name = "boom", check = function() error("SECRET-TRACE") end }]] })
      local _, msg, code, d = ws:call("read_file", { path = "a.txt" })
      ws:close()
      assert.equal("POLICY_DENIED", code)
      assert.same({ path = "a.txt", operation = "read", policy = "boom", policy_error = true }, d)
      assert.not_matches("SECRET-TRACE", msg, 1, true)
    end)
  end)

  it("the suite's rewording (spec/support/reword.lua) rewords what packs receive from native tools, not the native call", function()
    local dir = H.tmpdir()
    local prog = ([[
      package.path = "lua/?.lua;lua/?/init.lua;spec/?.lua;" .. package.path
      package.cpath = "build/lua/?.so;" .. package.cpath
      if arg[1] == "hook" then
        require("support.reword")(function(msg, code)
          return (code .. ": <<x>> " .. msg:gsub("^" .. code .. ": ", "", 1))
        end)
      end
      local ws = assert(require("burrow").open { roots = { { path = %q } }, pack = "helix" })
      local _, native = ws:call_native("stat", { path = "nope" }, nil, "t")
      local _, direct = ws:call("workspace__workspace__stat", { path = "nope" })
      io.write(native, "\n", direct)
    ]]):format(dir)
    H.write(dir, "prog.lua", prog)
    local out = H.run("lua5.4 " .. H.q(dir .. "/prog.lua") .. " hook")
    assert.equal("ENOENT: <<x>> nope does not exist\nENOENT: nope does not exist", out)
    -- the variable alone does nothing: burrow reads no BURROW_TEST_ variable,
    -- and installed code has no hook for it
    assert.is_nil(require("burrow.base.errors").reword)
    out = H.run("BURROW_TEST_REWORD='<<x>> ' lua5.4 " .. H.q(dir .. "/prog.lua"))
    assert.equal("ENOENT: nope does not exist\nENOENT: nope does not exist", out)
  end)
end)
