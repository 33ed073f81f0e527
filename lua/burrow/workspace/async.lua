-- burrow.workspace.async: calls that do not block the caller's loop, for the rock.
--
--   local id = ws:submit("grep", {pattern = "TODO"}, function(res, msg, code) ... end)
--   ws:fd()       -- an eventfd: readable when a completion waits (luv: uv.new_poll)
--   ws:poll()     -- runs the callbacks of finished calls; returns how many
--   ws:cancel(id) -- a running grep/glob stops at once (partial, cancelled = true)
--
-- The first submit opens the same workspace again as a host of the C API
-- (burrow.host: its own Lua state and worker thread) from the options given
-- to burrow.open, minus what cannot cross states (functions). Its policies
-- are their own instances: counters of a quotas policy are not shared with
-- ws:call.
--
-- A policy's "ask" in a submitted call: with an approval hook (burrow.open's
-- `approve`, or ws:on_ask), the worker waits while the question comes here
-- through the C API's pull form (burrow_take_ask); ws:poll asks the hook, on
-- the caller's thread, and answers. The hook may return "later" and answer
-- with ws:answer(req.id, allowed[, why]) from a later turn of the loop
-- (req.id is the question's own id, one per question; req.call the call's,
-- as ws:submit returned it).
-- No answer within the timeout (default 300 s, as MCP's elicitation): denied.
-- Without a hook the asks are denied, as with ws:call.

local core = require "burrow.core"
local json = core.json

local async = {}

async.ASK_TIMEOUT_MS = 300000

-- A copy of v with only data JSON can carry (no functions, no cycles).
local function plain(v, seen)
  local t = type(v)
  if t == "string" or t == "number" or t == "boolean" then return v end
  if t ~= "table" or seen[v] then return nil end
  seen[v] = true
  local out = {}
  for k, x in pairs(v) do
    if type(k) == "string" or math.type(k) == "integer" then out[k] = plain(x, seen) end
  end
  seen[v] = nil
  return out
end

function async.host(ws)
  if ws.host then return ws.host end
  local opts = plain(ws.opts or {}, {})
  opts.approve = nil
  opts.resolver = ws.resolver -- the roots' own, whatever that state's default
  local h, err = require("burrow.host").host(json.encode(opts), package.path)
  if not h then return nil, err end
  ws.host, ws.pending = h, {}
  if ws.approve then h:approver(ws.approve_timeout_ms or async.ASK_TIMEOUT_MS) end
  return h
end

-- ws:on_ask: the hook changed; the host, if there is one, follows.
function async.set_approver(ws)
  if ws.host then ws.host:approver(ws.approve and (ws.approve_timeout_ms or async.ASK_TIMEOUT_MS) or 0) end
end

-- The questions waiting, each put to ws.approve(req, reason) here. req:
-- {id = (the question), call =, tool =, operation =, path =, reason =}. A hook that raises is a
-- no (its error goes to stderr, not to the agent).
local function answer_asks(ws, h)
  while true do
    local id, text = h:take_ask()
    if not id then return end
    local req = json.decode(text)
    req.id = id
    local approve = ws.approve
    local ok, granted, why
    if approve then ok, granted, why = pcall(approve, req, req.reason) end
    if ok and granted == "later" then
      -- answered by ws:answer, or denied at the timeout
    elseif ok then
      h:answer(id, granted and true or false, why ~= nil and tostring(why) or nil)
    else
      if approve then io.stderr:write("burrow: the approval hook failed: ", tostring(granted), "\n") end
      h:answer(id, false, approve and "the approval hook failed" or "this client cannot be asked")
    end
  end
end

function async.answer(ws, id, allowed, why)
  return ws.host ~= nil and math.type(id) == "integer" and ws.host:answer(id, allowed and true or false,
    why ~= nil and tostring(why) or nil)
end

function async.submit(ws, tool, args, cb)
  if type(tool) ~= "string" then error("ws:submit: tool name must be a string", 3) end
  if type(cb) ~= "function" then error("ws:submit: a callback function is needed", 3) end
  local h, err = async.host(ws)
  if not h then return nil, err end
  local ok, text = pcall(json.encode, args or {})
  if not ok then return nil, "INVALID_ARGUMENT: arguments: " .. tostring(text), "INVALID_ARGUMENT" end
  local id = h:submit(tool, text)
  if not id then return nil, "EIO: the call could not be queued", "EIO" end
  ws.pending[id] = cb
  return id
end

function async.fd(ws)
  local h, err = async.host(ws)
  if not h then return nil, err end
  return h:fd()
end

-- Callbacks run here, one per finished call: cb(result) or cb(nil, msg, code).
-- A callback that raises stops this poll; the rest wait for the next.
function async.poll(ws)
  local h = ws.host
  if not h then return 0 end
  answer_asks(ws, h)
  local n = 0
  while true do
    local id, rc, text = h:take()
    if not id then return n end
    local cb = ws.pending[id]
    ws.pending[id] = nil
    n = n + 1
    local obj = text and json.decode(text)
    if cb then
      if rc == 0 then
        cb(obj)
      else
        local e = type(obj) == "table" and type(obj.error) == "table" and obj.error or {}
        cb(nil, e.message or text, e.code)
      end
    end
  end
end

function async.cancel(ws, id)
  return ws.host ~= nil and ws.host:cancel(id)
end

-- Ids of calls submitted and not yet delivered by poll.
function async.pending(ws)
  local n = 0
  for _ in pairs(ws.pending or {}) do n = n + 1 end
  return n
end

function async.close(ws)
  if ws.host then ws.host:close() end
  ws.host, ws.pending = nil, nil
end

return async
