-- burrow.core, burrow.server and burrow.host in a plain Lua 5.4: three
-- files beside each other (core.so, server.so, host.so), the two upper
-- ones linked against the core.so of their own directory, so a process
-- that loads them in any order has one copy of the core and its state.
-- Each case runs in a fresh lua5.4 (H.lua_child, this run's cpath: the
-- build's), so the load order is the case's own.

local H = require "helpers"

-- The directory of the core.so this run loads (build/lua/burrow).
local core_file = assert(package.searchpath("burrow.core", package.cpath))
local so_dir = core_file:match("^(.*)/")

-- A child's lines after the modules named were required in that order:
-- "mapped PATH" for each burrow .so file in its address space (one line a
-- file, whatever its number of mappings), and what the extra source prints.
local function child(order, extra)
  local src = ([[
for name in (%q):gmatch("[^,]+") do require(name) end
local seen = {}
%s
for line in io.lines("/proc/self/maps") do
  local ino, path = line:match("^%%S+ %%S+ %%S+ %%S+ (%%d+)%%s+(/%%S+)$")
  if path and path:match("/burrow/[a-z]+%%.so$") and not seen[ino] then
    seen[ino] = true
    print("mapped " .. path)
  end
end
]]):format(order, extra or "")
  local out, code = H.lua_child(src, 60)
  assert.equal(0, code, out)
  local mapped, lines = {}, {}
  for line in out:gmatch("[^\n]+") do
    local path = line:match("^mapped (.*)$")
    if path then mapped[#mapped + 1] = path:match("[^/]+$") else lines[#lines + 1] = line end
  end
  table.sort(mapped)
  return mapped, lines, out
end

describe("burrow's Lua modules, one file a layer", function()
  after_each(H.cleanup) -- the cases' folders and the children's scripts (H.lua_child)

  it("server.so and host.so sit beside core.so", function()
    assert.truthy(H.exists(so_dir, "server.so"), so_dir)
    assert.truthy(H.exists(so_dir, "host.so"), so_dir)
  end)

  for _, order in ipairs {
    "burrow.core,burrow.server,burrow.host",
    "burrow.server,burrow.core", -- the upper module first: it brings core.so
    "burrow.host,burrow.server,burrow.core",
    "burrow,burrow.server,burrow.host", -- through burrow/init.lua's offer
  } do
    it("required in the order " .. order .. ", the process maps one core.so", function()
      local mapped = child(order)
      local want = { "core.so" }
      if order:find("burrow.host", 1, true) then want[#want + 1] = "host.so" end
      if order:find("burrow.server", 1, true) then want[#want + 1] = "server.so" end
      table.sort(want)
      assert.same(want, mapped)
    end)
  end

  it("require 'burrow' alone opens neither server.so nor host.so", function()
    assert.same({ "core.so" }, (child("burrow")))
  end)

  -- burrow.server's stdio registers the process's cancel source in the
  -- core (server/lserver.c, core/stop.c): a call it has in flight, cancelled,
  -- stops the walks of burrow.core's grep. With a copy of the core of its
  -- own, server.so would register it in that copy and grep would not stop.
  it("burrow.server and burrow.core share the core: the stdio call's cancel stops burrow.core's grep", function()
    local dir = H.tmpdir()
    for i = 1, 50 do H.write(dir, ("f%d.txt"):format(i), "needle\n") end
    local stdin = H.write(H.tmpdir(), "stdin",
      '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7}}\n')
    local src = ([[
local server = require "burrow.server"
local burrow = require "burrow"
local ws = assert(burrow.open { roots = { { path = %q } } })
local function grep(when)
  local r, msg = ws:call("grep", { pattern = "needle" })
  assert(r, msg)
  print(when, tostring(r.cancelled), r.cancelled and "" or #r.matches)
end
grep("before")
local io_ = server.stdio()
while io_:next() do end -- the cancel of call 7 comes before the call
print("begin", io_:begin(7))
grep("during")
io_:finish()
grep("after")
]]):format(dir)
    local script = H.write(H.tmpdir(), "child.lua", src)
    local out, ok = H.run(("cd %s && LUA_PATH=%s LUA_CPATH=%s timeout -s KILL 60 lua5.4 %s < %s 2>&1"):format(
      H.q(H.REPO), H.q(package.path), H.q(package.cpath), H.q(script), H.q(stdin)))
    assert.truthy(ok, out)
    assert.equal("before\tfalse\t50\nbegin\ttrue\nduring\ttrue\t\nafter\tfalse\t50\n", out)
  end)

  -- burrow.host runs submitted calls in a Lua state of its own, whose
  -- burrow.core it opens from C (api.c: bw_lua_preload). An operator's tool
  -- there looks an undo store up by id in the core's process-wide registry
  -- (core/undo.c): it finds the one this state published only if both
  -- states run the same core.so.
  it("burrow.host and burrow.core share the core: a submitted call finds an undo store this state published", function()
    local tools = H.tmpdir()
    local probe = H.write(tools, "undo_probe.lua", [[
local core = require "burrow.core"
return {
  name = "undo_probe",
  description = "test only: whether this state's core finds the undo store published as id",
  input_schema = { type = "object", properties = { id = { type = "string" } }, required = { "id" } },
  handler = function(_, a) return { found = core.undo_find(a.id) ~= nil } end,
}
]])
    local src = ([[
local core = require "burrow.core"
local burrow = require "burrow"
local ws = assert(burrow.open { roots = { { path = %q } }, tools = { %q } })
local store = core.undo_store { cap = 1024, max_records = 64 }
local id = store:id()
local function submitted(args)
  local got
  assert(ws:submit("undo_probe", args, function(r, msg) got = r or msg end))
  local t0 = os.time()
  while got == nil and os.time() - t0 < 30 do ws:poll() end
  return got
end
print("call", ws:call("undo_probe", { id = id }).found)
print("submit", submitted({ id = id }).found)
print("other", submitted({ id = ("0"):rep(32) }).found)
ws:close()
]]):format(H.tmpdir(), probe)
    local _, lines, out = child("burrow.core", src)
    assert.same({ "call\ttrue", "submit\ttrue", "other\tfalse" }, lines, out)
  end)
end)
