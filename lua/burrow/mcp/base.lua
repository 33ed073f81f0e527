-- burrow.mcp.base: the MCP Server's table (burrow.mcp builds one, the
-- other files of mcp/ add its methods) and how it speaks: the revisions and
-- initialize, which negotiates one, the wire's names, messages out (send,
-- reply, error, notify, a log line; a request to the client is ask.lua's,
-- the key that signs approval states approvals.lua's).

local core = require "burrow.core"
local json = core.json
-- burrow.mcp.client_roots: required with the first roots/list answer
local function client_roots() return require "burrow.mcp.client_roots" end

local base = {}

-- The resource-operations extension's name and capability entry (no
-- resources/directory/read here): initialize says them, and
-- burrow.mcp.resource_ops, which serves it, is required with its first call.
base.RESOURCE_OPS_EXT = "io.modelcontextprotocol/resource-operations"
function base.resource_ops_capability() return { directoryRead = false } end

base.versions = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" } -- the session revisions
-- The stateless revisions: no initialize; each request names its revision
-- and the client's capabilities in params._meta (burrow.mcp.stateless).
base.stateless_versions = { "2026-07-28" }
function base.stateless_version(v)
  for _, s in ipairs(base.stateless_versions) do
    if s == v then return true end
  end
  return false
end
local META = "io.modelcontextprotocol/"
base.META = META

local Server = {}
Server.__index = Server
base.Server = Server

local BIG_REPLY = 1024 * 1024
base.BIG_REPLY = BIG_REPLY

function Server:send(msg)
  msg.jsonrpc = "2.0"
  local n = self.channel:send(msg)
  if n and n > BIG_REPLY then self.big_garbage = true end
end

-- A response: sent at once, or kept for the batch being answered
-- (notifications during a batch still go out at once).
function Server:respond(msg)
  if self.batch then
    msg.jsonrpc = "2.0"
    self.batch[#self.batch + 1] = msg
  else
    self:send(msg)
  end
end

function Server:reply(id, result)
  self:respond { id = id, result = result }
end

function Server:error(id, code, message, data)
  self:respond { id = id == nil and json.null or id, error = { code = code, message = message, data = data } }
end

--- Every message the server starts goes out through these two (log
-- lines, progress, resource changes, requests to the client): the
-- channel's send (over stdio a line on the locked stdout; over HTTP the
-- POST's stream, or the session's GET stream).
function Server:notify(method, params)
  self:send { method = method, params = params }
end

-- Handlers of the client's answers, by name: a request waiting for its
-- answer is remembered by the name, which travels with an HTTP session's
-- state to whichever worker the answer reaches (a function would keep the
-- session on its worker).
base.replies = { roots = function(...) return client_roots().on_list(...) end }

-- RFC 5424 severities, as MCP's logging levels
local LEVELS = { debug = 1, info = 2, notice = 3, warning = 4, error = 5, critical = 6, alert = 7, emergency = 8 }
base.LEVELS = LEVELS

--- notifications/message (logger "burrow") at or above the level the
-- client set; nothing before it set one.
function Server:log(level, message, fields)
  local min = self.session.log_level and LEVELS[self.session.log_level]
  if not min or LEVELS[level] < min then return end
  local data = { message = message }
  for k, v in pairs(fields or {}) do data[k] = v end
  self:notify("notifications/message", { level = level, logger = "burrow", data = data })
end

base.SERVER_INFO = { name = "burrow", title = "burrow filesystem tools", version = core.version }
base.INSTRUCTIONS = "Filesystem tools sandboxed to the workspace roots. Paths are relative to the first root or absolute under a root's mount."

local function negotiate(requested)
  for _, v in ipairs(base.versions) do
    if v == requested then return v end
  end
  return base.versions[1]
end

--- initialize (the session revisions): the revision negotiated, what the
-- client said of itself kept in the session's record, the server's
-- capabilities and info. As burrow.mcp.dispatch calls a handler.
function base.initialize(self, params)
  if type(params.protocolVersion) ~= "string" then
    return nil, -32602, "Invalid params: initialize needs protocolVersion (a string)"
  end
  self.session.protocol = negotiate(params.protocolVersion)
  self.session.client = params.clientInfo
  self.session.client_caps = type(params.capabilities) == "table" and params.capabilities or {}
  return {
    protocolVersion = self.session.protocol,
    capabilities = { tools = { listChanged = true }, logging = {}, prompts = {}, completions = {},
      resources = { subscribe = true, listChanged = true },
      -- the resource-operations strawman (provisional): where its text
      -- puts it, and as experimental, the field every revision has
      extensions = { [base.RESOURCE_OPS_EXT] = base.resource_ops_capability() },
      experimental = { [base.RESOURCE_OPS_EXT] = base.resource_ops_capability() } },
    serverInfo = base.SERVER_INFO,
    instructions = base.INSTRUCTIONS,
  }
end

return base
