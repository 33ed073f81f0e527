-- host/luac.lua: precompile one Lua file for `make install` (build tool,
-- not installed). Usage: lua5.4 host/luac.lua SRC NAME OUT
-- The bytecode keeps its debug info under the chunk name @NAME, the path
-- the file has once installed (without DESTDIR), so error messages and
-- burrow.base.files' debug.getinfo-based directory lookup see the real place.
-- Loading bytecode skips parsing: about 2 ms of a `burrow call` start-up.
-- Line numbers stay (messages and tracebacks say file:line); the names of
-- local variables and upvalues go: loading interns every one of them, a
-- third of the strings a start-up interns (docs/benchmarks.md, Start-up).
-- A message that named a local ("(local 'x')") names none.
-- With --text (a standard policy): OUT is the source text, then its
-- bytecode with every name kept. burrow.policy uses the bytecode only when
-- the text before it is, byte for byte, the NAME file it loads (so an
-- edited policy file is parsed as before), and the sandbox then loads that
-- binary chunk: it is burrow's own, installed beside its own modules
-- (docs/policies.md, "Limits"; docs/benchmarks.md, Start-up).
local src, name, out, mode = ...
assert(src and name and out and (mode == nil or mode == "--text"),
  "usage: lua5.4 host/luac.lua SRC NAME OUT [--text]")
local f = assert(io.open(src, "rb"))
local text = f:read("a")
f:close()
local fn = assert(load(text, "@" .. name, "t"))
local dump = string.dump(fn)
if mode == "--text" then
  local o = assert(io.open(out, "wb"))
  assert(o:write(text, dump))
  assert(o:close())
  return
end

-- Lua 5.4's dump (lundump.c): sizes as 7-bit groups, the last marked 0x80
local pos, parts = 1, {}
local function copy(n)
  parts[#parts + 1] = dump:sub(pos, pos + n - 1)
  pos = pos + n
end
local function size()
  local x, start = 0, pos
  repeat
    local b = dump:byte(pos)
    pos = pos + 1
    x = (x << 7) | (b & 0x7f)
  until b & 0x80 ~= 0
  return x, dump:sub(start, pos - 1)
end
local function copy_size()
  local x, raw = size()
  parts[#parts + 1] = raw
  return x
end
local function copy_string()
  local n = copy_size()
  if n > 0 then copy(n - 1) end
end
local function skip_string()
  local n = size()
  if n > 0 then pos = pos + n - 1 end
end

local function func()
  copy_string()          -- source
  copy_size(); copy_size() -- linedefined, lastlinedefined
  copy(3)                -- numparams, is_vararg, maxstacksize
  copy(copy_size() * 4)  -- code
  for _ = 1, copy_size() do -- constants
    local t = dump:byte(pos)
    copy(1)
    if t == 3 or t == 19 then copy(8) -- integer, float
    elseif t == 4 or t == 20 then copy_string() end
  end
  copy(copy_size() * 3)  -- upvalues: instack, idx, kind
  for _ = 1, copy_size() do func() end
  copy(copy_size())      -- lineinfo
  for _ = 1, copy_size() do copy_size(); copy_size() end -- abslineinfo
  for _ = 1, size() do skip_string(); size(); size() end -- locvars: dropped
  parts[#parts + 1] = "\x80"
  for _ = 1, size() do skip_string() end -- upvalue names: dropped
  parts[#parts + 1] = "\x80"
end

assert(dump:sub(1, 6) == "\27LuaT\0", "host/luac.lua: not a Lua 5.4 dump")
copy(4 + 2 + 6 + 3 + 8 + 8 + 1) -- header, the main function's upvalue count
func()
assert(pos == #dump + 1, "host/luac.lua: the dump was not read to its end")
local stripped = table.concat(parts)
assert(load(stripped, "=" .. name, "b"), "host/luac.lua: the stripped dump does not load")

local o = assert(io.open(out, "wb"))
assert(o:write(stripped))
assert(o:close())
