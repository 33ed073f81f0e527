-- remove: delete a file, a symlink (never its target) or, with recursive,
-- a directory tree, staged: renamed aside, judged, then unlinked (or put
-- back). Trees are walked by directory fds opened without following links
-- from their parent's fd, so a directory swapped for a link mid-walk is
-- not followed, and mounts inside the tree are left alone.

return {
  name = "remove",
  title = "Remove file or directory",
  description = [[Delete a file or a symlink (the link itself, never what it points to), an empty directory, or with recursive=true a whole directory tree. Symlinks inside a tree are removed as links and never followed. The root itself cannot be removed. Pass expected_hash (from read_file) to delete a file only if it has not changed.
Examples: {"path": "tmp/out.log"}  {"path": "build", "recursive": true}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "What to remove: relative to the first root, or an absolute path under a root." },
      recursive = { type = "boolean", description = "Remove a directory and everything in it (default false)." },
      expected_hash = { type = "string", description = "Remove a file only if its content_hash is still this." },
    },
    required = { "path" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      files = { type = "integer" },
      dirs = { type = "integer" },
    },
    required = { "path", "files", "dirs" },
  },
  kind = "delete", -- annotations, permissions and risk (burrow.toolkit.kinds)
  -- a tree is renamed to a staged name beside itself, its entries judged,
  -- then unlinked, or renamed back: ctx:settle
  subtree = { from = "path", ops = { "delete" }, whole_roots = false },
  -- MCP tasks (burrow.mcp.tasks): a call still running after a moment becomes one
  task = "optional",

  handler = function(ctx, a)
    local idx, rel, code0 = ctx:resolve_write(a.path)
    if not idx then return nil, rel, code0 end
    local h = a.expected_hash and a.expected_hash:lower()
    local st, detail, code, why = ctx.roots:stage_remove(idx, rel, { recursive = a.recursive, expected_hash = h,
      max_ms = ctx:ms_left("max_tree_ms"), max_entries = ctx.SUBTREE_MAX, progress = ctx:tree_progress("listed") })
    local res, how
    if st then res, detail, code, how = ctx:settle(st) end
    if not res and st and how ~= "core" then return nil, detail, code end
    if not res then
      if code == "HASH_MISMATCH" then detail = "it changed since it was read; nothing was removed" end
      if code == "TOO_LARGE" and why and why.on == "time" then
        detail = ("%s (max_tree_ms=%d): nothing was removed"):format(detail, ctx.caps.max_tree_ms)
      end
      return ctx:fail(code, a.path, detail)
    end
    return { path = a.path, files = res.files, dirs = res.dirs }
  end,

  render = function(r)
    if r.dirs == 0 and r.files <= 1 then return ("Removed %s"):format(r.path), r end
    return ("Removed %s (%d %s, %d %s)"):format(r.path, r.files, r.files == 1 and "file or link" or "files or links",
      r.dirs, r.dirs == 1 and "directory" or "directories"), r
  end,
}
