-- burrow.mcp.reload: SIGHUP over stdio (Server:reload), required with
-- the first (burrow.mcp's LATER): the workspace built again from the
-- files, the old one kept if that fails, the client told what changed.

local core = require "burrow.core"
local json = core.json
-- resources, the client's roots and listens: required with their first use
local function resources() return require "burrow.mcp.resources" end
local function client_roots() return require "burrow.mcp.client_roots" end
local function listen() return require "burrow.mcp.listen" end
local base = require "burrow.mcp.base"
local handlers = require "burrow.mcp.handlers"

local Server = base.Server

-- Build the workspace again from the files; keep the old one if that
-- fails; tell the client when the tool list changed.
function Server:reload()
  if not self.reopen then return end
  local ws, err = self.reopen()
  if not ws then
    io.stderr:write("burrow: reload failed, keeping the previous configuration: ", tostring(err), "\n")
    self:log("error", "reload failed, keeping the previous configuration: " .. tostring(err))
    return
  end
  local before = json.encode(self.ws:tools { format = "mcp" })
  local prompts_before = json.encode(handlers.prompts_list(self))
  self.ws:close()
  self.ws = ws
  io.stderr:write("burrow: reloaded configuration, tools and policies\n")
  self:log("notice", "reloaded configuration, tools and policies")
  if json.encode(ws:tools { format = "mcp" }) ~= before then
    if self.session.protocol then self:notify("notifications/tools/list_changed") end
    listen().changed(self, "toolsListChanged")
  end
  if json.encode(handlers.prompts_list(self)) ~= prompts_before then listen().changed(self, "promptsListChanged") end
  client_roots().apply(self) -- the client's roots within the new configuration
  listen().rewatch(self)
  listen().changed(self, "resourcesListChanged")
  if not self.session.scope then
    resources().resubscribe(self)
    if self.session.protocol then self:notify("notifications/resources/list_changed") end
  end
end
return true -- its part is the Server's method
