-- The gemini_cli pack: the Gemini CLI's seven file tools with their
-- parameter names and wording (read_file's truncation banner, replace's
-- occurrence counts, search_file_content's File:/L<n>: blocks, the
-- [DIR] listing, read_many_files' separators), errors from codes and
-- details, an MCP round trip and containment through the pack's names.

local H = require "helpers"
local U = require "packs.util"

describe(H.tag("pack gemini_cli"), function()
  local dir, ws
  local function call(name, args) return U.text(ws, name, args) end

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, { ["a.txt"] = "one\ntwo\nthree\n", ["src/m.py"] = "x = 1\ny = x\n", ["b.txt"] = "x x\n" })
    ws = U.open(dir, "gemini_cli")
  end)
  after_each(H.cleanup)

  it("schema: the seven tools, required checked by the pack in the CLI's words", function()
    local names = {}
    for i, t in ipairs(ws:tools()) do names[i] = t.name end
    assert.same({ "read_file", "write_file", "replace", "glob", "search_file_content", "list_directory", "read_many_files" }, names)
    assert.is_true(ws:tools()[1].annotations.readOnlyHint)
    assert.is_true(ws:tools()[3].annotations.destructiveHint)
    local _, msg, code = call("read_file", {})
    assert.equal("params must have required property 'file_path'", msg)
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("read_file: plain text; a page gets the truncation banner with a 0-based next offset", function()
    assert.equal("one\ntwo\nthree\n", call("read_file", { file_path = "a.txt" }))
    assert.equal("IMPORTANT: The file content has been truncated.\nStatus: Showing lines 2-2 of 3 total lines.\n"
      .. "Action: To read more of the file, you can use the 'offset' and 'limit' parameters in a subsequent "
      .. "'read_file' call. For example, to read the next section of the file, use offset: 2.\n\n"
      .. "--- FILE CONTENT (truncated) ---\ntwo\n", call("read_file", { file_path = "a.txt", offset = 1, limit = 1 }))
    local _, msg, code = call("read_file", { file_path = "nope.txt" })
    assert.equal("File not found: nope.txt", msg)
    assert.equal("ENOENT", code)
  end)

  it("write_file: created, then overwritten", function()
    assert.equal("Successfully created and wrote to new file: n/c.txt.", call("write_file", { file_path = "n/c.txt", content = "hi\n" }))
    assert.equal("Successfully overwrote file: n/c.txt.", call("write_file", { file_path = "n/c.txt", content = "ho\n" }))
    assert.equal("ho\n", H.read(dir, "n/c.txt"))
  end)

  it("replace: one occurrence by default, expected_replacements for more, counts from the details", function()
    local _, msg, code = call("replace", { file_path = "b.txt", old_string = "x", new_string = "y" })
    assert.equal("Failed to edit, expected 1 occurrence but found 2 for old_string in file: b.txt", msg)
    assert.equal("AMBIGUOUS_TEXT", code)
    _, msg = call("replace", { file_path = "b.txt", old_string = "x", new_string = "y", expected_replacements = 3 })
    assert.equal("Failed to edit, expected 3 occurrences but found 2 for old_string in file: b.txt", msg)
    assert.equal("x x\n", H.read(dir, "b.txt"))
    _, msg, code = call("replace", { file_path = "b.txt", old_string = "q", new_string = "y" })
    assert.matches("^Failed to edit, 0 occurrences found for old_string in b.txt%. No edits made%.", msg)
    assert.equal("NOT_FOUND_TEXT", code)
    assert.equal("Successfully modified file: b.txt (2 replacements).",
      call("replace", { file_path = "b.txt", old_string = "x", new_string = "y", expected_replacements = 2 }))
    assert.equal("y y\n", H.read(dir, "b.txt"))
    assert.equal("Successfully modified file: a.txt (1 replacements).",
      call("replace", { file_path = "a.txt", old_string = "two", new_string = "2" }))
  end)

  it("glob: newest first, or the no-match sentence", function()
    H.sh("touch -d '2001-01-01' " .. H.q(dir .. "/a.txt"))
    assert.equal('Found 2 file(s) matching "*.txt" within the workspace, sorted by modification time (newest first):\nb.txt\na.txt',
      call("glob", { pattern = "*.txt" }))
    assert.equal('No files found matching pattern "*.zz" within src', call("glob", { pattern = "*.zz", path = "src" }))
  end)

  it("search_file_content: File: blocks of L<n>: lines; no match names the path and the filter", function()
    assert.equal('Found 3 matches for pattern "x" in the workspace directory:\n---\nFile: b.txt\nL1: x x\n---\n'
      .. "File: src/m.py\nL1: x = 1\nL2: y = x\n---", call("search_file_content", { pattern = "x" }))
    assert.equal('No matches found for pattern "zzz" in path "src" (filter: "*.py").',
      call("search_file_content", { pattern = "zzz", path = "src", include = "*.py" }))
    local _, msg, code = call("search_file_content", { pattern = "(" })
    assert.equal("INVALID_ARGUMENT", code)
    assert.truthy(msg:find("missing closing parenthesis", 1, true), msg)
  end)

  it("list_directory: [DIR] entries first, sizes, ignore globs through the core's matcher", function()
    assert.equal("Directory listing for .:\n[DIR] src\na.txt (14 bytes)\nb.txt (4 bytes)", call("list_directory", { path = "." }))
    assert.equal("Directory listing for .:\n[DIR] src", call("list_directory", { path = ".", ignore = { "*.txt" } }))
    H.mkdir(dir, "e")
    assert.equal("Directory e is empty.", call("list_directory", { path = "e" }))
    local _, _, code = call("list_directory", { path = ".", ignore = { ("a"):rep(5000) } })
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("read_many_files: each file once after its separator, excludes applied, the end marker", function()
    assert.equal("--- a.txt ---\n\none\ntwo\nthree\n\n\n--- src/m.py ---\n\nx = 1\ny = x\n\n\n\n--- End of content ---",
      call("read_many_files", { paths = { "a.txt", "src/*.py" }, include = { "a.txt" } }))
    assert.equal("No files matching the criteria were found or all were skipped.",
      call("read_many_files", { paths = { "*.txt" }, exclude = { "*.txt" } }))
  end)

  it("stays inside the roots through every path-taking tool", function()
    for _, c in ipairs { { "read_file", { file_path = "../x" } }, { "write_file", { file_path = "../x", content = "" } },
      { "replace", { file_path = "../x", old_string = "a", new_string = "b" } }, { "list_directory", { path = ".." } },
      { "glob", { pattern = "*", path = ".." } }, { "search_file_content", { pattern = "x", path = ".." } } } do
      local r, _, code = call(c[1], c[2])
      assert.is_nil(r, c[1])
      assert.equal("OUTSIDE_ROOT", code, c[1])
    end
    assert.equal("No files matching the criteria were found or all were skipped.",
      call("read_many_files", { paths = { "../*" } }))
  end)

  it("over MCP: text content, errors with isError and the burrow code", function()
    local out = U.mcp(dir, "gemini_cli", { { "read_file", { file_path = "a.txt" } }, { "read_file", { file_path = "zz" } } })
    assert.equal("one\ntwo\nthree\n", out[2].result.content[1].text)
    assert.is_true(out[3].result.isError)
    assert.equal("File not found: zz", out[3].result.content[1].text)
    assert.equal("ENOENT", out[3].result._meta["burrow/code"])
  end)
end)
