-- deepagents: LangChain deepagents' filesystem tools (ls, read_file,
-- write_file, edit_file, delete, glob, grep) with their texts: numbered
-- rows with continuation markers, the paging notices and reminders, repr()
-- lists, literal grep in three output modes, `Error: ` strings and the
-- virtual_mode path rules, over the native tools. The recommended mount is
-- `/` (the root appears as `/`). Deviations are in docs/packs.md.

local core = require "burrow.core"
local P = require "burrow.pack"

local MAX_LINE = 5000          -- characters per row; longer lines continue as N.1, N.2, ...
local BUDGET = 20000 * 4       -- 20000 tokens at 4 characters per token
local TRUNCATED_READ = "\n\n[Output was truncated due to size limits. The file content is very large. "
  .. "Consider reformatting the file to make it easier to navigate.]"
local TRUNCATED = "\n\n... [results truncated, try being more specific with your parameters]"

local function err(msg, code) return nil, "Error: " .. msg, code end

-- virtual_mode: `..` and `~` are refused before anything is looked up;
-- a relative path is taken from the root (deepagents prefixes "/").
local function vpath(ctx, p)
  if type(p) ~= "string" then return err("file_path is required", "INVALID_ARGUMENT") end
  if p:match("^%a:[\\/]") then
    return err(("Windows absolute paths are not supported: %s. Please use virtual paths starting with / "
      .. "(e.g., /workspace/file.txt)"):format(p), "INVALID_ARGUMENT")
  end
  if p:find("..", 1, true) or p:sub(1, 1) == "~" then
    return err("Path traversal not allowed: " .. p, "OUTSIDE_ROOT")
  end
  if p:sub(1, 1) == "/" then return p end
  local m = P.mounts(ctx)[1]
  return (m == "/" and "" or m) .. "/" .. p
end

-- deepagents' words for burrow's failures on the path (op: read or write).
local function words(op, more)
  local denied = "Error: permission denied for " .. op .. " on %s"
  local w = { ENOENT = "Error: File '%s' not found", EACCES = denied, EPERM = denied, READ_ONLY_ROOT = denied }
  for k, v in pairs(more or {}) do w[k] = v end
  return P.words(w, P.prefixed("Error: "))
end
local read_failed, write_failed = words("read"), words("write")

-- Python's repr() of a str, and of a list of them.
local function repr(s)
  local q = (s:find("'", 1, true) and not s:find('"', 1, true)) and '"' or "'"
  s = s:gsub("\\", "\\\\"):gsub("\n", "\\n"):gsub("\r", "\\r"):gsub("\t", "\\t")
  if q == "'" then s = s:gsub("'", "\\'") end
  return q .. s .. q
end

local function repr_list(t) return P.pylist(t, repr) end

local text_result = P.text

-- Source lines of the window [first, first+count-1] (1-based) and the
-- file's line count: a native text read, or the raw bytes when the native
-- read cut a line (over max_line_chars characters).
local function window(ctx, path, first, count)
  local r, msg, code = ctx:call("read_file", { path = path, offset = first, limit = count })
  if not r then return nil, msg, code end
  if (r.cut_lines or 0) == 0 then return r.lines or {}, r.total_lines end
  local raw, rmsg, rcode = ctx:call("read_file", { path = path, encoding = "base64" })
  if not raw then return nil, rmsg, rcode end
  local data, all = core.base64_decode(raw.content), {}
  for line in (data:gsub("\r\n", "\n") .. (data:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    all[#all + 1] = line
  end
  local lines = {}
  for n = first, math.min(#all, first + count - 1) do lines[#lines + 1] = all[n] end
  return lines, #all
end

-- Rows of one source line: N, then N.1, N.2, ... every MAX_LINE characters.
local function chunks(line)
  local out, n = {}, utf8.len(line)
  if not n or n <= MAX_LINE then return { line } end
  local i = 1
  while i <= #line do
    local j = utf8.offset(line, MAX_LINE + 1, i) or #line + 1
    out[#out + 1] = line:sub(i, j - 1)
    i = j
  end
  return out
end

local function read_file(ctx, a, legacy)
  local path, e, c = vpath(ctx, a.file_path)
  if not path then return nil, e, c end
  local offset, limit = a.offset or 0, a.limit or 100
  local notice = ""
  if offset < 0 then
    notice = ("\n\n[Requested offset %d is before the start of the file; read from line 1 instead.]"):format(offset)
    offset = 0
  end
  local probe, msg, code = ctx:call("read_file", { path = path, limit = 1 })
  if not probe then return read_failed(msg, code, nil, a, ctx, { path = path }) end
  if probe.encoding == "image" then return { image = probe.content, mime_type = probe.mime_type, path = path } end
  if probe.size == 0 then return text_result("System reminder: File exists but has empty contents") end
  if limit <= 0 then
    return text_result("System reminder: no lines were read because `limit` was 0. The file was not inspected "
      .. "and may have contents; retry with `limit` >= 1 to read it.")
  end
  if offset >= (probe.total_lines or 0) then
    return err(("Line offset %d exceeds file length (%d lines)"):format(offset, probe.total_lines or 0), "INVALID_ARGUMENT")
  end
  local lines, total, wcode = window(ctx, path, offset + 1, limit)
  if not lines then return read_failed(total, wcode, nil, a, ctx, { path = path }) end
  -- rows per source line, the marker width of the window
  local rows, width = {}, 6
  if not legacy then
    width = 0
    for i, line in ipairs(lines) do
      local parts = chunks(line)
      rows[i] = parts
      local n = offset + i
      width = math.max(width, #tostring(n) + (#parts > 1 and #tostring(#parts - 1) + 1 or 0))
    end
  else
    for i, line in ipairs(lines) do rows[i] = chunks(line) end
  end
  local out, used, shown, cut = {}, 0, 0, false
  for i, parts in ipairs(rows) do
    local n, block = offset + i, {}
    for k, part in ipairs(parts) do
      local marker = k == 1 and tostring(n) or ("%d.%d"):format(n, k - 1)
      block[k] = legacy and (("%6s\t%s"):format(marker, part)) or ((" "):rep(width - #marker) .. marker .. "  " .. part)
    end
    local text = table.concat(block, "\n")
    if i > 1 and used + #text + 1 > BUDGET then cut = true break end
    out[#out + 1], used, shown = text, used + #text + 1, i
    if used > BUDGET then
      out[#out] = text:sub(1, BUDGET)
      cut = shown < #rows or #text > BUDGET
      break
    end
  end
  local body = table.concat(out, "\n")
  if ctx.caps.untrusted_boundary then body = ctx:untrusted(body, path) end
  local a1, b = offset + 1, offset + shown
  if cut then body = body .. TRUNCATED_READ end
  if b < total then
    body = body .. ("\n\n[Read %d line(s) (lines %d-%d of %d total). %d line(s) remaining from offset %d.]")
      :format(shown, a1, b, total, total - b, b)
  end
  return text_result(body .. notice)
end

local function cap(text)
  if #text <= BUDGET then return text end
  local cut = text:sub(1, BUDGET)
  return cut .. TRUNCATED
end

-- A sorted Python list of paths, or "No files found".
local function path_list(out)
  table.sort(out)
  if #out == 0 then return text_result("No files found") end
  return text_result(cap(repr_list(out)))
end

-- path (default /) through vpath, with the native arguments in more.
local function at(field, default, more)
  return function(a, ctx)
    local path, e, c = vpath(ctx, a[field] or default)
    if not path then return nil, e, c end
    local na = { path = path }
    for k, v in pairs(more or {}) do na[k] = v end
    return na
  end
end

local function base_of(na) return (na.path:gsub("/+$", "")) end

local function ls_result(r, _, _, na)
  local base, out = base_of(na), {}
  for _, x in ipairs(r.entries) do out[#out + 1] = base .. "/" .. x.name .. (x.type == "dir" and "/" or "") end
  return path_list(out)
end

local function glob_args(a, ctx)
  local na, e, c = at("path", "/")(a, ctx)
  if not na then return nil, e, c end
  local pattern = a.pattern
  if pattern:sub(1, 1) == "/" then pattern = pattern:gsub("^/+", "")
  elseif not pattern:find("/", 1, true) then pattern = "**/" .. pattern end
  na.pattern, na.respect_ignore = pattern, false
  return na
end

local function glob_result(r, _, _, na)
  local base, out = base_of(na), {}
  for _, m in ipairs(r.entries or {}) do
    local p = m.path
    if p:sub(1, 1) ~= "/" then p = base .. "/" .. p end
    out[#out + 1] = p
  end
  return path_list(out)
end

local MODES = { files_with_matches = "files", content = "content", count = "count" }

local function grep_args(a, ctx)
  local na, e, c = at("path", "/")(a, ctx)
  if not na then return nil, e, c end
  local mode = a.output_mode or "files_with_matches"
  if not MODES[mode] then
    return err("output_mode must be one of files_with_matches, content, count", "INVALID_ARGUMENT")
  end
  if a.max_count ~= nil and a.max_count <= 0 then return err("max_count must be greater than 0", "INVALID_ARGUMENT") end
  na.pattern, na.literal, na.output_mode, na.max_results = a.pattern, true, MODES[mode], a.max_count
  if a.glob and a.glob ~= "" then na.include = { a.glob } end
  return na
end

local function grep_result(r, a, _, na)
  local base = base_of(na)
  local function abs(p) return p:sub(1, 1) == "/" and p or base .. "/" .. p end
  local out = {}
  if na.output_mode == "files" then
    for _, f in ipairs(r.files or {}) do out[#out + 1] = abs(f) end
    table.sort(out)
  elseif na.output_mode == "count" then
    local rows = {}
    for _, x in ipairs(r.counts or {}) do rows[#rows + 1] = { abs(x.path), x.count } end
    table.sort(rows, function(x, y) return x[1] < y[1] end)
    for _, x in ipairs(rows) do out[#out + 1] = ("%s: %d"):format(x[1], x[2]) end
  else
    local by, order = {}, {}
    for _, m in ipairs(r.matches or {}) do
      local p = abs(m.path)
      if not by[p] then by[p], order[#order + 1] = {}, p end
      table.insert(by[p], m)
    end
    table.sort(order)
    for _, p in ipairs(order) do
      out[#out + 1] = p .. ":"
      table.sort(by[p], function(x, y) return x.line < y.line end)
      for _, m in ipairs(by[p]) do out[#out + 1] = ("  %d: %s"):format(m.line, m.text) end
    end
  end
  if #out == 0 then return text_result("No matches found") end
  local text = table.concat(out, "\n")
  if r.truncated then
    text = text .. "\n\nNote: the search stopped early (it hit its time limit or the maximum match count). "
      .. "Results may be incomplete."
  end
  return text_result(cap(text))
end

local function edit_args(a, ctx)
  local na, e, c = at("file_path")(a, ctx)
  if not na then return nil, e, c end
  if a.old_string == nil then return err("old_string is required", "INVALID_ARGUMENT") end
  if a.new_string == nil then return err("new_string is required", "INVALID_ARGUMENT") end
  na.old_text, na.new_text = a.old_string:gsub("\r\n", "\n"), a.new_string:gsub("\r\n", "\n")
  na.replace_all = a.replace_all == true
  return na
end

local edit_failed = words("write", {
  NOT_FOUND_TEXT = function(path, _, _, _, a, ctx)
    if a.old_string:gsub("\r\n", "\n"):sub(-1) == "\n" then
      local raw = ctx:call("read_file", { path = path, encoding = "base64" })
      local data = raw and core.base64_decode(raw.content)
      if data and data:sub(-1) ~= "\n" then
        return "Error: old_string ends with a newline, but the file does not end with a newline. Retry with the "
          .. "trailing newline removed from old_string (and from new_string if it also ends with a newline)."
      end
    end
    return ("Error: String not found in file: '%s'"):format(a.old_string)
  end,
  AMBIGUOUS_TEXT = function(_, _, _, det, a)
    return ("Error: String '%s' appears %d times in file. Use replace_all=True to replace all instances, or provide "
      .. "a more specific string with surrounding context."):format(a.old_string, det and det.matches or 2)
  end,
})

local function build(o)
  local legacy = o.format == "legacy"
  if o.format ~= nil and o.format ~= "0.7" and not legacy then
    error(("pack deepagents: format must be \"0.7\" or \"legacy\", not %q"):format(tostring(o.format)))
  end
  local S, I = P.string, P.integer
  local exists = "Cannot write to %s because it already exists. Read and then make an edit, or write to a new path."
  return P.tools({ output_schema = P.TEXT_SCHEMA, output = P.text_output, errors = read_failed,
    need = "Error: %s is required" }, {
    { name = "ls", native = "list_dir", args = at("path", "/", { include_hidden = true }), result = ls_result,
      description = "Lists all files in a directory (non-recursive). Paths are absolute, starting with /; directories end in /.",
      schema = { path = S("Absolute path of the directory (default /).") } },
    { name = "read_file", handler = function(ctx, a) return read_file(ctx, a, legacy) end,
      description = "Reads a file. Returns numbered lines starting at offset + 1 (offset is 0-based, default 0; "
        .. "limit default 100). Lines longer than 5000 characters continue on rows numbered N.1, N.2, ...",
      schema = {
        file_path = S("Absolute path of the file to read."),
        offset = I("Line number to start reading from, 0-based (default 0)."),
        limit = I("Maximum number of lines to read (default 100)."),
      },
      render = function(r) -- images come back as an image block
        if r.image then return { { type = "image", data = r.image, mimeType = r.mime_type } }, { content = "" } end
        return r.content, r
      end },
    { name = "write_file", kind = "write", native = "write_file",
      description = legacy and "Writes a new file; an existing file is refused (use edit_file)."
        or "Writes a file, creating it or replacing its content.",
      schema = { file_path = S("Absolute path of the file to write."), content = S("The content to write.") },
      args = function(a, ctx)
        local na, e, c = at("file_path")(a, ctx)
        if not na then return nil, e, c end
        if a.content == nil then return err("content is required", "INVALID_ARGUMENT") end
        na.content, na.expected_hash = a.content, legacy and "absent" or nil
        return na
      end,
      errors = words("write", legacy and { EEXIST = exists, HASH_MISMATCH = exists } or nil),
      result = function(_, _, _, na) return text_result("Updated file " .. na.path) end },
    { name = "edit_file", kind = "edit", native = "edit_file", args = edit_args, errors = edit_failed,
      description = "Performs exact string replacement in a file. old_string must be unique unless replace_all is "
        .. "true. Read the file before editing it.",
      schema = {
        file_path = S("Absolute path of the file to edit."), old_string = S("The text to replace."),
        new_string = S("The text to replace it with."), replace_all = P.boolean("Replace every occurrence (default false)."),
      },
      result = function(r, _, _, na)
        return text_result(("Successfully replaced %d instance(s) of the string in '%s'"):format(r.replacements, na.path))
      end },
    { name = "delete", kind = "delete", native = "remove", args = at("file_path"), errors = write_failed,
      permissions = { "fs.write" }, description = "Deletes a file.",
      schema = { file_path = S("Absolute path of the file to delete.") },
      result = function(_, _, _, na) return text_result("Deleted " .. na.path) end },
    { name = "glob", native = "glob", required = { "pattern" }, args = glob_args, result = glob_result,
      description = "Finds files matching a glob pattern (*, **, ?, [...], {a,b}). A pattern without / matches file "
        .. "names at any depth; a leading / anchors at the root.",
      schema = {
        pattern = S("Glob pattern, e.g. \"*.py\" or \"/src/**/*.ts\"."), path = S("Directory to search from (default /)."),
      } },
    { name = "grep", native = "grep", required = { "pattern" }, args = grep_args, result = grep_result,
      description = "Searches files for a literal text pattern (regex metacharacters are ordinary characters).",
      schema = {
        pattern = S("Literal text to search for."), path = S("Directory to search (default /)."),
        glob = S("Only files matching this glob (file name, or path when it has a /)."),
        output_mode = S("files_with_matches (default), content or count.",
          { enum = { "files_with_matches", "content", "count" } }),
        max_count = I("Stop after this many matches."),
      } },
  })
end

return P.pack({ name = "deepagents", path_style = "absolute", options = { "format" },
  description = "LangChain deepagents' filesystem tools (ls, read_file, write_file, edit_file, delete, glob, literal grep)" }, build)
