-- read_file as a pack gets it (ctx:call): the page's lines as data
-- (`lines`, from start_line, without numbers or newlines) with the paging,
-- cuts and caps of the numbered text, so no pack parses that text;
-- P.page_text writes them as text or rows, and a pack that shows them puts
-- them inside the untrusted-content boundary once.

local H = require "helpers"
local U = require "packs.util"
local P = require "burrow.pack"

-- A native read as a pack tool's ctx:call makes it (via: the pack tool).
local function via(ws, args) return ws:call_native("read_file", args, nil, "a_pack_tool") end

local LATIN1 = "Der B\228r l\228uft \252ber die Stra\223e.\nGr\252\223e aus M\252nchen.\n"

local LONG = {}
for i = 1, 60 do LONG[i] = ("line %d %s"):format(i, ("w"):rep(i % 13)) end
LONG = table.concat(LONG, "\n") .. "\n"

local FILES = {
  ["a.txt"] = "\239\187\191one\ttwo\r\n\tthree\r\nlast",
  ["cut.txt"] = "abcdefghij\ncaf\195\169 cr\195\168me\nok\n",
  ["long.txt"] = LONG,
  ["wide.txt"] = ("x"):rep(500) .. "\nnext\n",
  ["l1.txt"] = LATIN1,
  ["empty.txt"] = "",
}

describe(H.tag("read_file for packs"), function()
  after_each(H.cleanup)

  it("gives the lines as data: tabs kept, the CR of CRLF and the BOM left out, no content", function()
    local ws = H.workspace(FILES)
    local r = assert(via(ws, { path = "a.txt" }))
    assert.same({ "one\ttwo", "\tthree", "last" }, r.lines)
    assert.is_nil(r.content)
    assert.equal("text", r.encoding)
    assert.same({ 1, 3, 3, "crlf", true, 0 }, { r.start_line, r.end_line, r.total_lines, r.newline, r.bom, r.cut_lines })
    assert.is_nil(r.next_offset)
    -- the agent's own call is unchanged: numbered text, no lines
    local n = assert(ws:call("read_file", { path = "a.txt" }))
    assert.equal("1\tone\ttwo\n2\t\tthree\n3\tlast\n", n.content)
    assert.is_nil(n.lines)
    assert.is_nil(n.cut_lines)
  end)

  it("cuts a line at max_line_chars characters with the marker the numbered text has, and counts it", function()
    local ws = H.workspace(FILES, { max_line_chars = 5 })
    local r = assert(via(ws, { path = "cut.txt" }))
    assert.same({ "abcde [... line truncated: 5 of 10 bytes shown]",
      "caf\195\169  [... line truncated: 6 of 12 bytes shown]", "ok" }, r.lines)
    assert.equal(2, r.cut_lines)
  end)

  it("decodes a Latin-1 file and gives its lines as UTF-8", function()
    local ws = H.workspace(FILES)
    local r = assert(via(ws, { path = "l1.txt" }))
    assert.truthy(r.charset ~= "utf-8", r.charset)
    assert.same({ "Der B\195\164r l\195\164uft \195\188ber die Stra\195\159e.", "Gr\195\188\195\159e aus M\195\188nchen." }, r.lines)
    assert.same({ 1, 2, 2, "lf" }, { r.start_line, r.end_line, r.total_lines, r.newline })
    local p = assert(via(ws, { path = "l1.txt", offset = 2, limit = 1 }))
    assert.same({ "Gr\195\188\195\159e aus M\195\188nchen." }, p.lines)
    assert.equal(2, p.start_line)
  end)

  it("pages and stops at max_result_bytes exactly where the numbered text does", function()
    local cases = {
      { {}, { path = "long.txt", offset = 7, limit = 5 } },
      { {}, { path = "long.txt", offset = 58 } },
      { {}, { path = "long.txt", offset = 99 } },
      { {}, { path = "empty.txt" } },
      { { max_result_bytes = 200 }, { path = "long.txt" } },
      { { max_result_bytes = 200 }, { path = "long.txt", offset = 30, limit = 4 } },
      { { max_result_bytes = 120 }, { path = "wide.txt" } }, -- the first line alone is over the cap
      { { max_result_bytes = 120, max_line_chars = 40 }, { path = "wide.txt" } },
      { { max_result_bytes = 40 }, { path = "l1.txt" } },
      { { max_line_chars = 3 }, { path = "a.txt", offset = 2 } },
    }
    for i, c in ipairs(cases) do
      local ws = H.workspace(FILES, c[1])
      local r = assert(via(ws, c[2]))
      local n = assert(ws:call("read_file", c[2]))
      local what = ("case %d"):format(i)
      assert.equal(n.content, P.page_text(r, "%d\t%s"), what)
      for _, k in ipairs { "start_line", "end_line", "next_offset", "truncated", "total_lines", "newline", "charset" } do
        assert.equal(n[k], r[k], what .. ": " .. k)
      end
      assert.equal(#r.lines, r.start_line and r.end_line - r.start_line + 1 or 0, what)
    end
  end)

  it("leaves the untrusted-content boundary to the pack: the lines come untagged", function()
    local ws = H.workspace(FILES, { untrusted_boundary = true })
    local r = assert(via(ws, { path = "cut.txt" }))
    assert.same({ "abcdefghij", "caf\195\169 cr\195\168me", "ok" }, r.lines)
    assert.truthy(assert(ws:call("read_file", { path = "cut.txt" })).content:find("<workspace_tool_result", 1, true))
  end)

  it("P.page_text: the lines as text, or as rows of a format, the first count of them", function()
    local r = { lines = { "a", "\tb", "" }, start_line = 9 }
    assert.equal("a\n\tb\n\n", P.page_text(r))
    assert.equal("    9|a\n   10|\tb\n   11|\n", P.page_text(r, "%5d|%s"))
    assert.equal("9:a\n", P.page_text(r, "%d:%s", 1))
    assert.equal("", P.page_text(r, "%d:%s", 0))
    assert.equal("", P.page_text({ lines = {} }))
    assert.equal("", P.page_text({ encoding = "image" }))
  end)

  -- deepagents reads a file's raw bytes to show a line the native read cut
  -- whole; it asks cut_lines, where it used to guess from a line's length
  -- in bytes (a BOM or the undecoded bytes then came in, or a file whose
  -- base64 passes the result cap failed).
  it("deepagents goes to the raw bytes only for a line the native read cut", function()
    local dir = H.tmpdir()
    H.write_all(dir, { ["bom.txt"] = "\239\187\191\195\169\195\169\195\169\195\169\195\169\nx\n",
      ["wide.txt"] = ("\195\169\195\169\195\169\195\169\195\169\n"):rep(20), ["cut.txt"] = ("y"):rep(30) .. "\n" })
    local ws = U.open(dir, "deepagents", { mount = "/", caps = { max_line_chars = 10, max_result_bytes = 200 } })
    assert.equal("1  \195\169\195\169\195\169\195\169\195\169\n2  x", (assert(U.text(ws, "read_file", { file_path = "/bom.txt" }))))
    local e5 = ("\195\169"):rep(5)
    assert.equal(("1  %s\n2  %s\n3  %s\n\n[Read 3 line(s) (lines 1-3 of 20 total). 17 line(s) remaining from offset 3.]")
      :format(e5, e5, e5), (assert(U.text(ws, "read_file", { file_path = "/wide.txt", limit = 3 }))))
    assert.equal("1  " .. ("y"):rep(30), (assert(U.text(ws, "read_file", { file_path = "/cut.txt" }))))
  end)

  -- Before the lines came as data, native read_file tagged its text and
  -- packs that tag what they show tagged it again (everruns, deepagents,
  -- helix), or took the tag lines for the file's (deepagents).
  it("packs put the text they show inside the boundary once", function()
    local dir = H.tmpdir()
    H.write_all(dir, FILES)
    local caps = { untrusted_boundary = true, max_result_bytes = 300 }
    local calls = {
      { "claude_code", nil, "Read", { file_path = dir .. "/cut.txt" } },
      { "agent_module", "/workspace", "read", { path = "/workspace/cut.txt" } },
      { "deepagents", "/", "read_file", { file_path = "/cut.txt" } },
      { "everruns", "/workspace", "read_file", { path = "/workspace/cut.txt" } },
      { "gemini_cli", nil, "read_file", { file_path = dir .. "/cut.txt" } },
      { "gemini_cli", nil, "read_many_files", { paths = { dir .. "/cut.txt" } } },
      { "mcp_filesystem", nil, "read_text_file", { path = dir .. "/long.txt" } }, -- over the cap: paged
      { "helix", "/workspace", "workspace__workspace__read_file", { path = "/workspace/long.txt" } },
    }
    for _, c in ipairs(calls) do
      local ws = U.open(dir, c[1], { mount = c[2], caps = caps })
      local text = assert(U.text(ws, c[3], c[4]))
      local _, opens = text:gsub("<workspace_tool_result ", "")
      local _, closes = text:gsub("</workspace_tool_result>", "")
      assert.equal(1, opens, c[1] .. " " .. c[3] .. ": " .. text)
      assert.equal(1, closes, c[1] .. " " .. c[3] .. ": " .. text)
      local long = (c[4].path or ""):match("long%.txt$")
      assert.truthy(text:find(long and "line 1 " or "caf\195\169 cr\195\168me", 1, true), text)
    end
  end)
end)
