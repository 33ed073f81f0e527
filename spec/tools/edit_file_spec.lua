-- edit_file: exact, unique, all-or-nothing edits matched against the
-- original; line endings, BOM and tabs kept; errors that say where; the
-- loose ladder and the level it reports; diff, expected_hash, dry_run.

local H = require "helpers"

describe(H.tag("edit_file"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  local function edit(args)
    return ws:call("edit_file", args)
  end

  it("is bounded in time (max_edit_ms): many edits on a big file stop, nothing is written", function()
    local lines, edits = {}, {}
    for i = 1, 4000 do
      lines[i] = ("line %05d %s"):format(i, ("x"):rep(200))
      edits[i] = { old_text = ("line %05d"):format(4001 - i), new_text = ("LINE %05d"):format(4001 - i) }
    end
    -- one CRLF line makes the file's line endings mixed: each edit is
    -- then searched alone (bw_exact_index finds a one-style file's in
    -- one pass, too fast for this budget), 4,000 passes over 800 kB
    local body = table.concat(lines, "\n", 1, 1) .. "\r\n" .. table.concat(lines, "\n", 2) .. "\n"
    H.write(dir, "big.txt", body)
    ws:close()
    ws = H.open(dir, { max_edit_ms = 20 })
    local r, msg, code, d = edit { path = "big.txt", edits = edits }
    assert.is_nil(r)
    assert.equal("TOO_LARGE", code)
    assert.matches("max_edit_ms=20", msg, 1, true)
    assert.matches("nothing was written", msg, 1, true)
    assert.equal("max_edit_ms", d.limit)
    assert.equal(body, H.read(dir, "big.txt"))
  end)

  local function inode(rel)
    return H.sh("stat -c %i " .. H.q(dir .. "/" .. rel))
  end

  -- A failed edit leaves the file byte-identical, same inode (P2-9).
  local function unchanged(rel, content, ino)
    assert.equal(content, H.read(dir, rel))
    assert.equal(ino, inode(rel))
  end

  describe("exact edits", function()
    it("replaces one unique match and returns the diff, count and new hash", function()
      H.write(dir, "a.py", "def f():\n    return 1\n\nprint(f())\n")
      local r = assert(edit { path = "a.py", old_text = "    return 1\n", new_text = "    return 2\n" })
      assert.equal("def f():\n    return 2\n\nprint(f())\n", H.read(dir, "a.py"))
      assert.equal(1, r.replacements)
      assert.equal(H.sha256sum(dir, "a.py"), r.content_hash)
      assert.equal(2, r.first_changed_line)
      assert.equal("--- a.py\n+++ a.py\n@@ -1,4 +1,4 @@\n def f():\n-    return 1\n+    return 2\n \n print(f())\n", r.diff)
      assert.same({ { replacements = 1, level = "exact", line = 2 } }, r.edits)
    end)

    it("applies several edits, all matched against the original text", function()
      H.write(dir, "a.txt", "alpha beta gamma\n")
      local r = assert(edit { path = "a.txt", edits = {
        { old_text = "alpha", new_text = "beta" },
        { old_text = "beta", new_text = "gamma" },
      } })
      assert.equal("beta gamma gamma\n", H.read(dir, "a.txt"))
      assert.equal(2, r.replacements)
    end)

    it("takes the old_text/new_text shorthand together with edits[]", function()
      H.write(dir, "a.txt", "one two three\n")
      assert(edit { path = "a.txt", edits = { { old_text = "one", new_text = "1" } }, old_text = "three", new_text = "3" })
      assert.equal("1 two 3\n", H.read(dir, "a.txt"))
    end)

    it("replace_all replaces every match and counts them", function()
      H.write(dir, "a.c", "foo(1); foo(2);\nfoo(3);\n")
      local r = assert(edit { path = "a.c", old_text = "foo(", new_text = "bar(", replace_all = true })
      assert.equal("bar(1); bar(2);\nbar(3);\n", H.read(dir, "a.c"))
      assert.equal(3, r.replacements)
    end)

    it("edits at the very start and the very end of a file", function()
      H.write(dir, "a.txt", "first\nmiddle\nlast")
      assert(edit { path = "a.txt", edits = {
        { old_text = "first", new_text = "FIRST" }, { old_text = "last", new_text = "LAST" } } })
      assert.equal("FIRST\nmiddle\nLAST", H.read(dir, "a.txt"))
    end)

    it("keeps a file without a final newline so, and says so in the diff", function()
      H.write(dir, "a.txt", "a\nb")
      local r = assert(edit { path = "a.txt", old_text = "b", new_text = "B" })
      assert.equal("a\nB", H.read(dir, "a.txt"))
      assert.matches("\\ No newline at end of file", r.diff, 1, true)
    end)

    it("deletes text with an empty new_text", function()
      H.write(dir, "a.txt", "keep\ndrop me\nkeep\n")
      assert(edit { path = "a.txt", old_text = "drop me\n", new_text = "" })
      assert.equal("keep\nkeep\n", H.read(dir, "a.txt"))
    end)

    it("keeps multibyte UTF-8 next to the match intact", function()
      H.write(dir, "u.txt", "café€naïve — ok\n")
      assert(edit { path = "u.txt", old_text = "€", new_text = "EUR" })
      assert.equal("caféEURnaïve — ok\n", H.read(dir, "u.txt"))
      assert(edit { path = "u.txt", old_text = "é", new_text = "e" })
      assert.equal("cafeEURnaïve — ok\n", H.read(dir, "u.txt"))
    end)

    it("keeps the file's mode", function()
      H.write(dir, "run.sh", "#!/bin/sh\necho a\n")
      H.chmod(dir, "run.sh", "0750")
      assert(edit { path = "run.sh", old_text = "echo a", new_text = "echo b" })
      assert.equal("750", H.mode(dir, "run.sh"))
    end)
  end)

  describe("line endings, BOM and tabs", function()
    it("an LF old_text matches in a CRLF file and the result stays CRLF", function()
      H.write(dir, "w.txt", "one\r\ntwo\r\nthree\r\n")
      assert(edit { path = "w.txt", old_text = "one\ntwo\n", new_text = "1\n2\n2.5\n" })
      assert.equal("1\r\n2\r\n2.5\r\nthree\r\n", H.read(dir, "w.txt"))
    end)

    it("a CRLF old_text matches in an LF file and the result stays LF", function()
      H.write(dir, "u.txt", "one\ntwo\n")
      assert(edit { path = "u.txt", old_text = "one\r\ntwo", new_text = "1\r\n2" })
      assert.equal("1\n2\n", H.read(dir, "u.txt"))
    end)

    it("in a mixed file, lines outside the edit are byte-identical and new lines follow their span", function()
      local before = "a\r\nb\nc\r\nd\n"
      H.write(dir, "m.txt", before)
      assert(edit { path = "m.txt", old_text = "c", new_text = "c1\nc2" })
      assert.equal("a\r\nb\nc1\r\nc2\r\nd\n", H.read(dir, "m.txt"))
      assert(edit { path = "m.txt", old_text = "b", new_text = "b1\nb2" })
      assert.equal("a\r\nb1\nb2\nc1\r\nc2\r\nd\n", H.read(dir, "m.txt"))
    end)

    it("keeps the BOM, and ignores one at the start of old_text", function()
      H.write(dir, "b.txt", "\239\187\191title\nbody\n")
      assert(edit { path = "b.txt", old_text = "\239\187\191title", new_text = "TITLE" })
      assert.equal("\239\187\191TITLE\nbody\n", H.read(dir, "b.txt"))
    end)

    it("never expands tabs", function()
      H.write(dir, "Makefile", "all:\n\tcc -o x x.c\n\techo done\n")
      assert(edit { path = "Makefile", old_text = "\techo done", new_text = "\techo ok\n\ttrue" })
      assert.equal("all:\n\tcc -o x x.c\n\techo ok\n\ttrue\n", H.read(dir, "Makefile"))
    end)
  end)

  describe("refusals leave the file untouched", function()
    it("not found: NOT_FOUND_TEXT naming the nearest line and what differs", function()
      local body = "def f():\n\tif x:\n\t\treturn 1\n"
      H.write(dir, "a.py", body)
      local ino = inode("a.py")
      local r, msg, code = edit { path = "a.py", old_text = "    if x:\n        return 1\n", new_text = "pass\n" }
      assert.is_nil(r)
      assert.equal("NOT_FOUND_TEXT", code)
      assert.matches("line 2", msg, 1, true)
      assert.matches("indentation", msg, 1, true)
      assert.matches("tabs vs spaces", msg, 1, true)
      assert.matches('match="loose"', msg, 1, true)
      unchanged("a.py", body, ino)
    end)

    it("not found with nothing looser: the nearest line, its similarity and excerpt", function()
      H.write(dir, "a.js", "const total = price * quantity;\nconsole.log(total);\n")
      local _, msg, code = edit { path = "a.js", old_text = "const total = price * qty;", new_text = "x" }
      assert.equal("NOT_FOUND_TEXT", code)
      assert.matches("nearest line is 1 %(%d+%% similar%)", msg)
      assert.matches("price * quantity", msg, 1, true)
    end)

    it("quotes: straight old_text against curly quotes in the file is named as the difference", function()
      H.write(dir, "q.md", "He said \226\128\156hello\226\128\157.\n")
      local _, msg, code = edit { path = "q.md", old_text = 'He said "hello".', new_text = "x" }
      assert.equal("NOT_FOUND_TEXT", code)
      assert.matches("quotes", msg, 1, true)
    end)

    it("ambiguous: AMBIGUOUS_TEXT listing every matching line", function()
      local body = "x = 1\ny = 2\nx = 1\nz = 3\nx = 1\n"
      H.write(dir, "a.py", body)
      local ino = inode("a.py")
      local r, msg, code = edit { path = "a.py", old_text = "x = 1", new_text = "x = 9" }
      assert.is_nil(r)
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.matches("3 places", msg, 1, true)
      assert.matches("lines 1, 3, 5", msg, 1, true)
      unchanged("a.py", body, ino)
    end)

    it("overlapping edits: OVERLAPPING_EDITS naming both edits", function()
      H.write(dir, "a.txt", "hello world\n")
      local _, msg, code = edit { path = "a.txt", edits = {
        { old_text = "hello wor", new_text = "X" }, { old_text = "world", new_text = "Y" } } }
      assert.equal("OVERLAPPING_EDITS", code)
      assert.matches("edits 1 and 2 overlap", msg, 1, true)
      assert.equal("hello world\n", H.read(dir, "a.txt"))
    end)

    it("one failing edit of several: none is applied, and the message names it", function()
      H.write(dir, "a.txt", "one\ntwo\n")
      local ino = inode("a.txt")
      local _, msg, code = edit { path = "a.txt", edits = {
        { old_text = "one", new_text = "1" }, { old_text = "three", new_text = "3" } } }
      assert.equal("NOT_FOUND_TEXT", code)
      assert.matches("edit 2", msg, 1, true)
      unchanged("a.txt", "one\ntwo\n", ino)
    end)

    it("an empty old_text is INVALID_ARGUMENT", function()
      H.write(dir, "a.txt", "x\n")
      local _, msg, code = edit { path = "a.txt", old_text = "", new_text = "y" }
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("old_text is empty", msg, 1, true)
    end)

    it("old_text equal to new_text is INVALID_ARGUMENT", function()
      H.write(dir, "a.txt", "x\n")
      local _, msg, code = edit { path = "a.txt", old_text = "x", new_text = "x" }
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("the same", msg, 1, true)
    end)

    it("no edits at all is INVALID_ARGUMENT", function()
      H.write(dir, "a.txt", "x\n")
      local _, _, code = edit { path = "a.txt" }
      assert.equal("INVALID_ARGUMENT", code)
      _, _, code = edit { path = "a.txt", old_text = "x" }
      assert.equal("INVALID_ARGUMENT", code)
    end)

    it("a missing file is ENOENT, a directory EISDIR, a binary file BINARY", function()
      local _, _, code = edit { path = "nope.txt", old_text = "a", new_text = "b" }
      assert.equal("ENOENT", code)
      H.mkdir(dir, "d")
      _, _, code = edit { path = "d", old_text = "a", new_text = "b" }
      assert.equal("EISDIR", code)
      H.write(dir, "bin", "a\0b")
      _, _, code = edit { path = "bin", old_text = "a", new_text = "b" }
      assert.equal("BINARY", code)
    end)

    it("edits through a symlink or of a hard-linked file are POLICY_DENIED", function()
      H.write(dir, "t.txt", "target\n")
      H.symlink("t.txt", dir, "link")
      H.hardlink(dir, "t.txt", "hard")
      local _, _, code = edit { path = "link", old_text = "target", new_text = "x" }
      assert.equal("POLICY_DENIED", code)
      _, _, code = edit { path = "hard", old_text = "target", new_text = "x" }
      assert.equal("POLICY_DENIED", code)
      assert.equal("target\n", H.read(dir, "t.txt"))
    end)

    it("a read-only root is READ_ONLY_ROOT", function()
      H.write(dir, "a.txt", "x\n")
      ws:close()
      ws = H.open { path = dir, mode = "ro" }
      local _, _, code = edit { path = "a.txt", old_text = "x", new_text = "y" }
      assert.equal("READ_ONLY_ROOT", code)
      assert.equal("x\n", H.read(dir, "a.txt"))
    end)
  end)

  describe("expected_hash and dry_run", function()
    it("edits when expected_hash is the current hash, and chains with the returned hash", function()
      H.write(dir, "a.txt", "v1\n")
      local h = assert(ws:call("read_file", { path = "a.txt" })).content_hash
      local r = assert(edit { path = "a.txt", old_text = "v1", new_text = "v2", expected_hash = h })
      assert.equal(h, r.previous_content_hash)
      assert(edit { path = "a.txt", old_text = "v2", new_text = "v3", expected_hash = r.content_hash })
      assert.equal("v3\n", H.read(dir, "a.txt"))
    end)

    it("refuses a stale hash with HASH_MISMATCH carrying the current hash", function()
      H.write(dir, "a.txt", "v1\n")
      local h = assert(ws:call("read_file", { path = "a.txt" })).content_hash
      H.write(dir, "a.txt", "v1 changed\n")
      local _, msg, code = edit { path = "a.txt", old_text = "v1", new_text = "v2", expected_hash = h }
      assert.equal("HASH_MISMATCH", code)
      assert.matches(H.sha256sum(dir, "a.txt"), msg, 1, true)
      assert.equal("v1 changed\n", H.read(dir, "a.txt"))
    end)

    it("dry_run returns the diff and the would-be hash and writes nothing", function()
      H.write(dir, "a.txt", "old\n")
      local ino = inode("a.txt")
      local r = assert(edit { path = "a.txt", old_text = "old", new_text = "new", dry_run = true })
      assert.is_true(r.dry_run)
      assert.equal(H.sha256_of("new\n"), r.content_hash)
      assert.matches("+new", r.diff, 1, true)
      unchanged("a.txt", "old\n", ino)
    end)
  end)

  describe('match = "loose"', function()
    it("ignores trailing whitespace and reports the level", function()
      H.write(dir, "a.txt", "one   \ntwo\t\nthree\n")
      local r = assert(edit { path = "a.txt", old_text = "one\ntwo\n", new_text = "1\n2\n", match = "loose" })
      assert.equal("1\n2\nthree\n", H.read(dir, "a.txt"))
      assert.equal("trailing_whitespace", r.edits[1].level)
    end)

    it("ignores indentation and re-indents new_text to the block (spaces sent, tabs kept)", function()
      H.write(dir, "a.go", "func f() {\n\tif x {\n\t\treturn 1\n\t}\n}\n")
      local r = assert(edit { path = "a.go", match = "loose",
        old_text = "    if x {\n        return 1\n    }\n",
        new_text = "    if x {\n        log()\n        return 2\n    }\n" })
      assert.equal("func f() {\n\tif x {\n\t\tlog()\n\t\treturn 2\n\t}\n}\n", H.read(dir, "a.go"))
      assert.equal("indentation", r.edits[1].level)
      local text = ws:render("edit_file", r)
      assert.matches("edit 1 matched at level indentation (when indentation is ignored; new_text re-indented to the block)", text, 1, true)
    end)

    it("folds Unicode punctuation, and the file keeps the characters outside the edit", function()
      H.write(dir, "q.md", "Title \226\128\148 \226\128\156quoted\226\128\157 text\n")
      local r = assert(edit { path = "q.md", match = "loose", old_text = '"quoted"', new_text = '"replaced"' })
      assert.equal("Title \226\128\148 \"replaced\" text\n", H.read(dir, "q.md"))
      assert.equal("unicode", r.edits[1].level)
    end)

    it("a level that finds several places is AMBIGUOUS_TEXT, never a guess", function()
      H.write(dir, "a.txt", "  item \n\titem \n")
      local _, msg, code = edit { path = "a.txt", old_text = "item\n", new_text = "x\n", match = "loose" }
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.matches("when indentation is ignored", msg, 1, true)
      assert.equal("  item \n\titem \n", H.read(dir, "a.txt"))
    end)

    it("an old_text indented less than the file is not matched inside the indentation (issue 13)", function()
      local src = "function main() {\n  if (bad) {\n    process.exitCode = 2;\n    return;\n  }\n}\n"
      H.write(dir, "m.js", src)
      local e = { path = "m.js", old_text = "  process.exitCode = 2;\n",
        new_text = "  process.exitCode = 2;\n  console.error(\"bad\");\n" }
      local _, msg, code = edit(e)
      assert.equal("NOT_FOUND_TEXT", code)
      assert.matches("matches at line 3 when indentation is ignored", msg, 1, true)
      assert.equal(src, H.read(dir, "m.js"))
      e.match = "loose"
      local r = assert(edit(e))
      assert.equal("indentation", r.edits[1].level)
      assert.equal("function main() {\n  if (bad) {\n    process.exitCode = 2;\n    console.error(\"bad\");\n"
        .. "    return;\n  }\n}\n", H.read(dir, "m.js"))
    end)

    it("re-indentation that would be a guess is refused, saying where, nothing written", function()
      local src = "a:\n    b\n  c\n"
      H.write(dir, "y.txt", src)
      local _, msg, code = edit { path = "y.txt", match = "loose",
        old_text = "a:\n  b\n    c\n", new_text = "a:\n  b\n    c\n      d\n" }
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.matches("new_text's line 4 (`      d`) cannot be re-indented", msg, 1, true)
      assert.matches("line 2: the file has `    b`, old_text has `  b`", msg, 1, true)
      assert.equal(src, H.read(dir, "y.txt"))
    end)

    -- The eslint case (issue 44): a line of an indented JSDoc block sent
    -- without its indentation, with new lines after it. The line matches
    -- exactly from after the file's indentation, and old_text has no other
    -- line to say whether new_text's lines are indented as in the file or
    -- relative to old_text: it used to land as written (` * @param` at
    -- column 1 inside a class body). On the loose ladder that is refused.
    local API = table.concat({
      "class ESLintLoader {",
      "",
      "    /**",
      "     * Loads the correct ESLint constructor given the options.",
      "     * @param {Object} [options] The options object",
      "     * @returns {Promise<ESLint|LegacyESLint>} The ESLint constructor",
      "     */",
      "    async load(options) {",
      "        return shouldUseFlatConfig(options) ? ESLint : LegacyESLint;",
      "    }",
      "}",
      "",
    }, "\n")

    it("a JSDoc line matched only after the file's indentation, new lines after it: refused (issue 44)", function()
      H.write(dir, "api.js", API)
      local r, msg, code, d = edit { path = "api.js", match = "loose",
        old_text = "* @param {Object} [options] The options object\n",
        new_text = "* @param {Object} [options] The options object\n"
          .. " * @param {boolean} [options.useFlatConfig] Whether or not to use a flat config\n" }
      assert.is_nil(r, "written as:\n" .. H.read(dir, "api.js"))
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.equal(API, H.read(dir, "api.js"))
      assert.equal(5, d.lines[1])
      assert.equal(2, d.reindent_line)
      assert.is_true(d.after_indent)
      assert.matches("old_text matches line 5 only after the line's indentation", msg, 1, true)
      assert.matches("new_text's line 2 (` * @param {boolean}", msg, 1, true)
      assert.matches("Give old_text from the start of its line, with the file's indentation", msg, 1, true)
      -- exact (the default) places new_text as written: bytes are bytes
      assert(edit { path = "api.js", dry_run = true,
        old_text = "* @param {Object} [options] The options object\n",
        new_text = "* @param {Object} [options] The options object\n * x\n" })
      -- a one-line new_text is no guess, nor is old_text with another line
      -- (that line matched as the file has it: new_text is in the file's terms)
      assert(edit { path = "api.js", match = "loose", dry_run = true,
        old_text = "* @param {Object} [options] The options object", new_text = "* @param {Object} [opts] The options" })
      local ok = assert(edit { path = "api.js", match = "loose", dry_run = true,
        old_text = "* @param {Object} [options] The options object\n     * @returns",
        new_text = "* @param {Object} [options] The options object\n     * @param {string} [options.cwd] The cwd\n     * @returns" })
      assert.equal("exact", ok.level)
    end)

    it("the fix the refusal names: the whole JSDoc block at other indentation is re-indented as a block", function()
      H.write(dir, "api.js", API)
      local r = assert(edit { path = "api.js", match = "loose",
        old_text = "/**\n * Loads the correct ESLint constructor given the options.\n * @param {Object} [options] The options object\n",
        new_text = "/**\n * Loads the correct ESLint constructor given the options.\n * @param {Object} [options] The options object\n"
          .. " * @param {boolean} [options.useFlatConfig] Whether or not to use a flat config\n" })
      assert.equal("indentation", r.level)
      assert.equal("indentation", r.edits[1].level)
      assert.equal(API:gsub("The options object\n", "The options object\n"
        .. "     * @param {boolean} [options.useFlatConfig] Whether or not to use a flat config\n", 1), H.read(dir, "api.js"))
      local text = ws:render("edit_file", r)
      assert.matches("edit 1 matched at level indentation", text, 1, true)
    end)

    it("tabs vs spaces: a tab-indented JSDoc block sent with spaces gets tabs, its star lines one space in", function()
      local src = "class A {\n\t/**\n\t * Loads.\n\t */\n\tload() {\n\t\treturn 1;\n\t}\n}\n"
      H.write(dir, "a.js", src)
      local r = assert(edit { path = "a.js", match = "loose",
        old_text = "    /**\n     * Loads.\n     */\n    load() {\n        return 1;\n",
        new_text = "    /**\n     * Loads.\n     * @returns {number} one\n     */\n    load() {\n        log();\n        return 1;\n" })
      assert.equal("indentation", r.edits[1].level)
      assert.equal("class A {\n\t/**\n\t * Loads.\n\t * @returns {number} one\n\t */\n\tload() {\n\t\tlog();\n\t\treturn 1;\n\t}\n}\n",
        H.read(dir, "a.js"))
    end)

    it("a block whose first line is less indented than the rest keeps each line's offset, comments included", function()
      local src = "def f():\n    if x:\n        # why\n        #   and more\n        y = call(a,\n                 b)\n"
      H.write(dir, "f.py", src)
      local r = assert(edit { path = "f.py", match = "loose",
        old_text = "if x:\n    # why\n    #   and more\n    y = call(a,\n             b)\n",
        new_text = "if x:\n    # why\n    #   and more\n        # deeper note\n    y = call(a,\n             b,\n             c)\n" })
      assert.equal("indentation", r.edits[1].level)
      assert.equal("def f():\n    if x:\n        # why\n        #   and more\n            # deeper note\n"
        .. "        y = call(a,\n                 b,\n                 c)\n", H.read(dir, "f.py"))
    end)

    it("CRLF: a JSDoc block re-indented stays CRLF; a refused one writes nothing", function()
      local crlf = API:gsub("\n", "\r\n")
      H.write(dir, "api.js", crlf)
      local _, _, code = edit { path = "api.js", match = "loose",
        old_text = "* @param {Object} [options] The options object\n",
        new_text = "* @param {Object} [options] The options object\n * more\n" }
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.equal(crlf, H.read(dir, "api.js"))
      assert(edit { path = "api.js", match = "loose",
        old_text = "/**\n * Loads the correct ESLint constructor given the options.\n",
        new_text = "/**\n * Loads the ESLint constructor\n * the options ask for.\n" })
      assert.equal(crlf:gsub(" %* Loads the correct ESLint constructor given the options%.",
        " * Loads the ESLint constructor\r\n     * the options ask for.", 1), H.read(dir, "api.js"))
    end)

    it("a JSDoc block that the loose ladder finds twice is refused, naming both lines", function()
      local doc = "/**\n * Returns the value.\n */\n"
      local src = "class A {\n    /**\n     * Returns the value.\n     */\n    get() {}\n}\n"
        .. "function outer() {\n    class B {\n        /**\n         * Returns the value.\n         */\n        get() {}\n    }\n}\n"
      H.write(dir, "two.js", src)
      local _, msg, code, d = edit { path = "two.js", match = "loose", old_text = doc,
        new_text = "/**\n * Returns the value, or nil.\n */\n" }
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.equal("indentation", d.level)
      assert.same({ 2, 9 }, d.lines)
      assert.matches("old_text matches 2 places when indentation is ignored, on lines 2, 9", msg, 1, true)
      assert.equal(src, H.read(dir, "two.js"))
    end)

    it("a place only old_text's own indentation picked, among copies at other depths, is refused (issue 44)", function()
      -- jquery's event.js: "// Claim the first handler" sent one tab too
      -- deep, where a copy of that line is that deep
      local src = "function setup() {\n\t\tif (a) {\n\t\t\t\t// Claim the first handler\n\t\t}\n"
        .. "\tif (b) {\n\n\t\t\t// Claim the first handler\n\t}\n}\n"
      H.write(dir, "event.js", src)
      local e = { path = "event.js", match = "loose", old_text = "\t\t\t\t// Claim the first handler\n",
        new_text = "\t\t\t\tvar attaches;\n\t\t\t\t// Claim the first handler\n" }
      local r, msg, code, d = edit(e)
      assert.is_nil(r, "written as:\n" .. H.read(dir, "event.js"))
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.same({ 3, 7 }, d.lines)
      assert.equal(3, d.found_line)
      assert.equal("exact", d.found_level)
      assert.matches("old_text is at line 3 as written, but matches 2 places when indentation is ignored, on lines 3, 7", msg, 1, true)
      assert.equal(src, H.read(dir, "event.js"))
      e.match = nil -- exact: bytes are bytes
      assert(edit(e))
    end)

    it("exact results only gain the level field", function()
      H.write(dir, "a.txt", "one\n")
      local r = assert(edit { path = "a.txt", old_text = "one", new_text = "1" })
      assert.equal("exact", r.level)
      local text = ws:render("edit_file", r)
      assert.not_matches("matched at level", text, 1, true)
      assert.equal(("Edited a.txt: 1 replacement, +1 -1 lines, %s\n"):format(r.content_hash), text:match("^[^\n]*\n"))
    end)

    it("exact (the default) stays exact", function()
      H.write(dir, "a.txt", "one   \n")
      local _, _, code = edit { path = "a.txt", old_text = "one\n", new_text = "1\n" }
      assert.equal("NOT_FOUND_TEXT", code)
    end)
  end)

  describe("big files", function()
    it("edits a 20 MiB file: one line changed, everything else byte-identical", function()
      local line = ("x"):rep(99) .. "\n"
      local parts = {}
      for i = 1, 200000 do parts[i] = line end
      parts[100001] = "the needle line\n"
      local body = table.concat(parts)
      H.write(dir, "big.txt", body)
      local r = assert(edit { path = "big.txt", old_text = "the needle line\n", new_text = "found it\n" })
      assert.equal(100001, r.first_changed_line)
      local got = H.read(dir, "big.txt")
      assert.equal(#body - #"the needle line\n" + #"found it\n", #got)
      assert.equal(body:gsub("the needle line\n", "found it\n", 1), got)
    end)

    it("caps the diff of a big change with a marker", function()
      local lines = {}
      for i = 1, 20000 do lines[i] = ("line %d\n"):format(i) end
      H.write(dir, "many.txt", table.concat(lines))
      local r = assert(edit { path = "many.txt", old_text = "line", new_text = "LINE", replace_all = true })
      assert.equal(20000, r.replacements)
      assert.is_true(r.diff_truncated)
      assert.is_true(#r.diff <= 64 * 1024 + 100)
      assert.matches("diff cut", ws:render("edit_file", r), 1, true)
    end)
  end)
end)
