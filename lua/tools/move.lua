-- move: rename a file, link or directory, within a root or between roots;
-- across filesystems a copy, then the source removed. Staged: the source
-- is renamed aside, judged, then renamed into place (RENAME_NOREPLACE
-- unless overwrite) or back. A link moves as a link. Both parents are
-- resolved to fds; the renames act on them.

-- Which path a failure is about: the destination when the source is fine
-- (EISDIR: rename(2)'s "a file onto a directory").
local function culprit(ctx, si, srel, a, code)
  if code == "EEXIST" or code == "POLICY_DENIED" or code == "EISDIR" then return a.destination end
  if code == "ENOENT" or code == "ENOTDIR" or code == "OUTSIDE_ROOT" or code == "ELOOP" then
    if ctx.roots:stat(si, srel) then return a.destination end
  end
  return a.source
end

return {
  name = "move",
  title = "Move or rename",
  description = [[Move or rename a file, a directory or a symlink (the link itself moves). The destination must not exist unless overwrite is true; replacing a symlink is refused. A destination ending in "/" must name a directory to move a directory into that name. Moving between roots on different filesystems copies, then removes the source.
Examples: {"source": "draft.md", "destination": "docs/final.md"}  {"source": "a.txt", "destination": "b.txt", "overwrite": true}]],
  input_schema = {
    type = "object",
    properties = {
      source = { type = "string", description = "What to move: relative to the first root, or an absolute path under a root." },
      destination = { type = "string", description = "Its new path." },
      overwrite = { type = "boolean", description = "Replace an existing destination (default false)." },
    },
    required = { "source", "destination" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      source = { type = "string" },
      destination = { type = "string" },
    },
    required = { "source", "destination" },
  },
  kind = "move", -- annotations, permissions and risk (burrow.toolkit.kinds)
  path_args = { { "source", "delete" }, { "destination", "write" } },
  -- the source is renamed to a staged name beside itself (across
  -- filesystems also copied into a stage beside the destination), its
  -- entries judged (read and delete where they are, write where they
  -- land), then renamed into place, or back: ctx:settle
  subtree = { from = "source", to = "destination", ops = { "delete", "read" }, whole_roots = false },
  -- MCP tasks (burrow.mcp.tasks): a call still running after a moment becomes one
  task = "optional",

  handler = function(ctx, a)
    local si, srel, scode = ctx:resolve_write(a.source)
    if not si then return nil, srel, scode end
    -- its content becomes readable under the new name: a read of it too
    local r, rmsg, rcode = ctx:open(a.source, "read", true, "source")
    if not r then return nil, rmsg, rcode end
    local di, drel, dcode = ctx:resolve_write(a.destination)
    if not di then return nil, drel, dcode end
    local st, detail, code, why = ctx.roots:stage_move(si, srel, di, drel, {
      overwrite = a.overwrite, max_ms = ctx:ms_left("max_tree_ms"), max_entries = ctx.SUBTREE_MAX,
      max_bytes = ctx.caps.max_file_size, progress = ctx:tree_progress("moved"),
    })
    local ok, how
    if st then ok, detail, code, how = ctx:settle(st) end
    if not ok and st and how ~= "core" then return nil, detail, code end
    if not ok then
      local which = culprit(ctx, si, srel, a, code)
      if code == "EEXIST" and (detail == nil or detail == "") then
        detail = "pass overwrite=true to replace it"
      elseif code == "TOO_LARGE" and why and why.on == "time" then
        detail = ("%s (max_tree_ms=%d): nothing was moved"):format(detail, ctx.caps.max_tree_ms)
      end
      return ctx:fail(code, which, detail)
    end
    return { source = a.source, destination = a.destination }
  end,

  render = function(r)
    return ("Moved %s to %s"):format(r.source, r.destination), r
  end,
}
