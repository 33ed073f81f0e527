-- burrow.toolkit.patch_grammar: the apply_patch envelope of OpenAI Codex as an LPeg
-- grammar (the codex pack's parser; Codex's own is codex-rs/apply-patch's
-- parser.rs). parse(text) gives the hunks, or Codex's error string plus
-- where the fault is: line and column in the text as sent.
--
--   patch   <- ws* begin NL hunk* end ws*        (a heredoc around it is allowed)
--   hunk    <- add / delete / update
--   add     <- '*** Add File: ' path NL ('+' line NL)*
--   delete  <- '*** Delete File: ' path NL
--   update  <- '*** Update File: ' path NL ('*** Move to: ' line NL)? blank* chunk (blank / chunk)*
--   chunk   <- ('@@' / '@@ ' context)? NL cline+ ('*** End of File' NL)?   (the first may omit @@)
--   cline   <- (' ' / '+' / '-') line NL / NL
--
-- Hunks: {kind = "add", path, content} | {kind = "delete", path} |
-- {kind = "update", path, move_to?, chunks = {{context?, old = {lines},
-- new = {lines}, eof}}}.

require "burrow.core" -- first: it offers the LPeg it links as package.preload.lpeg
local lpeg = require "lpeg"
local P, S, R, C, Cp, Cc, Ct, Cg, Cmt, Cs = lpeg.P, lpeg.S, lpeg.R, lpeg.C, lpeg.Cp, lpeg.Cc, lpeg.Ct,
  lpeg.Cg, lpeg.Cmt, lpeg.Cs

local M = {}

M.MAX_CHUNK_LINES = 10000

local BEGIN, END = "*** Begin Patch", "*** End Patch"
local ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
local EOF_MARK = "*** End of File"

local NL = P "\n"
local REST = (1 - NL) ^ 0
local SP = S " \t\n\v\f\r" -- Lua's %s
local HSP = S " \t\v\f\r" -- %s within a line
local WORD = (1 - SP) ^ 1

-- The text as Codex reads it: trimmed, split on \n with a \r before it
-- dropped. `trim` captures the span; `unix` drops the \r.
local trim = SP ^ 0 * Cp() * C((SP ^ 0 * WORD) ^ 0) * SP ^ 0 * -1
local unix = Cs((P "\r" * #(NL + -1) / "" + 1) ^ 0)

-- A line whose trimmed text is s.
local function is_line(s) return HSP ^ 0 * P(s) * HSP ^ 0 * (NL + -1) end
-- A trimmed header's argument: the rest of the line, blanks after it dropped.
local ARG = C((HSP ^ 0 * (1 - SP) ^ 1) ^ 1) * HSP ^ 0

---------------------------------------------------------------------------
-- errors: raised from match-time captures, with the body position

-- code: nil for a malformed patch (the pack says INVALID_PATCH), or
-- INVALID_ARGUMENT for a limit
local function raise(pos, msg, code)
  error({ patch_grammar = true, pos = pos, msg = msg, code = code }, 0)
end

-- state of one parse: the body, and the line number of its first line
local st

local function line_at(pos)
  local n = 0
  for _ in st.body:sub(1, pos - 1):gmatch("\n") do n = n + 1 end
  return st.first_line + n
end

local function hunk_error(pos, codex_line, msg)
  raise(pos, ("invalid hunk at line %d, %s"):format(codex_line, msg))
end

local function line_text(pos) return st.body:match("^[^\n]*", pos) end

-- The text after the last \n (the whole text without one). Not
-- s:match("[^\n]*$"), which retries from every byte of a long last line.
local function last_line(s)
  local r = s:reverse():find("\n", 1, true)
  return r and s:sub(#s - r + 2) or s
end

-- s without blanks around it (linear; "^%s*(.-)%s*$" is not)
local function trimmed(s)
  local _, t = trim:match(s)
  return t
end

---------------------------------------------------------------------------
-- the hunks

local PLUS = P "+" * C(REST) * NL
local add = HSP ^ 0 * P(ADD) * Cg(ARG, "path") * NL * Cg(Ct(PLUS ^ 0) / function(t)
  for i = 1, #t do t[i] = t[i] .. "\n" end
  return table.concat(t)
end, "content") * Cg(Cc "add", "kind")

local delete = HSP ^ 0 * P(DELETE) * Cg(ARG, "path") * NL * Cg(Cc "delete", "kind")

-- One chunk line into the chunk table (the accumulator of a fold).
local function cline(kind)
  return function(chunk, text)
    if chunk.n >= M.MAX_CHUNK_LINES then
      raise(chunk.start, ("invalid hunk at line %d, an @@ chunk has more than %d lines (max chunk lines); split it into smaller chunks")
        :format(line_at(chunk.start), M.MAX_CHUNK_LINES), "INVALID_ARGUMENT")
    end
    chunk.n = chunk.n + 1
    if kind ~= "+" then chunk.old[#chunk.old + 1] = text end
    if kind ~= "-" then chunk.new[#chunk.new + 1] = text end
    return chunk
  end
end
local CLINE = (P " " * C(REST) * NL) / function(t) return { " ", t } end
  + (P "+" * C(REST) * NL) / function(t) return { "+", t } end
  + (P "-" * C(REST) * NL) / function(t) return { "-", t } end
  + NL / function() return { "", "" } end
local EOF_LINE = P(EOF_MARK) * NL

local AT_AT = P "@@" * NL
local AT_CONTEXT = P "@@ " * C(REST) * NL * Cp()
local CLINE_AT = CLINE * Cp()

-- A chunk at the cursor: allow_missing for the first of a hunk (no @@).
local function chunk_at(allow_missing)
  -- (Cp() * P(1): a chunk is never empty, and LPeg must see that in a loop)
  return Cmt(Cp() * P(1), function(s, _, i)
    local chunk = { old = {}, new = {}, eof = false, n = 0, start = i }
    -- Codex's line number of the chunk, counted only for an error (counting
    -- for every chunk would be quadratic in a patch of many chunks)
    local function codex_line() return line_at(i) end
    local j = i
    local e = AT_AT:match(s, i)
    if e then
      j = e
    else
      local ctx, e2 = AT_CONTEXT:match(s, i)
      if ctx then
        chunk.context, j = ctx, e2
      elseif not allow_missing then
        hunk_error(i, codex_line(), ("Expected update hunk to start with a @@ context marker, got: '%s'"):format(line_text(i)))
      end
    end
    if j > #s then hunk_error(j, codex_line() + 1, "Update hunk does not contain any lines") end
    if EOF_LINE:match(s, j) then hunk_error(j, codex_line() + 1, "Update hunk does not contain any lines") end
    local first = CLINE:match(s, j)
    if not first then
      hunk_error(j, codex_line() + 1, ("Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)")
        :format(line_text(j)))
    end
    -- the lines, folded into the chunk; then an optional end-of-file mark
    local pos = j
    while true do
      local l, nextpos = CLINE_AT:match(s, pos)
      if not l then break end
      cline(l[1])(chunk, l[2])
      pos = nextpos
    end
    local e3 = EOF_LINE:match(s, pos)
    if e3 then
      if chunk.n >= M.MAX_CHUNK_LINES then cline("")(chunk, "") end -- the same cap error
      chunk.eof, pos = true, e3
    end
    chunk.n, chunk.start = nil, nil
    local list = st.chunks
    list[#list + 1] = chunk
    return pos -- no capture: LPeg keeps match-time results, and a patch may have a million chunks
  end)
end

local BLANK = HSP ^ 0 * NL
local STOP = #P "*" + -1
-- the update's chunks go to st.chunks (a fresh list at each header)
local fresh_chunks = Cmt(P(true), function(_, i)
  st.chunks = {}
  return i
end)
local update = Cg(Cp(), "at") * HSP ^ 0 * P(UPDATE) * Cg(ARG, "path") * NL
  * (P(MOVE) * Cg(C(REST), "move_to") * NL) ^ -1 * fresh_chunks
  * (BLANK ^ 0 * (-STOP * chunk_at(true) * (BLANK + -STOP * chunk_at(false)) ^ 0) ^ -1)
  * Cg(Cc "update", "kind")

local bad_header = Cmt(Cp() * P(1), function(_, _, i)
  local head = trimmed(line_text(i))
  hunk_error(i, line_at(i), ("'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"):format(head))
end)

-- A hunk, checked when it is read (before the next hunk's faults, as Codex
-- reads them in order) and added to st.hunks; no capture is kept (see
-- chunk_at).
local hunk = Cmt(Ct(add + delete + update), function(_, i, h)
  if h.kind == "update" then
    h.chunks, st.chunks = st.chunks, nil
    if #h.chunks == 0 then
      hunk_error(h.at, line_at(h.at), ("Update file hunk for path '%s' is empty"):format(h.path))
    end
  end
  h.at = nil
  st.hunks[#st.hunks + 1] = h
  return i
end)

local body = (hunk + bad_header) ^ 0 * -1

---------------------------------------------------------------------------
-- the envelope

local HEREDOC = P "<<" * (P "EOF" + P "'EOF'" + P '"EOF"') * (NL + -1)
-- text (trimmed, \r\n made \n) -> first byte of the body, end of it, or nil
-- and which boundary is wrong. The body is every line between the first
-- and the last.
local function envelope(text)
  if not is_line(BEGIN):match(text) then
    return nil, "invalid patch: The first line of the patch must be '*** Begin Patch'", "first"
  end
  local first_nl = text:find("\n", 1, true)
  local last_start = 1
  for p in text:gmatch("()\n") do last_start = p + 1 end
  if not first_nl or last_start <= first_nl or not is_line(END):match(text, last_start) or last_start > #text then
    return nil, "invalid patch: The last line of the patch must be '*** End Patch'", "last"
  end
  return first_nl + 1, last_start - 1
end

--- The hunks of a patch, or nil, message, code, {line =, column =}: where
-- the fault is in the text as given. The message keeps Codex's wording and
-- its line numbers (counted from the Begin line); code is nil for a
-- malformed patch, INVALID_ARGUMENT for a chunk over MAX_CHUNK_LINES.
function M.parse(text)
  local offset, inner = trim:match(text)
  inner = unix:match(inner)
  -- lines before the patch's first line: the blank ones trimmed off
  local pre_lines = select(2, text:sub(1, offset - 1):gsub("\n", ""))
  local function at(inner_pos) -- {line, column} of a byte of `inner`
    local before = inner:sub(1, inner_pos - 1)
    return { line = pre_lines + 1 + select(2, before:gsub("\n", "")), column = #last_line(before) + 1 }
  end
  local b, e, which = envelope(inner) -- which: the line at fault, "first" or "last"
  local shift = 0 -- where the envelope starts in `inner` (a heredoc's first line)
  if not b then
    local berr = e
    local last = last_line(inner)
    local where = which == "first" and 1 or #inner - #last + 1
    -- lenient: a heredoc around the patch (apply_patch <<'EOF' ... EOF)
    local lines = select(2, inner:gsub("\n", "")) + 1
    local h_end = HEREDOC:match(inner)
    if not (h_end and lines >= 4 and last:sub(-3) == "EOF") then
      return nil, berr, nil, at(where)
    end
    local b2, e2 = envelope(inner:sub(h_end, #inner - #last - 1))
    if not b2 then return nil, berr, nil, at(where) end
    shift, b, e = h_end - 1, b2, e2
  end
  st = { body = inner:sub(shift + b, shift + e), first_line = 2, hunks = {} } -- each line ends with \n
  local hunks = st.hunks
  local ok, res = pcall(function() return body:match(st.body) end)
  st = nil
  if ok then return hunks end
  if type(res) ~= "table" or not res.patch_grammar then error(res, 0) end
  return nil, res.msg, res.code, at(shift + b + res.pos - 1)
end

return M
