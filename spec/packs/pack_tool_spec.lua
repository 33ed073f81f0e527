-- burrow.pack's tool constructor (P.tool), through a real workspace: an
-- operator's tool file declared with it (tool_path), calling native tools.
-- The declaration's parts: required worded with need, argument mapping,
-- result mapping, errors from codes and details, kinds, a whole tool table
-- passing through.

local H = require "helpers"
local P = require "burrow.pack"

local TOOLS = {
  ["shout.lua"] = [[
local P = require "burrow.pack"
return P.tool({
  name = "shout", kind = "read", native = "read_file", required = { "file" },
  description = "Read a file in capitals.",
  schema = { file = { type = "string" } },
  args = function(a) if a.file == "" then return nil, "file is empty", "INVALID_ARGUMENT" end return { path = a.file } end,
  result = function(r, a) return P.text(a.file .. ": " .. P.page_text(r):upper()) end,
  errors = function(msg, code, det)
    if code == "ENOENT" then return nil, "no such file: " .. det.path, code end
    return P.pass(msg, code, det)
  end,
}, { need = "you forgot %s", output = P.text_output, output_schema = P.TEXT_SCHEMA })
]],
  ["count.lua"] = [[
local P = require "burrow.pack"
return P.tool {
  name = "count", kind = "edit", native = "edit_file",
  description = "Replace, and say how many places the text was in when it is ambiguous.",
  schema = { path = { type = "string" }, old = { type = "string" }, new = { type = "string" } },
  args = function(a) return { path = a.path, old_text = a.old, new_text = a.new } end,
  errors = function(msg, code, det)
    if code == "AMBIGUOUS_TEXT" then return nil, ("%d places: lines %s"):format(det.matches, P.pylist(det.lines)), code end
    return nil, msg, code
  end,
}
]],
  ["whole.lua"] = [[
return require("burrow.pack").tool {
  name = "whole", description = "A tool table written out in full.",
  input_schema = { type = "object", properties = { n = { type = "integer" } }, required = { "n" } },
  annotations = { readOnlyHint = true, openWorldHint = false },
  handler = function(_, a) return { content = tostring(a.n * 2) } end,
  render = function(r) return "twice: " .. r.content, r end,
}
]],
}

describe(H.tag("pack tool constructor"), function()
  local dir, ws

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, { ["a.txt"] = "abc\nxyz\n", ["b.txt"] = "x\ny\nx\n" })
    local tools = H.tmpdir()
    H.write_all(tools, TOOLS)
    ws = H.open { roots = { { path = dir } }, tool_path = tools, tools = { "shout", "count", "whole" } }
  end)
  after_each(H.cleanup)

  it("maps arguments and the result; MCP sees the declared schema and the kind's annotations", function()
    local r = assert(ws:call("shout", { file = "a.txt" }))
    assert.equal("a.txt: ABC\nXYZ\n", (ws:render("shout", r)))
    local t = ws:tools()
    assert.same({ type = "object", properties = { file = { type = "string" } } }, t[1].inputSchema)
    assert.same(P.annotations(true, false, true), t[1].annotations)
    assert.same(P.annotations(false, true, false), t[2].annotations)
    assert.same({ "fs.read", "fs.write" }, ws:tool("count").permissions)
  end)

  it("required fields are checked by the pack, in its words; args may refuse", function()
    local r, msg, code = ws:call("shout", {})
    assert.is_nil(r)
    assert.equal("you forgot file", msg)
    assert.equal("INVALID_ARGUMENT", code)
    r, msg = ws:call("shout", { file = "" })
    assert.equal("file is empty", msg)
  end)

  it("errors are worded from the code and details; the details go on to the caller", function()
    local r, msg, code, det = ws:call("shout", { file = "nope.txt" })
    assert.is_nil(r)
    assert.equal("no such file: nope.txt", msg)
    assert.equal("ENOENT", code)
    assert.equal("nope.txt", det.path)
    r, msg, code, det = ws:call("count", { path = "b.txt", old = "x", new = "z" })
    assert.equal("2 places: lines [1, 3]", msg)
    assert.equal("AMBIGUOUS_TEXT", code)
    assert.equal(2, det.matches)
  end)

  it("P.pass words a missing path again from the details, whatever the native message says", function()
    local _, msg, code, det = P.pass("ENOENT: something else entirely", "ENOENT", { path = "x.txt" })
    assert.equal("ENOENT: x.txt does not exist", msg)
    assert.equal("ENOENT", code)
    assert.equal("x.txt", det.path)
    _, msg = P.pass("EISDIR: d is a directory: more", "EISDIR", { path = "d" })
    assert.equal("EISDIR: d is a directory: more", msg)
  end)

  it("a tool table written out in full passes through unchanged", function()
    local t = ws:tools()[3]
    assert.same({ "n" }, t.inputSchema.required)
    assert.same({ readOnlyHint = true, openWorldHint = false }, t.annotations)
    assert.equal("twice: 42", (ws:render("whole", assert(ws:call("whole", { n = 21 })))))
  end)
end)
