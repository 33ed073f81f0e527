-- write_file: replace or create a file atomically (temp file + rename,
-- owner and mode kept, fsynced), optionally only if it is unchanged.

local core = require "burrow.core"
local undo = require "burrow.toolkit.undo"
local edits = require "burrow.toolkit.edits"

return {
  name = "write_file",
  title = "Write file",
  description = [[Create a file or replace its whole content, atomically: readers see the old file or the new one, never a mix, and the file keeps its owner and permissions. Missing parent directories are created (create_dirs, default true). Pass expected_hash (the content_hash from read_file) to write only if the file has not changed since you read it, or "absent" to create a file that must not exist yet. Writing through a symlink or to a file with other hard links is refused. For binary data send base64 with encoding "base64". Text replacing a file in another encoding (read_file's charset: UTF-16, Shift-JIS, ...) is written in that encoding, BOM kept; charset names another.
Examples: {"path": "notes/todo.md", "content": "- ship it\n"}  {"path": "a.txt", "content": "new", "expected_hash": "sha256:..."}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "File to write: relative to the first root, or an absolute path under a root." },
      content = { type = "string", description = "The complete new content." },
      encoding = { type = "string", enum = { "text", "base64" }, description = "How content is encoded: text (default) or base64." },
      charset = { type = "string", description = "Character encoding to write text in (\"shift_jis\", \"utf-16le\", ...); default: the existing file's (read_file's charset), else UTF-8." },
      create_dirs = { type = "boolean", description = "Create missing parent directories (default true)." },
      expected_hash = { type = "string", description = "Write only if the file's current content_hash is this; \"absent\" = the file must not exist." },
    },
    required = { "path", "content" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      bytes = { type = "integer" },
      content_hash = { type = "string" },
      created = { type = "boolean" },
    },
    required = { "path", "bytes", "content_hash", "created" },
  },
  kind = "write", -- annotations, permissions and risk (burrow.toolkit.kinds)
  records_undo = true, -- undo_edit takes it back (ctx:resolve_write asks a shared undo store first)

  handler = function(ctx, a)
    local idx, rel, code = ctx:resolve_write(a.path)
    if not idx then return nil, rel, code end
    local data = a.content
    if a.encoding == "base64" then
      local derr, dcode
      data, derr, dcode = core.base64_decode(a.content)
      if not data then return ctx:fail(dcode, a.path, "field 'content': " .. derr) end
    end
    if a.encoding ~= "base64" then
      local enc, eerr, ecode = edits.encode(ctx, ctx.roots:content(idx, rel, ctx.caps.max_file_size), a.charset, data)
      if not enc then return ctx:fail(ecode, a.path, eerr) end
      data = enc
    end
    if #data > ctx.caps.max_file_size then
      return ctx:fail("TOO_LARGE", a.path, ("%d bytes, over max_file_size (%d)"):format(#data, ctx.caps.max_file_size))
    end
    local h = a.expected_hash and a.expected_hash:lower()
    if h and h ~= "absent" and not h:match("^sha256:%x+$") then
      return ctx:fail("INVALID_ARGUMENT", a.path, "expected_hash must be \"absent\" or \"sha256:<hex>\" from read_file")
    end
    -- a charset makes other bytes of the content: the policies are asked
    -- again with the bytes written (quotas charge the difference)
    local ok, cmsg, ccode, cdetails = ctx:recount("path", #data)
    if not ok then return nil, cmsg, ccode, cdetails end
    local snap = undo.capture(ctx, idx, rel) -- for undo_edit
    local res, detail, wcode, current = ctx.roots:write(idx, rel, data, {
      create_dirs = a.create_dirs ~= false,
      expected_hash = h,
      max_compare = ctx.caps.max_file_size,
    })
    if not res then
      if wcode == "HASH_MISMATCH" then
        detail = ("expected %s, current %s; read it again before writing"):format(a.expected_hash, current)
        -- the hash asked for and the file's now ("absent": none), as
        -- edit_file's details say them (resources/update's currentVersion)
        return ctx:fail(wcode, a.path, detail, { expected = h, current = current })
      end
      return ctx:fail(wcode, a.path, detail)
    end
    undo.record(ctx, idx, rel, snap, res.content_hash)
    return { path = a.path, bytes = #data, content_hash = res.content_hash, created = res.created }
  end,

  render = function(r)
    return ("%s %s (%d bytes, %s)"):format(r.created and "Created" or "Replaced", r.path, r.bytes, r.content_hash), r
  end,
}
