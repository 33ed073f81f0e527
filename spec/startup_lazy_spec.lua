-- What a one-shot `burrow call stat` and a start of `burrow mcp` load
-- (docs/benchmarks.md, Start-up, fifth round): loading a module's bytecode
-- is a third of such a start's instructions, so what they do not run is
-- loaded with its first use. In a fresh process each time (this one's
-- package.loaded has whatever other specs loaded): the command line's
-- call, then the first use of each part, which must load it and answer
-- as before.

local H = require "helpers"

-- the parts a call stat does not load, by the module that loads each
local LATER = {
  "burrow.toolkit.schema_check", -- schema.validate / normalize: arguments the fast path is unsure of
  "burrow.base.quantity", "lpeg", -- caps.parse_*: a cap given as text
  "burrow.toolkit.printer", -- a result that holds a set (grep, glob, read_file's page)
  "burrow.base.errors", -- the words of a failure
  "burrow.toolkit.context_rest", -- a write's resolve and commit, the hooks, the budgets
  "burrow.toolkit.context_tree", -- a walk, a subtree
}

local function child(dir, body)
  local out, code = H.lua_child(([[
    local dir = %q
    local LATER = { %s }
    local function loaded()
      local t = {}
      for _, n in ipairs(LATER) do if package.loaded[n] then t[#t + 1] = n end end
      return table.concat(t, ",")
    end
  ]]):format(dir, "\"" .. table.concat(LATER, "\", \"") .. "\"") .. body, 60)
  assert.equal(0, code, out)
  return out
end

describe("start-up: what a call stat and an mcp start load", function()
  after_each(H.cleanup)

  it("burrow call stat loads none of the later parts, and prints the same", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "a small file\n")
    local out = child(dir, [[
      io.stdout:setvbuf("full")
      local rc = require("burrow.transport.cli")({ "call", "stat", '{"path":"a.txt"}', "--root", dir })
      io.stdout:write("\nrc ", rc, " loaded [", loaded(), "]\n")
    ]])
    assert.matches('"name":"a.txt"', out, 1, true)
    assert.matches('"lines":1', out, 1, true)
    assert.matches("\nrc 0 loaded []\n", out, 1, true)
  end)

  it("burrow.open (an mcp start) loads neither a call's machinery nor the tool kinds", function()
    local dir = H.tmpdir()
    local out = child(dir, [[
      local burrow = require "burrow"
      local ws = assert(burrow.open { roots = { dir } })
      print(package.loaded["burrow.workspace.invoke"] and "invoke" or "no invoke",
        package.loaded["burrow.toolkit.kinds"] and "kinds" or "no kinds", "[" .. loaded() .. "]")
      assert(ws:call("stat", { path = "." }))
      print(package.loaded["burrow.workspace.invoke"] and "invoke" or "no invoke",
        package.loaded["burrow.toolkit.kinds"] and "kinds" or "no kinds", "[" .. loaded() .. "]")
      ws:close()
    ]])
    assert.equal("no invoke\tno kinds\t[]\ninvoke\tkinds\t[]\n", out)
  end)

  it("the first use of each part loads it, and answers as before", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "a small file\n")
    local out = child(dir, [[
      local burrow = require "burrow"
      local caps = require "burrow.base.caps"
      local ws = assert(burrow.open { roots = { dir } })
      local function say(what) print(what, "[" .. loaded() .. "]") end
      say("open")
      -- a float where an integer is wanted: the checker normalizes it
      local res, msg, code = ws:call("read_file", { path = "a.txt", limit = 1.0 })
      assert(res, msg)
      say("normalize")
      res, msg, code = ws:call("stat", { path = "a.txt", nope = 1 })
      assert(code == "INVALID_ARGUMENT" and msg:find("unknown field 'nope'", 1, true), msg)
      res, msg, code = ws:call("stat", { path = "missing" })
      assert(code == "ENOENT" and msg == "ENOENT: missing does not exist", msg)
      say("failure")
      assert(caps.parse_size("64MiB") == 64 * 1024 * 1024)
      local n, err = caps.parse_size("5XB")
      assert(n == nil and err:find('unknown unit "XB" at column 2', 1, true), err)
      say("size")
      res, msg = ws:call("write_file", { path = "b.txt", content = "b\n" })
      assert(res, msg)
      say("write")
      res, msg = ws:call("glob", { pattern = "*.txt" })
      assert(res and #res.entries == 2, msg)
      say("glob")
      assert(type(burrow.errors.message) == "function")
      ws:close()
    ]])
    assert.equal(table.concat({
      "open\t[]",
      "normalize\t[burrow.toolkit.schema_check,burrow.toolkit.printer]",
      "failure\t[burrow.toolkit.schema_check,burrow.toolkit.printer,burrow.base.errors]",
      "size\t[burrow.toolkit.schema_check,burrow.base.quantity,lpeg,burrow.toolkit.printer,burrow.base.errors]",
      "write\t[burrow.toolkit.schema_check,burrow.base.quantity,lpeg,burrow.toolkit.printer,burrow.base.errors,"
        .. "burrow.toolkit.context_rest]",
      "glob\t[burrow.toolkit.schema_check,burrow.base.quantity,lpeg,burrow.toolkit.printer,burrow.base.errors,"
        .. "burrow.toolkit.context_rest,burrow.toolkit.context_tree]",
    }, "\n") .. "\n", out)
  end)

  it("the Workspace's later methods are stand-ins until the first is called, then burrow.workspace.later's", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "a small file\n")
    local out = child(dir, [[
      io.stdout:setvbuf("full")
      local rc = require("burrow.transport.cli")({ "call", "stat", '{"path":"a.txt"}', "--root", dir })
      io.stdout:write("\ncall ", rc, " ", package.loaded["burrow.workspace.later"] and "later" or "no later", "\n")
      local burrow = require "burrow"
      local ws = assert(burrow.open { roots = { dir } })
      local W = getmetatable(ws)
      local function src(f) local i = debug.getinfo(f, "S") return i.source .. ":" .. i.linedefined end
      local stand = src(W.call)
      local stand_ins = {}
      for k, v in pairs(W) do if type(v) == "function" and src(v) == stand then stand_ins[#stand_ins + 1] = k end end
      table.sort(stand_ins)
      print("open", package.loaded["burrow.workspace.later"] and "later" or "no later")
      -- the first call goes through a stand-in: its error still names this file's line (a tail call)
      local ok, err = pcall(function() ws:on_ask(42) end)
      print("first", ok, err)
      ok, err = pcall(function() ws:on_ask(42) end)
      print("again", ok, err)
      local defined, left = {}, {}
      local t = {}
      require("burrow.workspace.later").install(t, function() end)
      for k in pairs(t) do defined[#defined + 1] = k end
      table.sort(defined)
      for k, v in pairs(W) do if type(v) == "function" and src(v) == stand then left[#left + 1] = k end end
      print(table.concat(stand_ins, " "))
      print(table.concat(defined, " "))
      print("left", #left)
      assert(#ws:tools() == ws:tool_count())
      assert(ws:call("stat", { path = "a.txt" }).name == "a.txt")
      ws:close()
    ]])
    assert.matches('"name":"a.txt"', out, 1, true)
    assert.matches("\ncall 0 no later\nopen\tno later\n", out, 1, true)
    -- each names the line of its own pcall in the child's script, two lines apart
    local l1 = out:match("\nfirst\tfalse\t[^\n]*child%.lua:(%d+): ws:on_ask: expected a function or nil\n")
    local l2 = out:match("\nagain\tfalse\t[^\n]*child%.lua:(%d+): ws:on_ask: expected a function or nil\n")
    assert.is_truthy(l1 and l2, out)
    assert.equal(tonumber(l1) + 2, tonumber(l2))
    local stand_ins, defined = out:match("\nagain\t[^\n]*\n([^\n]*)\n([^\n]*)\nleft\t0\n")
    assert.is_truthy(stand_ins, out)
    assert.equal(defined, stand_ins)
    assert.matches("call", defined, 1, true)
    assert.matches("watch_fd", defined, 1, true)
  end)
  it("a method a program wraps before the first call keeps its wrapper, whose stand-in reaches the definition", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "a small file\n")
    local out = child(dir, [[
      local burrow = require "burrow"
      local ws = assert(burrow.open { roots = { dir } })
      local W = getmetatable(ws)
      local inner, seen = W.tools, 0
      W.tools = function(self, ...) seen = seen + 1 return inner(self, ...) end
      local a = ws:tools() -- the first: burrow.workspace.later loads; tools keeps the wrapper
      local b = ws:tools()
      print("wrapped", seen, #a == ws:tool_count(), #b == #a, package.loaded["burrow.workspace.later"] ~= nil)
      ws:close()
    ]])
    assert.matches("wrapped\t2\ttrue\ttrue\ttrue\n", out, 1, true)
  end)
end)
