-- burrow.mcp.stateless: MCP 2026-07-28, the revision without initialize,
-- whose requests carry everything in their _meta: a request checked and
-- served with a record of its own (stateless.handle, from
-- burrow.mcp.dispatch), server/discover, and the era's adapter of every
-- answer (resultType, serverInfo, cache hints). Required with the first
-- such request (a start that answers initialize needs none:
-- docs/benchmarks.md, Start-up).

local core = require "burrow.core"
local json = core.json
local session = require "burrow.mcp.session"
-- listens: required with their first use
local function listen() return require "burrow.mcp.listen" end
local base = require "burrow.mcp.base"

local META, LEVELS = base.META, base.LEVELS
local SERVER_INFO, INSTRUCTIONS = base.SERVER_INFO, base.INSTRUCTIONS

local stateless = {}

local function all_versions()
  local out = json.array {}
  for _, v in ipairs(base.stateless_versions) do out[#out + 1] = v end
  for _, v in ipairs(base.versions) do out[#out + 1] = v end
  return out
end

-- What the stateless revision honours: resource updates on a
-- subscriptions/listen stream; list changes only where the lists can
-- change (a stdio server that reloads on SIGHUP); no server-to-client
-- requests outside a call (a call asks through MRTR).
local function stateless_caps(self)
  local lists = listen().lists_change(self) or nil
  return { tools = { listChanged = lists }, prompts = { listChanged = lists },
    -- stdio serves listens on its channel; HTTP (a Server with a session
    -- id) on a stream of their own
    resources = { subscribe = (self.channel.can_listen or self.channel.sid ~= nil) or nil, listChanged = lists },
    logging = {}, completions = {},
    extensions = { [require("burrow.mcp.tasks").EXT] = {}, [base.RESOURCE_OPS_EXT] = base.resource_ops_capability() },
    experimental = { [base.RESOURCE_OPS_EXT] = base.resource_ops_capability() } }
end

--- server/discover's answer
function stateless.discover(self)
  return { supportedVersions = all_versions(), capabilities = stateless_caps(self), instructions = INSTRUCTIONS }
end

-- How long a client or a cache may keep a result, and for whom: file
-- contents and the file list change at any time (0: ask again); the lists
-- of tools, templates and prompts change with the configuration. Private:
-- what a tenant sees is its own.
local CACHE_HINTS = {
  ["tools/list"] = { 60000, "private" },
  ["prompts/list"] = { 60000, "private" },
  ["resources/templates/list"] = { 60000, "private" },
  ["resources/list"] = { 0, "private" },
  ["resources/read"] = { 0, "private" },
  ["resources/stat"] = { 0, "private" },
  ["server/discover"] = { 60000, "public" },
}

--- What 2026-07-28 makes of a handler's answer: (res, code, msg, data) in,
-- the same out. A URI that names no file is -32602 with the uri
-- (SEP-2164), not -32002; each result is marked complete with the
-- server's info and, for lists and reads, how long it may be kept.
function stateless.adapt(method, res, code, msg, data)
  if res == nil and code == -32002 and method == "resources/read" then
    return nil, -32602, "Resource not found: " .. msg, data
  end
  if res == nil then return nil, code, msg, data end
  res.resultType = res.resultType or "complete"
  res._meta = res._meta or {}
  res._meta[META .. "serverInfo"] = SERVER_INFO
  local hint = CACHE_HINTS[method]
  if hint then res.ttlMs, res.cacheScope = hint[1], hint[2] end
  return res
end

--- A request of the stateless revision: everything it needs is in its
-- _meta (revision, client capabilities, log level), so it is served the
-- same on any worker, over stdio or HTTP, beside any session. The
-- Server's own fields are set for the call and put back after it.
function stateless.handle(self, id, method, params, meta)
  local v = meta[META .. "protocolVersion"]
  if not base.stateless_version(v) then
    return self:error(id, -32022, ("Unsupported protocol version: %s"):format(tostring(v)),
      { supported = all_versions(), requested = type(v) == "string" and v or tostring(v) })
  end
  local caps = meta[META .. "clientCapabilities"]
  if type(caps) ~= "table" or getmetatable(caps) == json.array_mt then
    return self:error(id, -32602, 'Invalid params: params._meta must carry "' .. META
      .. 'clientCapabilities" (an object; {} for none)')
  end
  local level = meta[META .. "logLevel"]
  if level ~= nil and not LEVELS[level] then
    return self:error(id, -32602, "Invalid params: _meta logLevel must be one of debug, info, notice, warning, error, critical, alert, emergency")
  end
  -- the request's own record, from its _meta; the connection's is back after it
  local kept = self.session
  self.session = session.stateless(kept, v, caps, meta[META .. "clientInfo"], level)
  local ok, err = pcall(self.dispatch, self, "stateless", id, method, params)
  session.settle(kept, self.session)
  self.session = kept
  if not ok then error(err, 0) end
end

return stateless
