-- burrow.toolkit.edits: what edit_file and edit_files share: the edits of a call
-- (edits[] and the old_text/new_text shorthand) checked, their schema, the
-- ladder's rungs, and a failed edit worded for a model from the core's
-- diagnosis (roots:edit's fourth value).

local edits = {}

local core = require "burrow.core"

local function utf8_name(cs) return cs:lower():gsub("_", "-") == "utf-8" or cs:lower() == "utf8" end

--- Text content in a file's character encoding (write_file, edit_files'
-- content): the one named (want), else the one the file's current bytes
-- (old, nil for a new file) have, detected as read_file does, behind the
-- BOM they have; a new file or a UTF-8 one gets the text as it is.
function edits.encode(ctx, old, want, text)
  local cs, bom, utf8
  if old then cs, bom, utf8 = core.charset_detect(old, ctx.ws.charsets) end
  if want then
    if not cs or cs ~= want:lower() then bom = 0 end
    cs, utf8 = want:lower(), utf8_name(want)
  end
  if not cs or utf8 then return text end
  local bytes, err, code = core.charset_encode(cs, text)
  if not bytes then return nil, err, code end
  return (bom or 0) > 0 and core.charset_bom(cs) .. bytes or bytes
end

edits.HOW = {
  exact = "exactly",
  trailing_whitespace = "when trailing whitespace is ignored",
  indentation = "when indentation is ignored",
  unicode = "when quotes, dashes and odd spaces are folded",
}

-- The ladder's rungs in order: a result's level is its loosest edit's.
edits.RUNG = { exact = 1, trailing_whitespace = 2, indentation = 3, unicode = 4 }

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
function edits.explain(code, d, loose)
  if code == "NOT_FOUND_TEXT" then
    local head = ("edit %d: old_text is not in the file"):format(d.edit)
    if d.near_level then
      return ("%s as written; it matches at line %d %s%s. Fix old_text, or pass match=\"loose\"")
        :format(head, d.near_line, edits.HOW[d.near_level], diverges(d))
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
    local how = d.level ~= "exact" and (" " .. edits.HOW[d.level]) or ""
    return ("edit %d: old_text matches %d places%s, on lines %s; add surrounding lines to make it unique, or set replace_all=true")
      :format(d.edit, d.matches, how, lines_list(d.lines, d.matches))
  elseif code == "OVERLAPPING_EDITS" then
    return ("edits %d and %d overlap at line %d; merge them into one edit"):format(d.edit, d.other, d.line)
  end
end

-- The edits of a call: edits[] plus the old_text/new_text shorthand.
function edits.collect(a)
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

edits.schema = {
  type = "object",
  properties = {
    old_text = { type = "string", description = "Text to find: copy it from the file, with enough lines around it to be unique." },
    new_text = { type = "string", description = "Text to put in its place (may be empty to delete)." },
    replace_all = { type = "boolean", description = "Replace every place old_text matches (default false: it must match exactly once)." },
  },
  required = { "old_text", "new_text" },
  additionalProperties = false,
}

--- A failed roots:edit worded for the agent (code, detail and the core's
-- fourth value as roots:edit gave them; a: the call's arguments, for its
-- expected_hash and match; n: the edits asked): nil, message, code, details.
function edits.failure(ctx, path, code, detail, extra, a, n, more)
  local details = more or {}
  if code == "TOO_LARGE" and type(extra) == "table" and extra.on == "time" then
    return ctx:fail(code, path, ("%s (max_edit_ms=%d) matching %d edits: nothing was written; send fewer edits per call")
      :format(detail, ctx.caps.max_edit_ms, n), { limit = "max_edit_ms", max = ctx.caps.max_edit_ms })
  end
  if code == "HASH_MISMATCH" then
    detail = ("expected %s, current %s; read it again before editing"):format(a.expected_hash, extra)
    details.expected, details.current = a.expected_hash, extra
  elseif type(extra) == "table" then
    -- the core's diagnosis as it is: edit, matches, lines, level, near_*...
    for k, v in pairs(extra) do details[k] = v end
    if code == "INVALID_ARGUMENT" then detail = ("edit %d: %s"):format(extra.edit, detail)
    else detail = edits.explain(code, extra, a.match == "loose") end
  elseif code == "TOO_LARGE" then
    detail = ("over max_file_size (%d bytes)"):format(ctx.caps.max_file_size)
    details.limit, details.max = "max_file_size", ctx.caps.max_file_size
  end
  return ctx:fail(code, path, detail, details)
end

-- s as lines (each with its newline, the last maybe without).
local function lines_of(s)
  local out, pos = {}, 1
  while pos <= #s do
    local nl = s:find("\n", pos, true) or #s
    out[#out + 1] = s:sub(pos, nl)
    pos = nl + 1
  end
  return out
end

--- The unified hunk of a whole content replaced (old or new nil: a file
-- created or removed): the lines the two share at either end left out
-- but for 3 of context, the rest as one hunk, cut at max bytes. The
-- hunk, the first changed line, lines added and removed, cut.
function edits.whole_diff(old, new, max)
  local a, b = lines_of(old or ""), lines_of(new or "")
  local head = 0
  while head < #a and head < #b and a[head + 1] == b[head + 1] do head = head + 1 end
  local tail = 0
  while tail < #a - head and tail < #b - head and a[#a - tail] == b[#b - tail] do tail = tail + 1 end
  local c1, c2 = math.min(3, head), math.min(3, tail)
  local from, a_to, b_to = head - c1 + 1, #a - tail + c2, #b - tail + c2
  local out, size, cut = {}, 0, false
  local function put(sign, l)
    if cut then return end
    local line = sign .. l .. (l:sub(-1) == "\n" and "" or "\n\\ No newline at end of file\n")
    if size + #line > max then cut = true return end
    out[#out + 1], size = line, size + #line
  end
  for i = from, head do put(" ", a[i]) end
  for i = head + 1, #a - tail do put("-", a[i]) end
  for i = head + 1, #b - tail do put("+", b[i]) end
  for i = #a - tail + 1, a_to do put(" ", a[i]) end
  local na, nb = a_to - from + 1, b_to - from + 1
  local hunk = ("@@ -%d,%d +%d,%d @@\n"):format(na > 0 and from or from - 1, na, nb > 0 and from or from - 1, nb)
  return hunk .. table.concat(out), head + 1, #b - tail - head, #a - tail - head, cut
end

--- The loosest rung of a result's edits ({level =}...).
function edits.level(list)
  local level = "exact"
  for _, e in ipairs(list) do
    if edits.RUNG[e.level] > edits.RUNG[level] then level = e.level end
  end
  return level
end

return edits
