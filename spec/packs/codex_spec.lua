-- The codex pack against ../shared/reference/tool-conventions.md §4:
-- apply_patch (every section kind, Move to, @@ anchors, End of File, the
-- matching ladder, CRLF, atomicity across files, Codex's error strings),
-- read_file (`L{n}: `), list_dir, grep_files, an MCP round trip and
-- security cases through the pack's tool names.

local H = require "helpers"
local U = require "packs.util"
local json = H.json

local function patch(body) return "*** Begin Patch\n" .. body .. "*** End Patch\n" end

describe(H.tag("pack codex"), function()
  local dir, ws, M
  local function ap(text, w) return U.text(w or ws, "apply_patch", { input = text }) end

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, {
      ["a.txt"] = "one\ntwo\nthree\n",
      ["b.txt"] = "alpha\nbeta\ngamma\n",
      ["sub/c.txt"] = "x\n",
    })
    ws = U.open(dir, "codex")
    M = ws:mounts()[1].mount
  end)
  after_each(H.cleanup)

  it("schema: the four tools; apply_patch takes {input}", function()
    local names = {}
    for _, t in ipairs(ws:tools()) do names[#names + 1] = t.name end
    assert.same({ "apply_patch", "read_file", "list_dir", "grep_files" }, names)
    local s = ws:tools()[1].inputSchema
    assert.same({ "input" }, s.required)
    assert.is_false(s.additionalProperties)
  end)

  describe("apply_patch grammar", function()
    it("Add File, Delete File, Update File in one patch, with the summary", function()
      local t, sc = ap(patch("*** Add File: new/d.txt\n+hello\n+world\n*** Delete File: b.txt\n*** Update File: a.txt\n@@\n one\n-two\n+2\n three\n"))
      assert.equal("Success. Updated the following files:\nA new/d.txt\nM a.txt\nD b.txt\n", t)
      assert.equal("hello\nworld\n", H.read(dir, "new/d.txt"))
      assert.is_false(H.exists(dir, "b.txt"))
      assert.equal("one\n2\nthree\n", H.read(dir, "a.txt"))
      assert.same({ { file = "a.txt", chunk = 1, level = "exact" } }, sc.matches)
    end)

    it("Add File overwrites an existing file; the first chunk may omit @@", function()
      assert.truthy(ap(patch("*** Add File: a.txt\n+new\n")))
      assert.equal("new\n", H.read(dir, "a.txt"))
      assert.truthy(ap(patch("*** Update File: b.txt\n-beta\n+BETA\n")))
      assert.equal("alpha\nBETA\ngamma\n", H.read(dir, "b.txt"))
    end)

    it("Move to renames with the change, overwriting the destination, reported as M dest", function()
      local t = ap(patch("*** Update File: a.txt\n*** Move to: sub/c.txt\n@@\n-one\n+ONE\n"))
      assert.equal("Success. Updated the following files:\nM sub/c.txt\n", t)
      assert.is_false(H.exists(dir, "a.txt"))
      assert.equal("ONE\ntwo\nthree\n", H.read(dir, "sub/c.txt"))
      assert.truthy(ap(patch("*** Update File: b.txt\n*** Move to: fresh/dir/b.txt\n@@\n-gamma\n+G\n")))
      assert.equal("alpha\nbeta\nG\n", H.read(dir, "fresh/dir/b.txt"))
    end)

    it("@@ context anchors pick the occurrence after them; chunks go forward", function()
      H.write(dir, "f.py", "def a():\n    return 1\n\ndef b():\n    return 1\n")
      assert.truthy(ap(patch("*** Update File: f.py\n@@ def b():\n-    return 1\n+    return 2\n")))
      assert.equal("def a():\n    return 1\n\ndef b():\n    return 2\n", H.read(dir, "f.py"))
      local _, msg = ap(patch("*** Update File: f.py\n@@ def c():\n-    return 1\n+    return 3\n"))
      assert.equal("Failed to find context 'def c():' in f.py", msg)
      -- two chunks, in file order
      assert.truthy(ap(patch("*** Update File: f.py\n@@ def a():\n-    return 1\n+    return 10\n@@ def b():\n-    return 2\n+    return 20\n")))
      assert.equal("def a():\n    return 10\n\ndef b():\n    return 20\n", H.read(dir, "f.py"))
    end)

    it("*** End of File anchors at the end; a pure addition appends", function()
      H.write(dir, "e.txt", "x\ny\nx\n")
      assert.truthy(ap(patch("*** Update File: e.txt\n@@\n-x\n+last\n*** End of File\n")))
      assert.equal("x\ny\nlast\n", H.read(dir, "e.txt"))
      assert.truthy(ap(patch("*** Update File: e.txt\n@@\n+appended\n")))
      assert.equal("x\ny\nlast\nappended\n", H.read(dir, "e.txt"))
    end)

    it("several files in one patch", function()
      local t = ap(patch("*** Update File: a.txt\n@@\n-one\n+1\n*** Update File: b.txt\n@@\n-alpha\n+A\n"))
      assert.equal("Success. Updated the following files:\nM a.txt\nM b.txt\n", t)
      assert.equal("1\ntwo\nthree\n", H.read(dir, "a.txt"))
      assert.equal("A\nbeta\ngamma\n", H.read(dir, "b.txt"))
    end)

    it("the matching ladder: rstrip, trim, unicode; the level is reported", function()
      H.write(dir, "u.txt", "a  \n    b\nsay \226\128\156hi\226\128\157 \226\128\148 ok\n")
      local _, sc = ap(patch("*** Update File: u.txt\n@@\n-a\n+A\n@@\n-b\n+B\n@@\n-say \"hi\" - ok\n+said\n"))
      -- "b" found as "    b": "B" takes the file's indentation (deviation: Codex keeps "B")
      assert.equal("A\n    B\nsaid\n", H.read(dir, "u.txt"))
      assert.same({ "rstrip", "trim", "unicode" }, { sc.matches[1].level, sc.matches[2].level, sc.matches[3].level })
    end)

    it("a chunk found with indentation ignored is re-indented, every new line; a guess is refused (issue 13)", function()
      H.write(dir, "i.js", "function f() {\n  if (x) {\n    process.exitCode = 2;\n    return;\n  }\n}\n")
      assert.truthy(ap(patch("*** Update File: i.js\n@@\n-  process.exitCode = 2;\n-  return;\n+  process.exitCode = 2;\n+  log(x);\n+  return;\n")))
      assert.equal("function f() {\n  if (x) {\n    process.exitCode = 2;\n    log(x);\n    return;\n  }\n}\n", H.read(dir, "i.js"))
      H.write(dir, "g.txt", "a:\n    b\n  c\n")
      local t, msg = ap(patch("*** Update File: g.txt\n@@\n-a:\n-  b\n-    c\n+a:\n+  b\n+    c\n+      d\n"))
      assert.is_nil(t)
      assert.matches("new line 4 (      d) cannot be re-indented", msg, 1, true)
      assert.equal("a:\n    b\n  c\n", H.read(dir, "g.txt"))
    end)

    it("a file in another encoding is patched as UTF-8 and written back in it (deviation from Codex)", function()
      H.write(dir, "l.txt", "caf\233\nna\239ve\n") -- ISO-8859-1
      assert.truthy(ap(patch("*** Update File: l.txt\n@@\n-na\195\175ve\n+na\195\175f\n")))
      assert.equal("caf\233\nna\239f\n", H.read(dir, "l.txt"))
      H.write(dir, "w.reg", "\255\254" .. ("a\0=\0" .. "1\0\r\0\n\0"))
      assert.truthy(ap(patch("*** Update File: w.reg\n@@\n-a=1\n+a=2\n")))
      assert.equal("\255\254" .. ("a\0=\0" .. "2\0\r\0\n\0"), H.read(dir, "w.reg"))
      local t = assert(U.text(ws, "read_file", { file_path = M .. "/w.reg" }))
      assert.equal("L1: a=2", t)
    end)

    it("a file that is not UTF-8 keeps its other bytes (written through base64)", function()
      H.write(dir, "l.txt", "caf\233\nold\n\255\254\n")
      assert.truthy(ap(patch("*** Update File: l.txt\n@@\n-old\n+new\n")))
      assert.equal("caf\233\nnew\n\255\254\n", H.read(dir, "l.txt"))
    end)

    it("a file without a final newline gets one (Codex fixture 014)", function()
      H.write(dir, "n.txt", "p\nq")
      assert.truthy(ap(patch("*** Update File: n.txt\n@@\n-q\n+Q\n")))
      assert.equal("p\nQ\n", H.read(dir, "n.txt"))
    end)

    it("CRLF files stay CRLF, the BOM stays (deviation from Codex)", function()
      H.write(dir, "w.txt", "\239\187\191one\r\ntwo\r\nthree\r\n")
      local _, sc = ap(patch("*** Update File: w.txt\n@@\n one\n-two\n+2\n+2b\n"))
      assert.equal("\239\187\191one\r\n2\r\n2b\r\nthree\r\n", H.read(dir, "w.txt"))
      assert.equal("exact", sc.matches[1].level)
      -- a patch sent with CRLF line endings parses the same
      assert.truthy(ap(("*** Begin Patch\r\n*** Update File: a.txt\r\n@@\r\n-one\r\n+uno\r\n*** End Patch\r\n")))
      assert.equal("uno\ntwo\nthree\n", H.read(dir, "a.txt"))
    end)

    it("a heredoc around the patch is accepted; surrounding whitespace too", function()
      assert.truthy(ap("<<'EOF'\n" .. patch("*** Add File: h.txt\n+h\n") .. "EOF\n"))
      assert.equal("h\n", H.read(dir, "h.txt"))
      assert.truthy(ap("\n  " .. patch("*** Add File: h2.txt\n+h\n") .. "  \n"))
    end)
  end)

  describe("apply_patch errors: Codex's strings, nothing written", function()
    local function e(text) return select(2, ap(text)) end

    it("malformed patches", function()
      assert.equal("invalid patch: The first line of the patch must be '*** Begin Patch'", e("*** Update File: a.txt\n*** End Patch"))
      assert.equal("invalid patch: The first line of the patch must be '*** Begin Patch'", e(""))
      assert.equal("invalid patch: The last line of the patch must be '*** End Patch'", e("*** Begin Patch\n*** Add File: x\n+x\n"))
      assert.equal("invalid hunk at line 2, 'bogus' is not a valid hunk header. Valid hunk headers: '*** Add File: {path}', '*** Delete File: {path}', '*** Update File: {path}'",
        e(patch("bogus\n")))
      assert.equal("invalid hunk at line 2, Update file hunk for path 'a.txt' is empty", e(patch("*** Update File: a.txt\n")))
      assert.equal("invalid hunk at line 5, Expected update hunk to start with a @@ context marker, got: 'x'",
        e(patch("*** Update File: a.txt\n@@\n-one\nx\n")))
      assert.equal("invalid hunk at line 4, Unexpected line found in update hunk: 'x'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)",
        e(patch("*** Update File: a.txt\n@@\nx\n")))
      assert.equal("invalid hunk at line 4, Update hunk does not contain any lines", e(patch("*** Update File: a.txt\n@@\n*** End of File\n")))
      assert.equal("No files were modified.", e(patch("")))
      assert.equal("one\ntwo\nthree\n", H.read(dir, "a.txt"))
    end)

    it("failures while applying", function()
      assert.equal("Failed to find expected lines in a.txt:\nnope\nnot here", e(patch("*** Update File: a.txt\n@@\n-nope\n-not here\n+x\n")))
      assert.equal("Failed to read file to update missing.txt: No such file or directory (os error 2)",
        e(patch("*** Update File: missing.txt\n@@\n-a\n+b\n")))
      assert.equal("Failed to delete file missing.txt: No such file or directory (os error 2)", e(patch("*** Delete File: missing.txt\n")))
      local _, msg, code = ap(patch("*** Delete File: sub\n"))
      assert.matches("^Failed to delete file sub: ", msg)
      assert.truthy(code)
      assert.is_true(H.exists(dir, "sub/c.txt"))
    end)

    it("a patch is one change: one undo_edit of any file takes all of it back", function()
      local before_a, before_b = H.read(dir, "a.txt"), H.read(dir, "b.txt")
      assert(ap(patch("*** Update File: a.txt\n@@\n-one\n+1\n*** Add File: z.txt\n+z\n*** Delete File: b.txt\n")))
      assert.is_true(H.exists(dir, "z.txt"))
      assert.is_false(H.exists(dir, "b.txt"))
      local r = assert(ws:call_native("undo_edit", { path = "z.txt" }))
      assert.equal(3, r.files)
      assert.equal(before_a, H.read(dir, "a.txt"))
      assert.equal(before_b, H.read(dir, "b.txt"))
      assert.is_false(H.exists(dir, "z.txt"))
    end)

    it("a patch that fails in its 2nd file leaves the 1st unchanged", function()
      local _, msg = ap(patch("*** Update File: a.txt\n@@\n-one\n+1\n*** Add File: z.txt\n+z\n*** Update File: b.txt\n@@\n-nope\n+x\n"))
      assert.equal("Failed to find expected lines in b.txt:\nnope", msg)
      assert.equal("one\ntwo\nthree\n", H.read(dir, "a.txt"))
      assert.is_false(H.exists(dir, "z.txt"))
    end)

    it("a file refused mid-way (a read-only root) leaves every file as it was: nothing was written", function()
      local ro = H.tmpdir()
      H.write(ro, "r.txt", "ro\n")
      local w = U.open(dir, "codex", { roots = { { path = dir, mount = "/w" }, { path = ro, mount = "/ro", mode = "ro" } } })
      local _, msg, code = ap(patch("*** Update File: a.txt\n@@\n-one\n+1\n*** Add File: new.txt\n+n\n*** Delete File: b.txt\n*** Update File: /ro/r.txt\n@@\n-ro\n+rw\n"), w)
      assert.equal("READ_ONLY_ROOT", code)
      assert.matches("^Failed to write file /ro/r.txt: ", msg)
      assert.matches("No files were modified.", msg, 1, true)
      assert.equal("one\ntwo\nthree\n", H.read(dir, "a.txt"))
      assert.equal("alpha\nbeta\ngamma\n", H.read(dir, "b.txt"))
      assert.is_false(H.exists(dir, "new.txt"))
      assert.equal("ro\n", H.read(ro, "r.txt"))
    end)
  end)

  describe("read tools", function()
    it("read_file: L{n}: lines, offset and limit, CR stripped, 500-byte cut", function()
      H.write(dir, "r.txt", "a\r\nb\n" .. ("\195\169"):rep(300) .. "\nd")
      local t = U.text(ws, "read_file", { file_path = M .. "/r.txt" })
      local long = ("\195\169"):rep(250)
      assert.equal("L1: a\nL2: b\nL3: " .. long .. "\nL4: d", t)
      assert.equal("L2: b\nL3: " .. long, (U.text(ws, "read_file", { file_path = M .. "/r.txt", offset = 2, limit = 2 })))
      local function e(a) return select(2, U.text(ws, "read_file", a)) end
      assert.equal("offset must be a 1-indexed line number", e { file_path = M .. "/r.txt", offset = 0 })
      assert.equal("offset exceeds file length", e { file_path = M .. "/r.txt", offset = 9 })
      assert.equal("file_path must be an absolute path", e { file_path = "r.txt" })
    end)

    it("list_dir: header, tree order, depth indent, suffixes, More than {n}", function()
      H.symlink("a.txt", dir, "link")
      local t = U.text(ws, "list_dir", { dir_path = M })
      assert.equal(("Absolute path: %s\na.txt\nb.txt\nlink@\nsub/\n  c.txt"):format(M), t)
      assert.equal(("Absolute path: %s\nb.txt\nlink@\nMore than 2 entries found"):format(M),
        (U.text(ws, "list_dir", { dir_path = M, offset = 2, limit = 2 })))
      assert.equal(("Absolute path: %s\na.txt\nb.txt\nlink@\nsub/"):format(M), (U.text(ws, "list_dir", { dir_path = M, depth = 1 })))
      assert.equal("dir_path must be an absolute path", select(2, U.text(ws, "list_dir", { dir_path = "sub" })))
    end)

    it("grep_files: paths newest first, limit, No matches found.", function()
      H.write(dir, "old.txt", "needle\n")
      H.write(dir, "new.txt", "needle\n")
      H.sh(("touch -d '2020-01-01' %s"):format(H.q(dir .. "/old.txt")))
      local t = U.text(ws, "grep_files", { pattern = "needle" })
      assert.equal(("%s/new.txt\n%s/old.txt"):format(M, M), t)
      assert.equal(M .. "/new.txt", (U.text(ws, "grep_files", { pattern = "needle", limit = 1 })))
      assert.equal("No matches found.", (U.text(ws, "grep_files", { pattern = "haystack" })))
      assert.equal(M .. "/old.txt", (U.text(ws, "grep_files", { pattern = "needle", include = "old*" })))
    end)
  end)

  describe("MCP round trip", function()
    it("serves apply_patch and read_file; an error has isError and burrow/code", function()
      local r = U.mcp(dir, "codex", {
        { method = "tools/list" },
        { "apply_patch", { input = patch("*** Update File: a.txt\n@@\n-two\n+2\n") } },
        { "read_file", { file_path = M .. "/a.txt" } },
        { "apply_patch", { input = "nope" } },
      })
      assert.equal(4, #r[2].result.tools)
      assert.equal("Success. Updated the following files:\nM a.txt\n", r[3].result.content[1].text)
      assert.equal("exact", r[3].result.structuredContent.matches[1].level)
      assert.equal("L1: one\nL2: 2\nL3: three", r[4].result.content[1].text)
      assert.is_true(r[5].result.isError)
      assert.equal("INVALID_PATCH", r[5].result._meta["burrow/code"])
      assert.equal("invalid patch: The first line of the patch must be '*** Begin Patch'", r[5].result.content[1].text)
    end)
  end)
end)

describe(H.tag("pack codex: security cases through the pack's tool names"), function()
  local B, ws, M
  before_each(function()
    B = H.tmpdir()
    H.write_all(B, { ["outside/secret.txt"] = "TOPSECRET\n", ["ws/file.txt"] = "ok\n" })
    H.symlink(B .. "/outside/secret.txt", B, "ws/esc_file")
    H.symlink("../outside", B, "ws/esc_updir")
    H.symlink("../outside/new.txt", B, "ws/dangling_out")
    ws = U.open(B .. "/ws", "codex")
    M = ws:mounts()[1].mount
  end)
  after_each(H.cleanup)

  local function refused(text)
    local res, msg, code = ws:call("apply_patch", { input = patch(text) })
    assert.is_nil(res, text)
    assert.truthy(({ OUTSIDE_ROOT = true, ELOOP = true, NOT_REGULAR = true, POLICY_DENIED = true })[code],
      ("%s: code %s (%s)"):format(text, tostring(code), msg))
    assert.not_matches("TOPSECRET", msg, 1, true)
  end

  it("Add, Update, Delete and Move never reach outside the root", function()
    for _, p in ipairs { "../outside/new.txt", "esc_updir/new.txt", "dangling_out", "/etc/burrow_x", B .. "/outside/new.txt" } do
      refused(("*** Add File: %s\n+x\n"):format(p))
    end
    for _, p in ipairs { "../outside/secret.txt", "esc_file", "esc_updir/secret.txt" } do
      refused(("*** Update File: %s\n@@\n-TOPSECRET\n+owned\n"):format(p))
      refused(("*** Delete File: %s\n"):format(p))
    end
    for _, p in ipairs { "../outside/moved.txt", "esc_updir/moved.txt", "dangling_out" } do
      refused(("*** Update File: file.txt\n*** Move to: %s\n@@\n-ok\n+moved\n"):format(p))
    end
    assert.equal("TOPSECRET\n", H.read(B, "outside/secret.txt"))
    assert.is_false(H.exists(B, "outside/new.txt"))
    assert.is_false(H.exists(B, "outside/moved.txt"))
    assert.equal("ok\n", H.read(B, "ws/file.txt"))
  end)

  it("read tools refuse escapes", function()
    for _, c in ipairs {
      { "read_file", { file_path = M .. "/esc_file" } },
      { "read_file", { file_path = "/etc/passwd" } },
      { "list_dir", { dir_path = M .. "/esc_updir" } },
      { "grep_files", { pattern = "TOPSECRET", path = M .. "/esc_updir" } },
    } do
      local res, msg, code = ws:call(c[1], c[2])
      assert.is_nil(res, json.encode(c[2]))
      assert.equal("OUTSIDE_ROOT", code, msg)
      assert.not_matches("TOPSECRET", msg, 1, true)
    end
    assert.equal("No matches found.", (U.text(ws, "grep_files", { pattern = "TOPSECRET" })))
  end)
end)
