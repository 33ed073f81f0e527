-- burrow.mcp.ask: what the server asks the client. A request whose answer
-- goes to a handler by name (Server:request: the client's roots); what a
-- call asks: in the session revisions a request to the client, waited for
-- (an approval as an elicitation, a tool's or a prompt's ctx:ask), in
-- 2026-07-28 the call ends with its questions (input_required) and comes
-- again with the answers, under a state burrow signed (retry_state).
-- Methods of the Server (burrow.mcp.base), required with the first of them
-- (burrow.mcp's LATER).

local core = require "burrow.core"
local json = core.json
-- burrow.mcp.approvals: required with the first approval (a start that
-- answers initialize needs none)
local function approvals() return require "burrow.mcp.approvals" end
local base = require "burrow.mcp.base"

local Server = base.Server

local ask = {}

-- A request refused because the deployment's state store, which its
-- approval state needs (the key that signs it, the mark that uses it
-- once), does not answer: fail closed, and say it is not the client's
-- fault.
local function store_down(who, why)
  return ("STORE_UNAVAILABLE: %s: refused: the approval needs the shared state store (Redis/Valkey), which does not "
    .. "answer (%s); nothing was changed: retry"):format(who, tostring(why))
end
ask.store_down = store_down

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

-- Wait for the client's answer to our request id; other messages that
-- arrive meanwhile are kept for the main loop.
function Server:await(id, timeout)
  while true do
    -- the channel may look for this answer elsewhere too (HTTP: another
    -- instance that took it puts it in the store)
    self.channel.awaiting = id
    local line, why = self.channel:next(timeout)
    self.channel.awaiting = nil
    if line == nil then return nil, why or "the client closed the connection" end
    if line == false and why == "watch" then -- changes go out while we wait
      self:pump_watch()
      self.channel:watch_done()
    elseif line == false then -- an event: the main loop handles it after this call
      self.pending[#self.pending + 1] = { event = why }
    else
      local msg = json.decode(line)
      if type(msg) == "table" and msg.method == nil and msg.id == id then return msg end
      self.pending[#self.pending + 1] = line
    end
    if self.channel:cancelled() then return nil, "the call was cancelled" end
  end
end

-- "ask" answers go to the client as an elicitation (2025-06-18 and later,
-- when it declared the capability); nil when the client cannot be asked.
function Server:approver()
  if self.session.stateless then return nil end -- no server-to-client requests in 2026-07-28
  if not (self.session.client_caps and self.session.client_caps.elicitation) then return nil end
  if (self.session.protocol or "") < "2025-06-18" then return nil end
  return function(req, reason)
    local r, why = self:ask_client("elicitation/create", approvals().form(req.tool, req, reason), "burrow-approval-")
    if why then return false, why end
    return approvals().verdict(r)
  end
end

-- What a tool may ask the client (ctx:ask), and the capability it needs.
local ASK_CAPABILITY = { ["elicitation/create"] = "elicitation", ["sampling/createMessage"] = "sampling", ["roots/list"] = "roots" }

--- A request to the client in the session revisions, waited for (an
-- approval, a tool's ctx:ask): its result, or nil and why. Its id is one no
-- client can guess: an answer sent before the question is asked cannot
-- name it (it stays a stray reply, dropped).
function Server:ask_client(method, params, prefix)
  local id = (prefix or "burrow-ask-") .. core.random_hex(8)
  self:send { id = id, method = method, params = params }
  local answer, why = self:await(id, self.approval_timeout or 300)
  if not answer then return nil, why end
  if answer.error then return nil, "the client refused: " .. tostring(answer.error.message) end
  return answer.result
end

--- A retry of MCP 2026-07-28 (its requestState and the client's
-- inputResponses) opened for who and args: the state burrow signed, and
-- the answers to the caller's own questions so far (the state's, plus this
-- retry's when the state is one of those questions; an approval's retry
-- carries the approval's answer instead). No retry: nil and {}; refused:
-- false and why (and STORE_UNAVAILABLE when the store it needs does not
-- answer: not the client's fault).
function Server:retry_state(who, args, params)
  if not (self.session.stateless and (params.requestState ~= nil or params.inputResponses ~= nil)) then return nil, {} end
  if params.requestState == nil then return false, "inputResponses without the requestState burrow sent" end
  local st, why, code = approvals().open(self, who, args, params.requestState)
  if not st then return false, why, code end
  local answers = type(st.q) == "table" and st.q or {}
  if st.k == "ask" then
    for k, v in pairs(type(params.inputResponses) == "table" and params.inputResponses or {}) do answers[k] = v end
  end
  return st, answers
end

--- The questions a call asks the client (ctx:ask in a tool or a prompt):
-- in the session revisions each is a request to the client, waited for;
-- in 2026-07-28 the call ends with them (input_required) and comes again
-- with the answers (answers: the rounds' before and this one's, by key).
-- The record's hook is the call's hooks.ask; after the call, rec.pending
-- holds what was asked, rec.missing the capabilities the request lacked.
function Server:asker(answers)
  local rec = {}
  rec.hook = function(key, method, ask_params)
    local cap = ASK_CAPABILITY[method]
    if not cap then return nil, "ctx:ask: method must be elicitation/create, sampling/createMessage or roots/list" end
    if self.session.stateless and answers[key] ~= nil then return answers[key] end
    if type(self.session.client_caps) ~= "table" or type(self.session.client_caps[cap]) ~= "table" then
      rec.missing = rec.missing or {}
      rec.missing[cap] = {}
      return nil, ("the client declared no %s capability"):format(cap)
    end
    if not self.session.stateless then return self:ask_client(method, ask_params) end
    -- 2026-07-28: asked with the call's answer (input_required), answered in its retry
    rec.pending = rec.pending or {}
    rec.pending[key] = { method = method, params = ask_params }
    return nil, "input_required: the client is asked, the call comes again with the answer"
  end
  return rec
end

--- 2026-07-28: a call that failed for want of a capability the request did
-- not declare is that error (-32021), naming what it needed (who: the tool
-- or prompt).
local function missing_capability(rec, who)
  local names = {}
  for cap in pairs(rec.missing) do names[#names + 1] = cap end
  table.sort(names)
  return nil, -32021, ("Missing required client capability: %s (%s asked the client; declare it in _meta "
    .. "io.modelcontextprotocol/clientCapabilities)"):format(table.concat(names, ", "), who),
    { requiredCapabilities = rec.missing }
end
ask.missing_capability = missing_capability

-- The questions a prompt or an operator resource asks the client (ctx:ask)
-- are a tool's: a request in a session; in 2026-07-28 input_required
-- rounds whose signed state names who asked (who: "prompt:NAME",
-- "resource:URI": no tool's or other's state opens it) and its arguments.
-- run(ask) is the request's own work, given the hook.
function Server:with_questions(who, args, params, run)
  local st, answers, scode = self:retry_state(who, args, params)
  if st == false and scode then return nil, -32603, store_down(who, answers) end
  if st == false then return nil, -32602, "Invalid params: " .. answers end
  if st and st.k ~= "ask" then return nil, -32602, "Invalid params: requestState is not one of this request's" end
  local asking = self:asker(answers)
  local res, code, msg, data = run(asking.hook)
  if asking.pending then
    local more, why = approvals().ask_more(self, who, args, asking.pending, answers)
    if not more then return nil, -32603, store_down(who, why) end
    return more
  end
  if self.session.stateless and res == nil and asking.missing then return missing_capability(asking, who) end
  return res, code, msg, data
end

return ask
