-- burrow.toolkit.context_tree: the walk's and the subtree's part of ctx,
-- which context.lua loads with the first of the names it lists
-- (context.TREE); a name the file adds and the list lacks would be nil
-- on a ctx, one the list names and the file lacks would load it for nothing.
local H = require "helpers"
local context = require "burrow.toolkit.context"
local install = require "burrow.toolkit.context_tree"
local install_rest = require "burrow.toolkit.context_rest"

-- the names an installer adds against the list context.lua keeps of them
local function check_names(installer, list)
  local mod, Ctx = {}, {}
  installer(mod, Ctx, function() end)
  for _, pair in ipairs { { Ctx, list.Ctx }, { mod, list.context } } do
    local got, want = {}, {}
    for k in pairs(pair[1]) do got[#got + 1] = k end
    for k in pairs(pair[2]) do want[#want + 1] = k end
    table.sort(got)
    table.sort(want)
    assert.same(want, got)
  end
end

describe(H.tag("toolkit: ctx's walk and subtree part"), function()
  it("adds exactly the names context.TREE lists", function()
    check_names(install, context.TREE)
  end)

  it("context_rest adds exactly the names context.REST lists", function()
    check_names(install_rest, context.REST)
  end)

  it("a ctx has them, and a field that is nil stays nil", function()
    local root = H.tmpdir()
    H.write(root, "a.txt", "a\n")
    local ws = H.open { { path = root } }
    local ctx = context.new(ws, { name = "t" }, {})
    assert.is_nil(ctx.via)
    assert.is_nil(ctx.no_such_name)
    for k in pairs(context.TREE.Ctx) do assert.equal("function", type(ctx[k]), k) end
    for k in pairs(context.REST.Ctx) do assert.equal("function", type(ctx[k]), k) end
    assert.equal("function", type(context.hidden_note))
    assert.equal("function", type(context.untrusted))
    H.cleanup()
  end)
end)
