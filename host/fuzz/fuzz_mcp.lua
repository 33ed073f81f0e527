-- fuzz_mcp.lua: the checks fuzz_mcp.c runs on each input (raises when one
-- fails). Called with the directory of a small tree.
local dir = ...
local burrow = require "burrow"
local core = require "burrow.core"
local mcp = require "burrow.mcp"
local json = core.json

local MAX_LINE = 4096 -- max_request for the stand-in: longer lines are dropped
local ws = assert(burrow.open { roots = { { path = dir, mode = "ro" } } })

-- stderr: the server's word for a handler that raised
local stderr_text = {}
io.stderr = { write = function(self, ...)
  for _, s in ipairs { ... } do stderr_text[#stderr_text + 1] = tostring(s) end
  return self
end }

-- The lines lserver.c's reader queues: split at "\n", one "\r" before it
-- dropped, a line over the limit an "oversize" event (false), a last line
-- without "\n" kept.
local function split(text)
  local lines, pos = {}, 1
  while pos <= #text do
    local nl = text:find("\n", pos, true)
    local line = text:sub(pos, (nl or #text + 1) - 1)
    if #line > MAX_LINE then lines[#lines + 1] = false
    else lines[#lines + 1] = (line:gsub("\r$", "")) end
    pos = (nl or #text) + 1
  end
  return lines
end

-- burrow.server.stdio's object, over those lines; what is sent is kept.
local function stand_in(lines)
  local io, i = { sent = {} }, 0
  function io:next()
    i = i + 1
    local l = lines[i]
    if l == false then return false, "oversize" end
    return l
  end
  function io:send(msg)
    local s = json.encode(msg) -- raises as io_send does when it cannot
    self.sent[#self.sent + 1] = s
    return #s
  end
  function io:write(s) self.sent[#self.sent + 1] = s end
  -- begin(id): the request's id as a value; true when it was cancelled
  -- before it started (lserver.c io_begin)
  function io:begin(id)
    assert(type(id) == "number" or type(id) == "string", "begin without the request's id")
    return false
  end
  function io:finish() end
  function io:cancelled() return false end
  -- start(): lserver.c's reader thread and SIGHUP watcher; none here
  function io:start() return true end
  return setmetatable(io, { __index = function(_, k)
    error("fuzz_mcp: the stand-in for burrow.server.stdio has no " .. tostring(k) .. " (lserver.c has it?)")
  end })
end

-- Replies the lines call for (the server's rule, docs/tools.md): every
-- request (a valid object with a string method and an id), every message
-- that is not valid JSON-RPC (bad JSON, not an object, jsonrpc not "2.0",
-- a method that is no string, params that are no object or array, an id
-- but no method) and every dropped line; nothing for valid notifications
-- and responses. nil when a line is a batch (its answer depends on the
-- revision the session negotiated).
local function due_for(m)
  if type(m) ~= "table" then return 1 end
  if getmetatable(m) == json.array_mt then return nil end
  if m.method == nil then
    return (m.result ~= nil or m.error ~= nil) and 0 or 1
  end
  if m.jsonrpc ~= "2.0" or type(m.method) ~= "string" then return 1 end
  if m.params ~= nil and type(m.params) ~= "table" then return 1 end
  return m.id == nil and 0 or 1
end

local function replies_due(lines)
  local n = 0
  for _, l in ipairs(lines) do
    if l == false then
      n = n + 1
    elseif l:find("%S") then
      local d = due_for(json.decode(l))
      if d == nil then return nil end
      n = n + d
    end
  end
  return n
end

return function(text)
  local lines = split(text)
  local io = stand_in(lines)
  package.loaded["burrow.server"] = { stdio = function() return io end } -- Server:run's transport
  stderr_text = {}
  local server = mcp.new(ws)
  local ok, err = pcall(server.run, server, MAX_LINE)
  assert(ok, "the server loop ended with an error: " .. tostring(err))
  local said = table.concat(stderr_text)
  assert(not said:find("internal error", 1, true), "a handler raised: " .. said)
  local replies = 0
  for _, s in ipairs(io.sent) do
    assert(not s:find("\n", 1, true), "a message spans lines")
    local decoded = json.decode(s)
    -- a batch's answer is one array of replies (2025-03-26 and older)
    local msgs = (type(decoded) == "table" and getmetatable(decoded) == json.array_mt) and decoded or { decoded }
    for _, m in ipairs(msgs) do
      assert(type(m) == "table" and m.jsonrpc == "2.0", "not JSON-RPC 2.0: " .. s)
      if m.method == nil then
        replies = replies + 1
        assert((m.result == nil) ~= (m.error == nil), "a reply needs result or error: " .. s)
        assert(m.id ~= nil, "a reply without id: " .. s)
        if m.error then assert(math.type(m.error.code) == "integer", "an error without code: " .. s) end
      end
    end
  end
  local due = replies_due(lines)
  if due then assert(replies == due, ("%d replies for %d requests"):format(replies, due)) end
end
