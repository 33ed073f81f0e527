-- The deepagents pack against ../shared/reference/tool-conventions.md §7:
-- schema, read_file's rows (0.7 and legacy), continuation rows, paging
-- notices and reminders, repr() listings, literal grep in its three output
-- modes, the `Error: ` strings, the virtual_mode path rules, an MCP round
-- trip and security cases through the pack's tool names.

local H = require "helpers"
local U = require "packs.util"
local json = H.json

describe(H.tag("pack deepagents"), function()
  local dir, ws
  local function call(name, args) return U.text(ws, name, args) end
  local function msg(name, args) return select(2, call(name, args)) end

  before_each(function()
    dir = H.tmpdir()
    local rows = {}
    for i = 1, 150 do rows[i] = "r" .. i end
    H.write_all(dir, { ["a.txt"] = "one\ntwo\nfoo\nfoo\n", ["src/x.py"] = "a.b\nfoo\n", ["src/y.py"] = "axb\n",
      ["big.txt"] = table.concat(rows, "\n") .. "\n", ["empty.txt"] = "", [".hidden/h.txt"] = "foo\n" })
    ws = U.open(dir, "deepagents", { mount = "/" })
  end)
  after_each(H.cleanup)

  it("schema: the seven tools, annotations, no registry-level required", function()
    local names = {}
    for _, t in ipairs(ws:tools()) do
      names[#names + 1] = t.name
      assert.is_nil(t.inputSchema.required, t.name)
      assert.truthy(t.annotations, t.name)
    end
    assert.same({ "ls", "read_file", "write_file", "edit_file", "delete", "glob", "grep" }, names)
    assert.same({ "files_with_matches", "content", "count" }, ws:tools()[7].inputSchema.properties.output_mode.enum)
    assert.is_nil(ws:tools()[1].execute)
    local ok, err = pcall(U.open, dir, { name = "deepagents", format = "1.0" })
    assert.falsy(ok and err)
  end)

  it("read_file: rows right-aligned to the widest marker, two spaces, offset 0-based, limit 100", function()
    assert.equal("1  one\n2  two\n3  foo\n4  foo", call("read_file", { file_path = "/a.txt" }))
    assert.equal(" 96  r96\n 97  r97\n 98  r98\n 99  r99\n100  r100\n\n"
      .. "[Read 5 line(s) (lines 96-100 of 150 total). 50 line(s) remaining from offset 100.]",
      call("read_file", { file_path = "/big.txt", offset = 95, limit = 5 }))
    local t = call("read_file", { file_path = "/big.txt" })
    assert.matches("\n100  r100\n\n%[Read 100 line%(s%) %(lines 1%-100 of 150 total%)%. 50 line%(s%) remaining from offset 100%.%]$", t)
    -- no notice once the end was reached
    assert.equal("150  r150", call("read_file", { file_path = "/big.txt", offset = 149 }))
  end)

  it("read_file: reminders, negative offset, offset past the end, long lines", function()
    assert.equal("System reminder: File exists but has empty contents", call("read_file", { file_path = "/empty.txt" }))
    assert.equal("System reminder: no lines were read because `limit` was 0. The file was not inspected and may have "
      .. "contents; retry with `limit` >= 1 to read it.", call("read_file", { file_path = "/a.txt", limit = 0 }))
    assert.matches("^1  one\n.*\n\n%[Requested offset %-3 is before the start of the file; read from line 1 instead%.%]$",
      (call("read_file", { file_path = "/a.txt", offset = -3, limit = 1 })))
    assert.equal("Error: Line offset 9 exceeds file length (4 lines)", msg("read_file", { file_path = "/a.txt", offset = 9 }))
    H.write(dir, "long.txt", ("x"):rep(12000) .. "\nend\n")
    local t = call("read_file", { file_path = "/long.txt" })
    assert.equal("  1  " .. ("x"):rep(5000) .. "\n1.1  " .. ("x"):rep(5000) .. "\n1.2  " .. ("x"):rep(2000) .. "\n  2  end", t)
  end)

  it("read_file: the 20000-token cap cuts on a whole line and pages on", function()
    local rows = {}
    for i = 1, 400 do rows[i] = ("%03d"):format(i) .. ("y"):rep(396) end
    H.write(dir, "wide.txt", table.concat(rows, "\n") .. "\n")
    local t = call("read_file", { file_path = "/wide.txt", limit = 400 })
    local shown = tonumber(t:match("%[Read (%d+) line"))
    assert.truthy(shown and shown < 400)
    assert.matches("[Output was truncated due to size limits. The file content is very large.", t, 1, true)
    assert.matches(("of 400 total). %d line(s) remaining from offset %d.]"):format(400 - shown, shown), t, 1, true)
    assert.matches(("\n%d  %03dy+\n\n%%[Output"):format(shown, shown), t)
  end)

  it("read_file: format = legacy is cat -n", function()
    local w = U.open(dir, { name = "deepagents", format = "legacy" }, { mount = "/" })
    assert.equal("     1\tone\n     2\ttwo", U.text(w, "read_file", { file_path = "/a.txt", limit = 2 }):match("^[^\n]*\n[^\n]*"))
    local _, m = U.text(w, "write_file", { file_path = "/a.txt", content = "x" })
    assert.equal("Cannot write to /a.txt because it already exists. Read and then make an edit, or write to a new path.", m)
    assert.equal("Updated file /new.txt", U.text(w, "write_file", { file_path = "/new.txt", content = "x" }))
  end)

  it("ls and glob: repr() lists, directories end in /, No files found", function()
    assert.equal("['/.hidden/', '/a.txt', '/big.txt', '/empty.txt', '/src/']", call("ls", { path = "/" }))
    assert.equal("['/src/x.py', '/src/y.py']", call("ls", { path = "/src" }))
    H.mkdir(dir, "void")
    assert.equal("No files found", call("ls", { path = "/void" }))
    assert.equal("['/src/x.py', '/src/y.py']", call("glob", { pattern = "*.py" }))
    assert.equal("['/a.txt', '/big.txt', '/empty.txt']", call("glob", { pattern = "/*.txt" }))
    assert.equal("No files found", call("glob", { pattern = "*.rs" }))
    H.write(dir, "it's.txt", "")
    assert.matches([["/it's.txt"]], (call("ls", { path = "/" })), 1, true)
  end)

  it("grep: literal pattern, three output modes, glob, max_count", function()
    assert.equal("/a.txt\n/src/x.py", call("grep", { pattern = "foo" }))
    assert.equal("/src/x.py:\n  1: a.b", call("grep", { pattern = "a.b", output_mode = "content" }))
    assert.equal("/a.txt: 2\n/src/x.py: 1", call("grep", { pattern = "foo", output_mode = "count" }))
    assert.equal("/src/x.py", call("grep", { pattern = "foo", glob = "*.py" }))
    assert.equal("No matches found", call("grep", { pattern = "(" }))
    assert.matches("^/a.txt:\n  3: foo\n\nNote: the search stopped early %(it hit its time limit or the maximum match count%)%.",
      (call("grep", { pattern = "foo", output_mode = "content", max_count = 1 })))
  end)

  it("write_file, edit_file, delete: texts and errors", function()
    assert.equal("Updated file /n/b.txt", call("write_file", { file_path = "/n/b.txt", content = "hi" }))
    assert.equal("Updated file /n/b.txt", call("write_file", { file_path = "n/b.txt", content = "hi" }))
    assert.equal("hi", H.read(dir, "n/b.txt"))
    assert.equal("Error: old_string ends with a newline, but the file does not end with a newline. Retry with the "
      .. "trailing newline removed from old_string (and from new_string if it also ends with a newline).",
      msg("edit_file", { file_path = "/n/b.txt", old_string = "hi\n", new_string = "x" }))
    assert.equal("Error: String 'foo' appears 2 times in file. Use replace_all=True to replace all instances, or "
      .. "provide a more specific string with surrounding context.",
      msg("edit_file", { file_path = "/a.txt", old_string = "foo", new_string = "x" }))
    assert.equal("Error: String not found in file: 'zzz'", msg("edit_file", { file_path = "/a.txt", old_string = "zzz", new_string = "x" }))
    assert.equal("Successfully replaced 2 instance(s) of the string in '/a.txt'",
      call("edit_file", { file_path = "/a.txt", old_string = "foo", new_string = "bar", replace_all = true }))
    assert.equal("Successfully replaced 1 instance(s) of the string in '/a.txt'",
      call("edit_file", { file_path = "/a.txt", old_string = "one\r\ntwo", new_string = "1\r\n2" }))
    assert.equal("1\n2\nbar\nbar\n", H.read(dir, "a.txt"))
    assert.equal("Error: File '/nope.txt' not found", msg("edit_file", { file_path = "/nope.txt", old_string = "a", new_string = "b" }))
    assert.equal("Error: File '/nope.txt' not found", msg("read_file", { file_path = "/nope.txt" }))
    assert.equal("Deleted /n/b.txt", call("delete", { file_path = "/n/b.txt" }))
    assert.is_false(H.exists(dir, "n/b.txt"))
    assert.equal("Error: File '/n/b.txt' not found", msg("delete", { file_path = "/n/b.txt" }))
  end)

  it("virtual_mode path rules", function()
    assert.equal("Error: Path traversal not allowed: /../etc/passwd", msg("read_file", { file_path = "/../etc/passwd" }))
    assert.equal("Error: Path traversal not allowed: ~/x", msg("read_file", { file_path = "~/x" }))
    assert.equal("Error: Windows absolute paths are not supported: C:\\x.txt. Please use virtual paths starting with / "
      .. "(e.g., /workspace/file.txt)", msg("read_file", { file_path = "C:\\x.txt" }))
    -- the root appears as /: /etc/passwd is <root>/etc/passwd
    assert.equal("Error: File '/etc/passwd' not found", msg("read_file", { file_path = "/etc/passwd" }))
    assert.equal("1  one", call("read_file", { file_path = "a.txt", limit = 1 }):match("^[^\n]*"))
  end)

  it("a read-only mount: permission denied for write", function()
    local w = U.open(dir, "deepagents", { roots = { { path = dir, mount = "/", mode = "ro" } } })
    local _, m, code = U.text(w, "write_file", { file_path = "/a.txt", content = "x" })
    assert.equal("Error: permission denied for write on /a.txt", m)
    assert.equal("READ_ONLY_ROOT", code)
  end)

  it("MCP round trip", function()
    local r = U.mcp(dir, "deepagents", {
      { method = "tools/list" },
      { "read_file", { file_path = "a.txt", limit = 1 } },
      { "edit_file", { file_path = "a.txt", old_string = "nope", new_string = "x" } },
    })
    assert.equal(7, #r[2].result.tools)
    assert.matches("^1  one\n\n%[Read 1 line", r[3].result.content[1].text)
    assert.is_true(r[4].result.isError)
    assert.equal("Error: String not found in file: 'nope'", r[4].result.content[1].text)
    assert.equal("NOT_FOUND_TEXT", r[4].result._meta["burrow/code"])
  end)
end)

describe(H.tag("pack deepagents: security cases through the pack's tool names"), function()
  local B, ws
  before_each(function()
    B = H.tmpdir()
    H.write_all(B, { ["outside/secret.txt"] = "TOPSECRET", ["ws/file.txt"] = "ok\n" })
    H.symlink(B .. "/outside/secret.txt", B, "ws/esc_file")
    H.symlink("/", B, "ws/esc_dir")
    H.symlink("../outside", B, "ws/esc_updir")
    ws = U.open(B .. "/ws", "deepagents", { mount = "/" })
  end)
  after_each(H.cleanup)

  local function refused(name, args)
    local res, msg, code = ws:call(name, args)
    assert.is_nil(res, json.encode(args))
    assert.truthy(({ OUTSIDE_ROOT = true, ELOOP = true, POLICY_DENIED = true })[code],
      ("%s: %s (%s)"):format(json.encode(args), tostring(code), msg))
    assert.not_matches("TOPSECRET", msg, 1, true)
    assert.not_matches(B, msg, 1, true)
  end

  it("no tool reaches outside the root", function()
    refused("read_file", { file_path = "/../outside/secret.txt" })
    refused("read_file", { file_path = "/esc_file" })
    refused("read_file", { file_path = "/esc_dir/etc/passwd" })
    refused("ls", { path = "/esc_updir" })
    refused("glob", { pattern = "*", path = "/esc_updir" })
    refused("grep", { pattern = "TOP", path = "/esc_updir" })
    refused("write_file", { file_path = "/esc_updir/new.txt", content = "x" })
    refused("edit_file", { file_path = "/esc_file", old_string = "TOPSECRET", new_string = "x" })
    refused("delete", { file_path = "/esc_updir/secret.txt" })
    assert.equal("TOPSECRET", H.read(B, "outside/secret.txt"))
    assert.is_false(H.exists(B, "outside/new.txt"))
    assert.equal("No matches found", ws:call("grep", { pattern = "TOPSECRET" }).content)
  end)
end)
