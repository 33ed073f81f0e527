-- grep: matches sorted by path then line, modes, context, include and
-- exclude, ignore files (cases from gitignore(5)), hidden files, binary and
-- size skips, caps, catastrophic patterns, the text rendering, paths as the
-- agent wrote them, cancellation and progress.

local H = require "helpers"

local function lines(res)
  local out = {}
  for i, m in ipairs(res.matches) do out[i] = ("%s:%d:%s"):format(m.path, m.line, m.text) end
  return out
end

describe(H.tag("grep"), function()
  local ws, dir

  before_each(function() ws, dir = H.workspace() end)
  after_each(H.cleanup)

  local function open(caps)
    ws:close()
    ws = H.open(dir, caps)
    return ws
  end

  local function grep(args) return ws:call("grep", args) end

  it("a capped list keeps count: files and count give the exact total when the walk finished", function()
    H.sh("cd " .. H.q(dir) .. " && for i in $(seq 1 1010); do echo hit > f$i.txt; done")
    local r = assert(grep { pattern = "hit", output_mode = "count" })
    assert.equal(1000, #r.counts)
    assert.is_true(r.truncated)
    assert.is_true(r.total_exact)
    assert.equal(1010, r.total)
    assert.equal(1010, r.files_total)
    local text = ws:render("grep", r)
    assert.matches("in all 1010 matches, 1000 files' counts listed", text, 1, true)
    assert.matches('output_mode "files"', text, 1, true)
    assert.not_matches('"count"', text:match("%[results truncated.*$"), 1, true)
    assert.not_matches("at least", text, 1, true)
    r = assert(grep { pattern = "hit", output_mode = "files" })
    assert.same({ 1000, 1010, true }, { #r.files, r.total, r.total_exact })
    text = ws:render("grep", r)
    assert.matches("in all 1010 files, 1000 files listed", text, 1, true)
    assert.not_matches("output_mode", text:match("%[results truncated.*$"), 1, true)
    -- under the cap: exact
    r = assert(grep { pattern = "hit", output_mode = "count", path = "f1.txt" })
    assert.is_true(r.total_exact)
    assert.equal(1, r.total)
    -- content mode still stops at its cap: a lower bound
    r = assert(grep { pattern = "hit" })
    assert.same({ 1000, 1000, false }, { #r.matches, r.total, r.total_exact })
    assert.matches("at least 1000 matches", ws:render("grep", r), 1, true)
  end)

  it("counts 3,000 matching files exactly, lines per file summed, with the list capped", function()
    H.sh("cd " .. H.q(dir) .. " && mkdir -p a b c && for d in a b c; do for i in $(seq 1 1000); do printf 'hit\nno\nhit\n' > $d/f$i.txt; done; done")
    local r = assert(grep { pattern = "hit", output_mode = "files" })
    assert.same({ 1000, 3000, true, true }, { #r.files, r.total, r.total_exact, r.truncated })
    r = assert(grep { pattern = "hit", output_mode = "count", max_results = 10 })
    assert.same({ 10, 6000, 3000, true }, { #r.counts, r.total, r.files_total, r.total_exact })
    -- a byte budget that ends the walk part way: "at least", never exact
    open { max_search_bytes = 3000 * 12 // 2 }
    r = assert(grep { pattern = "hit", output_mode = "files" })
    assert.equal("bytes", r.limit)
    assert.is_false(r.total_exact)
    assert.is_true(r.total < 3000 and r.total > 0, tostring(r.total))
    assert.is_nil(r.files_total)
    r = assert(grep { pattern = "hit", output_mode = "count" })
    assert.same({ "bytes", false }, { r.limit, r.total_exact })
    assert.is_true(r.total < 6000, tostring(r.total))
  end)

  describe("the cursor", function()
    local function tree()
      for i = 1, 30 do
        local t = {}
        for j = 1, 1 + (i * 7) % 23 do t[j] = j % 3 == 0 and "nothing" or ("hit %d.%d"):format(i, j) end
        H.write(dir, ("d%d/%s/f%d.txt"):format(i % 4, i % 2 == 0 and "x" or "x-y", i), table.concat(t, "\n") .. "\n")
      end
      H.write(dir, "d1-z.txt", "hit top\n")
    end

    -- Every page by the cursor, joined: matches as path:line:text.
    local function paged(args0, max_pages)
      local all, seen, cursor, pages = {}, {}, nil, 0
      repeat
        local args = { cursor = cursor }
        for k, v in pairs(args0) do args[k] = v end
        local r = assert(grep(args))
        pages = pages + 1
        for _, l in ipairs(lines(r)) do
          assert.is_nil(seen[l], "shown twice: " .. l)
          seen[l] = true
          all[#all + 1] = l
        end
        if r.cursor then assert.is_true(r.truncated) end
        cursor = r.cursor
        assert.is_true(pages < max_pages, "no progress")
      until not cursor
      return all, pages
    end

    it("resumes at max_results in the middle of a file: the pages are one uncapped grep", function()
      tree()
      local whole = lines(assert(grep { pattern = "hit" }))
      assert.is_true(#whole > 200)
      for _, max in ipairs { 1, 7, 50 } do
        local got, pages = paged({ pattern = "hit", max_results = max }, 1000)
        assert.same(whole, got)
        assert.is_true(pages >= #whole // max)
      end
      -- below a path, with the agent's prefix on the results
      local sub = lines(assert(grep { pattern = "hit", path = "d1" }))
      assert.same(sub, (paged({ pattern = "hit", path = "d1", max_results = 5 }, 1000)))
    end)

    it("resumes at max_result_bytes, with context, on the wire and table paths alike", function()
      tree()
      local whole = lines(assert(grep { pattern = "hit", context = 1 }))
      open { max_result_bytes = 600 }
      local got, pages = paged({ pattern = "hit", context = 1 }, 1000)
      assert.is_true(pages > 5)
      assert.same(whole, got)
      local r = assert(grep { pattern = "hit" })
      assert.matches(('call grep again with cursor="%s"'):format(r.cursor), ws:render("grep", r), 1, true)
    end)

    it("never names a file a policy hides, and the pages still give every match shown", function()
      H.write_all(dir, { ["a.txt"] = "hit 1\nhit 2\n", ["b-secret.txt"] = "hit s\n", ["c.txt"] = "hit 3\nhit 4\n" })
      local pdir = H.tmpdir()
      local hide = H.write(pdir, "hide.lua",
        'return { name = "hide", check = function(req) if (req.path or ""):find("secret", 1, true) then return "deny", "no" end return "allow" end }')
      ws:close()
      ws = H.open({ roots = { { path = dir } }, policies = { hide } })
      local got, cursor, n = {}, nil, 0
      repeat
        local r = assert(grep { pattern = "hit", max_results = 2, cursor = cursor })
        for _, l in ipairs(lines(r)) do got[#got + 1] = l end
        assert.is_nil((r.cursor or ""):find("secret", 1, true), r.cursor)
        cursor, n = r.cursor, n + 1
        assert.is_true(n < 10)
      until not cursor
      assert.same({ "a.txt:1:hit 1", "a.txt:2:hit 2", "c.txt:1:hit 3", "c.txt:2:hit 4" }, got)
    end)

    it("gives no cursor when a budget stopped the search, and refuses one outside content mode", function()
      tree()
      open { max_search_bytes = 100 }
      local r = assert(grep { pattern = "hit", max_results = 2 })
      assert.equal("bytes", r.limit)
      assert.is_nil(r.cursor)
      assert.equal("INVALID_ARGUMENT", select(3, grep { pattern = "hit", output_mode = "files", cursor = "1:a" }))
      assert.equal("INVALID_ARGUMENT", select(3, grep { pattern = "hit", cursor = "x" }))
    end)

    it("refuses a cursor that names no place in this search instead of starting over", function()
      H.write_all(dir, { ["one.txt"] = "hit 1\nhit 2\nhit 3\n", ["d/a.txt"] = "hit a\n" })
      -- one file: its cursor names the file as "" (as its result gives it)
      local r = assert(grep { pattern = "hit", path = "one.txt", max_results = 1 })
      assert.equal("2:", r.cursor)
      r = assert(grep { pattern = "hit", path = "one.txt", cursor = r.cursor })
      assert.same({ 2, 3 }, { r.matches[1].line, r.matches[2].line })
      for _, c in ipairs { "2:nil", "2:one.txt", "2:d/a.txt" } do
        local _, msg, code, info = grep { pattern = "hit", path = "one.txt", cursor = c }
        assert.equal("INVALID_ARGUMENT", code, c)
        assert.equal("cursor", info and info.argument, msg)
      end
      -- a folder: "" names no file in it
      local _, msg, code = grep { pattern = "hit", path = "d", cursor = "1:" }
      assert.equal("INVALID_ARGUMENT", code, msg)
      -- a path that does not exist is still ENOENT, whatever the cursor
      assert.equal("ENOENT", select(3, grep { pattern = "hit", path = "nope", cursor = "1:" }))
    end)
  end)

  it("finds matching lines, sorted by path then line, with 1-based line numbers", function()
    H.write_all(dir, {
      ["b.txt"] = "x\nneedle two\n",
      ["a/z.txt"] = "needle\nno\nneedle again\n",
      ["a-b.txt"] = "needle dash\n",
      ["c.txt"] = "nothing here\n",
    })
    local r = assert(grep { pattern = "needle" })
    assert.same({ "a/z.txt:1:needle", "a/z.txt:3:needle again", "a-b.txt:1:needle dash", "b.txt:2:needle two" }, lines(r))
    assert.same({ "a/z.txt", "a-b.txt", "b.txt" }, r.files)
    assert.equal(4, r.total)
    assert.is_false(r.truncated)
  end)

  it("gives the same order on every run (threads do not decide it)", function()
    for i = 1, 200 do H.write(dir, ("d%d/f%d.txt"):format(i % 7, i), "hit\n") end
    local first = lines(assert(grep { pattern = "hit" }))
    for _ = 1, 5 do assert.same(first, lines(assert(grep { pattern = "hit" }))) end
    local sorted = {}
    for i, l in ipairs(first) do sorted[i] = l end
    table.sort(sorted, function(x, y) return x:gsub("/", "\1") < y:gsub("/", "\1") end)
    assert.same(sorted, first)
  end)

  it("treats the pattern as PCRE2, or as a plain string with literal", function()
    H.write(dir, "f.txt", "foo_bar = 1\nfooXbar\nfoo.bar\n")
    assert.equal(3, #assert(grep { pattern = "foo.bar" }).matches)
    assert.same({ "f.txt:3:foo.bar" }, lines(assert(grep { pattern = "foo.bar", literal = true })))
    assert.same({ "f.txt:1:foo_bar = 1" }, lines(assert(grep { pattern = [[\w+_bar\s*=\s*\d]] })))
    assert.same({ "f.txt:2:fooXbar" }, lines(assert(grep { pattern = "foo[A-Z]bar|nope" })))
  end)

  it("matches case-insensitively with ignore_case, Unicode included", function()
    H.write(dir, "f.txt", "Needle\nNEEDLE\nneedle\nÉCOLE\n")
    assert.equal(3, #assert(grep { pattern = "needle", ignore_case = true }).matches)
    assert.equal(3, #assert(grep { pattern = "needle", ignore_case = true, literal = true }).matches)
    assert.equal(1, #assert(grep { pattern = "école", ignore_case = true }).matches)
    -- the Kelvin sign folds to k: the prefilter must not hide it
    H.write(dir, "k.txt", "\u{212A}elvin\n")
    assert.equal(1, #assert(grep { pattern = "kelvin", ignore_case = true, path = "k.txt" }).matches)
  end)

  it("finds lines in CRLF files without the carriage return in the text", function()
    H.write(dir, "w.txt", "one\r\nneedle\r\n")
    assert.same({ "w.txt:2:needle" }, lines(assert(grep { pattern = "needle$" })))
  end)

  it("adds context lines before and after, without repeating lines", function()
    H.write(dir, "f.txt", "1\n2\nhit a\n4\nhit b\n6\n7\n8\n9\nhit c\n")
    local r = assert(grep { pattern = "hit", context = 1 })
    assert.equal(3, #r.matches)
    assert.same({ "2" }, r.matches[1].before)
    assert.same({ "4" }, r.matches[1].after)
    assert.same({}, r.matches[2].before)
    assert.same({ "6" }, r.matches[2].after)
    assert.same({ "9" }, r.matches[3].before)
    local text = ws:render("grep", r)
    assert.equal(table.concat({ "f.txt-2-2", "f.txt:3:hit a", "f.txt-4-4", "f.txt:5:hit b", "f.txt-6-6",
      "--", "f.txt-9-9", "f.txt:10:hit c" }, "\n"), text)
    r = assert(grep { pattern = "hit c", before = 2, after = 3 })
    assert.same({ "8", "9" }, r.matches[1].before)
    assert.same({}, r.matches[1].after)
  end)

  it("lists files or counts with output_mode", function()
    H.write_all(dir, { ["a.txt"] = "x\nx\n", ["b.txt"] = "x\n", ["c.txt"] = "y\n" })
    local r = assert(grep { pattern = "x", output_mode = "files" })
    assert.same({ "a.txt", "b.txt" }, r.files)
    assert.same({}, r.matches)
    assert.equal("a.txt\nb.txt", (ws:render("grep", r)))
    r = assert(grep { pattern = "x", output_mode = "count" })
    assert.same({ { path = "a.txt", count = 2 }, { path = "b.txt", count = 1 } }, r.counts)
    assert.equal("a.txt:2\nb.txt:1", (ws:render("grep", r)))
  end)

  it("filters with include and exclude globs", function()
    H.write_all(dir, { ["src/a.c"] = "x\n", ["src/a.h"] = "x\n", ["src/vendor/v.c"] = "x\n", ["doc/x.md"] = "x\n" })
    assert.same({ "src/a.c", "src/vendor/v.c" }, assert(grep { pattern = "x", include = { "*.c" } }).files)
    assert.same({ "src/a.c", "src/a.h" }, assert(grep { pattern = "x", include = { "src/*.{c,h}" } }).files)
    assert.same({ "doc/x.md", "src/a.c", "src/a.h" }, assert(grep { pattern = "x", exclude = { "vendor" } }).files)
    assert.same({ "doc/x.md" }, assert(grep { pattern = "x", exclude = { "src/**" } }).files)
  end)

  describe("ignore files (gitignore(5) cases)", function()
    before_each(function()
      H.mkdir(dir, ".git")
      H.write_all(dir, {
        [".gitignore"] = "*.log\n!keep.log\n/top.txt\nbuild/\ndoc/frotz\n",
        ["a.log"] = "hit\n", ["keep.log"] = "hit\n", ["top.txt"] = "hit\n", ["sub/top.txt"] = "hit\n",
        ["build/x.c"] = "hit\n", ["sub/build/y.c"] = "hit\n", ["doc/frotz/z"] = "hit\n", ["a/doc/frotz/z"] = "hit\n",
        ["nested/.gitignore"] = "*.c\n", ["nested/n.c"] = "hit\n", ["nested/n.h"] = "hit\n",
        ["ign/.ignore"] = "secret*\n", ["ign/secret.txt"] = "hit\n", ["ign/open.txt"] = "hit\n",
      })
    end)

    it("honours patterns, negation, anchoring, directory-only and nested files", function()
      assert.same({ "a/doc/frotz/z", "ign/open.txt", "keep.log", "nested/n.h", "sub/top.txt" },
        assert(grep { pattern = "hit" }).files)
    end)

    it("applies the root's rules when the search starts below it", function()
      assert.same({ "sub/top.txt" }, assert(grep { pattern = "hit", path = "sub" }).files)
    end)

    it("honours .git/info/exclude", function()
      H.write(dir, ".git/info/exclude", "sub/\nkeep.log\n")
      -- sub/ goes; keep.log stays: .gitignore's !keep.log ranks above exclude
      assert.same({ "a/doc/frotz/z", "ign/open.txt", "keep.log", "nested/n.h" },
        assert(grep { pattern = "hit" }).files)
    end)

    it("searches everything with respect_ignore = false", function()
      assert.equal(12, #assert(grep { pattern = "hit", respect_ignore = false }).files)
    end)

    it("applies .gitignore only inside a git repository, .ignore always", function()
      H.sh("rm -rf " .. H.q(dir .. "/.git"))
      local files = assert(grep { pattern = "hit" }).files
      assert.equal(11, #files) -- all but ign/secret.txt
    end)
  end)

  it("leaves hidden files and directories out unless include_hidden", function()
    H.write_all(dir, { [".env"] = "hit\n", [".cfg/x"] = "hit\n", ["v.txt"] = "hit\n" })
    assert.same({ "v.txt" }, assert(grep { pattern = "hit" }).files)
    assert.same({ ".cfg/x", ".env", "v.txt" }, assert(grep { pattern = "hit", include_hidden = true }).files)
  end)

  it("skips and lists binary files and files over max_file_size", function()
    H.write_all(dir, { ["bin.dat"] = "hit\0\1\2", ["big.txt"] = ("x"):rep(5000) .. "\nhit\n", ["ok.txt"] = "hit\n" })
    local r = assert(grep { pattern = "hit", max_file_size = 1000 })
    assert.same({ "ok.txt" }, r.files)
    assert.same({ "bin.dat" }, r.skipped_binary)
    assert.same({ "big.txt" }, r.skipped_size)
    local text = ws:render("grep", r)
    assert.matches("skipped 1 binary files: bin.dat", text, 1, true)
    assert.matches("skipped 1 files over max_file_size (1000 bytes): big.txt", text, 1, true)
    r = assert(grep { pattern = "nowhere" })
    assert.same({}, r.matches)
    assert.matches("^No matches", (ws:render("grep", r)))
    assert.same({ "bin.dat" }, r.skipped_binary)
  end)

  it("never raises max_file_size above the server's cap", function()
    open { max_file_size = 100 }
    H.write(dir, "big.txt", ("x"):rep(200) .. "hit\n")
    local r = assert(grep { pattern = "hit", max_file_size = 10 ^ 9 })
    assert.same({ "big.txt" }, r.skipped_size)
  end)

  it("stops at max_results with truncated, keeping the first in path order", function()
    for i = 1, 9 do H.write(dir, "f" .. i .. ".txt", "hit\nhit\n") end
    local r = assert(grep { pattern = "hit", max_results = 5 })
    assert.same({ "f1.txt:1:hit", "f1.txt:2:hit", "f2.txt:1:hit", "f2.txt:2:hit", "f3.txt:1:hit" }, lines(r))
    assert.is_true(r.truncated)
    assert.matches("results truncated", (ws:render("grep", r)))
    open { max_matches = 3 }
    assert.equal(3, #assert(grep { pattern = "hit", max_results = 100 }).matches)
    open { max_entries = 2 }
    assert.same({ "f1.txt", "f2.txt" }, assert(grep { pattern = "hit", output_mode = "files" }).files)
  end)

  it("keeps the result under max_result_bytes", function()
    open { max_result_bytes = 2000 }
    for i = 1, 50 do H.write(dir, ("f%02d.txt"):format(i), ("hit %s\n"):format(("y"):rep(100))) end
    local r = assert(grep { pattern = "hit" })
    assert.is_true(#r.matches < 50)
    assert.is_true(r.truncated)
  end)

  it("max_result_bytes keeps the same matches whether the core or the tool cuts", function()
    -- without a policy that judges each file the core cuts as it builds
    -- the matches; with one (allowing all), the tool cuts after the
    -- policies: the same matches either way, context lines counted
    for i = 1, 40 do
      H.write(dir, ("f%02d.txt"):format(i), ("pre\nhit %s\npost\nhit %d\n"):format(("y"):rep(i * 7), i))
    end
    local pdir = H.tmpdir()
    local allow = H.write(pdir, "all.lua", 'return { name = "all", check = function() return "allow" end }')
    for _, cap in ipairs { 1, 700, 2000, 5333, 1000000 } do
      for _, ctxn in ipairs { 0, 1 } do
        local args = { pattern = "hit", context = ctxn }
        local core_cut = assert(open({ max_result_bytes = cap }):call("grep", args))
        ws:close()
        ws = H.open({ roots = { { path = dir } }, policies = { allow } }, { max_result_bytes = cap })
        local tool_cut = assert(ws:call("grep", args))
        assert.same(lines(tool_cut), lines(core_cut), ("cap %d, context %d"):format(cap, ctxn))
        assert.equal(tool_cut.truncated, core_cut.truncated)
        assert.equal(core_cut.cursor, tool_cut.cursor) -- the same next page either way
        assert.equal(cap < 1000000, core_cut.truncated)
        assert.is_true(#core_cut.matches >= 1)
      end
    end
  end)

  it("cuts very long lines with a marker", function()
    H.write(dir, "min.js", ("a"):rep(10000) .. "hit" .. ("b"):rep(10000) .. "\n")
    local m = assert(grep { pattern = "hit" }).matches[1]
    assert.is_true(#m.text < 2200)
    assert.matches("line truncated", m.text, 1, true)
  end)

  it("lets matches span lines with multiline", function()
    H.write(dir, "f.txt", "start\nfoo\nbar\nend\n")
    assert.same({}, assert(grep { pattern = "foo\\nbar" }).matches)
    local r = assert(grep { pattern = "foo\\nbar", multiline = true })
    assert.equal(1, #r.matches)
    assert.equal(2, r.matches[1].line)
    assert.equal("foo\nbar", r.matches[1].text)
  end)

  it("fails fast on a catastrophic pattern instead of hanging", function()
    H.write(dir, "evil.txt", ("a"):rep(5000) .. "!\n")
    local t0 = os.time()
    local r, msg, code = grep { pattern = "(a+)+$" }
    assert.is_nil(r)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("backtracking", msg)
    assert.is_true(os.time() - t0 < 30)
  end)

  it("answers a malformed pattern or glob with INVALID_ARGUMENT naming the pattern", function()
    local r, msg, code = grep { pattern = "a(b" }
    assert.is_nil(r)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("^INVALID_ARGUMENT: pattern", msg)
    r, msg, code = grep { pattern = "a", include = { "a/../b" } }
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("names results with the agent's path: relative, absolute, a single file", function()
    H.write_all(dir, { ["src/a.c"] = "hit\n" })
    assert.same({ "src/a.c" }, assert(grep { pattern = "hit", path = "src" }).files)
    assert.same({ "src/a.c" }, assert(grep { pattern = "hit", path = "src/" }).files)
    assert.same({ dir .. "/src/a.c" }, assert(grep { pattern = "hit", path = dir .. "/src" }).files)
    assert.same({ dir .. "/src/a.c" }, assert(grep { pattern = "hit", path = dir }).files)
    assert.same({ "src/a.c" }, assert(grep { pattern = "hit", path = "src/a.c" }).files)
    local ws2 = H.open { path = dir, mount = "/workspace" }
    assert.same({ "/workspace/src/a.c" }, assert(ws2:call("grep", { pattern = "hit", path = "/workspace" })).files)
    ws2:close()
  end)

  it("refuses a missing path and a path that is not a directory or file", function()
    local r, _, code = grep { pattern = "x", path = "nope" }
    assert.is_nil(r)
    assert.equal("ENOENT", code)
  end)

  describe("the search budget and stopping inside a file", function()
    -- lines of twenty a's and a b: (a+)+$ fails on each after ~2^20 steps,
    -- under PCRE2's match limit, so nothing fails and a 1.1 MB file takes
    -- minutes (no literal: it runs over 1 MiB windows)
    local SLOW = ("a"):rep(20) .. "b\n"
    local function slow_file(name) H.write(dir, name or "slow.txt", SLOW:rep(50000)) end

    it("ends at max_search_ms with the results so far, limit = time, and says so in the text", function()
      slow_file()
      H.write(dir, "a-first.txt", "aab\n")
      open { max_search_ms = 300 }
      local t0 = H.core.now()
      local r = assert(grep { pattern = "(a+)+$|^aab$" })
      local secs = H.core.now() - t0
      print(("\n  grep with max_search_ms=300 returned after %.0f ms"):format(secs * 1000))
      assert.equal("time", r.limit)
      assert.is_true(r.truncated)
      assert.is_false(r.cancelled)
      assert.is_true(secs < 20, ("%.1f s: the budget did not bound the search"):format(secs))
      for _, m in ipairs(r.matches) do assert.equal("a-first.txt", m.path) end -- partial, never wrong
      local text = ws:render("grep", r)
      assert.matches("[LIMIT time: the search stopped at max_search_ms=300", text, 1, true)
    end)

    it("ends at max_search_bytes without reading the file that would pass it, limit = bytes", function()
      for i = 1, 6 do H.write(dir, ("f%d.txt"):format(i), ("hit\n"):rep(25000)) end -- 100000 bytes each
      open { max_search_bytes = 250000 }
      local r = assert(grep { pattern = "hit", output_mode = "count" })
      assert.equal("bytes", r.limit)
      assert.is_true(r.truncated)
      assert.is_true(r.bytes_searched <= 250000, r.bytes_searched)
      assert.is_true(r.files_searched <= 2, r.files_searched)
      assert.matches("[LIMIT bytes: the search stopped at max_search_bytes=250000", ws:render("grep", r), 1, true)
      -- and without the cap, the whole tree
      open {}
      r = assert(grep { pattern = "hit", output_mode = "count" })
      assert.is_nil(r.limit)
      assert.equal(6, r.files_searched)
      assert.equal(600000, r.bytes_searched)
    end)

    it("stops inside one big file when the caller cancels, not at its end", function()
      slow_file()
      local t0, asked = H.core.now(), 0
      local r = assert(ws:call("grep", { pattern = "(a+)+$" }, {
        cancelled = function() asked = asked + 1 return H.core.now() - t0 > 0.3 end,
      }))
      local secs = H.core.now() - t0
      print(("\n  grep cancelled after 300 ms returned after %.0f ms"):format(secs * 1000))
      assert.is_true(r.cancelled)
      assert.is_true(r.truncated)
      assert.is_true(secs < 20, ("%.1f s: the cancel waited for the file"):format(secs))
    end)

    it("leaves matching as it was: leading option verbs, alternation, literals", function()
      H.write(dir, "f.txt", "caf\u{e9} x\nfoo\nbar\na.b(c\n")
      assert.same({ "f.txt:1:caf\u{e9} x" }, lines(assert(grep { pattern = "(*UCP)^\\w{4}\\b" })))
      assert.same({ "f.txt:2:foo", "f.txt:3:bar" }, lines(assert(grep { pattern = "^foo$|^bar$" })))
      assert.same({ "f.txt:4:a.b(c" }, lines(assert(grep { pattern = "a.b(", literal = true, ignore_case = true })))
      local _, _, code = grep { pattern = "*a\\d" } -- a quantifier cannot attach to the callout put first
      assert.equal("INVALID_ARGUMENT", code)
    end)
  end)

  it("reports progress and stops when the caller cancels", function()
    for i = 1, 50 do H.write(dir, ("d%d/f.txt"):format(i), "hit\n") end
    local reported = 0
    local r = assert(ws:call("grep", { pattern = "hit" }, {
      progress = function() reported = reported + 1 end,
      cancelled = function() return true end,
    }))
    assert.is_table(r)
    -- a search this small may finish before the first report: only a
    -- cancelled search may be partial, and it says so
    if r.cancelled then assert.is_true(r.truncated) end
  end)
end)
