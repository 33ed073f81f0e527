-- bench/staged_ops.lua: what a staged folder operation costs against an
-- anchor in the same run, a one-file move (a plain rename: no stage, no
-- intent record). A folder move or remove writes its intent record and
-- its journal pointer durably (four syncs) before the source goes aside
-- (docs/security.md, "Staging survives a crash"); a plain folder copy
-- syncs none. Medians of rounds on a two-file folder one level below the
-- root; ratios to the anchor
-- (absolute times on a shared machine mean little).
--
--   lua5.4 bench/staged_ops.lua [ROUNDS]    (from the repository, after make)

package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "build/lua/?.so;" .. package.cpath

local burrow = require "burrow"
local clock = require("system").gettime

local ROUNDS, N = tonumber(arg[1]) or 7, 50
local dir = os.tmpname()
os.remove(dir)
-- in a subfolder: its records need a pointer in the root's journal (the root's own don't)
assert(os.execute("mkdir -p " .. dir .. "/p/a && echo 1 > " .. dir .. "/p/a/f1 && echo 2 > " .. dir .. "/p/a/f2 && echo x > " .. dir .. "/p/x"))
local ws = assert(burrow.open{roots = {{path = dir}}})

local function each(fn)
  local t = clock()
  for i = 1, N do fn(i) end
  return (clock() - t) * 1000 / N
end

local cases = {
  {"file move (anchor)", function(i) assert(ws:call("move", {source = i % 2 == 1 and "p/x" or "p/y", destination = i % 2 == 1 and "p/y" or "p/x"})) end},
  {"folder move", function(i) assert(ws:call("move", {source = i % 2 == 1 and "p/a" or "p/b", destination = i % 2 == 1 and "p/b" or "p/a"})) end},
  {"folder copy + remove", function() assert(ws:call("copy", {source = "p/a", destination = "p/c", recursive = true})); assert(ws:call("remove", {path = "p/c", recursive = true})) end},
}
local times = {}
for _ = 1, ROUNDS do
  for k, c in ipairs(cases) do
    times[k] = times[k] or {}
    table.insert(times[k], each(c[2]))
  end
end
local function median(t) table.sort(t) return t[(#t + 1) // 2] end
local anchor = median(times[1])
for k, c in ipairs(cases) do
  local m = median(times[k])
  print(("%-22s %8.2f ms  %6.1fx"):format(c[1], m, m / anchor))
end
ws:close()
os.execute("rm -rf " .. dir)
