-- burrow.toolkit.schema_check: the part of burrow.toolkit.schema that
-- words a failure (schema.validate: the message names the field) and
-- makes arguments as tools see them (schema.normalize), loaded with the
-- first use of either (schema.lua's LATER): arguments the fast path
-- (schema.fits) accepts need neither. Installs them in schema.

local json = require("burrow.core").json
local null = json.null

return function(schema)
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

  -- The arguments as tools see them: JSON null at the top counts as absent.
  function schema.normalize(s, args)
    for k in pairs(s.properties or {}) do
      if args[k] == null then args[k] = nil end
    end
    return integers(s, args)
  end
end
