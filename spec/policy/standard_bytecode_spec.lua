-- The standard policies' bytecode (NAME.luac beside NAME.lua, written by
-- `make install` with host/luac.lua --text: the text, then its bytecode).
-- burrow.policy loads it instead of parsing the text only for a standard
-- policy named by name and found in the standard directory, and only when
-- the text in it is the .lua file's byte for byte. Everything else is text:
-- an operator's file (by path or from policy_path) with a NAME.luac beside
-- it, and an edited standard file whose .luac is stale.
local H = require "helpers"
local burrow = require "burrow"
local policy = require "burrow.policy"

local DENY_ALL = 'return { name = "default", check = function() return "deny", "text ran" end }\n'
local ALLOW_ALL = 'return { name = "default", check = function() return "allow" end }\n'
local BYTES = 'return { name = "default", check = function() return "deny", "bytecode ran" end }\n'

-- NAME.luac as make install writes it: text, then the bytecode of code
local function luac(dir, name, text, code)
  H.write(dir, name .. ".luac", text .. string.dump(assert(load(code, "@" .. dir .. "/" .. name .. ".lua", "t"))))
end

describe(H.tag("policies: the standard policies' bytecode"), function()
  local S = require("support.standard_dir")(before_each, after_each) -- S.root; ws closed, policy.dir put back after each
  local open, answer = S.open, S.answer
  local ws

  it("a standard policy whose .luac starts with its text runs the bytecode (make install's case)", function()
    local dir = H.tmpdir()
    H.write(dir, "default.lua", DENY_ALL)
    luac(dir, "default", DENY_ALL, BYTES) -- bytecode of other code: shows which one ran
    policy.dir = dir
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("bytecode ran", 1, true))
  end)

  it("an edited standard policy runs its text: a .luac of other text is not used", function()
    local dir = H.tmpdir()
    H.write(dir, "default.lua", DENY_ALL)
    luac(dir, "default", ALLOW_ALL, BYTES)
    policy.dir = dir
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
    ws:close()
    -- text of the same length, one byte changed: still the text
    luac(dir, "default", DENY_ALL:gsub("text ran", "text raN"), BYTES)
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
    ws:close()
    -- one byte more or less at the end of the text: still the text
    luac(dir, "default", DENY_ALL:sub(1, -2), BYTES)
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
    ws:close()
    luac(dir, "default", DENY_ALL .. " ", BYTES)
    ws = open { policies = { "default" } }
    assert.truthy(answer():find("text ran", 1, true))
  end)

  it("an operator's policy file never loads a .luac beside it, by path or by name from policy_path", function()
    local dir = H.tmpdir()
    H.write(dir, "default.lua", DENY_ALL)
    luac(dir, "default", DENY_ALL, ALLOW_ALL)
    ws = open { policies = { dir .. "/default.lua" } }
    assert.truthy(answer():find("text ran", 1, true))
    ws:close()
    ws = open { policies = { "default" }, policy_path = dir }
    assert.truthy(answer():find("text ran", 1, true))
  end)

  it("an operator's policy file that is bytecode is refused, with a .luac beside it or not", function()
    local dir = H.tmpdir()
    local code = string.dump(assert(load(ALLOW_ALL, "=x", "t")))
    H.write(dir, "default.lua", code)
    luac(dir, "default", code, ALLOW_ALL)
    local w, err = burrow.open { roots = { { path = S.root } }, resolver = H.RESOLVER, protect = false,
      policies = { dir .. "/default.lua" } }
    if w then w:close() end
    assert.is_nil(w)
    assert.truthy(tostring(err):find("binary chunk", 1, true), err)
  end)
end)
