-- agent_module: the seed "filesystem" module v2.0.0 (read, write, edit,
-- insert, ls, grep, find, mv, cp, rm, mkdir, file_stat) with its
-- parameters, result objects, permissions and risk, over the native tools.
-- Line numbers are `{n:>W}\t{line}`, W the digit count of the file's line
-- count (the separator is burrow's reading of the published example).
-- Decisions and deviations are in docs/packs.md.

local P = require "burrow.pack"
local MAX_INTEGER = require("burrow.schema").MAX_INTEGER -- numbers past it: INVALID_ARGUMENT
local json = require("burrow.core").json


-- The module's words for a containment failure; burrow's otherwise.
local function fail(msg, code, path, det)
  if code == "OUTSIDE_ROOT" or code == "ELOOP" then
    return nil, ("Path '%s' is outside allowed paths"):format(det and det.path or path), code
  end
  return nil, msg, code
end

local function render(r) return json.encode(r), r end
local function arr(t) return setmetatable(t or {}, json.array_mt) end

local function digits(n) return #tostring(math.max(n, 1)) end

-- Native "N\tline\n" rows renumbered right-aligned to width w.
local function pad_rows(text, w)
  return (("\n" .. text):gsub("\n(%d+)\t", function(n) return "\n" .. (" "):rep(w - #n) .. n .. "\t" end):sub(2))
end

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

local tools = {}

tools[#tools + 1] = {
  name = "read",
  description = "Read a file with line numbers (`N\\tline`, numbers right-aligned). Supports partial reads with "
    .. "start_line/end_line (1-indexed, inclusive). Returns {path, content, total_lines, start_line, end_line, size_bytes}; "
    .. "a read cut by the size cap has truncated: true and next_start_line.",
  schema = {
    path = { type = "string", description = "Path to the file" },
    start_line = { type = "integer", description = "First line (1-indexed)", default = 1 },
    end_line = { type = "integer", description = "Last line (1-indexed); default: the last line" },
    encoding = { type = "string", description = "Text encoding", default = "utf-8" },
  },
  side_effects = {},
  required = { "path" },
  handler = function(ctx, a)
    local ok, e, c = check_encoding(a)
    if not ok then return nil, e, c end
    local first = a.start_line or 1
    if math.type(first) ~= "integer" or first < 1 then
      return nil, "start_line must be an integer >= 1", "INVALID_ARGUMENT"
    end
    if a.end_line ~= nil and (math.type(a.end_line) ~= "integer" or a.end_line < first) then
      return nil, "end_line must be an integer >= start_line", "INVALID_ARGUMENT"
    end
    local args = { path = a.path, offset = first }
    args.limit = a.end_line and (a.end_line - first + 1) or MAX_INTEGER
    local r, msg, code, det = ctx:call("read_file", args)
    if not r then
      if code == "INVALID_ARGUMENT" and det and det.argument == "offset" then
        return nil, ("start_line %d is past the end of %s"):format(first, a.path), code
      end
      return fail(msg, code, a.path, det)
    end
    if r.encoding ~= "text" then
      return nil, ("%s is not a text file"):format(a.path), "BINARY"
    end
    local total = r.total_lines or 0
    if first > math.max(total, 1) then
      return nil, ("start_line %d is past the end of %s (%d lines)"):format(first, a.path, total), "INVALID_ARGUMENT"
    end
    local res = {
      path = a.path,
      content = pad_rows(r.content or "", digits(total)),
      total_lines = total,
      start_line = r.start_line or first,
      end_line = r.end_line or math.min(total, a.end_line or total),
      size_bytes = r.size,
    }
    if r.truncated then res.truncated, res.next_start_line = true, r.next_offset end
    return res
  end,
}

tools[#tools + 1] = {
  name = "write",
  description = "Create or overwrite a file (atomically). Parent directories must exist unless create_dirs is true.",
  schema = {
    path = { type = "string", description = "Path to write to" },
    content = { type = "string", description = "Text content" },
    create_dirs = { type = "boolean", description = "Create parent directories", default = false },
    encoding = { type = "string", description = "Text encoding", default = "utf-8" },
  },
  kind = "write",
  side_effects = { "filesystem_write" },
  required = { "path", "content" },
  handler = function(ctx, a)
    local ok, e, c = check_encoding(a)
    if not ok then return nil, e, c end
    local r, msg, code, det = ctx:call("write_file", { path = a.path, content = a.content, create_dirs = a.create_dirs == true })
    if not r then return fail(msg, code, a.path, det) end
    return { path = a.path, ok = true, bytes = #a.content, content_hash = r.content_hash }
  end,
}

tools[#tools + 1] = {
  name = "edit",
  description = "Replace a specific text block (old_string -> new_string). count = 1 (default) needs exactly one "
    .. "occurrence, count = k exactly k, count = 0 replaces all (at least one). Returns {path, replacements, preview} "
    .. "with the changed lines numbered.",
  schema = {
    path = { type = "string", description = "Path to the file" },
    old_string = { type = "string", description = "Exact text to find" },
    new_string = { type = "string", description = "Replacement text" },
    count = { type = "integer", description = "Occurrences to replace (0 = all)", default = 1 },
  },
  kind = "edit",
  side_effects = { "filesystem_write" },
  required = { "path", "old_string", "new_string" },
  handler = function(ctx, a)
    local count = a.count or 1
    if math.type(count) ~= "integer" or count < 0 then return nil, "count must be an integer >= 0", "INVALID_ARGUMENT" end
    local args = { path = a.path, old_text = a.old_string, new_text = a.new_string }
    if count ~= 1 then
      args.replace_all = true
      if count > 1 then
        -- exactly `count` occurrences: counted on a dry run, written only
        -- if the file is still the one counted
        args.dry_run = true
        local d, msg, code, det = ctx:call("edit_file", args)
        if not d then return fail(msg, code, a.path, det) end
        if d.replacements ~= count then
          local lines = {}
          for _, x in ipairs(d.edits or {}) do lines[#lines + 1] = tostring(x.line) end
          return nil, ("old_string occurs %d times in %s, not %d (first on line %s); give count=%d or more context")
            :format(d.replacements, a.path, count, table.concat(lines, ", "), d.replacements), "AMBIGUOUS_TEXT"
        end
        args.dry_run, args.expected_hash = nil, d.previous_content_hash
      end
    end
    local r, msg, code, det = ctx:call("edit_file", args)
    if not r then return fail(msg, code, a.path, det) end
    return { path = a.path, replacements = r.replacements, preview = preview_of(r.diff), content_hash = r.content_hash }
  end,
}

tools[#tools + 1] = {
  name = "insert",
  description = "Insert text before a line (1-indexed); line = total lines + 1 appends.",
  schema = {
    path = { type = "string", description = "Path to the file" },
    line = { type = "integer", description = "Line number to insert before (1-indexed)" },
    content = { type = "string", description = "Text to insert" },
  },
  annotations = P.annotations(false, false, false),
  permissions = { "fs.read", "fs.write" },
  risk = "medium",
  side_effects = { "filesystem_write" },
  required = { "path", "line", "content" },
  handler = function(ctx, a)
    if math.type(a.line) ~= "integer" or a.line < 1 then return nil, "line must be an integer >= 1", "INVALID_ARGUMENT" end
    local r, msg, code, det = ctx:call("insert_lines", { path = a.path, line = a.line, content = a.content })
    if not r then return fail(msg, code, a.path, det) end
    return { path = a.path, ok = true, line = a.line, lines_inserted = r.lines_inserted, total_lines = r.total_lines,
      content_hash = r.content_hash }
  end,
}

tools[#tools + 1] = {
  name = "ls",
  description = "List directory contents with type and size: {path, entries: [{name, path, type, size_bytes}], count, "
    .. "truncated}. recursive descends; pattern filters names by glob (e.g. *.py); dotfiles only with include_hidden.",
  schema = {
    path = { type = "string", description = "Directory to list", default = "." },
    recursive = { type = "boolean", description = "Recurse into subdirectories", default = false },
    pattern = { type = "string", description = "Glob filter (e.g. \"*.py\")" },
    include_hidden = { type = "boolean", description = "Include dotfiles", default = false },
  },
  permissions = { "fs.list" },
  side_effects = {},
  handler = function(ctx, a)
    local path = a.path or "."
    local match, gmsg, gcode
    if a.pattern then
      match, gmsg, gcode = P.glob(a.pattern)
      if not match then return fail("pattern: " .. gmsg, gcode, path) end
    end
    local r, msg, code, det = ctx:call("list_dir", { path = path, recursive = a.recursive == true,
      include_hidden = a.include_hidden == true })
    if not r then return fail(msg, code, path, det) end
    local entries = arr()
    for _, x in ipairs(r.entries) do
      if not match or match:match(x.name) then
        entries[#entries + 1] = { name = x.name, path = x.path, type = TYPES[x.type] or "other", size_bytes = x.size }
      end
    end
    return { path = path, entries = entries, count = #entries, truncated = r.truncated == true }
  end,
}

tools[#tools + 1] = {
  name = "grep",
  description = "Search file contents for a regex: {matches: [{file, line, text}], count}. include filters files by "
    .. "glob (e.g. *.py); recursive = false searches only the directory's own files; binary files are skipped.",
  schema = {
    pattern = { type = "string", description = "Regex pattern" },
    path = { type = "string", description = "File or directory to search", default = "." },
    include = { type = "string", description = "Glob filter (e.g. \"*.py\")" },
    recursive = { type = "boolean", description = "Search subdirectories", default = true },
    max_results = { type = "integer", description = "Maximum matches", default = 100 },
    case_sensitive = { type = "boolean", description = "Case-sensitive matching", default = true },
  },
  side_effects = {},
  required = { "pattern" },
  handler = function(ctx, a)
    local max = a.max_results or 100
    if math.type(max) ~= "integer" or max < 1 then return nil, "max_results must be an integer >= 1", "INVALID_ARGUMENT" end
    local path = a.path or "."
    local r, msg, code, det = ctx:call("grep", {
      pattern = a.pattern, path = path, ignore_case = a.case_sensitive == false,
      include = a.include and { a.include } or nil,
      exclude = a.recursive == false and { "*/**" } or nil,
      max_results = max,
    })
    if not r then return fail(msg, code, path, det) end
    local matches = arr()
    for i, m in ipairs(r.matches) do matches[i] = { file = m.path, line = m.line, text = m.text } end
    local res = { matches = matches, count = #matches }
    if r.truncated then res.truncated = true end
    return res
  end,
}

tools[#tools + 1] = {
  name = "find",
  description = "Find files by glob pattern below path: a pattern without \"/\" (e.g. *.py) matches at any depth. "
    .. "type \"file\" or \"dir\" narrows the kind. Returns {matches: [path], count, truncated}.",
  schema = {
    pattern = { type = "string", description = "Glob pattern (e.g. \"*.py\")" },
    path = { type = "string", description = "Root directory", default = "." },
    type = { type = "string", description = "\"file\" or \"dir\"" },
    max_results = { type = "integer", description = "Maximum results", default = 100 },
  },
  side_effects = {},
  required = { "pattern" },
  handler = function(ctx, a)
    if a.type ~= nil and a.type ~= "file" and a.type ~= "dir" then
      return nil, "type must be \"file\" or \"dir\"", "INVALID_ARGUMENT"
    end
    local max = a.max_results or 100
    if math.type(max) ~= "integer" or max < 1 then return nil, "max_results must be an integer >= 1", "INVALID_ARGUMENT" end
    local path = a.path or "."
    local pattern = a.pattern:find("/", 1, true) and a.pattern or "**/" .. a.pattern
    local r, msg, code, det = ctx:call("glob", { pattern = pattern, path = path, type = a.type or "any",
      include_hidden = true, respect_ignore = false, max_results = max })
    if not r then return fail(msg, code, path, det) end
    local matches = arr()
    for i, x in ipairs(r.entries) do matches[i] = x.path end
    return { matches = matches, count = #matches, truncated = r.truncated == true }
  end,
}

local function transfer(native, verb)
  return function(ctx, a)
    local args = { source = a.source, destination = a.destination, overwrite = a.overwrite == true }
    if native == "copy" then args.recursive = true end
    local r, msg, code, det = ctx:call(native, args)
    if not r then
      if code == "OUTSIDE_ROOT" or code == "ELOOP" then
        return fail(msg, code, a.source, det)
      end
      return nil, msg, code
    end
    local res = { path = a.destination, ok = true, source = a.source, destination = a.destination }
    if native == "copy" then res.bytes, res.content_hash = r.bytes, r.content_hash end
    return res
  end
end

local function mv_cp(name, native, desc)
  return {
    name = name,
    description = desc,
    schema = {
      source = { type = "string", description = "Source path" },
      destination = { type = "string", description = "Destination path" },
      overwrite = { type = "boolean", description = "Overwrite if exists", default = false },
    },
    kind = "edit", annotations = P.annotations(false, false, false),
    side_effects = { "filesystem_write" },
    required = { "source", "destination" },
    handler = transfer(native),
  }
end

tools[#tools + 1] = mv_cp("mv", "move", "Move or rename a file or directory. An existing destination is refused unless overwrite is true.")
tools[#tools + 1] = mv_cp("cp", "copy", "Copy a file or a directory (with its contents). An existing destination is refused unless overwrite is true.")
tools[#tools].annotations = P.annotations(false, false, true)

tools[#tools + 1] = {
  name = "rm",
  description = "Delete a file or directory. Irreversible. recursive: true is required for directories.",
  schema = {
    path = { type = "string", description = "Path to delete" },
    recursive = { type = "boolean", description = "Required for directories", default = false },
  },
  kind = "delete",
  side_effects = { "filesystem_delete" },
  required = { "path" },
  handler = function(ctx, a)
    if a.recursive ~= true then
      local s, msg, code, det = ctx:call("stat", { path = a.path })
      if not s then return fail(msg, code, a.path, det) end
      if s.type == "dir" then
        return nil, ("'%s' is a directory; pass recursive=true to delete it"):format(a.path), "EISDIR"
      end
    end
    local r, msg, code, det = ctx:call("remove", { path = a.path, recursive = a.recursive == true })
    if not r then return fail(msg, code, a.path, det) end
    return { path = a.path, ok = true }
  end,
}

tools[#tools + 1] = {
  name = "mkdir",
  description = "Create a directory and its parent directories; an existing directory is fine.",
  schema = { path = { type = "string", description = "Directory path" } },
  kind = "create",
  side_effects = { "filesystem_write" },
  required = { "path" },
  handler = function(ctx, a)
    local r, msg, code, det = ctx:call("mkdir", { path = a.path, parents = true })
    if not r then return fail(msg, code, a.path, det) end
    return { path = a.path, ok = true, created = r.created }
  end,
}

tools[#tools + 1] = {
  name = "file_stat",
  description = "Get file or directory metadata: {path, name, type, size_bytes, modified, created, permissions, is_symlink} "
    .. "(times as epoch seconds, permissions like \"0o644\"). A symlink is described itself.",
  schema = { path = { type = "string", description = "Path to inspect" } },
  side_effects = {},
  required = { "path" },
  handler = function(ctx, a)
    local r, msg, code, det = ctx:call("stat", { path = a.path })
    if not r then return fail(msg, code, a.path, det) end
    local t = P.epoch(r.mtime)
    return {
      path = a.path, name = r.name, type = TYPES[r.type] or "other", size_bytes = r.size,
      modified = t and t + 0.0, created = t and t + 0.0,
      permissions = "0o" .. tostring(r.mode or ""):gsub("^0+(%d%d%d)$", "%1"),
      is_symlink = r.is_symlink == true,
    }
  end,
}

return {
  name = "agent_module",
  description = "The seed \"filesystem\" module v2.0.0: read (numbered lines), write, edit (count), insert, ls, grep, find, mv, cp, rm, mkdir, file_stat",
  path_style = "workspace",
  tools = P.tools({ need = "missing required parameter '%s'", output_schema = { type = "object" }, output = render }, tools),
}
