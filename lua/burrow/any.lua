-- require "burrow" from a rock for Lua 5.1, 5.2, 5.3 or LuaJIT (installed
-- as burrow/init.lua there; the 5.4 rock has the whole binding instead,
-- lua/burrow/init.lua). Under LuaJIT it is burrow.ffi; elsewhere the same
-- workspace (burrow.bridge) over burrow.native, the rock's small C module.
-- Either way the tools and policies run in libburrow's own sandboxed Lua
-- 5.4 state; this Lua only calls in. docs/embedding.md, "Any Lua".
if type(jit) == "table" then return require "burrow.ffi" end

return require("burrow.bridge").module(require("burrow.native").load, "burrow.native")
