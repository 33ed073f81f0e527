-- Issue 42: a validator is no oracle. read_file's if_none_match (and
-- resources/read's params._meta "burrow/if_none_match") compares the agent's hash
-- with the file's only for a read the policies allowed: a file denied by
-- a declared rule, by a check() policy, by an ask nobody answers, a link
-- to such a file, a link out of the root, are refused with the same
-- answer, byte for byte, whether the validator presented is the file's
-- hash, another, malformed, or absent. So no call learns a denied file's
-- hash by guessing it. On the resolver under test.

local F = require "security.fixture"
local core = require "burrow.core"
local json = core.json
local mcp = require "burrow.mcp"

local SECRET = "API_KEY=s3cr3t\n"

local function sha(s)
  local f = os.tmpname()
  F.write_host(f, s)
  local out = F.sh("sha256sum " .. F.q(f))
  os.remove(f)
  return "sha256:" .. out:match("^(%x+)")
end

describe(F.tag("security: a validator is no oracle of a denied file's hash (issue 42)"), function()
  local w, outside, pdir, ws, server

  before_each(function()
    w, outside, pdir = F.mktemp(), F.mktemp(), F.mktemp()
    F.write_host(w .. "/.env", SECRET)                 -- the secrets policy's rule
    F.write_host(w .. "/hidden.txt", SECRET)           -- a check() policy's
    F.write_host(w .. "/held.txt", SECRET)             -- asks: nobody answers
    F.write_host(w .. "/ok.txt", "fine\n")
    F.write_host(outside .. "/out.txt", SECRET)
    F.sh("ln -s .env " .. F.q(w .. "/env-link") .. " && ln -s " .. F.q(outside .. "/out.txt") .. " " .. F.q(w .. "/out-link"))
    F.write_host(pdir .. "/hide.lua", [[return { name = "hide", check = function(r)
      if r.path:find("hidden", 1, true) then return "deny", "hidden" end
      if r.path:find("held", 1, true) then return "ask", "a human decides" end
      return "allow" end }]])
    ws = F.open({ { path = w, mode = "rw" } }, { policies = { "default", "secrets", pdir .. "/hide.lua" } })
    server = mcp.new(ws)
  end)

  after_each(function()
    ws:close()
    F.rmtree(w)
    F.rmtree(outside)
    F.rmtree(pdir)
  end)

  -- The MCP answer to a read_file call, as bytes.
  local function answer(args)
    local res, msg, code, details = ws:call("read_file", args)
    return json.encode(server:tool_result("read_file", res, msg, code, details)), res
  end

  local VALIDATORS = { sha(SECRET), sha(SECRET):upper(), "sha256:" .. ("0"):rep(64), "sha256:00", "absent", "" }

  for _, p in ipairs { ".env", "hidden.txt", "held.txt", "env-link", "out-link" } do
    it("read_file " .. p .. ": the same refusal with every validator as without", function()
      local plain, res = answer { path = p }
      assert.is_nil(res, plain)
      assert.is_nil(plain:find("s3cr3t", 1, true))
      assert.is_nil(plain:find(sha(SECRET):sub(8), 1, true))
      for _, v in ipairs(VALIDATORS) do
        assert.are.equal(plain, (answer { path = p, if_none_match = v }), v)
        assert.are.equal(plain, (answer { path = p, if_none_match = v, offset = 1, limit = 1 }), v)
        assert.are.equal(plain, (answer { path = p, if_none_match = v, encoding = "base64" }), v)
      end
    end)
  end

  -- resources/read, in a session: the JSON-RPC answer as bytes
  local function read_answer(rel, v)
    local out = {}
    local srv = mcp.new(ws, { channel = mcp.channel(function(m) out[#out + 1] = m end) })
    srv:handle { jsonrpc = "2.0", id = 0, method = "initialize", params = { protocolVersion = "2025-11-25",
      capabilities = {}, clientInfo = { name = "busted", version = "1" } } }
    srv:handle { jsonrpc = "2.0", id = 1, method = "resources/read",
      params = { uri = "file://" .. w .. "/" .. rel, _meta = v and { ["burrow/if_none_match"] = v } or nil } }
    for _, m in ipairs(out) do if m.id == 1 then return json.encode(m) end end
  end

  for _, p in ipairs { ".env", "hidden.txt", "held.txt", "env-link", "out-link" } do
    it("resources/read " .. p .. ": the same error with every version as without", function()
      local plain = read_answer(p)
      assert.truthy(plain:find('"error"', 1, true), plain)
      assert.is_nil(plain:find(sha(SECRET):sub(8), 1, true))
      for _, v in ipairs(VALIDATORS) do assert.are.equal(plain, read_answer(p, v), v) end
    end)
  end

  it("an allowed file with the same content still answers its validator (the cases above are refusals, not misses)", function()
    F.write_host(w .. "/ok.txt", SECRET)
    local _, res = answer { path = "ok.txt", if_none_match = sha(SECRET) }
    assert.is_true(res.not_modified)
    assert.truthy(read_answer("ok.txt", sha(SECRET)):find('"burrow/not_modified":true', 1, true))
  end)
end)
