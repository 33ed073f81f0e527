-- host/luac.lua: precompile one Lua file for `make install` (build tool,
-- not installed). Usage: lua5.4 host/luac.lua SRC NAME OUT
-- The bytecode keeps its debug info under the chunk name @NAME, the path
-- the file has once installed (without DESTDIR), so error messages and
-- burrow.base.files' debug.getinfo-based directory lookup see the real place.
-- Loading bytecode skips parsing: about 2 ms of a `burrow call` start-up.
local src, name, out = ...
assert(src and name and out, "usage: lua5.4 host/luac.lua SRC NAME OUT")
local f = assert(io.open(src, "rb"))
local text = f:read("a")
f:close()
local fn = assert(load(text, "@" .. name, "t"))
local o = assert(io.open(out, "wb"))
assert(o:write(string.dump(fn)))
assert(o:close())
