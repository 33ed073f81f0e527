-- crash_child.lua ROOT NAME READY SECONDS: the victim of crash_spec.lua.
-- Opens ROOT with burrow, builds two 4 MiB contents A and B, signals READY,
-- then rewrites ROOT/NAME alternating B, A, B, ... through write_file until
-- it is killed (the parent sends SIGKILL) or SECONDS pass.

local root, name, ready, limit = arg[1], arg[2], arg[3], tonumber(arg[4]) or 5
local burrow = require "burrow"
local ws = assert(burrow.open{roots = {{path = root, mode = "rw"}}, resolver = os.getenv("BURROW_RESOLVER")})

local MIB4 = 4 * 1024 * 1024
local contents = {
  string.rep(string.rep("A", 63) .. "\n", MIB4 // 64),
  string.rep(string.rep("B", 63) .. "\n", MIB4 // 64),
}

local f = assert(io.open(ready, "w"))
f:write("ready\n")
f:close()

local t0 = os.time()
local i = 0
while os.time() - t0 < limit and i < 1000 do
  i = i + 1
  local res, msg = ws:call("write_file", {path = name, content = contents[i % 2 + 1]})
  if not res then
    io.stderr:write("write_file failed: ", tostring(msg), "\n")
    os.exit(3)
  end
end
ws:close()
