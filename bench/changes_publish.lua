-- bench/changes_publish.lua: what telling a write to the other instances
-- costs the call that wrote (issue 45, publish/subscribe): the embedded
-- store's st:change (what every workspace without Redis does after each
-- write: encode, lock, no subscriber), the same with one subscriber
-- drained as it goes, against a stat of the same path as the anchor (a
-- call that never publishes). Ratios only: a shared machine's absolute
-- times mean little. Redis's cost is one PUBLISH round trip
-- (bench/state_roundtrips.sh).
--
--   lua5.4 bench/changes_publish.lua [N]

package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "build/lua/?.so;" .. package.cpath
local burrow = require "burrow"
local core = require "burrow.core"

local N = tonumber(arg[1]) or 200000
local function per_call(fn, n)
  local t = core.now()
  for i = 1, n do fn(i) end
  return (core.now() - t) / n * 1e6
end

local st = core.state_open { kind = "memory" }
local none = per_call(function() st:change("t", "/workspace", "src/file.txt", false) end, N)
local sub = assert(st:subscribe("t", { "changes" }))
local one = per_call(function(i)
  st:change("t", "/workspace", "src/file.txt", false)
  if i % 200 == 0 then while sub:next() do end end
end, N)
sub:close()
local d = os.tmpname()
os.remove(d)
os.execute("mkdir -p " .. d .. " && echo x > " .. d .. "/f.txt")
local ws = assert(burrow.open { roots = { { path = d } } })
local stat = per_call(function() assert(ws:call("stat", { path = "f.txt" })) end, math.max(1000, N // 20))
ws:close()
os.execute("rm -rf " .. d)
print(("st:change, no subscriber:  %.2f us a call (%.3f of a stat call)"):format(none, none / stat))
print(("st:change, one subscriber: %.2f us a call (%.3f of a stat call)"):format(one, one / stat))
print(("stat (the anchor):         %.2f us a call"):format(stat))
