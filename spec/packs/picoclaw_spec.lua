-- The picoclaw pack against ../shared/reference/tool-conventions.md §8:
-- schema, read_file's plain / byte / `N|line` shapes and their markers,
-- DIR:/FILE: listings, append_file, the error strings, an MCP round trip
-- and security cases through the pack's tool names.

local H = require "helpers"
local U = require "packs.util"
local json = H.json

describe(H.tag("pack picoclaw"), function()
  local dir, ws
  local function call(name, args) return U.text(ws, name, args) end

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, { ["a.txt"] = "one\ntwo\nfoo\nfoo\n", ["src/main.go"] = "package main\n", ["src/utils/u.go"] = "u",
      [".env"] = "X=1\n" })
    ws = U.open(dir, "picoclaw")
  end)
  after_each(H.cleanup)

  it("schema: the five tools, no registry-level required (the handler says it)", function()
    local names = {}
    for _, t in ipairs(ws:tools()) do names[#names + 1] = t.name end
    assert.same({ "read_file", "write_file", "list_dir", "edit_file", "append_file" }, names)
    for _, t in ipairs(ws:tools()) do
      assert.is_nil(t.inputSchema.required, t.name)
      assert.truthy(t.annotations, t.name)
    end
    assert.matches("\\n for newline", ws:tools()[2].description, 1, true)
    local _, msg, code = call("read_file", {})
    assert.equal("path is required", msg)
    assert.equal("INVALID_ARGUMENT", code)
    assert.equal("content is required", select(2, call("write_file", { path = "x" })))
    assert.equal("old_text is required", select(2, call("edit_file", { path = "a.txt", new_text = "x" })))
    assert.equal("new_text is required", select(2, call("edit_file", { path = "a.txt", old_text = "x" })))
  end)

  it("read_file plain: the content, relative or absolute", function()
    assert.equal("one\ntwo\nfoo\nfoo\n", call("read_file", { path = "a.txt" }))
    assert.equal("one\ntwo\nfoo\nfoo\n", call("read_file", { path = ws:mounts()[1].mount .. "/a.txt" }))
  end)

  it("read_file line mode: N|line rows, header and markers", function()
    assert.equal("[file: a.txt | read: lines 2-3 (1-indexed) | file_bytes: 16 | output_bytes: 12]\n"
      .. "[PARTIAL - more content remains. Call read_file again with start_line=4 and max_lines=2 to continue.]\n\n"
      .. "2|two\n3|foo\n", call("read_file", { path = "a.txt", start_line = 2, max_lines = 2 }))
    assert.equal("[file: a.txt | read: lines 3-4 (1-indexed) | file_bytes: 16 | output_bytes: 12]\n"
      .. "[END OF FILE - no further content.]\n\n3|foo\n4|foo\n", call("read_file", { path = "a.txt", start_line = 3 }))
    assert.equal("[END OF FILE - no content at or after start_line=9]", call("read_file", { path = "a.txt", start_line = 9 }))
    assert.equal("offset is not supported in line mode; use start_line",
      select(2, call("read_file", { path = "a.txt", start_line = 1, offset = 2 })))
    H.write(dir, "bin", "\0\1\2")
    assert.equal("file appears to be binary; switch read_file mode to 'bytes' for byte-based inspection",
      select(2, call("read_file", { path = "bin", start_line = 1 })))
  end)

  it("read_file line mode: the 64 KiB budget", function()
    local rows = {}
    for i = 1, 10000 do rows[i] = ("line %05d"):format(i) end
    H.write(dir, "big.txt", table.concat(rows, "\n") .. "\n")
    local t = call("read_file", { path = "big.txt", start_line = 1 })
    local last = tonumber(t:match("lines 1%-(%d+)"))
    assert.matches(("[TRUNCATED - byte budget reached. Call read_file again with start_line=%d and max_lines=%d to continue at the next line.]")
      :format(last + 1, 10000 - last), t, 1, true)
    assert.truthy(#t < 64 * 1024 + 300)
    H.write(dir, "long.txt", ("x"):rep(70000) .. "\n")
    assert.matches("[TRUNCATED - line 1 exceeded the 65536 byte read budget and was cut mid-line.]",
      call("read_file", { path = "long.txt", start_line = 1 }), 1, true)
  end)

  it("read_file byte mode: header, markers; plain over 64 KiB pages like it", function()
    assert.equal("[file: a.txt | total: 16 bytes | read: bytes 4-6]\n"
      .. "[TRUNCATED - file has more content. Call read_file again with offset=7 to continue.]\n\ntwo",
      call("read_file", { path = "a.txt", offset = 4, length = 3 }))
    assert.equal("[file: a.txt | total: 16 bytes | read: bytes 12-15]\n[END OF FILE - no further content.]\n\nfoo\n",
      call("read_file", { path = "a.txt", offset = 12 }))
    assert.equal("[END OF FILE - no content at this offset]", call("read_file", { path = "a.txt", offset = 16 }))
    H.write(dir, "big.bin", ("y"):rep(70000))
    local t = call("read_file", { path = "big.bin" })
    assert.equal("[file: big.bin | total: 70000 bytes | read: bytes 0-65535]\n"
      .. "[TRUNCATED - file has more content. Call read_file again with offset=65536 to continue.]\n\n" .. ("y"):rep(65536), t)
  end)

  it("list_dir: DIR:  / FILE: lines sorted by name, empty path is .", function()
    assert.equal("FILE: .env\nFILE: a.txt\nDIR:  src\n", call("list_dir", { path = "" }))
    assert.equal("FILE: main.go\nDIR:  utils\n", call("list_dir", { path = "src" }))
    assert.equal("failed to read directory: file not found", select(2, call("list_dir", { path = "nope" })))
  end)

  it("write_file, append_file, edit_file: texts and edit errors", function()
    assert.equal("File written: out/r.txt", call("write_file", { path = "out/r.txt", content = "A" }))
    assert.equal("Appended to out/r.txt", call("append_file", { path = "out/r.txt", content = "B" }))
    assert.equal("Appended to new.log", call("append_file", { path = "new.log", content = "x" }))
    assert.equal("AB", H.read(dir, "out/r.txt"))
    assert.equal("x", H.read(dir, "new.log"))
    assert.equal("File edited: a.txt", call("edit_file", { path = "a.txt", old_text = "two", new_text = "2" }))
    assert.equal("one\n2\nfoo\nfoo\n", H.read(dir, "a.txt"))
    local _, msg, code = call("edit_file", { path = "a.txt", old_text = "zz", new_text = "x" })
    assert.equal("old_text not found in file. Make sure it matches exactly", msg)
    assert.equal("NOT_FOUND_TEXT", code)
    _, msg, code = call("edit_file", { path = "a.txt", old_text = "foo", new_text = "x" })
    assert.equal("old_text appears 2 times. Please provide more context to make it unique", msg)
    assert.equal("AMBIGUOUS_TEXT", code)
    _, msg, code = call("read_file", { path = "nope" })
    assert.equal("failed to read file: file not found", msg)
    assert.equal("ENOENT", code)
  end)

  it("require_overwrite: upstream's overwrite flag", function()
    local w = U.open(dir, { name = "picoclaw", require_overwrite = true })
    local _, msg, code = U.text(w, "write_file", { path = "a.txt", content = "x" })
    assert.equal("file: a.txt already exists. Set overwrite=true to replace.", msg)
    assert.truthy(code == "EEXIST" or code == "HASH_MISMATCH")
    assert.equal("File written: a.txt", U.text(w, "write_file", { path = "a.txt", content = "x", overwrite = true }))
    assert.equal("x", H.read(dir, "a.txt"))
  end)

  it("MCP round trip", function()
    local r = U.mcp(dir, "picoclaw", {
      { method = "tools/list" },
      { "read_file", { path = "a.txt", start_line = 1, max_lines = 1 } },
      { "edit_file", { path = "a.txt", old_text = "nope", new_text = "x" } },
    })
    assert.equal(5, #r[2].result.tools)
    assert.matches("\n\n1|one\n$", r[3].result.content[1].text)
    assert.is_true(r[4].result.isError)
    assert.equal("old_text not found in file. Make sure it matches exactly", r[4].result.content[1].text)
    assert.equal("NOT_FOUND_TEXT", r[4].result._meta["burrow/code"])
  end)
end)

describe(H.tag("pack picoclaw: security cases through the pack's tool names"), function()
  local B, ws
  before_each(function()
    B = H.tmpdir()
    H.write_all(B, { ["outside/secret.txt"] = "TOPSECRET", ["ws/file.txt"] = "ok\n" })
    H.symlink(B .. "/outside/secret.txt", B, "ws/esc_file")
    H.symlink("/", B, "ws/esc_dir")
    H.symlink("../outside", B, "ws/esc_updir")
    ws = U.open(B .. "/ws", "picoclaw")
  end)
  after_each(H.cleanup)

  local function refused(name, args, want)
    local res, msg, code = ws:call(name, args)
    assert.is_nil(res, json.encode(args))
    assert.truthy(({ OUTSIDE_ROOT = true, ELOOP = true, POLICY_DENIED = true })[code],
      ("%s: %s (%s)"):format(json.encode(args), tostring(code), msg))
    assert.not_matches("TOPSECRET", msg, 1, true)
    if want then assert.equal(want, msg) end
  end

  it("no tool reaches outside the workspace", function()
    local sym = "access denied: symlink resolves outside workspace"
    local out = "access denied: path is outside the workspace"
    refused("read_file", { path = "../outside/secret.txt" }, out)
    refused("read_file", { path = "/etc/passwd" }, out)
    refused("read_file", { path = "esc_file" }, sym)
    refused("read_file", { path = "esc_dir/etc/passwd", start_line = 1 }, sym)
    refused("list_dir", { path = "esc_updir" }, sym)
    refused("write_file", { path = "esc_updir/new.txt", content = "x" })
    refused("append_file", { path = "esc_file", content = "x" })
    refused("edit_file", { path = "esc_file", old_text = "TOPSECRET", new_text = "x" })
    assert.equal("TOPSECRET", H.read(B, "outside/secret.txt"))
    assert.is_false(H.exists(B, "outside/new.txt"))
  end)
end)
