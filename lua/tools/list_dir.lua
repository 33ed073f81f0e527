-- list_dir: a directory's entries, optionally recursive, sorted by path,
-- capped at max_entries with the number left out. Symlinks are listed,
-- never followed; hidden entries only on request.

local context = require "burrow.toolkit.context"


return {
  name = "list_dir",
  title = "List directory",
  description = [[List a directory inside the workspace: each entry's name, path, type (file, dir, symlink, other), size and modification time, sorted by name within each directory (a directory's contents follow it). With recursive=true it descends into subdirectories (max_depth limits how deep; symlinks are listed but never followed). Hidden entries (names starting with ".") are left out unless include_hidden is true. Long listings stop at max_entries and say how many entries were left out.
Examples: {}  {"path": "src", "recursive": true, "max_depth": 2}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "Directory to list (default: the first root)." },
      recursive = { type = "boolean", description = "Descend into subdirectories (default false)." },
      max_depth = { type = "integer", minimum = 1, description = "With recursive: how many levels to show (1 = direct children only)." },
      include_hidden = { type = "boolean", description = "Include names starting with \".\" (default false)." },
    },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      entries = {
        type = "array",
        items = {
          type = "object",
          properties = {
            name = { type = "string" },
            path = { type = "string" },
            type = { type = "string" },
            size = { type = "integer" },
            mtime = { type = "string" },
          },
        },
      },
      truncated = { type = "boolean" },
      omitted = { type = "integer" },
      skipped_policy = { type = "integer", description = "Entries the workspace policy hid (never named); only with policy rules." },
    },
    required = { "path", "entries", "truncated", "omitted" },
  },
  kind = "list", -- annotations, permissions and risk (burrow.toolkit.kinds)
  -- MCP tasks (burrow.mcp.tasks): a call still running after a moment becomes one
  task = "optional",

  handler = function(ctx, a)
    local path = a.path or "."
    local idx, rel, info = ctx:resolve(path)
    if not idx then return nil, rel, info end
    local depth = 0
    if a.recursive then depth = (a.max_depth or 4096) - 1 end
    local opts, werr, wcode = ctx:walk_opts(rel, {
      max_depth = depth,
      max_entries = ctx.caps.max_entries,
      include_hidden = a.include_hidden,
    }, a.recursive and idx or nil, info, true) -- the lister holds back what check() is about until it is asked
    if not opts then return nil, werr, wcode end
    local raw, omitted, skipped, nested = ctx.roots:list(idx, rel, opts)
    if not raw then return ctx:fail(skipped, path, omitted) end
    local hidden = ctx:reveal(raw, function(e) return e.path end, info, nested)
    if hidden > 0 then skipped = (skipped or 0) + hidden end
    local entries = require("burrow.core").json.array {}
    for i, e in ipairs(raw) do
      entries[i] = { name = e.name, path = context.join(path, e.path), type = e.type, size = e.size, mtime = e.mtime }
    end
    return {
      path = path, entries = entries, truncated = omitted > 0, omitted = omitted,
      skipped_policy = (opts.rules or opts.defer or hidden > 0) and skipped or nil,
    }
  end,

  render = function(r)
    local out = {}
    for i, e in ipairs(r.entries) do
      if e.type == "dir" then out[i] = e.path .. "/"
      elseif e.type == "file" then out[i] = ("%s  (%d bytes)"):format(e.path, e.size)
      else out[i] = ("%s  (%s)"):format(e.path, e.type) end
    end
    if #out == 0 and not r.truncated and (r.skipped_policy or 0) == 0 then out[1] = "(empty directory)" end
    if r.truncated then
      out[#out + 1] = ("[%d more entries not shown: max_entries reached; list a subdirectory or raise the cap]")
        :format(r.omitted)
    end
    out[#out + 1] = context.hidden_note(r.skipped_policy)
    return table.concat(out, "\n"), r
  end,
}
