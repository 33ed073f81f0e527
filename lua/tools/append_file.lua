-- append_file: add bytes to the end of a file with O_APPEND on the
-- resolved file (roots:append), creating it when absent. Links and
-- hard-linked files are refused as write_file refuses them.

local core = require "burrow.core"
local undo = require "burrow.toolkit.undo"

return {
  name = "append_file",
  title = "Append to file",
  description = [[Append content to the end of a file, creating the file (and missing parent directories, unless create_dirs is false) when it does not exist. The bytes are added exactly as given: add a newline yourself where you want one. Writing through a symlink or to a file with other hard links is refused. Text added to a file in another encoding (UTF-16, Shift-JIS, ...) is written in that encoding. For binary data send base64 with encoding "base64". Returns the new size and content_hash.
Examples: {"path": "log/changes.md", "content": "- fixed the parser\n"}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "File to append to: relative to the first root, or an absolute path under a root." },
      content = { type = "string", description = "What to append." },
      encoding = { type = "string", enum = { "text", "base64" }, description = "How content is encoded: text (default) or base64." },
      charset = { type = "string", description = "Character encoding to append text in; default: the file's (read_file's charset)." },
      create_dirs = { type = "boolean", description = "Create missing parent directories (default true)." },
    },
    required = { "path", "content" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      bytes = { type = "integer" },
      size = { type = "integer" },
      created = { type = "boolean" },
      content_hash = { type = "string" },
    },
    required = { "path", "bytes", "size", "created", "content_hash" },
  },
  kind = "append", -- annotations, permissions and risk (burrow.toolkit.kinds)
  records_undo = true, -- undo_edit takes it back (ctx:resolve_write asks a shared undo store first)

  handler = function(ctx, a)
    local idx, rel, code0 = ctx:resolve_write(a.path)
    if not idx then return nil, rel, code0 end
    local data = a.content
    if a.encoding == "base64" then
      local derr, dcode
      data, derr, dcode = core.base64_decode(a.content)
      if not data then return ctx:fail(dcode, a.path, "field 'content': " .. derr) end
    else -- text goes on in the file's encoding (read_file's charset), or the one named
      local cs = a.charset and a.charset:lower()
      local f = not cs and ctx.roots:read(idx, rel, ctx.caps.max_file_size)
      if f then
        local name, _, utf8 = f:charset(ctx.ws.charsets)
        f:close()
        if name and not utf8 then cs = name end
      end
      if cs and cs:gsub("_", "-") ~= "utf-8" and cs ~= "utf8" then
        local enc, eerr, ecode = core.charset_encode(cs, data)
        if not enc then return ctx:fail(ecode, a.path, eerr) end
        data = enc
      end
    end
    local ok, cmsg, ccode, cdetails = ctx:recount("path", #data) -- a charset's bytes
    if not ok then return nil, cmsg, ccode, cdetails end
    local res, detail, code = ctx.roots:append(idx, rel, data, {
      create_dirs = a.create_dirs ~= false,
      max_bytes = ctx.caps.max_file_size,
    })
    if not res then
      if code == "TOO_LARGE" then
        detail = ("the file would pass max_file_size (%d bytes)"):format(ctx.caps.max_file_size)
      end
      return ctx:fail(code, a.path, detail)
    end
    local snap = res.created and { kind = "absent" } or { kind = "truncate", size = res.old_size }
    undo.record(ctx, idx, rel, snap, res.content_hash)
    return { path = a.path, bytes = #data, size = res.size, created = res.created, content_hash = res.content_hash }
  end,

  render = function(r)
    return ("%s %d bytes to %s (now %d bytes, %s)"):format(r.created and "Created with" or "Appended",
      r.bytes, r.path, r.size, r.content_hash), r
  end,
}
