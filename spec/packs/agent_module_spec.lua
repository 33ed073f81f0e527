-- The agent_module pack against ../shared/reference/tool-conventions.md §5
-- (the seed "filesystem" module v2.0.0): the twelve actions' schemas,
-- permissions and risk, the result objects, `{n:>W}\t{line}` numbering,
-- edit's count rule, the containment message, the seed YAML serving the
-- pack's names, an MCP round trip and security cases through its names.

local H = require "helpers"
local U = require "packs.util"
local config = require "burrow.config"
local json = H.json

local ACTIONS = { "read", "write", "edit", "insert", "ls", "grep", "find", "mv", "cp", "rm", "mkdir", "file_stat" }

describe(H.tag("pack agent_module"), function()
  local dir, ws
  local function call(name, args) return ws:call(name, args) end

  before_each(function()
    dir = H.tmpdir()
    local rows = {}
    for i = 1, 12 do rows[i] = "l" .. i end
    H.write_all(dir, { ["main.py"] = "import os\nimport sys\n", ["t.txt"] = table.concat(rows, "\n") .. "\n",
      ["src/b.py"] = "x=2\n", ["src/sub/a.py"] = "x = 1\nraise ValueError('invalid')\n", [".hidden"] = "h\n",
      ["dup.txt"] = "foo\nbar\nfoo\nfoo\n" })
    ws = U.open(dir, "agent_module", { mount = "/workspace" })
  end)
  after_each(H.cleanup)

  it("schema: the twelve actions with their parameters, permissions and risk", function()
    local names, by = {}, {}
    for _, t in ipairs(ws:tools()) do
      names[#names + 1], by[t.name] = t.name, t
      assert.is_nil(t.inputSchema.required, t.name)
    end
    assert.same(ACTIONS, names)
    local function props(n)
      local ks = {}
      for k in pairs(by[n].inputSchema.properties) do ks[#ks + 1] = k end
      table.sort(ks)
      return ks
    end
    assert.same({ "encoding", "end_line", "path", "start_line" }, props("read"))
    assert.same({ "content", "create_dirs", "encoding", "path" }, props("write"))
    assert.same({ "count", "new_string", "old_string", "path" }, props("edit"))
    assert.same({ "content", "line", "path" }, props("insert"))
    assert.same({ "include_hidden", "path", "pattern", "recursive" }, props("ls"))
    assert.same({ "case_sensitive", "include", "max_results", "path", "pattern", "recursive" }, props("grep"))
    assert.same({ "max_results", "path", "pattern", "type" }, props("find"))
    assert.same({ "destination", "overwrite", "source" }, props("mv"))
    assert.same({ "destination", "overwrite", "source" }, props("cp"))
    assert.same({ "path", "recursive" }, props("rm"))
    assert.same({ "path" }, props("mkdir"))
    assert.same({ "path" }, props("file_stat"))
    -- permissions and risk verbatim from the module's reference
    local meta = {
      read = { { "fs.read" }, "low" }, write = { { "fs.write" }, "medium" },
      edit = { { "fs.read", "fs.write" }, "medium" }, insert = { { "fs.read", "fs.write" }, "medium" },
      ls = { { "fs.list" }, "low" }, grep = { { "fs.read" }, "low" }, find = { { "fs.read" }, "low" },
      mv = { { "fs.read", "fs.write" }, "medium" }, cp = { { "fs.read", "fs.write" }, "medium" },
      rm = { { "fs.delete" }, "high" }, mkdir = { { "fs.write" }, "low" }, file_stat = { { "fs.read" }, "low" },
    }
    for _, t in ipairs(ws.tool_list) do
      assert.same(meta[t.name][1], t.permissions, t.name)
      assert.equal(meta[t.name][2], t.risk, t.name)
    end
    for _, n in ipairs { "read", "ls", "grep", "find", "file_stat" } do assert.is_true(by[n].annotations.readOnlyHint, n) end
    assert.is_true(by.rm.annotations.destructiveHint)
    local _, msg, code = call("read", {})
    assert.equal("missing required parameter 'path'", msg)
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("read: {path, content, total_lines, start_line, end_line, size_bytes}, numbers right-aligned", function()
    assert.same({ path = "/workspace/main.py", content = "1\timport os\n2\timport sys\n", total_lines = 2,
      start_line = 1, end_line = 2, size_bytes = 21 }, call("read", { path = "/workspace/main.py" }))
    local r = call("read", { path = "/workspace/t.txt", start_line = 9, end_line = 10 })
    assert.equal(" 9\tl9\n10\tl10\n", r.content)
    assert.same({ 12, 9, 10 }, { r.total_lines, r.start_line, r.end_line })
    assert.equal(" 1\tl1\n 2\tl2\n", call("read", { path = "/workspace/t.txt", end_line = 2 }).content)
    assert.equal("start_line 30 is past the end of /workspace/t.txt (12 lines)",
      select(2, call("read", { path = "/workspace/t.txt", start_line = 30 })))
    assert.equal("unsupported encoding 'latin-1': only utf-8 is supported",
      select(2, call("read", { path = "/workspace/t.txt", encoding = "latin-1" })))
    assert.truthy(call("read", { path = "/workspace/t.txt", encoding = "UTF-8" }))
    assert.equal("ENOENT", select(3, call("read", { path = "/workspace/nope.txt" })))
    -- cut by burrow's max_result_bytes: truncated and where to go on
    local w = U.open(dir, "agent_module", { mount = "/workspace", caps = { max_result_bytes = 20 } })
    assert.same({ path = "/workspace/t.txt", content = " 1\tl1\n 2\tl2\n 3\tl3\n 4\tl4\n", total_lines = 12,
      start_line = 1, end_line = 4, size_bytes = 39, truncated = true, next_start_line = 5 },
      w:call("read", { path = "/workspace/t.txt" }))
  end)

  it("read: max_file_size (the constraint) is checked before reading", function()
    local w = U.open(dir, "agent_module", { mount = "/workspace", caps = { max_file_size = 10 } })
    assert.equal("TOO_LARGE", select(3, w:call("read", { path = "/workspace/main.py" })))
    assert.equal("TOO_LARGE", select(3, w:call("write", { path = "/workspace/n.txt", content = ("x"):rep(11) })))
    assert.is_false(H.exists(dir, "n.txt"))
  end)

  it("write: create_dirs defaults to false; {path, ok, bytes, content_hash}", function()
    assert.equal("ENOENT", select(3, call("write", { path = "/workspace/new/x.txt", content = "hi" })))
    local r = call("write", { path = "/workspace/new/x.txt", content = "hi", create_dirs = true })
    assert.same({ path = "/workspace/new/x.txt", ok = true, bytes = 2, content_hash = H.sha256_of("hi") }, r)
    assert.equal("hi", H.read(dir, "new/x.txt"))
  end)

  it("edit: count 1 needs one occurrence, k exactly k, 0 all; numbered preview", function()
    local r = call("edit", { path = "/workspace/t.txt", old_string = "l5\n", new_string = "L5\nL5b\n" })
    assert.equal(1, r.replacements)
    -- the new file's lines of the hunk, numbered to the width of the largest number shown
    assert.equal("2\tl2\n3\tl3\n4\tl4\n5\tL5\n6\tL5b\n7\tl6\n8\tl7\n9\tl8\n", r.preview)
    assert.equal(" 9\tl8\n10\tl9\n11\tl10\n12\tX\n13\tl12\n",
      call("edit", { path = "/workspace/t.txt", old_string = "l11\n", new_string = "X\n" }).preview)
    local _, msg, code = call("edit", { path = "/workspace/dup.txt", old_string = "foo", new_string = "X" })
    assert.equal("AMBIGUOUS_TEXT", code)
    assert.matches("lines 1, 3, 4", msg, 1, true)
    _, msg, code = call("edit", { path = "/workspace/dup.txt", old_string = "foo", new_string = "X", count = 2 })
    assert.equal("AMBIGUOUS_TEXT", code)
    assert.equal("old_string occurs 3 times in /workspace/dup.txt, not 2 (first on line 1); give count=3 or more context", msg)
    assert.equal("foo\nbar\nfoo\nfoo\n", H.read(dir, "dup.txt"))
    assert.equal(3, call("edit", { path = "/workspace/dup.txt", old_string = "foo", new_string = "X", count = 3 }).replacements)
    assert.equal("X\nbar\nX\nX\n", H.read(dir, "dup.txt"))
    assert.equal(3, call("edit", { path = "/workspace/dup.txt", old_string = "X", new_string = "y", count = 0 }).replacements)
    assert.equal("NOT_FOUND_TEXT", select(3, call("edit", { path = "/workspace/dup.txt", old_string = "X", new_string = "z", count = 0 })))
  end)

  it("insert: before a line; total + 1 appends", function()
    local r = call("insert", { path = "/workspace/main.py", line = 1, content = "#!/usr/bin/env python\n" })
    assert.same({ "/workspace/main.py", true, 1 }, { r.path, r.ok, r.line })
    assert.equal(4, call("insert", { path = "/workspace/main.py", line = 4, content = "print(1)\n" }).total_lines)
    assert.equal("#!/usr/bin/env python\nimport os\nimport sys\nprint(1)\n", H.read(dir, "main.py"))
    assert.truthy(select(3, call("insert", { path = "/workspace/main.py", line = 9, content = "x\n" })))
  end)

  it("ls: {path, entries: [{name, path, type, size_bytes}], count, truncated}; pattern, recursive, hidden", function()
    local r = call("ls", { path = "/workspace" })
    local names = {}
    for i, e in ipairs(r.entries) do names[i] = e.name .. ":" .. e.type end
    assert.same({ "dup.txt:file", "main.py:file", "src:dir", "t.txt:file" }, names)
    assert.same({ name = "main.py", path = "/workspace/main.py", type = "file", size_bytes = 21 }, r.entries[2])
    assert.equal(4, r.count)
    assert.is_false(r.truncated)
    assert.equal(5, call("ls", { path = "/workspace", include_hidden = true }).count)
    local py = call("ls", { path = "/workspace", recursive = true, pattern = "*.py" })
    local paths = {}
    for i, e in ipairs(py.entries) do paths[i] = e.path end
    assert.same({ "/workspace/main.py", "/workspace/src/b.py", "/workspace/src/sub/a.py" }, paths)
    assert.equal("ENOENT", select(3, call("ls", { path = "/workspace/nope" })))
  end)

  it("grep: {matches: [{file, line, text}], count}; include, recursive, case_sensitive, max_results", function()
    local r = call("grep", { pattern = "Value\\w+", path = "/workspace" })
    assert.same({ matches = { { file = "/workspace/src/sub/a.py", line = 2, text = "raise ValueError('invalid')" } }, count = 1 }, r)
    assert.equal(2, call("grep", { pattern = "^x", path = "/workspace/src" }).count)
    assert.same({ { file = "/workspace/src/b.py", line = 1, text = "x=2" } },
      call("grep", { pattern = "^x", path = "/workspace/src", recursive = false }).matches)
    assert.equal(0, call("grep", { pattern = "IMPORT", path = "/workspace" }).count)
    assert.equal(2, call("grep", { pattern = "IMPORT", path = "/workspace", case_sensitive = false }).count)
    assert.equal(0, call("grep", { pattern = "import", path = "/workspace", include = "*.txt" }).count)
    local capped = call("grep", { pattern = "l", path = "/workspace/t.txt", max_results = 3 })
    assert.equal(3, capped.count)
    assert.is_true(capped.truncated)
    H.write(dir, "bin.dat", "import\0")
    assert.equal(2, call("grep", { pattern = "import", path = "/workspace" }).count) -- binary skipped
  end)

  it("find: glob at any depth, type, max_results; {matches, count, truncated}", function()
    assert.same({ matches = { "main.py", "src/b.py", "src/sub/a.py" }, count = 3, truncated = false },
      call("find", { pattern = "*.py" }))
    assert.same({ "/workspace/src/b.py" }, call("find", { pattern = "*.py", path = "/workspace/src", max_results = 1 }).matches)
    assert.is_true(call("find", { pattern = "*.py", max_results = 1 }).truncated)
    assert.same({ "src/sub" }, call("find", { pattern = "s*b", type = "dir" }).matches)
    assert.same({ "src/sub/a.py" }, call("find", { pattern = "src/sub/*" }).matches)
    assert.equal('type must be "file" or "dir"', select(2, call("find", { pattern = "*", type = "link" })))
  end)

  it("mv, cp: overwrite = false by default; rm needs recursive for directories; mkdir makes parents", function()
    assert.same({ path = "/workspace/m2.py", ok = true, source = "/workspace/main.py", destination = "/workspace/m2.py" },
      call("mv", { source = "/workspace/main.py", destination = "/workspace/m2.py" }))
    assert.equal("EEXIST", select(3, call("mv", { source = "/workspace/m2.py", destination = "/workspace/t.txt" })))
    assert.truthy(call("mv", { source = "/workspace/m2.py", destination = "/workspace/t.txt", overwrite = true }))
    assert.equal("import os\nimport sys\n", H.read(dir, "t.txt"))
    local c = call("cp", { source = "/workspace/src", destination = "/workspace/src2" })
    assert.is_true(c.ok)
    assert.equal("x = 1\nraise ValueError('invalid')\n", H.read(dir, "src2/sub/a.py"))
    assert.equal("EEXIST", select(3, call("cp", { source = "/workspace/t.txt", destination = "/workspace/dup.txt" })))
    assert.same({ path = "/workspace/a/b/c", ok = true, created = true }, call("mkdir", { path = "/workspace/a/b/c" }))
    assert.is_true(call("mkdir", { path = "/workspace/a/b/c" }).ok)
    local _, msg, code = call("rm", { path = "/workspace/a/b/c" })
    assert.equal("'/workspace/a/b/c' is a directory; pass recursive=true to delete it", msg)
    assert.equal("EISDIR", code)
    assert.same({ path = "/workspace/a", ok = true }, call("rm", { path = "/workspace/a", recursive = true }))
    assert.same({ path = "/workspace/t.txt", ok = true }, call("rm", { path = "/workspace/t.txt" }))
    assert.equal("ENOENT", select(3, call("rm", { path = "/workspace/t.txt" })))
  end)

  it("file_stat: {path, name, type, size_bytes, modified, created, permissions, is_symlink}", function()
    H.chmod(dir, "main.py", "640")
    local s = call("file_stat", { path = "/workspace/main.py" })
    assert.same({ "/workspace/main.py", "main.py", "file", 21, "0o640", false },
      { s.path, s.name, s.type, s.size_bytes, s.permissions, s.is_symlink })
    assert.equal("float", math.type(s.modified))
    assert.truthy(math.abs(s.modified - os.time()) < 3600)
    assert.matches('"modified":%d+%.0', (json.encode(s)))
    H.symlink("main.py", dir, "lnk")
    local l = call("file_stat", { path = "/workspace/lnk" })
    assert.same({ "symlink", true }, { l.type, l.is_symlink })
    assert.equal("dir", call("file_stat", { path = "/workspace/src" }).type)
  end)

  it("the seed YAML with pack: agent_module serves the actions by their own names", function()
    local yaml = [[
pack: agent_module
modules:
  - module: filesystem
    actions: [read, write, edit, insert, ls, grep, find, mkdir, rm]
    constraints:
      paths: ["{{workspace}}"]
      max_file_size: "50MB"
]]
    local opts = assert(config.parse(yaml, "app.yaml", "/etc/burrow"))
    assert.same({ "read", "write", "edit", "insert", "ls", "grep", "find", "mkdir", "rm" }, opts.tools)
    assert.same({ { path = ".", mount = "/workspace", mode = "rw", where = "app.yaml:6:15" } }, opts.roots)
    assert.equal(50000000, opts.caps.max_file_size)
    local ro = assert(config.parse("pack: agent_module\nmodules:\n  - module: filesystem\n    actions: [read, ls, read]\n",
      "app.yaml", "/etc/burrow"))
    assert.same({ "read", "ls" }, ro.tools)
    local pre = assert(config.parse("packs: [native, {name: agent_module, prefix: fs_}]\nmodules:\n  - module: filesystem\n"
      .. "    actions: [read, file_stat]\n", "app.yaml", "/etc/burrow"))
    assert.same({ "fs_read", "fs_file_stat" }, pre.tools)
    -- without the pack, the actions still name the native tools
    local native = assert(config.parse("modules:\n  - module: filesystem\n    actions: [read, find]\n", "app.yaml", "/etc/burrow"))
    assert.same({ "read_file", "glob" }, native.tools)
    -- and the workspace opens with the subset
    opts.roots = { { path = dir, mount = "/workspace" } }
    local w = H.open(opts)
    local names = {}
    for _, t in ipairs(w:tools()) do names[#names + 1] = t.name end
    assert.same(opts.tools, names)
    assert.equal("1\timport os\n2\timport sys\n", w:call("read", { path = "/workspace/main.py" }).content)
  end)

  it("MCP round trip", function()
    local r = U.mcp(dir .. ":/workspace", "agent_module", {
      { method = "tools/list" },
      { "read", { path = "/workspace/main.py", start_line = 2 } },
      { "grep", { pattern = "sys", path = "/workspace" } },
      { "read", { path = "/workspace/../etc/passwd" } },
    })
    assert.equal(12, #r[2].result.tools)
    local rd = r[3].result
    assert.same({ path = "/workspace/main.py", content = "2\timport sys\n", total_lines = 2, start_line = 2, end_line = 2,
      size_bytes = 21 }, rd.structuredContent)
    assert.same(rd.structuredContent, json.decode(rd.content[1].text))
    assert.equal(1, r[4].result.structuredContent.count)
    assert.is_true(r[5].result.isError)
    assert.equal("Path '/workspace/../etc/passwd' is outside allowed paths", r[5].result.content[1].text)
    assert.equal("OUTSIDE_ROOT", r[5].result._meta["burrow/code"])
  end)
end)

describe(H.tag("pack agent_module: security cases through the pack's tool names"), function()
  local B, ws
  before_each(function()
    B = H.tmpdir()
    H.write_all(B, { ["outside/secret.txt"] = "TOPSECRET", ["ws/file.txt"] = "ok\n" })
    H.symlink(B .. "/outside/secret.txt", B, "ws/esc_file")
    H.symlink("/", B, "ws/esc_dir")
    H.symlink("../outside", B, "ws/esc_updir")
    ws = U.open(B .. "/ws", "agent_module", { mount = "/workspace" })
  end)
  after_each(H.cleanup)

  local function refused(name, args, want)
    local res, msg, code = ws:call(name, args)
    assert.is_nil(res, json.encode(args))
    assert.truthy(({ OUTSIDE_ROOT = true, ELOOP = true, POLICY_DENIED = true, NOT_REGULAR = true })[code],
      ("%s: %s (%s)"):format(json.encode(args), tostring(code), msg))
    assert.not_matches("TOPSECRET", msg, 1, true)
    if want then assert.equal(want, msg) end
  end

  it("no action reaches outside the workspace; both mv/cp paths are checked", function()
    refused("read", { path = "/workspace/../outside/secret.txt" }, "Path '/workspace/../outside/secret.txt' is outside allowed paths")
    refused("read", { path = "/etc/passwd" }, "Path '/etc/passwd' is outside allowed paths")
    refused("read", { path = "/workspace/esc_file" })
    refused("read", { path = "/workspace/esc_dir/etc/passwd" })
    refused("ls", { path = "/workspace/esc_updir" })
    refused("file_stat", { path = "/workspace/esc_updir/secret.txt" })
    refused("write", { path = "/workspace/esc_updir/new.txt", content = "x" })
    refused("edit", { path = "/workspace/esc_file", old_string = "TOPSECRET", new_string = "x" })
    refused("insert", { path = "/workspace/esc_file", line = 1, content = "x" })
    refused("mkdir", { path = "/workspace/esc_updir/d" })
    refused("rm", { path = "/workspace/esc_updir/secret.txt" })
    refused("grep", { pattern = "TOPSECRET", path = "/workspace/esc_updir" })
    refused("mv", { source = "/workspace/file.txt", destination = "/workspace/esc_updir/moved.txt" })
    refused("cp", { source = "/workspace/esc_file", destination = "/workspace/copy.txt" })
    refused("cp", { source = "/workspace/file.txt", destination = "/tmp/x" }, "Path '/tmp/x' is outside allowed paths")
    assert.same({}, ws:call("grep", { pattern = "TOPSECRET", path = "/workspace" }).matches)
    assert.equal("TOPSECRET", H.read(B, "outside/secret.txt"))
    assert.is_false(H.exists(B, "outside/new.txt"))
    assert.is_false(H.exists(B, "outside/moved.txt"))
    assert.is_false(H.exists(B, "ws/copy.txt"))
  end)
end)
