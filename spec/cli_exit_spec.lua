-- How a `burrow call` process ends (main.c): a call that closed its
-- workspace exits without lua_close, so the finalizers of what is still
-- alive do not run; but while a stage is alive lua_close runs, and the
-- stage's finalizer aborts what it staged (nothing unjudged is ever left
-- in the workspace). Either way the C streams are flushed at exit: the
-- reply, and a Lua io file a tool wrote and did not close.

local H = require "helpers"

-- an operator's tool: stages a copy of the folder d to e unless args.stage
-- is false, keeps a table whose finalizer writes "finalized" to stderr,
-- writes args.note (a path) through Lua's io without closing it, and
-- returns without committing or aborting the stage
local LEAVE = [[
local kept = {}
return {
  name = "leave",
  description = "Stage a copy and leave it pending.",
  kind = "read",
  input_schema = { type = "object", properties = { stage = { type = "boolean" }, note = { type = "string" } } },
  handler = function(ctx, a)
    kept[#kept + 1] = setmetatable({}, { __gc = function() io.stderr:write("finalized\n") end })
    if a.note then
      local f = assert(io.open(a.note, "w"))
      f:write("written, not closed\n")
      kept[#kept + 1] = f
    end
    if a.stage ~= false then
      local si, srel = assert(ctx:resolve("d"))
      local di, drel = assert(ctx:resolve_write("e"))
      kept[#kept + 1] = assert(ctx.roots:stage_copy(si, srel, di, drel, { recursive = true }))
    end
    return { left = true }
  end,
}
]]

describe(H.tag("a call's process end"), function()
  local dir, cfg

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "d/a.txt", "alpha\n")
    local tools = H.tmpdir()
    H.write(tools, "leave.lua", LEAVE)
    cfg = H.tmpdir() .. "/burrow.yaml"
    local f = assert(io.open(cfg, "w"))
    f:write(("roots: [%q]\ntools: [stat, %q]\n"):format(dir, tools .. "/leave.lua"))
    f:close()
  end)
  after_each(H.cleanup)

  local function staged_left()
    local left = {}
    for _, name in ipairs(H.ls(dir)) do
      if name:find("^%.burrow%-stage%.") then left[#left + 1] = name end
    end
    return left
  end

  it("aborts a stage a tool left pending: lua_close runs while a stage lives", function()
    local out, err, code = H.burrow_cmd { "call", "leave", "{}", "--config", cfg }
    assert.equal(0, code, err)
    assert.equal('{"left":true}\n', out)
    assert.same({}, staged_left())
    assert.is_false(H.exists(dir, "e"))
    assert.matches("finalized", err, 1, true) -- every finalizer ran
  end)

  it("ends without the finalizers of what is left when no stage lives; the reply and Lua's io files are flushed", function()
    local note = H.tmpdir() .. "/note.txt"
    local out, err, code = H.burrow_cmd { "call", "leave", ('{"stage":false,"note":%q}'):format(note), "--config", cfg }
    assert.equal(0, code, err)
    assert.equal('{"left":true}\n', out)
    assert.is_nil(err:find("finalized", 1, true))
    local f = assert(io.open(note))
    assert.equal("written, not closed\n", f:read("a"))
    f:close()
  end)
end)
