-- The everruns pack against ../shared/reference/tool-conventions.md §9:
-- schema, /workspace paths, read_file's `N|line` rows, content-type
-- defaults and truncation envelope, content_hash on read and write,
-- expected_hash compare-and-set batch edits with a unified diff, the error
-- strings, list/grep paging, stat_file's exists:false, an MCP round trip and
-- security cases through the pack's tool names.

local H = require "helpers"
local U = require "packs.util"
local json = H.json

describe(H.tag("pack everruns"), function()
  local dir, ws
  local function call(name, args) return U.text(ws, name, args) end
  local function res(name, args)
    local _, r, msg = call(name, args)
    return r, msg
  end

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, { ["a.txt"] = "one\ntwo\nfoo\nfoo\n", ["src/main.go"] = "package main\n", [".env"] = "X=1\n" })
    ws = U.open(dir, "everruns", { mount = "/workspace" })
  end)
  after_each(H.cleanup)

  it("schema: the seven tools, annotations, no registry-level required", function()
    local names = {}
    for _, t in ipairs(ws:tools()) do
      names[#names + 1] = t.name
      assert.is_nil(t.inputSchema.required, t.name)
      assert.truthy(t.annotations, t.name)
    end
    assert.same({ "read_file", "write_file", "edit_file", "list_directory", "grep_files", "delete_file", "stat_file" }, names)
    local by = {}
    for _, t in ipairs(ws:tools()) do by[t.name] = t end
    assert.is_true(by.read_file.annotations.readOnlyHint)
    assert.is_true(by.stat_file.annotations.idempotentHint)
    assert.is_true(by.delete_file.annotations.destructiveHint)
    assert.matches("content_hash", by.edit_file.description, 1, true)
    local _, msg, code = call("read_file", {})
    assert.equal("Missing required parameter: path", msg)
    assert.equal("INVALID_ARGUMENT", code)
    assert.equal("Missing required parameter: pattern", select(2, call("grep_files", {})))
    assert.equal("Missing required parameter: content", select(2, call("write_file", { path = "x" })))
  end)

  it("paths: /workspace/x, x and /x are the same file; results say /workspace/...", function()
    for _, p in ipairs { "/workspace/a.txt", "a.txt", "/a.txt" } do
      local r = res("read_file", { path = p })
      assert.equal("/workspace/a.txt", r.path, p)
      assert.equal("1|one\n2|two\n3|foo\n4|foo", r.content, p)
    end
  end)

  it("read_file: N|line rows, 0-based offset, content_hash, line_cap envelope", function()
    local r = res("read_file", { path = "a.txt" })
    assert.equal(4, r.total_lines)
    assert.same({ start = 1, ["end"] = 4 }, r.lines_shown)
    assert.equal(16, r.size_bytes)
    assert.equal(H.sha256_of("one\ntwo\nfoo\nfoo\n"), r.content_hash)
    assert.is_false(r.truncated)
    assert.is_false(r.truncation.truncated)
    assert.is_nil(r.truncation.next_offset)
    assert.is_nil(r.truncation.resume_hint)
    r = res("read_file", { path = "a.txt", offset = 1, limit = 2 })
    assert.equal("2|two\n3|foo", r.content)
    assert.is_true(r.truncated)
    assert.equal("line_cap", r.truncation.reason)
    assert.equal(3, r.truncation.next_offset)
    assert.equal("call read_file with offset=3 to resume from line 4", r.truncation.resume_hint)
    assert.equal("limit must be greater than 0", select(2, call("read_file", { path = "a.txt", limit = 0 })))
    local text = call("read_file", { path = "a.txt" })
    assert.same(r.path, json.decode(text).path)
  end)

  it("read_file: content-type defaults (text, .log tail, .csv header, .min.js, binary)", function()
    local rows = {}
    for i = 1, 2500 do rows[i] = "r" .. i end
    H.write(dir, "big.txt", table.concat(rows, "\n") .. "\n")
    H.write(dir, "app.log", table.concat(rows, "\n") .. "\n")
    H.write(dir, "t.csv", "h1,h2\n" .. table.concat(rows, "\n", 1, 300) .. "\n")
    H.write(dir, "x.min.js", table.concat(rows, "\n", 1, 50) .. "\n")
    H.write(dir, "z.zip", "PK\3\4\0\0")
    local r = res("read_file", { path = "big.txt" })
    assert.same({ start = 1, ["end"] = 2000 }, r.lines_shown)
    assert.equal(2000, r.truncation.next_offset)
    r = res("read_file", { path = "app.log" })
    assert.equal("tail", r.read_mode)
    assert.same({ start = 2001, ["end"] = 2500 }, r.lines_shown)
    assert.matches("^2001|r2001\n", r.content)
    assert.is_false(r.truncated)
    r = res("read_file", { path = "app.log", offset = 0, limit = 3 })
    assert.is_nil(r.read_mode)
    assert.equal("1|r1\n2|r2\n3|r3", r.content)
    r = res("read_file", { path = "t.csv" })
    assert.same({ start = 1, ["end"] = 100 }, r.lines_shown)
    r = res("read_file", { path = "t.csv", offset = 100, limit = 2 })
    assert.equal("1|h1,h2\n101|r100\n102|r101", r.content)
    r = res("read_file", { path = "x.min.js" })
    assert.same({ start = 1, ["end"] = 20 }, r.lines_shown)
    r = res("read_file", { path = "z.zip" })
    assert.is_nil(r.content)
    assert.equal(6, r.size_bytes)
    assert.equal(H.sha256_of("PK\3\4\0\0"), r.content_hash)
  end)

  it("read_file: the 50 KiB hard cap, UTF-8-safe, without resume fields", function()
    local wide = {}
    for i = 1, 2000 do wide[i] = ("é"):rep(30) end
    H.write(dir, "wide.txt", table.concat(wide, "\n") .. "\n")
    local r = res("read_file", { path = "wide.txt" })
    assert.is_true(r.truncated)
    assert.equal("size_cap", r.truncation.reason)
    assert.is_nil(r.truncation.next_offset)
    assert.is_nil(r.truncation.resume_hint)
    assert.truthy(#r.content <= 50 * 1024)
    assert.truthy(utf8.len(r.content))
  end)

  it("write_file: {path, size_bytes, created, content_hash}; base64", function()
    local r = res("write_file", { path = "/out/n.txt", content = "hi\n" })
    assert.same({ path = "/workspace/out/n.txt", size_bytes = 3, created = true,
      content_hash = H.sha256_of("hi\n") }, r)
    assert.equal("hi\n", H.read(dir, "out/n.txt"))
    r = res("write_file", { path = "out/n.txt", content = "AAE=", encoding = "base64" })
    assert.is_false(r.created)
    assert.equal("\0\1", H.read(dir, "out/n.txt"))
    assert.equal(H.sha256_of("\0\1"), r.content_hash)
    local bad, msg, code = call("write_file", { path = "out/n.txt", content = "AAE=AAE=", encoding = "base64" })
    assert.is_nil(bad)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("invalid base64 at offset 4", msg, 1, true)
    assert.equal("\0\1", H.read(dir, "out/n.txt"))
  end)

  it("edit_file: expected_hash compare-and-set, batch edits, unified diff", function()
    local h = res("read_file", { path = "a.txt" }).content_hash
    local _, msg = call("edit_file", { path = "a.txt", edits = { { old_text = "one", new_text = "1" } } })
    assert.equal("Missing required parameter: expected_hash", msg)
    local r = res("edit_file", { path = "a.txt", expected_hash = h,
      edits = { { old_text = "one", new_text = "1" }, { old_text = "two", new_text = "2" } } })
    assert.equal("1\n2\nfoo\nfoo\n", H.read(dir, "a.txt"))
    assert.equal(2, r.applied_edits)
    assert.equal(1, r.first_changed_line)
    assert.equal(h, r.previous_content_hash)
    assert.equal(H.sha256_of("1\n2\nfoo\nfoo\n"), r.content_hash)
    assert.equal(12, r.size_bytes)
    assert.is_false(r.diff_truncated)
    assert.matches("^%-%-%- /workspace/a.txt %(before%)\n%+%+%+ /workspace/a.txt %(after%)\n@@ ", r.diff)
    assert.matches("\n%-one\n%+1\n%-two\n%+2\n", r.diff)
    -- the old hash is stale now: nothing is written
    local _, m2, code = call("edit_file", { path = "a.txt", expected_hash = h, old_text = "foo", new_text = "x" })
    assert.equal(("File '/workspace/a.txt' changed since the last read. Expected %s, found %s. Read the file again before editing.")
      :format(h, r.content_hash), m2)
    assert.equal("HASH_MISMATCH", code)
    assert.equal("1\n2\nfoo\nfoo\n", H.read(dir, "a.txt"))
    -- legacy pair, identical duplicates dropped
    r = res("edit_file", { path = "a.txt", expected_hash = r.content_hash, old_text = "1\n2", new_text = "12",
      edits = { { old_text = "1\n2", new_text = "12" } } })
    assert.equal(1, r.applied_edits)
    assert.equal("12\nfoo\nfoo\n", H.read(dir, "a.txt"))
  end)

  it("edit_file: error strings", function()
    local h = res("read_file", { path = "a.txt" }).content_hash
    local function err(args)
      args.path = args.path or "a.txt"
      args.expected_hash = args.expected_hash or h
      return select(2, call("edit_file", args))
    end
    assert.equal("Could not find an exact match for old_text: 'zz\\nyy'", err { old_text = "zz\nyy", new_text = "x" })
    assert.equal("old_text is ambiguous and matched multiple locations: 'foo'", err { old_text = "foo", new_text = "x" })
    local long = ("q"):rep(100)
    assert.equal("Could not find an exact match for old_text: '" .. ("q"):rep(80) .. "...'", err { old_text = long, new_text = "x" })
    assert.equal("Edits overlap in the target file",
      err { edits = { { old_text = "one\ntwo", new_text = "x" }, { old_text = "two\nfoo", new_text = "y" } } })
    assert.equal("Edit 1 is missing new_text", err { edits = { { old_text = "one" } } })
    assert.equal("Edit 2 is missing old_text", err { edits = { { old_text = "one", new_text = "1" }, { new_text = "x" } } })
    assert.equal("Edit 1 has an empty old_text", err { edits = { { old_text = "", new_text = "x" } } })
    assert.equal("edit_file requires a non-empty edits[] array; each entry needs old_text and new_text", err {})
    assert.equal("File not found: /workspace/nope.txt", err { path = "nope.txt", old_text = "a", new_text = "b" })
    assert.equal("Path '/workspace/src' is a directory, not a file. Use list_directory instead.",
      err { path = "src", old_text = "a", new_text = "b" })
    H.write(dir, "bin.dat", "a\0b")
    local bh = H.sha256_of("a\0b")
    assert.equal("File '/workspace/bin.dat' is not a text file. edit_file only supports text files; use write_file for binary/base64 content.",
      err { path = "bin.dat", expected_hash = bh, old_text = "a", new_text = "b" })
    assert.equal("one\ntwo\nfoo\nfoo\n", H.read(dir, "a.txt"))
  end)

  it("edit_file: keeps CRLF and BOM", function()
    H.write(dir, "w.txt", "\239\187\191a\r\nb\r\n")
    local h = res("read_file", { path = "w.txt" }).content_hash
    res("edit_file", { path = "w.txt", expected_hash = h, old_text = "a\nb", new_text = "A\nB" })
    assert.equal("\239\187\191A\r\nB\r\n", H.read(dir, "w.txt"))
  end)

  it("list_directory: entries, paging and the item_cap envelope", function()
    local r = res("list_directory", {})
    assert.equal("/workspace", r.path)
    assert.equal(3, r.total_count)
    assert.same({ name = ".env", path = "/workspace/.env", is_directory = false, size_bytes = 4, is_readonly = false },
      r.entries[1])
    assert.is_true(r.entries[3].is_directory)
    r = res("list_directory", { path = "/", offset = 1, limit = 1 })
    assert.equal(1, r.count)
    assert.equal("a.txt", r.entries[1].name)
    assert.equal("item_cap", r.truncation.reason)
    assert.equal(2, r.truncation.next_offset)
    assert.equal("call list_directory with offset=2 to resume from item 3", r.truncation.resume_hint)
    assert.equal(1000, res("list_directory", { limit = 5000 }).limit)
    assert.equal("limit must be greater than 0", select(2, call("list_directory", { limit = 0 })))
  end)

  it("grep_files: sorted matches, path_pattern, paging, invalid regex", function()
    H.write(dir, "b.txt", "foo bar\n")
    local r = res("grep_files", { pattern = "fo+" })
    assert.equal(3, r.total_matches)
    assert.same({ path = "/workspace/a.txt", line_number = 3, line = "foo" }, r.matches[1])
    assert.equal("/workspace/b.txt", r.matches[3].path)
    r = res("grep_files", { pattern = "fo+", limit = 1, offset = 1 })
    assert.equal(1, r.match_count)
    assert.equal(4, r.matches[1].line_number)
    assert.equal("call grep_files with offset=2 to resume from match 3", r.truncation.resume_hint)
    assert.equal("line_cap", r.truncation.reason)
    r = res("grep_files", { pattern = "package", path_pattern = "*.go" })
    assert.equal("/workspace/src/main.go", r.matches[1].path)
    assert.matches("^Invalid regex pattern: ", select(2, call("grep_files", { pattern = "(" })))
  end)

  it("delete_file and stat_file", function()
    local r = res("stat_file", { path = "a.txt" })
    assert.equal("/workspace/a.txt", r.path)
    assert.equal("a.txt", r.name)
    assert.is_true(r.exists)
    assert.is_false(r.is_directory)
    assert.equal(16, r.size_bytes)
    assert.matches("^%d+%-%d+%-%d+T", r.updated_at)
    assert.same({ path = "/workspace/gone", exists = false }, res("stat_file", { path = "gone" }))
    assert.same({ path = "/workspace/a.txt", deleted = true }, res("delete_file", { path = "a.txt" }))
    assert.is_false(H.exists(dir, "a.txt"))
    assert.equal("File not found: /workspace/a.txt", select(2, call("delete_file", { path = "a.txt" })))
    assert.is_nil(call("delete_file", { path = "src" }))
    assert.same({ path = "/workspace/src", deleted = true }, res("delete_file", { path = "src", recursive = true }))
    assert.is_false(H.exists(dir, "src"))
  end)

  it("a read-only mount: Cannot modify readonly file", function()
    local w = U.open(dir, "everruns", { roots = { { path = dir, mount = "/workspace", mode = "ro" } } })
    local _, msg, code = U.text(w, "write_file", { path = "a.txt", content = "x" })
    assert.equal("Cannot modify readonly file: /workspace/a.txt", msg)
    assert.equal("READ_ONLY_ROOT", code)
    assert.is_true(select(2, U.text(w, "list_directory", {})).entries[2].is_readonly)
    assert.equal("one\ntwo\nfoo\nfoo\n", H.read(dir, "a.txt"))
  end)

  it("MCP round trip", function()
    local r = U.mcp(dir, "everruns", {
      { method = "tools/list" },
      { "read_file", { path = "a.txt", limit = 1 } },
      { "edit_file", { path = "a.txt", expected_hash = "sha256:" .. ("0"):rep(64), old_text = "one", new_text = "1" } },
    })
    assert.equal(7, #r[2].result.tools)
    local read = r[3].result
    assert.is_falsy(read.isError)
    assert.equal("1|one", json.decode(read.content[1].text).content)
    assert.equal(H.sha256_of("one\ntwo\nfoo\nfoo\n"), read.structuredContent.content_hash)
    assert.is_true(r[4].result.isError)
    assert.matches("^File '.*a%.txt' changed since the last read%. Expected sha256:0+, found sha256:%x+%. Read the file again before editing%.$",
      r[4].result.content[1].text)
    assert.equal("HASH_MISMATCH", r[4].result._meta["burrow/code"])
    assert.equal("one\ntwo\nfoo\nfoo\n", H.read(dir, "a.txt"))
  end)
end)

describe(H.tag("pack everruns: security cases through the pack's tool names"), function()
  local B, ws
  before_each(function()
    B = H.tmpdir()
    H.write_all(B, { ["outside/secret.txt"] = "TOPSECRET", ["ws/file.txt"] = "ok\n" })
    H.symlink(B .. "/outside/secret.txt", B, "ws/esc_file")
    H.symlink("/", B, "ws/esc_dir")
    H.symlink("../outside", B, "ws/esc_updir")
    ws = U.open(B .. "/ws", "everruns", { mount = "/workspace" })
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

  it("no tool reaches outside the workspace", function()
    local hash = H.sha256_of("TOPSECRET")
    refused("read_file", { path = "../outside/secret.txt" })
    refused("read_file", { path = "/workspace/../outside/secret.txt" })
    refused("read_file", { path = "esc_file" })
    refused("read_file", { path = "/esc_dir/etc/passwd" })
    refused("list_directory", { path = "esc_updir" })
    refused("grep_files", { pattern = "TOP", path = "esc_updir" })
    refused("write_file", { path = "esc_updir/new.txt", content = "x" })
    refused("edit_file", { path = "esc_file", expected_hash = hash, old_text = "TOPSECRET", new_text = "x" })
    refused("delete_file", { path = "esc_updir/secret.txt" })
    refused("stat_file", { path = "esc_dir/etc" })
    assert.equal("TOPSECRET", H.read(B, "outside/secret.txt"))
    assert.is_false(H.exists(B, "outside/new.txt"))
    -- /etc/passwd means /workspace/etc/passwd: not there
    assert.equal("File not found: /workspace/etc/passwd", select(2, ws:call("read_file", { path = "/etc/passwd" })))
    -- grep of the workspace does not follow the links out
    local r = ws:call("grep_files", { pattern = "TOPSECRET" })
    assert.equal(0, r.total_matches)
  end)
end)
