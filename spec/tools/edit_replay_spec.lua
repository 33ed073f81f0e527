-- Replay of real diffs through edit_file: two published versions of an npm
-- package (jquery 3.6.0 and 3.7.1: tab-indented sources, minified one-line
-- files, source maps), every hunk of `diff -u` turned into an edit_file
-- call. The result must equal the newer file byte for byte: applied one
-- hunk per call, all hunks of a file in one call, and on CRLF copies of
-- both versions with the LF hunks; and under the whitespace noise agents
-- produce (match="loose"), where the figures are printed and no edit may
-- land in the wrong place (issue 13). The noisy runs are made again with
-- one line of context per hunk (old_text as short as agents send it: a
-- one-line old_text is found from after a line's indentation, or at a copy
-- of itself at the indentation the noise gave it), on jquery and on eslint
-- 8.57.0 -> 9.0.0 (4-space sources, JSDoc blocks; issue 44).
-- The tarballs come from `npm pack` into
-- a cache outside the repository ($BURROW_REPLAY_CACHE, else
-- ~/.cache/burrow/replay); without them and without npm the spec is
-- reported pending (SKIP), never passed.

local H = require "helpers"

local function cache_dir()
  local d = os.getenv("BURROW_REPLAY_CACHE")
  if d and d ~= "" then return d end
  local base = os.getenv("XDG_CACHE_HOME")
  if not base or base == "" then base = (os.getenv("HOME") or "/tmp") .. "/.cache" end
  return base .. "/burrow/replay"
end

-- The two tarballs, fetched once with npm pack; nil, why when impossible.
local function tarballs(PKG, OLD, NEW)
  local dir = cache_dir()
  local a = ("%s/%s-%s.tgz"):format(dir, PKG, OLD)
  local b = ("%s/%s-%s.tgz"):format(dir, PKG, NEW)
  local function have(p) return select(2, H.run("test -s " .. H.q(p))) end
  if have(a) and have(b) then return a, b end
  local _, npm = H.run("command -v npm >/dev/null")
  if not npm then return nil, "npm is not installed and " .. dir .. " has no tarballs" end
  local out, ok = H.run(("mkdir -p %s && cd %s && timeout 120 npm pack --silent %s@%s %s@%s 2>&1")
    :format(H.q(dir), H.q(dir), PKG, OLD, PKG, NEW))
  if not ok or not (have(a) and have(b)) then return nil, "npm pack failed: " .. out:sub(1, 300) end
  return a, b
end

-- Lines without their newlines (plain finds: a pattern over a long line
-- without a newline backtracks quadratically).
local function split_lines(s)
  local lines, pos = {}, 1
  while true do
    local nl = s:find("\n", pos, true)
    if not nl then break end
    lines[#lines + 1], pos = s:sub(pos, nl - 1), nl + 1
  end
  if pos <= #s then lines[#lines + 1] = s:sub(pos) end
  return lines
end

-- Hunks of `diff -u`: {start = old line, old = {...}, new = {...}, old_eol, new_eol}.
local function parse_hunks(diff)
  local hunks, h, last = {}, nil, nil
  for _, line in ipairs(split_lines(diff)) do
    local s = line:match("^@@ %-(%d+)")
    if s then
      h = { start = tonumber(s), old = {}, new = {}, old_eol = true, new_eol = true }
      hunks[#hunks + 1] = h
    elseif h then
      local c, rest = line:sub(1, 1), line:sub(2)
      if c == " " then h.old[#h.old + 1], h.new[#h.new + 1] = rest, rest
      elseif c == "-" then h.old[#h.old + 1] = rest
      elseif c == "+" then h.new[#h.new + 1] = rest end
      if c == "\\" then -- "\ No newline at end of file": the line before
        if last ~= "+" then h.old_eol = false end
        if last ~= "-" then h.new_eol = false end
      else
        last = c
      end
    end
  end
  return hunks
end

-- Does needle occur more than once? (Lua's plain find is naive: never
-- search where a second whole copy cannot fit.)
local function ambiguous(hay, needle)
  local s = hay:find(needle, 1, true)
  if not s or #hay - s < #needle then return false end
  return hay:find(needle, s + 1, true) ~= nil
end

local function join(lines, eol)
  if #lines == 0 then return "" end
  return table.concat(lines, "\n") .. (eol and "\n" or "")
end

-- old_text/new_text of a hunk at line `at` of the current lines, with
-- context added until old_text is unique in content.
local function edit_of(h, cur, content, at)
  local before, after = {}, {}
  local function texts()
    local old, new = {}, {}
    for _, l in ipairs(before) do old[#old + 1], new[#new + 1] = l, l end
    for _, l in ipairs(h.old) do old[#old + 1] = l end
    for _, l in ipairs(h.new) do new[#new + 1] = l end
    for _, l in ipairs(after) do old[#old + 1], new[#new + 1] = l, l end
    local tail = #after == 0
    return join(old, not tail or h.old_eol), join(new, not tail or h.new_eol)
  end
  local old, new = texts()
  local last = at + #h.old - 1
  while ambiguous(content, old) do
    local b, a = at - #before - 1, last + #after + 1
    if b >= 1 then table.insert(before, 1, cur[b]) end
    if a <= #cur and h.old_eol then after[#after + 1] = cur[a] end
    if b < 1 and (a > #cur or not h.old_eol) then break end
    old, new = texts()
  end
  return { old_text = old, new_text = new }
end

local function crlf(s) return (s:gsub("\n", "\r\n")) end

-- One replay: PKG OLD -> NEW, hunks with U lines of context; full: also
-- the exact runs (one call per hunk, CRLF, all hunks in one call).
local function replay(PKG, OLD, NEW, U, full)
describe(H.tag(("edit_file replay of real diffs, %s %s -> %s, %d line%s of context")
  :format(PKG, OLD, NEW, U, U == 1 and "" or "s")), function()
  local a_tgz, b_tgz, why
  local base, files, total_hunks

  setup(function()
    a_tgz, b_tgz = tarballs(PKG, OLD, NEW)
    if not a_tgz then why = b_tgz return end
    base = H.tmpdir()
    H.sh(("mkdir -p %s/a %s/b && tar xzf %s -C %s/a && tar xzf %s -C %s/b")
      :format(base, base, H.q(a_tgz), base, H.q(b_tgz), base))
    files, total_hunks = {}, 0
    local list = H.sh(("cd %s/a/package && find . -type f | sort"):format(base))
    for rel in list:gmatch("%./([^\n]+)") do
      local old, new = H.read(base .. "/a/package", rel), H.read(base .. "/b/package", rel)
      if new and old ~= new and old ~= "" and not old:find("\0", 1, true) and not new:find("\0", 1, true) then
        local diff = H.run(("cd %s && diff -U%d a/package/%s b/package/%s"):format(base, U, H.q(rel), H.q(rel)))
        local hunks = parse_hunks(diff)
        files[#files + 1] = { rel = rel, old = old, new = new, hunks = hunks }
        total_hunks = total_hunks + #hunks
      end
    end
  end)

  teardown(H.cleanup)

  local function need()
    if why then pending("SKIP: " .. why) return false end
    return true
  end

  -- Apply hunk by hunk, top to bottom; the delta of earlier hunks moves the later ones.
  local function replay_one_by_one(ws, dir, to_eol)
    local calls = 0
    for _, f in ipairs(files) do
      local path = f.rel
      H.write(dir, path, to_eol(f.old))
      local delta = 0
      for i, h in ipairs(f.hunks) do
        local content = H.read(dir, path)
        local lf = content:gsub("\r\n", "\n")
        local cur = split_lines(lf)
        local e = edit_of(h, cur, lf, h.start + delta)
        local r, msg = ws:call("edit_file", { path = path, old_text = e.old_text, new_text = e.new_text })
        assert(r, ("%s hunk %d of %d: %s"):format(path, i, #f.hunks, tostring(msg)))
        calls = calls + 1
        delta = delta + #h.new - #h.old
      end
      assert(H.read(dir, path) == to_eol(f.new), path .. ": the result differs from the newer version")
    end
    return calls
  end

  if full then
  it("finds hundreds of hunks in tab-indented sources, minified files and source maps", function()
    if not need() then return end
    assert.is_true(total_hunks >= 300, "only " .. total_hunks .. " hunks")
    local tabs = 0
    for _, f in ipairs(files) do
      if f.old:find("\n\t", 1, true) then tabs = tabs + 1 end
    end
    assert.is_true(tabs >= 10, "only " .. tabs .. " tab-indented files")
    print(("\n    replay: %s %s -> %s, %d files, %d hunks"):format(PKG, OLD, NEW, #files, total_hunks))
  end)

  it("one edit_file call per hunk reproduces the newer version byte for byte", function()
    if not need() then return end
    local dir = H.tmpdir()
    local ws = H.open(dir)
    local calls = replay_one_by_one(ws, dir, function(s) return s end)
    ws:close()
    assert.equal(total_hunks, calls)
    print(("\n    replay, exact        : %d hunks: %d correct (100.0 %%), 0 wrong place, 0 refused"):format(total_hunks, calls))
  end)

  it("one edit_file call per hunk on CRLF copies keeps CRLF and equals the newer version in CRLF", function()
    if not need() then return end
    local dir = H.tmpdir()
    local ws = H.open(dir)
    local calls = replay_one_by_one(ws, dir, crlf)
    ws:close()
    assert.equal(total_hunks, calls)
    print(("\n    replay, exact CRLF   : %d hunks: %d correct (100.0 %%), 0 wrong place, 0 refused"):format(total_hunks, calls))
  end)
  end

  -- The whitespace noise agents produce, on an edit {old_text, new_text}:
  -- "less": old and new one indentation level (the file's unit) shallower
  -- on every non-blank line (a hunk with a line at the margin cannot be
  -- made shallower and is sent as it is); "more": one level deeper; and
  -- trailing spaces and tabs dropped from old_text's lines.
  local function relevel(text, f)
    local out = {}
    for _, l in ipairs(split_lines(text)) do
      if l:find("%S") then
        l = f(l)
        if not l then return nil end
      end
      out[#out + 1] = l
    end
    return join(out, text:sub(-1) == "\n")
  end
  -- A file's indentation unit: a tab, else its smallest run of leading spaces.
  local function unit_of(text)
    if text:find("\n\t", 1, true) then return "\t" end
    local u = 8
    for sp in text:gmatch("\n( +)%S") do u = math.min(u, #sp) end
    return (" "):rep(u)
  end
  local function rstrip_lines(text)
    local out = {}
    for _, l in ipairs(split_lines(text)) do out[#out + 1] = (l:gsub("[ \t]+$", "")) end
    return join(out, text:sub(-1) == "\n")
  end
  local NOISE = {
    less = function(e, unit)
      local function shallower(l) return l:sub(1, #unit) == unit and l:sub(#unit + 1) or nil end
      local o, n = relevel(e.old_text, shallower), relevel(e.new_text, shallower)
      if not (o and n) then return e, false end
      return { old_text = rstrip_lines(o), new_text = n }, true
    end,
    -- ragged: a tab or up to 4 spaces off each line, whatever the file's
    -- unit (2-space JSON loses two levels on some lines, one on others):
    -- the kind that put edits in the wrong place before issue 13
    ragged = function(e)
      local function off(l)
        if l:sub(1, 1) == "\t" then return l:sub(2) end
        local sp = #l:match("^ *")
        return sp > 0 and l:sub(math.min(sp, 4) + 1) or nil
      end
      local o, n = relevel(e.old_text, off), relevel(e.new_text, off)
      if not (o and n) then return e, false end
      return { old_text = rstrip_lines(o), new_text = n }, true
    end,
    -- flat: the block sent at column 0, every line losing old_text's
    -- first line's indentation (a line with less is sent as it is not:
    -- the hunk is), as an agent copies a block out of its context; a
    -- one-line old_text is then found from after the line's indentation
    -- (the eslint case of issue 44)
    flat = function(e)
      local lead = e.old_text:match("^[ \t]*")
      if lead == "" then return e, false end
      local function off(l) return l:sub(1, #lead) == lead and l:sub(#lead + 1) or nil end
      local o, n = relevel(e.old_text, off), relevel(e.new_text, off)
      if not (o and n) then return e, false end
      return { old_text = rstrip_lines(o), new_text = n }, true
    end,
    -- none: the clean edit, on the loose ladder (what looseness costs)
    none = function(e) return e, true end,
    more = function(e, unit)
      local function deeper(l) return unit .. l end
      return { old_text = rstrip_lines(relevel(e.old_text, deeper)), new_text = relevel(e.new_text, deeper) }, true
    end,
  }

  -- Every hunk, one call each with match="loose", its texts under noise:
  -- correct (the file equals the clean edit's result), wrong place (it
  -- does not), refused (an error; nothing may be written). After a miss
  -- the file is put back on the clean path so later hunks still count.
  local function replay_noisy(ws, dir, kind, to_eol)
    to_eol = to_eol or function(x) return x end
    local n = { correct = 0, wrong = 0, refused = 0, noised = 0, hunks = 0 }
    local wrong_at = {}
    for _, f in ipairs(files) do
      local path = f.rel
      H.write(dir, path, to_eol(f.old))
      local unit = unit_of(f.old)
      local delta = 0
      for _, h in ipairs(f.hunks) do
        local content = H.read(dir, path)
        local lf = content:gsub("\r\n", "\n")
        local e = edit_of(h, split_lines(lf), lf, h.start + delta)
        delta = delta + #h.new - #h.old
        local s = lf:find(e.old_text, 1, true)
        local want = to_eol(lf:sub(1, s - 1) .. e.new_text .. lf:sub(s + #e.old_text))
        local noisy, changed = NOISE[kind](e, unit)
        n.hunks = n.hunks + 1
        if changed and noisy.old_text ~= e.old_text then n.noised = n.noised + 1 end
        local r = ws:call("edit_file", { path = path, old_text = noisy.old_text, new_text = noisy.new_text, match = "loose" })
        local got = H.read(dir, path)
        if not r then
          assert(got == content, path .. ": a refused edit wrote")
          n.refused = n.refused + 1
        elseif got == want then
          n.correct = n.correct + 1
        else
          n.wrong = n.wrong + 1
          wrong_at[#wrong_at + 1] = ("%s line %d"):format(path, h.start + delta)
        end
        if got ~= want then H.write(dir, path, want) end
      end
      assert(H.read(dir, path) == to_eol(f.new), path .. ": the clean path differs from the newer version")
    end
    print(("\n    replay, %s -U%d, noise %-6s%s: %d hunks (%d noised): %d correct (%.1f %%), %d wrong place, %d refused%s")
      :format(PKG, U, kind, to_eol("\n") == "\r\n" and " CRLF" or "", n.hunks, n.noised, n.correct, 100 * n.correct / n.hunks, n.wrong, n.refused,
        #wrong_at > 0 and (" [" .. table.concat(wrong_at, "; ") .. "]") or ""))
    return n
  end

  for _, kind in ipairs { "less", "more", "ragged", "flat", "none" } do
    it(kind == "none" and "the clean edits on the loose ladder: no edit in the wrong place"
      or ("indentation %s and trailing spaces dropped from old_text: no edit in the wrong place"):format(kind), function()
      if not need() then return end
      local dir = H.tmpdir()
      local ws = H.open(dir)
      local n = replay_noisy(ws, dir, kind)
      ws:close()
      assert.equal(0, n.wrong)
      assert.is_true(kind == "none" or n.noised >= 100, "only " .. n.noised .. " hunks noised")
      assert.is_true(n.correct >= 0.97 * n.hunks, ("%d of %d correct"):format(n.correct, n.hunks))
    end)
  end

  it("ragged indentation on CRLF copies: no edit in the wrong place", function()
    if not need() then return end
    local dir = H.tmpdir()
    local ws = H.open(dir)
    local n = replay_noisy(ws, dir, "ragged", crlf)
    ws:close()
    assert.equal(0, n.wrong)
    assert.is_true(n.correct >= 0.97 * n.hunks, ("%d of %d correct"):format(n.correct, n.hunks))
  end)

  if full then
  it("all hunks of a file in one edit_file call (matched against the original)", function()
    if not need() then return end
    local dir = H.tmpdir()
    local ws = H.open(dir)
    for _, f in ipairs(files) do
      H.write(dir, f.rel, f.old)
      local cur = split_lines(f.old)
      local edits = {}
      for i, h in ipairs(f.hunks) do edits[i] = edit_of(h, cur, f.old, h.start) end
      local r, msg = ws:call("edit_file", { path = f.rel, edits = edits })
      assert(r, f.rel .. ": " .. tostring(msg))
      assert.equal(#f.hunks, r.replacements)
      assert(H.read(dir, f.rel) == f.new, f.rel .. ": the result differs from the newer version")
    end
    ws:close()
  end)
  end
end)
end

replay("jquery", "3.6.0", "3.7.1", 3, true)
replay("jquery", "3.6.0", "3.7.1", 1, false)
replay("eslint", "8.57.0", "9.0.0", 1, false)
