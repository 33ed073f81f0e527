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

local function fail(msg, code, path, op)
  if code == "ENOENT" then return err(("File '%s' not found"):format(path), code) end
  if code == "EACCES" or code == "EPERM" or code == "READ_ONLY_ROOT" then
    return err(("permission denied for %s on %s"):format(op or "read", path), code)
  end
  return err(P.detail(msg), code)
end

-- Python's repr() of a str, and of a list of them.
local function repr(s)
  local q = (s:find("'", 1, true) and not s:find('"', 1, true)) and '"' or "'"
  s = s:gsub("\\", "\\\\"):gsub("\n", "\\n"):gsub("\r", "\\r"):gsub("\t", "\\t")
  if q == "'" then s = s:gsub("'", "\\'") end
  return q .. s .. q
end

local function repr_list(t) return P.pylist(t, repr) end

local function text_result(t) return { content = t } end

-- Source lines of the window [first, first+count-1] (1-based) and the
-- file's line count: a native text read, or the raw bytes when a line was
-- long enough for the native read to cut it.
local function window(ctx, path, first, count)
  local r, msg, code = ctx:call("read_file", { path = path, offset = first, limit = count })
  if not r then return nil, msg, code end
  local lines, long = {}, false
  for row in P.unnumber(r.content):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = row
    if #row >= ctx.caps.max_line_chars then long = true end
  end
  if not long then return lines, r.total_lines end
  local raw, rmsg, rcode = ctx:call("read_file", { path = path, encoding = "base64" })
  if not raw then return nil, rmsg, rcode end
  local data, all = core.base64_decode(raw.content), {}
  for line in (data:gsub("\r\n", "\n") .. (data:sub(-1) == "\n" and "" or "\n")):gmatch("([^\n]*)\n") do
    all[#all + 1] = line
  end
  lines = {}
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
  if not probe then return fail(msg, code, path) end
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
  if not lines then return fail(total, wcode, path) end
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

local function ls(ctx, a)
  local path, e, c = vpath(ctx, a.path or "/")
  if not path then return nil, e, c end
  local r, msg, code = ctx:call("list_dir", { path = path, include_hidden = true })
  if not r then return fail(msg, code, path) end
  local base = path:gsub("/+$", "")
  local out = {}
  for _, x in ipairs(r.entries) do out[#out + 1] = base .. "/" .. x.name .. (x.type == "dir" and "/" or "") end
  table.sort(out)
  if #out == 0 then return text_result("No files found") end
  return text_result(cap(repr_list(out)))
end

local function glob(ctx, a)
  if type(a.pattern) ~= "string" then return err("pattern is required", "INVALID_ARGUMENT") end
  local path, e, c = vpath(ctx, a.path or "/")
  if not path then return nil, e, c end
  local pattern = a.pattern
  if pattern:sub(1, 1) == "/" then pattern = pattern:gsub("^/+", "")
  elseif not pattern:find("/", 1, true) then pattern = "**/" .. pattern end
  local r, msg, code = ctx:call("glob", { pattern = pattern, path = path, respect_ignore = false })
  if not r then return fail(msg, code, path) end
  local base = path:gsub("/+$", "")
  local out = {}
  for _, m in ipairs(r.entries or {}) do
    local p = m.path
    if p:sub(1, 1) ~= "/" then p = base .. "/" .. p end
    out[#out + 1] = p
  end
  table.sort(out)
  if #out == 0 then return text_result("No files found") end
  return text_result(cap(repr_list(out)))
end

local MODES = { files_with_matches = "files", content = "content", count = "count" }

local function grep(ctx, a)
  if type(a.pattern) ~= "string" then return err("pattern is required", "INVALID_ARGUMENT") end
  local path, e, c = vpath(ctx, a.path or "/")
  if not path then return nil, e, c end
  local mode = a.output_mode or "files_with_matches"
  if not MODES[mode] then
    return err("output_mode must be one of files_with_matches, content, count", "INVALID_ARGUMENT")
  end
  if a.max_count ~= nil and a.max_count <= 0 then return err("max_count must be greater than 0", "INVALID_ARGUMENT") end
  local args = { pattern = a.pattern, literal = true, path = path, output_mode = MODES[mode], max_results = a.max_count }
  if a.glob and a.glob ~= "" then args.include = { a.glob } end
  local r, msg, code = ctx:call("grep", args)
  if not r then return fail(msg, code, path) end
  local base = path:gsub("/+$", "")
  local function abs(p) return p:sub(1, 1) == "/" and p or base .. "/" .. p end
  local out = {}
  if mode == "files_with_matches" then
    for _, f in ipairs(r.files or {}) do out[#out + 1] = abs(f) end
    table.sort(out)
  elseif mode == "count" then
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

local function edit_file(ctx, a)
  local path, e, c = vpath(ctx, a.file_path)
  if not path then return nil, e, c end
  if type(a.old_string) ~= "string" then return err("old_string is required", "INVALID_ARGUMENT") end
  if type(a.new_string) ~= "string" then return err("new_string is required", "INVALID_ARGUMENT") end
  local old, new = a.old_string:gsub("\r\n", "\n"), a.new_string:gsub("\r\n", "\n")
  local r, msg, code, det = ctx:call("edit_file", { path = path, old_text = old, new_text = new,
    replace_all = a.replace_all == true })
  if not r then
    if code == "NOT_FOUND_TEXT" then
      if old:sub(-1) == "\n" then
        local raw = ctx:call("read_file", { path = path, encoding = "base64" })
        local data = raw and core.base64_decode(raw.content)
        if data and data:sub(-1) ~= "\n" then
          return err("old_string ends with a newline, but the file does not end with a newline. Retry with the "
            .. "trailing newline removed from old_string (and from new_string if it also ends with a newline).", code)
        end
      end
      return err(("String not found in file: '%s'"):format(a.old_string), code)
    elseif code == "AMBIGUOUS_TEXT" then
      local n = det and det.matches or 2
      return err(("String '%s' appears %d times in file. Use replace_all=True to replace all instances, or provide "
        .. "a more specific string with surrounding context."):format(a.old_string, n), code)
    end
    return fail(msg, code, path, "write")
  end
  return text_result(("Successfully replaced %d instance(s) of the string in '%s'"):format(r.replacements, path))
end

local function build(o)
  local legacy = o.format == "legacy"
  if o.format ~= nil and o.format ~= "0.7" and not legacy then
    error(("pack deepagents: format must be \"0.7\" or \"legacy\", not %q"):format(tostring(o.format)))
  end
  -- tool(name, description, properties, kind, handler[, permissions]): one declaration
  local function tool(name, description, schema, kind, handler, permissions)
    return { name = name, description = description, schema = schema, kind = kind, handler = handler, permissions = permissions }
  end
  local tools = P.tools({ output_schema = P.TEXT_SCHEMA, output = P.text_output }, {
    tool("ls", "Lists all files in a directory (non-recursive). Paths are absolute, starting with /; directories end in /.",
      { path = { type = "string", description = "Absolute path of the directory (default /)." } },
      "read", ls),
    tool("read_file", "Reads a file. Returns numbered lines starting at offset + 1 (offset is 0-based, default 0; "
      .. "limit default 100). Lines longer than 5000 characters continue on rows numbered N.1, N.2, ...",
      {
        file_path = { type = "string", description = "Absolute path of the file to read." },
        offset = { type = "integer", description = "Line number to start reading from, 0-based (default 0)." },
        limit = { type = "integer", description = "Maximum number of lines to read (default 100)." },
      }, "read", function(ctx, a) return read_file(ctx, a, legacy) end),
    tool("write_file", legacy and "Writes a new file; an existing file is refused (use edit_file)."
        or "Writes a file, creating it or replacing its content.",
      {
        file_path = { type = "string", description = "Absolute path of the file to write." },
        content = { type = "string", description = "The content to write." },
      }, "write", function(ctx, a)
        local path, e, c = vpath(ctx, a.file_path)
        if not path then return nil, e, c end
        if type(a.content) ~= "string" then return err("content is required", "INVALID_ARGUMENT") end
        local r, msg, code = ctx:call("write_file", { path = path, content = a.content,
          expected_hash = legacy and "absent" or nil })
        if not r then
          if legacy and (code == "EEXIST" or code == "HASH_MISMATCH") then
            return nil, ("Cannot write to %s because it already exists. Read and then make an edit, or write to a new path.")
              :format(path), code
          end
          return fail(msg, code, path, "write")
        end
        return text_result("Updated file " .. path)
      end),
    tool("edit_file", "Performs exact string replacement in a file. old_string must be unique unless replace_all is "
      .. "true. Read the file before editing it.",
      {
        file_path = { type = "string", description = "Absolute path of the file to edit." },
        old_string = { type = "string", description = "The text to replace." },
        new_string = { type = "string", description = "The text to replace it with." },
        replace_all = { type = "boolean", description = "Replace every occurrence (default false)." },
      }, "edit", edit_file),
    tool("delete", "Deletes a file.",
      { file_path = { type = "string", description = "Absolute path of the file to delete." } },
      "delete", function(ctx, a)
        local path, e, c = vpath(ctx, a.file_path)
        if not path then return nil, e, c end
        local r, msg, code = ctx:call("remove", { path = path })
        if not r then return fail(msg, code, path, "write") end
        return text_result("Deleted " .. path)
      end, { "fs.write" }),
    tool("glob", "Finds files matching a glob pattern (*, **, ?, [...], {a,b}). A pattern without / matches file "
      .. "names at any depth; a leading / anchors at the root.",
      {
        pattern = { type = "string", description = "Glob pattern, e.g. \"*.py\" or \"/src/**/*.ts\"." },
        path = { type = "string", description = "Directory to search from (default /)." },
      }, "read", glob),
    tool("grep", "Searches files for a literal text pattern (regex metacharacters are ordinary characters).",
      {
        pattern = { type = "string", description = "Literal text to search for." },
        path = { type = "string", description = "Directory to search (default /)." },
        glob = { type = "string", description = "Only files matching this glob (file name, or path when it has a /)." },
        output_mode = { type = "string", enum = { "files_with_matches", "content", "count" },
          description = "files_with_matches (default), content or count." },
        max_count = { type = "integer", description = "Stop after this many matches." },
      }, "read", grep),
  })
  -- images come back as an image block
  tools[2].render = function(r)
    if r.image then
      return { { type = "image", data = r.image, mimeType = r.mime_type } }, { content = "" }
    end
    return r.content, r
  end
  return { name = "deepagents", path_style = "absolute", tools = tools }
end

return {
  name = "deepagents",
  description = "LangChain deepagents' filesystem tools (ls, read_file, write_file, edit_file, delete, glob, literal grep)",
  path_style = "absolute",
  options = { "format" },
  build = build,
}
