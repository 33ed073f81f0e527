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

local function type_of(v)
  local t = type(v)
  if v == null then return "null" end
  if t == "number" then
    return math.type(v) == "integer" and "integer" or "number"
  end
  if t == "table" then
    if getmetatable(v) == json.array_mt then return "array" end
    if next(v) == nil then return "object" end -- {} from JSON is an object
    if v[1] ~= nil and #v > 0 then
      local n = 0
      for _ in pairs(v) do n = n + 1 end
      if n == #v then return "array" end
    end
    return "object"
  end
  return t -- string, boolean
end

local function matches_type(want, got, v)
  if want == got then return true end
  if want == "number" and got == "integer" then return true end
  if want == "integer" and got == "number" and v == math.floor(v) then return true end -- 5.0, 1e300
  if want == "array" and got == "object" and next(v) == nil then return true end
  if want == "object" and got == "array" and next(v) == nil then return true end
  return false
end

local function where(path)
  return path == "" and "arguments" or ("field '%s'"):format(path)
end

local check

local function check_object(s, v, path)
  for _, name in ipairs(s.required or {}) do
    if v[name] == nil or v[name] == null then
      return ("%s: missing required field '%s'"):format(where(path), name), path == "" and name or path .. "." .. name
    end
  end
  local props = s.properties or {}
  for k, fv in pairs(v) do
    local sub = path == "" and tostring(k) or path .. "." .. tostring(k)
    local ps = props[k]
    if ps then
      if fv ~= null then
        local err, field = check(ps, fv, sub)
        if err then return err, field end
      end
    elseif s.additionalProperties == false then
      local known = {}
      for name in pairs(props) do known[#known + 1] = name end
      table.sort(known)
      return ("unknown field '%s' (expected one of: %s)"):format(sub, table.concat(known, ", ")), sub
    end
  end
end

function check(s, v, path)
  local got = type_of(v)
  if s.type then
    local ok = false
    local types = type(s.type) == "table" and s.type or { s.type }
    for _, t in ipairs(types) do ok = ok or matches_type(t, got, v) end
    if not ok then
      return ("%s: expected %s, got %s"):format(where(path), table.concat(types, " or "), got), path
    end
  end
  if s.enum then
    local ok = false
    for _, e in ipairs(s.enum) do ok = ok or e == v end
    if not ok then
      local opts = {}
      for _, e in ipairs(s.enum) do opts[#opts + 1] = ("%q"):format(tostring(e)) end
      return ("%s: must be one of %s"):format(where(path), table.concat(opts, ", ")), path
    end
  end
  if type(v) == "number" then
    if v ~= v or v == math.huge or v == -math.huge then -- only from Lua callers
      return ("%s: must be a finite number"):format(where(path)), path
    end
    local int = s.type == "integer" -- a field that may also be a float keeps its own range
    local lo, hi = s.minimum or (int and -MAX), s.maximum or (int and MAX)
    if lo and v < lo then
      return ("%s: must be at least %s"):format(where(path), math.tointeger(lo) or lo), path
    end
    if hi and v > hi then
      return ("%s: must be at most %s"):format(where(path), math.tointeger(hi) or hi), path
    end
  end
  if type(v) == "string" and s.minLength and #v < s.minLength then
    return ("%s: must not be empty"):format(where(path)), path
  end
  -- an empty JSON array passes as an object: its required fields still count
  if type(v) == "table" and (got == "object" or (s.type == "object" and next(v) == nil)) then
    return check_object(s, v, path)
  end
  if got == "array" and s.items then
    for i, item in ipairs(v) do
      local err, field = check(s.items, item, ("%s[%d]"):format(path, i - 1))
      if err then return err, field end
    end
  end
end

-- nil if v satisfies s, else a message naming the field, and the field
-- ("edits[0].old_text"; "" for the arguments as a whole).
function schema.validate(s, v)
  return check(s, v, "")
end

-- Integral floats from JSON (5.0) become integers where the schema wants
-- them, at any depth; v has passed validate, so each fits.
local function integers(s, v)
  if s.type == "integer" and math.type(v) == "float" then return math.tointeger(v) end
  if type(v) ~= "table" or v == null then return v end
  if s.properties then
    for k, ps in pairs(s.properties) do
      if v[k] ~= nil then v[k] = integers(ps, v[k]) end
    end
  elseif s.items then
    for i = 1, #v do v[i] = integers(s.items, v[i]) end
  end
  return v
end

-- The fast path. A schema is compiled once (per schema table: tools'
-- schemas do not change after load) into a function that answers true
-- only when check() would accept the value and normalize() would change
-- nothing in it: no JSON null at the top, no float where an integer is
-- wanted. Anything it is unsure of (an array-like table without array_mt,
-- a float, a null, a union it cannot decide) answers false, and the slow
-- path above decides and words the failure, so the outcome is the same.
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

-- The arguments as tools see them: JSON null at the top counts as absent.
function schema.normalize(s, args)
  for k in pairs(s.properties or {}) do
    if args[k] == null then args[k] = nil end
  end
  return integers(s, args)
end

return schema
