-- copy: copy a file (through the atomic write), or with recursive a
-- directory tree, staged: copied beside the destination under a name no
-- agent reaches, judged, then renamed into place (a refusal or a cancel
-- leaves nothing). Links in a tree are copied as links (never followed);
-- FIFOs, sockets, devices and mounts are skipped and counted.

-- Which path a failure is about: the destination when the source is fine.
-- EISDIR is the source's only for a directory without recursive; else a
-- file met a directory where it was to be written.
local function culprit(ctx, si, srel, sinfo, a, code)
  if code == "EEXIST" or code == "POLICY_DENIED" or code == "READ_ONLY_ROOT" then return a.destination end
  if code == "EISDIR" then
    return (sinfo.type == "dir" and not a.recursive) and a.source or a.destination
  end
  if code == "ENOENT" or code == "ENOTDIR" or code == "OUTSIDE_ROOT" or code == "ELOOP" then
    if ctx.roots:stat(si, srel) then return a.destination end
  end
  return a.source
end

return {
  name = "copy",
  title = "Copy file or directory",
  description = [[Copy a file, or with recursive=true a directory tree, to a new path. The destination must not exist unless overwrite is true (then files are replaced and directories merged). Inside a tree, symlinks are copied as symlinks and never followed; FIFOs, sockets and devices are skipped and counted. File modes keep their executable bits.
Examples: {"source": "config.example.yml", "destination": "config.yml"}  {"source": "templates", "destination": "site", "recursive": true}]],
  input_schema = {
    type = "object",
    properties = {
      source = { type = "string", description = "What to copy: relative to the first root, or an absolute path under a root." },
      destination = { type = "string", description = "The path of the copy." },
      overwrite = { type = "boolean", description = "Replace existing files, merge into existing directories (default false)." },
      recursive = { type = "boolean", description = "Copy a directory and everything in it (default false)." },
    },
    required = { "source", "destination" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      source = { type = "string" },
      destination = { type = "string" },
      files = { type = "integer" },
      dirs = { type = "integer" },
      links = { type = "integer" },
      skipped = { type = "integer" },
      bytes = { type = "integer" },
      content_hash = { type = "string" },
    },
    required = { "source", "destination", "files", "dirs", "links", "skipped", "bytes" },
  },
  kind = "copy", -- annotations, permissions and risk (burrow.toolkit.kinds)
  path_args = { { "source", "read" }, { "destination", "write" } },
  -- a tree is copied into a staged directory beside the destination, its
  -- entries judged (read where they are, write where they land), then put
  -- in place by one rename: ctx:settle
  subtree = { from = "source", to = "destination", ops = { "read" } },
  -- MCP tasks (burrow.mcp.tasks): a call still running after a moment becomes one
  task = "optional",

  handler = function(ctx, a)
    local si, srel, sinfo = ctx:resolve(a.source)
    if not si then return nil, srel, sinfo end
    local di, drel, dcode = ctx:resolve_write(a.destination)
    if not di then return nil, drel, dcode end
    local st, detail, code, why = ctx.roots:stage_copy(si, srel, di, drel, {
      overwrite = a.overwrite, recursive = a.recursive, max_bytes = ctx.caps.max_file_size,
      max_ms = ctx:ms_left("max_tree_ms"), max_entries = ctx.SUBTREE_MAX,
      progress = ctx:tree_progress("copied"),
    })
    local res, how
    if st then res, detail, code, how = ctx:settle(st, "destination") end
    if not res and st and how ~= "core" then return nil, detail, code end
    if not res then
      local on = why and why.on -- what the core's failure is about (never its wording)
      if code == "TOO_LARGE" and on == "time" then
        detail = ("%s (max_tree_ms=%d): nothing was copied"):format(detail, ctx.caps.max_tree_ms)
      elseif code == "TOO_LARGE" and on == "size" then
        detail = ("a file is over max_file_size (%d bytes)"):format(ctx.caps.max_file_size)
      end
      return ctx:fail(code, culprit(ctx, si, srel, sinfo, a, code), detail)
    end
    return {
      source = a.source, destination = a.destination, files = res.files, dirs = res.dirs,
      links = res.links, skipped = res.skipped, bytes = res.bytes,
      content_hash = (res.dirs == 0 and res.files == 1) and res.content_hash or nil,
    }
  end,

  render = function(r)
    if r.dirs == 0 and r.files == 1 and r.links == 0 then
      return ("Copied %s to %s (%d bytes, %s)"):format(r.source, r.destination, r.bytes, r.content_hash), r
    end
    local function n(k, one, many) return ("%d %s"):format(k, k == 1 and one or many) end
    local skipped = r.skipped > 0 and (", %d skipped (FIFOs, sockets, devices or mounts)"):format(r.skipped) or ""
    return ("Copied %s to %s: %s, %s, %s (%d bytes)%s"):format(r.source, r.destination, n(r.files, "file", "files"),
      n(r.dirs, "directory", "directories"), n(r.links, "link", "links"), r.bytes, skipped), r
  end,
}
