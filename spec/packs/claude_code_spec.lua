-- The claude_code pack against ../shared/reference/tool-conventions.md §2:
-- Read, Write, Edit, MultiEdit, Glob, Grep, LS; schemas, text formats,
-- <tool_use_error> strings, read-before-edit and stale-file checks,
-- truncation markers, an MCP round trip and the security cases through
-- the pack's own tool names.

local H = require "helpers"
local U = require "packs.util"
local json = H.json

local NAMES = { "Read", "Write", "Edit", "MultiEdit", "Glob", "Grep", "LS", "NotebookEdit" }

describe(H.tag("pack claude_code"), function()
  local dir, ws, M
  local function text(name, args) return U.text(ws, name, args) end
  local function E(msg) return "<tool_use_error>" .. msg .. "</tool_use_error>" end

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, {
      ["a.txt"] = "one\ntwo\nthree\n",
      ["dup.txt"] = "foo\nbar\nfoo\n",
      ["crlf.txt"] = "l1\r\nl2\r\n",
      ["q.txt"] = "say \226\128\156hi\226\128\157\n",
      ["empty.txt"] = "",
      ["src/x.c"] = "int x;\nint y;\nint z;\n",
      ["src/y.py"] = "def f():\n    return 1\n",
      [".git/config"] = "int git;\n",
      [".hidden.c"] = "int h;\n",
    })
    ws = U.open(dir, "claude_code")
    M = ws:mounts()[1].mount
  end)
  after_each(H.cleanup)

  describe("schema", function()
    it("has the eight tools with additionalProperties false", function()
      local names = {}
      for i, t in ipairs(ws:tools()) do
        names[i] = t.name
        assert.is_false(t.inputSchema.additionalProperties)
      end
      assert.same(NAMES, names)
      local by = {}
      for _, t in ipairs(ws:tools()) do by[t.name] = t end
      assert.same({ "file_path" }, by.Read.inputSchema.required)
      assert.same({ "file_path", "old_string", "new_string" }, by.Edit.inputSchema.required)
      assert.equal(1, by.MultiEdit.inputSchema.properties.edits.minItems)
      assert.same({ "content", "files_with_matches", "count" }, by.Grep.inputSchema.properties.output_mode.enum)
      for _, k in ipairs { "-A", "-B", "-C", "-n", "-i", "head_limit", "offset", "multiline", "type", "glob" } do
        assert.truthy(by.Grep.inputSchema.properties[k], k)
      end
      assert.is_true(by.Read.annotations.readOnlyHint)
      assert.is_true(by.Edit.annotations.destructiveHint)
    end)
    it("is served by burrow tools --pack claude_code", function()
      local out, _, code = H.burrow_cmd { "tools", "--format", "mcp", "--pack", "claude_code", "--root", dir }
      assert.equal(0, code)
      assert.equal(8, #json.decode(out))
    end)
  end)

  describe("Read", function()
    it("numbers lines {n}\\t{line} (compact)", function()
      assert.equal("1\tone\n2\ttwo\n3\tthree", text("Read", { file_path = M .. "/a.txt" }))
      assert.equal("2\ttwo", text("Read", { file_path = M .. "/a.txt", offset = 2, limit = 1 }))
    end)
    it("line_prefix cat and arrow", function()
      local c = U.open(dir, { name = "claude_code", line_prefix = "cat" })
      assert.equal("     1\tone\n     2\ttwo\n     3\tthree", U.text(c, "Read", { file_path = M .. "/a.txt" }))
      local a = U.open(dir, { name = "claude_code", line_prefix = "arrow" })
      assert.equal("     1\226\134\146one", (U.text(a, "Read", { file_path = M .. "/a.txt", limit = 1 }):match("^[^\n]*")))
    end)
    it("empty file and offset past the end", function()
      assert.equal("<system-reminder>Warning: the file exists but the contents are empty.</system-reminder>",
        text("Read", { file_path = M .. "/empty.txt" }))
      assert.equal("<system-reminder>Warning: the file exists but is shorter than the provided offset (9). The file has 3 lines.</system-reminder>",
        text("Read", { file_path = M .. "/a.txt", offset = 9 }))
    end)
    it("refuses relative paths, directories and missing files", function()
      local t, msg, code = text("Read", { file_path = "a.txt" })
      assert.is_nil(t)
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("^<tool_use_error>.*absolute", msg)
      t, msg, code = text("Read", { file_path = M .. "/src" })
      assert.equal("EISDIR", code)
      assert.matches("can only read files, not directories", msg, 1, true)
      t, msg, code = text("Read", { file_path = M .. "/nope" })
      assert.equal(E("File does not exist."), msg)
      assert.equal("ENOENT", code)
    end)
    it("over max_tokens: a whole-file read is a PARTIAL view, an explicit range an error", function()
      local lines = {}
      for i = 1, 100 do lines[i] = ("line %03d xxxxxxxxxxxxxxxxxxxxxxxx"):format(i) end
      H.write(dir, "big.txt", table.concat(lines, "\n") .. "\n")
      local c = U.open(dir, { name = "claude_code", max_tokens = 100 })
      local t = U.text(c, "Read", { file_path = M .. "/big.txt" })
      assert.matches("^1\tline 001", t)
      assert.matches("%[PARTIAL view: .* Read on with offset=%d+%.%]$", t)
      local _, msg, code = U.text(c, "Read", { file_path = M .. "/big.txt", offset = 1, limit = 100 })
      assert.equal("TOO_LARGE", code)
      assert.matches("^<tool_use_error>File content %(%d+ tokens%) exceeds maximum allowed tokens %(100%)%. Please use offset and limit parameters", msg)
    end)
    it("past 2000 lines says where to continue", function()
      local lines = {}
      for i = 1, 2005 do lines[i] = "x" end
      H.write(dir, "long.txt", table.concat(lines, "\n") .. "\n")
      local t = text("Read", { file_path = M .. "/long.txt" })
      assert.matches("\n\n%[Showing lines 1%-2000 of 2005%. Read on with offset=2001%.%]$", t)
    end)
  end)

  describe("Edit", function()
    -- Issue 26: the read record is the session's. Two sessions of one
    -- tenant share the workspace (burrow mcp --http): one session's Read
    -- does not let the other edit.
    it("needs a Read in the same session, not in another session of the workspace", function()
      local a, b = { session = { id = "a" } }, { session = { id = "b" } }
      assert(ws:call("Read", { file_path = M .. "/a.txt" }, b))
      local res, msg = ws:call("Edit", { file_path = M .. "/a.txt", old_string = "two", new_string = "2" }, a)
      assert.is_nil(res)
      assert.equal(E("File has not been read yet. Read it first before writing to it."), msg)
      assert(ws:call("Edit", { file_path = M .. "/a.txt", old_string = "two", new_string = "2" }, b))
      assert.equal("one\n2\nthree\n", H.read(dir, "a.txt"))
    end)
    it("needs a Read first", function()
      local t, msg, code = text("Edit", { file_path = M .. "/a.txt", old_string = "two", new_string = "2" })
      assert.is_nil(t)
      assert.equal(E("File has not been read yet. Read it first before writing to it."), msg)
      assert.equal("NOT_READ", code)
    end)
    it("replaces, then answers in the dialect's words", function()
      text("Read", { file_path = M .. "/a.txt" })
      assert.equal(("The file %s/a.txt has been updated successfully."):format(M),
        text("Edit", { file_path = M .. "/a.txt", old_string = "two", new_string = "2" }))
      assert.equal("one\n2\nthree\n", H.read(dir, "a.txt"))
      -- the record follows the pack's own write: a second edit needs no re-read
      assert.truthy(text("Edit", { file_path = M .. "/a.txt", old_string = "one", new_string = "1" }))
    end)
    it("an old_string indented less than the file is not matched inside the indentation (issue 13)", function()
      local src = "function main() {\n  if (bad) {\n    process.exitCode = 2;\n    return;\n  }\n}\n"
      H.write(dir, "m.js", src)
      text("Read", { file_path = M .. "/m.js" })
      local _, msg, code = text("Edit", { file_path = M .. "/m.js", old_string = "  process.exitCode = 2;\n",
        new_string = "  process.exitCode = 2;\n  console.error(\"bad\");\n" })
      assert.equal("NOT_FOUND_TEXT", code)
      assert.matches("String to replace not found in file.", msg, 1, true)
      assert.equal(src, H.read(dir, "m.js"))
    end)
    it("not found, ambiguous, same text", function()
      text("Read", { file_path = M .. "/dup.txt" })
      local _, msg, code = text("Edit", { file_path = M .. "/dup.txt", old_string = "zzz", new_string = "y" })
      assert.equal(E("String to replace not found in file.\nString: zzz"), msg)
      assert.equal("NOT_FOUND_TEXT", code)
      _, msg, code = text("Edit", { file_path = M .. "/dup.txt", old_string = "foo", new_string = "y" })
      assert.equal(E("Found 2 matches of the string to replace, but replace_all is false. To replace all occurrences, set replace_all to true. To replace only one occurrence, please provide more context to uniquely identify the instance.\nString: foo"), msg)
      assert.equal("AMBIGUOUS_TEXT", code)
      _, msg = text("Edit", { file_path = M .. "/dup.txt", old_string = "foo", new_string = "foo" })
      assert.equal(E("No changes to make: old_string and new_string are exactly the same."), msg)
      assert.truthy(text("Edit", { file_path = M .. "/dup.txt", old_string = "foo", new_string = "y", replace_all = true }))
      assert.equal("y\nbar\ny\n", H.read(dir, "dup.txt"))
    end)
    it("stale file: refused for replace_all, allowed for a unique match", function()
      text("Read", { file_path = M .. "/dup.txt" })
      H.write(dir, "dup.txt", "foo\nbar\nfoo\nbaz\n")
      local _, msg, code = text("Edit", { file_path = M .. "/dup.txt", old_string = "foo", new_string = "y", replace_all = true })
      assert.equal(E("File has been modified since read, either by the user or by a linter. Read it again before attempting to write it."), msg)
      assert.equal("HASH_MISMATCH", code)
      assert.truthy(text("Edit", { file_path = M .. "/dup.txt", old_string = "baz", new_string = "q" }))
      assert.equal("foo\nbar\nfoo\nq\n", H.read(dir, "dup.txt"))
    end)
    it("curly quotes match straight ones; the rest of the file is untouched", function()
      text("Read", { file_path = M .. "/q.txt" })
      assert.truthy(text("Edit", { file_path = M .. "/q.txt", old_string = "say \"hi\"", new_string = "say \"yo\"" }))
      assert.equal("say \"yo\"\n", H.read(dir, "q.txt"))
    end)
    it("keeps CRLF", function()
      text("Read", { file_path = M .. "/crlf.txt" })
      assert.truthy(text("Edit", { file_path = M .. "/crlf.txt", old_string = "l1\n", new_string = "a\nb\n" }))
      assert.equal("a\r\nb\r\nl2\r\n", H.read(dir, "crlf.txt"))
    end)
    it("an empty old_string creates a missing file", function()
      assert.truthy(text("Edit", { file_path = M .. "/new/n.txt", old_string = "", new_string = "hello\n" }))
      assert.equal("hello\n", H.read(dir, "new/n.txt"))
    end)
  end)

  describe("MultiEdit", function()
    it("applies all edits or none, naming the failing one", function()
      text("Read", { file_path = M .. "/a.txt" })
      local _, msg, code = text("MultiEdit", { file_path = M .. "/a.txt", edits = {
        { old_string = "one", new_string = "1" }, { old_string = "nope", new_string = "x" } } })
      assert.equal(E("Edit 2: String to replace not found in file.\nString: nope"), msg)
      assert.equal("NOT_FOUND_TEXT", code)
      assert.equal("one\ntwo\nthree\n", H.read(dir, "a.txt"))
      assert.truthy(text("MultiEdit", { file_path = M .. "/a.txt", edits = {
        { old_string = "one", new_string = "1" }, { old_string = "three", new_string = "3" } } }))
      assert.equal("1\ntwo\n3\n", H.read(dir, "a.txt"))
    end)
    it("refuses a stale file and old == new", function()
      text("Read", { file_path = M .. "/a.txt" })
      H.write(dir, "a.txt", "one\ntwo\nthree\nfour\n")
      local _, msg = text("MultiEdit", { file_path = M .. "/a.txt", edits = { { old_string = "one", new_string = "1" } } })
      assert.matches("File has been modified since read", msg, 1, true)
      _, msg = text("MultiEdit", { file_path = M .. "/a.txt", edits = { { old_string = "one", new_string = "one" } } })
      assert.equal(E("Edit 1: No changes to make: old_string and new_string are exactly the same."), msg)
    end)
    it("a first edit with an empty old_string creates the file", function()
      assert.truthy(text("MultiEdit", { file_path = M .. "/m.txt", edits = {
        { old_string = "", new_string = "a b\n" }, { old_string = "b", new_string = "c" } } }))
      assert.equal("a c\n", H.read(dir, "m.txt"))
      local _, msg = text("MultiEdit", { file_path = M .. "/m2.txt", edits = {
        { old_string = "", new_string = "a\n" }, { old_string = "zz", new_string = "c" } } })
      assert.matches("Edit 2: String to replace not found", msg, 1, true)
      assert.is_false(H.exists(dir, "m2.txt"))
    end)
  end)

  describe("Write", function()
    it("creates, and overwrites only a file it has read", function()
      assert.equal(("File created successfully at: %s/w.txt"):format(M), text("Write", { file_path = M .. "/w.txt", content = "w\n" }))
      local _, msg, code = text("Write", { file_path = M .. "/a.txt", content = "x" })
      assert.equal(E("File has not been read yet. Read it first before writing to it."), msg)
      assert.equal("NOT_READ", code)
      text("Read", { file_path = M .. "/a.txt" })
      assert.equal(("The file %s/a.txt has been updated successfully."):format(M), text("Write", { file_path = M .. "/a.txt", content = "x" }))
      H.write(dir, "a.txt", "changed")
      _, msg = text("Write", { file_path = M .. "/a.txt", content = "y" })
      assert.matches("File has been modified since read", msg, 1, true)
      assert.equal("changed", H.read(dir, "a.txt"))
    end)
    it("keeps a CRLF file CRLF", function()
      text("Read", { file_path = M .. "/crlf.txt" })
      text("Write", { file_path = M .. "/crlf.txt", content = "a\nb\n" })
      assert.equal("a\r\nb\r\n", H.read(dir, "crlf.txt"))
    end)
  end)

  describe("Glob", function()
    it("absolute paths, newest first, hidden included, .git left out", function()
      os.execute(("touch -d '2020-01-01' %q/src/x.c"):format(dir))
      local t = text("Glob", { pattern = "**/*.c" })
      assert.equal(("%s/.hidden.c\n%s/src/x.c"):format(M, M), t)
      assert.equal("No files found", text("Glob", { pattern = "*.nothing" }))
      assert.equal(M .. "/src/y.py", text("Glob", { pattern = "*.py", path = M .. "/src" }))
    end)
    it("more than 100 results: 100 and the truncation line", function()
      for i = 1, 105 do H.write(dir, ("many/f%03d.txt"):format(i), "") end
      local t = text("Glob", { pattern = "many/*.txt" })
      local _, n = t:gsub("\n", "")
      assert.equal(100, n) -- 100 paths, then the marker line
      assert.matches("\n%(Results are truncated%. Consider using a more specific path or pattern%.%)$", t)
    end)
  end)

  describe("Grep", function()
    it("files_with_matches (default)", function()
      assert.equal(("Found 1 file\n%s/src/x.c"):format(M), text("Grep", { pattern = "int y" }))
      assert.equal("No files found", text("Grep", { pattern = "nothing here" }))
    end)
    it("content: numbered by default, context merged with -- between groups", function()
      assert.equal(("%s/src/x.c:2:int y;"):format(M), text("Grep", { pattern = "int y", output_mode = "content" }))
      assert.equal(("%s/src/x.c:int y;"):format(M), text("Grep", { pattern = "int y", output_mode = "content", ["-n"] = false }))
      H.write(dir, "ctx.txt", "a\nhit1\nb\nc\nd\ne\nhit2\nf\n")
      assert.equal(table.concat({ M .. "/ctx.txt-1-a", M .. "/ctx.txt:2:hit1", M .. "/ctx.txt-3-b", "--",
        M .. "/ctx.txt-6-e", M .. "/ctx.txt:7:hit2", M .. "/ctx.txt-8-f" }, "\n"),
        text("Grep", { pattern = "hit", output_mode = "content", ["-C"] = 1, path = M .. "/ctx.txt" }))
      assert.equal(M .. "/ctx.txt:2:hit1\n" .. M .. "/ctx.txt-3-b\n--\n" .. M .. "/ctx.txt:7:hit2\n" .. M .. "/ctx.txt-8-f",
        text("Grep", { pattern = "hit", output_mode = "content", ["-A"] = 1, path = M .. "/ctx.txt" }))
      assert.equal("No matches found", text("Grep", { pattern = "nothing here", output_mode = "content" }))
    end)
    it("count, with totals", function()
      assert.equal(("%s/src/x.c:3\n\nFound 3 total occurrences across 1 file."):format(M),
        text("Grep", { pattern = "^int", output_mode = "count", type = "c", path = M .. "/src" }))
    end)
    it("head_limit and offset append the pagination label", function()
      local t = text("Grep", { pattern = "int", output_mode = "content", path = M .. "/src", head_limit = 2 })
      assert.equal(("%s/src/x.c:1:int x;\n%s/src/x.c:2:int y;\n\n[Showing results with pagination = limit: 2]"):format(M, M), t)
      t = text("Grep", { pattern = "int", output_mode = "content", path = M .. "/src", head_limit = 1, offset = 1 })
      assert.equal(("%s/src/x.c:2:int y;\n\n[Showing results with pagination = limit: 1, offset: 1]"):format(M), t)
    end)
    it("type, glob, -i, multiline; .git excluded, hidden searched", function()
      assert.equal(("Found 1 file\n%s/src/y.py"):format(M), text("Grep", { pattern = "return", type = "py" }))
      assert.equal(("Found 1 file\n%s/src/y.py"):format(M), text("Grep", { pattern = "RETURN", glob = "*.py", ["-i"] = true }))
      assert.equal(("Found 1 file\n%s/src/y.py"):format(M), text("Grep", { pattern = "f\\(\\):.*return", multiline = true }))
      local t = text("Grep", { pattern = "int \\w;", output_mode = "files_with_matches" })
      assert.not_matches("%.git/", t)
      assert.matches("%.hidden%.c", t)
    end)
    it("an invalid regex is an error", function()
      local t, msg = text("Grep", { pattern = "(" })
      assert.is_nil(t)
      assert.matches("^<tool_use_error>", msg)
    end)
  end)

  describe("LS", function()
    it("an indented tree, directories with /, ignore globs", function()
      local t = text("LS", { path = M .. "/src" })
      assert.equal(("- %s/src/\n  - x.c\n  - y.py"):format(M), t)
      assert.equal(("- %s/src/\n  - y.py"):format(M), text("LS", { path = M .. "/src", ignore = { "*.c" } }))
      local _, msg = text("LS", { path = "src" })
      assert.matches("absolute", msg)
    end)
  end)

  describe("policies and audit", function()
    it("secrets denies .env through Read; audit names the pack tool", function()
      H.write(dir, ".env", "KEY=1")
      local log = H.tmpdir() .. "/audit.jsonl"
      local p = U.open(dir, "claude_code", { policies = { "default", "secrets", "audit" }, audit = log })
      local t, _, code = U.text(p, "Read", { file_path = M .. "/.env" })
      assert.is_nil(t)
      assert.equal("POLICY_DENIED", code)
      p:close()
      local rec = json.decode((io.open(log):read("l")))
      assert.equal("Read", rec.via)
    end)
  end)

  describe("MCP round trip", function()
    it("serves Read, Edit and an error with isError and burrow/code", function()
      local r = U.mcp(dir, "claude_code", {
        { method = "tools/list" },
        { "Read", { file_path = M .. "/a.txt" } },
        { "Edit", { file_path = M .. "/a.txt", old_string = "two", new_string = "2" } },
        { "Edit", { file_path = M .. "/dup.txt", old_string = "foo", new_string = "x" } },
      })
      assert.equal(8, #r[2].result.tools)
      assert.equal("1\tone\n2\ttwo\n3\tthree", r[3].result.content[1].text)
      assert.equal(("The file %s/a.txt has been updated successfully."):format(M), r[4].result.content[1].text)
      assert.is_true(r[5].result.isError)
      assert.equal("NOT_READ", r[5].result._meta["burrow/code"])
      assert.equal("<tool_use_error>File has not been read yet. Read it first before writing to it.</tool_use_error>",
        r[5].result.content[1].text)
      assert.equal("one\n2\nthree\n", H.read(dir, "a.txt"))
    end)
  end)
end)

describe(H.tag("pack claude_code: security cases through the pack's tool names"), function()
  local B, ws, M
  before_each(function()
    B = H.tmpdir()
    H.write_all(B, { ["outside/secret.txt"] = "TOPSECRET", ["ws/file.txt"] = "ok\n" })
    H.symlink(B .. "/outside/secret.txt", B, "ws/esc_file")
    H.symlink("/", B, "ws/esc_dir")
    H.symlink("../outside", B, "ws/esc_updir")
    H.symlink("../outside/new.txt", B, "ws/dangling_out")
    H.mkfifo(B, "ws/fifo")
    ws = U.open(B .. "/ws", "claude_code")
    M = ws:mounts()[1].mount
  end)
  after_each(H.cleanup)

  local function refused(name, args, codes)
    local res, msg, code = ws:call(name, args)
    assert.is_nil(res, name .. " " .. json.encode(args))
    assert.truthy(codes[code], ("%s %s: code %s (%s)"):format(name, json.encode(args), tostring(code), msg))
    assert.not_matches("TOPSECRET", msg, 1, true)
    assert.matches("^<tool_use_error>", msg)
  end

  it("reads, searches and listings refuse every escape", function()
    local O = { OUTSIDE_ROOT = true }
    for _, p in ipairs { "/../outside/secret.txt", "/esc_file", "/esc_dir/etc/passwd", "/esc_updir/secret.txt" } do
      refused("Read", { file_path = M .. p }, O)
    end
    refused("Read", { file_path = "/etc/passwd" }, O)
    refused("Read", { file_path = B .. "/outside/secret.txt" }, O)
    refused("Grep", { pattern = "TOPSECRET", path = M .. "/esc_updir" }, O)
    refused("Grep", { pattern = "TOPSECRET", path = "/etc" }, O)
    refused("Glob", { pattern = "*", path = M .. "/esc_updir" }, O)
    refused("LS", { path = M .. "/esc_dir" }, O)
    refused("LS", { path = "/" }, O)
    local t = U.text(ws, "Grep", { pattern = "TOPSECRET", output_mode = "content" })
    assert.equal("No matches found", t)
  end)

  it("writes never create or change anything outside", function()
    local W = { OUTSIDE_ROOT = true, ELOOP = true, POLICY_DENIED = true, NOT_READ = true }
    for _, p in ipairs { "/../outside/new.txt", "/esc_file", "/esc_updir/new.txt", "/dangling_out" } do
      refused("Write", { file_path = M .. p, content = "x" }, W)
      refused("Edit", { file_path = M .. p, old_string = "", new_string = "x" }, { OUTSIDE_ROOT = true, ELOOP = true, EEXIST = true, ENOENT = true, NOT_READ = true })
    end
    assert.equal("TOPSECRET", H.read(B, "outside/secret.txt"))
    assert.is_false(H.exists(B, "outside/new.txt"))
  end)

  it("a FIFO is refused, not read", function()
    refused("Read", { file_path = M .. "/fifo" }, { NOT_REGULAR = true })
  end)
end)
