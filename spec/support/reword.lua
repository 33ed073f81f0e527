-- Test-only (never installed): every native message a pack receives
-- reworded, so a pack that reads the wording instead of codes and details
-- fails. The packs-reworded stage of test/run-all.sh sets
-- BURROW_TEST_REWORD and spec/helpers.lua calls this; burrow itself has no
-- hook for it and reads no such variable.
--
--   require("support.reword")(function(msg, code) return new_msg end)
--
-- It wraps the workspace's call_native (ctx:call's way to a native tool)
-- in this Lua state: the native call answers as before, the pack sees
-- the new message.

local burrow = require "burrow"

return function(reword)
  local probe = assert(burrow.open { roots = { { path = "/", mode = "ro" } } })
  local Workspace = getmetatable(probe) -- the class every workspace shares
  probe:close()
  local native = Workspace.call_native
  Workspace.call_native = function(self, ...)
    local res, msg, code, details = native(self, ...)
    if res == nil then msg = reword(msg, code) end
    return res, msg, code, details
  end
end
