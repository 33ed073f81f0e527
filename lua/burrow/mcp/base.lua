-- burrow.mcp.base: the MCP Server's table (burrow.mcp builds one, the
-- other files of mcp/ add its methods) and how it speaks: the revisions and
-- initialize, which negotiates one, the wire's names, messages out (send,
-- reply, error, notify, a request to the client, a log line) and the key
-- that signs its approval states.

local core = require "burrow.core"
local json = core.json
-- burrow.mcp.client_roots: required with the first roots/list answer
local function client_roots() return require "burrow.mcp.client_roots" end
-- burrow.mcp.approvals: required with the first approval (a start that
-- answers initialize needs none)
local function approvals() return require "burrow.mcp.approvals" end

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

--- The key that signs this process's approval states (MRTR): the
-- deployment's (HTTP: http.approval_key_file, set by burrow.transport.http; with a
-- deployment's store and no file, the store's, got at first need:
-- approval_shared), else one drawn at first use, which only this process
-- knows. nil, why and STORE_UNAVAILABLE when the store's is needed and the
-- store does not answer.
function Server:mrtr_key()
  if not self.approval_key and self.approval_shared then
    local key, why = approvals().shared_key(self.ws.state)
    if not key then return nil, why, "STORE_UNAVAILABLE" end
    self.approval_key = key
  end
  self.approval_key = self.approval_key or core.random_hex(32)
  return self.approval_key
end

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

--- A request to the client; on_reply(self, msg) gets its response
-- (msg.result or msg.error) when it comes, from the main loop: a name in
-- mcp.replies, or a function.
local MAX_WAITING = 64 -- our requests the client has not answered, at most

function Server:request(method, params, on_reply)
  local n = 0
  for _ in pairs(self.session.waiting) do n = n + 1 end
  if n >= MAX_WAITING then -- a client that never answers cannot grow the table
    io.stderr:write("burrow: ", method, " not sent: the client has not answered ", n, " requests of ours\n")
    return nil
  end
  self.session.next_id = self.session.next_id + 1
  local id = "burrow-" .. self.session.next_id
  self.session.waiting[id] = on_reply
  self:send { id = id, method = method, params = params }
  return id
end

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

-- A request refused because the deployment's state store, which its
-- approval state needs (the key that signs it, the mark that uses it
-- once), does not answer: fail closed, and say it is not the client's
-- fault.
function base.store_down(who, why)
  return ("STORE_UNAVAILABLE: %s: refused: the approval needs the shared state store (Redis/Valkey), which does not "
    .. "answer (%s); nothing was changed: retry"):format(who, tostring(why))
end

return base
