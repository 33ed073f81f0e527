-- burrow.open{tool_path = ..., policy_path = ...}: an operator's own tool
-- and policy directories, searched for names before the built-in ones.

local H = require "helpers"
local burrow = require "burrow"
local registry = require "burrow.workspace.registry"
local policy = require "burrow.policy"

local HELLO = [[
return {
  name = "hello",
  description = "Say hello to someone.",
  input_schema = { type = "object", properties = { who = { type = "string" } }, required = { "who" } },
  handler = function(ctx, args) return { greeting = "hello, " .. args.who } end,
}
]]

local NO_TXT = [[
return { check = function(req)
  if req.path:match("%.txt$") then return "deny", "no .txt files here" end
  return "allow"
end }
]]

describe(H.tag("tool_path and policy_path"), function()
  local dir, tools, pols

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "a.txt", "alpha\n")
    tools = H.tmpdir()
    H.write(tools, "hello.lua", HELLO)
    pols = H.tmpdir()
    H.write(pols, "no_txt.lua", NO_TXT)
  end)

  after_each(H.cleanup)

  it("finds an operator's tool by name in tool_path, next to the native ones", function()
    local ws = H.open { roots = { { path = dir } }, tool_path = tools, tools = { "read_file", "hello" } }
    local names = {}
    for i, t in ipairs(ws:tools()) do names[i] = t.name end
    assert.same({ "read_file", "hello" }, names)
    assert.same({ greeting = "hello, you" }, ws:call("hello", { who = "you" }))
    assert.equal("1\talpha\n", ws:call("read_file", { path = "a.txt" }).content)
  end)

  it("takes a list of directories, the first that has the name winning over the built-in one", function()
    local other = H.tmpdir()
    H.write(other, "stat.lua", HELLO:gsub('name = "hello"', 'name = "stat"'))
    local ws = H.open { roots = { { path = dir } }, tool_path = { tools, other }, tools = { "hello", "stat" } }
    assert.same({ greeting = "hello, x" }, ws:call("stat", { who = "x" }))
  end)

  it("finds an operator's policy by name in policy_path", function()
    local ws = H.open { roots = { { path = dir } }, policy_path = { pols }, policies = { "default", "no_txt" } }
    local res, msg, code = ws:call("read_file", { path = "a.txt" })
    assert.is_nil(res)
    assert.equal("POLICY_DENIED", code)
    assert.matches("no .txt files here", msg, 1, true)
  end)

  it("still finds the standard tools and policies with operator directories given", function()
    local ws = H.open { roots = { { path = dir } }, tool_path = tools, policy_path = pols, policies = { "readonly" } }
    assert.truthy(ws:tool("read_file"))
    local _, _, code = ws:call("write_file", { path = "b.txt", content = "x" })
    assert.equal("POLICY_DENIED", code)
  end)

  it("says which name it could not find, and refuses a malformed path option", function()
    local ws, msg, code = burrow.open { roots = { { path = dir } }, tool_path = tools, tools = { "nope" } }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("nope.lua", msg, 1, true)
    ws, msg, code = burrow.open { roots = { { path = dir } }, tool_path = 42 }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("tool_path must be a directory", msg, 1, true)
    ws, msg, code = burrow.open { roots = { { path = dir } }, policy_path = { pols, false } }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("policy_path[2]", msg, 1, true)
  end)

  it("gives a tool its annotations, permissions and risk from its kind, and refuses an unknown kind", function()
    H.write(tools, "peek.lua", (HELLO:gsub('name = "hello"', 'name = "peek", kind = "read"'):gsub("handler", 'risk = "high", handler', 1)))
    local t = assert(registry.load("peek", { tools }))
    assert.same({ readOnlyHint = true, destructiveHint = false, idempotentHint = true, openWorldHint = false }, t.annotations)
    assert.same({ "fs.read" }, t.permissions)
    assert.equal("high", t.risk) -- its own wins
    H.write(tools, "odd.lua", (HELLO:gsub('name = "hello"', 'name = "odd", kind = "rewrite"')))
    local none, err = registry.load("odd", { tools })
    assert.is_nil(none)
    assert.matches('odd.lua: unknown kind "rewrite" (use append, copy, create, delete, edit, list, modify, move, read, write)', err, 1, true)
    -- every native tool declares a kind and carries what it gives
    local kinds = require "burrow.toolkit.kinds"
    for _, name in ipairs(registry.native) do
      local n = assert(registry.native_tool(name))
      assert.is_string(n.kind, name)
      local a, p, r = kinds.get(n.kind)
      assert.same(a, n.annotations, name)
      assert.same(p, n.permissions, name)
      assert.equal(r, n.risk, name)
    end
  end)

  it("locates the built-in directories from the modules' own files", function()
    -- the source tree here: lua/tools and lua/policy beside lua/burrow
    local function abs(p) return p:sub(1, 1) == "/" and p or H.REPO .. "/" .. p:gsub("^%./", "") end
    assert.equal(H.REPO .. "/lua/tools", abs(registry.tools_dir))
    assert.equal(H.REPO .. "/lua/policy", abs(policy.dir))
    assert.equal(registry.tools_dir .. "/read_file.lua", registry.find("read_file"))
    assert.equal(tools .. "/hello.lua", registry.find("hello", { tools }))
    assert.equal(pols .. "/no_txt.lua", policy.find("no_txt", { "/nonexistent", pols }))
  end)
end)
