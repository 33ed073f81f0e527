-- move: rename a file, link or directory, within a root or between roots
-- on one filesystem. RENAME_NOREPLACE unless overwrite; a link moves as
-- a link. Both parents are resolved to fds; the rename acts on them.

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
  description = [[Move or rename a file, a directory or a symlink (the link itself moves). The destination must not exist unless overwrite is true; replacing a symlink is refused. A destination ending in "/" must name a directory to move a directory into that name. Moving between roots works when they are on one filesystem; otherwise copy, then remove.
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
  annotations = { readOnlyHint = false, destructiveHint = true, idempotentHint = false, openWorldHint = false },
  permissions = { "fs.write", "fs.delete" },
  path_args = { { "source", "delete" }, { "destination", "write" } },
  subtree = { from = "source", to = "destination", op = "delete" }, -- every entry judged, both sides
  risk = "medium",

  handler = function(ctx, a)
    local si, srel, scode = ctx:resolve_write(a.source)
    if not si then return nil, srel, scode end
    local di, drel, dcode = ctx:resolve_write(a.destination)
    if not di then return nil, drel, dcode end
    local ok, detail, code = ctx.roots:move(si, srel, di, drel, a.overwrite)
    if not ok then
      local which = culprit(ctx, si, srel, a, code)
      if code == "EEXIST" and (detail == nil or detail == "") then
        detail = "pass overwrite=true to replace it"
      end
      return ctx:fail(code, which, detail)
    end
    return { source = a.source, destination = a.destination }
  end,

  render = function(r)
    return ("Moved %s to %s"):format(r.source, r.destination), r
  end,
}
