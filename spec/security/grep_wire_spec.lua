-- grep's wire path (issue 12): over `burrow mcp` (stdio) and `burrow call`
-- a content search's matches are written as JSON by the core, never as
-- Lua tables. What an agent could try with it:
--   * see matches of a file a policy hides: a policy that judges each
--     object must force the table path (ctx:reveal drops them), a policy of
--     declared rules keeps the file out of the walk; either way no byte of
--     the file reaches the reply, as a direct read is refused;
--   * go around it through a pack (ctx:call): packs keep the tables;
--   * get more than the caps allow: max_matches and max_result_bytes cut
--     the wire result where they cut the tables;
--   * break out of the JSON with file contents or names shaped like JSON.
-- Each case runs the real binary, on the resolver under test.

local H = require "helpers"
local printer = require "burrow.toolkit.printer"
local json = H.json

local MARK = "gw-secret-7d41c3"
local MARK_RE = "gw-secret-7d41c." -- finds it without being it (the pattern is echoed)

-- Raw reply lines of one `burrow mcp` to tools/call requests {name, args}, by id (101...).
local function serve(dir, calls, caps, flags)
  return H.mcp_calls(dir, calls, { caps = caps, flags = flags })
end

-- A config serving one policy file (and a pack); the --config flag.
local function config(src, pack)
  local cfg = H.tmpdir()
  local file = H.write(cfg, "p.lua", src)
  H.write(cfg, "c.yaml", "policies: [" .. file .. "]\n" .. (pack and ("pack: " .. pack .. "\n") or ""))
  return "--config " .. H.q(cfg .. "/c.yaml"), file
end

local JUDGE = 'return { name = "judge", check = function(req) if req.path:find("secret", 1, true) then return "deny", "hidden" end return "allow" end }\n'
local RULES = 'return { name = "rules", rules = { { deny = { "read" }, paths = { "**/secret*" }, reason = "hidden" } } }\n'

describe(H.tag("security: grep's wire path"), function()
  local dir
  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "a/open.txt", "public line\n" .. ("public " .. "needle\n"):rep(3))
    H.write(dir, "a/secret.txt", ("needle " .. MARK .. "\n"):rep(5))
    H.write(dir, "b/secret_notes.md", "needle " .. MARK .. "\n")
  end)
  after_each(function() H.cleanup() end)

  local GREPS = { { "grep", { pattern = "needle" } }, { "grep", { pattern = "needle", context = 2 } },
    { "grep", { pattern = MARK_RE } }, { "grep", { pattern = "needle", path = "a" } },
    { "grep", { pattern = "needle", path = "a/secret.txt" } }, { "read_file", { path = "a/secret.txt" } } }

  it("without a policy the marker does come back (the control)", function()
    local got = serve(dir, GREPS)
    for _, i in ipairs { 101, 102, 103, 105, 106 } do assert.truthy(got[i]:find(MARK, 1, true), i) end
  end)

  for _, p in ipairs { { "a policy judging each object", JUDGE }, { "declared rules", RULES } } do
    it(p[1] .. ": no match of a hidden file over MCP or burrow call, as a read is refused", function()
      local flag = config(p[2])
      local got = serve(dir, GREPS, nil, flag)
      for i = 1, #GREPS do
        local line = assert(got[100 + i], "no reply to " .. json.encode(GREPS[i]))
        assert.is_nil(line:find(MARK, 1, true), p[1] .. ": " .. json.encode(GREPS[i]) .. " showed the marker")
      end
      assert.truthy(got[101]:find("public needle", 1, true)) -- the rest is still found
      assert.truthy(got[106]:find("POLICY_DENIED", 1, true))
      for i = 1, 4 do
        local out = H.burrow_cmd { "call", "grep", json.encode(GREPS[i][2]), "--root", dir,
          "--config", flag:match("^%-%-config '(.*)'$") }
        assert.is_nil(out:find(MARK, 1, true), "burrow call " .. json.encode(GREPS[i][2]))
        assert.truthy(i == 3 or i == 4 or out:find("public needle", 1, true))
      end
    end)
  end

  it("a judging policy forces the tables even where the result is printed; rules alone do not", function()
    local _, judge = config(JUDGE)
    local ws = H.open { roots = { { path = dir } }, policies = { judge } }
    local r = assert(ws:run("grep", { pattern = "needle" })) -- as the MCP server runs it
    assert.equal("table", type(r.matches))
    for _, m in ipairs(r.matches) do assert.is_nil(m.path:find("secret", 1, true)) end
    assert.is_true(r.skipped_policy >= 1)
    local _, rules = config(RULES)
    local ws2 = H.open { roots = { { path = dir } }, policies = { rules } }
    local r2 = assert(ws2:run("grep", { pattern = "needle" }))
    assert.is_true(printer.held(r2.matches))
    assert.is_nil(json.encode(r2.matches:json()):find(MARK, 1, true))
    assert.is_nil(tostring(json.encode { r2.matches:text() }):find(MARK, 1, true))
  end)

  it("a pack's grep (ctx:call) keeps the tables and the policy's word", function()
    local flag = config(JUDGE, "claude_code")
    local got = serve(dir, { { "Grep", { pattern = "needle", output_mode = "content" } },
      { "Grep", { pattern = MARK_RE, output_mode = "content" } } }, nil, flag)
    assert.truthy(got[101]:find("public needle", 1, true))
    assert.is_nil(got[101]:find(MARK, 1, true))
    assert.is_nil(got[102]:find(MARK, 1, true))
    local _, judge = config(JUDGE)
    local ws = H.open { roots = { { path = dir } }, policies = { judge }, pack = "claude_code" }
    local a = { pattern = "needle", output_mode = "content" }
    local plain = json.encode { ws:call("Grep", a) }
    assert.equal(plain, json.encode { ws:run("Grep", a) })
  end)

  it("max_matches and max_result_bytes cut the wire result where they cut the tables", function()
    local t = {}
    for i = 1, 3000 do t[i] = ("needle %d %s\n"):format(i, ("w"):rep(i % 40)) end
    H.write(dir, "many.txt", table.concat(t))
    for _, caps in ipairs { { max_matches = 17 }, { max_result_bytes = 2000 }, { max_result_bytes = 1 },
                            { max_matches = 100000, max_result_bytes = 50000 } } do
      local got = serve(dir, { { "grep", { pattern = "needle", path = "many.txt" } },
        { "grep", { pattern = "needle", path = "many.txt", context = 1 } } }, caps)
      local ws = H.open(dir, caps)
      for i, a in ipairs { { pattern = "needle", path = "many.txt" }, { pattern = "needle", path = "many.txt", context = 1 } } do
        local r = json.decode(got[100 + i]).result.structuredContent
        local want = assert(ws:call("grep", a))
        assert.equal(#want.matches, #r.matches, json.encode(caps))
        assert.is_true(r.truncated)
        if caps.max_matches then assert.is_true(#r.matches <= caps.max_matches) end
        if caps.max_result_bytes and #r.matches > 1 then
          local used = 0
          for _, m in ipairs(r.matches) do
            used = used + #m.path + #m.text + 16
            for _, l in ipairs(m.before or {}) do used = used + #m.path + #l + 16 end
            for _, l in ipairs(m.after or {}) do used = used + #m.path + #l + 16 end
          end
          assert.is_true(used <= caps.max_result_bytes, json.encode(caps) .. ": " .. used)
        end
        if caps.max_result_bytes == 1 then assert.equal(1, #r.matches) end -- never nothing
      end
    end
  end)

  it("contents and names shaped like JSON stay text", function()
    local evil = '"},{"line":1,"path":"../../etc/passwd","text":"root:x:0:0\\u0000\n'
    H.write(dir, 'c/a","path":"x.txt', "needle " .. evil)
    H.write(dir, "c/b.txt", "needle\\\"\n" .. "needle \27]0;title\7\n")
    local got = serve(dir, { { "grep", { pattern = "needle", path = "c" } },
      { "grep", { pattern = "needle", path = "c", context = 1 } } })
    for i = 1, 2 do
      local r = json.decode(got[100 + i]).result
      local m = r.structuredContent.matches
      assert.equal(3, #m)
      assert.equal('c/a","path":"x.txt', m[1].path)
      assert.equal("needle " .. evil:sub(1, -2), m[1].text)
      assert.equal("needle\\\"", m[2].text)
      assert.equal("needle \27]0;title\7", m[3].text)
      assert.truthy(r.content[1].text:find('c/a","path":"x.txt:1:needle "},{', 1, true))
    end
  end)
end)
