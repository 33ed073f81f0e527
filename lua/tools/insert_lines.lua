-- insert_lines: insert text as whole lines before a line number. It takes
-- the file's line endings and the edit engine's atomic compare-and-set
-- write (roots:insert), and returns the diff like edit_file.

local undo = require "burrow.toolkit.undo"

local MAX_DIFF = 64 * 1024

return {
  name = "insert_lines",
  title = "Insert lines",
  description = [[Insert text into a file before line `line` (1-based; the file's line count + 1 appends at the end). The text is inserted as whole lines: a final newline is added if it has none, and its line endings become the file's (CRLF stays CRLF). The write is atomic; pass expected_hash (from read_file) to insert only if the file has not changed. Returns a unified diff and the new content_hash.
Examples: {"path": "src/main.c", "line": 1, "content": "#include <stdio.h>"}  {"path": "notes.md", "line": 12, "content": "- new item\n- another\n"}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "File to change: relative to the first root, or an absolute path under a root." },
      line = { type = "integer", minimum = 1, description = "Insert before this line (1-based); total lines + 1 appends." },
      content = { type = "string", description = "The lines to insert." },
      expected_hash = { type = "string", description = "Insert only if the file's content_hash is still this." },
      dry_run = { type = "boolean", description = "Return the diff without writing (default false)." },
    },
    required = { "path", "line", "content" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      line = { type = "integer" },
      lines_inserted = { type = "integer" },
      total_lines = { type = "integer" },
      content_hash = { type = "string" },
      previous_content_hash = { type = "string" },
      diff = { type = "string" },
      dry_run = { type = "boolean" },
    },
    required = { "path", "line", "content_hash", "diff" },
  },
  kind = "append", -- annotations, permissions and risk (burrow.toolkit.kinds)
  records_undo = true, -- undo_edit takes it back (ctx:resolve_write asks a shared undo store first)
  reads = true, -- its answer shows parts of the file: judged as a read too

  handler = function(ctx, a)
    if a.content == "" then return ctx:fail("INVALID_ARGUMENT", a.path, "content is empty; nothing to insert") end
    local h = a.expected_hash and a.expected_hash:lower()
    if h and not h:match("^sha256:%x+$") then
      return ctx:fail("INVALID_ARGUMENT", a.path, "expected_hash must be \"sha256:<hex>\" from read_file")
    end
    local resolve = a.dry_run and ctx.resolve or ctx.resolve_write
    local idx, rel, code0 = resolve(ctx, a.path)
    if not idx then return nil, rel, code0 end
    local res, detail, code, extra = ctx.roots:insert(idx, rel, a.line, a.content, {
      charsets = ctx.ws.charsets, -- the operator's fallback list (config charsets:)
      expected_hash = h,
      dry_run = a.dry_run,
      max_bytes = ctx.caps.max_file_size,
      max_diff = math.min(MAX_DIFF, ctx.caps.max_result_bytes // 2),
      keep_original = not a.dry_run and undo.limit(ctx) or 0,
    })
    if not res then
      if code == "HASH_MISMATCH" then
        detail = ("expected %s, current %s; read it again before editing"):format(a.expected_hash, extra)
      elseif code == "INVALID_ARGUMENT" and type(extra) == "table" then
        detail = ("line %d is out of range: the file has %d lines; use 1 to %d (%d appends)")
          :format(a.line, extra.total_lines, extra.total_lines + 1, extra.total_lines + 1)
      elseif code == "TOO_LARGE" then
        detail = ("over max_file_size (%d bytes)"):format(ctx.caps.max_file_size)
      end
      return ctx:fail(code, a.path, detail)
    end
    if not a.dry_run then
      local snap = res.original and { kind = "content", before = res.original }
        or { kind = "too_large", size = res.old_size }
      undo.record(ctx, idx, rel, snap, res.content_hash)
    end
    return {
      path = a.path,
      line = a.line,
      lines_inserted = res.added - res.removed,
      total_lines = res.total_lines + res.added - res.removed,
      content_hash = res.content_hash,
      previous_content_hash = res.previous_content_hash,
      diff = ("--- %s\n+++ %s\n%s"):format(a.path, a.path, res.diff),
      dry_run = a.dry_run or false,
    }
  end,

  render = function(r)
    return ("%s %d line%s before line %d of %s (now %d lines), %s\n%s"):format(
      r.dry_run and "Dry run, nothing written: would insert" or "Inserted", r.lines_inserted,
      r.lines_inserted == 1 and "" or "s", r.line, r.path, r.total_lines, r.content_hash, r.diff), r
  end,
}
