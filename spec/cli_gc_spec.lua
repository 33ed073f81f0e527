-- The collector at a command's start (burrow.transport.cli's collect):
-- main.c starts it stopped; a call restarts it as if a cycle had just
-- ended (the first cycle waits for the heap to double, so a one-shot call
-- that makes little garbage marks no start-up heap: docs/benchmarks.md,
-- Start-up). What must hold whatever the pacing: it runs, and a call that
-- makes a lot of garbage is collected (memory stays bounded).

local cli = require "burrow.transport.cli"

describe("burrow.transport.cli: the collector restarted at a call", function()
  local keep, freed, mode

  local function sentinel()
    freed = false
    setmetatable({}, { __gc = function() freed = true end })
  end

  -- kb KB of strings, each about 1 KB and distinct
  local function garbage(kb)
    for i = 1, kb do local _ = ("%d"):format(i):rep(1024 // #tostring(i) + 1) end
  end

  before_each(function()
    mode = collectgarbage("incremental") -- as main.c's state (busted runs generational)
    collectgarbage()
    collectgarbage("stop")
    keep = {}
    for i = 1, 4096 do keep[i] = ("k%d"):format(i):rep(200) end -- a start-up heap of some MB
  end)

  after_each(function()
    keep = nil
    collectgarbage("restart")
    collectgarbage(mode)
    collectgarbage()
  end)

  it("runs again after collect", function()
    cli.collect()
    assert.is_true(collectgarbage("isrunning"))
  end)

  it("collects once the heap has grown: garbage does not grow without bound", function()
    local heap = collectgarbage("count")
    cli.collect()
    sentinel()
    garbage(math.floor(heap * 4))
    assert.is_true(freed, "no cycle after the heap grew fourfold")
    assert.is_true(collectgarbage("count") < heap * 3, "the heap kept its garbage")
  end)
end)
