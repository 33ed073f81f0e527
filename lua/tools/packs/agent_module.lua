-- agent_module: the seed "filesystem" module v2.0.0 (read, write, edit,
-- insert, ls, grep, find, mv, cp, rm, mkdir, file_stat) with its
-- parameters, result objects, permissions and risk, over the native tools.
-- Line numbers are `{n:>W}\t{line}`, W the digit count of the file's line
-- count (the separator is burrow's reading of the published example).
-- Decisions and deviations are in docs/packs.md.

local P = require "burrow.pack"
local MAX_INTEGER = require("burrow.toolkit.schema").MAX_INTEGER -- numbers past it: INVALID_ARGUMENT
local json = require("burrow.core").json


-- The module's words for a containment failure (the path the details
-- name, else the agent's); burrow's otherwise.
local OUTSIDE = "Path '%s' is outside allowed paths"
local failed = P.words({ OUTSIDE_ROOT = OUTSIDE, ELOOP = OUTSIDE }, P.as_is,
  function(det, a, na) return det and det.path or na.path or na.source end)

local function arr(t) return setmetatable(t or {}, json.array_mt) end

local function digits(n) return #tostring(math.max(n, 1)) end

-- The new file's lines of each hunk of a unified diff, numbered.
local function preview_of(diff)
  local rows, last = {}, 0
  local n
  for line in (diff or ""):gmatch("([^\n]*)\n?") do
    local c = line:match("^@@ %-%d+,?%d* %+(%d+),?%d* @@")
    if c then
      n = tonumber(c)
    elseif n and not line:match("^%-%-%- ") and not line:match("^%+%+%+ ") then
      local k = line:sub(1, 1)
      if k == " " or k == "+" then
        rows[#rows + 1] = { n, line:sub(2) }
        last, n = n, n + 1
      end
    end
  end
  local w, out = digits(last), {}
  for i, r in ipairs(rows) do out[i] = (" "):rep(w - #tostring(r[1])) .. r[1] .. "\t" .. r[2] .. "\n" end
  return table.concat(out)
end

local TYPES = { file = "file", dir = "dir", symlink = "symlink" }

local function check_encoding(a)
  local e = a.encoding
  if e ~= nil and not tostring(e):lower():match("^utf%-?8$") then
    return nil, ("unsupported encoding '%s': only utf-8 is supported"):format(tostring(e)), "INVALID_ARGUMENT"
  end
  return true
end

-- The read's arguments: start_line and end_line checked, the encoding utf-8.
local function read_args(a)
  local ok, e, c = check_encoding(a)
  if not ok then return nil, e, c end
  local first
  first, e, c = P.at_least(a, "start_line", 1, 1)
  if not first then return nil, e, c end
  if a.end_line ~= nil and (math.type(a.end_line) ~= "integer" or a.end_line < first) then
    return nil, "end_line must be an integer >= start_line", "INVALID_ARGUMENT"
  end
  return { path = a.path, offset = first, limit = a.end_line and (a.end_line - first + 1) or MAX_INTEGER }
end

-- The page's lines numbered right-aligned to the width of the file's line
-- count, tagged as data where the untrusted_boundary cap says so.
local function read_result(r, a, ctx, na)
  if r.encoding ~= "text" then return nil, ("%s is not a text file"):format(a.path), "BINARY" end
  local first, total = na.offset, r.total_lines or 0
  if first > math.max(total, 1) then
    return nil, ("start_line %d is past the end of %s (%d lines)"):format(first, a.path, total), "INVALID_ARGUMENT"
  end
  local rows = P.page_text(r, "%" .. digits(total) .. "d\t%s")
  local res = {
    path = a.path, content = P.untrusted(ctx, rows, na.path, "read_file"), total_lines = total,
    start_line = r.start_line or first, end_line = r.end_line or math.min(total, a.end_line or total), size_bytes = r.size,
  }
  if r.truncated then res.truncated, res.next_start_line = true, r.next_offset end
  return res
end

-- edit with count: 1 (default) exactly one place, 0 all, k > 1 exactly k:
-- counted on a dry run, written only if the file is still the one counted.
local function edit(ctx, a)
  local count, e, c = P.at_least(a, "count", 0, 1)
  if not count then return nil, e, c end
  local args = { path = a.path, old_text = a.old_string, new_text = a.new_string, replace_all = count ~= 1 or nil }
  if count > 1 then
    args.dry_run = true
    local d, msg, code, det = ctx:call("edit_file", args)
    if not d then return failed(msg, code, det, a, ctx, args) end
    if d.replacements ~= count then
      local lines = {}
      for _, x in ipairs(d.edits or {}) do lines[#lines + 1] = tostring(x.line) end
      return nil, ("old_string occurs %d times in %s, not %d (first on line %s); give count=%d or more context")
        :format(d.replacements, a.path, count, table.concat(lines, ", "), d.replacements), "AMBIGUOUS_TEXT"
    end
    args.dry_run, args.expected_hash = nil, d.previous_content_hash
  end
  local r, msg, code, det = ctx:call("edit_file", args)
  if not r then return failed(msg, code, det, a, ctx, args) end
  return { path = a.path, replacements = r.replacements, preview = preview_of(r.diff), content_hash = r.content_hash }
end

-- rm: a directory only with recursive = true.
local function rm(ctx, a)
  if a.recursive ~= true then
    local s, msg, code, det = ctx:call("stat", { path = a.path })
    if not s then return failed(msg, code, det, a, ctx, a) end
    if s.type == "dir" then return nil, ("'%s' is a directory; pass recursive=true to delete it"):format(a.path), "EISDIR" end
  end
  local r, msg, code, det = ctx:call("remove", { path = a.path, recursive = a.recursive == true })
  if not r then return failed(msg, code, det, a, ctx, a) end
  return { path = a.path, ok = true }
end

local function max_results(a)
  return P.at_least(a, "max_results", 1, 100)
end

local function path_of(a) return { path = a.path } end

local S, B, I = P.string, P.boolean, P.integer
local TRANSFER = {
  source = S("Source path"), destination = S("Destination path"),
  overwrite = B("Overwrite if exists", { default = false }),
}
local function transfer(native) -- mv and cp
  return function(a)
    return { source = a.source, destination = a.destination, overwrite = a.overwrite == true,
      recursive = native == "copy" or nil }
  end
end
local WRITES, NONE = { "filesystem_write" }, {}

local tools = {
  { name = "read", native = "read_file", required = { "path" }, side_effects = NONE, args = read_args, result = read_result,
    description = "Read a file with line numbers (`N\\tline`, numbers right-aligned). Supports partial reads with "
      .. "start_line/end_line (1-indexed, inclusive). Returns {path, content, total_lines, start_line, end_line, size_bytes}; "
      .. "a read cut by the size cap has truncated: true and next_start_line.",
    schema = {
      path = S("Path to the file"), start_line = I("First line (1-indexed)", { default = 1 }),
      end_line = I("Last line (1-indexed); default: the last line"), encoding = S("Text encoding", { default = "utf-8" }),
    },
    errors = function(msg, code, det, a, ctx, na)
      if code == "INVALID_ARGUMENT" and det and det.argument == "offset" then
        return nil, ("start_line %d is past the end of %s"):format(na.offset, a.path), code
      end
      return failed(msg, code, det, a, ctx, na)
    end },
  { name = "write", kind = "write", native = "write_file", required = { "path", "content" }, side_effects = WRITES,
    description = "Create or overwrite a file (atomically). Parent directories must exist unless create_dirs is true.",
    schema = {
      path = S("Path to write to"), content = S("Text content"),
      create_dirs = B("Create parent directories", { default = false }), encoding = S("Text encoding", { default = "utf-8" }),
    },
    args = function(a)
      local ok, e, c = check_encoding(a)
      if not ok then return nil, e, c end
      return { path = a.path, content = a.content, create_dirs = a.create_dirs == true }
    end,
    result = function(r, a) return { path = a.path, ok = true, bytes = #a.content, content_hash = r.content_hash } end },
  { name = "edit", kind = "edit", handler = edit, required = { "path", "old_string", "new_string" }, side_effects = WRITES,
    description = "Replace a specific text block (old_string -> new_string). count = 1 (default) needs exactly one "
      .. "occurrence, count = k exactly k, count = 0 replaces all (at least one). Returns {path, replacements, preview} "
      .. "with the changed lines numbered.",
    schema = {
      path = S("Path to the file"), old_string = S("Exact text to find"), new_string = S("Replacement text"),
      count = I("Occurrences to replace (0 = all)", { default = 1 }),
    } },
  { name = "insert", native = "insert_lines", required = { "path", "line", "content" }, side_effects = WRITES,
    annotations = P.annotations(false, false, false), permissions = { "fs.read", "fs.write" }, risk = "medium",
    description = "Insert text before a line (1-indexed); line = total lines + 1 appends.",
    schema = {
      path = S("Path to the file"), line = I("Line number to insert before (1-indexed)"), content = S("Text to insert"),
    },
    args = function(a)
      local line, e, c = P.at_least(a, "line", 1)
      if not line then return nil, e, c end
      return { path = a.path, line = line, content = a.content }
    end,
    result = function(r, a)
      return { path = a.path, ok = true, line = a.line, lines_inserted = r.lines_inserted, total_lines = r.total_lines,
        content_hash = r.content_hash }
    end },
  { name = "ls", native = "list_dir", permissions = { "fs.list" }, side_effects = NONE,
    description = "List directory contents with type and size: {path, entries: [{name, path, type, size_bytes}], count, "
      .. "truncated}. recursive descends; pattern filters names by glob (e.g. *.py); dotfiles only with include_hidden.",
    schema = {
      path = S("Directory to list", { default = "." }), recursive = B("Recurse into subdirectories", { default = false }),
      pattern = S("Glob filter (e.g. \"*.py\")"), include_hidden = B("Include dotfiles", { default = false }),
    },
    args = function(a)
      if a.pattern then
        local match, gmsg, gcode = P.glob(a.pattern)
        if not match then return nil, "pattern: " .. gmsg, gcode end
      end
      return { path = a.path or ".", recursive = a.recursive == true, include_hidden = a.include_hidden == true }
    end,
    result = function(r, a, _, na)
      local match, entries = a.pattern and P.glob(a.pattern), arr()
      for _, x in ipairs(r.entries) do
        if not match or match:match(x.name) then
          entries[#entries + 1] = { name = x.name, path = x.path, type = TYPES[x.type] or "other", size_bytes = x.size }
        end
      end
      return { path = na.path, entries = entries, count = #entries, truncated = r.truncated == true }
    end },
  { name = "grep", native = "grep", required = { "pattern" }, side_effects = NONE,
    description = "Search file contents for a regex: {matches: [{file, line, text}], count}. include filters files by "
      .. "glob (e.g. *.py); recursive = false searches only the directory's own files; binary files are skipped.",
    schema = {
      pattern = S("Regex pattern"), path = S("File or directory to search", { default = "." }),
      include = S("Glob filter (e.g. \"*.py\")"), recursive = B("Search subdirectories", { default = true }),
      max_results = I("Maximum matches", { default = 100 }),
      case_sensitive = B("Case-sensitive matching", { default = true }),
    },
    args = function(a)
      local max, e, c = max_results(a)
      if not max then return nil, e, c end
      return { pattern = a.pattern, path = a.path or ".", ignore_case = a.case_sensitive == false,
        include = a.include and { a.include } or nil, exclude = a.recursive == false and { "*/**" } or nil, max_results = max }
    end,
    result = function(r)
      local matches = arr()
      for i, m in ipairs(r.matches) do matches[i] = { file = m.path, line = m.line, text = m.text } end
      return { matches = matches, count = #matches, truncated = r.truncated or nil }
    end },
  { name = "find", native = "glob", required = { "pattern" }, side_effects = NONE,
    description = "Find files by glob pattern below path: a pattern without \"/\" (e.g. *.py) matches at any depth. "
      .. "type \"file\" or \"dir\" narrows the kind. Returns {matches: [path], count, truncated}.",
    schema = {
      pattern = S("Glob pattern (e.g. \"*.py\")"), path = S("Root directory", { default = "." }),
      type = S("\"file\" or \"dir\""), max_results = I("Maximum results", { default = 100 }),
    },
    args = function(a)
      if a.type ~= nil and a.type ~= "file" and a.type ~= "dir" then
        return nil, "type must be \"file\" or \"dir\"", "INVALID_ARGUMENT"
      end
      local max, e, c = max_results(a)
      if not max then return nil, e, c end
      return { pattern = a.pattern:find("/", 1, true) and a.pattern or "**/" .. a.pattern, path = a.path or ".",
        type = a.type or "any", include_hidden = true, respect_ignore = false, max_results = max }
    end,
    result = function(r)
      local matches = arr()
      for i, x in ipairs(r.entries) do matches[i] = x.path end
      return { matches = matches, count = #matches, truncated = r.truncated == true }
    end },
  { name = "mv", kind = "edit", native = "move", required = { "source", "destination" }, side_effects = WRITES,
    annotations = P.annotations(false, false, false), schema = TRANSFER, args = transfer("move"),
    description = "Move or rename a file or directory. An existing destination is refused unless overwrite is true.",
    result = function(_, a) return { path = a.destination, ok = true, source = a.source, destination = a.destination } end },
  { name = "cp", kind = "edit", native = "copy", required = { "source", "destination" }, side_effects = WRITES,
    annotations = P.annotations(false, false, true), schema = TRANSFER, args = transfer("copy"),
    description = "Copy a file or a directory (with its contents). An existing destination is refused unless overwrite is true.",
    result = function(r, a)
      return { path = a.destination, ok = true, source = a.source, destination = a.destination, bytes = r.bytes,
        content_hash = r.content_hash }
    end },
  { name = "rm", kind = "delete", handler = rm, required = { "path" }, side_effects = { "filesystem_delete" },
    description = "Delete a file or directory. Irreversible. recursive: true is required for directories.",
    schema = { path = S("Path to delete"), recursive = B("Required for directories", { default = false }) } },
  { name = "mkdir", kind = "create", native = "mkdir", required = { "path" }, side_effects = WRITES,
    description = "Create a directory and its parent directories; an existing directory is fine.",
    schema = { path = S("Directory path") },
    args = function(a) return { path = a.path, parents = true } end,
    result = function(r, a) return { path = a.path, ok = true, created = r.created } end },
  { name = "file_stat", native = "stat", required = { "path" }, side_effects = NONE, args = path_of,
    description = "Get file or directory metadata: {path, name, type, size_bytes, modified, created, permissions, is_symlink} "
      .. "(times as epoch seconds, permissions like \"0o644\"). A symlink is described itself.",
    schema = { path = S("Path to inspect") },
    result = function(r, a)
      local t = P.epoch(r.mtime)
      return {
        path = a.path, name = r.name, type = TYPES[r.type] or "other", size_bytes = r.size,
        modified = t and t + 0.0, created = t and t + 0.0,
        permissions = "0o" .. tostring(r.mode or ""):gsub("^0+(%d%d%d)$", "%1"), is_symlink = r.is_symlink == true,
      }
    end },
}

return {
  name = "agent_module",
  description = "The seed \"filesystem\" module v2.0.0: read (numbered lines), write, edit (count), insert, ls, grep, find, mv, cp, rm, mkdir, file_stat",
  path_style = "workspace",
  tools = P.tools({ need = "missing required parameter '%s'", output_schema = { type = "object" }, output = P.json_output(),
    errors = failed }, tools),
}
