-- Numbers out of range in tool arguments: every numeric argument of every
-- native tool and of every pack tool, given 1e300, 2^62, a negative and a
-- fraction. Native tools: INVALID_ARGUMENT naming the field, whatever the
-- value (never clamped, never read as absent). Packs: a huge value is
-- INVALID_ARGUMENT naming the field in the dialect's words; a negative or
-- a fraction may mean something in a dialect (view_range's -1), but is
-- never an internal error.

local H = require "helpers"
local schema = require "burrow.toolkit.schema"

local FILE = "f.txt"

-- Minimal valid arguments for each tool that takes a number; p(rel) makes
-- a path the pack accepts (absolute, under the root's mount).
local BASE = {
  native = {
    read_file = function(p) return { path = p(FILE) } end,
    insert_lines = function(p) return { path = p(FILE), line = 1, content = "x\n", dry_run = true } end,
    list_dir = function(p) return { path = p("."), recursive = true } end,
    notebook_edit = function(p) return { path = p("n.ipynb"), index = 0, new_source = "x" } end,
    grep = function(p) return { pattern = "a", path = p(".") } end,
    glob = function(p) return { pattern = "*", path = p(".") } end,
  },
  agent_module = {
    read = function(p) return { path = p(FILE) } end,
    edit = function(p) return { path = p(FILE), old_string = "b", new_string = "B" } end,
    insert = function(p) return { path = p(FILE), line = 1, content = "x" } end,
    grep = function(p) return { pattern = "a", path = p(".") } end,
    find = function(p) return { pattern = "*", path = p(".") } end,
  },
  claude_code = {
    Read = function(p) return { file_path = p(FILE) } end,
    Grep = function(p) return { pattern = "a", path = p("."), output_mode = "content" } end,
  },
  codex = {
    read_file = function(p) return { file_path = p(FILE) } end,
    list_dir = function(p) return { dir_path = p(".") } end,
    grep_files = function(p) return { pattern = "a", path = p(".") } end,
  },
  deepagents = {
    read_file = function(p) return { file_path = p(FILE) } end,
    grep = function(p) return { pattern = "a", path = p(".") } end,
  },
  everruns = {
    read_file = function(p) return { path = p(FILE) } end,
    list_directory = function(p) return { path = p(".") } end,
    grep_files = function(p) return { pattern = "a", path = p(".") } end,
  },
  gemini_cli = {
    read_file = function(p) return { file_path = p(FILE), offset = 0, limit = 2 } end,
    replace = function(p) return { file_path = p(FILE), old_string = "b", new_string = "B" } end,
  },
  helix = {
    workspace__workspace__grep = function(p) return { pattern = "a", path = p(".") } end,
  },
  mcp_filesystem = {
    read_text_file = function(p) return { path = p(FILE) } end,
    read_file = function(p) return { path = p(FILE) } end,
  },
  picoclaw = {
    read_file = function(p) return { path = p(FILE) } end,
  },
  text_editor = {
    str_replace_based_edit_tool = function(p, field)
      if field == "insert_line" then return { command = "insert", path = p(FILE), insert_line = 0, insert_text = "x\n" } end
      return { command = "view", path = p(FILE), view_range = { 1, 2 } }
    end,
  },
}

-- The numeric fields of a schema: {name = top-level field, set = function(args, v)}.
local function numeric_fields(s)
  local out = {}
  for name, ps in pairs(s.properties or {}) do
    if ps.type == "integer" or ps.type == "number" then
      out[#out + 1] = { name = name, set = function(a, v) a[name] = v end }
    elseif ps.type == "array" and ps.items and (ps.items.type == "integer" or ps.items.type == "number") then
      out[#out + 1] = { name = name, set = function(a, v) a[name][1] = v end }
    end
  end
  table.sort(out, function(x, y) return x.name < y.name end)
  return out
end

local function open(dir, pack)
  return H.open { roots = { { path = dir, mount = "/w" } }, pack = pack }
end

local function p(rel) return rel == "." and "/w" or "/w/" .. rel end

describe(H.tag("numbers out of range"), function()
  local dir
  before_each(function()
    dir = H.tmpdir()
    H.write(dir, FILE, "a\nb\nc\n")
    H.write(dir, "sub/g.txt", "a\n")
    H.write(dir, "n.ipynb", '{"cells": [{"cell_type": "code", "execution_count": null, "metadata": {}, '
      .. '"outputs": [], "source": []}], "metadata": {}, "nbformat": 4, "nbformat_minor": 4}\n')
  end)
  after_each(H.cleanup)

  it("every tool with a numeric argument has a case here", function()
    for _, pack in ipairs(require("burrow.workspace.registry").packs()) do
      local ws = open(dir, pack ~= "native" and pack or nil)
      for _, t in ipairs(ws:tools()) do
        if #numeric_fields(t.inputSchema) > 0 then
          assert.is_truthy(BASE[pack] and BASE[pack][t.name], ("no case for %s %s"):format(pack, t.name))
        end
      end
    end
  end)

  for pack, tools in pairs(BASE) do
    for tool, base in pairs(tools) do
      it(("%s %s: huge, negative, fractional"):format(pack, tool), function()
        local ws = open(dir, pack ~= "native" and pack or nil)
        local def
        for _, t in ipairs(ws:tools()) do if t.name == tool then def = t end end
        assert.is_truthy(def, tool)
        local fields = numeric_fields(def.inputSchema)
        assert.is_true(#fields > 0)
        -- the base arguments themselves are fine
        local ok, msg = ws:call(tool, base(p, fields[1].name))
        assert.is_truthy(ok, msg)
        for _, f in ipairs(fields) do
          for _, v in ipairs { 1e300, -1e300, 1 << 62, schema.MAX_INTEGER + 1, -1, 0.5 } do
            local args = base(p, f.name)
            f.set(args, v)
            local what = ("%s %s %s=%s"):format(pack, tool, f.name, tostring(v))
            local res, m, code = ws:call(tool, args)
            assert.is_falsy(m and m:find("internal error"), what .. ": " .. tostring(m))
            local huge = v > schema.MAX_INTEGER or v < -schema.MAX_INTEGER
            if pack == "native" or huge then
              assert.is_nil(res, what)
              assert.equal("INVALID_ARGUMENT", code, what .. ": " .. tostring(m))
              assert.is_truthy(m:find(f.name, 1, true), what .. " names the field: " .. m)
            end
          end
        end
      end)
    end
  end

  it("native read_file: an integral float in range is an integer, 1e300 is not line 1", function()
    local ws = open(dir)
    local r = assert(ws:call("read_file", { path = FILE, offset = 2.0 }))
    assert.equal(2, r.start_line)
    assert.equal("integer", math.type(r.start_line))
    local res, msg, code = ws:call("read_file", { path = FILE, offset = 1e300 })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("field 'offset': must be at most 9007199254740991", msg, 1, true)
  end)

  it("the largest value is taken at its word: list_dir max_depth 2^53-1 descends all the way", function()
    local ws = open(dir)
    H.write(dir, "a/b/c/d.txt", "x")
    local r = assert(ws:call("list_dir", { path = ".", recursive = true, max_depth = schema.MAX_INTEGER }))
    local found = false
    for _, e in ipairs(r.entries) do found = found or e.path == "a/b/c/d.txt" end
    assert.is_true(found)
    r = assert(ws:call("read_file", { path = FILE, offset = 2, limit = schema.MAX_INTEGER }))
    assert.equal(3, r.end_line)
  end)

  it("claude_code Read offset 1e300: a <tool_use_error>, not an internal error", function()
    local ws = open(dir, "claude_code")
    local res, msg, code = ws:call("Read", { file_path = p(FILE), offset = 1e300 })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("^<tool_use_error>.*offset", msg)
  end)

  it("text_editor view_range [2.0, 3.0] is [2, 3] (floats inside arrays too)", function()
    local ws = open(dir, "text_editor")
    local r, msg = ws:call("str_replace_based_edit_tool", { command = "view", path = p(FILE), view_range = { 2.0, 3.0 } })
    assert.is_truthy(r, msg)
  end)
end)
