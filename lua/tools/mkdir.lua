-- mkdir: create a directory (and its parents, by default) beneath a root;
-- each step is a mkdirat on a parent fd the resolver returned.

return {
  name = "mkdir",
  title = "Create directory",
  description = [[Create a directory. Missing parent directories are created too unless parents is false; a directory that already exists is fine then (created: false). A path that exists as a file is refused (EEXIST).
Examples: {"path": "src/utils"}  {"path": "build", "parents": false}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "Directory to create: relative to the first root, or an absolute path under a root." },
      parents = { type = "boolean", description = "Create missing parents and accept an existing directory (default true)." },
    },
    required = { "path" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      created = { type = "boolean" },
    },
    required = { "path", "created" },
  },
  kind = "create", -- annotations, permissions and risk (burrow.toolkit.kinds)

  handler = function(ctx, a)
    local idx, rel, code0 = ctx:resolve_write(a.path)
    if not idx then return nil, rel, code0 end
    local res, detail, code = ctx.roots:mkdir(idx, rel, a.parents ~= false)
    if not res then return ctx:fail(code, a.path, detail) end
    return { path = a.path, created = res.created }
  end,

  render = function(r)
    return (r.created and "Created directory %s" or "Directory %s already exists"):format(r.path), r
  end,
}
