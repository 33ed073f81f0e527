-- Jupyter notebooks (issue 13): read_file shows a .ipynb as cells (source,
-- outputs as text, images as MCP image content); notebook_edit replaces,
-- inserts and deletes a cell. The notebooks are made by Debian's
-- python3-nbformat, and every edit is checked against nbformat itself:
-- the file must be byte for byte what nbformat writes after the same
-- change (so: valid nbformat, and identical outside the changed cell).
-- Without python3-nbformat the spec is reported pending (SKIP).

local H = require "helpers"

local PY = "/usr/bin/python3"

local MAKE = [[
import nbformat, sys
from nbformat.v4 import new_notebook, new_code_cell, new_markdown_cell, new_output
PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
nb = new_notebook()
nb.cells = [
  new_markdown_cell("# Title\nSome *text* with \"quotes\" and \u00e9", id="md-1"),
  new_code_cell("import math\nprint(math.pi)", id="code-1", execution_count=1,
    outputs=[new_output("stream", name="stdout", text="3.141592653589793\n"),
             new_output("execute_result", data={"text/plain": "42"}, execution_count=1)]),
  new_code_cell("plot()", id="code-2", execution_count=2,
    outputs=[new_output("display_data", data={"image/png": PNG, "text/plain": "<Figure>"})]),
  new_code_cell("1/0", id="code-3", execution_count=3,
    outputs=[new_output("error", ename="ZeroDivisionError", evalue="division by zero", traceback=["tb"])]),
]
nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
nbformat.validate(nb)
nbformat.write(nb, sys.argv[1])
]]

-- What nbformat writes after a change: change is Python over `nb`.
local function expect(path, change)
  local script = ([[
import nbformat, sys
from nbformat.v4 import new_code_cell, new_markdown_cell
nb = nbformat.read(sys.argv[1], as_version=4)
%s
nbformat.validate(nb)
sys.stdout.write(nbformat.writes(nb) + "\n")
]]):format(change)
  return H.sh(("%s -c %s %s"):format(PY, H.q(script), H.q(path)))
end

describe(H.tag("notebooks"), function()
  local ws, dir, why

  setup(function()
    local _, ok = H.run(PY .. " -c 'import nbformat' 2>/dev/null")
    if not ok then why = "python3-nbformat is not installed" end
  end)

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
    if not why then H.sh(("%s -c %s %s"):format(PY, H.q(MAKE), H.q(dir .. "/a.ipynb"))) end
  end)
  after_each(function() ws:close(); H.cleanup() end)

  local function need()
    if why then pending("SKIP: " .. why) return false end
    return true
  end

  it("read_file shows cells, outputs as text and images as image content", function()
    if not need() then return end
    local r = assert(ws:call("read_file", { path = "a.ipynb" }))
    assert.is_true(r.notebook)
    assert.equal(4, r.cells)
    assert.matches('<cell id="md-1"><cell_type>markdown</cell_type># Title\nSome *text* with "quotes" and é</cell id="md-1">', r.content, 1, true)
    assert.matches('<cell id="code-1">import math\nprint(math.pi)\n<outputs>\n3.141592653589793\n42\n</outputs></cell id="code-1">', r.content, 1, true)
    assert.matches("[image 1: image/png]", r.content, 1, true)
    assert.matches("ZeroDivisionError: division by zero", r.content, 1, true)
    local blocks = ws:render("read_file", r)
    assert.equal("table", type(blocks))
    assert.equal("image", blocks[2].type)
    assert.equal("image/png", blocks[2].mimeType)
    local raw = assert(ws:call("read_file", { path = "a.ipynb", notebook = false }))
    assert.matches('1\t{', raw.content, 1, true)
  end)

  it("replace a cell's source: the file is what nbformat writes; undo_edit puts it back", function()
    if not need() then return end
    local orig = H.read(dir, "a.ipynb")
    local want = expect(dir .. "/a.ipynb", 'nb.cells[1].source = "x = 1\\ny = \\"two\\"\\n"')
    local r = assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "code-1", new_source = 'x = 1\ny = "two"\n' }))
    assert.equal("code-1", r.cell_id)
    assert(H.read(dir, "a.ipynb") == want, "differs from nbformat's:\n" .. H.read(dir, "a.ipynb"))
    assert(ws:call("undo_edit", { path = "a.ipynb" })) -- the original bytes come back
    assert(H.read(dir, "a.ipynb") == orig)
  end)

  it("insert after a cell and at the start, by id and by index", function()
    if not need() then return end
    local r = assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "md-1", edit_mode = "insert",
      cell_type = "code", new_source = "import os" }))
    local id1 = r.cell_id
    assert.equal(5, r.cells)
    local r2 = assert(ws:call("notebook_edit", { path = "a.ipynb", edit_mode = "insert",
      cell_type = "markdown", new_source = "# First\n" }))
    local id2 = r2.cell_id
    -- nbformat over the original, with the same ids
    H.sh(("%s -c %s %s"):format(PY, H.q(MAKE), H.q(dir .. "/b.ipynb")))
    local want = expect(dir .. "/b.ipynb", ([[
nb.cells.insert(1, new_code_cell("import os", id="%s"))
nb.cells.insert(0, new_markdown_cell("# First\n", id="%s"))]]):format(id1, id2))
    assert(H.read(dir, "a.ipynb") == want, "differs from nbformat's:\n" .. H.read(dir, "a.ipynb"))
    local r3 = assert(ws:call("notebook_edit", { path = "a.ipynb", index = 2, new_source = "import sys" }))
    assert.equal(id1, r3.cell_id)
  end)

  it("delete a cell (middle, last, then all)", function()
    if not need() then return end
    local want = expect(dir .. "/a.ipynb", "del nb.cells[2]")
    assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "code-2", edit_mode = "delete" }))
    assert(H.read(dir, "a.ipynb") == want)
    want = expect(dir .. "/a.ipynb", "del nb.cells[2]")
    assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "code-3", edit_mode = "delete" }))
    assert(H.read(dir, "a.ipynb") == want)
    for _, id in ipairs { "md-1", "code-1" } do
      assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = id, edit_mode = "delete" }))
    end
    assert(H.read(dir, "a.ipynb") == expect(dir .. "/a.ipynb", "pass"))
    local r = assert(ws:call("notebook_edit", { path = "a.ipynb", edit_mode = "insert", cell_type = "code", new_source = "1" }))
    assert(H.read(dir, "a.ipynb") == expect(dir .. "/a.ipynb", "pass"))
    assert.equal(1, r.cells)
  end)

  it("a notebook with a cell that is not JSON reads as text, and is not edited (INVALID_ARGUMENT)", function()
    -- its brackets and strings scan (cells are found), its second cell does not decode
    local bad = '{"cells": [{"cell_type": "code", "id": "a", "metadata": {}, "outputs": [], "source": ["x = 1"]}, '
      .. '{"cell_type": "code", "id": "b", "metadata": {}, "outputs": [1,], "source": ["y"]}], '
      .. '"metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
    H.write(dir, "bad.ipynb", bad)
    local r = assert(ws:call("read_file", { path = "bad.ipynb" }))
    assert.is_nil(r.notebook)
    assert.truthy(r.content:find('"outputs": [1,]', 1, true))
    local none, msg, code = ws:call("notebook_edit", { path = "bad.ipynb", cell_id = "a", new_source = "x = 2" })
    assert.is_nil(none)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("not a notebook", msg, 1, true)
    assert.equal(bad, H.read(dir, "bad.ipynb"))
  end)

  it("a notebook saved with CRLF keeps CRLF", function()
    if not need() then return end
    local crlf = H.read(dir, "a.ipynb"):gsub("\n", "\r\n")
    H.write(dir, "a.ipynb", crlf)
    local want = expect(dir .. "/a.ipynb", 'nb.cells[1].source = "x = 1\\ny = 2"'):gsub("\n", "\r\n")
    assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "code-1", new_source = "x = 1\ny = 2" }))
    assert(H.read(dir, "a.ipynb") == want, H.read(dir, "a.ipynb"))
    local r = assert(ws:call("notebook_edit", { path = "a.ipynb", edit_mode = "insert", cell_type = "code", new_source = "z" }))
    assert.is_nil(H.read(dir, "a.ipynb"):find("[^\r]\n"))
    assert.equal(5, r.cells)
  end)

  it("changing a cell's type keeps its id and metadata; nbformat validates it", function()
    if not need() then return end
    assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "code-3", cell_type = "markdown", new_source = "Was code" }))
    local want = expect(dir .. "/a.ipynb", "pass") -- validates, and re-writes it the same
    assert(H.read(dir, "a.ipynb") == want)
    assert.matches('"id": "code-3"', want, 1, true)
  end)

  it("claude_code pack: Read shows cells and images; NotebookEdit replaces, inserts, deletes", function()
    if not need() then return end
    local U = require "packs.util"
    local cc = U.open(dir, "claude_code")
    local M = cc:mounts()[1].mount
    local p = M .. "/a.ipynb"
    local _, msg = cc:call("NotebookEdit", { notebook_path = p, cell_id = "md-1", new_source = "x" })
    assert.matches("File has not been read yet", msg, 1, true)
    local r = assert(cc:call("Read", { file_path = p }))
    assert.matches('<cell id="code-1">import math', r.content, 1, true)
    local blocks = cc:render("Read", r)
    assert.equal("image", blocks[2].type)
    local want = expect(dir .. "/a.ipynb", 'nb.cells[0].source = "# New title"')
    local e = assert(cc:call("NotebookEdit", { notebook_path = p, cell_id = "md-1", new_source = "# New title" }))
    assert.equal("Updated cell md-1 with # New title", e.content)
    assert(H.read(dir, "a.ipynb") == want)
    e = assert(cc:call("NotebookEdit", { notebook_path = p, cell_id = "code-3", new_source = "", edit_mode = "delete" }))
    assert.equal("Deleted cell code-3", e.content)
    _, msg = cc:call("NotebookEdit", { notebook_path = p, new_source = "y", edit_mode = "insert" })
    assert.matches("Cell type is required", msg, 1, true)
    assert(cc:call("NotebookEdit", { notebook_path = p, cell_id = "code-2", new_source = "y = 2", cell_type = "code", edit_mode = "insert" }))
    assert.equal(4, assert(ws:call("read_file", { path = "a.ipynb" })).cells)
    expect(dir .. "/a.ipynb", "pass") -- still valid nbformat
    H.write(dir, "a.ipynb", H.read(dir, "a.ipynb") .. " ") -- changed behind its back
    _, msg = cc:call("NotebookEdit", { notebook_path = p, cell_id = "md-1", new_source = "z" })
    assert.matches("modified since read", msg, 1, true)
    cc:close()
  end)

  it("undo_edit puts back every kind of edit byte for byte from the cell's old bytes, not a copy of the file", function()
    if not need() then return end
    local orig = H.read(dir, "a.ipynb")
    ws:close()
    -- a bound below the notebook's size: a record holding the whole file
    -- would be a TOO_LARGE marker; one holding the cell fits
    ws = H.open(dir, { max_undo_bytes = #orig - 1 })
    local function crlf(s) return (s:gsub("\n", "\r\n")) end
    for _, style in ipairs { "lf", "crlf" } do
      local start = style == "lf" and orig or crlf(orig)
      H.write(dir, "a.ipynb", start)
      local seen = { start }
      for _, e in ipairs {
        { cell_id = "code-1", new_source = "x = 1\ny = 2\n" },
        { cell_id = "md-1", edit_mode = "insert", cell_type = "code", new_source = "import os" },
        { edit_mode = "insert", cell_type = "markdown", new_source = "# First\n" },
        { cell_id = "code-2", edit_mode = "delete" },
        { cell_id = "code-3", cell_type = "markdown", new_source = "Was code" },
        { cell_id = "code-3", edit_mode = "delete" }, -- the last cell
      } do
        e.path = "a.ipynb"
        assert(ws:call("notebook_edit", e))
        seen[#seen + 1] = H.read(dir, "a.ipynb")
        assert.are_not.equal(seen[#seen - 1], seen[#seen])
      end
      for i = #seen - 1, 1, -1 do
        local r = assert(ws:call("undo_edit", { path = "a.ipynb" }))
        assert.equal("content", r.restored)
        assert(H.read(dir, "a.ipynb") == seen[i], ("%s: undo %d is not the bytes before the edit"):format(style, #seen - i))
        assert.equal(H.sha256_of(seen[i]), r.content_hash)
      end
      local _, _, code = ws:call("undo_edit", { path = "a.ipynb" })
      assert.equal("INVALID_ARGUMENT", code) -- nothing left
    end
    local bytes = ws.session.undo:totals()
    assert.equal(0, bytes)
  end)

  it("undo_edit refuses once the notebook was changed in place through a hard link", function()
    if not need() then return end
    assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "code-1", new_source = "x = 1" }))
    H.sh(("ln %s %s"):format(H.q(dir .. "/a.ipynb"), H.q(dir .. "/b.ipynb")))
    -- the same size, the same inode: one byte of another cell changed
    local edited = H.read(dir, "b.ipynb")
    local at = assert(edited:find("plot()", 1, true))
    local fh = assert(io.open(dir .. "/b.ipynb", "r+b"))
    fh:seek("set", at - 1)
    fh:write("P")
    fh:close()
    local changed = H.read(dir, "a.ipynb")
    assert.equal(#edited, #changed)
    assert.are_not.equal(edited, changed)
    local none, _, code = ws:call("undo_edit", { path = "a.ipynb" })
    assert.is_nil(none)
    assert.equal("HASH_MISMATCH", code)
    assert(H.read(dir, "a.ipynb") == changed, "nothing undone")
    assert(H.read(dir, "b.ipynb") == changed)
  end)

  it("compare-and-set on the hash; a missing cell or a bad request writes nothing", function()
    if not need() then return end
    local before = H.read(dir, "a.ipynb")
    local _, _, code = ws:call("notebook_edit", { path = "a.ipynb", cell_id = "md-1", new_source = "x",
      expected_hash = "sha256:" .. ("0"):rep(64) })
    assert.equal("HASH_MISMATCH", code)
    _, _, code = ws:call("notebook_edit", { path = "a.ipynb", cell_id = "nope", new_source = "x" })
    assert.equal("NOT_FOUND_TEXT", code)
    _, _, code = ws:call("notebook_edit", { path = "a.ipynb", edit_mode = "insert", new_source = "x" })
    assert.equal("INVALID_ARGUMENT", code)
    H.write(dir, "bad.ipynb", "{not json")
    _, _, code = ws:call("notebook_edit", { path = "bad.ipynb", index = 0, new_source = "x" })
    assert.equal("INVALID_ARGUMENT", code)
    assert(H.read(dir, "a.ipynb") == before)
    local r = assert(ws:call("read_file", { path = "a.ipynb" }))
    assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "md-1", new_source = "x", expected_hash = r.content_hash }))
  end)
end)
