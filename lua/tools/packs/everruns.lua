-- everruns: Everruns' session_file_system tools (read_file, write_file,
-- edit_file, list_directory, grep_files, delete_file, stat_file) with their
-- JSON results, `N|line` rows, content-type read defaults, the truncation
-- envelope, and expected_hash compare-and-set edits, over the native tools
-- (which already hash, compare-and-set and diff). Paths live under the
-- first mount (conventionally /workspace): `/workspace/x`, `x` and `/x` all
-- name the same file. Deviations are in docs/packs.md.

local core = require "burrow.core"
local P = require "burrow.pack"
local json = core.json

local HARD_CAP = 50 * 1024 -- READ_FILE_HARD_BYTE_CAP
local DIFF_CAP = 16000
local MAX_LIMIT, PAGE = 1000, 200

local BINARY_EXT = {}
for e in ("zip gz tgz bz2 xz 7z rar tar jar war pdf doc docx xls xlsx ppt pptx exe dll so dylib o a class pyc "
  .. "bin dat iso dmg mp3 mp4 m4a wav flac ogg avi mov mkv webm woff woff2 ttf otf eot ico bmp tiff psd sqlite db")
  :gmatch("%S+") do BINARY_EXT[e] = true end

-- The agent's path as the native tools take it: under the first mount.
local function mount(ctx) return P.mounts(ctx)[1] end

local function vpath(ctx, p)
  local m = mount(ctx)
  if p == nil or p == "" or p == "." or p == "/" then return m end
  if p == m or p:sub(1, #m + 1) == m .. "/" then return p end
  if m == "/" then return p:sub(1, 1) == "/" and p or "/" .. p end
  if p:sub(1, 1) == "/" then return m .. p end
  return m .. "/" .. p
end

local NEED = "Missing required parameter: %s"

-- Everruns' words for burrow's failures; the rest keep burrow's message.
local READONLY = "Cannot modify readonly file: %s"
local function words(more)
  local w = { ENOENT = "File not found: %s", EISDIR = "Path '%s' is a directory, not a file. Use list_directory instead.",
    READ_ONLY_ROOT = READONLY, EACCES = READONLY, EPERM = READONLY }
  for k, v in pairs(more or {}) do w[k] = v end
  return P.words(w, P.prefixed(""))
end
local failed = words()
local function fail(msg, code, path) return failed(msg, code, nil, nil, nil, { path = path }) end

local function page_args(a)
  local off, lim = a.offset or 0, a.limit or PAGE
  if lim <= 0 then return nil, "limit must be greater than 0" end
  if off < 0 then return nil, "offset must be >= 0" end
  return off, math.min(lim, MAX_LIMIT)
end

-- {truncated, bytes_returned, bytes_total?, next_offset?, resume_hint?, reason}
local function envelope(bytes, reason, next_off, hint, total)
  local t = { truncated = reason ~= nil, bytes_returned = bytes, bytes_total = total }
  if reason then t.reason = reason end
  if reason and next_off then t.next_offset, t.resume_hint = next_off, hint end
  return t
end

local utf8_cut = P.utf8_cut

local function ext_of(path)
  local base = path:match("[^/]*$"):lower()
  if base:match("%.min%.js$") or base:match("%.min%.css$") then return "min" end
  return base:match("%.([%w]+)$") or ""
end

local function read_file(ctx, a)
  local path = vpath(ctx, a.path)
  if a.offset and a.offset < 0 then return nil, "offset must be >= 0", "INVALID_ARGUMENT" end
  if a.limit and a.limit < 1 then return nil, "limit must be greater than 0", "INVALID_ARGUMENT" end
  local ext = ext_of(path)
  if BINARY_EXT[ext] then
    local st, msg, code = ctx:call("stat", { path = path })
    if not st then return fail(msg, code, path) end
    if st.type == "dir" then return fail(nil, "EISDIR", path) end
    local r = ctx:call("read_file", { path = path, encoding = "base64" })
    return { path = path, size_bytes = st.size, content_hash = r and r.content_hash, content_type = "binary",
      truncated = false, truncation = envelope(0) }
  end
  local kind = (ext == "log" or ext == "out") and "tail" or (ext == "csv" or ext == "tsv") and "csv"
    or ext == "min" and "min" or "text"
  local defaults = { text = 2000, tail = 500, csv = 100, min = 20 }
  local limit = a.limit or defaults[kind]
  local first = (a.offset or 0) + 1
  local read_mode
  if kind == "tail" and a.offset == nil then
    local probe, msg, code = ctx:call("read_file", { path = path, limit = 1 })
    if not probe then return fail(msg, code, path) end
    if (probe.total_lines or 0) > limit then first = probe.total_lines - limit + 1 end
    read_mode = "tail"
  end
  local r, msg, code = ctx:call("read_file", { path = path, offset = first, limit = limit })
  if not r then
    if code == "BINARY" then
      return nil, ("File '%s' is not a text file. Use a binary-safe tool to inspect it."):format(path), code
    end
    return fail(msg, code, path)
  end
  if r.encoding == "image" then
    return { path = path, media_type = r.mime_type, size_bytes = r.size, content_hash = r.content_hash,
      image = r.content }
  end
  local content = P.page_text(r, "%d|%s"):gsub("\n$", "")
  if kind == "csv" and first > 1 then -- the header row first
    local head = ctx:call("read_file", { path = path, limit = 1 })
    if head then content = "1|" .. (head.lines and head.lines[1] or "") .. (content ~= "" and "\n" .. content or "") end
  end
  if ctx.caps.untrusted_boundary and content ~= "" then content = ctx:untrusted(content, path) end
  local total, last = r.total_lines or 0, r.end_line or first - 1
  local trunc
  if #content > HARD_CAP then
    content = utf8_cut(content, HARD_CAP)
    trunc = envelope(#content, "size_cap", nil, nil, r.size)
  elseif last < total then
    trunc = envelope(#content, "line_cap", last,
      ("call read_file with offset=%d to resume from line %d"):format(last, last + 1), r.size)
  else
    trunc = envelope(#content)
  end
  local content_type = (kind == "csv" and (ext == "csv" and "text/csv" or "text/tab-separated-values"))
    or (kind == "min" and "minified") or (kind == "tail" and "log") or nil
  return {
    path = path, content = content, total_lines = total,
    lines_shown = { start = first, ["end"] = last },
    truncated = trunc.truncated, size_bytes = r.size, content_hash = r.content_hash,
    content_type = content_type, read_mode = read_mode, truncation = trunc,
  }
end

local function snippet(s)
  s = s:gsub("\n", "\\n"):gsub("\r", "\\r")
  if #s > 80 then s = utf8_cut(s, 80) .. "..." end
  return s
end

-- Everruns' parsing: the legacy pair folded in, duplicates dropped.
local function collect(a)
  local edits, seen = {}, {}
  local function add(e)
    local key = e.old_text .. "\0" .. e.new_text
    if not seen[key] then seen[key], edits[#edits + 1] = true, e end
  end
  if type(a.edits) == "table" then
    for i, e in ipairs(a.edits) do
      if type(e) ~= "table" or type(e.old_text) ~= "string" then return nil, ("Edit %d is missing old_text"):format(i) end
      if type(e.new_text) ~= "string" then return nil, ("Edit %d is missing new_text"):format(i) end
      if e.old_text == "" then return nil, ("Edit %d has an empty old_text"):format(i) end
      add { old_text = e.old_text, new_text = e.new_text }
    end
  end
  if type(a.old_text) == "string" and a.old_text ~= "" and type(a.new_text) == "string" then
    add { old_text = a.old_text, new_text = a.new_text }
  end
  if #edits == 0 then
    return nil, "edit_file requires a non-empty edits[] array; each entry needs old_text and new_text"
  end
  return edits
end

local function changed(path, a, found)
  return nil, ("File '%s' changed since the last read. Expected %s, found %s. Read the file again before editing.")
    :format(path, a.expected_hash, found), "HASH_MISMATCH"
end

local function edit_file(ctx, a)
  local path = vpath(ctx, a.path)
  local edits, eerr = collect(a)
  if not edits then return nil, eerr, "INVALID_ARGUMENT" end
  local ok, e, c = P.need(a, { "expected_hash" }, NEED)
  if not ok then return nil, e, c end
  -- An edit that changes nothing is a no-op upstream; the native tool refuses it.
  local real = {}
  for _, x in ipairs(edits) do
    if x.old_text ~= x.new_text then real[#real + 1] = x end
  end
  local expected = a.expected_hash:lower()
  if #real == 0 then
    local r, msg, code = ctx:call("read_file", { path = path, limit = 1 })
    if not r then return fail(msg, code, path) end
    if r.content_hash ~= expected then return changed(path, a, r.content_hash) end
    return { path = path, size_bytes = r.size, content_hash = r.content_hash, previous_content_hash = r.content_hash,
      applied_edits = #edits, first_changed_line = json.null, diff = "", diff_truncated = false }
  end
  local r, msg, code, det = ctx:call("edit_file", { path = path, edits = real, expected_hash = expected })
  if not r then
    det = det or {}
    local old = real[det.edit or 1].old_text
    if code == "HASH_MISMATCH" then
      return changed(path, a, det.current or "unknown")
    elseif code == "NOT_FOUND_TEXT" then
      return nil, ("Could not find an exact match for old_text: '%s'"):format(snippet(old)), code
    elseif code == "AMBIGUOUS_TEXT" then
      return nil, ("old_text is ambiguous and matched multiple locations: '%s'"):format(snippet(old)), code
    elseif code == "OVERLAPPING_EDITS" then
      return nil, "Edits overlap in the target file", code
    elseif code == "BINARY" then
      return nil, ("File '%s' is not a text file. edit_file only supports text files; use write_file for binary/base64 content.")
        :format(path), code
    elseif code == "INVALID_ARGUMENT" and det.argument == "expected_hash" then
      -- not a hash at all: it cannot match what is there
      local cur, rmsg, rcode = ctx:call("read_file", { path = path, encoding = "base64" })
      if not cur then return fail(rmsg, rcode, path) end
      return changed(path, a, cur.content_hash)
    end
    return fail(msg, code, path)
  end
  local diff = r.diff:gsub("^%-%-%- [^\n]*\n%+%+%+ [^\n]*\n", "")
  diff = ("--- %s (before)\n+++ %s (after)\n"):format(path, path) .. diff
  local cut = r.diff_truncated or false
  if #diff > DIFF_CAP then
    diff, cut = utf8_cut(diff, DIFF_CAP) .. ("\n... diff truncated after %d characters ..."):format(DIFF_CAP), true
  end
  return {
    path = path, size_bytes = r.size, content_hash = r.content_hash,
    previous_content_hash = r.previous_content_hash, applied_edits = #edits,
    first_changed_line = r.first_changed_line, diff = diff, diff_truncated = cut,
  }
end

local function readonly(ctx, path)
  local info = ctx:locate(path)
  return info and info.readonly or false
end

-- The page [off+1, off+lim] of all (total items: #all unless given) and
-- its truncation envelope, with a resume hint naming the tool and unit.
local function page(all, off, lim, reason, tool, unit, total)
  local out = {}
  for k = off + 1, math.min(#all, off + lim) do out[#out + 1] = all[k] end
  local shown = off + #out
  local bytes = #json.encode(json.array(out))
  if shown >= (total or #all) then return json.array(out), envelope(bytes), bytes end
  return json.array(out), envelope(bytes, reason, shown,
    ("call %s with offset=%d to resume from %s %d"):format(tool, shown, unit, shown + 1)), bytes
end

-- path through vpath, then the page arguments checked
local function paged(more)
  return function(a, ctx)
    local off, lim = page_args(a)
    if not off then return nil, lim, "INVALID_ARGUMENT" end
    local na = { path = vpath(ctx, a.path) }
    for k, v in pairs(more(a)) do na[k] = v end
    return na
  end
end

local function list_result(r, a, ctx, na)
  local path, off, lim = na.path, page_args(a)
  local ro, all = readonly(ctx, path), {}
  for k, x in ipairs(r.entries) do
    all[k] = { name = x.name, path = (path == "/" and "" or path) .. "/" .. x.name,
      is_directory = x.type == "dir", size_bytes = x.type == "dir" and 0 or (x.size or 0), is_readonly = ro }
  end
  local total = #all + (r.omitted or 0)
  local entries, trunc = page(all, off, lim, "item_cap", "list_directory", "item", total)
  return { path = path, entries = entries, count = #entries, total_count = total, offset = off, limit = lim,
    truncation = trunc }
end

local function grep_result(r, a, ctx)
  local off, lim = page_args(a)
  local all = {}
  for _, m in ipairs(r.matches or {}) do
    all[#all + 1] = { path = vpath(ctx, m.path), line_number = m.line, line = m.text }
  end
  table.sort(all, function(x, y)
    if x.path ~= y.path then return x.path < y.path end
    return x.line_number < y.line_number
  end)
  local matches, trunc, bytes = page(all, off, lim, "line_cap", "grep_files", "match")
  if r.truncated and off + #matches >= #all then trunc = envelope(bytes, "item_cap") end
  return { pattern = a.pattern, matches = matches, match_count = #matches, total_matches = #all,
    offset = off, limit = lim, truncation = trunc }
end

local RW = P.annotations(false, false, false)
local WS = "session_workspace" -- the concurrency class of a tool that changes files
local S, I = P.string, P.integer
local function at(a, ctx) return { path = vpath(ctx, a.path) } end

local tools = P.tools({ need = NEED, output_schema = { type = "object" }, output = P.json_output(), errors = failed }, {
  { name = "read_file", handler = read_file, required = { "path" },
    description = "Read the contents of a file. Successful responses include content_hash. Rows come back as "
      .. "`N|line`, 1-based; offset is 0-based. Defaults: 2000 lines; .log/.out the last 500; .csv/.tsv 100 "
      .. "(with the header row when offset > 0); .min.js/.min.css 20; binary files give metadata only.",
    schema = {
      path = S("File path (under /workspace; relative paths and a leading / mean the workspace)."),
      offset = I("Lines to skip, 0-based (default 0)."), limit = I("Maximum number of lines (default by content type)."),
    },
    render = function(r)
      if r.image then
        local meta = { path = r.path, media_type = r.media_type, size_bytes = r.size_bytes, content_hash = r.content_hash }
        return { { type = "image", data = r.image, mimeType = r.media_type }, { type = "text", text = json.encode(meta) } }, meta
      end
      return json.encode(r), r
    end },
  { name = "write_file", kind = "write", annotations = RW, concurrency_class = WS, native = "write_file",
    required = { "path", "content" },
    description = "Create or overwrite a file. Parent directories are created automatically. "
      .. "Successful responses include content_hash.",
    schema = {
      path = S("File path."), content = S("The complete content."),
      encoding = S("text (default) or base64.", { enum = { "text", "base64" } }),
    },
    args = function(a, ctx) return { path = vpath(ctx, a.path), content = a.content, encoding = a.encoding } end,
    result = function(r, _, _, na)
      return { path = na.path, size_bytes = r.bytes, created = r.created or false, content_hash = r.content_hash }
    end },
  { name = "edit_file", kind = "edit", annotations = RW, concurrency_class = WS, handler = edit_file, required = { "path" },
    description = "Apply one or more exact text replacements to an existing text file. This tool is text-only, "
      .. "requires the current content_hash from read_file or write_file, and uses compare-and-set semantics so "
      .. "concurrent writes fail cleanly instead of clobbering newer content. Returns a unified diff.",
    schema = {
      path = S("File path."), expected_hash = S("Current content_hash (sha256:...)."),
      edits = P.array(P.object { old_text = S(), new_text = S() }, "Replacements, each matched once against the original file."),
      old_text = S("Legacy single edit: text to find."), new_text = S("Legacy single edit: replacement."),
    } },
  { name = "list_directory", native = "list_dir", result = list_result,
    description = "List files and directories, paged (offset, limit: default 200, max 1000).",
    schema = {
      path = S("Directory (default /workspace)."), offset = I("Entries to skip (default 0)."),
      limit = I("Maximum entries (default 200, max 1000)."),
    },
    args = paged(function() return { include_hidden = true } end),
    errors = words { ENOENT = "Directory not found: %s", ENOTDIR = "Path '%s' is not a directory" } },
  { name = "grep_files", native = "grep", required = { "pattern" }, result = grep_result,
    description = "Search file contents for a regex; matches sorted by path, then line.",
    schema = {
      pattern = S("Regular expression."), path = S("Directory to search (default /workspace)."),
      path_pattern = S("Only files matching this glob."), offset = I("Matches to skip (default 0)."),
      limit = I("Maximum matches (default 200, max 1000)."),
    },
    args = paged(function(a)
      return { pattern = a.pattern, include_hidden = true, respect_ignore = false,
        include = a.path_pattern and a.path_pattern ~= "" and { a.path_pattern } or nil }
    end),
    errors = words {
      INVALID_ARGUMENT = function(_, msg, _, det) return "Invalid regex pattern: " .. (det and det.reason or P.detail(msg)) end,
      ENOENT = "Directory not found: %s",
    } },
  { name = "delete_file", kind = "delete", concurrency_class = WS, native = "remove", required = { "path" },
    permissions = { "fs.write" },
    description = "Delete a file, or a directory with recursive=true.",
    schema = { path = S("Path to delete."), recursive = P.boolean("Delete a directory and its contents (default false).") },
    args = function(a, ctx) return { path = vpath(ctx, a.path), recursive = a.recursive == true } end,
    result = function(_, _, _, na) return { path = na.path, deleted = true } end },
  { name = "stat_file", native = "stat", required = { "path" }, args = at,
    description = "Describe a file or directory; a missing path gives exists: false.",
    schema = { path = S("Path to describe.") },
    errors = function(msg, code, det, a, ctx, na)
      if code == "ENOENT" then return { path = na.path, exists = false } end
      return failed(msg, code, det, a, ctx, na)
    end,
    result = function(r, _, ctx, na)
      local path = na.path
      return { path = path, name = path:match("[^/]*$"), exists = true, is_directory = r.type == "dir",
        is_readonly = readonly(ctx, path), size_bytes = r.size or 0, created_at = r.mtime, updated_at = r.mtime }
    end },
})

return {
  name = "everruns",
  description = "Everruns' session_file_system tools (content_hash reads, expected_hash compare-and-set edits with a diff)",
  path_style = "workspace",
  tools = tools,
}
