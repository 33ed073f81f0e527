-- codex: OpenAI Codex's file tools: apply_patch (the `*** Begin Patch`
-- grammar, Codex's parser and seek_sequence semantics, its texts and error
-- strings) and the read tools read_file (`L{n}: `), list_dir, grep_files.
-- Every read, write and removal is a native call (ctx:call); the pack only
-- parses the patch and splices lines. apply_patch is all-or-nothing across
-- files (Codex is not): every target is read and every new content
-- computed before anything is written, then one edit_files call changes
-- them all (adds, deletes and moves included) or none, each compared with
-- the hash read (docs/tools.md, edit_files).
-- Deviations are in docs/packs.md.

local core = require "burrow.core"
local P = require "burrow.pack"
local MAX_INTEGER = require("burrow.toolkit.schema").MAX_INTEGER -- numbers past it: INVALID_ARGUMENT

local LINE_CAP = 500 -- bytes per line in read_file and per name in list_dir
local BOM = "\239\187\191"

-- What one patch may ask, so none can keep the server busy: its size and
-- the line comparisons all its chunks may cost (matching is linear per
-- chunk, this bounds the sum over many chunks); the lines of one @@ chunk
-- are patch_grammar.MAX_CHUNK_LINES.
local MAX_PATCH_BYTES = 16 * 1024 * 1024
local MAX_MATCH_STEPS = 1 << 23

local err = P.invalid

---------------------------------------------------------------------------
-- String helpers (the patch itself is parsed by lua/burrow/toolkit/patch_grammar.lua)

-- Linear: "%s+$" alone would retry from every byte of a whitespace run.
local function rstrip(s)
  local e = s:find("%S%s*$")
  return e and s:sub(1, e) or ""
end
local function trim(s)
  local b = s:find("%S")
  return b and s:sub(b, s:find("%S%s*$", b)) or ""
end
local function starts(s, p) return s:sub(1, #p) == p end

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

---------------------------------------------------------------------------
-- seek_sequence (codex-rs/apply-patch/src/seek_sequence.rs): the first
-- place at or after `from` where the pattern matches, trying the levels
-- exact -> rstrip -> trim -> unicode over the whole range before the next.
-- Codex's first-match-after-a-cursor semantics are the dialect itself:
-- edit_file's unique-match rule would refuse patches Codex applies.

local FOLD = {}
for cp = 0x2010, 0x2015 do FOLD[utf8.char(cp)] = "-" end
FOLD[utf8.char(0x2212)] = "-"
for cp = 0x2018, 0x201B do FOLD[utf8.char(cp)] = "'" end
for cp = 0x201C, 0x201F do FOLD[utf8.char(cp)] = '"' end
for _, cp in ipairs { 0xA0, 0x202F, 0x205F, 0x3000 } do FOLD[utf8.char(cp)] = " " end
for cp = 0x2002, 0x200A do FOLD[utf8.char(cp)] = " " end

local function fold(s)
  s = trim(s)
  if not s:find("[\128-\255]") then return s end
  return (s:gsub("[\194-\244][\128-\191]*", function(ch) return FOLD[ch] end))
end

local LEVELS = {
  { "exact", function(s) return s end },
  { "rstrip", rstrip },
  { "trim", trim },
  { "unicode", fold },
}

-- A file's lines as small integers per level, built once per level on
-- first use: equal ids, equal lines at that level; at[id] lists the lines
-- holding an id, in order; missed[ids of a chunk] is the earliest cursor
-- from which those lines were not found.
local function level_index(view, li)
  local x = view[li]
  if x then return x end
  local f = LEVELS[li][2]
  local ids, map, at, n = {}, {}, {}, 0
  for i, l in ipairs(view.lines) do
    local k = f(l)
    local id = map[k]
    if not id then n = n + 1; id = n; map[k] = id; at[id] = {} end
    ids[i] = id
    local a = at[id]
    a[#a + 1] = i
  end
  x = { ids = ids, map = map, at = at, missed = {} }
  view[li] = x
  return x
end

-- The first index of the ascending list a whose value is >= v (#a + 1 if none).
local function first_from(a, v)
  local lo, hi = 1, #a + 1
  while lo < hi do
    local mid = (lo + hi) // 2
    if a[mid] < v then lo = mid + 1 else hi = mid end
  end
  return lo
end

-- The first i in [s, e] with t[i .. i+#p-1] == p (Knuth-Morris-Pratt: no
-- position is compared twice, so identical lines cost no more than any
-- other), and the steps it took.
local function kmp(t, s, e, p)
  local np, fail, k = #p, { 0 }, 0
  for q = 2, np do
    while k > 0 and p[k + 1] ~= p[q] do k = fail[k] end
    if p[k + 1] == p[q] then k = k + 1 end
    fail[q] = k
  end
  local m = 0
  for j = s, e + np - 1 do
    local c = t[j]
    while m > 0 and p[m + 1] ~= c do m = fail[m] end
    if p[m + 1] == c then m = m + 1 end
    if m == np then return j - np + 1, j - s + 1 + np end
  end
  return nil, e - s + 2 * np
end

-- The same answer from the places of the pattern's rarest line: each is
-- a candidate start, checked line by line.
local function candidates(t, s, e, p, places, k, from)
  local np, steps = #p, 0
  for c = from, #places do
    local i = places[c] - k + 1
    if i > e then break end
    local ok = true
    for q = 1, np do
      steps = steps + 1
      if t[i + q - 1] ~= p[q] then ok = false break end
    end
    if ok then return i, steps end
  end
  return nil, steps
end

-- seek_sequence over a view {lines = ...}: the same answers as trying
-- every position at each level. A level is ruled out at once when a line
-- of the chunk does not occur after the cursor, or when the same lines
-- were already missed there from an earlier cursor; otherwise the chunk's
-- rarest line gives the candidates, or, when they would cost more than a
-- scan, KMP scans: time linear in the lines searched either way.
-- work.steps counts the line comparisons of the whole patch; past
-- MAX_MATCH_STEPS the second value is "limit".
local function seek(view, pattern, from, eof, work)
  local np, nl = #pattern, #view.lines
  if np == 0 then return from, "exact" end
  if np > nl then return nil end
  local s, e = (eof and nl >= np) and (nl - np + 1) or from, nl - np + 1
  if s > e then return nil end
  for li, lv in ipairs(LEVELS) do
    local x, p = level_index(view, li), {}
    local rare, rare_from, fewest = nil, nil, math.huge
    for k = 1, np do
      local id = x.map[lv[2](pattern[k])]
      local places = id and x.at[id]
      local c = places and first_from(places, s + k - 1)
      if not c or c > #places then p = nil break end
      p[k] = id
      if #places - c < fewest then rare, rare_from, fewest = k, c, #places - c end
    end
    work.steps = work.steps + np
    local key = p and table.concat(p, " ")
    if p and (x.missed[key] or math.huge) > s then
      local at, steps
      if (fewest + 1) * np <= e - s + 2 * np then
        at, steps = candidates(x.ids, s, e, p, x.at[p[rare]], rare, rare_from)
      else
        at, steps = kmp(x.ids, s, e, p)
      end
      work.steps = work.steps + steps
      if at then return at, lv[1] end
      x.missed[key] = s -- no match from s on: none from any later cursor
    end
    if work.steps > MAX_MATCH_STEPS then return nil, "limit" end
  end
end

-- Codex's apply_replacements (sorted by start, stable; applied from the
-- last: remove the old lines that exist, insert the new) in linear time:
-- starts only decrease, so the lines before the current start are still
-- the original ones and the rest is a stack whose top is the front.
local function splice(lines, reps)
  local rest, top = {}, #lines + 1
  for r = #reps, 1, -1 do
    local at, len, new = reps[r][1], reps[r][2], reps[r][3]
    for i = top - 1, at, -1 do rest[#rest + 1] = lines[i] end
    top = math.min(top, at)
    for _ = 1, math.min(len, #rest) do rest[#rest] = nil end
    for k = #new, 1, -1 do rest[#rest + 1] = new[k] end
  end
  local out = table.move(lines, 1, top - 1, 1, {})
  for i = #rest, 1, -1 do out[#out + 1] = rest[i] end
  return out
end

local function too_much_work(path)
  return nil, ("matching the chunks for %s took more than %d line comparisons (max match steps); split the patch or give chunks context that occurs less often")
    :format(path, MAX_MATCH_STEPS), "INVALID_ARGUMENT"
end

-- The new content of `path` (old content `text`) after its chunks, or
-- nil, message, code. CRLF files keep CRLF and a BOM stays (deviations).
local function apply_chunks(text, path, chunks, levels, work)
  local bom = starts(text, BOM) and BOM or ""
  text = text:sub(#bom + 1)
  local _, nl = text:gsub("\n", "")
  local _, crlf = text:gsub("\r\n", "")
  local eol = (nl > 0 and crlf == nl) and "\r\n" or "\n"
  local lines = {} -- split('\n') then drop the trailing empty element
  for l in (text .. "\n"):gmatch("([^\n]*)\n") do
    lines[#lines + 1] = eol == "\r\n" and l:gsub("\r$", "") or l
  end
  if lines[#lines] == "" then lines[#lines] = nil end
  local view = { lines = lines }

  local reps, cursor = {}, 1
  for ci, c in ipairs(chunks) do
    if c.context then
      local at, why = seek(view, { c.context }, cursor, false, work)
      if why == "limit" then return too_much_work(path) end
      if not at then return nil, ("Failed to find context '%s' in %s"):format(c.context, path), "NOT_FOUND_TEXT" end
      cursor = at + 1
    end
    if #c.old == 0 then
      local at = (lines[#lines] == "") and #lines or #lines + 1
      reps[#reps + 1] = { at, 0, c.new, ci }
      levels[#levels + 1] = { file = path, chunk = ci, level = "exact" }
    else
      local old, new = c.old, c.new
      local at, level = seek(view, old, cursor, c.eof, work)
      if not at and level == nil and old[#old] == "" then
        old = table.move(old, 1, #old - 1, 1, {})
        if new[#new] == "" then new = table.move(new, 1, #new - 1, 1, {}) end
        at, level = seek(view, old, cursor, c.eof, work)
      end
      if level == "limit" then return too_much_work(path) end
      if not at then
        return nil, ("Failed to find expected lines in %s:\n%s"):format(path, table.concat(c.old, "\n")), "NOT_FOUND_TEXT"
      end
      if (level == "trim" or level == "unicode") and #new > 0 then
        -- found with indentation ignored: the new lines take the change the
        -- old ones needed (edit.c's rule, deviation from Codex, which keeps
        -- them as sent), or the chunk is refused rather than guessed
        local block = table.concat(lines, "\n", at, at + #old - 1) .. "\n"
        local re, _, rcode, bad = core.reindent(table.concat(old, "\n") .. "\n", block, table.concat(new, "\n") .. "\n")
        if not re then
          return nil, ("Chunk %d of %s matches only with indentation ignored, and its new line %d (%s) cannot be re-indented to the file's without guessing; send the lines with the file's indentation")
            :format(ci, path, bad or 0, tostring(new[bad or 0])), rcode
        end
        new = {}
        for l in re:gmatch("([^\n]*)\n") do new[#new + 1] = l end
      end
      reps[#reps + 1] = { at, #old, new, ci }
      levels[#levels + 1] = { file = path, chunk = ci, level = level }
      cursor = at + #old
    end
  end
  table.sort(reps, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[4] < b[4]) end)
  lines = splice(lines, reps)
  if lines[#lines] ~= "" then lines[#lines + 1] = "" end
  return bom .. table.concat(lines, eol)
end

---------------------------------------------------------------------------
-- Applying a patch: a virtual view of every touched path, then one
-- edit_files change of all of them.

local function key_of(path)
  return (path:gsub("/+", "/"):gsub("^%./", ""):gsub("/%./", "/"))
end

local function os_error(code)
  if code == "ENOENT" then return "No such file or directory (os error 2)" end
  if code == "EISDIR" then return "Is a directory (os error 21)" end
end

-- The state of one path: its pre-image (read once) and its content now.
local function state(ctx, files, order, path)
  local k = key_of(path)
  local f = files[k]
  if f then return f end
  local r, msg, code = ctx:call("read_file", { path = path, encoding = "base64" })
  if not r and code ~= "ENOENT" then return nil, msg, code end
  f = { path = path }
  if r then
    f.pre, f.pre_hash = core.base64_decode(r.content), r.content_hash
  end
  f.base = f.pre
  -- a file in another encoding (read_file's charset) is patched as its
  -- UTF-8 text and written back in that encoding (a deviation: Codex
  -- reads UTF-8 only)
  local cs, bom, utf8ok = nil, 0, true
  if f.pre then cs, bom, utf8ok = core.charset_detect(f.pre, ctx.ws.charsets) end
  if cs and not utf8ok then
    local text = core.charset_decode(cs, f.pre:sub(bom + 1))
    if text then f.base, f.charset = text, cs end
  end
  f.cur = f.base
  files[k], order[#order + 1] = f, k
  return f
end

local function apply_patch(ctx, a)
  if #(a.input or "") > MAX_PATCH_BYTES then
    return err(("the patch is %d bytes, over the limit of %d (max patch bytes); split it into smaller patches")
      :format(#a.input, MAX_PATCH_BYTES), "INVALID_ARGUMENT")
  end
  local hunks, perr, pcode = require("burrow.toolkit.patch_grammar").parse(a.input or "")
  if not hunks then return err(perr, pcode or "INVALID_PATCH") end
  if #hunks == 0 then return err("No files were modified.", "INVALID_PATCH") end

  -- 1. read every target and compute every new content, writing nothing
  local files, order, levels, work = {}, {}, {}, { steps = 0 }
  local added, modified, deleted = {}, {}, {}
  for _, h in ipairs(hunks) do
    local f, msg, code = state(ctx, files, order, h.path)
    if h.kind == "add" then
      if not f then return err(("Failed to write file %s: %s"):format(h.path, P.detail(msg)), code) end
      f.cur = h.content
      added[#added + 1] = h.path
    elseif h.kind == "delete" then
      if not f then return err(("Failed to delete file %s: %s"):format(h.path, os_error(code) or P.detail(msg)), code) end
      if f.cur == nil then
        return err(("Failed to delete file %s: No such file or directory (os error 2)"):format(h.path), "ENOENT")
      end
      f.cur = nil
      deleted[#deleted + 1] = h.path
    else
      if not f or f.cur == nil then
        code = f and "ENOENT" or code
        return err(("Failed to read file to update %s: %s"):format(h.path, os_error(code) or P.detail(msg)), code)
      end
      local new, cerr, ccode = apply_chunks(f.cur, h.path, h.chunks, levels, work)
      if not new then return err(cerr, ccode) end
      if h.move_to then
        local d, dmsg, dcode = state(ctx, files, order, h.move_to)
        if not d then return err(("Failed to write file %s: %s"):format(h.move_to, P.detail(dmsg)), dcode) end
        d.cur, f.cur = new, nil
        d.charset = d.charset or f.charset
        modified[#modified + 1] = h.move_to
      else
        f.cur = new
        modified[#modified + 1] = h.path
      end
    end
  end

  -- 2. apply, all or none: one edit_files change, each file compared with
  -- the hash read in step 1 (adds, deletes and moves in the same commit)
  local changes = {}
  for _, k in ipairs(order) do
    local f = files[k]
    if f.cur ~= f.base then
      local c = { path = f.path, expected_hash = f.pre_hash or "absent" }
      if f.cur == nil then
        c.delete = true
      elseif utf8.len(f.cur) then
        c.content, c.charset = f.cur, f.charset -- written back in the file's encoding
      else
        c.content, c.encoding = core.base64_encode(f.cur), "base64"
      end
      changes[#changes + 1] = c
    end
  end
  if #changes > 0 then
    local r, msg, code, details = ctx:call("edit_files", { files = changes })
    if not r then
      local i = type(details) == "table" and details.file
      local f = i and changes[i]
      local what = f and ("Failed to %s file %s: "):format(f.delete and "delete" or "write", f.path) or "Failed to apply the patch: "
      return err(what .. P.detail(msg) .. "\nNo files were modified.", code)
    end
  end

  local out = { "Success. Updated the following files:\n" }
  for _, p in ipairs(added) do out[#out + 1] = "A " .. p .. "\n" end
  for _, p in ipairs(modified) do out[#out + 1] = "M " .. p .. "\n" end
  for _, p in ipairs(deleted) do out[#out + 1] = "D " .. p .. "\n" end
  local arr = core.json.array
  return {
    content = table.concat(out),
    added = arr(added), modified = arr(modified), deleted = arr(deleted),
    matches = arr(levels),
  }
end

---------------------------------------------------------------------------
-- The read tools

local cut = P.utf8_cut

-- v as an integer, nil when it is none (2.5) or past the schemas' range
local function int_arg(v, default)
  if v == nil then return default end
  local i = math.tointeger(v)
  return i and math.abs(i) <= MAX_INTEGER and i or nil
end

-- offset and limit (1-indexed, default 1 and lim) checked; the unit names
-- what offset counts.
local function window(a, lim, unit)
  local offset, limit = int_arg(a.offset, 1), int_arg(a.limit, lim)
  if not offset or offset < 1 then return err(("offset must be a 1-indexed %s number"):format(unit)) end
  if not limit or limit < 1 then return err("limit must be greater than zero") end
  return offset, limit
end

local function read_args(a)
  local ok, e, c = window(a, 2000, "line")
  if not ok then return nil, e, c end
  if a.mode ~= nil and a.mode ~= "slice" then
    return err("mode must be \"slice\": indentation mode is not supported by this server")
  end
  local path = a.file_path or ""
  if path:sub(1, 1) ~= "/" then return err("file_path must be an absolute path") end
  return { path = path, encoding = "base64" }
end

local function read_result(r, a, ctx, na)
  local offset, limit = window(a, 2000, "line")
  local text = core.base64_decode(r.content)
  local cs, bom, utf8ok = core.charset_detect(text, ctx.ws.charsets)
  if cs and not utf8ok then text = core.charset_decode(cs, text:sub(bom + 1)) or text end -- as apply_patch sees it
  local lines = lines_of(text)
  if offset > #lines then return err("offset exceeds file length") end
  local out = {}
  for n = offset, math.min(#lines, offset + limit - 1) do
    out[#out + 1] = ("L%d: %s"):format(n, P.utf8_clean(cut((lines[n]:gsub("\r$", "")), LINE_CAP)))
  end
  local body = table.concat(out, "\n")
  if ctx.caps.untrusted_boundary then body = ctx:untrusted(body, na.path) end
  return body
end

local SUFFIX = { dir = "/", symlink = "@", file = "" }

local function list_args(a)
  local ok, e, c = window(a, 25, "entry")
  if not ok then return nil, e, c end
  local depth = int_arg(a.depth, 2)
  if not depth or depth < 1 then return err("depth must be greater than zero") end
  local path = a.dir_path or ""
  if path:sub(1, 1) ~= "/" then return err("dir_path must be an absolute path") end
  return { path = path, recursive = true, max_depth = depth, include_hidden = true }
end

local function list_result(r, a, _, na)
  local offset, limit = window(a, 25, "entry")
  local prefix = (na.path:gsub("/+$", "")) .. "/"
  local entries = {}
  for _, e in ipairs(r.entries) do
    local rel = starts(e.path, prefix) and e.path:sub(#prefix + 1) or e.name
    entries[#entries + 1] = { rel = rel, name = e.name, type = e.type }
  end
  table.sort(entries, function(x, y) return x.rel < y.rel end)
  local out = { "Absolute path: " .. na.path }
  if #entries > 0 and offset > #entries then return err("offset exceeds directory entry count") end
  local last = math.min(#entries, offset + limit - 1)
  for i = offset, last do
    local e = entries[i]
    local _, d = e.rel:gsub("/", "")
    out[#out + 1] = ("  "):rep(d) .. cut(e.name, LINE_CAP) .. (SUFFIX[e.type] or "?")
  end
  if last < #entries or r.truncated then out[#out + 1] = ("More than %d entries found"):format(limit) end
  return table.concat(out, "\n")
end

local function grep_files(ctx, a)
  local pattern = trim(a.pattern or "")
  if pattern == "" then return err("pattern must not be empty") end
  local limit = int_arg(a.limit, 100)
  if not limit or limit < 1 then return err("limit must be greater than zero") end
  limit = math.min(limit, 2000)
  local include
  if a.include and trim(a.include) ~= "" then include = { trim(a.include) } end
  local r, msg, code = ctx:call("grep", { pattern = pattern, path = a.path or P.mounts(ctx)[1],
    include = include, output_mode = "files", include_hidden = true, respect_ignore = true })
  if not r then return err(("failed to search: %s"):format(P.detail(msg)), code) end
  if #r.files == 0 then return "No matches found." end
  -- newest first (rg --sortr=modified): mtimes from the native stat
  local mt = {}
  for _, f in ipairs(r.files) do
    local st = ctx:call("stat", { path = f })
    mt[f] = st and st.mtime or ""
  end
  local files = table.move(r.files, 1, #r.files, 1, {})
  table.sort(files, function(x, y)
    if mt[x] ~= mt[y] then return mt[x] > mt[y] end
    return x < y
  end)
  return table.concat(files, "\n", 1, math.min(limit, #files))
end

---------------------------------------------------------------------------

local S, N = P.string, P.number
local closed = P.closed

local tools = P.tools({ output_schema = P.TEXT_SCHEMA, output = P.text_output }, {
  {
    name = "apply_patch",
    title = "Apply patch",
    description = [[Use the `apply_patch` tool to edit files.
Your patch language is a stripped-down, file-oriented diff format designed to be easy to parse and safe to apply. You can think of it as a high-level envelope:

*** Begin Patch
[ one or more file sections ]
*** End Patch

Within that envelope, you get a sequence of file operations.
You MUST include a header to specify the action you are taking.
Each operation starts with one of three headers:

*** Add File: <path> - create a new file. Every following line is a + line (the initial contents).
*** Delete File: <path> - remove an existing file. Nothing follows.
*** Update File: <path> - patch an existing file in place (optionally with a rename).

May be immediately followed by *** Move to: <new path> if you want to rename the file.
Then one or more "hunks", each introduced by @@ (optionally followed by a hunk header).
Within a hunk each line starts with:
- ' ' for context, '-' for a removed line, '+' for an added line.

By default, show 3 lines of code immediately above and 3 lines immediately below each change. If 3 lines of context is insufficient to uniquely identify the snippet, use the @@ operator to indicate the class or function to which the snippet belongs (for instance `@@ class BaseClass`), stacked if needed. Mark a change at the very end of a file with `*** End of File`.

File references can only be relative, NEVER ABSOLUTE. Every added line needs a `+`, even in a new file.
The patch is applied all-or-nothing: if any section fails, no file is changed.]],
    schema = closed({ input = S("The entire contents of the apply_patch command") }, { "input" }),
    output_schema = P.object({
      content = S(), added = P.strings(), modified = P.strings(), deleted = P.strings(),
      matches = P.array(P.object { file = S(), chunk = P.integer(), level = S(nil, { enum = { "exact", "rstrip", "trim", "unicode" } }) }),
    }, { "content" }),
    kind = "edit", permissions = { "fs.read", "fs.write", "fs.delete" }, risk = "high",
    handler = apply_patch,
  },
  { name = "read_file", title = "Read file", native = "read_file", args = read_args, result = read_result,
    errors = P.prefixed("failed to read file: "),
    description = "Reads a local file with 1-indexed line numbers (each line as `L{n}: text`), supporting slice mode with offset and limit. Lines longer than 500 bytes are cut.",
    schema = closed({
      file_path = S("Absolute path to the file"), offset = N("The line number to start reading from. Must be 1 or greater."),
      limit = N("The maximum number of lines to return."),
      mode = S("Optional mode selector: \"slice\" for simple ranges (default)."),
      indentation = P.object(nil, nil, { description = "Indentation mode options (not supported by this server)." }),
    }, { "file_path" }) },
  { name = "list_dir", title = "List directory", native = "list_dir", args = list_args, result = list_result,
    errors = P.prefixed("failed to read directory: "), permissions = { "fs.list" },
    description = "Lists entries in a local directory with 1-indexed entry numbers and simple type labels (`/` directory, `@` symlink, `?` other), indented by depth.",
    schema = closed({
      dir_path = S("Absolute path to the directory to list."),
      offset = N("The entry number to start listing from. Must be 1 or greater."),
      limit = N("The maximum number of entries to return."),
      depth = N("The maximum directory depth to traverse. Must be 1 or greater."),
    }, { "dir_path" }) },
  { name = "grep_files", title = "Grep files", handler = grep_files,
    description = "Finds files whose contents match the pattern and lists them by modification time, newest first.",
    schema = closed({
      pattern = S("Regular expression pattern to search for."),
      include = S("Optional glob that limits which files are searched (e.g. \"*.rs\" or \"*.{ts,tsx}\")."),
      path = S("Directory or file path to search. Defaults to the session's working directory."),
      limit = N("Maximum number of file paths to return (defaults to 100)."),
    }, { "pattern" }) },
})

return {
  name = "codex",
  description = "OpenAI Codex's file tools (apply_patch, read_file, list_dir, grep_files)",
  path_style = "relative",
  options = {},
  tools = tools,
}
