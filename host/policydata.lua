-- host/policydata.lua: a standard policy's data form for `make install`
-- (build tool, not installed). Usage, from the checkout after `make`:
--   LUA_PATH='lua/?.lua;lua/?/init.lua' LUA_CPATH='build/lua/?.so' \
--     lua5.4 host/policydata.lua SRC NAME OUT
-- Runs the policy's text once in burrow's sandbox with no options (as a
-- start would: core.sandbox, sb:load, burrow.policy.fields) and, when the
-- policy has neither check() nor after() (its rules are all it gives),
-- writes OUT: the text, then the bytecode of a chunk returning those
-- fields. burrow.policy then takes them for the standard policy named
-- with no options, when the text there is the .lua file's byte for byte,
-- and a start makes no sandbox for it (docs/policies.md, "Limits";
-- docs/benchmarks.md, Start-up). Otherwise OUT is removed: that policy
-- runs at each start, as before. So a standard policy without check() or
-- after() must be a function of its options alone (no state.*, no clock
-- at its top level); spec/policy/standard_data_spec.lua checks each one's
-- data against a fresh run.
local src, name, out = ...
assert(src and name and out, "usage: lua5.4 host/policydata.lua SRC NAME OUT")
local core = require "burrow.core"
local policy = require "burrow.policy"

local f = assert(io.open(src, "rb"))
local text = f:read("a")
f:close()

local sb = core.sandbox(policy.limits)
local ok = sb:load("1:policy", text, {}, nil, "@" .. name, core.state_open { kind = "memory" }, false)
local fields = ok and policy.fields(sb, "1:policy")
sb:close()
if not fields or fields.check or fields.after then
  os.remove(out)
  return
end

-- fields as a Lua constructor: strings, numbers, booleans, tables
local function ser(v)
  local t = type(v)
  if t == "string" or t == "number" or t == "boolean" or t == "nil" then return ("%q"):format(v) end
  assert(t == "table", "policydata: a " .. t .. " in " .. src)
  local keys = {}
  for k in pairs(v) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    if type(a) == type(b) then return a < b end
    return type(a) == "number"
  end)
  local parts = {}
  for _, k in ipairs(keys) do parts[#parts + 1] = ("[%s] = %s"):format(ser(k), ser(v[k])) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

local chunk = assert(load("return " .. ser(fields), "=" .. name, "t", {}))
local o = assert(io.open(out, "wb"))
assert(o:write(text, string.dump(chunk, true)))
assert(o:close())
