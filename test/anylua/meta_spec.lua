-- The type stubs shipped in the rock (lua/burrow/meta.lua, LuaCATS) against
-- the real thing, under whichever Lua runs this (test/anylua/run.sh runs it
-- under 5.1, 5.2, 5.3, 5.4 and LuaJIT from the installed rock): the methods
-- and functions the stub declares are exactly those of burrow.bridge's
-- workspace and call handle (5.1-5.3, LuaJIT), but for those marked
-- ---@version 5.4 (the 5.4 binding's own: never in the bridge), and all
-- present in the 5.4 binding, which has more.

local burrow = require "burrow"

-- "function Workspace:call(" -> decl.Workspace.call = true; after a
-- "---@version 5.4" line: decl.Workspace.run = "5.4"
local function declared()
  local path = assert(package.searchpath and package.searchpath("burrow.meta", package.path)
    or package.path:gsub("%?", "burrow/meta"):match("^([^;]+)"), "burrow.meta not found")
  local decl, only = {}, nil
  for line in io.lines(path) do
    local class, name = line:match("^function ([%w_]+)[:.]([%w_]+)%(")
    local version = line:match("^%-%-%-@version%s+(.-)%s*$")
    if version then only = version end
    if class then
      decl[class] = decl[class] or {}
      decl[class][name] = only or true
      only = nil
    end
  end
  return decl, path
end

local function methods(mt)
  local out = {}
  local index = type(mt.__index) == "table" and mt.__index or mt
  for k, v in pairs(index) do
    if type(v) == "function" and not k:match("^__") then out[k] = true end
  end
  return out
end

-- names of t, but for those a version marks (the 5.4 binding's own) unless all
local function keys(t, all)
  local out = {}
  for k, v in pairs(t) do
    if all or v == true then out[#out + 1] = k end
  end
  table.sort(out)
  return out
end

describe("the type stub (burrow/meta.lua) under " .. _VERSION .. (jit and " LuaJIT" or ""), function()
  local decl, path = declared()

  it("is installed with the rock and declares the module, the workspace and the call", function()
    assert.truthy(path:find("/share/lua/", 1, true), "from a rock tree, not the checkout: " .. path)
    assert.truthy(decl.burrow and decl.Workspace and decl.Call)
    assert.equal("5.4", decl.Workspace.run) -- the edge's call (burrow.toolkit.printer): the 5.4 binding's
  end)

  it("declares exactly the module's functions", function()
    local real = {}
    for k, v in pairs(burrow) do
      if type(v) == "function" then real[k] = true end
    end
    if burrow.backend then
      assert.same(keys(decl.burrow), keys(real))
    else -- the 5.4 binding: a superset (its burrow.version is the string itself)
      for name in pairs(decl.burrow) do
        assert.truthy(real[name] or name == "version" and type(burrow.version) == "string", "burrow." .. name .. " is missing")
      end
    end
  end)

  it("declares exactly the workspace's and the call handle's methods", function()
    local dir = os.tmpname()
    os.remove(dir)
    assert(os.execute("mkdir " .. dir))
    local ws = assert(burrow.open { roots = { { path = dir } } })
    local real_ws = methods(getmetatable(ws))
    local c = assert(ws:call("stat", { path = "." }, function() end))
    local real_call = methods(getmetatable(c))
    while ws:poll() == 0 do end
    ws:close()
    os.execute("rm -rf " .. dir)
    assert.same(keys(decl.Call), keys(real_call))
    if burrow.backend then
      assert.same(keys(decl.Workspace), keys(real_ws))
    else
      for name in pairs(decl.Workspace) do assert.truthy(real_ws[name], "ws:" .. name .. " is missing") end
    end
  end)
end)
