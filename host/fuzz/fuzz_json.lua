-- fuzz_json.lua: the checks fuzz_json.c runs on each input (raises when
-- one fails). Returns the decoded value and its encoding, or nothing.
local json = require("burrow.core").json

local function same(a, b)
  if type(a) ~= type(b) then return false end
  if type(a) == "number" then return math.type(a) == math.type(b) and a == b end
  if type(a) ~= "table" then return a == b end
  if getmetatable(a) ~= getmetatable(b) then return false end
  for k, x in pairs(a) do
    if not same(x, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

local function one_line(s, what)
  assert(not s:find("\n", 1, true), what .. " spans lines")
end

return function(s)
  -- any bytes, as a Lua string: one JSON string that reads back
  local e = json.encode(s)
  one_line(e, "an encoded string")
  local back = json.decode(e)
  assert(type(back) == "string", "an encoded string does not decode")
  if utf8.len(s) then assert(back == s, "valid UTF-8 came back changed") end
  assert(json.encode(back) == e, "U+FFFD replacement is not stable")

  -- the input as JSON text
  local v, err = json.decode(s)
  if v == nil then
    assert(type(err) == "string" and err:find("^json decode: "), "a refusal without a message")
    return nil, nil
  end
  local ok, s1 = pcall(json.encode, v)
  assert(ok, "decoded, yet cannot encode: " .. tostring(s1))
  one_line(s1, "an encoding")
  local v2, err2 = json.decode(s1)
  assert(v2 ~= nil, "the encoder wrote what the decoder refuses: " .. tostring(err2))
  assert(same(v, v2), "the round trip changed the value")
  assert(json.encode(v2) == s1, "the encoding is not stable")
  -- as a request's id comes back in a reply (mcp/init.lua's Server:error)
  assert(pcall(json.encode, { jsonrpc = "2.0", id = v, error = { code = -32600, message = "m" } }),
    "a decoded value cannot be echoed in a reply")
  return v, s1
end
