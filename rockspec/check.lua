-- `luarocks test` (the rockspec's test section): the installed rock under
-- whichever Lua LuaRocks runs it with. Opens a workspace on a new folder,
-- writes and reads a file, with a callback too, and sees an escape refused.
-- Prints "burrow rock check: ok (...)" or raises. LuaRocks runs it with
-- Lua's own paths: for a tree of your own, eval "$(luarocks path --tree=DIR)"
-- first.
local found, burrow = pcall(require, "burrow")
if not found then
  error("burrow is not on this Lua's paths (a tree of your own? eval \"$(luarocks --lua-version=X --tree=DIR path)\" first):\n" .. tostring(burrow), 0)
end
local p = assert(io.popen("mktemp -d /tmp/burrow-rockcheck.XXXXXX"))
local dir = p:read("*l")
p:close()
local ok, err = pcall(function()
  local ws = assert(burrow.open { roots = { { path = dir, mount = "/w" } } })
  assert(ws:call("write_file", { path = "/w/a.txt", content = "hello\n" }))
  assert(assert(ws:call("read_file", { path = "/w/a.txt" })).content == "1\thello\n")
  local _, _, code = ws:call("read_file", { path = "/w/../etc/passwd" })
  assert(code == "OUTSIDE_ROOT", "an escape was not refused: " .. tostring(code))
  local got
  assert(ws:call("stat", { path = "/w/a.txt" }, function(res) got = res end))
  for _ = 1, 1e7 do
    if got then break end
    ws:poll()
  end
  assert(got and got.size == 6, "the call with a callback never finished")
  ws:close()
end)
os.execute("rm -rf '" .. dir .. "'")
assert(ok, err)
print(("burrow rock check: ok (%s, %s)"):format(_VERSION .. (jit and " " .. jit.version or ""),
  burrow.backend or "the Lua 5.4 binding"))
