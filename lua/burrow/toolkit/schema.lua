-- burrow.toolkit.schema: checks tool arguments against the JSON Schema subset tool
-- files use (type, properties, required, additionalProperties, enum,
-- minimum, maximum, items, minLength). Errors name the field. JSON null
-- for an optional field counts as absent, as many clients send it.
-- An integer field holds at most schema.MAX_INTEGER either way unless its
-- schema says less: 1e300 is an integer to JSON, and no count, line or
-- size means anything past 2^53 (RFC 7493's safe range).

local json = require("burrow.core").json
local null = json.null

local schema = {}

schema.MAX_INTEGER = (1 << 53) - 1
local MAX = schema.MAX_INTEGER

-- The full checker (schema.validate, which words a failure and names the
-- field) and schema.normalize: burrow.toolkit.schema_check, loaded with
-- the first use of either (the fast path below answers a call whose
-- arguments are already as tools see them, the usual case: a `burrow call`
-- with such arguments loads none of it; docs/benchmarks.md, Start-up).
local LATER = { validate = true, normalize = true }
setmetatable(schema, { __index = function(s, k)
  if not LATER[k] then return nil end
  setmetatable(s, nil)
  require("burrow.toolkit.schema_check")(s)
  return rawget(s, k)
end })

-- The fast path. A schema is compiled once (per schema table: tools'
-- schemas do not change after load) into a function that answers true
-- only when check() would accept the value and normalize() would change
-- nothing in it: no JSON null at the top, no float where an integer is
-- wanted. Anything it is unsure of (an array-like table without array_mt,
-- a float, a null, a union it cannot decide) answers false, and the slow
-- path (schema_check) decides and words the failure, so the outcome is the
-- same.
local compiled = setmetatable({}, { __mode = "k" })
local array_mt = json.array_mt

-- What a value is, in the words of the types below; a table without
-- array_mt that has [1] is left to the slow path ("arraylike").
local function kind_of(v)
  local t = type(v)
  if t == "number" then return math.type(v) end
  if t == "table" then
    if getmetatable(v) == array_mt then return "array" end
    return v[1] == nil and "object" or "arraylike"
  end
  if v == null then return "null" end
  return t
end

local KINDS = { string = { "string" }, boolean = { "boolean" }, integer = { "integer" },
  number = { "integer", "float" }, null = { "null" }, object = { "object" }, array = { "array" } }

local fast

local function build(s)
  local accept -- kind -> true, nil for any
  if s.type then
    accept = {}
    for _, t in ipairs(type(s.type) == "table" and s.type or { s.type }) do
      for _, k in ipairs(KINDS[t] or {}) do accept[k] = true end
    end
  end
  local enum
  if s.enum then
    enum = {}
    for _, e in ipairs(s.enum) do
      if e ~= e then return function() return false end end -- NaN: the slow path's compare
      enum[e] = true
    end
  end
  local int = s.type == "integer"
  local lo, hi = s.minimum or (int and -MAX), s.maximum or (int and MAX)
  local min_len = s.minLength
  local props, additional = {}, s.additionalProperties ~= false
  for k, ps in pairs(s.properties or {}) do props[k] = fast(ps) end
  local required = s.required or {}
  local array_ok = s.type ~= "object" -- (the slow path checks an empty array as an object)
  local items = s.items and fast(s.items)
  return function(v, at_top) -- at_top: a null there is normalize()'s work
    local kind = kind_of(v)
    if accept and not accept[kind] or kind == "arraylike" then return false end
    if enum and not enum[v] then return false end
    local t = type(v)
    if t == "number" then
      if v ~= v or v == math.huge or v == -math.huge then return false end
      if (lo and v < lo) or (hi and v > hi) then return false end
    elseif t == "string" then
      if min_len and #v < min_len then return false end
    elseif kind == "array" then
      if not array_ok then return false end
      if items then
        for _, item in ipairs(v) do
          if not items(item) then return false end
        end
      end
    elseif kind == "object" then
      for _, name in ipairs(required) do
        if v[name] == nil or v[name] == null then return false end
      end
      for k, fv in pairs(v) do
        local ps = props[k]
        if fv == null then
          if at_top or not ps and not additional then return false end
        elseif ps then
          if not ps(fv) then return false end
        elseif not additional then
          return false
        end
      end
    end
    return true
  end
end

function fast(s)
  local f = compiled[s]
  if not f then
    f = build(s)
    compiled[s] = f
  end
  return f
end

--- True when v satisfies s and is already as tools see it (normalize
-- would change nothing): then neither validate nor normalize is needed.
-- False means only "take the slow path".
function schema.fits(s, v)
  return fast(s)(v, true)
end

return schema
