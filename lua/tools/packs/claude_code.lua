-- claude_code: Claude Code's built-in file tools (Read, Write, Edit,
-- MultiEdit, Glob, Grep, LS) with their names, schemas, texts and
-- <tool_use_error> strings, over the native tools (ctx:call). Read keeps a
-- per-session record (path -> content_hash) that Write, Edit and
-- MultiEdit consult: a file must be read before it is changed, and a file
-- changed since the read is refused. Deviations are in docs/packs.md.

local core = require "burrow.core"
local json = core.json
local P = require "burrow.pack"
local cost = require "burrow.toolkit.cost" -- the token estimate read_file and stat give
local MAX_INTEGER = require("burrow.toolkit.schema").MAX_INTEGER -- numbers past it: INVALID_ARGUMENT

-- Read state, per session (one MCP connection, never shared by the
-- sessions of a tenant): key -> {hash, newline, partial}.
local function state(ctx)
  return ctx:state("claude_code")
end

-- The record's key: the root and the relative path the resolver maps to,
-- so "/w/a.txt" and "/w/./a.txt" are one file.
local function key_of(ctx, path)
  local info = ctx:locate(path)
  if not info then return nil end
  return info.root .. ":" .. info.rel
end

local function remember(ctx, path, hash, newline, partial)
  local k = key_of(ctx, path)
  if k then state(ctx)[k] = { hash = hash, newline = newline, partial = partial } end
end

local function recalled(ctx, path)
  local k = key_of(ctx, path)
  return k and state(ctx)[k]
end

-- burrow's failure in the dialect's wrapper, the code kept; a native
-- failure in its words (a missing file), else burrow's message in it.
local function refuse(msg, code) return nil, "<tool_use_error>" .. msg .. "</tool_use_error>", code end
local failed = P.words({ ENOENT = function() return "<tool_use_error>File does not exist.</tool_use_error>" end },
  function(msg, code) return refuse(P.detail(msg), code) end)

local NOT_READ = "File has not been read yet. Read it first before writing to it."
local STALE = "File has been modified since read, either by the user or by a linter. Read it again before attempting to write it."

local function absolute(path)
  if type(path) ~= "string" or path:sub(1, 1) ~= "/" then
    return refuse(("file_path must be an absolute path, not a relative one: %s"):format(tostring(path)), "INVALID_ARGUMENT")
  end
  return true
end

local S, N, B = P.string, P.number, P.boolean
local closed = P.closed

---------------------------------------------------------------------------
-- Read

-- The rows of each line_prefix style: a line's number, then its text.
local PREFIX = { compact = "%d\t%s", cat = "%6d\t%s", arrow = "%6d\226\134\146%s" }

-- The token budget counts the page as compact rows ("N\tline\n", the
-- native numbering) whatever the style: their bytes in all, and how many
-- whole rows from the first fit in max bytes.
local function measure(r, max)
  local size, fit = 0, nil
  for i, line in ipairs(r.lines) do
    size = size + #tostring(r.start_line + i - 1) + #line + 2
    if not fit and size > max then fit = i - 1 end
  end
  return size, fit or #r.lines
end

local function read_tool(o)
  local max_tokens = o.max_tokens or 25000
  local style = o.line_prefix or "compact"
  return {
    name = "Read",
    title = "Read",
    description = ([[Reads a file from the local filesystem. You can access any file directly by using this tool.
Usage:
- The file_path parameter must be an absolute path, not a relative path
- By default, it reads up to 2000 lines starting from the beginning of the file
- You can optionally specify a line offset and limit (especially handy for long files), but it's recommended to read the whole file by not providing these parameters
- Any lines longer than 2000 characters will be truncated
- Results are returned using cat -n format, with line numbers starting at 1
- This tool can read images (PNG, JPEG, GIF, WebP); they are presented visually
- This tool can only read files, not directories. To list a directory, use LS or Glob
- A file over %d tokens is shown in part; read the rest with offset and limit
- You must Read a file before you Edit or Write it]]):format(max_tokens),
    schema = closed({
      file_path = S("The absolute path to the file to read"),
      offset = N("The line number to start reading from. Only provide if the file is too large to read at once"),
      limit = N("The number of lines to read. Only provide if the file is too large to read at once."),
      pages = S("Page range for PDF files (e.g. \"1-5\"). Not supported by burrow."),
    }, { "file_path" }),
    handler = function(ctx, a)
      local ok, m, c = absolute(a.file_path)
      if not ok then return nil, m, c end
      local st = ctx:call("stat", { path = a.file_path })
      if st and st.type == "dir" then
        return refuse(("EISDIR: %s is a directory. This tool can only read files, not directories. Use LS or Glob to list a directory."):format(a.file_path), "EISDIR")
      end
      for _, k in ipairs { "offset", "limit" } do
        local v = a[k]
        if v ~= nil and (v % 1 ~= 0 or v < (k == "offset" and 0 or 1)) then
          return refuse(("%s must be a positive integer"):format(k), "INVALID_ARGUMENT")
        end
        if v ~= nil and v > MAX_INTEGER then
          return refuse(("%s must be at most %d"):format(k, MAX_INTEGER), "INVALID_ARGUMENT")
        end
      end
      local offset = a.offset and math.max(1, math.tointeger(a.offset)) or nil
      local limit = a.limit and math.tointeger(a.limit) or nil
      local r, msg, code = ctx:call("read_file", { path = a.file_path, offset = offset, limit = limit })
      if not r then return failed(msg, code) end
      if r.encoding == "image" then
        remember(ctx, a.file_path, r.content_hash, nil, false)
        return { content = "", image = r.content, mime_type = r.mime_type, path = a.file_path }
      end
      if r.notebook then -- cells and their outputs (burrow.toolkit.notebook), images as image blocks
        remember(ctx, a.file_path, r.content_hash, nil, r.truncated)
        return { content = r.content, images = r.images, path = a.file_path }
      end
      local partial = (offset and offset > 1) or r.next_offset ~= nil
      remember(ctx, a.file_path, r.content_hash, r.newline, partial)
      if r.total_lines == 0 then
        return ("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>")
      end
      if not r.start_line then
        return (("<system-reminder>Warning: the file exists but is shorter than the provided offset (%d). The file has %d lines.</system-reminder>")
          :format(offset, r.total_lines))
      end
      local last, budget = r.end_line, max_tokens * 4
      local size, shown = measure(r, budget)
      local note
      if size > budget then
        local tokens = cost.tokens(size)
        if a.offset or a.limit then
          return refuse(("File content (%d tokens) exceeds maximum allowed tokens (%d). Please use offset and limit parameters to read specific portions of the file, or use the GrepTool to search for specific content."):format(tokens, max_tokens), "TOO_LARGE")
        end
        last = r.start_line + shown - 1
        note = ("[PARTIAL view: the file is about %d tokens, over the %d token limit; showing lines %d-%d of %d. Read on with offset=%d.]")
          :format(cost.tokens(r.size), max_tokens, r.start_line, last, r.total_lines, last + 1)
      elseif r.next_offset and (r.truncated or not a.limit) then
        note = ("[Showing lines %d-%d of %d%s. Read on with offset=%d.]"):format(r.start_line, last, r.total_lines,
          r.truncated and " (result size cap)" or "", r.next_offset)
      end
      local text = P.untrusted(ctx, P.page_text(r, PREFIX[style], shown), a.file_path, "read_file"):gsub("\n$", "")
      if note then text = text .. "\n\n" .. note end
      return text
    end,
    render = function(r)
      if r.image then
        return { { type = "image", data = r.image, mimeType = r.mime_type } }, { content = "" }
      end
      if r.images then
        local blocks = { r.content }
        for _, im in ipairs(r.images) do blocks[#blocks + 1] = im end
        return blocks, { content = r.content }
      end
      return r.content, { content = r.content }
    end,
  }
end

---------------------------------------------------------------------------
-- Write

-- Content for a file whose read showed CRLF: bare LFs become CRLF.
local function keep_crlf(content, rec)
  if rec and rec.newline == "crlf" then
    return (content:gsub("\r?\n", "\r\n"))
  end
  return content
end

local function write_tool(o)
  return {
    name = "Write", title = "Write", kind = "write", native = "write_file",
    description = [[Writes a file to the local filesystem.
Usage:
- This tool will overwrite the existing file if there is one at the provided path.
- If this is an existing file, you MUST use the Read tool first to read the file's contents. This tool will fail if you did not read the file first.
- ALWAYS prefer editing existing files in the codebase. NEVER write new files unless explicitly required.
- The file_path parameter must be an absolute path.]],
    schema = closed({
      file_path = S("The absolute path to the file to write (must be absolute, not relative)"),
      content = S("The content to write to the file"),
    }, { "file_path", "content" }),
    -- compare-and-set on the hash read, "absent" for a file not read
    args = function(a, ctx)
      local ok, m, c = absolute(a.file_path)
      if not ok then return nil, m, c end
      local rec = recalled(ctx, a.file_path)
      local expected = rec and rec.hash or "absent"
      if o.write_without_read and not rec then expected = nil end
      return { path = a.file_path, content = keep_crlf(a.content, rec), expected_hash = expected }
    end,
    errors = function(msg, code, _, _, _, na)
      if code == "HASH_MISMATCH" or code == "EEXIST" then
        local read = na.expected_hash ~= nil and na.expected_hash ~= "absent"
        return refuse(read and STALE or NOT_READ, read and code or "NOT_READ")
      end
      return failed(msg, code)
    end,
    result = function(r, a, ctx)
      local rec = recalled(ctx, a.file_path)
      remember(ctx, a.file_path, r.content_hash, rec and rec.newline, false)
      if r.created then return "File created successfully at: " .. a.file_path end
      return ("The file %s has been updated successfully."):format(a.file_path)
    end,
  }
end

---------------------------------------------------------------------------
-- Edit and MultiEdit, over the native edit_file

local function ambiguous(n, old)
  return ("Found %d matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: %s"):format(n, old)
end

local function not_found(old) return "String to replace not found in file.\nString: " .. old end

-- The native failure of edit i in the dialect's words.
local function edit_words(msg, code, edits, det)
  det = det or {}
  local i = det.edit or 1
  local e = edits[i] or edits[1]
  if code == "NOT_FOUND_TEXT" then return not_found(e.old_text), i end
  if code == "AMBIGUOUS_TEXT" and det.reindent_line then
    return P.detail(msg), i -- found with indentation ignored, but placing new_string would be a guess
  end
  if code == "AMBIGUOUS_TEXT" then return ambiguous(det.matches or 2, e.old_text), i end
  if code == "ENOENT" then return "File does not exist.", i end
  return P.detail(msg), i
end

-- Run native edits; a quote-only mismatch is retried on the loose ladder,
-- accepted only when every edit matched at most at the "unicode" level.
local function run_edits(ctx, path, edits, expected)
  local args = { path = path, edits = edits, expected_hash = expected }
  local r, msg, code, det = ctx:call("edit_file", args)
  if r or code ~= "NOT_FOUND_TEXT" then return r, msg, code, det end
  local dry = ctx:call("edit_file", { path = path, edits = edits, expected_hash = expected, match = "loose", dry_run = true })
  if not dry then return nil, msg, code, det end
  for _, e in ipairs(dry.edits) do
    if e.level ~= "exact" and e.level ~= "unicode" then return nil, msg, code, det end
  end
  return ctx:call("edit_file", { path = path, edits = edits, expected_hash = dry.previous_content_hash, match = "loose" })
end

-- Shared by Edit and MultiEdit: edits = {{old_text, new_text, replace_all}}.
local function apply(ctx, path, edits, multi)
  local rec = recalled(ctx, path)
  local st, _, scode = ctx:call("stat", { path = path })
  if not st and scode == "ENOENT" then
    if edits[1].old_text ~= "" then return refuse("File does not exist.", "ENOENT") end
    local w, wmsg, wcode = ctx:call("write_file", { path = path, content = edits[1].new_text, expected_hash = "absent" })
    if not w then return failed(wmsg, wcode) end
    if #edits > 1 then
      local rest = { table.unpack(edits, 2) }
      local r, msg, code, det = run_edits(ctx, path, rest, w.content_hash)
      if not r then
        ctx:call("remove", { path = path, expected_hash = w.content_hash }) -- all or nothing
        local words, i = edit_words(msg, code, rest, det)
        return refuse(("Edit %d: %s"):format(i + 1, words), code)
      end
      w = r
    end
    remember(ctx, path, w.content_hash, nil, false)
    return (("The file %s has been updated successfully."):format(path))
  end
  if st and st.type == "dir" then return refuse(("EISDIR: %s is a directory"):format(path), "EISDIR") end
  if not rec then return refuse(NOT_READ, "NOT_READ") end
  for i, e in ipairs(edits) do
    if e.old_text == "" then
      local words = "Cannot create new file - file already exists."
      return refuse(multi and ("Edit %d: %s"):format(i, words) or words, "EEXIST")
    end
  end
  -- Edit proceeds on a changed file when old_string still matches once
  -- (CC 2.1.208); MultiEdit and replace_all need the file as read.
  local lenient = not multi and not edits[1].replace_all
  local r, msg, code, det = run_edits(ctx, path, edits, rec.hash)
  if not r and code == "HASH_MISMATCH" then
    if not lenient then return refuse(STALE, code) end
    r, msg, code = run_edits(ctx, path, edits, nil)
    if not r then return refuse(STALE, "HASH_MISMATCH") end
  end
  if not r then
    local words, i = edit_words(msg, code, edits, det)
    return refuse(multi and ("Edit %d: %s"):format(i, words) or words, code)
  end
  remember(ctx, path, r.content_hash, rec.newline, rec.partial)
  return (("The file %s has been updated successfully."):format(path))
end

local function edit_tool()
  return {
    name = "Edit",
    title = "Edit",
    description = [[Performs exact string replacements in files.
Usage:
- You must use your Read tool at least once in the conversation before editing. This tool will error if you attempt an edit without reading the file.
- When editing text from Read tool output, ensure you preserve the exact indentation (tabs/spaces) as it appears AFTER the line number prefix. Never include any part of the line number prefix in the old_string or new_string.
- The edit will FAIL if old_string is not unique in the file. Either provide a larger string with more surrounding context to make it unique or use replace_all to change every instance of old_string.
- Use replace_all for replacing and renaming strings across the file.
- An empty old_string on a file that does not exist creates it with new_string.]],
    schema = closed({
      file_path = S("The absolute path to the file to modify"), old_string = S("The text to replace"),
      new_string = S("The text to replace it with (must be different from old_string)"),
      replace_all = B("Replace all occurences of old_string (default false)", { default = false }),
    }, { "file_path", "old_string", "new_string" }),
    kind = "edit", permissions = { "fs.write" },
    handler = function(ctx, a)
      local ok, m, c = absolute(a.file_path)
      if not ok then return nil, m, c end
      if a.old_string == a.new_string then
        return refuse("No changes to make: old_string and new_string are exactly the same.", "INVALID_ARGUMENT")
      end
      return apply(ctx, a.file_path, { { old_text = a.old_string, new_text = a.new_string, replace_all = a.replace_all or nil } }, false)
    end,
  }
end

local function multiedit_tool()
  return {
    name = "MultiEdit",
    title = "MultiEdit",
    description = [[Makes multiple edits to a single file in one operation, each an exact string replacement as in the Edit tool. The edits are atomic: either all succeed or none are applied. Read the file first. burrow matches every edit against the file as read (edits must not overlap), rather than against the previous edit's output.]],
    schema = closed({
      file_path = S("The absolute path to the file to modify"),
      edits = P.array(closed({
        old_string = S("The text to replace"), new_string = S("The text to replace it with"),
        replace_all = B("Replace all occurences of old_string (default false).", { default = false }),
      }, { "old_string", "new_string" }), "Array of edit operations to perform sequentially on the file", { minItems = 1 }),
    }, { "file_path", "edits" }),
    kind = "edit", permissions = { "fs.write" },
    handler = function(ctx, a)
      local ok, m, c = absolute(a.file_path)
      if not ok then return nil, m, c end
      local edits = {}
      for i, e in ipairs(a.edits) do
        if e.old_string == e.new_string then
          return refuse(("Edit %d: No changes to make: old_string and new_string are exactly the same."):format(i), "INVALID_ARGUMENT")
        end
        edits[i] = { old_text = e.old_string, new_text = e.new_string, replace_all = e.replace_all or nil }
      end
      return apply(ctx, a.file_path, edits, true)
    end,
  }
end

---------------------------------------------------------------------------
-- Glob

local GLOB_MAX = 100
local VCS = { ".git", ".svn", ".hg", ".bzr", ".jj", ".sl" }

local function in_vcs(path)
  for _, v in ipairs(VCS) do
    if ("/" .. path .. "/"):find("/" .. v .. "/", 1, true) then return true end
  end
end

local function glob_tool()
  return {
    name = "Glob", title = "Glob", native = "glob", permissions = { "fs.list" },
    description = [[- Fast file pattern matching tool that works with any codebase size
- Supports glob patterns like "**/*.js" or "src/**/*.ts"
- Returns matching file paths sorted by modification time (newest first)
- Use this tool when you need to find files by name patterns
- At most 100 files are listed; narrow the pattern or path to see more]],
    schema = closed({
      pattern = S("The glob pattern to match files against"),
      path = S("The directory to search in. If not specified, the current working directory will be used. Must be a valid directory path if provided."),
    }, { "pattern" }),
    args = function(a, ctx)
      local path = a.path
      if a.pattern:sub(1, 1) ~= "/" then path = path or P.mounts(ctx)[1] end
      return { pattern = a.pattern, path = path, sort = "mtime", include_hidden = true, respect_ignore = false }
    end,
    result = function(r)
      local out = {}
      for _, e in ipairs(r.entries) do
        if not in_vcs(e.path) then out[#out + 1] = e.path end
      end
      if #out == 0 then return "No files found" end
      local more = r.truncated or #out > GLOB_MAX
      for i = #out, GLOB_MAX + 1, -1 do out[i] = nil end
      local text = table.concat(out, "\n")
      if more then text = text .. "\n(Results are truncated. Consider using a more specific path or pattern.)" end
      return text
    end,
  }
end

---------------------------------------------------------------------------
-- Grep

-- ripgrep --type names: globs (the common ones).
local TYPES = {
  c = { "*.c", "*.h" }, cpp = { "*.cpp", "*.cc", "*.cxx", "*.hpp", "*.hh", "*.hxx", "*.h" },
  cs = { "*.cs" }, css = { "*.css" }, go = { "*.go" }, html = { "*.html", "*.htm" },
  java = { "*.java" }, js = { "*.js", "*.jsx", "*.mjs", "*.cjs" }, json = { "*.json" },
  kotlin = { "*.kt", "*.kts" }, lua = { "*.lua" }, md = { "*.md", "*.markdown" }, markdown = { "*.md", "*.markdown" },
  php = { "*.php" }, py = { "*.py", "*.pyi" }, rb = { "*.rb" }, ruby = { "*.rb" }, rust = { "*.rs" },
  sh = { "*.sh", "*.bash", "*.zsh" }, sql = { "*.sql" }, swift = { "*.swift" }, toml = { "*.toml" },
  ts = { "*.ts", "*.tsx", "*.mts", "*.cts" }, typescript = { "*.ts", "*.tsx", "*.mts", "*.cts" },
  txt = { "*.txt" }, xml = { "*.xml" }, yaml = { "*.yaml", "*.yml" }, zig = { "*.zig" },
}

local MODE = { content = "content", files_with_matches = "files", count = "count" }

-- ripgrep's content lines: overlapping context merged, "--" between groups.
local function content_lines(matches, numbers)
  local out, last_path, last_line = {}, nil, nil
  local function emit(path, n, sep, text)
    if last_path == path and last_line and n <= last_line then return end
    if last_path and (last_path ~= path or n > last_line + 1) and out.ctx then out[#out + 1] = "--" end
    out[#out + 1] = numbers and ("%s%s%d%s%s"):format(path, sep, n, sep, text) or ("%s%s%s"):format(path, sep, text)
    last_path, last_line = path, n
  end
  for _, m in ipairs(matches) do
    local before, after = m.before or {}, m.after or {}
    if #before > 0 or #after > 0 then out.ctx = true end
    local first = m.line - #before
    for i, l in ipairs(before) do emit(m.path, first + i - 1, "-", l) end
    if last_path == m.path and last_line == m.line then out[#out] = numbers and ("%s:%d:%s"):format(m.path, m.line, m.text) or ("%s:%s"):format(m.path, m.text)
    else emit(m.path, m.line, ":", m.text) end
    for i, l in ipairs(after) do emit(m.path, m.line + i, "-", l) end
  end
  out.ctx = nil
  return out
end

local function paginate(items, limit, offset)
  local out = {}
  for i = offset + 1, math.min(#items, offset + limit) do out[#out + 1] = items[i] end
  local label = {}
  if #items - offset > limit then label[#label + 1] = "limit: " .. limit end
  if offset > 0 then label[#label + 1] = "offset: " .. offset end
  return out, #label > 0 and table.concat(label, ", ") or nil
end

local function plural(n, one, many) return ("%d %s"):format(n, n == 1 and one or many) end

-- rg's arguments as the native grep's.
local function grep_args(a, ctx)
  local mode = MODE[a.output_mode or "files_with_matches"]
  if not mode then return refuse("output_mode must be content, files_with_matches or count", "INVALID_ARGUMENT") end
  for _, k in ipairs { "-A", "-B", "-C", "head_limit", "offset" } do
    if a[k] ~= nil and math.abs(a[k]) > MAX_INTEGER then
      return refuse(("%s is out of range (at most %d)"):format(k, MAX_INTEGER), "INVALID_ARGUMENT")
    end
  end
  local include
  if a.type then
    include = TYPES[a.type]
    if not include then return refuse(("unrecognized file type: %s"):format(a.type), "INVALID_ARGUMENT") end
  end
  if a.glob then
    include = {}
    for g in a.glob:gmatch("[^%s,]+") do include[#include + 1] = g end
    if a.glob:find("{", 1, true) then include = { a.glob } end
  end
  local ctxn = function(v) return v and math.max(0, math.min(100, math.tointeger(v // 1))) end
  local native = {
    pattern = a.multiline and "(?s)" .. a.pattern or a.pattern, path = a.path or P.mounts(ctx)[1],
    include = include, exclude = VCS, ignore_case = a["-i"], multiline = a.multiline, output_mode = mode,
    include_hidden = true, respect_ignore = true,
  }
  if mode == "content" then
    native.context = ctxn(a["-C"])
    native.before, native.after = ctxn(a["-B"]), ctxn(a["-A"])
  end
  return native
end

-- rg's output for the mode: paths, path:count lines or content lines,
-- paginated by head_limit and offset.
local function grep_result(r, a, _, na)
  local mode = na.output_mode
  local limit = a.head_limit and math.max(0, math.tointeger(a.head_limit // 1)) or 250
  if limit == 0 then limit = math.huge end -- 0 = unlimited
  local offset = a.offset and math.max(0, math.tointeger(a.offset // 1)) or 0
  local text, label
  if mode == "files" then
    if #r.files == 0 then return "No files found" end
    local files
    files, label = paginate(r.files, limit, offset)
    text = ("Found %s\n%s"):format(plural(#files, "file", "files"), table.concat(files, "\n"))
  elseif mode == "count" then
    if #r.counts == 0 then return "No matches found" end
    local lines = {}
    for i, c in ipairs(r.counts) do lines[i] = ("%s:%d"):format(c.path, c.count) end
    lines, label = paginate(lines, limit, offset)
    local total, nfiles = 0, #lines
    for _, l in ipairs(lines) do total = total + tonumber(l:match(":(%d+)$")) end
    text = ("%s\n\nFound %s across %s."):format(table.concat(lines, "\n"),
      plural(total, "total occurrence", "total occurrences"), plural(nfiles, "file", "files"))
  else
    if #r.matches == 0 then return "No matches found" end
    local lines = content_lines(r.matches, a["-n"] ~= false)
    lines, label = paginate(lines, limit, offset)
    text = table.concat(lines, "\n")
  end
  if label then text = text .. ("\n\n[Showing results with pagination = %s]"):format(label) end
  if r.truncated then
    text = text .. "\n\n[burrow: the search stopped at the server's result cap; narrow path, glob or pattern to see the rest]"
  end
  return text
end

local function grep_tool()
  return {
    name = "Grep", title = "Grep", native = "grep",
    description = [[A powerful search tool built on ripgrep-style regular expressions (PCRE2 in burrow)
Usage:
- Supports full regex syntax (e.g., "log.*Error", "function\s+\w+"); literal braces need escaping (interface\{\})
- Filter files with glob parameter (e.g., "*.js", "**/*.tsx") or type parameter (e.g., "js", "py", "rust")
- Output modes: "content" shows matching lines, "files_with_matches" shows only file paths (default), "count" shows match counts
- Pattern matching is line by line; use multiline: true for patterns that span lines
- head_limit limits the output like "| head -N" (default 250); offset skips the first entries]],
    schema = closed({
      pattern = S("The regular expression pattern to search for in file contents"),
      path = S("File or directory to search in. Defaults to current working directory."),
      glob = S("Glob pattern to filter files (e.g. \"*.js\", \"*.{ts,tsx}\")"),
      type = S("File type to search (rg --type), e.g. js, py, rust, go, java."),
      output_mode = S("Output mode (default files_with_matches).", { enum = { "content", "files_with_matches", "count" } }),
      ["-A"] = N("Number of lines to show after each match (content mode only)."),
      ["-B"] = N("Number of lines to show before each match (content mode only)."),
      ["-C"] = N("Number of lines to show before and after each match (content mode only)."),
      ["-n"] = B("Show line numbers in output (content mode only; default true)."),
      ["-i"] = B("Case insensitive search"),
      head_limit = N("Limit output to the first N lines/entries, like \"| head -N\" (default 250)."),
      offset = N("Skip the first N lines/entries before applying head_limit (default 0)."),
      multiline = B("Enable multiline mode where . matches newlines and patterns can span lines (default false)."),
    }, { "pattern" }),
    args = grep_args,
    result = grep_result,
  }
end

---------------------------------------------------------------------------
-- LS

local function ls_tool()
  return {
    name = "LS", title = "LS", native = "list_dir", permissions = { "fs.list" },
    description = [[Lists files and directories in a given path as an indented tree. The path parameter must be an absolute path, not a relative path. You can optionally provide an array of glob patterns to ignore with the ignore parameter. You should generally prefer the Glob and Grep tools, if you know which directories to search.]],
    schema = closed({
      path = S("The absolute path to the directory to list (must be absolute, not relative)"),
      ignore = P.strings("List of glob patterns to ignore"),
    }, { "path" }),
    args = function(a)
      if a.path:sub(1, 1) ~= "/" then
        return refuse(("path must be an absolute path, not a relative one: %s"):format(a.path), "INVALID_ARGUMENT")
      end
      return { path = a.path, recursive = true }
    end,
    result = function(r, a)
      local ignored, imsg, icode = P.globs(a.ignore, "ignore")
      if not ignored then return refuse(imsg, icode) end
      local base = (a.path:gsub("/+$", ""))
      local out = { "- " .. base .. "/" }
      local hidden = {} -- left-out directories: their contents go too
      for _, e in ipairs(r.entries) do -- in path order: a directory before its contents
        local rel = e.path:sub(#base + 2)
        local parent = rel:match("^(.*)/")
        local skip = (parent and hidden[parent]) or ignored(e.name) or ignored(rel)
        if skip and e.type == "dir" then hidden[rel] = true end
        if not skip then
          local _, depth = rel:gsub("/", "")
          out[#out + 1] = ("%s- %s%s"):format(("  "):rep(depth + 1), e.name, e.type == "dir" and "/" or "")
        end
      end
      local text = table.concat(out, "\n")
      if r.truncated then
        text = text .. ("\n\n[burrow: %d more entries not shown (max_entries); list a subdirectory to see them]"):format(r.omitted)
      end
      return text
    end,
  }
end

---------------------------------------------------------------------------
-- NotebookEdit: Claude Code's schema over the native notebook_edit (the
-- cell logic is burrow.toolkit.notebook's); the notebook must have been Read.

local function notebook_edit_tool()
  return {
    name = "NotebookEdit", title = "NotebookEdit", kind = "edit", permissions = { "fs.write" }, native = "notebook_edit",
    description = [[Completely replaces the contents of a specific cell in a Jupyter notebook (.ipynb file) with new source. Jupyter notebooks are interactive documents that combine code, text, and visualizations, commonly used for data analysis and scientific computing. The notebook_path parameter must be an absolute path, not a relative path. The cell_id is the ID of the cell to edit (as Read shows it). Use edit_mode=insert to add a new cell after the cell with cell_id (or at the beginning if cell_id is not given); cell_type is required for insert. Use edit_mode=delete to delete the cell with cell_id.]],
    schema = closed({
      notebook_path = S("The absolute path to the Jupyter notebook file to edit (must be absolute, not relative)"),
      cell_id = S("The ID of the cell to edit. When inserting a new cell, the new cell will be inserted after the cell with this ID, or at the beginning if not specified."),
      new_source = S("The new source for the cell"),
      cell_type = S("The type of the cell (code or markdown). If not specified, it defaults to the current cell type. If using edit_mode=insert, this is required.", { enum = { "code", "markdown" } }),
      edit_mode = S("The type of edit to make (replace, insert, delete). Defaults to replace.", { enum = { "replace", "insert", "delete" } }),
    }, { "notebook_path", "new_source" }),
    -- compare-and-set on the hash Read recorded
    args = function(a, ctx)
      local ok, m, c = absolute(a.notebook_path)
      if not ok then return nil, m, c end
      local mode = a.edit_mode or "replace"
      if mode ~= "insert" and not a.cell_id then return refuse("cell_id must be specified when not inserting a new cell", "INVALID_ARGUMENT") end
      if mode == "insert" and not a.cell_type then return refuse("Cell type is required when using edit_mode=insert.", "INVALID_ARGUMENT") end
      local rec = recalled(ctx, a.notebook_path)
      if not rec then return refuse(NOT_READ, "NOT_READ") end
      return { path = a.notebook_path, cell_id = a.cell_id, new_source = mode ~= "delete" and a.new_source or nil,
        cell_type = a.cell_type, edit_mode = mode, expected_hash = rec.hash }
    end,
    errors = P.words({ HASH_MISMATCH = "<tool_use_error>" .. STALE .. "</tool_use_error>" }, failed),
    result = function(r, a, ctx, na)
      remember(ctx, a.notebook_path, r.content_hash, nil, false)
      if na.edit_mode == "insert" then return ("Inserted cell %s with %s"):format(r.cell_id, a.new_source) end
      if na.edit_mode == "delete" then return ("Deleted cell %s"):format(r.cell_id) end
      return ("Updated cell %s with %s"):format(r.cell_id, a.new_source)
    end,
  }
end

local function build(o)
  if o.line_prefix ~= nil and not PREFIX[o.line_prefix] then
    error("claude_code: line_prefix must be compact, cat or arrow")
  end
  return P.tools({ output_schema = P.TEXT_SCHEMA, output = P.text_output, errors = failed },
    { read_tool(o), write_tool(o), edit_tool(), multiedit_tool(), glob_tool(), grep_tool(), ls_tool(), notebook_edit_tool() })
end

return P.pack({ name = "claude_code", path_style = "absolute", options = { "line_prefix", "max_tokens", "write_without_read" },
  description = "Claude Code's built-in file tools (Read, Write, Edit, MultiEdit, Glob, Grep, LS, NotebookEdit)" }, build)
