-- The mcp_filesystem pack against ../shared/reference/tool-conventions.md §1:
-- the official MCP filesystem server's 14 tools, schemas, texts, error
-- strings, caps, an MCP round trip, and the security cases through the
-- pack's own tool names. (test/e2e/packs.test.mjs runs the peer's
-- functional script against it.)

local H = require "helpers"
local U = require "packs.util"
local json = H.json

local NAMES = { "read_text_file", "read_file", "read_media_file", "read_multiple_files", "write_file",
  "edit_file", "create_directory", "list_directory", "list_directory_with_sizes", "directory_tree",
  "move_file", "search_files", "get_file_info", "list_allowed_directories" }

describe(H.tag("pack mcp_filesystem"), function()
  local dir, ws
  local function text(name, args) return U.text(ws, name, args) end

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, {
      ["a.txt"] = "one\ntwo\nthree\nfour\n",
      ["crlf.txt"] = "l1\r\nl2\r\nl3\r\n",
      ["dup.txt"] = "foo\nbar\nfoo\n",
      ["latin1.txt"] = "caf\233\n",
      ["bin.dat"] = "a\0b",
      ["img.png"] = "\137PNG\r\n\26\n0000",
      ["sub/x.c"] = "int x;\n",
      ["sub/deep/y.c"] = "int y;\n",
      ["top.c"] = "",
      [".hidden"] = "h",
    })
    ws = U.open(dir, "mcp_filesystem")
  end)
  after_each(H.cleanup)

  describe("schema", function()
    it("has the peer's 14 tools with titles, annotations and outputSchema {content}", function()
      local list = ws:tools()
      local names = {}
      for i, t in ipairs(list) do names[i] = t.name end
      assert.same(NAMES, names)
      for _, t in ipairs(list) do
        assert.is_string(t.title)
        assert.is_false(t.annotations.openWorldHint)
        assert.equal("object", t.outputSchema.type)
        assert.truthy(t.outputSchema.properties.content)
      end
      local by = {}
      for _, t in ipairs(list) do by[t.name] = t end
      assert.equal("Read File (Deprecated)", by.read_file.title)
      assert.matches("^DEPRECATED: Use read_text_file instead%.", by.read_file.description)
      assert.is_true(by.read_text_file.annotations.readOnlyHint)
      assert.same({ readOnlyHint = false, idempotentHint = true, destructiveHint = true, openWorldHint = false },
        by.write_file.annotations)
      assert.same({ readOnlyHint = false, idempotentHint = false, destructiveHint = true, openWorldHint = false },
        by.edit_file.annotations)
      assert.same({ "path", "edits" }, by.edit_file.inputSchema.required)
      assert.same({ "oldText", "newText" }, by.edit_file.inputSchema.properties.edits.items.required)
      assert.same({ "name", "size" }, by.list_directory_with_sizes.inputSchema.properties.sortBy.enum)
      assert.equal(1, by.read_multiple_files.inputSchema.properties.paths.minItems)
    end)

    it("is served by burrow tools --pack mcp_filesystem", function()
      local out, _, code = H.burrow_cmd { "tools", "--format", "mcp", "--pack", "mcp_filesystem", "--root", dir }
      assert.equal(0, code)
      assert.equal(14, #json.decode(out))
    end)
  end)

  describe("read_text_file", function()
    it("returns the text unnumbered, CR kept", function()
      assert.equal("one\ntwo\nthree\nfour\n", text("read_text_file", { path = "a.txt" }))
      assert.equal("l1\r\nl2\r\nl3\r\n", text("read_file", { path = dir .. "/crlf.txt" }))
    end)
    it("head: first N lines, no trailing newline, CR kept", function()
      assert.equal("one\ntwo", text("read_text_file", { path = "a.txt", head = 2 }))
      assert.equal("l1\r\nl2\r", text("read_text_file", { path = "crlf.txt", head = 2 }))
    end)
    it("tail: exactly N lines (deviation: the peer gives N-1), CRLF to LF", function()
      assert.equal("three\nfour\n", text("read_text_file", { path = "a.txt", tail = 2 }))
      assert.equal("l2\nl3\n", text("read_text_file", { path = "crlf.txt", tail = 2 }))
    end)
    it("head: 0 and tail: 0 mean the whole file; both at once is the peer's error", function()
      assert.equal("one\ntwo\nthree\nfour\n", text("read_text_file", { path = "a.txt", head = 0 }))
      local t, msg = text("read_text_file", { path = "a.txt", head = 1, tail = 1 })
      assert.is_nil(t)
      assert.equal("Cannot specify both head and tail parameters simultaneously", msg)
    end)
    it("offset/limit extension", function()
      assert.equal("two\nthree\n", text("read_text_file", { path = "a.txt", offset = 2, limit = 2 }))
    end)
    it("other encodings are decoded as native read_file decodes them, and edits write them back byte-exactly; binary is refused", function()
      assert.equal("café\n", text("read_text_file", { path = "latin1.txt" }))
      H.write(dir, "short.txt", "\198r\248sk\248bing\nGr\246\223e\nse\241or\n") -- Latin-1
      assert.equal("Ærøskøbing\nGröße\nseñor\n", text("read_text_file", { path = "short.txt" }))
      assert(text("edit_file", { path = "short.txt", edits = { { oldText = "Größe", newText = "Grüße" } } }))
      assert.equal("\198r\248sk\248bing\nGr\252\223e\nse\241or\n", H.read(dir, "short.txt"))
      H.write(dir, "u16.txt", "\255\254h\0i\0\n\0") -- UTF-16LE with its BOM
      assert.equal("hi\n", text("read_text_file", { path = "u16.txt" }))
      assert(text("edit_file", { path = "u16.txt", edits = { { oldText = "hi", newText = "ho" } } }))
      assert.equal("\255\254h\0o\0\n\0", H.read(dir, "u16.txt"))
      local t, msg, code = text("read_text_file", { path = "bin.dat" })
      assert.is_nil(t)
      assert.equal("BINARY", code)
      assert.matches("read_media_file", msg, 1, true)
    end)
    it("caps at max_result_bytes on a line with the resume marker", function()
      local lines = {}
      for i = 1, 2000 do lines[i] = ("line %04d %s"):format(i, ("x"):rep(40)) end
      H.write(dir, "big.txt", table.concat(lines, "\n") .. "\n")
      local small = U.open(dir, "mcp_filesystem", { caps = { max_result_bytes = 8192 } })
      local t = U.text(small, "read_text_file", { path = "big.txt" })
      assert.matches("\n%[truncated at line %d+ of 2000; use head/tail, or offset=%d+%]$", t)
      local k = tonumber(t:match("truncated at line (%d+)"))
      assert.matches(("line %04d "):format(k), t, 1, true)
      assert.not_matches(("line %04d "):format(k + 1), t, 1, true)
      local tail = U.text(small, "read_text_file", { path = "big.txt", tail = 3 })
      assert.equal(table.concat(lines, "\n", 1998, 2000) .. "\n", tail)
    end)
  end)

  describe("errors", function()
    it("use the peer's wording and keep the burrow code", function()
      local t, msg, code = text("read_text_file", { path = "nope.txt" })
      assert.is_nil(t)
      assert.equal("ENOENT", code)
      assert.equal("ENOENT: no such file or directory, open 'nope.txt'", msg)
      t, msg, code = text("read_text_file", { path = "/etc/passwd" })
      assert.equal("OUTSIDE_ROOT", code)
      assert.equal(("Access denied - path outside allowed directories: /etc/passwd not in %s"):format(ws:mounts()[1].mount), msg)
      t, msg = text("read_text_file", { path = "C:\\Windows\\win.ini" })
      assert.equal("Access denied - Windows-style path received on a POSIX host: C:\\Windows\\win.ini", msg)
    end)
  end)

  describe("read_media_file / read_multiple_files", function()
    it("returns an image item by extension, other files as a resource", function()
      local res = ws:call("read_media_file", { path = "img.png" })
      assert.same({ type = "image", mimeType = "image/png", data = H.core.base64_encode and nil or res.content[1].data },
        { type = res.content[1].type, mimeType = res.content[1].mimeType, data = res.content[1].data })
      res = ws:call("read_media_file", { path = "bin.dat" })
      local item = res.content[1]
      assert.equal("resource", item.type)
      assert.equal("file://bin.dat", item.resource.uri)
      assert.equal("application/octet-stream", item.resource.mimeType)
    end)
    it("joins blocks with ---, a failed file becomes an Error line", function()
      local t = text("read_multiple_files", { paths = { "a.txt", "nope" } })
      assert.equal("a.txt:\none\ntwo\nthree\nfour\n\n\n---\nnope: Error - ENOENT: no such file or directory, open 'nope'", t)
    end)
  end)

  describe("writing", function()
    it("write_file needs an existing parent", function()
      assert.equal("Successfully wrote to n.txt", text("write_file", { path = "n.txt", content = "hi" }))
      assert.equal("hi", H.read(dir, "n.txt"))
      local t, msg, code = text("write_file", { path = "no/n.txt", content = "hi" })
      assert.is_nil(t)
      assert.equal("ENOENT", code)
      assert.equal("ENOENT: no such file or directory, open 'no/n.txt'", msg)
    end)
    it("create_directory is mkdir -p and silent on an existing directory", function()
      assert.equal("Successfully created directory p/q/r", text("create_directory", { path = "p/q/r" }))
      assert.equal("Successfully created directory p/q/r", text("create_directory", { path = "p/q/r" }))
    end)
    it("move_file refuses an existing destination with the peer's text", function()
      assert.equal("Successfully moved a.txt to b.txt", text("move_file", { source = "a.txt", destination = "b.txt" }))
      local t, msg, code = text("move_file", { source = "b.txt", destination = "dup.txt" })
      assert.is_nil(t)
      assert.equal("EEXIST", code)
      assert.equal("Destination already exists: dup.txt", msg)
    end)
  end)

  describe("edit_file", function()
    it("returns the fenced jsdiff-style patch; dryRun writes nothing", function()
      local t = text("edit_file", { path = "a.txt", edits = { { oldText = "two", newText = "2" } }, dryRun = true })
      assert.equal("```diff\nIndex: a.txt\n" .. ("="):rep(67) .. "\n--- a.txt\toriginal\n+++ a.txt\tmodified\n"
        .. "@@ -1,4 +1,4 @@\n one\n-two\n+2\n three\n four\n```\n\n", t)
      assert.equal("one\ntwo\nthree\nfour\n", H.read(dir, "a.txt"))
      text("edit_file", { path = "a.txt", edits = { { oldText = "two", newText = "2" } } })
      assert.equal("one\n2\nthree\nfour\n", H.read(dir, "a.txt"))
    end)
    it("keeps CRLF, treats newText literally, matches by trimmed lines", function()
      text("edit_file", { path = "crlf.txt", edits = { { oldText = "l2\n", newText = "$& $1\n" } } })
      assert.equal("l1\r\n$& $1\r\nl3\r\n", H.read(dir, "crlf.txt"))
      text("edit_file", { path = "a.txt", edits = { { oldText = "   three   ", newText = "3" } } })
      assert.equal("one\ntwo\n3\nfour\n", H.read(dir, "a.txt"))
    end)
    it("not found: the peer's text, nothing written", function()
      local t, msg, code = text("edit_file", { path = "a.txt",
        edits = { { oldText = "one", newText = "1" }, { oldText = "absent", newText = "x" } } })
      assert.is_nil(t)
      assert.equal("NOT_FOUND_TEXT", code)
      assert.matches("^Could not find exact match for edit:\nabsent\n", msg)
      assert.equal("one\ntwo\nthree\nfour\n", H.read(dir, "a.txt"))
    end)
    it("deviation: an ambiguous match is refused with the matching lines", function()
      local t, msg, code = text("edit_file", { path = "dup.txt", edits = { { oldText = "foo", newText = "F" } } })
      assert.is_nil(t)
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.matches("lines 1, 3", msg, 1, true)
    end)
    it("deviation: a oneline oldText found after the indentation, newText with more lines, is refused (issue 44)", function()
      local src = "class A {\n    /**\n     * Loads.\n     */\n}\n"
      H.write(dir, "doc.js", src)
      local t, msg, code = text("edit_file", { path = "doc.js",
        edits = { { oldText = "* Loads.", newText = "* Loads.\n * @returns x" } } })
      assert.is_nil(t)
      assert.equal("AMBIGUOUS_TEXT", code)
      assert.matches("^Ambiguous match for edit:\n%* Loads%.\n", msg)
      assert.matches("matches line 3 only after the line's indentation, so newText's line 2", msg, 1, true)
      assert.equal(src, H.read(dir, "doc.js"))
    end)
    it("grows the fence past backticks in the diff", function()
      H.write(dir, "md.txt", "```\ncode\n```\n")
      local t = text("edit_file", { path = "md.txt", edits = { { oldText = "code", newText = "x" } }, dryRun = true })
      assert.matches("^````diff\n", t)
      assert.matches("\n````\n\n$", t)
    end)
  end)

  describe("listing", function()
    it("list_directory: [DIR]/[FILE] lines sorted by name, hidden included", function()
      assert.equal("[FILE] .hidden\n[FILE] a.txt\n[FILE] bin.dat\n[FILE] crlf.txt\n[FILE] dup.txt\n"
        .. "[FILE] img.png\n[FILE] latin1.txt\n[DIR] sub\n[FILE] top.c", text("list_directory", { path = "." }))
      H.mkdir(dir, "empty")
      assert.equal("", text("list_directory", { path = "empty" }))
    end)
    it("list_directory_with_sizes: padded columns and the summary", function()
      H.write(dir, "s/big", ("x"):rep(19486))
      H.write(dir, "s/one", "1")
      H.mkdir(dir, "s/d")
      local t = text("list_directory_with_sizes", { path = "s", sortBy = "size" })
      assert.equal(table.concat({
        "[FILE] big                              19.03 KB",
        "[DIR] d                              ", -- a directory's own size (4096) sorts too, as in the peer
        "[FILE] one                                   1 B",
        "",
        "Total: 2 files, 1 directories",
        "Combined size: 19.03 KB",
      }, "\n"), t)
    end)
    it("directory_tree: 2-space JSON, children on directories, excludes", function()
      local t = text("directory_tree", { path = "sub" })
      assert.same(json.decode(t), json.decode([==[
        [{"name":"deep","type":"directory","children":[{"name":"y.c","type":"file"}]},{"name":"x.c","type":"file"}]]==]))
      assert.matches('^%[\n  {\n    "name": "deep",\n    "type": "directory",\n    "children": %[\n', t)
      assert.equal('[\n  {\n    "name": "x.c",\n    "type": "file"\n  }\n]', text("directory_tree", { path = "sub", excludePatterns = { "deep" } }))
      assert.equal('[\n  {\n    "name": "deep",\n    "type": "directory",\n    "children": []\n  }\n]',
        text("directory_tree", { path = "sub", excludePatterns = { "**/*.c" } }))
    end)
    it("directory_tree refuses past max_entries rather than cut JSON", function()
      local small = U.open(dir, "mcp_filesystem", { caps = { max_entries = 3 } })
      local t, msg, code = U.text(small, "directory_tree", { path = "." })
      assert.is_nil(t)
      assert.equal("TOO_LARGE", code)
      assert.matches("excludePatterns", msg, 1, true)
    end)
    it("search_files: a name glob without matchBase; full paths or No matches found", function()
      assert.equal("top.c", text("search_files", { path = ".", pattern = "*.c" }))
      assert.equal(dir .. "/sub/deep/y.c\n" .. dir .. "/sub/x.c\n" .. dir .. "/top.c", text("search_files", { path = dir, pattern = "**/*.c" }))
      assert.equal("No matches found", text("search_files", { path = ".", pattern = "y.c" }))
      assert.equal("sub/x.c", text("search_files", { path = "sub", pattern = "**/*.c", excludePatterns = { "deep/**" } }):gsub("^sub/", "sub/"))
    end)
    it("get_file_info: key: value lines in the peer's order", function()
      H.chmod(dir, "a.txt", "640")
      local t = text("get_file_info", { path = "a.txt" })
      local keys = {}
      for k in t:gmatch("([%a]+): [^\n]*") do keys[#keys + 1] = k end
      assert.same({ "size", "created", "modified", "accessed", "isDirectory", "isFile", "permissions" }, keys)
      assert.matches("^size: 19\n", t)
      assert.matches("modified: %a%a%a %a%a%a %d%d %d%d%d%d %d%d:%d%d:%d%d GMT%+0000 %(Coordinated Universal Time%)", t)
      assert.matches("isDirectory: false\nisFile: true\npermissions: 640$", t)
    end)
    it("list_allowed_directories: the mounts", function()
      assert.equal("Allowed directories:\n" .. ws:mounts()[1].mount, text("list_allowed_directories", {}))
    end)
  end)

  describe("over MCP", function()
    it("returns text twice (content and structuredContent), errors with isError and _meta code", function()
      local r = U.mcp(dir, "mcp_filesystem", {
        { "read_text_file", { path = "a.txt", head = 1 } },
        { "read_text_file", { path = "../x" } },
        { "delete_file", { path = "a.txt" } },
        { method = "tools/list" },
      })
      assert.same({ { type = "text", text = "one" } }, r[2].result.content)
      assert.same({ content = "one" }, r[2].result.structuredContent)
      assert.is_true(r[3].result.isError)
      assert.equal("OUTSIDE_ROOT", r[3].result._meta["burrow/code"])
      assert.matches("^Access denied %- path outside allowed directories: %.%./x not in ", r[3].result.content[1].text)
      assert.equal(-32602, r[4].error.code)
      assert.equal("Tool delete_file not found", r[4].error.message)
      assert.equal(14, #r[5].result.tools)
    end)
  end)

  describe("policies apply through the native tools", function()
    it("secrets denies .env through read_text_file; audit names the pack tool", function()
      H.write(dir, ".env", "KEY=1")
      local log = H.tmpdir() .. "/audit.jsonl"
      local p = U.open(dir, "mcp_filesystem", { policies = { "default", "secrets", "audit" }, audit = log })
      local t, _, code = U.text(p, "read_text_file", { path = ".env" })
      assert.is_nil(t)
      assert.equal("POLICY_DENIED", code)
      p:close()
      local rec = json.decode((io.open(log):read("l")))
      assert.equal("read_file", rec.tool)
      assert.equal("read_text_file", rec.via)
      assert.equal("deny", rec.decision)
    end)
  end)
end)

describe(H.tag("pack mcp_filesystem: security cases through the pack's tool names"), function()
  local B, ws, mount
  before_each(function()
    B = H.tmpdir()
    H.write_all(B, { ["outside/secret.txt"] = "TOPSECRET", ["ws_secret/secret.txt"] = "TOPSECRET", ["ws/file.txt"] = "ok\n" })
    H.mkdir(B, "ws/sub")
    H.symlink(B .. "/outside/secret.txt", B, "ws/esc_file")
    H.symlink("../ws_secret/secret.txt", B, "ws/esc_rel")
    H.symlink("/", B, "ws/esc_dir")
    H.symlink("../outside", B, "ws/esc_updir")
    H.symlink("../outside/new.txt", B, "ws/dangling_out")
    H.mkfifo(B, "ws/fifo")
    ws = U.open(B .. "/ws", "mcp_filesystem")
    mount = ws:mounts()[1].mount
  end)
  after_each(H.cleanup)

  local function refused(name, args, codes)
    local res, msg, code = ws:call(name, args)
    assert.is_nil(res, name .. " " .. json.encode(args))
    assert.truthy(codes[code], ("%s %s: code %s (%s)"):format(name, json.encode(args), tostring(code), msg))
    assert.not_matches("TOPSECRET", msg, 1, true)
    if code == "OUTSIDE_ROOT" then assert.matches("^Access denied %- ", msg) end
  end

  local ESCAPES = { "../outside/secret.txt", "sub/../../outside/secret.txt", "/etc/passwd", "esc_file", "esc_rel",
    "esc_dir/etc/passwd", "esc_updir/secret.txt" }

  it("reads and stats refuse every escape (P0-1..P0-6)", function()
    local O = { OUTSIDE_ROOT = true }
    for _, p in ipairs(ESCAPES) do
      refused("read_text_file", { path = p }, O)
      refused("read_file", { path = p, head = 1 }, O)
      refused("read_media_file", { path = p }, O)
      refused("get_file_info", { path = p:gsub("^esc_file$", "esc_file/x"):gsub("^esc_rel$", "esc_rel/x") }, { OUTSIDE_ROOT = true, ENOTDIR = true })
      local t = U.text(ws, "read_multiple_files", { paths = { p } })
      assert.matches(": Error %- Access denied", t)
      assert.not_matches("TOPSECRET", t, 1, true)
    end
    refused("read_text_file", { path = B .. "/ws_secret/secret.txt" }, O)
    refused("list_directory", { path = "esc_updir" }, O)
    refused("list_directory_with_sizes", { path = "../outside" }, O)
    refused("directory_tree", { path = "esc_dir" }, O)
    refused("search_files", { path = "esc_updir", pattern = "**" }, O)
  end)

  it("writes never create or change anything outside (P0-4, P0-8)", function()
    local W = { OUTSIDE_ROOT = true, POLICY_DENIED = true, ELOOP = true }
    for _, p in ipairs { "../outside/new.txt", "esc_file", "esc_updir/new.txt", "dangling_out", B .. "/ws_evil/x" } do
      refused("write_file", { path = p, content = "x" }, W)
      refused("edit_file", { path = p, edits = { { oldText = "TOPSECRET", newText = "x" } } }, { OUTSIDE_ROOT = true, ENOENT = true, POLICY_DENIED = true, ELOOP = true })
    end
    refused("create_directory", { path = "esc_updir/d" }, W)
    refused("move_file", { source = "file.txt", destination = "dangling_out" }, { OUTSIDE_ROOT = true, POLICY_DENIED = true, EEXIST = true })
    refused("move_file", { source = "file.txt", destination = "../outside/moved" }, W)
    assert.equal("TOPSECRET", H.read(B, "outside/secret.txt"))
    assert.is_false(H.exists(B, "outside/new.txt"))
    assert.is_false(H.exists(B, "outside/d"))
    assert.is_false(H.exists(B, "outside/moved"))
    assert.is_false(H.exists(B, "ws_evil"))
    assert.equal("ok\n", H.read(B, "ws/file.txt"))
  end)

  it("a FIFO is refused at once, not read (P1)", function()
    refused("read_text_file", { path = "fifo" }, { NOT_REGULAR = true })
    refused("read_media_file", { path = "fifo" }, { NOT_REGULAR = true })
  end)

  it("absolute paths under the mount work, ~ is not expanded", function()
    assert.equal("ok\n", U.text(ws, "read_text_file", { path = mount .. "/file.txt" }))
    refused("read_text_file", { path = "~/file.txt" }, { ENOENT = true, INVALID_ARGUMENT = true })
  end)
end)
