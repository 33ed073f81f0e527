-- burrow.jsonlite: JSON in plain Lua 5.1 (LuaJIT), for burrow.ffi, where
-- burrow.core.json (C) is not there. Objects and arrays become tables;
-- null becomes nil inside objects and jsonlite.null inside arrays. Encoding:
-- a table with keys 1..n (n > 0) is an array, any other table an object
-- (so {} is {}); jsonlite.array(t) marks an array, empty or not.
-- burrow.ffi uses vim.json (Neovim) or cjson instead when one is present.

local jsonlite = {}

local array_mt = {}
jsonlite.array_mt = array_mt
jsonlite.null = setmetatable({}, { __tostring = function() return "null" end })

function jsonlite.array(t) return setmetatable(t or {}, array_mt) end

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\b"] = "\\b", ["\f"] = "\\f",
  ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t" }

local function quote(s)
  return '"' .. s:gsub('[%c"\\]', function(c)
    return ESC[c] or ("\\u%04x"):format(c:byte())
  end) .. '"'
end

local function is_array(t)
  if getmetatable(t) == array_mt then return true end
  local n = #t
  if n == 0 then return false end
  local count = 0
  for _ in pairs(t) do count = count + 1 end
  return count == n
end

local encode
local function encode_into(v, out, depth)
  local ty = type(v)
  if v == nil or v == jsonlite.null then
    out[#out + 1] = "null"
  elseif ty == "boolean" then
    out[#out + 1] = tostring(v)
  elseif ty == "number" then
    if v ~= v or v == math.huge or v == -math.huge then error("jsonlite: cannot encode " .. tostring(v)) end
    if v == math.floor(v) and math.abs(v) < 2 ^ 53 then
      out[#out + 1] = ("%d"):format(v)
    else
      out[#out + 1] = ("%.17g"):format(v)
    end
  elseif ty == "string" then
    out[#out + 1] = quote(v)
  elseif ty == "table" then
    if depth > 200 then error("jsonlite: nesting too deep") end
    if is_array(v) then
      out[#out + 1] = "["
      for i = 1, #v do
        if i > 1 then out[#out + 1] = "," end
        encode_into(v[i], out, depth + 1)
      end
      out[#out + 1] = "]"
    else
      local keys = {}
      for k in pairs(v) do
        if type(k) ~= "string" then error("jsonlite: object keys must be strings") end
        keys[#keys + 1] = k
      end
      table.sort(keys)
      out[#out + 1] = "{"
      for i, k in ipairs(keys) do
        if i > 1 then out[#out + 1] = "," end
        out[#out + 1] = quote(k)
        out[#out + 1] = ":"
        encode_into(v[k], out, depth + 1)
      end
      out[#out + 1] = "}"
    end
  else
    error("jsonlite: cannot encode a " .. ty)
  end
end

function encode(v)
  local out = {}
  encode_into(v, out, 0)
  return table.concat(out)
end
jsonlite.encode = encode

-- UTF-8 of a code point.
local function utf8_char(c)
  if c < 0x80 then return string.char(c) end
  if c < 0x800 then return string.char(0xC0 + math.floor(c / 64), 0x80 + c % 64) end
  if c < 0x10000 then
    return string.char(0xE0 + math.floor(c / 4096), 0x80 + math.floor(c / 64) % 64, 0x80 + c % 64)
  end
  return string.char(0xF0 + math.floor(c / 262144), 0x80 + math.floor(c / 4096) % 64,
    0x80 + math.floor(c / 64) % 64, 0x80 + c % 64)
end

local UNESC = { ['"'] = '"', ["\\"] = "\\", ["/"] = "/", b = "\b", f = "\f", n = "\n", r = "\r", t = "\t" }

--- Decode text: the value, or nil, "message at byte N".
function jsonlite.decode(text)
  local pos = 1
  local function fail(msg) error({ jsonlite = msg .. " at byte " .. pos }, 0) end
  local function ws() pos = text:find("[^ \t\r\n]", pos) or #text + 1 end
  local value
  local function str()
    pos = pos + 1 -- the opening quote
    local parts = {}
    while true do
      local s, e = text:find('["\\]', pos)
      if not s then fail("unterminated string") end
      parts[#parts + 1] = text:sub(pos, s - 1)
      if text:sub(s, s) == '"' then
        pos = e + 1
        return table.concat(parts)
      end
      local c = text:sub(s + 1, s + 1)
      if c == "u" then
        local hex = text:sub(s + 2, s + 5)
        if not hex:match("^%x%x%x%x$") then pos = s fail("bad \\u escape") end
        local cp = tonumber(hex, 16)
        local nextpos = s + 6
        if cp >= 0xD800 and cp <= 0xDBFF and text:sub(nextpos, nextpos + 1) == "\\u" then
          local lo = tonumber(text:sub(nextpos + 2, nextpos + 5), 16)
          if lo and lo >= 0xDC00 and lo <= 0xDFFF then
            cp = 0x10000 + (cp - 0xD800) * 1024 + (lo - 0xDC00)
            nextpos = nextpos + 6
          end
        end
        parts[#parts + 1] = utf8_char(cp)
        pos = nextpos
      elseif UNESC[c] then
        parts[#parts + 1] = UNESC[c]
        pos = s + 2
      else
        pos = s
        fail("bad escape")
      end
    end
  end
  function value(depth)
    if depth > 200 then fail("nesting too deep") end
    ws()
    local c = text:sub(pos, pos)
    if c == "{" then
      pos = pos + 1
      local t = {}
      ws()
      if text:sub(pos, pos) == "}" then pos = pos + 1 return t end
      while true do
        ws()
        if text:sub(pos, pos) ~= '"' then fail("expected a key") end
        local k = str()
        ws()
        if text:sub(pos, pos) ~= ":" then fail("expected ':'") end
        pos = pos + 1
        local v = value(depth + 1)
        if v ~= jsonlite.null then t[k] = v end
        ws()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "}" then return t end
        if d ~= "," then pos = pos - 1 fail("expected ',' or '}'") end
      end
    elseif c == "[" then
      pos = pos + 1
      local t = jsonlite.array {}
      ws()
      if text:sub(pos, pos) == "]" then pos = pos + 1 return t end
      while true do
        t[#t + 1] = value(depth + 1)
        ws()
        local d = text:sub(pos, pos)
        pos = pos + 1
        if d == "]" then return t end
        if d ~= "," then pos = pos - 1 fail("expected ',' or ']'") end
      end
    elseif c == '"' then
      return str()
    elseif text:find("^true", pos) then
      pos = pos + 4
      return true
    elseif text:find("^false", pos) then
      pos = pos + 5
      return false
    elseif text:find("^null", pos) then
      pos = pos + 4
      return jsonlite.null
    else
      local num = text:match("^-?%d+%.?%d*[eE]?[-+]?%d*", pos)
      if not num or num == "" or not tonumber(num) then fail("unexpected character") end
      pos = pos + #num
      return tonumber(num)
    end
  end
  local ok, res = pcall(function()
    local v = value(0)
    ws()
    if pos <= #text then fail("trailing characters") end
    return v
  end)
  if ok then return res end
  if type(res) == "table" and res.jsonlite then return nil, res.jsonlite end
  error(res, 0)
end

return jsonlite
