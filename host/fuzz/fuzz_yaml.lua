-- fuzz_yaml.lua: the checks fuzz_yaml.c runs on each input (raises when
-- one fails).
local core = require "burrow.core"
local config = require "burrow.config"
local null, array_mt = core.json.null, core.json.array_mt

local function is_mark(m)
  return type(m) == "table" and math.type(m.line) == "integer" and m.line >= 1 and
    math.type(m.col) == "integer" and m.col >= 1
end

-- every table has its position; keys are strings; values are the subset's
local function walk(v, pos, depth)
  local t = type(v)
  if t == "string" or t == "number" or t == "boolean" or v == null then return end
  assert(t == "table", "a value of type " .. t)
  assert(depth <= 64, "nested deeper than 64")
  local p = pos[v]
  assert(is_mark(p), "a table without its position")
  if getmetatable(v) == array_mt then
    local n = 0
    for _ in pairs(v) do n = n + 1 end
    assert(n == #v, "a sequence with holes")
    for i, x in ipairs(v) do
      assert(is_mark(p.items[i]), "an item without its position")
      walk(x, pos, depth + 1)
    end
  else
    assert(getmetatable(v) == nil, "a mapping with a metatable")
    for k, x in pairs(v) do
      assert(type(k) == "string", "a key of type " .. type(k))
      assert(is_mark(p.keys[k]) and is_mark(p.values[k]), "a key without its positions")
      walk(x, pos, depth + 1)
    end
  end
end

return function(s)
  local ok, v, pos = pcall(core.yaml_decode, s)
  assert(ok, "yaml_decode raised: " .. tostring(v))
  if v == nil then
    assert(type(pos) == "string" and
      (pos:find("^line %d+, column %d+: .") or pos:find("^YAML text too large")),
      "a refusal without line and column: " .. tostring(pos))
  else
    assert(type(pos) == "table", "no positions")
    walk(v, pos, 0)
  end
  local ok2, opts, err = pcall(config.parse, s, "fuzz.yaml", "/nonexistent")
  assert(ok2, "config.parse raised: " .. tostring(opts))
  assert(type(opts) == "table" or (opts == nil and type(err) == "string" and err:find("^fuzz%.yaml:")),
    "config.parse: " .. tostring(err))
end
