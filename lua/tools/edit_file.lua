-- edit_file: replace text in a file. Every edit is matched against the
-- original text and must match once (unless replace_all); all apply, or
-- none. Line endings, BOM and tabs stay as they are. Matching, splicing
-- and the diff run in the C core (roots:edit); this file shapes the
-- arguments and words the results.

local undo = require "burrow.toolkit.undo"

local E = require "burrow.toolkit.edits"
local HOW, RUNG, explain, collect, edit_schema = E.HOW, E.RUNG, E.explain, E.collect, E.schema

local MAX_DIFF = 64 * 1024

return {
  name = "edit_file",
  title = "Edit file",
  description = [[Replace text in a file. Each edit's old_text must match exactly one place (add surrounding lines to make it unique, or set replace_all); all edits are matched against the original file, must not overlap, and either all apply or none. Line endings, BOM, tabs and the file's character encoding (UTF-16, Shift-JIS, ...: edits are made on the UTF-8 text read_file shows, a character the encoding cannot hold is refused) are kept: an old_text with LF line endings matches a CRLF file, and the new text gets the file's line endings. If old_text is not found the error names the nearest line and what differs (indentation, trailing whitespace, quotes); match="loose" then also accepts a match that ignores trailing whitespace, then indentation (new_text is re-indented to the block found), then Unicode punctuation, and the result says which level matched; where whitespace alone would choose the place or the indentation, it refuses rather than guess. Returns a unified diff and the new content_hash; pass expected_hash (from read_file) to edit only if the file has not changed, and dry_run=true to see the diff without writing.
Examples: {"path": "src/app.py", "old_text": "    return x\n", "new_text": "    return x + 1\n"}  {"path": "a.c", "edits": [{"old_text": "int a;", "new_text": "long a;"}, {"old_text": "foo(", "new_text": "bar(", "replace_all": true}]}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "File to edit: relative to the first root, or an absolute path under a root." },
      edits = { type = "array", items = edit_schema, description = "Edits, all matched against the original text." },
      old_text = { type = "string", description = "Shorthand for one edit: the text to find." },
      new_text = { type = "string", description = "Shorthand for one edit: its replacement." },
      replace_all = { type = "boolean", description = "Shorthand for one edit: replace every match." },
      expected_hash = { type = "string", description = "Edit only if the file's content_hash is still this (from read_file or an earlier edit)." },
      dry_run = { type = "boolean", description = "Return the diff without writing (default false)." },
      charset = { type = "string", description = "The file's character encoding, over the one detected (read_file's charset); the file is written back in it." },
      match = { type = "string", enum = { "exact", "loose" }, description = "exact (default) or loose: also ignore trailing whitespace, then indentation, then Unicode punctuation." },
    },
    required = { "path" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      replacements = { type = "integer" },
      level = { type = "string", enum = { "exact", "trailing_whitespace", "indentation", "unicode" } },
      edits = {
        type = "array",
        items = {
          type = "object",
          properties = {
            replacements = { type = "integer" },
            level = { type = "string", enum = { "exact", "trailing_whitespace", "indentation", "unicode" } },
            line = { type = "integer" },
          },
        },
      },
      content_hash = { type = "string" },
      previous_content_hash = { type = "string" },
      size = { type = "integer" },
      first_changed_line = { type = "integer" },
      added_lines = { type = "integer" },
      removed_lines = { type = "integer" },
      diff = { type = "string" },
      diff_truncated = { type = "boolean" },
      dry_run = { type = "boolean" },
      charset = { type = "string" },
    },
    required = { "path", "replacements", "content_hash", "diff" },
  },
  kind = "modify", -- annotations, permissions and risk (burrow.toolkit.kinds)
  records_undo = true, -- undo_edit takes it back (ctx:resolve_write asks a shared undo store first)
  reads = true, -- its answer shows parts of the file: judged as a read too
  commit_size = true, -- policies see the bytes placed, per replacement (ctx:commit)

  handler = function(ctx, a)
    local edits, eerr, edit_i = collect(a)
    if not edits then return ctx:fail("INVALID_ARGUMENT", a.path, eerr, { argument = "edits", edit = edit_i }) end
    local h = a.expected_hash and a.expected_hash:lower()
    if h and not h:match("^sha256:%x+$") then
      return ctx:fail("INVALID_ARGUMENT", a.path, "expected_hash must be \"sha256:<hex>\" from read_file",
        { argument = "expected_hash" })
    end
    local resolve = a.dry_run and ctx.resolve or ctx.resolve_write
    local idx, rel, code0 = resolve(ctx, a.path)
    if not idx then return nil, rel, code0 end
    local res, detail, code, extra = ctx.roots:edit(idx, rel, edits, {
      -- bounded: a cancel or max_edit_ms ends the matching, nothing written
      max_ms = ctx:ms_left("max_edit_ms"),
      match = a.match,
      charset = a.charset,
      charsets = ctx.ws.charsets, -- the operator's fallback list (config charsets:)
      expected_hash = h,
      dry_run = a.dry_run,
      max_bytes = ctx.caps.max_file_size,
      max_diff = math.min(MAX_DIFF, ctx.caps.max_result_bytes // 2),
      keep_original = not a.dry_run and undo.limit(ctx) or 0,
      commit = function(bytes) return ctx:commit("path", bytes) end,
    })
    if not res then return E.failure(ctx, a.path, code, detail, extra, a, #edits) end
    if not a.dry_run then
      local snap = res.original and { kind = "content", before = res.original }
        or { kind = "too_large", size = res.old_size }
      undo.record(ctx, idx, rel, snap, res.content_hash)
    end
    local out, total, level = {}, 0, "exact"
    for i, e in ipairs(res.edits) do
      out[i] = { replacements = e.count, level = e.level, line = e.line }
      total = total + e.count
      if RUNG[e.level] > RUNG[level] then level = e.level end
    end
    return {
      path = a.path,
      replacements = total,
      level = level,
      edits = require("burrow.core").json.array(out),
      content_hash = res.content_hash,
      previous_content_hash = res.previous_content_hash,
      size = res.size,
      first_changed_line = res.first_line,
      added_lines = res.added,
      removed_lines = res.removed,
      -- the diff shows the file's text: tagged as data with untrusted_boundary
      diff = (function(d) return ctx.caps.untrusted_boundary and ctx:untrusted(d, a.path) or d end)(
        ("--- %s\n+++ %s\n%s"):format(a.path, a.path, res.diff)),
      diff_truncated = res.diff_truncated,
      dry_run = a.dry_run or false,
      charset = res.charset,
    }
  end,

  render = function(r)
    local notes = {}
    for i, e in ipairs(r.edits) do
      if e.level ~= "exact" then
        notes[#notes + 1] = ("edit %d matched at level %s (%s%s)"):format(i, e.level, HOW[e.level],
          e.level ~= "trailing_whitespace" and "; new_text re-indented to the block" or "")
      end
    end
    local head = ("%s %s: %d replacement%s, +%d -%d lines, %s"):format(
      r.dry_run and "Dry run, nothing written:" or "Edited", r.path, r.replacements,
      r.replacements == 1 and "" or "s", r.added_lines, r.removed_lines, r.content_hash)
    local text = head .. "\n" .. (#notes > 0 and table.concat(notes, "\n") .. "\n" or "") .. r.diff
    if r.diff_truncated then
      text = text .. ("[diff cut; the change starts at line %d: read_file shows the rest]\n"):format(r.first_changed_line)
    end
    return text, r
  end,
}
