-- burrow.mcp: the Model Context Protocol over stdio. One JSON-RPC message
-- per line in, one per line out, nothing else on stdout. Tool failures are
-- results with isError; protocol failures are JSON-RPC errors. Stdin is
-- read by a C thread (burrow.server.stdio) so a cancel notification reaches
-- the call in flight while it runs, and a ping during a tool call is
-- answered by that thread at once; other requests that arrive meanwhile
-- are queued and answered in order after the call.

local core = require "burrow.core"
local json = core.json
local resources = require "burrow.resources"
local client_roots = require "burrow.client_roots"
local approvals = require "burrow.approvals"
local listen = require "burrow.listen"
local session = require "burrow.session"
local tasks = require "burrow.tasks"
local resource_ops = require "burrow.resource_ops"

local mcp = {}

mcp.versions = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" } -- the session revisions
-- The stateless revisions: no initialize; each request names its revision
-- and the client's capabilities in params._meta (Server:handle_stateless).
mcp.stateless_versions = { "2026-07-28" }
local META = "io.modelcontextprotocol/"
local PAGE = 100 -- tools per tools/list page

local Server = {}
Server.__index = Server

--- A Channel: how a Server meets its transport, one per connection
-- (stdio) or HTTP session, and all the Server knows of it:
--   ch:send(msg) -> bytes      a message (or a batch) to the client
--   ch:begin(id) -> cancelled  a tool call starts (true: it was cancelled
--                              while it waited in the queue)
--   ch:cancelled(), ch:finish()   during and at the end of that call
--   ch:next(timeout) -> text | false, event | nil, why   the next message
--                              while a call waits for the client's answer
--   ch:watch(fd), ch:watch_done()   the session's watch fd to wake on
--   ch.wire          replies go out encoded by the channel (read_file may
--                    answer with a json.fragment; stdio), and requests
--                    that come during a read-only call are served
--   ch.can_listen, ch.listening   a subscriptions/listen may be held open
--                    on this request's stream (and is)
--   ch.sid, ch.stream, ch.param_headers   HTTP: the session, the POST's
--                    stream, its Mcp-Param-* headers
-- mcp.channel(send) is the in-process one: no client to ask, nothing
-- cancelled, each message to send (dropped without one).
function mcp.channel(send)
  return {
    send = function(_, msg) if send then send(msg) end end,
    begin = function() return false end,
    finish = function() end,
    cancelled = function() return false end,
    next = function() return nil, "no client to answer (an in-process server)" end,
    watch = function() end,
    watch_done = function() end,
  }
end

--- opts.reopen: function() -> a new workspace | nil, message (SIGHUP);
-- opts.channel (mcp.channel()'s by default); opts.approval_key,
-- approval_ttl, approval_store: how MRTR states are signed and used once
function mcp.new(ws, opts)
  opts = opts or {}
  -- session: this connection's record (burrow.session), handed to every
  -- call (hooks.session). Its log_level is nil until the client sets one
  -- (logging/setLevel): no notifications/message before it asked for them
  return setmetatable({ ws = ws, reopen = opts.reopen, channel = opts.channel or mcp.channel(),
    approval_key = opts.approval_key, approval_shared = opts.approval_shared,
    approval_ttl = opts.approval_ttl, approval_store = opts.approval_store,
    session = opts.session or session.new { id = ws.session and ws.session.id or "mcp" },
    pending = {},
    subs = {},    -- resources/subscribe: uri -> watch id
    listens = {}, -- subscriptions/listen: listen.key(id) -> {id, filter, subs}
  }, Server)
end

local BIG_REPLY = 1024 * 1024

--- The key that signs this process's approval states (MRTR): the
-- deployment's (HTTP: http.approval_key_file, set by burrow.http; with a
-- deployment's store and no file, the store's, got at first need:
-- approval_shared), else one drawn at first use, which only this process
-- knows. nil, why and STORE_UNAVAILABLE when the store's is needed and the
-- store does not answer.
function Server:mrtr_key()
  if not self.approval_key and self.approval_shared then
    local key, why = approvals.shared_key(self.ws.state)
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
mcp.replies = { roots = client_roots.on_list }

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

--- notifications/message (logger "burrow") at or above the level the
-- client set; nothing before it set one.
function Server:log(level, message, fields)
  local min = self.session.log_level and LEVELS[self.session.log_level]
  if not min or LEVELS[level] < min then return end
  local data = { message = message }
  for k, v in pairs(fields or {}) do data[k] = v end
  self:notify("notifications/message", { level = level, logger = "burrow", data = data })
end

local function negotiate(requested)
  for _, v in ipairs(mcp.versions) do
    if v == requested then return v end
  end
  return mcp.versions[1]
end

local handlers = {}
local param_headers_match -- SEP-2243's check (below)
local store_down -- a refusal for want of the state store (below)
local missing_capability -- -32021 for a call that asked what the client cannot answer (below)

local SERVER_INFO = { name = "burrow", title = "burrow filesystem tools", version = core.version }
local INSTRUCTIONS = "Filesystem tools sandboxed to the workspace roots. Paths are relative to the first root or absolute under a root's mount."

function handlers.initialize(self, params)
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
      extensions = { [resource_ops.EXT] = resource_ops.capability() },
      experimental = { [resource_ops.EXT] = resource_ops.capability() } },
    serverInfo = SERVER_INFO,
    instructions = INSTRUCTIONS,
  }
end

-- The operator's prompts (burrow.prompts; none by default: an empty list).
local prompts = require "burrow.prompts"

function handlers.prompts_list(self) return { prompts = prompts.describe(self.ws.prompt_list) } end

-- A request refused because the deployment's state store, which its
-- approval state needs (the key that signs it, the mark that uses it
-- once), does not answer: fail closed, and say it is not the client's
-- fault.
store_down = function(who, why)
  return ("STORE_UNAVAILABLE: %s: refused: the approval needs the shared state store (Redis/Valkey), which does not "
    .. "answer (%s); nothing was changed: retry"):format(who, tostring(why))
end

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
    local more, why = approvals.ask_more(self, who, args, asking.pending, answers)
    if not more then return nil, -32603, store_down(who, why) end
    return more
  end
  if self.session.stateless and res == nil and asking.missing then return missing_capability(asking, who) end
  return res, code, msg, data
end

function handlers.prompts_get(self, params)
  local args = params.arguments
  if args == nil or args == json.null then args = {} end
  return self:with_questions("prompt:" .. tostring(params.name), args, params, function(ask)
    return prompts.get(self.ws, params, { session = self.session, ask = ask })
  end)
end

-- completion/complete: a prompt's argument (its complete function), or the
-- path under a file template (resources.complete)
function handlers.completion_complete(self, params)
  local ref, arg = params.ref, params.argument
  if type(ref) ~= "table" or type(arg) ~= "table" or type(arg.name) ~= "string" or type(arg.value) ~= "string" then
    return nil, -32602, "Invalid params: completion/complete needs ref {type, name|uri} and argument {name, value} (strings)"
  end
  if ref.type == "ref/prompt" then return prompts.complete(self.ws, ref, arg, { session = self.session }) end
  if ref.type == "ref/resource" then return resources.complete(self, ref, arg) end
  return nil, -32602, ('Invalid params: ref.type must be "ref/prompt" or "ref/resource", not %s'):format(tostring(ref.type))
end

function handlers.ping() return {} end

handlers.resources_list = resources.list
handlers.resources_templates_list = resources.templates
-- an operator resource's read may ask the client (ctx:ask), as a prompt may
function handlers.resources_read(self, params)
  return self:with_questions("resource:" .. tostring(params.uri), {}, params, function(ask)
    return resources.read(self, params, ask)
  end)
end
handlers.resources_subscribe = resources.subscribe
handlers.resources_unsubscribe = resources.unsubscribe

-- Notifications the server acts on (others are ignored, as JSON-RPC says).
local on_note = {}
on_note["notifications/initialized"] = client_roots.ask
on_note["notifications/roots/list_changed"] = client_roots.ask
-- a cancel of a tool call is the stdio thread's (lserver.c); one naming a
-- listen ends it
on_note["notifications/cancelled"] = listen.cancel

function handlers.logging_setLevel(self, params)
  if not LEVELS[params.level] then
    return nil, -32602, ("Invalid params: level must be one of debug, info, notice, warning, error, critical, alert, emergency (got %s)")
      :format(type(params.level) == "string" and ("%q"):format(params.level) or tostring(params.level))
  end
  self.session.log_level = params.level
  return {}
end

function handlers.tools_list(self, params)
  local all = self.ws:tools { format = "mcp" }
  if params.cursor ~= nil and type(params.cursor) ~= "string" then
    return nil, -32602, "invalid cursor"
  end
  local start = tonumber(params.cursor or "0")
  if not start or start < 0 or start % 1 ~= 0 then
    return nil, -32602, "invalid cursor"
  end
  local page = json.array {}
  for i = start + 1, math.min(#all, start + PAGE) do page[#page + 1] = all[i] end
  local res = { tools = page }
  if start + PAGE < #all then res.nextCursor = tostring(start + PAGE) end
  return res
end

-- A tool call's MCP result: text once, structuredContent, isError; a
-- failure's code and details in _meta (burrow/code, burrow/details), a
-- success's _meta as the tool's render gives it (read_file's validator,
-- burrow/sha256).
function Server:tool_result(name, res, msg, code, details)
  if res == nil then
    return {
      content = json.array { { type = "text", text = msg } },
      isError = true,
      _meta = { ["burrow/code"] = code, ["burrow/details"] = details },
    }
  end
  local text, structured, meta = self.ws:render(name, res)
  local content = json.array {}
  -- a tool may answer in several blocks: texts (a big text and its hint),
  -- or content blocks of its own (an image)
  for i, t in ipairs(type(text) == "table" and text or { text }) do
    content[i] = type(t) == "table" and t or { type = "text", text = t }
  end
  local out = { content = content, _meta = meta }
  if self.ws:tool(name).output_schema then out.structuredContent = structured end
  return out
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
    local r, why = self:ask_client("elicitation/create", approvals.form(req.tool, req, reason), "burrow-approval-")
    if why then return false, why end
    return approvals.verdict(r)
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
  local st, why, code = approvals.open(self, who, args, params.requestState)
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
function missing_capability(rec, who)
  local names = {}
  for cap in pairs(rec.missing) do names[#names + 1] = cap end
  table.sort(names)
  return nil, -32021, ("Missing required client capability: %s (%s asked the client; declare it in _meta "
    .. "io.modelcontextprotocol/clientCapabilities)"):format(table.concat(names, ", "), who),
    { requiredCapabilities = rec.missing }
end

-- Messages that may be handled while a read-only call waits on its walk:
-- requests other than initialize (a tool call only of a read-only tool),
-- and the notifications that change nothing (a cancel, progress).
local MEANWHILE_NOTES = { ["notifications/cancelled"] = true, ["notifications/progress"] = true }
function Server:meanwhile_ok(msg)
  if type(msg) ~= "table" or getmetatable(msg) == json.array_mt or type(msg.method) ~= "string" then return false end
  if msg.id == nil then return MEANWHILE_NOTES[msg.method] == true end
  if msg.method == "initialize" then return false end
  if msg.method ~= "tools/call" then return true end
  local tool = type(msg.params) == "table" and type(msg.params.name) == "string" and self.ws:tool(msg.params.name)
  return tool ~= nil and tool.annotations ~= nil and tool.annotations.readOnlyHint == true
end

-- While a read-only tool call waits on its walk (its progress check, every
-- 100 ms), the requests that arrived meanwhile are answered now, one call
-- deep: reads, lists, pings. The first message that has to wait (a tool
-- that writes, a reply to us, an event) stops this, and every message after
-- it waits too, so the client's order holds from there on.
function Server:serve_meanwhile()
  if not self.channel.wire or self.meanwhile or self.batch or #self.pending > 0 then return end
  self.meanwhile = true
  while true do
    local line, why = self.channel:next(0)
    if line == nil then break end -- nothing waiting (the end of input: the main loop sees it)
    if line == false and why == "watch" then -- changes go out meanwhile too
      self:pump_watch()
      self.channel:watch_done()
    elseif line == false then
      self.pending[#self.pending + 1] = { event = why }
      break
    else
      local msg = line:find("%S") and json.decode(line)
      if not self:meanwhile_ok(msg) then
        self.pending[#self.pending + 1] = line
        break
      end
      local ok, err = pcall(self.handle, self, msg)
      if not ok then io.stderr:write("burrow: internal error meanwhile: ", tostring(err), "\n") end
    end
  end
  self.meanwhile = false
end

--- Run tool name with args as a tools/call runs it: the retry's approval
-- state, the queue's cancel, and the call's hooks (approvals, its
-- questions to the client, progress, log, the session's record). The one
-- way tools/call and the resource operations (burrow.resource_ops) reach
-- a tool. tc: the call's task state (burrow.tasks), nil for none. Returns
-- true, res, msg, code, details when the tool answered; false, res, code,
-- msg, data when the request gets another answer instead (an
-- InputRequiredResult, -32021, an invalid retry; nil: cancelled before it
-- ran, not answered).
function Server:run_tool(name, args, params, id, tc)
  -- MCP 2026-07-28: the retry of a call that asked (its requestState and
  -- the client's inputResponses), checked before anything runs
  local grant
  local st, answers, scode = self:retry_state(name, args, params)
  if st == false and scode then return true, nil, store_down(name, answers), scode, nil, {} end
  if st == false then return false, nil, -32602, "Invalid params: " .. answers end
  if st and st.k ~= "ask" then -- an approval's retry: its question gets the answer
    local why, code
    grant, why, code = approvals.redeem(self, st, params, { session = self.session })
    if not grant and code then return true, nil, store_down(name, why), code, nil, {} end
    if not grant then return false, nil, -32602, "Invalid params: " .. why end
  end
  -- cancelled while it waited in the queue: not run, and (as MCP asks)
  -- not answered
  if self.channel:begin(id) then
    self.channel:finish()
    return false
  end
  local started = core.now()
  local token = type(params._meta) == "table" and params._meta.progressToken or nil
  local tool = self.ws:tool(name)
  local readonly = tool.annotations ~= nil and tool.annotations.readOnlyHint == true
  local hooks
  hooks = {
    cancelled = function()
      if readonly then self:serve_meanwhile() end
      if tc then tasks.tick(self, tc, id, name, args) end
      return self.channel:cancelled() or (tc ~= nil and tc.rec ~= nil and tasks.stopping(self, tc))
    end,
    task = tc and function() return tasks.escalate(self, tc, id, name, args) end or nil,
    approve = grant and approvals.approver(grant) or self:approver(),
    approved_by = "the client (MCP elicitation)", -- the audit's word for who approved
    session = self.session,
    -- replies encoded by our own stdio (Server:run): read_file may answer
    -- with a json.fragment; another transport's out gets plain strings
    wire = self.channel.wire,
    -- a tool's own log lines (ctx:log), at the client's level
    log = function(level, message, fields)
      if LEVELS[level] and type(message) == "string" then self:log(level, message, fields) end
    end,
    -- long tools report with ctx:progress(done, total, message)
    progress = token ~= nil and function(done, total, message)
      self:notify("notifications/progress", { progressToken = token, progress = done, total = total, message = message })
    end or nil,
  }
  -- a stateless client that can answer a form: the first question ends the
  -- call (nothing written) and goes back as an InputRequiredResult
  -- one that cannot: the call needs a capability it did not declare
  local asked, needs
  if self.session.stateless and not grant then
    local can = type(self.session.client_caps.elicitation) == "table"
    hooks.approve = function(req, reason)
      if can then asked, req.input_required = asked or { req = req, reason = reason }, true
      else needs = needs or { req = req, reason = reason } end
      return false, can and "asked the client (input_required)" or "the client cannot answer a form"
    end
  end
  if grant then hooks.approved_by = "the client (MCP 2026-07-28 input_required)" end
  -- a tool's own questions to the client (ctx:ask)
  local asking = self:asker(answers)
  hooks.ask = asking.hook
  local res, msg, code, details = self.ws:call(name, args, hooks)
  -- a task's call told to stop (its worker's flag, or its record): so it
  -- stopped at a check, rather than ran to its end (the flag is reset next)
  if tc and tc.rec then tc.told = self.channel:cancelled() or tc.cancelled end
  self.channel:finish()
  -- a task's tool that failed (raised): burrow's failure, not the tool's answer
  if tc and tc.rec and hooks.internal_error then return false, nil, -32603, msg end
  if asked or asking.pending then -- nothing written: the client is asked (a signed state)
    local out, why, kcode
    if asked then out, why, kcode = approvals.ask(self, name, args, asked.req, asked.reason, { session = self.session }, answers)
    else out, why, kcode = approvals.ask_more(self, name, args, asking.pending, answers) end
    if not out then return true, nil, store_down(name, why), kcode, nil, {} end
    return false, out
  end
  if self.session.stateless and res == nil and asking.missing then return false, missing_capability(asking, name) end
  if needs then
    return false, nil, -32021, ("Missing required client capability: elicitation. %s %s needs approval (%s); "
      .. "declare elicitation in _meta io.modelcontextprotocol/clientCapabilities to be asked")
      :format(needs.req.operation, needs.req.path, needs.reason), { requiredCapabilities = { elicitation = {} } }
  end
  self:log_call(name, started, hooks, code, msg)
  return true, res, msg, code, details, hooks
end

-- A tools/call; box.tc: its task state (burrow.tasks), given for a task's
-- call that runs again, else found here (nil: a plain call).
local function run_call(self, params, id, box)
  local name = params.name
  if type(name) ~= "string" or not self.ws:tool(name) then
    if self.ws.metrics then self.ws.metrics:unknown() end -- counted, never named (httpmetrics.c)
    return nil, -32602, ("Tool %s not found"):format(tostring(name))
  end
  local args = params.arguments
  if args == nil or args == json.null then args = {} end
  if type(args) ~= "table" or getmetatable(args) == json.array_mt then
    return nil, -32602, "Invalid params: arguments must be an object"
  end
  -- MCP 2026-07-28 over HTTP: the arguments a tool marks x-mcp-header
  -- come again as Mcp-Param-NAME headers, which must say the same
  if self.channel.param_headers then
    local ok, why = param_headers_match(self.ws:tool(name), args, self.channel.param_headers)
    if not ok then return nil, -32020, "Header mismatch: " .. why end
  end
  -- MCP tasks: may this call become one (a tool that supports them, a
  -- client that declared the extension)? A tool that runs only as a task
  -- and a client that cannot take one: -32021
  if box.tc == nil then
    local tc, c, m, d = tasks.call(self, self.ws:tool(name))
    if tc == false then return nil, c, m, d end
    box.tc = tc
  end
  local ran, res, msg, code, details, hooks = self:run_tool(name, args, params, id, box.tc)
  if not ran then return res, msg, code, details end
  local out = self:tool_result(name, res, msg, code, details)
  -- entries the policies hid from a walk: said in every dialect, never named
  if (hooks.skipped_policy or 0) > 0 then
    out._meta = out._meta or {}
    out._meta["burrow/skipped_policy"] = hooks.skipped_policy
  end
  return out
end

--- A tools/call: its answer, or the CreateTaskResult of the task it
-- became (nil: answered already, its call went on as the task).
function handlers.tools_call(self, params, id)
  local box = {}
  local res, code, msg, data = run_call(self, params, id, box)
  if box.tc and box.tc.rec then return tasks.settle(self, box.tc, res, code, msg, data) end
  return res, code, msg, data
end

--- tasks/update brought the last answers of task rec: its call runs again
-- with them (resume: the requestState it parked with, the answers), after
-- the request's empty answer where the channel can answer first.
function Server:resume_task(id, rec, resume)
  local tc = tasks.resumed(self, rec, id)
  local params = { name = rec.tool, arguments = rec.args, requestState = resume.state, inputResponses = resume.answers }
  local res, code, msg, data = run_call(self, params, id, { tc = tc })
  -- its worker runs the task no more, even when the call stopped before it
  -- began (HTTP's finish may come twice; stdio's counts, and never detaches)
  if tc.detached then self.channel:finish() end
  tasks.settle(self, tc, res, code, msg, data)
  if tc.detached then return nil end
  return {}
end


-- ------------------------------------------------- MCP 2026-07-28

-- SEP-2243: each argument whose schema says x-mcp-header = NAME against
-- the request's Mcp-Param-NAME header: its text as sent, or the bytes of
-- "=?base64?...?=" (strict Base64); a header present for an absent
-- argument, or absent for a present one, is a mismatch.
param_headers_match = function(tool, args, headers)
  local props = tool and tool.input_schema and tool.input_schema.properties
  for prop, schema in pairs(type(props) == "table" and props or {}) do
    local h = type(schema) == "table" and schema["x-mcp-header"]
    if type(h) == "string" then
      local sent, value = headers[h:lower()], args[prop]
      if sent == json.null then return nil, ("Mcp-Param-%s is not UTF-8"):format(h) end
      if value == nil and sent ~= nil then return nil, ("Mcp-Param-%s has no argument %s to match"):format(h, prop) end
      if value ~= nil then
        if sent == nil then return nil, ("Mcp-Param-%s is required: argument %s is given"):format(h, prop) end
        sent = sent:match("^%s*(.-)%s*$")
        local b64 = sent:match("^=%?base64%?(.*)%?=$")
        if b64 then
          local ok, raw = pcall(core.base64_decode, b64)
          if not ok or raw == nil then return nil, ("Mcp-Param-%s: invalid Base64"):format(h) end
          sent = raw
        end
        local want = type(value) == "string" and value or type(value) == "boolean" and tostring(value)
          or type(value) == "number" and (math.type(value) == "integer" and tostring(value) or json.encode(value)) or nil
        if want == nil or sent ~= want then
          return nil, ("Mcp-Param-%s does not match argument %s"):format(h, prop)
        end
      end
    end
  end
  return true
end

local function all_versions()
  local out = json.array {}
  for _, v in ipairs(mcp.stateless_versions) do out[#out + 1] = v end
  for _, v in ipairs(mcp.versions) do out[#out + 1] = v end
  return out
end

local function stateless_version(v)
  for _, s in ipairs(mcp.stateless_versions) do
    if s == v then return true end
  end
  return false
end

-- What the stateless revision honours: resource updates on a
-- subscriptions/listen stream; list changes only where the lists can
-- change (a stdio server that reloads on SIGHUP); no server-to-client
-- requests outside a call (a call asks through MRTR).
local function stateless_caps(self)
  local lists = listen.lists_change(self) or nil
  return { tools = { listChanged = lists }, prompts = { listChanged = lists },
    -- stdio serves listens on its channel; HTTP (a Server with a session
    -- id) on a stream of their own
    resources = { subscribe = (self.channel.can_listen or self.channel.sid ~= nil) or nil, listChanged = lists },
    logging = {}, completions = {},
    extensions = { [tasks.EXT] = {}, [resource_ops.EXT] = resource_ops.capability() },
    experimental = { [resource_ops.EXT] = resource_ops.capability() } }
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

-- The methods by their name on the wire ("tools/list" is a method,
-- "tools_list" the Lua name is not), each with the eras that have it:
-- session (the revisions with initialize) and stateless (2026-07-28).
local S, L, BOTH = { session = true }, { stateless = true }, { session = true, stateless = true }
local methods = {
  ["initialize"] = { handlers.initialize, S },
  ["ping"] = { handlers.ping, S },
  ["logging/setLevel"] = { handlers.logging_setLevel, S },
  ["resources/subscribe"] = { handlers.resources_subscribe, S },
  ["resources/unsubscribe"] = { handlers.resources_unsubscribe, S },
  ["server/discover"] = { function(self)
    return { supportedVersions = all_versions(), capabilities = stateless_caps(self), instructions = INSTRUCTIONS }
  end, L },
  ["subscriptions/listen"] = { listen.open, L },
  ["tools/list"] = { handlers.tools_list, BOTH },
  ["tools/call"] = { handlers.tools_call, BOTH },
  ["resources/list"] = { handlers.resources_list, BOTH },
  ["resources/templates/list"] = { handlers.resources_templates_list, BOTH },
  ["resources/read"] = { handlers.resources_read, BOTH },
  ["prompts/list"] = { handlers.prompts_list, BOTH },
  ["prompts/get"] = { handlers.prompts_get, BOTH },
  ["completion/complete"] = { handlers.completion_complete, BOTH },
  -- the tasks extension (burrow.tasks); tasks/result and tasks/list are
  -- not in 2026-07-28
  ["tasks/get"] = { tasks.get, L },
  ["tasks/update"] = { tasks.update, L },
  ["tasks/cancel"] = { tasks.cancel, L },
  -- the resource-operations extension (burrow.resource_ops), both eras
  ["resources/stat"] = { resource_ops.stat, BOTH },
  ["resources/create"] = { resource_ops.create, BOTH },
  ["resources/update"] = { resource_ops.update, BOTH },
  ["resources/delete"] = { resource_ops.delete, BOTH },
}

-- What an era makes of a handler's answer: (res, code, msg, data) in, the
-- same out. 2026-07-28 answers a URI that names no file with -32602 and
-- the uri (SEP-2164), not -32002, and marks each result complete with the
-- server's info and, for lists and reads, how long it may be kept.
local adapt = {
  session = function(_, res, code, msg, data) return res, code, msg, data end,
  stateless = function(method, res, code, msg, data)
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
  end,
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
  if not (m and m[2][era]) then return self:error(id, -32601, "Method not found: " .. method) end
  local ok, res, ecode, emsg, edata = pcall(m[1], self, params, id)
  if not ok then
    io.stderr:write("burrow: internal error in ", method, ": ", tostring(res), "\n")
    return self:error(id, -32603, "internal error")
  end
  if res == nil and ecode == nil then return end -- answered already, or not at all (cancelled)
  res, ecode, emsg, edata = adapt[era](method, res, ecode, emsg, edata)
  if res == nil then return self:error(id, ecode, emsg, edata) end
  self:reply(id, res)
end

--- A request of the stateless revision: everything it needs is in its
-- _meta (revision, client capabilities, log level), so it is served the
-- same on any worker, over stdio or HTTP, beside any session. The
-- Server's own fields are set for the call and put back after it.
function Server:handle_stateless(id, method, params, meta)
  local v = meta[META .. "protocolVersion"]
  if not stateless_version(v) then
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
  local base = self.session
  self.session = session.stateless(base, v, caps, meta[META .. "clientInfo"], level)
  local ok, err = pcall(self.dispatch, self, "stateless", id, method, params)
  session.settle(base, self.session)
  self.session = base
  if not ok then error(err, 0) end
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
        if type(on_reply) == "string" then on_reply = mcp.replies[on_reply] or function() end end
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
    local note = on_note[method]
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
  if mv and (stateless_version(mv) or not self.session.protocol) then
    return self:handle_stateless(id, method, params, meta)
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

-- What the client hears of a call in its log (notifications/message): a
-- slow call, files a walk skipped, a policy's refusal.
function Server:log_call(name, started, hooks, code, msg)
  local secs = core.now() - started
  if secs > 1 then
    self:log("notice", ("%s took %.1f s"):format(name, secs),
      { tool = name, duration_ms = math.floor(secs * 1000) })
  end
  local binary, size = hooks.skipped_binary_count or 0, hooks.skipped_size_count or 0
  local unreadable, policy = hooks.unreadable or 0, hooks.skipped_policy or 0
  if binary + size + unreadable + policy > 0 then
    self:log("info", ("%s skipped %d entr%s: %d binary, %d over max_file_size, %d unreadable, %d hidden by policy")
      :format(name, binary + size + unreadable + policy, binary + size + unreadable + policy == 1 and "y" or "ies",
        binary, size, unreadable, policy),
      { tool = name, binary = binary, too_large = size, unreadable = unreadable, policy = policy })
  end
  if code == "POLICY_DENIED" then
    self:log("warning", msg, { tool = name, code = code })
  end
end

-- SIGHUP: build the workspace again from the files; keep the old one if
-- that fails; tell the client when the tool list changed.
function Server:reload()
  if not self.reopen then return end
  local ws, err = self.reopen()
  if not ws then
    io.stderr:write("burrow: reload failed, keeping the previous configuration: ", tostring(err), "\n")
    self:log("error", "reload failed, keeping the previous configuration: " .. tostring(err))
    return
  end
  local before = json.encode(self.ws:tools { format = "mcp" })
  local prompts_before = json.encode(handlers.prompts_list(self))
  self.ws:close()
  self.ws = ws
  io.stderr:write("burrow: reloaded configuration, tools and policies\n")
  self:log("notice", "reloaded configuration, tools and policies")
  if json.encode(ws:tools { format = "mcp" }) ~= before then
    if self.session.protocol then self:notify("notifications/tools/list_changed") end
    listen.changed(self, "toolsListChanged")
  end
  if json.encode(handlers.prompts_list(self)) ~= prompts_before then listen.changed(self, "promptsListChanged") end
  client_roots.apply(self) -- the client's roots within the new configuration
  listen.rewatch(self)
  listen.changed(self, "resourcesListChanged")
  if not self.session.scope then
    resources.resubscribe(self)
    if self.session.protocol then self:notify("notifications/resources/list_changed") end
  end
end

-- Send the watch's changes that are due; remember when the held ones are.
function Server:pump_watch()
  local wait = resources.pump(self)
  self.due_at = wait and core.now() + wait
end

-- Seconds without a message after which the loop collects its garbage
-- and returns the freed memory (once per quiet spell).
local IDLE_TIDY_S = 0.5

-- Serve until stdin closes.
function Server:run(max_request)
  -- a call's garbage (arguments, a result's tables) dies young: the
  -- generational collector takes it in small steps, not in the long
  -- incremental sweeps that land in some calls' latency
  collectgarbage("generational")
  -- a start the system refuses (threads, file descriptors) is the
  -- operator's to fix: one line and exit 2 (cli.lua), no traceback
  local made, stdio = pcall(require("burrow.server").stdio, max_request)
  if not made then error({ fail = tostring(stdio) .. " (the process's thread or file limits?)" }, 0) end
  -- the first subscription's watch fd wakes the loop (false, "watch");
  -- another transport watches it itself and calls resources.pump(self)
  -- when the fd is readable and when the time it returns has passed
  self.channel = {
    wire = true,       -- stdio encodes; the loop serve_meanwhile reads from
    can_listen = true, -- subscriptions/listen: on this one channel, by id
    send = function(_, msg) return stdio:send(msg) end,
    begin = function(_, id) return stdio:begin(id) end,
    finish = function() return stdio:finish() end,
    cancelled = function() return stdio:cancelled() end,
    next = function(_, timeout) return stdio:next(timeout) end,
    watch = function(_, fd) return stdio:watch(fd) end,
    watch_done = function() return stdio:watch_done() end,
  }
  while true do
    -- a line (string), or false and the event stdio reported apart from
    -- the text: "reload" (SIGHUP; no stdin byte can ask for one),
    -- "oversize" (a dropped line) or "watch" (the watch fd is readable)
    local line, event = table.remove(self.pending, 1), nil
    if line == nil then
      local wait = self.due_at and math.max(0, self.due_at - core.now()) -- a coalesced change
      if wait == 0 then line, event = false, "due" -- a busy client does not starve it
      else
        if not self.tidy then wait = math.min(wait or IDLE_TIDY_S, IDLE_TIDY_S) end
        line, event = stdio:next(wait) -- nil: until a message comes
      end
      if line == nil and event == "timeout" and not (self.due_at and core.now() >= self.due_at) then
        line, event = false, "idle"
      end
    end
    if type(line) == "table" then line, event = false, line.event end
    if line == nil and event == "timeout" then line, event = false, "due" end
    if line == nil then break end
    self.tidy = event == "idle" -- anything else may leave garbage
    if event == "idle" then -- the client is quiet: give the garbage's memory back
      collectgarbage()
      core.trim()
    elseif event == "watch" or event == "due" then
      self:pump_watch()
      if event == "watch" then stdio:watch_done() end
    elseif event == "reload" then
      self:reload()
    elseif event == "oversize" then
      self:error(nil, -32600, ("request too large (over max_request_bytes, %d)"):format(max_request))
    elseif line:find("%S") then
      local msg, err = json.decode(line)
      if msg == nil then self:error(nil, -32700, "parse error: " .. tostring(err))
      else self:handle(msg) end
    end
    line = nil
    if self.big_garbage then -- free a big reply's strings now, before the heap doubles
      self.big_garbage = false
      collectgarbage()
    end
  end
end

return mcp
