-- burrow.mcp.dispatch: from a message to its handler. One message or a
-- batch checked as JSON-RPC 2.0 asks; a client's answer to our request
-- handed to its handler (base.replies); one table of the methods with the
-- eras that have them (session: the revisions with initialize; stateless:
-- 2026-07-28, whose request carries everything in its _meta and is served
-- by burrow.mcp.stateless) and an era adapter in front of every answer.
-- Methods of the Server (burrow.mcp.base).

local core = require "burrow.core"
local json = core.json
local base = require "burrow.mcp.base"

local Server = base.Server
local META, BIG_REPLY = base.META, base.BIG_REPLY

-- The files that serve the methods, each required with the first of its
-- methods (a start that answers initialize needs only base's) and kept
-- here: the other requests, tools/list and tools/call, 2026-07-28
-- (server/discover and its adapter), listens, the tasks and
-- resource-operations extensions.
local REQUIRE = {
  handlers = function() return require "burrow.mcp.handlers" end,
  call = function() return require "burrow.mcp.call" end,
  stateless = function() return require "burrow.mcp.stateless" end,
  listen = function() return require "burrow.mcp.listen" end,
  tasks = function() return require "burrow.mcp.tasks" end,
  resource_ops = function() return require "burrow.mcp.resource_ops" end,
}
local files = setmetatable({ base = base }, { __index = function(t, name)
  local file = REQUIRE[name]()
  t[name] = file
  return file
end })

-- The methods by their name on the wire ("tools/list" is a method,
-- "tools_list" the Lua name is not), each with the file and the function
-- that serve it and the eras that have it: session (the revisions with
-- initialize) and stateless (2026-07-28).
local S, L, BOTH = { session = true }, { stateless = true }, { session = true, stateless = true }
local methods = {
  ["initialize"] = { "base", "initialize", S },
  ["ping"] = { "handlers", "ping", S },
  ["logging/setLevel"] = { "handlers", "logging_setLevel", S },
  ["resources/subscribe"] = { "handlers", "resources_subscribe", S },
  ["resources/unsubscribe"] = { "handlers", "resources_unsubscribe", S },
  ["server/discover"] = { "stateless", "discover", L },
  ["subscriptions/listen"] = { "listen", "open", L },
  ["tools/list"] = { "call", "tools_list", BOTH },
  ["tools/call"] = { "call", "tools_call", BOTH },
  ["resources/list"] = { "handlers", "resources_list", BOTH },
  ["resources/templates/list"] = { "handlers", "resources_templates_list", BOTH },
  ["resources/read"] = { "handlers", "resources_read", BOTH },
  ["prompts/list"] = { "handlers", "prompts_list", BOTH },
  ["prompts/get"] = { "handlers", "prompts_get", BOTH },
  ["completion/complete"] = { "handlers", "completion_complete", BOTH },
  -- the tasks extension (burrow.mcp.tasks); tasks/result and tasks/list are
  -- not in 2026-07-28
  ["tasks/get"] = { "tasks", "get", L },
  ["tasks/update"] = { "tasks", "update", L },
  ["tasks/cancel"] = { "tasks", "cancel", L },
  -- the resource-operations extension (burrow.mcp.resource_ops), both eras
  ["resources/stat"] = { "resource_ops", "stat", BOTH },
  ["resources/create"] = { "resource_ops", "create", BOTH },
  ["resources/update"] = { "resource_ops", "update", BOTH },
  ["resources/delete"] = { "resource_ops", "delete", BOTH },
}

-- A method's handler run (its file required first, inside the caller's pcall)
local function serve(m, self, params, id)
  return files[m[1]][m[2]](self, params, id)
end

-- What an era makes of a handler's answer: (res, code, msg, data) in, the
-- same out (2026-07-28's: burrow.mcp.stateless.adapt).
local adapt = {
  session = function(_, res, code, msg, data) return res, code, msg, data end,
  stateless = function(...) return files.stateless.adapt(...) end,
}

--- The request id is answered now with res (a tools/call's
-- CreateTaskResult, a tasks/update's empty answer) while its call goes on
-- as task task_id: where the channel can (an HTTP worker, unless every
-- other one runs a task); false when it cannot (not now, or never: stdio).
function Server:detach(id, res, task_id)
  if not (self.channel.detach and self.session.stateless) then return false end
  res = adapt.stateless("tools/call", res)
  return self.channel:detach(task_id, { jsonrpc = "2.0", id = id, result = res }) == true
end

-- Run method in era and answer it: the one place a handler is called.
function Server:dispatch(era, id, method, params)
  local m = methods[method]
  if not (m and m[3][era]) then return self:error(id, -32601, "Method not found: " .. method) end
  local ok, res, ecode, emsg, edata = pcall(serve, m, self, params, id)
  if not ok then
    io.stderr:write("burrow: internal error in ", method, ": ", tostring(res), "\n")
    return self:error(id, -32603, "internal error")
  end
  if res == nil and ecode == nil then return end -- answered already, or not at all (cancelled)
  res, ecode, emsg, edata = adapt[era](method, res, ecode, emsg, edata)
  if res == nil then return self:error(id, ecode, emsg, edata) end
  self:reply(id, res)
end

-- What the client may use as a request id: a string or a number (MCP:
-- never null).
local function valid_id(id)
  return type(id) == "string" or (type(id) == "number" and id == id and math.abs(id) ~= math.huge)
end

-- One message (not a batch). JSON-RPC 2.0: anything that is not a valid
-- Request gets -32600, with its id if it has a usable one, else null;
-- notifications (no id) are never answered; a handler that returns nil
-- without a code sends nothing (a request cancelled before it ran).
function Server:handle_one(msg)
  if type(msg) ~= "table" or getmetatable(msg) == json.array_mt then
    return self:error(nil, -32600, "Invalid Request: a message must be a JSON object")
  end
  local id, method = msg.id, msg.method
  local reply_id = valid_id(id) and id or nil
  if method == nil then
    if msg.result ~= nil or msg.error ~= nil then -- a response to a request of ours
      local on_reply = valid_id(id) and self.session.waiting[id]
      if on_reply then
        self.session.waiting[id] = nil
        if type(on_reply) == "string" then on_reply = base.replies[on_reply] or function() end end
        local ok, err = pcall(on_reply, self, msg)
        if not ok then io.stderr:write("burrow: handling the client's answer: ", tostring(err), "\n") end
      end
      return
    end
    return self:error(reply_id, -32600, "Invalid Request: no method")
  end
  if msg.jsonrpc ~= "2.0" then return self:error(reply_id, -32600, 'Invalid Request: jsonrpc must be "2.0"') end
  if type(method) ~= "string" then return self:error(reply_id, -32600, "Invalid Request: method must be a string") end
  if id ~= nil and not valid_id(id) then
    return self:error(nil, -32600, "Invalid Request: id must be a string or a number")
  end
  local params = msg.params
  if params == nil or params == json.null then params = {} end
  if type(params) ~= "table" then
    return self:error(reply_id, -32600, "Invalid Request: params must be an object")
  end
  if id == nil then -- notifications need no answer
    local note = files.handlers.on_note[method]
    if note then
      local ok, err = pcall(note, self, params)
      if not ok then io.stderr:write("burrow: internal error in ", method, ": ", tostring(err), "\n") end
    end
    return
  end
  if getmetatable(params) == json.array_mt then
    return self:error(id, -32602, "Invalid params: params must be an object, not an array")
  end
  -- a request that names its revision in _meta: served statelessly (an
  -- initialized session's own revision in _meta changes nothing)
  local meta = params._meta
  local mv = type(meta) == "table" and meta[META .. "protocolVersion"]
  if mv and (base.stateless_version(mv) or not self.session.protocol) then
    return files.stateless.handle(self, id, method, params, meta)
  end
  return self:dispatch("session", id, method, params)
end

-- Revisions whose clients may send JSON-RPC batches (2025-06-18 removed them)
local function batches_allowed(protocol)
  return protocol ~= nil and protocol < "2025-06-18"
end

function Server:handle(msg)
  if getmetatable(msg) ~= json.array_mt then return self:handle_one(msg) end
  if not batches_allowed(self.session.protocol) then
    return self:error(nil, -32600, "Invalid Request: batches are not supported in this protocol revision; send one object per line")
  end
  if #msg == 0 then return self:error(nil, -32600, "Invalid Request: empty batch") end
  -- one array of the responses, none if all were notifications
  self.batch = json.array {}
  for _, m in ipairs(msg) do
    local ok, err = pcall(self.handle_one, self, m)
    if not ok then
      self.batch = nil
      error(err, 0)
    end
  end
  local out = self.batch
  self.batch = nil
  if #out > 0 then
    local n = self.channel:send(out)
    if n and n > BIG_REPLY then self.big_garbage = true end
  end
end
