-- mcp_filesystem: the official MCP filesystem server's 14 tools
-- (@modelcontextprotocol/server-filesystem), with its names, parameters,
-- texts and structuredContent {content = text}, over the native tools.
-- Deliberate deviations (docs/packs.md): tail returns exactly N lines,
-- CRLF and BOM survive edits, an ambiguous edit is refused, edits match
-- the original text, sizes come from lstat, ~ is not expanded.

local core = require "burrow.core"
local json = core.json
local P = require "burrow.pack"
local MAX_INTEGER = require("burrow.toolkit.schema").MAX_INTEGER -- numbers past it: INVALID_ARGUMENT

-- The peer's words for burrow's failures (op: the syscall it names); the
-- path is the one the details name, else the agent's. The code stays in _meta.
local function words(op, more)
  local w = {
    OUTSIDE_ROOT = function(path, _, _, _, _, ctx)
      return ("Access denied - path outside allowed directories: %s not in %s"):format(path, table.concat(P.mounts(ctx), ", "))
    end,
    ENOENT = "ENOENT: no such file or directory, " .. op .. " '%s'",
    EEXIST = "EEXIST: file already exists, " .. op .. " '%s'",
  }
  for k, v in pairs(more or {}) do w[k] = v end
  return P.words(w, P.as_is,
    function(det, _, na) return det and det.path or na.path or na.source end)
end
local open_failed, scandir_failed = words("open"), words("scandir")

-- burrow's note on a failed edit, from the details: where the text is
-- nearest, or where it matches.
local function burrow_note(code, d)
  local head = ("edit %d: old_text"):format(d.edit or 1)
  if code == "AMBIGUOUS_TEXT" and d.reindent_line then -- one place, but placing newText would be a guess
    return ("%s matches line %d only %s, so newText's line %d cannot be re-indented without guessing; give oldText with the file's own indentation")
      :format(head, d.lines and d.lines[1] or 0, d.after_indent and "after the line's indentation" or "when indentation is ignored",
        d.reindent_line)
  elseif code == "AMBIGUOUS_TEXT" then
    local lines = {}
    for i, l in ipairs(d.lines or {}) do lines[i] = tostring(l) end
    return ("%s matches %d places, on lines %s"):format(head, d.matches or 0, table.concat(lines, ", "))
  elseif d.near_line then
    return ("%s is not in the file; the nearest line is %d: %s"):format(head, d.near_line, d.near_text or "")
  end
  return head .. " is not in the file"
end

local function windows_path(p)
  return type(p) == "string" and p:match("^%a:[\\/]") or (type(p) == "string" and p:match("^%a:$"))
end

-- The native arguments na, unless one of the paths is a Windows one: the
-- peer refuses those before touching the disk.
local function posix(na, ...)
  for _, p in ipairs { ... } do
    if windows_path(p) then
      return nil, ("Access denied - Windows-style path received on a POSIX host: %s"):format(p), "OUTSIDE_ROOT"
    end
  end
  return na
end

---------------------------------------------------------------------------
-- reading text

local function cap_text(ctx, text, first, total)
  local max = ctx.caps.max_result_bytes
  if #text <= max then return text end
  local cut = text:sub(1, max)
  local last = cut:match("^.*()\n")
  if not last then last = max else cut = cut:sub(1, last) end
  local _, shown = cut:gsub("\n", "")
  local k = first + math.max(shown, 1) - 1
  return cut .. ("\n[truncated at line %d of %d; use head/tail, or offset=%d]"):format(k, total, k + 1)
end

-- Lines of s as {text, terminator} pairs.
local function split(s)
  local out = {}
  for line, nl in s:gmatch("([^\n]*)(\n?)") do
    if line == "" and nl == "" then break end
    out[#out + 1] = { line, nl }
  end
  return out
end

-- A big file (over the result cap as base64): a native page's lines, as
-- text (tagged as data where the untrusted_boundary cap says so).
local function read_paged(ctx, a, first, count)
  local probe, msg, code, det = ctx:call("read_file", { path = a.path, limit = 1 })
  if not probe then return nil, msg, code end
  local total = probe.total_lines or 0
  if a.tail then first, count = math.max(1, total - a.tail + 1), a.tail end
  if total == 0 or first > total then return "" end
  local r, m2, c2 = ctx:call("read_file", { path = a.path, offset = first, limit = math.max(1, count or total) })
  if not r then return nil, m2, c2 end
  local text = P.untrusted(ctx, P.page_text(r), a.path, "read_file")
  if a.head then text = text:gsub("\n$", "") end
  if r.next_offset and r.truncated then
    text = text .. ("\n[truncated at line %d of %d; use head/tail, or offset=%d]"):format(r.end_line, total, r.next_offset)
  end
  return text
end

local function read_text(ctx, a)
  local ok, bmsg, bcode = posix(true, a.path)
  if not ok then return nil, bmsg, bcode end
  local head = a.head ~= 0 and a.head or nil -- 0 is "absent" (JS falsy)
  local tail = a.tail ~= 0 and a.tail or nil
  if head and tail then
    return nil, "Cannot specify both head and tail parameters simultaneously", "INVALID_ARGUMENT"
  end
  for k, v in pairs { head = head, tail = tail, offset = a.offset, limit = a.limit } do
    if v and (v < 0 or v % 1 ~= 0) then
      return nil, ("%s must be a non-negative integer"):format(k), "INVALID_ARGUMENT"
    end
    if v and v > MAX_INTEGER then
      return nil, ("%s must be at most %d"):format(k, MAX_INTEGER), "INVALID_ARGUMENT"
    end
  end
  head, tail = head and math.tointeger(head), tail and math.tointeger(tail)
  if tail and not a.offset and not a.limit then -- native tail: reads from the end only
    local t, tmsg, tcode, tdet = ctx:call("read_file", { path = a.path, tail = tail })
    if t and not t.cut_lines and not t.truncated then return P.utf8_clean(t.content) end
    if not t and tcode ~= "BINARY" then return open_failed(tmsg, tcode, tdet, a, ctx, a) end
  end
  local r, msg, code, det = ctx:call("read_file", { path = a.path, encoding = "base64" })
  if not r then
    if code == "TOO_LARGE" and det and det.limit == "max_result_bytes" then
      local first, count = a.offset or 1, head or a.limit
      return read_paged(ctx, { path = a.path, head = head, tail = tail }, first, count)
    end
    return open_failed(msg, code, det, a, ctx, a)
  end
  local bytes = core.base64_decode(r.content)
  -- decoded as native read_file decodes it (charset.c): a BOM, UTF-16 by
  -- its NULs, UTF-8, then the detector; NULs in anything else: binary
  local cs, bom, utf8 = core.charset_detect(bytes, ctx.ws.charsets)
  if not cs then
    return nil, ("Cannot read %s as text: it is a binary file (NUL bytes); use read_media_file"):format(a.path), "BINARY"
  end
  if not utf8 then
    local text = core.charset_decode(cs, bytes:sub(bom + 1))
    if text then bytes = text end
  elseif bom > 0 then
    bytes = bytes:sub(bom + 1)
  end
  bytes = P.utf8_clean(bytes)
  local text, first, total = bytes, 1, nil
  if head or tail or a.offset or a.limit then
    local lines = split(bytes)
    total = #lines
    local out = {}
    if head then
      for i = 1, math.min(head, total) do out[#out + 1] = lines[i][1] end
      text = table.concat(out, "\n")
    elseif tail then
      first = math.max(1, total - tail + 1)
      for i = first, total do out[#out + 1] = lines[i][1]:gsub("\r$", "") .. lines[i][2] end
      text = table.concat(out)
    else
      first = a.offset or 1
      local last = a.limit and math.min(total, first + a.limit - 1) or total
      for i = first, last do out[#out + 1] = lines[i][1] .. lines[i][2] end
      text = table.concat(out)
    end
  end
  if #text > ctx.caps.max_result_bytes then
    total = total or #split(bytes)
    text = cap_text(ctx, text, first, total)
  end
  if ctx.caps.untrusted_boundary then text = ctx:untrusted(text, a.path) end
  return text
end

local S, I = P.string, P.integer
local function PATH_ONLY() return P.object({ path = S() }, { "path" }) end

local function read_tool(name, title, description)
  return { name = name, title = title, description = description, handler = read_text,
    schema = P.object({
      path = S(), head = P.number("If provided, returns only the first N lines of the file"),
      tail = P.number("If provided, returns only the last N lines of the file"),
      offset = I("burrow extension: first line to return (1-based)", { minimum = 1 }),
      limit = I("burrow extension: number of lines from offset", { minimum = 1 }),
    }, { "path" }) }
end

local READ_DESC = "Read the complete contents of a file from the file system as text. Handles various text encodings and provides detailed error messages if the file cannot be read. Use this tool when you need to examine the contents of a single file. Use the 'head' parameter to read only the first N lines of a file, or the 'tail' parameter to read only the last N lines of a file (or 'offset' and 'limit' for lines in between). Very large results are cut on a line boundary with a note saying where to continue. Only works within allowed directories."

---------------------------------------------------------------------------
-- media

local MIME = {
  png = "image/png", jpg = "image/jpeg", jpeg = "image/jpeg", gif = "image/gif", webp = "image/webp",
  bmp = "image/bmp", svg = "image/svg+xml", mp3 = "audio/mpeg", wav = "audio/wav", ogg = "audio/ogg",
  flac = "audio/flac",
}

local function media_item(ctx, path)
  local ok, bmsg, bcode = posix(true, path)
  if not ok then return nil, bmsg, bcode end
  local ext = (path:match("%.([^./]+)$") or ""):lower()
  local mime = MIME[ext] or "application/octet-stream"
  local data
  if mime:match("^image/") then -- native read_file returns known images up to max_image_bytes
    local r = ctx:call("read_file", { path = path, limit = 1 })
    if r and r.encoding == "image" then data = r.content end
  end
  if not data then
    local r, msg, code, det = ctx:call("read_file", { path = path, encoding = "base64" })
    if not r then return open_failed(msg, code, det, nil, ctx, { path = path }) end
    data = r.content
  end
  if mime:match("^image/") then return { type = "image", data = data, mimeType = mime } end
  if mime:match("^audio/") then return { type = "audio", data = data, mimeType = mime } end
  return { type = "resource", resource = { uri = "file://" .. path, mimeType = mime, blob = data } }
end

---------------------------------------------------------------------------
-- edit

local function fence_for(diff)
  local n = 3
  for run in diff:gmatch("`+") do
    if #run >= n then n = #run + 1 end
  end
  return ("`"):rep(n)
end

local function edit(ctx, a)
  local ok, bmsg, bcode = posix(true, a.path)
  if not ok then return nil, bmsg, bcode end
  local edits = json.array {}
  for i, e in ipairs(a.edits) do edits[i] = { old_text = e.oldText, new_text = e.newText } end
  if #edits == 0 then return nil, "edits must contain at least one edit", "INVALID_ARGUMENT" end
  for i, e in ipairs(a.edits) do
    if e.oldText == e.newText then -- the peer writes an unchanged file; nothing to do here
      edits[i] = nil
    end
  end
  local r, msg, code, det
  if #edits == 0 then
    r, msg, code, det = ctx:call("read_file", { path = a.path, limit = 1 })
    if not r then return open_failed(msg, code, det, a, ctx, a) end
    r = { diff = "" }
  else
    r, msg, code, det = ctx:call("edit_file", { path = a.path, edits = edits, dry_run = a.dryRun == true, match = "loose" })
  end
  if not r then
    local n = det and det.edit or 1
    local old = a.edits[n] and a.edits[n].oldText or ""
    local detail = det and burrow_note(code, det) or P.detail(msg)
    if code == "NOT_FOUND_TEXT" then
      return nil, ("Could not find exact match for edit:\n%s\n\n(burrow: %s)"):format(old, detail), code
    elseif code == "AMBIGUOUS_TEXT" then
      return nil, ("Ambiguous match for edit:\n%s\n\n(burrow: %s)"):format(old, detail), code
    end
    return open_failed(msg, code, det, a, ctx, a)
  end
  local hunks = (r.diff or ""):gsub("^%-%-%- [^\n]*\n%+%+%+ [^\n]*\n", "")
  local diff = ("Index: %s\n%s\n--- %s\toriginal\n+++ %s\tmodified\n%s")
    :format(a.path, ("="):rep(67), a.path, a.path, hunks)
  if r.diff_truncated then
    diff = diff .. ("[diff cut; the change starts at line %d]\n"):format(r.first_changed_line or 1)
  end
  local fence = fence_for(diff)
  return ("%sdiff\n%s%s\n\n"):format(fence, diff, fence)
end

---------------------------------------------------------------------------
-- listing

local function size_text(n)
  if n <= 0 then return "0 B" end
  if n < 1024 then return ("%d B"):format(n) end
  local units, i, v = { "B", "KB", "MB", "GB", "TB" }, 1, n
  while v >= 1024 and i < #units do v, i = v / 1024, i + 1 end
  return ("%.2f %s"):format(v, units[i])
end

local function more_line(r)
  if r.truncated then return ("\n[%d more entries not shown: max_entries reached]"):format(r.omitted) end
  return ""
end

-- list_dir's arguments (the path checked first).
local function listing(recursive)
  return function(a) return posix({ path = a.path, include_hidden = true, recursive = recursive }, a.path) end
end

local function list_result(r)
  local out = {}
  for i, e in ipairs(r.entries) do out[i] = (e.type == "dir" and "[DIR] " or "[FILE] ") .. e.name end
  return table.concat(out, "\n") .. more_line(r)
end

local function sizes_result(r, a)
  local entries = table.move(r.entries, 1, #r.entries, 1, {})
  if a.sortBy == "size" then
    table.sort(entries, function(x, y)
      if (x.size or 0) ~= (y.size or 0) then return (x.size or 0) > (y.size or 0) end
      return x.name < y.name
    end)
  end
  local out, files, dirs, total = {}, 0, 0, 0
  for _, e in ipairs(entries) do
    if e.type == "dir" then
      dirs = dirs + 1
      out[#out + 1] = ("[DIR] %-30s "):format(e.name)
    else
      files, total = files + 1, total + (e.size or 0)
      out[#out + 1] = ("[FILE] %-30s %10s"):format(e.name, size_text(e.size or 0))
    end
  end
  out[#out + 1] = ""
  out[#out + 1] = ("Total: %d files, %d directories"):format(files, dirs)
  out[#out + 1] = "Combined size: " .. size_text(total)
  return table.concat(out, "\n") .. more_line(r)
end

-- Exclude patterns: with "*" a glob on the relative path (minimatch, dot:
-- true), without it also **/p and **/p/** (one glob: **/p/** covers p and
-- **/p, its ** matching the directory itself). A function of the relative
-- path, or nil, message, "INVALID_ARGUMENT".
local function excluder(patterns)
  return P.globs(patterns, "excludePatterns", nil, function(p)
    if p:find("*", 1, true) then return p end
    return "**/" .. p .. "/**"
  end)
end

local function rel_of(base, p)
  local prefix = (base == "." or base == "./") and "" or (base:gsub("/+$", "") .. "/")
  return p:sub(#prefix + 1)
end

---------------------------------------------------------------------------

local EXCLUDE = P.strings(nil, { default = json.array {} })
local READ_ANN = { readOnlyHint = true, openWorldHint = false }
local EDIT_ANN = { readOnlyHint = false, idempotentHint = false, destructiveHint = true, openWorldHint = false }

local tools = {
  read_tool("read_text_file", "Read Text File", READ_DESC),
  read_tool("read_file", "Read File (Deprecated)", "DEPRECATED: Use read_text_file instead. " .. READ_DESC),
  { name = "read_media_file", title = "Read Media File", schema = PATH_ONLY(),
    description = "Read an image or audio file. Returns the base64 encoded data and MIME type (from the file extension). Other files come back as an embedded resource. Only works within allowed directories.",
    output_schema = P.object({ content = P.array({ type = "object" }) }, { "content" }),
    handler = function(ctx, a)
      local item, msg, code = media_item(ctx, a.path)
      if not item then return nil, msg, code end
      return { content = json.array { item } }
    end,
    render = function(r) return r.content, r end },
  { name = "read_multiple_files", title = "Read Multiple Files",
    description = "Read the contents of multiple files simultaneously. This is more efficient than reading files one by one when you need to analyze or compare multiple files. Each file's content is returned with its path as a reference. Failed reads for individual files won't stop the entire operation. Only works within allowed directories.",
    schema = P.object({
      paths = P.strings("Array of file paths to read. Each path must be a string pointing to a valid file within allowed directories.", { minItems = 1 }),
    }, { "paths" }),
    handler = function(ctx, a)
      local blocks, used, max = {}, 0, ctx.caps.max_result_bytes
      for i, p in ipairs(a.paths) do
        local text, msg = read_text(ctx, { path = p })
        local block = text and ("%s:\n%s\n"):format(p, text) or ("%s: Error - %s"):format(p, msg)
        if used + #block > max and i > 1 then
          blocks[#blocks + 1] = ("[%d more files not shown: the result cap was reached; read them separately]")
            :format(#a.paths - i + 1)
          break
        end
        blocks[#blocks + 1] = block
        used = used + #block + 5
      end
      return table.concat(blocks, "\n---\n")
    end },
  { name = "write_file", title = "Write File", native = "write_file", errors = open_failed,
    description = "Create a new file or completely overwrite an existing file with new content. Use with caution as it will overwrite existing files without warning. The parent directory must exist (use create_directory first). The write is atomic and keeps the file's permissions. Handles text content with proper encoding. Only works within allowed directories.",
    schema = P.object({ path = S(), content = S() }, { "path", "content" }),
    annotations = { readOnlyHint = false, idempotentHint = true, destructiveHint = true, openWorldHint = false },
    permissions = { "fs.write" }, risk = "medium",
    args = function(a) return posix({ path = a.path, content = a.content, create_dirs = false }, a.path) end,
    result = function(_, a) return "Successfully wrote to " .. a.path end },
  { name = "edit_file", title = "Edit File", handler = edit, annotations = EDIT_ANN, permissions = { "fs.write" }, risk = "medium",
    description = "Make line-based edits to a text file. Each edit replaces an exact text sequence (oldText) with new text (newText); a sequence that differs only in whitespace or indentation is found too, and newText is re-indented to match. Each oldText must match exactly one place in the file (include surrounding lines to make it unique); if any edit fails, nothing is written. Line endings (CRLF) and a BOM are preserved. Returns a git-style diff showing the changes made; dryRun: true shows the diff without writing. Only works within allowed directories.",
    schema = P.object({
      path = S(),
      edits = P.array(P.object({
        oldText = S("Text to search for - must match exactly"), newText = S("Text to replace with"),
      }, { "oldText", "newText" })),
      dryRun = P.boolean("Preview changes using git-style diff format", { default = false }),
    }, { "path", "edits" }) },
  { name = "create_directory", title = "Create Directory", native = "mkdir", errors = words("mkdir"), schema = PATH_ONLY(),
    description = "Create a new directory or ensure a directory exists. Can create multiple nested directories in one operation. If the directory already exists, this operation will succeed silently. Perfect for setting up directory structures for projects or ensuring required paths exist. Only works within allowed directories.",
    annotations = { readOnlyHint = false, idempotentHint = true, destructiveHint = false, openWorldHint = false },
    permissions = { "fs.write" }, risk = "low",
    args = function(a) return posix({ path = a.path, parents = true }, a.path) end,
    result = function(_, a) return "Successfully created directory " .. a.path end },
  { name = "list_directory", title = "List Directory", native = "list_dir", args = listing(), result = list_result,
    errors = scandir_failed, schema = PATH_ONLY(), permissions = { "fs.list" },
    description = "Get a detailed listing of all files and directories in a specified path. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes, sorted by name. This tool is essential for understanding directory structure and finding specific files within a directory. Only works within allowed directories." },
  { name = "list_directory_with_sizes", title = "List Directory with Sizes", native = "list_dir", args = listing(),
    result = sizes_result, errors = scandir_failed, permissions = { "fs.list" },
    description = "Get a detailed listing of all files and directories in a specified path, including sizes. Results clearly distinguish between files and directories with [FILE] and [DIR] prefixes. This tool is useful for understanding directory structure and finding specific files within a directory. Sizes are those of the entries themselves (a symlink's own size). Only works within allowed directories.",
    schema = P.object({
      path = S(), sortBy = S("Sort entries by name or size", { enum = { "name", "size" }, default = "name" }),
    }, { "path" }) },
  { name = "directory_tree", title = "Directory Tree", native = "list_dir", errors = scandir_failed, permissions = { "fs.list" },
    description = "Get a recursive tree view of files and directories as a JSON structure. Each entry includes 'name', 'type' (file/directory), and 'children' for directories. Files have no children array, while directories always have a children array (which may be empty). Entries are sorted by name; symlinks are listed as files and not followed. The output is formatted with 2-space indentation for readability. Use excludePatterns (globs like \"node_modules\" or \"**/*.log\") to leave parts out; a tree larger than the entry cap is refused rather than cut. Only works within allowed directories.",
    schema = P.object({ path = S(), excludePatterns = EXCLUDE }, { "path" }),
    args = function(a)
      local ok, emsg, ecode = excluder(a.excludePatterns)
      if not ok then return nil, emsg, ecode end
      return listing(true)(a)
    end,
    result = function(r, a, ctx)
      if r.truncated then
        return nil, ("%s has more than %d entries (max_entries): choose a subdirectory as path or add excludePatterns")
          :format(a.path, ctx.caps.max_entries), "TOO_LARGE"
      end
      local excluded = excluder(a.excludePatterns)
      local top = json.array {}
      local nodes = { [""] = top }
      for _, e in ipairs(r.entries) do
        local rel = rel_of(a.path, e.path)
        local siblings = nodes[rel:match("^(.*)/[^/]*$") or ""]
        if siblings and not excluded(rel) then
          local node = { name = e.name, type = e.type == "dir" and "directory" or "file" }
          if e.type == "dir" then
            node.children = json.array {}
            nodes[rel] = node.children
          end
          siblings[#siblings + 1] = node
        end
      end
      return P.pretty(top, { "name", "type", "children" })
    end },
  { name = "move_file", title = "Move File", native = "move", annotations = EDIT_ANN,
    permissions = { "fs.write", "fs.delete" }, risk = "medium",
    description = "Move or rename files and directories. Can move files between directories and rename them in a single operation. If the destination exists, the operation will fail. Works across different directories and can be used for simple renaming within the same directory. Both source and destination must be within allowed directories.",
    schema = P.object({ source = S(), destination = S() }, { "source", "destination" }),
    args = function(a) return posix({ source = a.source, destination = a.destination }, a.source, a.destination) end,
    errors = words("rename", { EEXIST = function(_, _, _, _, a) return "Destination already exists: " .. a.destination end }),
    result = function(_, a) return ("Successfully moved %s to %s"):format(a.source, a.destination) end },
  { name = "search_files", title = "Search Files", native = "glob", errors = scandir_failed, permissions = { "fs.list" },
    description = "Search for files and directories whose path matches a glob pattern (this matches names, not file contents: use a grep tool for text). The pattern is matched against the path relative to 'path': '*.ext' matches only directly inside it, '**/*.ext' at any depth, '**/name' a name anywhere. Returns full paths to all matching items, or 'No matches found'. excludePatterns (globs on the relative path) leave matches out. Long result lists are cut with a note. Only searches within allowed directories.",
    schema = P.object({ path = S(), pattern = S(), excludePatterns = EXCLUDE }, { "path", "pattern" }),
    args = function(a)
      local ok, m, c = posix(true, a.path)
      if ok then ok, m, c = excluder(a.excludePatterns) end
      if not ok then return nil, m, c end
      return { pattern = a.pattern, path = a.path, type = "any", include_hidden = true, respect_ignore = false }
    end,
    result = function(r, a)
      local excluded, out = excluder(a.excludePatterns), {}
      for _, e in ipairs(r.entries) do
        if not excluded(rel_of(a.path, e.path)) then out[#out + 1] = e.path end
      end
      local text = #out > 0 and table.concat(out, "\n") or "No matches found"
      if r.truncated then text = text .. "\n[more matches not shown: the result cap was reached; narrow the pattern]" end
      return text
    end },
  { name = "get_file_info", title = "Get File Info", native = "stat", errors = words("stat"), schema = PATH_ONLY(),
    description = "Retrieve detailed metadata about a file or directory. Returns comprehensive information including size, creation time, last modified time, permissions, and type. This tool is perfect for understanding file characteristics without reading the actual content. A symlink is described itself, not followed. Only works within allowed directories.",
    args = function(a) return posix({ path = a.path }, a.path) end,
    result = function(r)
      local date = P.js_date(r.mtime)
      return table.concat({
        "size: " .. r.size, "created: " .. date, "modified: " .. date, "accessed: " .. date,
        "isDirectory: " .. tostring(r.type == "dir"), "isFile: " .. tostring(r.type == "file"),
        "permissions: " .. r.mode:sub(-3),
      }, "\n")
    end },
  { name = "list_allowed_directories", title = "List Allowed Directories", schema = {}, permissions = { "fs.list" },
    description = "Returns the list of directories that this server is allowed to access. Subdirectories within these allowed directories are also accessible. Use this to understand which directories and their nested paths are available before trying to access files.",
    handler = function(ctx) return "Allowed directories:\n" .. table.concat(P.mounts(ctx), "\n") end },
}

return {
  name = "mcp_filesystem",
  description = "The official MCP filesystem server's tools (@modelcontextprotocol/server-filesystem)",
  path_style = "absolute",
  tools = P.tools({ output_schema = P.TEXT_SCHEMA, output = P.text_output, annotations = READ_ANN }, tools),
}
