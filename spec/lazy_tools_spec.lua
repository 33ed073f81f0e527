-- The native tools load when first named (registry.lazy_natives): a start
-- that answers initialize, or a `burrow call`, reads one tool file or none.
-- What a client or program sees is the same as with all loaded at once:
-- the same list in the same order, the same tool for a name, no tool for
-- an unknown name; a tool_path or tools list is still loaded (and checked)
-- when the workspace opens.

local H = require "helpers"
local registry = require "burrow.workspace.registry"

describe("native tools loaded when first named", function()
  after_each(H.cleanup)

  it("opens without loading them; a name loads that one; the list is the whole set in order", function()
    local ws = H.open(H.tmpdir())
    for _, n in ipairs(registry.native) do assert.is_nil(rawget(ws.tool_by_name, n), n) end
    assert.equal(#registry.native, ws:tool_count())
    local stat = ws:tool("stat")
    assert.equal("stat", stat.name)
    assert.equal(stat, rawget(ws.tool_by_name, "stat"))
    assert.is_nil(rawget(ws.tool_by_name, "grep"))
    assert.is_nil(ws:tool("no_such_tool"))
    assert.is_nil(rawget(ws.tool_by_name, "no_such_tool"))
    local names = {}
    for i, t in ipairs(ws:tools()) do names[i] = t.name end
    assert.same(registry.native, names)
    assert.equal(stat, ws:tool("stat")) -- the list did not load it twice
    ws:close()
  end)

  it("a call works on a fresh workspace, and an operator's tool_path is checked when it opens", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "x\n")
    local ws = H.open(dir)
    local r = assert(ws:call("read_file", { path = "a.txt" }))
    assert.equal("1\tx\n", r.content)
    ws:close()
    local tools = H.tmpdir()
    H.write(tools, "broken.lua", "return 42\n")
    local bad, msg, code = H.burrow.open { roots = { dir }, tool_path = tools, tools = { "read_file", "broken" } }
    assert.is_nil(bad)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("broken.lua: a tool file must return a table", msg, 1, true)
  end)
  -- In a fresh process (this one's package.loaded has whatever other specs
  -- loaded): a call loads its own tool file and not the rest of the
  -- registry (registry_packs: the packs and the list formats), which the
  -- tool list and a pack load when they need it.
  it("a call loads one tool file and not the packs or the list formats; the list and a pack load them", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "x\n")
    local out, code = H.lua_child(([[
      local burrow = require "burrow"
      local registry = require "burrow.workspace.registry"
      local PACKS = "burrow.workspace.registry_packs"
      local ws = assert(burrow.open { roots = { %q } })
      assert(ws:call("stat", { path = "a.txt" }))
      local loaded = {}
      for _, n in ipairs(registry.native) do
        if rawget(ws.tool_by_name, n) then loaded[#loaded + 1] = n end
      end
      print("call", table.concat(loaded, ","), package.loaded[PACKS] and "packs" or "no packs")
      assert(#ws:tools() == #registry.native)
      print("list", package.loaded[PACKS] and "packs" or "no packs")
      ws:close()
      package.loaded[PACKS] = nil
      for k in pairs { pack_file = 1, packs = 1, load_pack = 1, load_packs = 1, format = 1 } do rawset(registry, k, nil) end
      local pws = assert(burrow.open { roots = { %q }, pack = "mcp_filesystem" })
      print("pack", package.loaded[PACKS] and "packs" or "no packs", #pws:tools() > 0)
      pws:close()
    ]]):format(dir, dir), 60)
    assert.equal(0, code, out)
    assert.equal("call\tstat\tno packs\nlist\tpacks\npack\tpacks\ttrue\n", out)
  end)
end)
