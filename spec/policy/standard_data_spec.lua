-- The standard policies' data form (NAME.luad beside NAME.lua, written by
-- `make install` with host/policydata.lua: the text, then the bytecode of a
-- chunk returning the fields the text gave, run once with no options).
-- burrow.policy takes it, and runs no sandbox for that policy, only for a
-- standard policy named by name with no options, found in the standard
-- directory, whose text in the .luad is the .lua file's byte for byte and
-- whose data says it has neither check() nor after(). Everything else runs
-- its text as before.
local H = require "helpers"
local burrow = require "burrow"
local core = require "burrow.core"
local policy = require "burrow.policy"

-- a rule that shows which one ran: the text's reason or the data's
local TEXT = 'local o = ... or {}\nreturn { name = "default", options = { "x" }, rules = {\n'
  .. '  { deny = "all", paths = { "a.txt" }, reason = "text ran" .. (o.x and " with x" or "") } } }\n'
local DATA = '{ options = { "x" }, rules = { { deny = "all", paths = { "a.txt" }, reason = "data ran" } },'
  .. ' check = false, after = false }'

-- NAME.luad as make install writes it: text, then the bytecode of `return data`
local function luad(dir, name, text, data)
  H.write(dir, name .. ".luad", text .. string.dump(assert(load("return " .. data, "=" .. name, "t", {})), true))
end

-- host/policydata.lua as make install runs it; the .luad's bytes, or nil
-- when it wrote none
local function generate(src, out)
  H.sh(("LUA_PATH=%s LUA_CPATH=%s lua5.4 host/policydata.lua %s %s %s"):format(H.q(package.path),
    H.q(package.cpath), H.q(src), H.q(src), H.q(out)))
  local f = io.open(out, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

describe(H.tag("policies: the standard policies' data"), function()
  local S = require("support.standard_dir")(before_each, after_each) -- S.root; ws closed, policy.dir put back after each
  local open, answer = S.open, S.answer
  local ws

  local function standard(text, data)
    local dir = H.tmpdir()
    H.write(dir, "default.lua", text)
    luad(dir, "default", text, data)
    policy.dir = dir
    return dir
  end

  it("a standard policy named with no options takes its .luad's fields (make install's case)", function()
    standard(TEXT, DATA)
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("data ran", 1, true))
  end)

  -- install ran them: their rules compile with the first use, not at open
  -- (docs/benchmarks.md, Start-up); a set with any policy that runs, at open
  it("rules of data alone compile with their first use: a call, a walk; closed unused, never", function()
    standard(TEXT, DATA)
    ws = open { policies = { "default" } }
    assert.is_nil(rawget(ws.policies, "rules"))
    ws:close()
    H.write(S.root, "b.txt", "b\n")
    ws = open { policies = { "default" } }
    local listed = assert(ws:call("list_dir", { path = "." })) -- the data's rule hides a.txt from the walk
    assert.is_not_nil(rawget(ws.policies, "rules"))
    local names = {}
    for i, e in ipairs(listed.entries) do names[i] = e.name end
    assert.same({ "b.txt" }, names)
    ws:close()
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("data ran", 1, true))
    assert.is_not_nil(rawget(ws.policies, "rules"))
    ws:close()
    local mine = H.tmpdir()
    H.write(mine, "mine.lua", 'return { rules = { { deny = "write", paths = { "b.txt" } } } }\n')
    ws = open { policies = { "default", mine .. "/mine.lua" } }
    assert.is_not_nil(rawget(ws.policies, "rules"))
    assert.truthy(answer():find("data ran", 1, true))
  end)

  it("with options the text runs, with them", function()
    standard(TEXT, DATA)
    ws = open { policies = { { name = "default", x = true } } }
    assert.truthy(answer():find("text ran with x", 1, true))
  end)

  it("an edited standard policy runs its text: a .luad of other text is not used", function()
    standard(TEXT, DATA)
    luad(policy.dir, "default", TEXT:gsub("text ran", "text raN"), DATA)
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
    ws:close()
    luad(policy.dir, "default", TEXT:sub(1, -2), DATA)
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
  end)

  it("a .luad whose data has a check() or an after() is not used", function()
    standard(TEXT, DATA:gsub("check = false", "check = true"))
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
    ws:close()
    standard(TEXT, DATA:gsub("after = false", "after = true"))
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
    ws:close()
    standard(TEXT, "nil")
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
  end)

  it("an operator's policy file never takes a .luad beside it, by path or by name from policy_path", function()
    local dir = H.tmpdir()
    H.write(dir, "default.lua", TEXT)
    luad(dir, "default", TEXT, DATA)
    ws = open { policies = { dir .. "/default.lua" } }
    assert.truthy(answer():find("text ran", 1, true))
    ws:close()
    ws = open { policies = { "default" }, policy_path = dir }
    assert.truthy(answer():find("text ran", 1, true))
  end)

  it("a bad standard policy is still refused at start, whatever .luad is beside it", function()
    -- the .luad make install wrote before the file was broken
    local dir = standard(TEXT, DATA)
    H.write(dir, "default.lua", TEXT:sub(1, -3))
    local w, err = burrow.open { roots = { { path = S.root } }, resolver = H.RESOLVER, protect = false,
      policies = { "default" } }
    if w then w:close() end
    assert.is_nil(w)
    assert.truthy(tostring(err):find("policy default", 1, true), err)
  end)

  it("the data of each standard policy is what a fresh run of it gives; those with check() or after() have none", function()
    local out, made = H.tmpdir(), {}
    for name in H.sh("ls lua/policy"):gmatch("([%w_]+)%.lua\n") do
      local src = "lua/policy/" .. name .. ".lua"
      local text = H.read("lua/policy", name .. ".lua")
      local both = generate(src, out .. "/" .. name .. ".luad")
      local sb = core.sandbox(policy.limits)
      assert(sb:load("1:p", text, {}, nil, "@" .. src, core.state_open { kind = "memory" }, false))
      local fresh = policy.fields(sb, "1:p")
      sb:close()
      if fresh.check or fresh.after then
        assert.is_nil(both, name)
      else
        assert.equal(text, both:sub(1, #text), name)
        local data = assert(load(both:sub(#text + 1), "=" .. name, "b", {}))()
        assert.same(fresh, data, name)
        made[#made + 1] = name
      end
    end
    -- the two every start loads out of the box (burrow.open: protected, default)
    table.sort(made)
    assert.truthy(table.concat(made, " "):find("default protected", 1, true), table.concat(made, " "))
  end)
end)
