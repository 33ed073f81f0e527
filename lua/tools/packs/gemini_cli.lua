-- gemini_cli: the Gemini CLI's file tools (read_file, write_file, replace,
-- glob, search_file_content, list_directory, read_many_files) with its
-- parameter names and result wording, over the native tools. Deviations
-- (no auto-context in search results, no image parts in read_many_files,
-- paths shown as the agent wrote them) are in docs/packs.md.

local P = require "burrow.pack"

local S, N, LIST = P.string, P.number, P.strings
local function text(r) return r.content end

local NOT_FOUND = "File not found: %s"
local function errors(msg, code, det, a)
  local path = det and det.path or a.file_path or a.path
  if code == "ENOENT" then return nil, NOT_FOUND:format(path), code end
  if code == "EISDIR" then return nil, ("Path is a directory, not a file: %s"):format(path), code end
  return P.pass(msg, code, det)
end

-- The page's lines as plain text (tagged as data where the
-- untrusted_boundary cap says so); the Gemini CLI's truncation banner.
local function read_result(r, a, ctx, na)
  if r.encoding ~= "text" then return P.text(("Cannot display content of binary file: %s"):format(a.file_path)) end
  local body = P.untrusted(ctx, P.page_text(r), na.path, "read_file")
  if not r.next_offset then return P.text(body) end
  return P.text(("IMPORTANT: The file content has been truncated.\nStatus: Showing lines %d-%d of %d total lines.\n"
    .. "Action: To read more of the file, you can use the 'offset' and 'limit' parameters in a subsequent "
    .. "'read_file' call. For example, to read the next section of the file, use offset: %d.\n\n"
    .. "--- FILE CONTENT (truncated) ---\n%s"):format(r.start_line, r.end_line, r.total_lines, r.end_line, body))
end

local function replace(ctx, a)
  local want = a.expected_replacements or 1
  local args = { path = a.file_path, old_text = a.old_string, new_text = a.new_string, replace_all = want > 1, dry_run = want > 1 }
  local r, msg, code, det = ctx:call("edit_file", args)
  if r and want > 1 and r.replacements == want then
    args.dry_run, args.expected_hash = false, r.previous_content_hash
    r, msg, code, det = ctx:call("edit_file", args)
  end
  local found = r and r.replacements or code == "AMBIGUOUS_TEXT" and det.matches or code == "NOT_FOUND_TEXT" and 0
  if found == 0 then
    return nil, ("Failed to edit, 0 occurrences found for old_string in %s. No edits made. The exact text in old_string "
      .. "was not found. Ensure you're not escaping content incorrectly and check whitespace, indentation, and context. "
      .. "Use read_file tool to verify."):format(a.file_path), "NOT_FOUND_TEXT"
  elseif found and found ~= want then
    return nil, ("Failed to edit, expected %d %s but found %d for old_string in file: %s")
      :format(want, want == 1 and "occurrence" or "occurrences", found, a.file_path), "AMBIGUOUS_TEXT"
  elseif not r then
    return errors(msg, code, det, a)
  end
  return P.text(("Successfully modified file: %s (%d replacements)."):format(a.file_path, r.replacements))
end

local function grep_result(r, a)
  local where = a.path and ('in path "%s"'):format(a.path) or "in the workspace directory"
  local filter = a.include and (' (filter: "%s")'):format(a.include) or ""
  if #r.matches == 0 then return P.text(('No matches found for pattern "%s" %s%s.'):format(a.pattern, where, filter)) end
  local out, last = {}, nil
  for _, m in ipairs(r.matches) do
    if m.path ~= last then
      if last then out[#out + 1] = "---" end
      out[#out + 1], last = "File: " .. m.path, m.path
    end
    out[#out + 1] = ("L%d: %s"):format(m.line, (m.text:gsub("%s+$", "")))
  end
  return P.text(('Found %d %s for pattern "%s" %s%s:\n---\n%s\n---'):format(#r.matches,
    #r.matches == 1 and "match" or "matches", a.pattern, where, filter, table.concat(out, "\n")))
end

local function list_result(r, a)
  local skip = P.globs(a.ignore, "ignore") or function() return false end
  local dirs, files = {}, {}
  for _, e in ipairs(r.entries) do
    if not skip(e.name) then
      if e.type == "dir" then dirs[#dirs + 1] = "[DIR] " .. e.name
      else files[#files + 1] = ("%s (%d bytes)"):format(e.name, e.size or 0) end
    end
  end
  table.move(files, 1, #files, #dirs + 1, dirs)
  if #dirs == 0 then return P.text(("Directory %s is empty."):format(a.path)) end
  return P.text(("Directory listing for %s:\n%s"):format(a.path, table.concat(dirs, "\n")))
end

-- Each path or glob of `paths` (and `include`) through the native glob,
-- then each file through the native read; bounded like one read: at most
-- P.GLOBS_MAX patterns, max_result_bytes of text in all, and a cancel
-- stops it between files.
local function read_many(ctx, a)
  local patterns = table.move(a.include or {}, 1, #(a.include or {}), #a.paths + 1, table.move(a.paths, 1, #a.paths, 1, {}))
  if #patterns > P.GLOBS_MAX then
    return nil, ("paths and include: at most %d patterns"):format(P.GLOBS_MAX), "INVALID_ARGUMENT"
  end
  local excluded, xerr, xcode = P.globs(a.exclude, "exclude")
  if not excluded then return nil, xerr, xcode end
  local seen, parts, used, cut = {}, {}, 0, false
  for _, p in ipairs(patterns) do
    local g = not cut and ctx:call("glob", { pattern = p, include_hidden = true, respect_ignore = a.useDefaultExcludes ~= false })
    for _, e in ipairs(g and g.entries or {}) do
      if ctx:cancelled() or used >= ctx.caps.max_result_bytes then cut = true break end
      if not seen[e.path] and not excluded(e.path) then
        seen[e.path] = true
        local f = ctx:call("read_file", { path = e.path })
        if f and f.encoding == "text" then -- a notebook's cells come as text (content)
          local body = f.notebook and f.content or P.untrusted(ctx, P.page_text(f), e.path, "read_file")
          parts[#parts + 1] = ("--- %s ---\n\n%s\n\n"):format(e.path, body)
          used = used + #parts[#parts]
        end
      end
    end
  end
  if #parts == 0 then return P.text("No files matching the criteria were found or all were skipped.") end
  local note = cut and "\n[burrow: stopped at max_result_bytes; read the rest with narrower patterns]" or ""
  return P.text(table.concat(parts) .. note .. "\n--- End of content ---")
end

return {
  name = "gemini_cli",
  description = "The Gemini CLI's file tools (read_file, write_file, replace, glob, search_file_content, list_directory, read_many_files)",
  tools = P.tools({ need = "params must have required property '%s'", errors = errors, output = text, output_schema = P.TEXT_SCHEMA }, {
    { name = "read_file", native = "read_file", required = { "file_path" },
      description = "Reads and returns the content of a specified file. If the file is large, the content will be truncated; the response says so and how to read more with the 'offset' and 'limit' parameters.",
      schema = { file_path = S("The path to the file to read."), offset = N("Optional: the 0-based line number to start reading from. Requires 'limit' to be set."),
        limit = N("Optional: maximum number of lines to read.") },
      args = function(a) return { path = a.file_path, offset = (a.offset or 0) + 1, limit = a.limit } end, result = read_result },
    { name = "write_file", kind = "write", native = "write_file", required = { "file_path", "content" },
      description = "Writes content to a specified file in the local filesystem. Missing parent directories are created.",
      schema = { file_path = S("The path to the file to write to."), content = S("The content to write to the file.") },
      args = function(a) return { path = a.file_path, content = a.content } end,
      result = function(r, a)
        return P.text(r.created and ("Successfully created and wrote to new file: %s."):format(a.file_path)
          or ("Successfully overwrote file: %s."):format(a.file_path))
      end },
    { name = "replace", kind = "edit", handler = replace, required = { "file_path", "old_string", "new_string" },
      description = "Replaces text within a file. By default, replaces a single occurrence; set expected_replacements to replace several. old_string must match the file's text exactly, with enough context to be unique.",
      schema = { file_path = S("The path to the file to modify."), old_string = S("The exact literal text to replace."),
        new_string = S("The exact literal text to replace old_string with."),
        expected_replacements = { type = "integer", minimum = 1, description = "Number of replacements expected. Defaults to 1." } } },
    { name = "glob", native = "glob", required = { "pattern" },
      description = "Efficiently finds files matching specific glob patterns (e.g., `src/**/*.ts`, `**/*.md`), returning paths sorted by modification time (newest first).",
      schema = { pattern = S("The glob pattern to match against (e.g., '**/*.py', 'docs/*.md')."),
        path = S("Optional: the directory to search within. If omitted, searches the root directory."),
        respect_git_ignore = { type = "boolean", description = "Optional: whether to respect .gitignore patterns. Defaults to true." } },
      args = function(a) return { pattern = a.pattern, path = a.path, sort = "mtime", respect_ignore = a.respect_git_ignore ~= false } end,
      result = function(r, a)
        local where = a.path or "the workspace"
        if #r.entries == 0 then return P.text(('No files found matching pattern "%s" within %s'):format(a.pattern, where)) end
        local paths = {}
        for i, e in ipairs(r.entries) do paths[i] = e.path end
        return P.text(('Found %d file(s) matching "%s" within %s, sorted by modification time (newest first):\n%s')
          :format(#paths, a.pattern, where, table.concat(paths, "\n")))
      end },
    { name = "search_file_content", native = "grep", required = { "pattern" }, result = grep_result,
      description = "Searches for a regular expression pattern within the content of files in a specified directory (or the workspace). Can filter files by a glob pattern. Returns the lines containing matches, along with their file paths and line numbers.",
      schema = { pattern = S("The regular expression (regex) pattern to search for within file contents."),
        path = S("Optional: the directory to search within."), include = S("Optional: a glob pattern to filter which files are searched (e.g., '*.js', '*.{ts,tsx}').") },
      args = function(a) return { pattern = a.pattern, path = a.path, include = a.include and { a.include } or nil, max_results = 100 } end },
    { name = "list_directory", native = "list_dir", required = { "path" }, result = list_result,
      description = "Lists the names of files and subdirectories directly within a specified directory path. Can optionally ignore entries matching provided glob patterns.",
      schema = { path = S("The path to the directory to list."), ignore = LIST("List of glob patterns to ignore.") },
      args = function(a)
        local _, err, code = P.globs(a.ignore, "ignore")
        if err then return nil, err, code end
        return { path = a.path, include_hidden = true }
      end },
    { name = "read_many_files", handler = read_many, required = { "paths" },
      description = "Reads content from multiple files specified by paths or glob patterns. Text files are concatenated, each after a '--- {filePath} ---' separator.",
      schema = { paths = LIST("An array of glob patterns or paths, e.g. ['src/**/*.ts'], ['README.md', 'docs/*.md']."),
        include = LIST("Optional: additional glob patterns to include."), exclude = LIST("Optional: glob patterns for files to exclude."),
        useDefaultExcludes = { type = "boolean", description = "Optional: apply the ignore files. Defaults to true." } } },
  }),
}
