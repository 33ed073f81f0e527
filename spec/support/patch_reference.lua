-- The apply_patch parser the codex pack shipped before the LPeg grammar
-- (lua/burrow/toolkit/patch_grammar.lua) replaced it: a port of
-- codex-rs/apply-patch/src/parser.rs, line by line. Test-only: the
-- reference spec/patch_grammar_spec.lua checks the grammar against on
-- random patches (the same hunks, or the same message and code). Not
-- installed, and no product code requires it.

local M = {}

local MAX_CHUNK_LINES = 10000 -- patch_grammar.MAX_CHUNK_LINES

local BEGIN, END = "*** Begin Patch", "*** End Patch"
local ADD, DELETE, UPDATE, MOVE = "*** Add File: ", "*** Delete File: ", "*** Update File: ", "*** Move to: "
local EOF_MARK = "*** End of File"

-- Linear: "%s+$" alone would retry from every byte of a whitespace run.
local function trim(s)
  local b = s:find("%S")
  return b and s:sub(b, s:find("%S%s*$", b)) or ""
end
local function starts(s, p) return s:sub(1, #p) == p end

local function hunk_error(n, msg) return nil, ("invalid hunk at line %d, %s"):format(n, msg) end

-- s split on \n, no empty last element. A plain find per line: gmatch
-- and "[^\n]*$" retry from every byte of an unterminated last line.
local function lines_of(s)
  local out, pos = {}, 1
  while true do
    local nl = s:find("\n", pos, true)
    if not nl then break end
    out[#out + 1] = s:sub(pos, nl - 1)
    pos = nl + 1
  end
  if pos <= #s then out[#out + 1] = s:sub(pos) end
  return out
end

-- Rust's str::lines: split on \n, drop a \r before it, no empty last line.
local function rust_lines(s)
  local out = lines_of(s)
  for i, l in ipairs(out) do
    if l:byte(-1) == 13 then out[i] = l:sub(1, -2) end
  end
  return out
end

local function boundaries(lines, first, last)
  local f, l = lines[first] and trim(lines[first]), lines[last] and trim(lines[last])
  if f == BEGIN and l == END and last > first then return true end
  if f ~= BEGIN then return nil, "invalid patch: The first line of the patch must be '*** Begin Patch'" end
  return nil, "invalid patch: The last line of the patch must be '*** End Patch'"
end

local function parse_chunk(lines, i, n, line_no, allow_missing)
  if i > n then return hunk_error(line_no, "Update hunk does not contain any lines") end
  local chunk = { old = {}, new = {}, eof = false }
  local start = i
  if lines[i] == "@@" then
    start = i + 1
  elseif starts(lines[i], "@@ ") then
    chunk.context, start = lines[i]:sub(4), i + 1
  elseif not allow_missing then
    return hunk_error(line_no, ("Expected update hunk to start with a @@ context marker, got: '%s'"):format(lines[i]))
  end
  if start > n then return hunk_error(line_no + 1, "Update hunk does not contain any lines") end
  local parsed = 0
  for j = start, n do
    if parsed >= MAX_CHUNK_LINES then
      return nil, ("invalid hunk at line %d, an @@ chunk has more than %d lines (max chunk lines); split it into smaller chunks")
        :format(line_no, MAX_CHUNK_LINES), "INVALID_ARGUMENT"
    end
    local l = lines[j]
    if l == EOF_MARK then
      if parsed == 0 then return hunk_error(line_no + 1, "Update hunk does not contain any lines") end
      chunk.eof, parsed = true, parsed + 1
      break
    end
    local c = l:sub(1, 1)
    if c == "" then
      chunk.old[#chunk.old + 1], chunk.new[#chunk.new + 1] = "", ""
    elseif c == " " then
      chunk.old[#chunk.old + 1], chunk.new[#chunk.new + 1] = l:sub(2), l:sub(2)
    elseif c == "+" then
      chunk.new[#chunk.new + 1] = l:sub(2)
    elseif c == "-" then
      chunk.old[#chunk.old + 1] = l:sub(2)
    else
      if parsed == 0 then
        return hunk_error(line_no + 1, ("Unexpected line found in update hunk: '%s'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)"):format(l))
      end
      break
    end
    parsed = parsed + 1
  end
  return chunk, parsed + (start - i)
end

-- One hunk at lines[i]: hunk, lines consumed; or nil, message.
local function parse_hunk(lines, i, n, line_no)
  local head = trim(lines[i])
  if starts(head, ADD) then
    local content, j = {}, i + 1
    while j <= n and lines[j]:sub(1, 1) == "+" do
      content[#content + 1] = lines[j]:sub(2) .. "\n"
      j = j + 1
    end
    return { kind = "add", path = head:sub(#ADD + 1), content = table.concat(content) }, j - i
  elseif starts(head, DELETE) then
    return { kind = "delete", path = head:sub(#DELETE + 1) }, 1
  elseif starts(head, UPDATE) then
    local h = { kind = "update", path = head:sub(#UPDATE + 1), chunks = {} }
    local j, parsed = i + 1, 1
    if j <= n and starts(lines[j], MOVE) then
      h.move_to, j, parsed = lines[j]:sub(#MOVE + 1), j + 1, parsed + 1
    end
    while j <= n do
      if trim(lines[j]) == "" then
        j, parsed = j + 1, parsed + 1
      elseif lines[j]:sub(1, 1) == "*" then
        break
      else
        local chunk, used, code = parse_chunk(lines, j, n, line_no + parsed, #h.chunks == 0)
        if not chunk then return nil, used, code end
        h.chunks[#h.chunks + 1] = chunk
        j, parsed = j + used, parsed + used
      end
    end
    if #h.chunks == 0 then
      return hunk_error(line_no, ("Update file hunk for path '%s' is empty"):format(h.path))
    end
    return h, parsed
  end
  return hunk_error(line_no, ("'%s' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'"):format(head))
end

-- The whole patch: a list of hunks, or nil, message.
local function parse_patch(text)
  local lines = rust_lines(trim(text))
  local n = #lines
  local first, last = 1, n
  local ok, berr = boundaries(lines, first, last)
  if not ok then
    -- lenient: a heredoc around the patch (apply_patch <<'EOF' ... EOF)
    local h = lines[1]
    if n >= 4 and (h == "<<EOF" or h == "<<'EOF'" or h == '<<"EOF"') and lines[n]:sub(-3) == "EOF" then
      first, last = 2, n - 1
      if not boundaries(lines, first, last) then return nil, berr end
    else
      return nil, berr
    end
  end
  local hunks, i, line_no = {}, first + 1, 2
  while i < last do
    local h, used, code = parse_hunk(lines, i, last - 1, line_no)
    if not h then return nil, used, code end
    hunks[#hunks + 1] = h
    i, line_no = i + used, line_no + used
  end
  return hunks
end

M.MAX_CHUNK_LINES = MAX_CHUNK_LINES
M.parse = parse_patch
return M
