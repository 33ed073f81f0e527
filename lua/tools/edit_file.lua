-- edit_file: replace text in a file. Every edit is matched against the
-- original text and must match once (unless replace_all); all apply, or
-- none. Line endings, BOM and tabs stay as they are. Matching, splicing
-- and the diff run in the C core (roots:edit); this file shapes the
-- arguments and words the results.

local undo = require "burrow.undo"

local MAX_DIFF = 64 * 1024

local HOW = {
  exact = "exactly",
  trailing_whitespace = "when trailing whitespace is ignored",
  indentation = "when indentation is ignored",
  unicode = "when quotes, dashes and odd spaces are folded",
}

-- The ladder's rungs in order: a result's level is its loosest edit's.
local RUNG = { exact = 1, trailing_whitespace = 2, indentation = 3, unicode = 4 }

local function lines_list(t, total)
  local s = {}
  for i, l in ipairs(t) do s[i] = tostring(l) end
  return table.concat(s, ", ") .. (#t >= 20 and total > #t and ", ..." or "")
end

local function quote(s)
  return "`" .. (s or ""):gsub("\t", "\\t") .. "`"
end

-- Where the block stops matching, from the core's diagnosis.
local function diverges(d)
  if not d.diverge_line then return "" end
  if d.differs == "the end of the file" then
    return ("; old_text goes on past the end of the file (%s)"):format(quote(d.want_text))
  end
  if d.diverge_line == d.near_line and not d.near_level then
    return (" (it differs in %s; old_text has %s)"):format(d.differs or "the text", quote(d.want_text))
  end
  return ("; the block first differs at line %d (%s): the file has %s, old_text has %s")
    :format(d.diverge_line, d.differs or "the text", quote(d.have_text), quote(d.want_text))
end

-- The detail of a failed edit, worded for a model.
local function explain(code, d, loose)
  if code == "NOT_FOUND_TEXT" then
    local head = ("edit %d: old_text is not in the file"):format(d.edit)
    if d.near_level then
      return ("%s as written; it matches at line %d %s%s. Fix old_text, or pass match=\"loose\"")
        :format(head, d.near_line, HOW[d.near_level], diverges(d))
    end
    if d.near_line then
      return ("%s%s; the nearest line is %d (%d%% similar): %s%s. Read the file again around that line")
        :format(head, loose and " at any level" or "", d.near_line, d.near_percent, quote(d.near_text), diverges(d))
    end
    return head .. " and no line is similar; read the file again"
  elseif code == "AMBIGUOUS_TEXT" and d.found_line then
    return ("edit %d: old_text is at line %d as written, but matches %d places when indentation is ignored, on lines %s; with match=\"loose\" its indentation cannot be what picks one, nothing written. Add surrounding lines to make it unique, or pass match=\"exact\" if its indentation is exactly the file's")
      :format(d.edit, d.found_line, d.matches, lines_list(d.lines, d.matches))
  elseif code == "AMBIGUOUS_TEXT" and d.after_indent then
    return ("edit %d: old_text matches line %d only after the line's indentation (the file has %s), and old_text has no other line to show whether new_text's lines are indented as in the file or relative to old_text, so new_text's line %d (%s) cannot be placed without guessing; nothing written. Give old_text from the start of its line, with the file's indentation (or match=\"exact\" to place new_text as written)")
      :format(d.edit, d.lines[1], quote(d.have_text), d.reindent_line, quote(d.new_line_text))
  elseif code == "AMBIGUOUS_TEXT" and d.reindent_line then
    local why = d.diverge_line
      and ("its indentation differs from the file's by different amounts (line %d: the file has %s, old_text has %s)")
        :format(d.diverge_line, quote(d.have_text), quote(d.want_text))
      or "that line is indented less than the indentation old_text has beyond the file's"
    return ("edit %d: old_text matches line %d only when indentation is ignored, and %s, so new_text's line %d (%s) cannot be re-indented without guessing; nothing written. Copy old_text and new_text with the file's own indentation")
      :format(d.edit, d.lines[1], why, d.reindent_line, quote(d.new_line_text))
  elseif code == "AMBIGUOUS_TEXT" then
    local how = d.level ~= "exact" and (" " .. HOW[d.level]) or ""
    return ("edit %d: old_text matches %d places%s, on lines %s; add surrounding lines to make it unique, or set replace_all=true")
      :format(d.edit, d.matches, how, lines_list(d.lines, d.matches))
  elseif code == "OVERLAPPING_EDITS" then
    return ("edits %d and %d overlap at line %d; merge them into one edit"):format(d.edit, d.other, d.line)
  end
end

-- The edits of a call: edits[] plus the old_text/new_text shorthand.
local function collect(a)
  local edits = {}
  for _, e in ipairs(a.edits or {}) do
    edits[#edits + 1] = { old_text = e.old_text, new_text = e.new_text, replace_all = e.replace_all }
  end
  if a.old_text ~= nil or a.new_text ~= nil then
    if a.old_text == nil or a.new_text == nil then
      return nil, "old_text and new_text go together"
    end
    edits[#edits + 1] = { old_text = a.old_text, new_text = a.new_text, replace_all = a.replace_all }
  end
  if #edits == 0 then return nil, "give edits: [{old_text, new_text}], or old_text and new_text" end
  for i, e in ipairs(edits) do
    if e.old_text == "" then
      return nil, ("edit %d: old_text is empty; to add text use insert_lines or append_file, to create a file write_file"):format(i), i
    end
    if e.old_text == e.new_text then
      return nil, ("edit %d: old_text and new_text are the same; nothing to change"):format(i), i
    end
  end
  return edits
end

local edit_schema = {
  type = "object",
  properties = {
    old_text = { type = "string", description = "Text to find: copy it from the file, with enough lines around it to be unique." },
    new_text = { type = "string", description = "Text to put in its place (may be empty to delete)." },
    replace_all = { type = "boolean", description = "Replace every place old_text matches (default false: it must match exactly once)." },
  },
  required = { "old_text", "new_text" },
  additionalProperties = false,
}

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
  kind = "modify", -- annotations, permissions and risk (burrow.kinds)
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
    if not res then
      local details = {}
      if code == "TOO_LARGE" and type(extra) == "table" and extra.on == "time" then
        return ctx:fail(code, a.path, ("%s (max_edit_ms=%d) matching %d edits: nothing was written; send fewer edits per call")
          :format(detail, ctx.caps.max_edit_ms, #edits), { limit = "max_edit_ms", max = ctx.caps.max_edit_ms })
      end
      if code == "HASH_MISMATCH" then
        detail = ("expected %s, current %s; read it again before editing"):format(a.expected_hash, extra)
        details.expected, details.current = a.expected_hash, extra
      elseif type(extra) == "table" then
        -- the core's diagnosis as it is: edit, matches, lines, level, near_*...
        for k, v in pairs(extra) do details[k] = v end
        if code == "INVALID_ARGUMENT" then detail = ("edit %d: %s"):format(extra.edit, detail)
        else detail = explain(code, extra, a.match == "loose") end
      elseif code == "TOO_LARGE" then
        detail = ("over max_file_size (%d bytes)"):format(ctx.caps.max_file_size)
        details.limit, details.max = "max_file_size", ctx.caps.max_file_size
      end
      return ctx:fail(code, a.path, detail, details)
    end
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
