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

-- core.stdio's object, over those lines; what is sent is kept.
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
  function io:begin(id) assert(type(id) == "string", "begin without the id's JSON") end
  function io:finish() end
  function io:cancelled() return false end
  return setmetatable(io, { __index = function(_, k)
    error("fuzz_mcp: the stand-in for core.stdio has no " .. tostring(k) .. " (lserver.c has it?)")
  end })
end

-- Replies the lines call for: every request (an object with a string
-- method and an id), every line that is not one (bad JSON, a batch, a
-- method that is no string) and every dropped line; nothing for
-- notifications and responses.
local function replies_due(lines)
  local n = 0
  for _, l in ipairs(lines) do
    if l == false then
      n = n + 1
    elseif l:find("%S") then
      local m = json.decode(l)
      if type(m) ~= "table" or getmetatable(m) == json.array_mt then n = n + 1
      elseif m.method ~= nil and (type(m.method) ~= "string" or m.id ~= nil) then n = n + 1 end
    end
  end
  return n
end

return function(text)
  local lines = split(text)
  local io = stand_in(lines)
  core.stdio = function() return io end
  stderr_text = {}
  local server = mcp.new(ws)
  local ok, err = pcall(server.run, server, MAX_LINE)
  assert(ok, "the server loop ended with an error: " .. tostring(err))
  local said = table.concat(stderr_text)
  assert(not said:find("internal error", 1, true), "a handler raised: " .. said)
  local replies = 0
  for _, s in ipairs(io.sent) do
    assert(not s:find("\n", 1, true), "a message spans lines")
    local m = json.decode(s)
    assert(type(m) == "table" and m.jsonrpc == "2.0", "not JSON-RPC 2.0: " .. s)
    if m.method == nil then
      replies = replies + 1
      assert((m.result == nil) ~= (m.error == nil), "a reply needs result or error: " .. s)
      assert(m.id ~= nil, "a reply without id: " .. s)
      if m.error then assert(math.type(m.error.code) == "integer", "an error without code: " .. s) end
    end
  end
  local due = replies_due(lines)
  assert(replies == due, ("%d replies for %d requests"):format(replies, due))
end
