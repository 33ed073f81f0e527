-- The text_editor pack against ../shared/reference/tool-conventions.md §3:
-- str_replace_based_edit_tool (20250728) and str_replace_editor (20250124,
-- undo_edit); schema, the reference's texts and error strings, the
-- <response clipped> marker, an MCP round trip and security cases.

local H = require "helpers"
local U = require "packs.util"
local json = H.json

local T = "str_replace_based_edit_tool"

describe(H.tag("pack text_editor"), function()
  local dir, ws, M
  local function call(args, w) return U.text(w or ws, w and "str_replace_editor" or T, args) end

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, {
      ["a.txt"] = "one\ntwo\nfoo\nfoo\n",
      ["tab.txt"] = "a\tb\n",
      ["sub/deep/deeper/x"] = "x",
      ["sub/y.txt"] = "y",
      [".hidden/h"] = "h",
    })
    ws = U.open(dir, "text_editor")
    M = ws:mounts()[1].mount
  end)
  after_each(H.cleanup)

  it("schema: one tool per version, the reference's properties", function()
    local t = ws:tools()
    assert.equal(1, #t)
    assert.equal(T, t[1].name)
    assert.same({ "command", "path" }, t[1].inputSchema.required)
    for _, k in ipairs { "file_text", "view_range", "old_str", "new_str", "insert_line", "insert_text" } do
      assert.truthy(t[1].inputSchema.properties[k], k)
    end
    local old = U.open(dir, { name = "text_editor", version = "20250124" })
    assert.equal("str_replace_editor", old:tools()[1].name)
    assert.matches("undo_edit", old:tools()[1].description, 1, true)
  end)

  it("view: cat -n with the header and a trailing newline; ranges", function()
    assert.equal(("Here's the result of running `cat -n` on %s/a.txt:\n     1\tone\n     2\ttwo\n     3\tfoo\n     4\tfoo\n     5\t\n"):format(M),
      call { command = "view", path = M .. "/a.txt" })
    assert.equal(("Here's the result of running `cat -n` on %s/a.txt:\n     2\ttwo\n     3\tfoo\n"):format(M),
      call { command = "view", path = M .. "/a.txt", view_range = { 2, 3 } })
    assert.matches("     4\tfoo\n     5\t\n$", (call { command = "view", path = M .. "/a.txt", view_range = { 3, -1 } }))
    assert.matches("     1\ta       b\n", (call { command = "view", path = M .. "/tab.txt" }), 1, true)
  end)

  it("view_range errors", function()
    local p = M .. "/a.txt"
    local function e(vr) return select(2, call { command = "view", path = p, view_range = vr }) end
    assert.equal("Invalid `view_range`. It should be a list of two integers.", e { 1 })
    assert.equal("Invalid `view_range`: [0, 1]. Its first element `0` should be within the range of lines of the file: [1, 5]", e { 0, 1 })
    assert.equal("Invalid `view_range`: [1, 9]. Its second element `9` should be smaller than the number of lines in the file: `5`", e { 1, 9 })
    assert.equal("Invalid `view_range`: [3, 1]. Its second element `1` should be larger or equal than its first `3`", e { 3, 1 })
    local _, msg = call { command = "view", path = M .. "/sub", view_range = { 1, 2 } }
    assert.equal("The `view_range` parameter is not allowed when `path` points to a directory.", msg)
  end)

  it("view of a directory: 2 levels, hidden left out", function()
    assert.equal(("Here's the files and directories up to 2 levels deep in %s, excluding hidden items:\n%s\n%s/a.txt\n%s/sub\n%s/sub/deep\n%s/sub/y.txt\n%s/tab.txt\n")
      :format(M, M, M, M, M, M, M), call { command = "view", path = M })
  end)

  it("clips long files at 16000 characters, or max_characters", function()
    H.write(dir, "big.txt", ("x"):rep(20000))
    local t = call { command = "view", path = M .. "/big.txt" }
    assert.matches("\n     1\t" .. ("x"):rep(16000) .. "<response clipped><NOTE>To save on context only part of this file has been shown to you.", t, 1, true)
    local c = U.open(dir, { name = "text_editor", max_characters = 10 })
    assert.equal(("Here's the result of running `cat -n` on %s/a.txt:\n     1\tone\n     2\ttwo\n     3\tfo<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>\n"):format(M),
      U.text(c, T, { command = "view", path = M .. "/a.txt" }))
  end)

  it("path errors", function()
    local _, msg, code = call { command = "view", path = "a.txt" }
    assert.equal(("The path a.txt is not an absolute path, it should start with `/`. Maybe you meant %s/a.txt?"):format(M == "/" and "" or M), msg)
    _, msg, code = call { command = "view", path = M .. "/nope" }
    assert.equal(("The path %s/nope does not exist. Please provide a valid path."):format(M), msg)
    assert.equal("ENOENT", code)
    _, msg = call { command = "str_replace", path = M .. "/sub", old_str = "a" }
    assert.equal(("The path %s/sub is a directory and only the `view` command can be used on directories"):format(M), msg)
    _, msg = call { command = "undo_edit", path = M .. "/a.txt" }
    assert.equal("Unrecognized command undo_edit. The allowed commands for the str_replace_based_edit_tool tool are: view, create, str_replace, insert", msg)
  end)

  it("create", function()
    assert.equal(("File created successfully at: %s/n/new.txt"):format(M), call { command = "create", path = M .. "/n/new.txt", file_text = "hi\n" })
    assert.equal("hi\n", H.read(dir, "n/new.txt"))
    local _, msg, code = call { command = "create", path = M .. "/a.txt", file_text = "x" }
    assert.equal(("File already exists at: %s/a.txt. Cannot overwrite files using command `create`."):format(M), msg)
    assert.equal("EEXIST", code)
    _, msg = call { command = "create", path = M .. "/m.txt" }
    assert.equal("Parameter `file_text` is required for command: create", msg)
  end)

  it("str_replace: snippet of ±4 lines; not found, multiple, missing old_str", function()
    H.write(dir, "s.txt", "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n")
    local p = M .. "/s.txt"
    assert.equal(("The file %s has been edited. Here's the result of running `cat -n` on a snippet of %s:\n     2\t2\n     3\t3\n     4\t4\n     5\t5\n     6\tSIX\n     7\t7\n     8\t8\n     9\t9\n    10\t10\n    11\t\nReview the changes and make sure they are as expected. Edit the file again if necessary.")
      :format(p, p), call { command = "str_replace", path = p, old_str = "6\n", new_str = "SIX\n" })
    local _, msg, code = call { command = "str_replace", path = M .. "/a.txt", old_str = "zz", new_str = "x" }
    assert.equal(("No replacement was performed, old_str `zz` did not appear verbatim in %s/a.txt."):format(M), msg)
    assert.equal("NOT_FOUND_TEXT", code)
    _, msg = call { command = "str_replace", path = M .. "/a.txt", old_str = "foo", new_str = "x" }
    assert.equal("No replacement was performed. Multiple occurrences of old_str `foo` in lines [3, 4]. Please ensure it is unique", msg)
    _, msg = call { command = "str_replace", path = M .. "/a.txt" }
    assert.equal("Parameter `old_str` is required for command: str_replace", msg)
    assert.truthy(call { command = "str_replace", path = M .. "/a.txt", old_str = "two\n" }) -- new_str omitted deletes
    assert.equal("one\nfoo\nfoo\n", H.read(dir, "a.txt"))
  end)

  it("insert: after insert_line, new_str or insert_text; range errors", function()
    local p = M .. "/a.txt"
    assert.equal(("The file %s has been edited. Here's the result of running `cat -n` on a snippet of the edited file:\n     1\tone\n     2\tNEW\n     3\ttwo\n     4\tfoo\n     5\tfoo\n     6\t\nReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.")
      :format(p), call { command = "insert", path = p, insert_line = 1, insert_text = "NEW" })
    assert.truthy(call { command = "insert", path = p, insert_line = 0, new_str = "TOP" })
    assert.equal("TOP\none\nNEW\ntwo\nfoo\nfoo\n", H.read(dir, "a.txt"))
    local _, msg = call { command = "insert", path = p, insert_line = 99, new_str = "x" }
    assert.equal("Invalid `insert_line` parameter: 99. It should be within the range of lines of the file: [0, 7]", msg)
    _, msg = call { command = "insert", path = p, new_str = "x" }
    assert.equal("Parameter `insert_line` is required for command: insert", msg)
    _, msg = call { command = "insert", path = p, insert_line = 1 }
    assert.equal("Parameter `new_str` is required for command: insert", msg)
    assert.truthy(call { command = "insert", path = p, insert_line = 7, new_str = "END" })
    assert.equal("TOP\none\nNEW\ntwo\nfoo\nfoo\nEND\n", H.read(dir, "a.txt"))
  end)

  it("20250124: undo_edit pops edits and create, then says there is no history", function()
    local old = U.open(dir, { name = "text_editor", version = "20250124" })
    local p = M .. "/a.txt"
    assert.truthy(call({ command = "str_replace", path = p, old_str = "one", new_str = "1" }, old))
    assert.equal(("Last edit to %s undone successfully. Here's the result of running `cat -n` on %s:\n     1\tone\n     2\ttwo\n     3\tfoo\n     4\tfoo\n     5\t\n"):format(p, p),
      call({ command = "undo_edit", path = p }, old))
    local _, msg = call({ command = "undo_edit", path = p }, old)
    assert.equal(("No edit history found for %s."):format(p), msg)
    assert.truthy(call({ command = "create", path = M .. "/c.txt", file_text = "c" }, old))
    assert.truthy(call({ command = "undo_edit", path = M .. "/c.txt" }, old) or true)
  end)

  it("MCP round trip", function()
    local r = U.mcp(dir, "text_editor", {
      { method = "tools/list" },
      { T, { command = "view", path = M .. "/a.txt", view_range = { 1, 1 } } },
      { T, { command = "str_replace", path = M .. "/a.txt", old_str = "nope", new_str = "x" } },
    })
    assert.equal(T, r[2].result.tools[1].name)
    assert.equal(("Here's the result of running `cat -n` on %s/a.txt:\n     1\tone\n"):format(M), r[3].result.content[1].text)
    assert.is_true(r[4].result.isError)
    assert.equal("NOT_FOUND_TEXT", r[4].result._meta["burrow/code"])
  end)
end)

describe(H.tag("pack text_editor: security cases through the pack's tool name"), function()
  local B, ws, M
  before_each(function()
    B = H.tmpdir()
    H.write_all(B, { ["outside/secret.txt"] = "TOPSECRET", ["ws/file.txt"] = "ok\n" })
    H.symlink(B .. "/outside/secret.txt", B, "ws/esc_file")
    H.symlink("/", B, "ws/esc_dir")
    H.symlink("../outside", B, "ws/esc_updir")
    H.symlink("../outside/new.txt", B, "ws/dangling_out")
    ws = U.open(B .. "/ws", "text_editor")
    M = ws:mounts()[1].mount
  end)
  after_each(H.cleanup)

  local function refused(args)
    local res, msg, code = ws:call(T, args)
    assert.is_nil(res, json.encode(args))
    assert.truthy(({ OUTSIDE_ROOT = true, ELOOP = true, POLICY_DENIED = true, EEXIST = true })[code],
      ("%s: %s (%s)"):format(json.encode(args), tostring(code), msg))
    assert.not_matches("TOPSECRET", msg, 1, true)
  end

  it("no command reaches outside the root", function()
    for _, p in ipairs { "/../outside/secret.txt", "/esc_file", "/esc_dir/etc/passwd", "/esc_updir/secret.txt" } do
      refused { command = "view", path = M .. p }
      refused { command = "str_replace", path = M .. p, old_str = "TOPSECRET", new_str = "x" }
    end
    refused { command = "view", path = "/etc/passwd" }
    refused { command = "view", path = M .. "/esc_updir" }
    refused { command = "create", path = M .. "/dangling_out", file_text = "x" }
    refused { command = "create", path = M .. "/esc_updir/new.txt", file_text = "x" }
    refused { command = "insert", path = M .. "/esc_file", insert_line = 0, new_str = "x" }
    assert.equal("TOPSECRET", H.read(B, "outside/secret.txt"))
    assert.is_false(H.exists(B, "outside/new.txt"))
  end)
end)
