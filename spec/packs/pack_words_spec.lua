-- burrow.pack's shared pieces for a dialect's words, through a real
-- workspace: an operator's tool file declared with them (tool_path),
-- calling native tools. P.words (words per code, the path from the native
-- arguments or the details, others to P.pass / P.as_is / P.prefixed),
-- errors answering with a result, text results, the native arguments
-- handed to result and errors, P.at_least, the schema one-liners.

local H = require "helpers"
local P = require "burrow.pack"

local TOOLS = {
  ["peek.lua"] = [[
local P = require "burrow.pack"
return P.tool({ name = "peek", native = "read_file", required = { "file" },
  description = "Read the first lines of a file.",
  schema = { file = P.string("The file."), lines = P.integer("How many lines (default 2).", { minimum = 0 }) },
  args = function(a)
    local n, e, c = P.at_least(a, "lines", 1, 2, "%s: at least %d")
    if not n then return nil, e, c end
    return { path = "sub/" .. a.file, limit = n }
  end,
  result = function(r, _, _, na) return na.path .. " <- " .. P.page_text(r) end,
  errors = P.words({ ENOENT = "cannot find %s", EISDIR = function(path) return "a folder: " .. path end },
    P.prefixed("peek failed: ")),
}, { output = P.text_output, output_schema = P.TEXT_SCHEMA })
]],
  ["exists.lua"] = [[
local P = require "burrow.pack"
return P.tool({ name = "exists", native = "stat", required = { "file" },
  description = "Whether a file exists.",
  schema = P.closed({ file = P.string() }, { "file" }),
  args = function(a) return { path = a.file } end,
  result = function() return "yes" end,
  errors = function(msg, code, det, a, ctx, na)
    if code == "ENOENT" then return P.text("no: " .. na.path) end
    return P.as_is(msg, code)
  end,
}, { output = P.text_output, output_schema = P.TEXT_SCHEMA })
]],
}

describe(H.tag("pack words"), function()
  local dir, ws

  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, { ["sub/a.txt"] = "one\ntwo\nthree\n", ["sub/d/x"] = "" })
    local tools = H.tmpdir()
    H.write_all(tools, TOOLS)
    ws = H.open { roots = { { path = dir } }, tool_path = tools, tools = { "peek", "exists" } }
  end)
  after_each(H.cleanup)

  it("result sees the native arguments; a string result is the text-only result", function()
    local r = assert(ws:call("peek", { file = "a.txt" }))
    assert.same({ content = "sub/a.txt <- one\ntwo\n" }, r)
    assert.equal("sub/a.txt <- one\ntwo\n", (ws:render("peek", r)))
  end)

  it("P.at_least refuses in the dialect's words before any call", function()
    local r, msg, code = ws:call("peek", { file = "a.txt", lines = 0 })
    assert.is_nil(r)
    assert.equal("lines: at least 1", msg)
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("P.words: a format with the native call's path, a function, the details kept", function()
    local r, msg, code, det = ws:call("peek", { file = "nope.txt" })
    assert.is_nil(r)
    assert.equal("cannot find sub/nope.txt", msg)
    assert.equal("ENOENT", code)
    assert.equal("sub/nope.txt", det.path)
    r, msg, code = ws:call("peek", { file = "d" })
    assert.equal("a folder: sub/d", msg)
    assert.equal("EISDIR", code)
  end)

  it("P.prefixed puts the dialect's prefix before burrow's message, its code taken off", function()
    local r, msg, code = ws:call("peek", { file = "../../etc/passwd" })
    assert.is_nil(r)
    assert.equal("OUTSIDE_ROOT", code)
    assert.truthy(msg:find("^peek failed: "), msg)
    assert.falsy(msg:find("OUTSIDE_ROOT:", 1, true), msg)
    -- in the packs-reworded stage the native message came reworded (the
    -- suite's hook, spec/helpers.lua): the stage tests what it says
    local reword = os.getenv("BURROW_TEST_REWORD")
    if reword and reword ~= "" then assert.truthy(msg:find(reword, 1, true), msg) end
  end)

  it("errors may answer a failure with a result", function()
    assert.same({ content = "no: gone.txt" }, assert(ws:call("exists", { file = "gone.txt" })))
    assert.same({ content = "yes" }, assert(ws:call("exists", { file = "sub/a.txt" })))
  end)

  it("the schema one-liners build the declared schema", function()
    local t = ws:tools()
    assert.same({ type = "object", properties = {
      file = { type = "string", description = "The file." },
      lines = { type = "integer", description = "How many lines (default 2).", minimum = 0 },
    } }, t[1].inputSchema)
    assert.same({ type = "object", properties = { file = { type = "string" } }, required = { "file" },
      additionalProperties = false }, t[2].inputSchema)
  end)

  it("P.words in a handler: the path given, other codes to P.pass", function()
    local words = P.words { ENOENT = "gone: %s" }
    local _, msg, code = words("ENOENT: x", "ENOENT", nil, nil, nil, { path = "p" })
    assert.equal("gone: p", msg)
    assert.equal("ENOENT", code)
    local _, msg2, code2, det = words("EISDIR: d is a directory", "EISDIR", { path = "d" })
    assert.equal("EISDIR: d is a directory", msg2)
    assert.equal("EISDIR", code2)
    assert.equal("d", det.path)
  end)
end)
