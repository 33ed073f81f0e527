-- grep: search file contents below a directory, natively and in process
-- (core C: a parallel walk by directory fds, PCRE2 behind a literal
-- prefilter). .gitignore is respected and hidden files are left out by
-- default; binary and oversize files are skipped and listed, so "no match"
-- is never ambiguous. Results come sorted by path, then line.

local core = require "burrow.core"
local context = require "burrow.toolkit.context"
local printer = require "burrow.toolkit.printer"

local MODES = { content = true, files = true, count = true }

-- What the agent's path becomes in front of a result path ("." -> "").
local function prefix_of(path)
  if path == "." or path == "./" then return "" end
  return (path:gsub("/+$", "")) .. "/"
end

-- A refused search names what the core refused ({on = "pattern" |
-- "include" | "exclude", index =}: data, never the wording): the pattern,
-- or the include/exclude glob (the message names the pattern argument for
-- both), with PCRE2's reason when the pattern would not compile.
local function subject(path, why)
  local on = why and why.on
  if on == "pattern" or on == "include" or on == "exclude" then return "pattern" end
  if on == "cursor" then return "cursor" end
  return path
end

local function refused(why)
  if why.on == "include" or why.on == "exclude" then
    return { argument = ("%s[%d]"):format(why.on, (why.index or 1) - 1) }
  end
  return { argument = "pattern", reason = why.reason }
end

-- Keep what fits in max_result_bytes; true and the first item cut if
-- something was cut.
local function cap_bytes(list, size_of, max_bytes)
  local used = 0
  for i, v in ipairs(list) do
    used = used + size_of(v)
    if used > max_bytes and i > 1 then
      for j = #list, i, -1 do list[j] = nil end
      return true, v
    end
  end
  return false
end



local function shown_list(list, total, what)
  local n = #list
  local head = {}
  for i = 1, math.min(n, 20) do head[i] = list[i] end
  local more = total - #head
  return ("[skipped %d %s: %s%s]"):format(total, what, table.concat(head, ", "),
    more > 0 and (", and %d more"):format(more) or "")
end

return {
  name = "grep",
  title = "Search file contents",
  description = [[Search the contents of files below a directory for a regular expression (PCRE2 syntax: \w, \d, \s, (?:...), alternation, lookaround) or, with literal=true, a plain string. Runs natively inside the workspace, fast on large trees. Respects .gitignore/.ignore and skips hidden files unless include_hidden; binary files (a NUL byte in the first 8 KiB) and files over max_file_size are skipped and listed in the result, so an empty answer really means no match. Symlinks are never followed.
output_mode: "content" (default) gives matching lines as path:line:text, sorted by path then line, with context lines if asked (before/after/context); "files" lists the files that match; "count" gives matching lines per file. A capped content result gives a cursor: pass it back (same arguments) for the next matches. files and count give the exact total even when the list is capped (total_exact). include/exclude take globs ("*.c", "src/**/*.h"); a glob without "/" matches file names at any depth. Matches never span lines unless multiline=true.
Examples: {"pattern": "TODO"}  {"pattern": "fn \\w+_init", "path": "src", "include": ["*.rs"]}  {"pattern": "a.b", "literal": true, "output_mode": "files"}]],
  input_schema = {
    type = "object",
    properties = {
      pattern = { type = "string", description = "PCRE2 regular expression (or a plain string with literal=true)." },
      path = { type = "string", description = "Directory (or file) to search (default: the first root)." },
      literal = { type = "boolean", description = "Treat pattern as a plain string (default false)." },
      ignore_case = { type = "boolean", description = "Case-insensitive match (default false)." },
      include = { type = "array", items = { type = "string" }, description = "Only search files matching one of these globs, e.g. [\"*.py\"]." },
      exclude = { type = "array", items = { type = "string" }, description = "Skip files and directories matching any of these globs, e.g. [\"vendor/**\", \"*.min.js\"]." },
      context = { type = "integer", minimum = 0, maximum = 100, description = "Lines of context before and after each match." },
      before = { type = "integer", minimum = 0, maximum = 100, description = "Lines of context before each match (overrides context)." },
      after = { type = "integer", minimum = 0, maximum = 100, description = "Lines of context after each match (overrides context)." },
      output_mode = { type = "string", enum = { "content", "files", "count" }, description = "content (default), files or count." },
      multiline = { type = "boolean", description = "Let matches span lines (default false)." },
      max_results = { type = "integer", minimum = 1, description = "Most matches (content) or files (files, count) to return; the server's cap still applies." },
      max_file_size = { type = "integer", minimum = 0, description = "Skip (and list) files larger than this many bytes (default and most: the server's max_file_size)." },
      include_hidden = { type = "boolean", description = "Search names starting with \".\" too (default false)." },
      respect_ignore = { type = "boolean", description = "Honour .gitignore, .ignore and .git/info/exclude (default true)." },
      cursor = { type = "string", description = "content mode: resume a capped search where it stopped, with the cursor its result gave (\"line:path\") and the same other arguments: the next matches, none shown twice, none missed." },
    },
    required = { "pattern" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      pattern = { type = "string" },
      output_mode = { type = "string" },
      matches = {
        type = "array",
        items = {
          type = "object",
          properties = {
            path = { type = "string" },
            line = { type = "integer" },
            text = { type = "string" },
            before = { type = "array", items = { type = "string" } },
            after = { type = "array", items = { type = "string" } },
          },
        },
      },
      files = { type = "array", items = { type = "string" } },
      counts = { type = "array", items = { type = "object", properties = { path = { type = "string" }, count = { type = "integer" } } } },
      total = { type = "integer", description = "Matches (content, count) or files (files) found; a lower bound when total_exact is false." },
      total_exact = { type = "boolean", description = "true when total is the exact number. files and count: true whenever the search walked the whole tree (even with the list capped); false when max_search_ms, max_search_bytes or a cancel stopped it. content: false when the matches were capped or cut." },
      files_total = { type = "integer", description = "count mode, total_exact: the number of matching files, listed or not." },
      files_searched = { type = "integer" },
      skipped_binary = { type = "array", items = { type = "string" } },
      skipped_size = { type = "array", items = { type = "string" } },
      skipped_policy = { type = "integer", description = "Entries the workspace policy hid (never named); only with policy rules." },
      truncated = { type = "boolean" },
      cancelled = { type = "boolean" },
      limit = { type = "string", enum = { "time", "bytes" }, description = "The search budget that ended the search early (max_search_ms or max_search_bytes): the results are partial." },
      bytes_searched = { type = "integer", description = "Bytes read from the files searched." },
      cursor = { type = "string", description = "content mode, capped at max_results or the result size (not stopped by a budget): pass it back as cursor for the next page." },
    },
    required = { "path", "pattern", "output_mode", "matches", "files", "counts", "skipped_binary", "skipped_size", "truncated" },
  },
  kind = "read", -- annotations, permissions and risk (burrow.toolkit.kinds)
  -- MCP tasks (burrow.mcp.tasks): a call still running after a moment becomes one
  task = "optional",

  handler = function(ctx, a)
    local path = a.path or "."
    local idx, rel, info = ctx:resolve(path)
    if not idx then return nil, rel, info end
    for _, k in ipairs { "include", "exclude" } do
      for _, g in ipairs(a[k] or {}) do
        if g:find("\0", 1, true) then
          return ctx:fail("INVALID_ARGUMENT", k, "a glob contains a NUL byte", { argument = k })
        end
      end
    end
    local mode = a.output_mode or "content"
    if not MODES[mode] then
      return ctx:fail("INVALID_ARGUMENT", "output_mode", "use content, files or count", { argument = "output_mode" })
    end
    local from_line, from_path
    if a.cursor then -- "line:path", the path as the search walks it (no prefix)
      from_line, from_path = a.cursor:match("^(%d+):(.*)$")
      from_line = math.tointeger(tonumber(from_line))
      if mode ~= "content" or not from_line or from_line < 1 or from_path:find("\0", 1, true) then
        return ctx:fail("INVALID_ARGUMENT", "cursor", mode ~= "content" and "cursor is for output_mode content"
          or 'not a cursor grep gave ("line:path")', { argument = "cursor" })
      end
    end
    local cap = mode == "content" and ctx.caps.max_matches or ctx.caps.max_entries
    local max = math.min(a.max_results or cap, cap)
    local max_size = math.min(a.max_file_size or ctx.caps.max_file_size, ctx.caps.max_file_size)
    local opts, werr, wcode = ctx:walk_opts(rel, {
      pattern = a.pattern,
      literal = a.literal,
      ignore_case = a.ignore_case,
      multiline = a.multiline,
      mode = mode,
      before = a.before or a.context or 0,
      after = a.after or a.context or 0,
      max_results = max,
      max_file_size = max_size,
      max_line = ctx.caps.max_line_chars,
      max_skipped = ctx.caps.max_entries,
      include = a.include,
      exclude = a.exclude,
      include_hidden = a.include_hidden,
      respect_ignore = a.respect_ignore ~= false,
      prefix = prefix_of(path),
      max_ms = ctx.caps.max_search_ms,
      max_bytes = ctx.caps.max_search_bytes,
      charsets = ctx.ws.charsets, -- text that is not UTF-8: the operator's fallback list
      from_path = from_path,
      from_line = from_line,
    }, idx, info, true) -- the walker holds back what check() is about until it is asked
    if not opts then return nil, werr, wcode end
    -- no policy hides matches after the search: the core applies
    -- max_result_bytes as it builds them (without building what would be
    -- cut); else core.grep_cut does after the policy, by the same rule
    local judged = ctx.ws.policies:judges_objects()
    if not judged then opts.max_result_bytes = ctx.caps.max_result_bytes end
    -- nothing here needs the match tables (no policy asks about each file
    -- shown, no boundary to tag the lines in): the matches, and the files
    -- and counts lists, stay the core's sets, which the edge the result
    -- leaves by prints (burrow.toolkit.printer: JSON and text for MCP and
    -- `burrow call`, tables for Lua); the core cuts them by max_result_bytes
    local held = not judged and (mode ~= "content" or not ctx.caps.untrusted_boundary) or nil
    opts.held = held
    local res, detail, gcode, why = ctx.roots:grep(idx, rel, opts, function(dirs, entries)
      ctx:progress(entries, nil, ("searched %d entries in %d directories"):format(entries, dirs))
      return ctx:cancelled()
    end)
    if not res then
      local about = subject(path, why)
      return ctx:fail(gcode, about, detail, about == "pattern" and refused(why)
        or about == "cursor" and { argument = "cursor" } or nil)
    end
    -- policies that judge each object are asked about each file shown
    local pre = prefix_of(path)
    local function sub(p) return p:sub(1, #pre) == pre and p:sub(#pre + 1) or nil end
    local nested = res.nested
    res.nested = nil -- the walk's, not the agent's
    local hidden = held and 0 or ctx:reveal(res.matches, function(m) return sub(m.path) end, info, nested)
    hidden = hidden + ctx:reveal(res.files, sub, info, nested) + ctx:reveal(res.skipped_binary, sub, info, nested)
      + ctx:reveal(res.skipped_size, sub, info, nested) + ctx:reveal(res.counts, function(c) return sub(c.path) end, info, nested)
    if hidden > 0 then
      res.skipped_policy = (res.skipped_policy or 0) + hidden
      if mode == "content" then res.total = #res.matches end
    end
    local cut = false
    local cursor = res.resume_line and ("%d:%s"):format(res.resume_line, res.resume_path)
    if held or mode == "content" and opts.max_result_bytes then
      cut = res.cut == true
    elseif mode == "content" then
      -- the matches a policy judged: cut by the core's one cost rule
      local at = core.grep_cut(res.matches, ctx.caps.max_result_bytes)
      local first_cut = at and res.matches[at]
      if at then for j = #res.matches, at, -1 do res.matches[j] = nil end end
      cut = at ~= nil
      if cut and not (res.cancelled or res.limit) then -- cut here: the next page starts with it
        cursor = ("%d:%s"):format(first_cut.line, sub(first_cut.path) or "") -- "": the searched file
      elseif cursor and ctx:reveal({ res.resume_path }, function(p) return p end, info, nested) > 0 then
        -- the core's next match is in a file the policy hides: never name
        -- it; resume after the last match shown (the next page hides it again)
        local last = res.matches[#res.matches]
        cursor = last and ("%d:%s"):format(last.line + 1, sub(last.path) or "") or nil
      end
    elseif mode == "files" then
      cut = cap_bytes(res.files, function(p) return #p + 1 end, ctx.caps.max_result_bytes)
    else
      cut = cap_bytes(res.counts, function(c) return #c.path + 12 end, ctx.caps.max_result_bytes)
    end
    -- files and count: the core walked on past the listed cap and counted
    -- every matching file (unless the budget or a cancel stopped it); a
    -- policy that judges each file shown saw only the listed ones, so
    -- then the total is the listed one, a lower bound if the list was capped
    local total, exact = res.total, not (res.truncated or cut or res.cancelled or res.limit)
    if mode ~= "content" and not judged and hidden == 0 then
      total = mode == "files" and res.found_files or res.found_matches
      exact = not (res.cancelled or res.limit)
    end
    local out = {
      path = path,
      pattern = a.pattern,
      output_mode = mode,
      matches = res.matches,
      files = res.files,
      counts = res.counts,
      total = total,
      files_total = mode == "count" and (exact and res.found_files or nil) or nil,
      files_searched = res.searched,
      skipped_binary = res.skipped_binary,
      skipped_size = res.skipped_size,
      skipped_binary_count = res.n_skipped_binary,
      skipped_size_count = res.n_skipped_size,
      unreadable = res.unreadable,
      skipped_policy = (opts.rules or opts.defer or hidden > 0) and res.skipped_policy or nil,
      max_results = max,
      max_file_size = max_size,
      truncated = res.truncated or cut,
      -- content: a capped, cut or stopped search counted only what it kept
      total_exact = exact,
      cancelled = res.cancelled,
      limit = res.limit,
      cursor = cursor,
      bytes_searched = res.bytes,
      max_search_ms = ctx.caps.max_search_ms,
      max_search_bytes = ctx.caps.max_search_bytes,
    }
    -- the matched lines are file text: with untrusted_boundary the render
    -- tags them as data (nothing is held then); what it needs rides on the
    -- result (printer.tag)
    if ctx.caps.untrusted_boundary and mode == "content" then return printer.tag(out, { roots = ctx.roots, path = path }) end
    return held and printer.holding(out, "matches", "files", "counts") or out
  end,

  -- MCP's text: the lines from the match set when the result holds one
  render = function(r)
    local list = r.output_mode == "files" and r.files or r.output_mode == "count" and r.counts or nil
    local out, held = {}, printer.held(list or r.matches)
    local function add(s) out[#out + 1] = s end
    if held and list then -- the core's list writes its lines, escaped for the reply
      if #list > 0 then add(list:text()) end
    elseif r.output_mode == "files" then
      for _, p in ipairs(r.files) do add(p) end
    elseif r.output_mode == "count" then
      for _, c in ipairs(r.counts) do add(("%s:%d"):format(c.path, c.count)) end
    elseif held then -- the core's match set writes its lines, escaped for the reply
      if #r.matches > 0 then add(r.matches:text()) end
    elseif #r.matches > 0 then -- the same renderer (grepwire.c), from the tables
      add(core.grep_lines(r.matches))
    end
    if #out == 0 then
      add(("No matches for %q in %s (%d files searched)."):format(r.pattern, r.path, r.files_searched or 0))
    elseif printer.tag_of(r) then
      local t = printer.tag_of(r)
      out = { (context.untrusted(t.roots, table.concat(out, "\n") .. "\n", t.path, "grep"):gsub("\n$", "")) }
    end
    if (r.skipped_binary_count or 0) > 0 then
      add(shown_list(r.skipped_binary, r.skipped_binary_count, "binary files"))
    end
    if (r.skipped_size_count or 0) > 0 then
      add(shown_list(r.skipped_size, r.skipped_size_count, ("files over max_file_size (%d bytes)"):format(r.max_file_size)))
    end
    local hidden = context.hidden_note(r.skipped_policy)
    if hidden then add(hidden) end
    if r.cancelled then
      add("[search cancelled: the results above are partial]")
    elseif r.limit then
      add(("[LIMIT %s: the search stopped at %s after %d files (%d bytes); the results above are partial. Narrow path, pattern or include to search the rest]")
        :format(r.limit, r.limit == "time" and ("max_search_ms=%d"):format(r.max_search_ms)
          or ("max_search_bytes=%d"):format(r.max_search_bytes), r.files_searched or 0, r.bytes_searched or 0))
    elseif r.truncated then
      -- the modes that answer in less room, never the one in use
      local others = {}
      for _, m in ipairs { "files", "count" } do
        if m ~= r.output_mode then others[#others + 1] = ("%q"):format(m) end
      end
      local counted = r.output_mode == "files" and ("%s %d files"):format(r.total_exact and "in all" or "at least", r.total or 0)
        or ("%s %d matches"):format(r.total_exact and "in all" or "at least", r.total or 0)
      if r.total_exact then -- the count is whole, only the list is cut
        counted = counted .. (", %d %s listed"):format(r.output_mode == "files" and #r.files or #r.counts,
          r.output_mode == "files" and "files" or "files' counts")
      end
      add(("[results truncated at max_results=%d or the result size cap: %s; %snarrow path, pattern or include%s]")
        :format(r.max_results, counted, r.cursor and ('call grep again with cursor="%s" for the next matches, or '):format(r.cursor) or "",
          r.output_mode == "files" and "" or ", or use output_mode " .. table.concat(others, " or ")))
    end
    if held and #(list or r.matches) > 0 then -- out[1] is the fragment: one concatenation
      if #out == 1 then return out[1], r end
      return out[1] .. ("\n" .. table.concat(out, "\n", 2)), r
    end
    return table.concat(out, "\n"), r
  end,
}
