-- Issue 11: nothing an agent sends can hang burrow (globs and apply_patch).
-- Globs in packs go through the core's linear matcher (core.glob), never a
-- translated Lua pattern, whose backtracking on "*a*a*...*b" against a name
-- of 40 a's took 36 s or more before (each case below: 97-221 s on a loaded
-- machine); codex's apply_patch matches chunks in linear time (a 2,000-line
-- miss on 20,000 identical lines took 31-38 s before) and
-- refuses patches past its limits by name. Each case must end well inside
-- a generous bound (5 s on a loaded machine) with the expected answer.

local H = require "helpers"
local U = require "packs.util"
local core = H.core

local BOUND = 30 -- seconds: bounded against unbounded (a blow-up runs for minutes), not a benchmark
local A40 = ("a"):rep(40)
local STARS = ("*a"):rep(11) .. "*b" -- backtracks on a name of a's that lacks the b

-- f() and the seconds it took.
local function timed(f)
  local t0 = core.now()
  local r = table.pack(f())
  return core.now() - t0, table.unpack(r, 1, r.n)
end

local function patch(lines)
  return "*** Begin Patch\n" .. table.concat(lines, "\n") .. "\n*** End Patch\n"
end

describe(H.tag("security: no hang from globs and patches (issue 11)"), function()
  after_each(H.cleanup)

  describe("core.glob", function()
    it("matches with the core's semantics and the options the packs use", function()
      local g = assert(core.glob("src/**/*.c"))
      assert.is_true(g:match("src/a/b.c"))
      assert.is_true(g:match("src/b.c"))
      assert.is_false(g:match("lib/b.c"))
      assert.is_false(assert(core.glob("src/**")):match("src"))
      assert.is_true(assert(core.glob("src/**", { dir_itself = true })):match("src"))
      assert.is_true(assert(core.glob("*.{c,h}")):match("x.h"))
      assert.is_false(assert(core.glob("*.{c,h}", { braces = false })):match("x.h"))
      assert.is_true(assert(core.glob("*.C", { casefold = true })):match("x.c"))
      local b = assert(core.glob("*.c", { basename = true }))
      assert.is_true(b:match("deep/er/x.c"))
      assert.is_false(b:match("deep/er/x.h"))
      assert.is_false(assert(core.glob("*.c")):match("deep/x.c"))
    end)

    it("refuses what it cannot match in bounded time, as INVALID_ARGUMENT", function()
      local g, msg, code = core.glob(("x"):rep(4097))
      assert.is_nil(g)
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("too long", msg)
      g, msg, code = core.glob(("{a,b}"):rep(8) .. ("x"):rep(4000))
      assert.is_nil(g)
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("64 KiB", msg)
      g, msg, code = core.glob("a/../b")
      assert.is_nil(g)
      assert.equal("INVALID_ARGUMENT", code)
      assert.has_error(function() core.glob("x", { bogus = true }) end)
      assert.has_error(function() core.glob("x", { casefold = "yes" }) end)
    end)

    it("compiles and matches pathological patterns in bounded time", function()
      local t, g = timed(function() return core.glob(("{a,b}"):rep(4) .. ("{"):rep(4076)) end)
      assert.truthy(g)
      assert.is_true(t < BOUND, ("compile took %.1f s"):format(t))
      local m
      t, m = timed(function() return assert(core.glob(("*a"):rep(200) .. "b")):match(("a"):rep(4000)) end)
      assert.is_false(m)
      assert.is_true(t < BOUND, ("match took %.1f s"):format(t))
      local deep = ("a/"):rep(500) .. "c"
      t, m = timed(function() return assert(core.glob(("**/a/"):rep(40) .. "**/b")):match(deep) end)
      assert.is_false(m)
      assert.is_true(t < BOUND, ("** match took %.1f s"):format(t))
    end)

    it("closes once, by close, <close> or collection; a closed glob raises", function()
      local g = assert(core.glob("*"))
      g:close()
      g:close()
      assert.equal("burrow.Glob (closed)", tostring(g))
      assert.has_error(function() g:match("x") end)
      do
        local c <close> = assert(core.glob("*"))
        assert.is_true(c:match("x"))
      end
    end)
  end)

  describe("pack globs", function()
    it("mcp_filesystem search_files: a backtracking excludePatterns entry", function()
      local dir = H.tmpdir()
      H.write_all(dir, { [A40] = "x\n", [A40 .. "b"] = "y\n", ["sub/" .. A40] = "z\n" })
      local ws = U.open(dir, "mcp_filesystem")
      local t, text = timed(function()
        return U.text(ws, "search_files", { path = dir, pattern = "a*", excludePatterns = { STARS } })
      end)
      assert.is_true(t < BOUND, ("search_files took %.1f s"):format(t))
      assert.equal(dir .. "/" .. A40, text)
      t, text = timed(function()
        return U.text(ws, "directory_tree", { path = dir, excludePatterns = { STARS, "sub" } })
      end)
      assert.is_true(t < BOUND, ("directory_tree took %.1f s"):format(t))
      assert.equal(('[\n  {\n    "name": "%s",\n    "type": "file"\n  }\n]'):format(A40), text)
    end)

    it("mcp_filesystem: a bad or oversized exclude list is INVALID_ARGUMENT", function()
      local dir = H.tmpdir()
      H.write_all(dir, { ["x.txt"] = "x\n" })
      local ws = U.open(dir, "mcp_filesystem")
      local _, msg, code = ws:call("search_files", { path = dir, pattern = "*", excludePatterns = { "../x" } })
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("excludePatterns[1]", msg, 1, true)
      local many = {}
      for i = 1, 257 do many[i] = "x" .. i end
      _, msg, code = ws:call("search_files", { path = dir, pattern = "*", excludePatterns = many })
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("at most 256 globs", msg, 1, true)
    end)

    it("gemini_cli: backtracking ignore/exclude globs; read_many_files bounded in patterns and bytes", function()
      local dir = H.tmpdir()
      H.write_all(dir, { [A40] = "x\n", ["b.txt"] = ("y"):rep(3000) .. "\n", ["c.txt"] = ("z"):rep(3000) .. "\n" })
      local ws = U.open(dir, "gemini_cli", { caps = { max_result_bytes = 2048 } })
      local t, text = timed(function() return U.text(ws, "list_directory", { path = ".", ignore = { STARS, "*.txt" } }) end)
      assert.is_true(t < BOUND, ("list_directory took %.1f s"):format(t))
      assert.equal(("Directory listing for .:\n%s (2 bytes)"):format(A40), text)
      t, text = timed(function() return U.text(ws, "read_many_files", { paths = { "*" }, exclude = { STARS } }) end)
      assert.is_true(t < BOUND, ("read_many_files took %.1f s"):format(t))
      -- the first file past the cap is the last one read
      assert.truthy(text:find("stopped at max_result_bytes", 1, true), text:sub(1, 200))
      local _, n = text:gsub("\n%-%-%- [^\n]* %-%-%-\n", "")
      assert.is_true(n < 3, n .. " files")
      local many = {}
      for i = 1, 257 do many[i] = "x" .. i end
      local _, msg, code = ws:call("read_many_files", { paths = many })
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("at most 256 patterns", msg, 1, true)
      _, msg, code = ws:call("read_many_files", { paths = { "*" }, exclude = { "../x" } })
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("exclude[1]", msg, 1, true)
    end)

    it("claude_code LS: a backtracking ignore glob", function()
      local dir = H.tmpdir()
      H.write_all(dir, { [A40] = "x\n", ["skip/" .. A40] = "y\n" })
      local ws = U.open(dir, "claude_code")
      local M = ws:mounts()[1].mount
      local t, text = timed(function() return U.text(ws, "LS", { path = M, ignore = { STARS, "skip" } }) end)
      assert.is_true(t < BOUND, ("LS took %.1f s"):format(t))
      assert.equal(("- %s/\n  - %s"):format(M, A40), text)
    end)

    it("agent_module ls: a backtracking pattern", function()
      local dir = H.tmpdir()
      H.write_all(dir, { [A40] = "x\n", ["b.txt"] = "y\n" })
      local ws = U.open(dir, "agent_module", { mount = "/workspace" })
      local t, r = timed(function() return ws:call("ls", { path = "/workspace", pattern = STARS }) end)
      assert.is_true(t < BOUND, ("ls took %.1f s"):format(t))
      assert.equal(0, r.count)
      t, r = timed(function() return ws:call("ls", { path = "/workspace", pattern = ("*a"):rep(11) .. "*" }) end)
      assert.is_true(t < BOUND, ("ls took %.1f s"):format(t))
      assert.equal(1, r.count)
      assert.equal(A40, r.entries[1].name)
    end)
  end)

  describe("codex apply_patch", function()
    local dir, ws
    local SAME = ("same\n"):rep(20000) .. "target\n"

    before_each(function()
      dir = H.tmpdir()
      H.write_all(dir, { ["same.txt"] = SAME })
      ws = U.open(dir, "codex")
    end)

    local function context_hunk(removed)
      local l = { "*** Update File: same.txt", "@@" }
      for _ = 1, 2000 do l[#l + 1] = " same" end
      l[#l + 1] = "-" .. removed
      l[#l + 1] = "+done"
      return patch(l)
    end

    it("2,000 identical context lines on 20,000 identical lines: found, in bounded time", function()
      local t, text = timed(function() return U.text(ws, "apply_patch", { input = context_hunk("target") }) end)
      assert.is_true(t < BOUND, ("apply_patch took %.1f s"):format(t))
      assert.equal("Success. Updated the following files:\nM same.txt\n", text)
      assert.equal(("same\n"):rep(20000) .. "done\n", H.read(dir, "same.txt"))
    end)

    it("the same hunk missing: NOT_FOUND_TEXT after every level, in bounded time", function()
      local t, res, msg, code = timed(function() return ws:call("apply_patch", { input = context_hunk("absent") }) end)
      assert.is_true(t < BOUND, ("apply_patch took %.1f s"):format(t))
      assert.is_nil(res)
      assert.equal("NOT_FOUND_TEXT", code)
      assert.matches("Failed to find expected lines in same.txt", msg, 1, true)
      assert.equal(SAME, H.read(dir, "same.txt"))
    end)

    it("a long whitespace run is trimmed in linear time (rstrip level)", function()
      local pad = (" "):rep(90000)
      H.write_all(dir, { ["w.txt"] = pad .. "x\n" })
      local input = patch { "*** Update File: w.txt", "@@", "-" .. pad .. "x" .. pad, "+y" }
      local t, text, sc = timed(function() return U.text(ws, "apply_patch", { input = input }) end)
      assert.is_true(t < BOUND, ("apply_patch took %.1f s"):format(t))
      assert.truthy(text, sc)
      assert.equal("rstrip", sc.matches[1].level)
      assert.equal("y\n", H.read(dir, "w.txt"))
    end)

    it("a patch or a file with one long unterminated line is split in linear time", function()
      local long = ("x"):rep(1000000)
      local t, res, msg, code = timed(function() return ws:call("apply_patch", { input = long }) end)
      assert.is_true(t < BOUND, ("apply_patch took %.1f s"):format(t))
      assert.is_nil(res)
      assert.equal("INVALID_PATCH", code)
      assert.matches("must be '*** Begin Patch'", msg, 1, true)
      H.write_all(dir, { ["one.txt"] = ("y"):rep(150000) })
      local text
      t, text = timed(function() return U.text(ws, "read_file", { file_path = dir .. "/one.txt" }) end)
      assert.is_true(t < BOUND, ("read_file took %.1f s"):format(t))
      assert.equal("L1: " .. ("y"):rep(500), text)
    end)

    it("many chunks on the looser levels: the rare exact line gives the candidates", function()
      -- each chunk's "x-" occurs exactly once, at the end: no scan per chunk
      H.write_all(dir, { ["f.txt"] = ("x\u{2010}\ny\n"):rep(15000) .. "x-\nz\ny\n" })
      local l = { "*** Update File: f.txt" }
      for _ = 1, 15000 do l[#l + 1] = "@@"; l[#l + 1] = "-x-"; l[#l + 1] = " y" end
      local t, text, sc = timed(function() return U.text(ws, "apply_patch", { input = patch(l) }) end)
      assert.is_true(t < BOUND, ("apply_patch took %.1f s"):format(t))
      assert.truthy(text, sc)
      assert.equal("unicode", sc.matches[15000].level)
      assert.equal(("y\n"):rep(15000) .. "x-\nz\ny\n", H.read(dir, "f.txt"))
    end)

    it("one chunk repeated, found on rstrip each time: missed once on exact, not rescanned", function()
      H.write_all(dir, { ["f.txt"] = ("a\nb \nb\n"):rep(15000) })
      local l = { "*** Update File: f.txt" }
      for _ = 1, 15000 do l[#l + 1] = "@@"; l[#l + 1] = "-a"; l[#l + 1] = " b" end
      local t, text, sc = timed(function() return U.text(ws, "apply_patch", { input = patch(l) }) end)
      assert.is_true(t < BOUND, ("apply_patch took %.1f s"):format(t))
      assert.truthy(text, sc)
      assert.equal("rstrip", sc.matches[15000].level)
      assert.equal(("b\nb\n"):rep(15000), H.read(dir, "f.txt")) -- context as the patch writes it
    end)

    it("limits: chunk lines, patch bytes and match steps are INVALID_ARGUMENT naming the limit", function()
      local l = { "*** Update File: same.txt", "@@" }
      for _ = 1, 10001 do l[#l + 1] = " same" end
      local _, msg, code = ws:call("apply_patch", { input = patch(l) })
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("max chunk lines", msg, 1, true)

      _, msg, code = ws:call("apply_patch", { input = patch { "*** Add File: big.txt", "+" .. ("x"):rep(16 * 2 ^ 20) } })
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("max patch bytes", msg, 1, true)
      assert.is_false(H.exists(dir, "big.txt"))

      -- chunks of growing length, each found on rstrip at the cursor, while
      -- their lines recur exactly down the whole file: a scan per chunk
      H.write_all(dir, { ["f.txt"] = ("a\nb \nb\n"):rep(50000) })
      local big = U.open(dir, "codex", { caps = { max_result_bytes = 1048576 } })
      l = { "*** Update File: f.txt" }
      for k = 1, 250 do
        l[#l + 1] = "@@"
        for _ = 1, k do l[#l + 1] = " a"; l[#l + 1] = " b"; l[#l + 1] = " b" end
      end
      local t, res
      t, res, msg, code = timed(function() return big:call("apply_patch", { input = patch(l) }) end)
      assert.is_true(t < BOUND, ("apply_patch took %.1f s"):format(t))
      assert.is_nil(res)
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("max match steps", msg, 1, true)
      assert.equal(("a\nb \nb\n"):rep(50000), H.read(dir, "f.txt"))
      assert.equal(SAME, H.read(dir, "same.txt"))
    end)
  end)
end)
