-- burrow.mcp.handlers: the MCP requests other than initialize (base.lua),
-- tools/call and the tasks and resource-operation extensions: ping,
-- logging, prompts, completions, resources; and the client's notifications
-- the server acts on. handlers.NAME(self, params, id) -> res | nil, code,
-- msg, data, as burrow.mcp.dispatch calls them, which requires this file
-- with the first of them (a start that answers initialize needs none).

local core = require "burrow.core"
local json = core.json
local base = require "burrow.mcp.base"
-- resources, the client's roots and listens: required with their first
-- use (a start that answers initialize needs none; docs/benchmarks.md, Start-up)
local function resources() return require "burrow.mcp.resources" end
local function client_roots() return require "burrow.mcp.client_roots" end
local function listen() return require "burrow.mcp.listen" end

local LEVELS = base.LEVELS

local handlers = {}

-- The operator's prompts (burrow.workspace.prompts; none by default: an empty list),
-- required with the first prompt request (a start that answers initialize
-- needs none).
local function prompts() return require "burrow.workspace.prompts" end

function handlers.prompts_list(self) return { prompts = prompts().describe(self.ws.prompt_list) } end

function handlers.prompts_get(self, params)
  local args = params.arguments
  if args == nil or args == json.null then args = {} end
  return self:with_questions("prompt:" .. tostring(params.name), args, params, function(ask)
    return prompts().get(self.ws, params, { session = self.session, ask = ask })
  end)
end

-- completion/complete: a prompt's argument (its complete function), or the
-- path under a file template (resources.complete)
function handlers.completion_complete(self, params)
  local ref, arg = params.ref, params.argument
  if type(ref) ~= "table" or type(arg) ~= "table" or type(arg.name) ~= "string" or type(arg.value) ~= "string" then
    return nil, -32602, "Invalid params: completion/complete needs ref {type, name|uri} and argument {name, value} (strings)"
  end
  if ref.type == "ref/prompt" then return prompts().complete(self.ws, ref, arg, { session = self.session }) end
  if ref.type == "ref/resource" then return resources().complete(self, ref, arg) end
  return nil, -32602, ('Invalid params: ref.type must be "ref/prompt" or "ref/resource", not %s'):format(tostring(ref.type))
end

function handlers.ping() return {} end

function handlers.resources_list(...) return resources().list(...) end
function handlers.resources_templates_list(...) return resources().templates(...) end
-- an operator resource's read may ask the client (ctx:ask), as a prompt may
function handlers.resources_read(self, params)
  return self:with_questions("resource:" .. tostring(params.uri), {}, params, function(ask)
    return resources().read(self, params, ask)
  end)
end
function handlers.resources_subscribe(...) return resources().subscribe(...) end
function handlers.resources_unsubscribe(...) return resources().unsubscribe(...) end

-- Notifications the server acts on (others are ignored, as JSON-RPC says).
handlers.on_note = {}
local on_note = handlers.on_note
on_note["notifications/initialized"] = function(...) return client_roots().ask(...) end
on_note["notifications/roots/list_changed"] = on_note["notifications/initialized"]
-- a cancel of a tool call is the stdio thread's (lserver.c); one naming a
-- listen ends it
on_note["notifications/cancelled"] = function(...) return listen().cancel(...) end

function handlers.logging_setLevel(self, params)
  if not LEVELS[params.level] then
    return nil, -32602, ("Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency (got %s)")
      :format(type(params.level) == "string" and ("%q"):format(params.level) or tostring(params.level))
  end
  self.session.log_level = params.level
  return {}
end

return handlers
