-- burrow.toolkit.schema's fast path (schema.fits): a tool's schema compiled once
-- answers "valid and already normalized" for the usual arguments, so a
-- call skips the checker and normalize. It must never say yes where the
-- checker says no, or where normalize would change the arguments: for
-- every tool of every pack, thousands of generated arguments (valid ones,
-- and ones with wrong types, nulls, floats, NaN, huge numbers, unknown
-- fields, array-like tables) are given to both.

local H = require "helpers"
local schema = require "burrow.toolkit.schema"
local registry = require "burrow.workspace.registry"
local json = H.json
local null = json.null

local function copy(v)
  if type(v) ~= "table" then return v end
  local c = {}
  for k, x in pairs(v) do c[k] = copy(x) end
  return setmetatable(c, getmetatable(v))
end

local function same(a, b)
  if a ~= a and b ~= b then return true end -- NaN
  if type(a) ~= "table" or type(b) ~= "table" then return a == b and math.type(a) == math.type(b) end
  if getmetatable(a) ~= getmetatable(b) then return false end
  for k, x in pairs(a) do if not same(x, b[k]) then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local ODD = { null, 0.5, 2.0, 0 / 0, math.huge, -1, 0, 1 << 62, 1e300, "", "x", true, false, {}, json.array {},
  { 1, 2 }, { a = 1 }, json.array { "a" }, -(1 << 53) }

local function pick(t) return t[math.random(#t)] end

-- A value for s: mostly what it asks for, sometimes anything.
local function gen(s, depth)
  if math.random() < 0.15 or depth > 4 then return pick(ODD) end
  local t = s.type
  if type(t) == "table" then t = pick(t) end
  if s.enum then return math.random() < 0.9 and pick(s.enum) or "not-in-enum" end
  if t == "string" then return pick { "a.txt", "", "src/x.c", ("y"):rep(3) } end
  if t == "integer" then
    return pick { 1, 2, 100, s.minimum or 0, s.maximum or 7, (s.minimum or 0) - 1, 3.0, schema.MAX_INTEGER }
  end
  if t == "number" then return pick { 1, 0.25, -3, 1e10 } end
  if t == "boolean" then return math.random() < 0.5 end
  if t == "null" then return null end
  if t == "array" then
    local a = json.array {}
    for i = 1, math.random(0, 3) do a[i] = s.items and gen(s.items, depth + 1) or "x" end
    if math.random() < 0.1 then setmetatable(a, nil) end -- array-like without the marker
    return a
  end
  if t == "object" or s.properties then
    local o = {}
    for _, name in ipairs(s.required or {}) do
      if math.random() < 0.95 then o[name] = gen(s.properties[name] or {}, depth + 1) end
    end
    for name, ps in pairs(s.properties or {}) do
      if math.random() < 0.4 then o[name] = gen(ps, depth + 1) end
    end
    if math.random() < 0.05 then o.unknown_field = "x" end
    return o
  end
  return pick(ODD)
end

describe("schema.fits (the checker's fast path)", function()
  it("says yes to usual arguments, no to what needs the checker or normalize", function()
    local ws = H.open(H.tmpdir())
    local s = ws:tool("read_file").input_schema
    assert.is_true(schema.fits(s, { path = "a.txt" }))
    assert.is_true(schema.fits(s, { path = "a.txt", limit = 5, encoding = "text", notebook = false }))
    assert.is_false(schema.fits(s, { path = "a.txt", limit = 5.0 })) -- normalize makes it 5
    assert.is_false(schema.fits(s, { path = "a.txt", limit = null })) -- normalize drops it
    assert.is_false(schema.fits(s, { path = "a.txt", limit = 0 }))
    assert.is_false(schema.fits(s, { path = "a.txt", encoding = "utf-9" }))
    assert.is_false(schema.fits(s, { path = "a.txt", other = 1 }))
    assert.is_false(schema.fits(s, { limit = 5 }))
    ws:close()
    H.cleanup()
  end)

  it("never says yes where the checker says no or normalize changes the arguments (every tool of every pack)", function()
    math.randomseed(12)
    local yes, no, tools = 0, 0, 0
    for _, pack in ipairs(registry.packs()) do
      local ws = H.open { roots = { H.tmpdir() }, pack = pack ~= "native" and pack or nil }
      for _, t in ipairs(ws:tools()) do
        tools = tools + 1
        local s = ws:tool(t.name).input_schema
        for _ = 1, 400 do
          local v = gen(s, 0)
          local fits = schema.fits(s, v)
          local c = copy(v)
          local err = schema.validate(s, c)
          if fits then
            yes = yes + 1
            assert(err == nil, ("%s %s: fits, but the checker says: %s (%s)"):format(pack, t.name, tostring(err), json.encode(v)))
            schema.normalize(s, c)
            assert(same(c, v), ("%s %s: fits, but normalize changed %s"):format(pack, t.name, json.encode(v)))
          else
            no = no + 1
          end
        end
      end
      ws:close()
    end
    H.cleanup()
    assert.is_true(tools > 50, "tools seen: " .. tools)
    -- both answers were given often, so both sides were compared
    assert.is_true(yes > tools * 50, ("fits said yes %d times"):format(yes))
    assert.is_true(no > tools * 50, ("fits said no %d times"):format(no))
  end)
end)
