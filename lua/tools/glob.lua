-- glob: find paths by name pattern (**, *, ?, [...], {a,b}) below a
-- directory. The walk starts at the pattern's literal prefix, prunes
-- directories no match can lie below, honours .gitignore and hidden rules
-- as grep does, and stops at max_results.
local context = require "burrow.toolkit.context"
local printer = require "burrow.toolkit.printer"

local function prefix_of(path)
  if path == "." or path == "./" then return "" end
  return (path:gsub("/+$", "")) .. "/"
end

-- "/ws/src/**/*.c" -> "/ws/src", "**/*.c": an absolute pattern names its
-- directory in its leading literal components.
local function split_absolute(pattern)
  local dir, rest = {}, {}
  for comp in pattern:gmatch("[^/]+") do
    if #rest == 0 and not comp:find("[%*%?%[{\\]") then dir[#dir + 1] = comp
    else rest[#rest + 1] = comp end
  end
  if #rest == 0 then rest[1] = table.remove(dir) end
  return "/" .. table.concat(dir, "/"), table.concat(rest, "/")
end


return {
  name = "glob",
  title = "Find files by name",
  description = [[Find files whose path matches a glob pattern, relative to path (default: the first root). "*" matches within one name, "**" any number of directories, "?" one character, "[abc]" a set, "{a,b}" alternatives. Results are sorted by path (or newest first with sort="mtime") and capped at max_results. By default only regular files are listed (type: file, dir, symlink or any); hidden names are left out unless include_hidden or the pattern names them (".github/**"), and .gitignore'd files are left out unless respect_ignore=false. Symlinks are never followed.
Examples: {"pattern": "**/*.py"}  {"pattern": "src/**/test_*.{c,h}"}  {"pattern": "*.md", "path": "docs", "sort": "mtime"}]],
  input_schema = {
    type = "object",
    properties = {
      pattern = { type = "string", description = "Glob pattern relative to path, e.g. \"**/*.ts\"." },
      path = { type = "string", description = "Directory to search (default: the first root)." },
      type = { type = "string", enum = { "file", "dir", "symlink", "any" }, description = "What to list (default file)." },
      sort = { type = "string", enum = { "path", "mtime" }, description = "path (default) or mtime (newest first)." },
      include_hidden = { type = "boolean", description = "Include names starting with \".\" (default false)." },
      respect_ignore = { type = "boolean", description = "Honour .gitignore, .ignore and .git/info/exclude (default true)." },
      max_results = { type = "integer", minimum = 1, description = "Most paths to return; the server's cap still applies." },
    },
    required = { "pattern" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      pattern = { type = "string" },
      entries = {
        type = "array",
        items = {
          type = "object",
          properties = {
            path = { type = "string" },
            type = { type = "string" },
            size = { type = "integer" },
            mtime = { type = "string" },
          },
        },
      },
      truncated = { type = "boolean" },
      cancelled = { type = "boolean" },
      limit = { type = "string", enum = { "time" }, description = "The walk stopped at max_search_ms: the list is partial." },
      skipped_policy = { type = "integer", description = "Entries the workspace policy hid (never named); only with policy rules." },
    },
    required = { "path", "pattern", "entries", "truncated" },
  },
  kind = "list", -- annotations, permissions and risk (burrow.toolkit.kinds)
  -- MCP tasks (burrow.mcp.tasks): a call still running after a moment becomes one
  task = "optional",

  handler = function(ctx, a)
    local pattern, path = a.pattern, a.path or "."
    if pattern:sub(1, 1) == "/" then
      if a.path then
        return ctx:fail("INVALID_ARGUMENT", "pattern", "an absolute pattern cannot be combined with path", { argument = "pattern" })
      end
      path, pattern = split_absolute(pattern)
    end
    local idx, rel, info = ctx:resolve(path)
    if not idx then return nil, rel, info end
    local max = math.min(a.max_results or ctx.caps.max_entries, ctx.caps.max_entries)
    local opts, werr, wcode = ctx:walk_opts(rel, {
      type = a.type or "file",
      sort = a.sort or "path",
      max_results = max,
      include_hidden = a.include_hidden,
      respect_ignore = a.respect_ignore ~= false,
      prefix = prefix_of(path),
      -- progress reports (where max_search_ms is asked) at least by the deadline
      interval_ms = ctx.caps.max_search_ms > 0 and math.min(100, ctx:ms_left("max_search_ms")) or nil,
    }, idx, info, true) -- the walker holds back what check() is about until it is asked
    if not opts then return nil, werr, wcode end
    -- nothing here needs the entry tables (no policy asks about each path
    -- shown): the entries stay the core's entry set, cut at
    -- max_result_bytes as below, which the edge the result leaves by
    -- prints (burrow.toolkit.printer: JSON and the listing for MCP and `burrow
    -- call`, tables for Lua)
    local held = not ctx.ws.policies:judges_objects() and not ctx.caps.untrusted_boundary or nil
    opts.held = held
    opts.max_result_bytes = held and ctx.caps.max_result_bytes or nil
    local timed = false -- max_search_ms, asked at each progress report (every 100 ms)
    local res, detail, gcode, why = ctx.roots:glob(idx, rel, pattern, opts, function(dirs, entries)
      ctx:progress(entries, nil, ("looked at %d entries in %d directories"):format(entries, dirs))
      timed = timed or ctx:over("max_search_ms")
      return timed or ctx:cancelled()
    end)
    if not res then
      local pat = why and why.on == "pattern" -- the core says what it refused
      return ctx:fail(gcode, pat and "pattern" or path, detail, pat and { argument = "pattern" } or nil)
    end
    local pre = prefix_of(path)
    local nested = res.nested
    res.nested = nil -- the walk's, not the agent's
    local hidden = held and 0 or ctx:reveal(res.entries, function(e)
      return e.path:sub(1, #pre) == pre and e.path:sub(#pre + 1) or nil
    end, info, nested)
    if hidden > 0 then res.skipped_policy = (res.skipped_policy or 0) + hidden end
    local used, cut = 0, res.cut == true
    for i, e in ipairs(held and {} or res.entries) do
      used = used + #e.path + 1
      if used > ctx.caps.max_result_bytes and i > 1 then
        for j = #res.entries, i, -1 do res.entries[j] = nil end
        cut = true
        break
      end
    end
    local out = {
      path = path,
      pattern = a.pattern,
      entries = res.entries,
      truncated = res.truncated or cut,
      cancelled = res.cancelled and not timed,
      limit = timed and "time" or nil,
      max_search_ms = timed and ctx.caps.max_search_ms or nil,
      max_results = max,
      skipped_policy = (opts.rules or opts.defer or hidden > 0) and res.skipped_policy or nil,
    }
    return held and printer.holding(out, "entries") or out
  end,

  -- MCP's text: the listing from the entry set when the result holds one
  render = function(r)
    local out, held = {}, printer.held(r.entries)
    if held then -- the core's entry set writes it, escaped for the reply
      if #r.entries > 0 then out[1] = r.entries:text() end
    else
      for i, e in ipairs(r.entries) do out[i] = e.type == "dir" and e.path .. "/" or e.path end
    end
    if #out == 0 then out[1] = ("No paths match %q in %s."):format(r.pattern, r.path) end
    out[#out + 1] = context.hidden_note(r.skipped_policy)
    if r.limit then
      out[#out + 1] = ("[LIMIT time: the walk stopped at max_search_ms=%d; the list above is partial: narrow the pattern or path]")
        :format(r.max_search_ms)
    elseif r.cancelled then
      out[#out + 1] = "[search cancelled: the list above is partial]"
    elseif r.truncated then
      out[#out + 1] = ("[more paths match: stopped at max_results=%d; narrow the pattern or path]"):format(r.max_results)
    end
    if held and #r.entries > 0 then -- out[1] is the fragment: one concatenation
      if #out == 1 then return out[1], r end
      return out[1] .. ("\n" .. table.concat(out, "\n", 2)), r
    end
    return table.concat(out, "\n"), r
  end,
}
