-- notebook_edit and read_file's notebook view widen nothing (issue 13): a
-- read-only root, a link out of the root and a policy's deny hold as for
-- edit_file; the view keeps max_file_size and max_result_bytes (whole
-- cells, images within the cap); a notebook's JSON cannot make it write a
-- file that is not valid JSON.

local F = require "security.fixture"
local H = require "helpers"

local NB = '{\n "cells": [\n  {\n   "cell_type": "code",\n   "execution_count": null,\n   "id": "c1",\n'
  .. '   "metadata": {},\n   "outputs": [],\n   "source": [\n    "x = 1"\n   ]\n  }\n ],\n'
  .. ' "metadata": {},\n "nbformat": 4,\n "nbformat_minor": 5\n}\n'

describe(F.tag("security: notebooks"), function()
  local dir

  before_each(function() dir = H.tmpdir() end)
  after_each(function() H.cleanup() end)

  it("a read-only root, a link out of the root, a denied path: refused, nothing written", function()
    H.sh(("mkdir -p %s/ro %s/rw %s/out"):format(dir, dir, dir))
    H.write(dir, "ro/a.ipynb", NB)
    H.write(dir, "out/o.ipynb", NB)
    H.write(dir, "rw/.env.ipynb", NB)
    H.sh(("ln -s ../out/o.ipynb %s/rw/link.ipynb"):format(dir))
    local ws = F.open({ { path = dir .. "/ro", mount = "/ro", mode = "ro" }, { path = dir .. "/rw", mount = "/rw", mode = "rw" } },
      { policies = { "secrets" } })
    local _, _, code = ws:call("notebook_edit", { path = "/ro/a.ipynb", cell_id = "c1", new_source = "pwned" })
    assert.equal("READ_ONLY_ROOT", code)
    _, _, code = ws:call("notebook_edit", { path = "/rw/link.ipynb", cell_id = "c1", new_source = "pwned" })
    assert.is_truthy(code)
    assert.equal(NB, H.read(dir, "out/o.ipynb"))
    for _, tool in ipairs { "notebook_edit", "read_file" } do
      _, _, code = ws:call(tool, { path = "/rw/.env.ipynb", cell_id = tool == "notebook_edit" and "c1" or nil,
        new_source = tool == "notebook_edit" and "pwned" or nil })
      assert.equal("POLICY_DENIED", code, tool)
    end
    assert.equal(NB, H.read(dir, "rw/.env.ipynb"))
    assert.equal(NB, H.read(dir, "ro/a.ipynb"))
    ws:close()
  end)

  it("the notebook view keeps max_file_size and max_result_bytes", function()
    local cells = {}
    for i = 1, 200 do
      cells[i] = ('{"cell_type": "code", "execution_count": 1, "id": "c%d", "metadata": {}, "outputs": '
        .. '[{"name": "stdout", "output_type": "stream", "text": "%s"}], "source": "print(%d)"}'):format(i, ("x"):rep(2000), i)
    end
    H.write(dir, "big.ipynb", '{"cells": [' .. table.concat(cells, ", ") .. '], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    local ws = F.open({ { path = dir, mode = "rw" } },
      { caps = { max_result_bytes = 65536, max_entries = 1000, max_file_size = 52428800 } })
    local r = assert(ws:call("read_file", { path = "big.ipynb" }))
    assert.is_true(#r.content <= 65536 + 200)
    assert.is_true(r.truncated)
    assert.matches("cells shown (max_result_bytes)", r.content, 1, true)
    ws:close()
    local small = F.open({ { path = dir, mode = "rw" } },
      { caps = { max_result_bytes = 65536, max_entries = 1000, max_file_size = 4096 } })
    local _, _, code = small:call("read_file", { path = "big.ipynb" })
    assert.equal("TOO_LARGE", code)
    _, _, code = small:call("notebook_edit", { path = "big.ipynb", cell_id = "c1", new_source = "x" })
    assert.equal("TOO_LARGE", code)
    small:close()
  end)

  it("sources that are JSON syntax are written as strings: the file stays valid JSON", function()
    H.write(dir, "a.ipynb", NB)
    local ws = F.open({ { path = dir, mode = "rw" } })
    for _, src in ipairs { '"]}, {"cell_type": "x"', "\\", "\0\1\31", "]\n}\n" } do
      assert(ws:call("notebook_edit", { path = "a.ipynb", cell_id = "c1", new_source = src }))
      local t = H.read(dir, "a.ipynb")
      local nb = require("burrow.core").json.decode(t)
      assert.equal(1, #nb.cells)
      assert.equal(src, nb.cells[1].source[1] .. (nb.cells[1].source[2] or ""))
    end
    ws:close()
  end)
end)
