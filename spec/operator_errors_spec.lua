-- Errors where the operator looks (issue 14): policy errors name the file
-- and line; a policy's own error text reaches stderr and the audit log,
-- never the agent; `audit: FILE` alone records.

local H = require "helpers"
local json = H.json

describe(H.tag("operator errors"), function()
  local dir

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "data/a.txt", "alpha\n")
  end)

  after_each(H.cleanup)

  it("a policy with a syntax error is named by file and line", function()
    H.write(dir, "policies/mine.lua", "return {\n  name = 'mine',\n  check = function() return 'allow' end\n  rules = {}\n}\n")
    H.write(dir, "burrow.yaml", "roots: [data]\npolicies: [default, policies/mine.lua]\n")
    local _, err, code = H.burrow_cmd { "check", "--config", dir .. "/burrow.yaml" }
    assert.equal(2, code)
    assert.matches(dir .. "/policies/mine.lua:4: '}' expected", err, 1, true)
    assert.not_matches('[string', err, 1, true)
  end)

  it("a file under a long path is named whole, not cut to Lua's 59 bytes", function()
    local deep = ("operator-config-that-is-deep/"):rep(3)
    H.write(dir, deep .. "mine.lua", "return {\n  name = 'mine',\n  check = function() return 'allow' end\n  rules = {}\n}\n")
    H.write(dir, deep .. "boom.lua", "return { name = 'boom', check = function(req)\n  error('boom at ' .. req.path)\nend }\n")
    H.write(dir, deep .. "tool.lua", "return {\n  name = 'mytool'\n  run = 1 }\n")
    local function check(yaml, want)
      H.write(dir, "burrow.yaml", "roots: [data]\n" .. yaml)
      local _, err = H.burrow_cmd { "check", "--config", dir .. "/burrow.yaml" }
      assert.matches(want, err, 1, true)
      assert.not_matches("...", err:match("[^\n]*" .. want:gsub("%p", "%%%0")) or "", 1, true)
    end
    assert.is_true((dir .. "/" .. deep .. "mine.lua"):len() > 60)
    check("policies: [default, " .. deep .. "mine.lua]\n", dir .. "/" .. deep .. "mine.lua:4: '}' expected")
    check("tools: [read_file, " .. deep .. "tool.lua]\n", dir .. "/" .. deep .. "tool.lua:3: '}' expected")
    H.write(dir, "burrow.yaml", "roots: [data]\npolicies: [default, " .. deep .. "boom.lua]\n")
    local _, err = H.burrow_cmd { "call", "read_file", '{"path":"a.txt"}', "--config", dir .. "/burrow.yaml" }
    assert.matches(dir .. "/" .. deep .. "boom.lua:2: boom at a.txt", err, 1, true)
  end)

  it("a relative policy file in the Lua API is named as written", function()
    H.write(dir, "bad.lua", "return {\n  check = function( return 'allow' end }\n")
    local ws, err = H.burrow.open { roots = { dir .. "/data" }, policies = { "./bad.lua" }, base_dir = dir }
    assert.is_nil(ws)
    assert.matches(dir .. "/bad.lua:2: ", err, 1, true)
  end)

  it("a policy's runtime error: the agent sees the policy's name, stderr and the audit log the text", function()
    H.write(dir, "boom.lua", "return { name = 'boom', check = function(req)\n  error('secret detail ' .. req.path)\nend }\n")
    H.write(dir, "burrow.yaml", "roots: [data]\npolicies: [default, boom.lua]\naudit: audit.jsonl\n")
    local out, err, code = H.burrow_cmd { "call", "read_file", '{"path":"a.txt"}', "--config", dir .. "/burrow.yaml" }
    assert.equal(1, code)
    local res = json.decode(out)
    assert.equal("POLICY_DENIED", res.error.code)
    assert.matches("denied by policy boom (policy error)", res.error.message, 1, true)
    assert.not_matches("secret detail", res.error.message, 1, true)
    assert.matches("boom.lua:2: secret detail a.txt", err, 1, true)
    local log = H.read(dir, "audit.jsonl")
    local saw_error, saw_call = false, false
    for line in log:gmatch("[^\n]+") do
      local rec = json.decode(line)
      if rec.event == "policy_error" then
        saw_error = true
        assert.equal("boom", rec.policy)
        assert.matches("boom.lua:2: secret detail a.txt", rec.error, 1, true)
      elseif rec.tool == "read_file" then
        saw_call = true
        assert.equal("deny", rec.decision)
      end
    end
    assert.is_true(saw_error, log)
    assert.is_true(saw_call, log)
  end)

  it("a policy answering nonsense is a policy error too", function()
    H.write(dir, "odd.lua", "return { name = 'odd', check = function() return 'maybe' end }\n")
    local ws = assert(H.burrow.open { roots = { dir .. "/data" }, policies = { "odd.lua" }, base_dir = dir })
    local res, msg, code = ws:call("read_file", { path = "a.txt" })
    ws:close()
    assert.is_nil(res)
    assert.equal("POLICY_DENIED", code)
    assert.matches("denied by policy odd (policy error)", msg, 1, true)
    assert.not_matches("maybe", msg, 1, true)
  end)

  it("audit: FILE alone records each call", function()
    H.write(dir, "burrow.yaml", "roots: [data]\naudit: audit.jsonl\n")
    local _, err, code = H.burrow_cmd { "call", "read_file", '{"path":"a.txt"}', "--config", dir .. "/burrow.yaml" }
    assert.equal(0, code, err)
    local rec = json.decode((H.read(dir, "audit.jsonl"):match("[^\n]+")))
    assert.equal("read_file", rec.tool)
    assert.equal("allow", rec.decision)
    assert.equal("a.txt", rec.path)
  end)
end)
