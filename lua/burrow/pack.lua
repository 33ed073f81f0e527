-- burrow.pack: small helpers the compatibility packs share (lua/tools/packs).
-- A pack adapts native tools (ctx:call); these only reshape text: codes
-- out of messages, globs for exclude lists (the core's matcher), numbered
-- lines back to text, a pretty JSON printer for dialects that emit indented
-- JSON.

local core = require "burrow.core"
local json = core.json

local pack = {}

-- "CODE: message" -> "message".
function pack.detail(msg)
  return (tostring(msg or ""):gsub("^%u[%u_]*: ", ""))
end

-- The path a native message names first ("ENOENT: a.txt does not exist").
function pack.path_in(msg, code)
  local m = pack.detail(msg)
  local words = { ENOENT = " does not exist", OUTSIDE_ROOT = " is outside the allowed roots",
    EEXIST = " already exists", EISDIR = " is a directory" }
  local w = words[code]
  if w then
    local i = m:find(w, 1, true)
    if i then return m:sub(1, i - 1) end
  end
end

-- The agent-visible mounts, as a list of strings.
function pack.mounts(ctx)
  local out = {}
  for i, r in ipairs(ctx.ws:mounts()) do out[i] = r.mount end
  return out
end

-- Text of numbered read_file lines ("N\tline\n") without the numbers.
function pack.unnumber(text)
  return (text:gsub("%f[^\n%z]%d+\t", ""))
end

-- Replace invalid UTF-8 with U+FFFD, as a JS TextDecoder does.
function pack.utf8_clean(s)
  if utf8.len(s) then return s end
  local out, i, n = {}, 1, #s
  while i <= n do
    local ok, pos = utf8.len(s, i)
    if ok then
      out[#out + 1] = s:sub(i)
      break
    end
    out[#out + 1] = s:sub(i, pos - 1)
    out[#out + 1] = "\239\191\189"
    i = pos + 1
  end
  return table.concat(out)
end

-- Globs go through the core's matcher (core.glob: **, *, ?, [...], {a,b};
-- linear in the path, whatever the pattern). Dot files match (minimatch's
-- dot: true) and a trailing ** also matches the directory itself (a/**
-- matches a), unless opts say otherwise. nil, message, "INVALID_ARGUMENT"
-- for a pattern the matcher refuses (over 4096 bytes, "..", NUL).
function pack.glob(pattern, opts)
  local o = { dir_itself = true }
  for k, v in pairs(opts or {}) do o[k] = v end
  return core.glob(pattern, o)
end

-- A list of agent-sent globs is bounded too, so matching one path against
-- it is: at most GLOBS_MAX patterns and GLOBS_BYTES bytes in all.
pack.GLOBS_MAX, pack.GLOBS_BYTES = 256, 65536

-- One matcher for the list `patterns` (true if any matches the path), each
-- compiled as rewrite(pattern) when rewrite is given; field names the
-- argument in errors. nil, "field[i]: pattern ...: reason", code on a bad one.
function pack.globs(patterns, field, opts, rewrite)
  patterns = patterns or {}
  if #patterns > pack.GLOBS_MAX then
    return nil, ("%s: at most %d globs"):format(field, pack.GLOBS_MAX), "INVALID_ARGUMENT"
  end
  local gs, bytes = {}, 0
  for i, p in ipairs(patterns) do
    bytes = bytes + #p
    if bytes > pack.GLOBS_BYTES then
      return nil, ("%s: at most %d bytes of globs in all"):format(field, pack.GLOBS_BYTES), "INVALID_ARGUMENT"
    end
    local g, msg, code = pack.glob(rewrite and rewrite(p) or p, opts)
    if not g and rewrite then
      local _, m2 = pack.glob(p, opts)
      msg = m2 or msg
    end
    if not g then return nil, ("%s[%d]: %s"):format(field, i, msg), code end
    gs[i] = g
  end
  return function(path)
    for _, g in ipairs(gs) do
      if g:match(path) then return true end
    end
    return false
  end
end

-- JSON.stringify(v, null, 2): keys in the order `order` gives, then sorted.
function pack.pretty(v, order, indent)
  indent = indent or ""
  local inner = indent .. "  "
  if type(v) ~= "table" then return json.encode(v) end
  if getmetatable(v) == json.array_mt or (#v > 0) then
    if #v == 0 then return "[]" end
    local items = {}
    for i, x in ipairs(v) do items[i] = inner .. pack.pretty(x, order, inner) end
    return "[\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "]"
  end
  local keys, seen = {}, {}
  for _, k in ipairs(order or {}) do
    if v[k] ~= nil then keys[#keys + 1], seen[k] = k, true end
  end
  local rest = {}
  for k in pairs(v) do if not seen[k] then rest[#rest + 1] = k end end
  table.sort(rest)
  for _, k in ipairs(rest) do keys[#keys + 1] = k end
  if #keys == 0 then return "{}" end
  local items = {}
  for i, k in ipairs(keys) do
    items[i] = inner .. json.encode(k) .. ": " .. pack.pretty(v[k], order, inner)
  end
  return "{\n" .. table.concat(items, ",\n") .. "\n" .. indent .. "}"
end

-- "2026-11-21T23:49:16Z" -> seconds since the epoch (UTC).
function pack.epoch(iso)
  local y, mo, d, h, mi, s = tostring(iso):match("^(%d+)-(%d+)-(%d+)T(%d+):(%d+):(%d+)")
  if not y then return nil end
  y, mo, d = tonumber(y), tonumber(mo), tonumber(d)
  -- days from civil (H. Hinnant)
  y = mo <= 2 and y - 1 or y
  local era = (y >= 0 and y or y - 399) // 400
  local yoe = y - era * 400
  local doy = (153 * (mo + (mo > 2 and -3 or 9)) + 2) // 5 + d - 1
  local doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
  local days = era * 146097 + doe - 719468
  return days * 86400 + tonumber(h) * 3600 + tonumber(mi) * 60 + tonumber(s)
end

-- JS Date.prototype.toString() of a UTC time, as a server in UTC prints it.
function pack.js_date(iso)
  local t = pack.epoch(iso)
  if not t then return tostring(iso) end
  return os.date("!%a %b %d %Y %H:%M:%S GMT+0000 (Coordinated Universal Time)", t)
end

return pack
