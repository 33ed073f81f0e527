-- stat: what a path is, without following a final symlink (lstat).

local context = require "burrow.context"

return {
  name = "stat",
  title = "File information",
  description = [[Describe a path without reading it: type (file, dir, symlink, other), size in bytes, modification time (UTC, ISO 8601), permission bits, hard-link count. A symlink is described itself (its target text is given), not followed.
Example: {"path": "src"}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "Path to describe: relative to the first root, or an absolute path under a root." },
    },
    required = { "path" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      name = { type = "string" },
      type = { type = "string", enum = { "file", "dir", "symlink", "other" } },
      size = { type = "integer" },
      mtime = { type = "string" },
      mode = { type = "string" },
      nlink = { type = "integer" },
      is_symlink = { type = "boolean" },
      target = { type = "string" },
    },
    required = { "path", "name", "type", "size", "mtime", "mode", "nlink", "is_symlink" },
  },
  annotations = { readOnlyHint = true, destructiveHint = false, idempotentHint = true, openWorldHint = false },
  permissions = { "fs.read" },
  nofollow = true, -- lstat semantics: a link is described, not followed
  risk = "low",

  handler = function(ctx, a)
    local idx, rel, code = ctx:resolve(a.path)
    if not idx then return nil, rel, code end
    local st, detail, scode = ctx.roots:stat(idx, rel)
    if not st then return ctx:fail(scode, a.path, detail) end
    local name = rel:gsub("/+$", ""):match("([^/]*)$")
    if name == "." or name == "" then name = context.join(a.path, ""):gsub("/+$", ""):match("([^/]*)$") end
    return {
      path = a.path,
      name = name,
      type = st.type,
      size = st.size,
      mtime = st.mtime,
      mode = ("%04o"):format(st.mode),
      nlink = st.nlink,
      is_symlink = st.type == "symlink",
      target = st.target,
    }
  end,

  render = function(r)
    local lines = {}
    for _, k in ipairs { "path", "type", "size", "mtime", "mode", "nlink", "target" } do
      if r[k] ~= nil then lines[#lines + 1] = ("%s: %s"):format(k, tostring(r[k])) end
    end
    return table.concat(lines, "\n"), r
  end,
}
