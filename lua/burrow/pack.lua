-- burrow.pack: what the compatibility packs share (lua/tools/packs). A
-- pack adapts native tools (ctx:call); pack.tool builds one of its tools
-- from a declaration (the native tool, the argument and result mapping,
-- the dialect's error words from codes and details). The rest reshapes
-- text: globs for exclude lists (the core's matcher), read_file's lines
-- (a pack gets them as data) written as text or as the dialect's rows,
-- the untrusted-content boundary, a pretty JSON printer for dialects that
-- emit indented JSON.

local core = require "burrow.core"
local errors = require "burrow.base.errors"
local kinds = require "burrow.toolkit.kinds"
local json = core.json

local pack = {}

-- MCP annotations: read-only, destructive, idempotent; never open-world.
pack.annotations = kinds.annotations

-- nil, msg, "INVALID_ARGUMENT" for the first of keys missing from a
-- (fmt: the dialect's words, "%s" the key), else true.
function pack.need(a, keys, fmt)
  for _, k in ipairs(keys or {}) do
    if a[k] == nil then return nil, (fmt or "%s is required"):format(k), "INVALID_ARGUMENT" end
  end
  return true
end

-- a[k] (default when nil) if it is an integer >= min, else nil,
-- fmt ("%s must be an integer >= %d": the key and min), "INVALID_ARGUMENT".
function pack.at_least(a, k, min, default, fmt)
  local v = a[k]
  if v == nil then v = default end
  if math.type(v) ~= "integer" or v < min then
    return nil, (fmt or "%s must be an integer >= %d"):format(k, min), "INVALID_ARGUMENT"
  end
  return v
end

-- A failure of a native call passed on as it is, except that a missing
-- path (whose message is only burrow's words for ENOENT and the path) is
-- worded again from the code and details.path, so it does not depend on
-- the native tool's wording.
function pack.pass(msg, code, det)
  if code == "ENOENT" and det and det.path then return nil, errors.message(code, det.path), code, det end
  return nil, msg, code, det
end

-- Result as JSON text and as structuredContent (fields in `hidden` left
-- out of both, e.g. Lua-only bytes).
function pack.json_output(hidden)
  if not hidden then return function(r) return json.encode(r), r end end
  return function(r)
    local s = {}
    for k, v in pairs(r) do if not (hidden and hidden[k]) then s[k] = v end end
    return json.encode(s), s
  end
end

-- Schema properties in one line: P.string("what it is"), P.integer(...),
-- with extra fields (enum, default, minimum, items...) merged in; an
-- object schema from its properties, required list and extra fields
-- (P.CLOSED: additionalProperties = false).
local function property(ty)
  return function(description, extra)
    local p = { type = ty, description = description }
    for k, v in pairs(extra or {}) do p[k] = v end
    return p
  end
end
pack.string, pack.number, pack.integer, pack.boolean = property "string", property "number", property "integer",
  property "boolean"
function pack.strings(description, extra) return pack.array({ type = "string" }, description, extra) end
function pack.array(items, description, extra)
  local p = property "array"(description, extra)
  p.items = items
  return p
end
pack.CLOSED = { additionalProperties = false }
function pack.object(properties, required, extra)
  local o = { type = "object", properties = properties, required = required }
  for k, v in pairs(extra or {}) do o[k] = v end
  return o
end
function pack.closed(properties, required) return pack.object(properties, required, pack.CLOSED) end

-- An `errors` function for P.tool from the dialect's words for some codes:
-- words[code] is a format whose "%s" is the path, or function(path, msg,
-- code, details, a, ctx) -> message[, code]. The path is path_of(details,
-- a, native_args) when given, else the native call's path, else
-- details.path. Other codes go to other (default P.pass). A handler calls
-- the same function with its native arguments: errs(msg, code, det, a,
-- ctx, {path = p}).
function pack.words(words, other, path_of)
  other = other or pack.pass
  return function(msg, code, det, a, ctx, na)
    local w = words[code]
    if w == nil then return other(msg, code, det, a, ctx, na) end
    local path
    if path_of then path = path_of(det, a, na, ctx) else path = na and na.path or det and det.path end
    if type(w) == "function" then
      local m, c = w(path, msg, code, det, a, ctx)
      return nil, m, c or code
    end
    return nil, w:format(path), code
  end
end

-- nil, msg, code (default "INVALID_ARGUMENT"): a refusal in the dialect's words.
function pack.invalid(msg, code) return nil, msg, code or "INVALID_ARGUMENT" end

-- A native failure passed on with burrow's own message (P.words' other).
function pack.as_is(msg, code) return nil, msg, code end

-- An `errors` function (or P.words' other) that puts the dialect's prefix
-- before burrow's message without its code: "failed to read file: ...".
function pack.prefixed(prefix)
  return function(msg, code) return nil, prefix .. pack.detail(msg), code end
end

-- A text-only result: {content = text} shown as the text itself.
pack.TEXT_SCHEMA = { type = "object", properties = { content = { type = "string" } }, required = { "content" } }
function pack.text(t) return { content = t } end
function pack.text_output(r) return r.content, r end

-- A kind's annotations, permissions and risk (burrow.toolkit.kinds, shared with
-- the native tools), by field.
local ANNOTATIONS, PERMISSIONS, RISK = {}, {}, {}
for k, v in pairs(kinds.of) do ANNOTATIONS[k], PERMISSIONS[k], RISK[k] = v[1], v[2], v[3] end

-- The fields of a declaration that pack.tool turns into others.
local DECLARATION = { schema = true, required = true, kind = true, native = true, args = true, result = true,
  errors = true, need = true, output = true }

-- One pack tool from a declaration (docs/packs.md):
--   name, description, schema (the properties; or a whole object schema),
--   required (checked by the pack, worded with need = "%s is required"),
--   kind = "read" | "write" | "edit" | "create" | "delete" | ... (burrow.toolkit.kinds:
--   annotations, permissions and risk; each may be given itself), output_schema;
--   native = "grep" and args = function(a, ctx) -> the native arguments
--   (or nil, msg, code), result = function(r, a, ctx, native_args) -> the
--   pack's result (a string: the text-only result {content = s}); or
--   handler = function(ctx, a) for a tool that is more than one call; errors = function(msg, code, details, a, ctx,
--   native_args) -> nil, msg, code: the dialect's words for a native
--   failure, from code and details (default pack.pass; pack.words builds
--   one), or a result where the dialect answers the failure (a stat of a
--   missing path); output = function(r) -> text, structured (MCP rendering).
-- defaults: fields every tool of the pack shares (need, errors, output,
-- output_schema, annotations, permissions, risk); a tool's kind wins over
-- the defaults' annotations.
function pack.tool(t, defaults)
  local d = defaults or {}
  local function get(k) if t[k] ~= nil then return t[k] end return d[k] end -- the tool's own, else the pack's
  local kind = get("kind") or "read"
  if not kinds.of[kind] then error("pack tool " .. tostring(t.name) .. ": " .. select(2, kinds.get(kind)), 2) end
  local props = t.schema or {}
  -- a tool table written out in full (input_schema, annotations, render...)
  -- passes through unchanged
  local input = t.input_schema or props.type == "object" and props or { type = "object", properties = props }
  local required, need, errs = t.required, get("need"), get("errors") or pack.pass
  local handler = t.handler
  if not handler then
    local native, args, result = t.native, t.args, t.result
    assert(native, "pack tool " .. tostring(t.name) .. ": native or handler")
    handler = function(ctx, a)
      local na, m, c = a, nil, nil
      if args then na, m, c = args(a, ctx) end
      if na == nil then return nil, m, c end
      local r, msg, code, det = ctx:call(native, na)
      if not r then -- the dialect's words; the native details go on with them
        local v, m, c, d = errs(msg, code, det, a, ctx, na)
        if v ~= nil then return v end -- the dialect answers this failure with a result
        return nil, m, c, d or det
      end
      if result then return result(r, a, ctx, na) end
      return r
    end
  end
  local function run(ctx, a)
    if required then
      local ok, m, c = pack.need(a, required, need)
      if not ok then return nil, m, c end
    end
    local r, m, c, d = handler(ctx, a)
    if type(r) == "string" then return pack.text(r) end -- a text-only result
    return r, m, c, d
  end
  local tool = {}
  for k, v in pairs(t) do if not DECLARATION[k] then tool[k] = v end end -- side_effects, path_args...
  tool.input_schema, tool.output_schema = input, get("output_schema")
  local function by_kind(k, of) -- the tool's own, its kind's, the pack's, the default kind's
    return t[k] or t.kind and of[kind] or d[k] or of[kind]
  end
  tool.annotations = by_kind("annotations", ANNOTATIONS)
  tool.permissions = by_kind("permissions", PERMISSIONS)
  tool.risk = by_kind("risk", RISK)
  tool.handler, tool.render = run, t.render or get("output")
  return tool
end

-- The tools of a pack: each declaration through pack.tool with defaults.
function pack.tools(defaults, list)
  local out = {}
  for i, t in ipairs(list) do out[i] = pack.tool(t, defaults) end
  return out
end

-- A pack file's table: t = {name, description, path_style, options}, and
-- build(options) -> its tool list when the operator configures it (the
-- built pack carries t's name and path_style).
function pack.pack(t, build)
  if build then
    t.build = function(o) return { name = t.name, path_style = t.path_style, tools = build(o) } end
  end
  return t
end

-- "CODE: message" -> "message".
function pack.detail(msg)
  return (tostring(msg or ""):gsub("^%u[%u_]*: ", ""))
end

-- The agent-visible mounts, as a list of strings.
function pack.mounts(ctx)
  local out = {}
  for i, r in ipairs(ctx.ws:mounts()) do out[i] = r.mount end
  return out
end

-- The text of a page read_file gave a pack (r.lines: the lines' texts,
-- from line r.start_line, without numbers or newlines): the first count
-- lines (default all), each followed by a newline, or, with fmt, each row
-- fmt:format(number, line) ("%6d\t%s": cat -n's rows) and a newline.
-- "" when the page has no line.
function pack.page_text(r, fmt, count)
  local lines = r.lines or {}
  count = math.min(count or #lines, #lines)
  if count == 0 then return "" end
  if not fmt then return table.concat(lines, "\n", 1, count) .. "\n" end
  local out, first = {}, r.start_line
  for i = 1, count do out[i] = fmt:format(first + i - 1, lines[i]) end
  return table.concat(out, "\n") .. "\n"
end

-- File text a pack shows, inside the untrusted-content boundary when the
-- cap untrusted_boundary is on (ctx:untrusted; op: the operation it
-- names, default the pack tool's name), else as it is.
function pack.untrusted(ctx, text, path, op)
  if not ctx.caps.untrusted_boundary then return text end
  return ctx:untrusted(text, path, { op = op })
end

-- The longest prefix of s of at most n bytes that ends on a UTF-8 boundary.
function pack.utf8_cut(s, n)
  if #s <= n then return s end
  local i = n + 1
  while i > 1 and (s:byte(i) or 0) & 0xC0 == 0x80 do i = i - 1 end
  return s:sub(1, i - 1)
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

-- A Python list's repr: "[a, b]", each item through show (tostring).
function pack.pylist(t, show)
  local out = {}
  for i, v in ipairs(t) do out[i] = (show or tostring)(v) end
  return "[" .. table.concat(out, ", ") .. "]"
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
