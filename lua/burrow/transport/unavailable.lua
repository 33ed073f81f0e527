-- burrow.transport.unavailable: what `burrow mcp` serves when its configuration does
-- not load (without --strict-start): the server still answers initialize
-- and lists the native tools, and every tool call fails with the
-- configuration's error, so the operator sees it in the MCP client rather
-- than a dead server. It opens no root: nothing can be read or written.
-- SIGHUP reloads the configuration as usual and replaces it.

local caps = require "burrow.base.caps"
local registry = require "burrow.workspace.registry"
local json = require("burrow.core").json

local Unavailable = {}
Unavailable.__index = Unavailable

local unavailable = {}

function unavailable.new(message)
  local list, by_name = registry.load_all(nil, {})
  if not list then list, by_name = {}, {} end
  return setmetatable({ message = message, tool_list = list, tool_by_name = by_name,
    caps = caps.merge({}) }, Unavailable)
end

function Unavailable:tools(opts) return registry.format(self.tool_list, opts and opts.format) end
function Unavailable:tool(name) return self.tool_by_name[name] end
function Unavailable:mounts() return {} end
function Unavailable:render(_, res) return json.encode(res), res end
function Unavailable:close() end

function Unavailable:call()
  return nil, "CONFIG_ERROR: burrow's configuration did not load, so no tool runs until the operator fixes it: "
    .. self.message, "CONFIG_ERROR"
end
-- ws:run, the call as the MCP edge makes it (burrow.toolkit.printer): the same refusal
Unavailable.run = Unavailable.call

return unavailable
