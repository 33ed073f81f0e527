-- burrow.mcp.tasks: MCP tasks at 2026-07-28, the io.modelcontextprotocol/tasks
-- extension (SEP-2663). A client that declares the extension in its
-- request's clientCapabilities.extensions may get, for a tool that supports
-- tasks, a CreateTaskResult (resultType "task") instead of the tool's
-- result: the call goes on, and the client asks for it with tasks/get
-- (the result inlined once it is there), answers its questions with
-- tasks/update, and stops it with tasks/cancel. tasks/result and
-- tasks/list do not exist in this revision (-32601: not in mcp/dispatch.lua's
-- table of methods).
--
-- Where a task lives: its record (status, times, the inlined result or
-- error, the questions it waits on) is one record of the deployment's
-- state store (ws.state: core.state() in an HTTP server, shared by every
-- worker), under the request's tenant and keyed by the token's id, so a
-- task started through one worker is read through another, and another
-- token's client finds nothing (-32602, as for a task that never was).
-- A principal holds at most tasks.MAX at once: a task takes one of MAX
-- slots (its key; the slot is in its id), free again when the record
-- expires, tasks.TTL after its creation (ttlMs).
--
-- Where a task runs: where it started. A call becomes a task when its tool
-- says so (ctx:task()) or when it is still running tasks.AFTER seconds
-- after it began (at its next check for a cancel); the request is then
-- answered with the CreateTaskResult and the worker goes on with the
-- call (the channel's detach: HTTP only, and never the last worker free
-- for requests). Where it cannot (stdio, an in-process server, every other
-- worker busy with a task) the call runs to its end inside the request,
-- whose answer is then the CreateTaskResult of a finished task.
-- A question the call asks after it became a task (ctx:ask, a policy's
-- ask) parks the task in input_required; tasks/update brings the answers,
-- and once all are in, the call runs again with them (as an MRTR retry:
-- the requestState burrow signed stays in the record, never on the wire).

local core = require "burrow.core"
local json = core.json

local tasks = {}

tasks.EXT = "io.modelcontextprotocol/tasks"
tasks.TTL = 3600      -- seconds a task is kept after its creation (ttlMs)
tasks.MAX = 32        -- tasks one principal (tenant and token) holds at once
tasks.POLL_MS = 1000  -- pollIntervalMs: how often a client may ask
tasks.AFTER = 0.5     -- seconds a call of a tool that supports tasks runs before it becomes one (the cap task_after_ms sets it)
tasks.CHECK = 0.2     -- seconds between a running task's looks at its record (a cancel)
tasks.MAX_RESULT = 1000 * 1000 -- bytes of a result a record keeps (the store's records are 1 MiB)

local TERMINAL = { completed = true, failed = true, cancelled = true }

-- The store, its tenant and the key prefix of the request's principal.
local function where(server)
  local s = server.session
  return server.ws.state, tostring(s.tenant or ""), "task/" .. tostring(s.token or "-") .. "/"
end

local function iso(t) return os.date("!%Y-%m-%dT%H:%M:%SZ", t) end

--- Did the request declare the extension (2026-07-28, its own _meta)?
function tasks.enabled(session)
  local caps = session.stateless and session.client_caps
  local ext = type(caps) == "table" and caps.extensions
  return type(ext) == "table" and type(ext[tasks.EXT]) == "table"
end

--- -32021 for a request that needs the extension it did not declare.
function tasks.missing(what)
  return nil, -32021, ("Missing required client capability: extensions[%q] (%s); declare it in _meta "
    .. "io.modelcontextprotocol/clientCapabilities.extensions"):format(tasks.EXT, what),
    { requiredCapabilities = { extensions = { [tasks.EXT] = {} } } }
end

-- A task's id: its slot, then 128 random bits.
local function slot_of(id)
  return type(id) == "string" and tonumber(id:match("^(%d+)%.%x+$")) or nil
end

local function decode(text)
  local ok, rec = pcall(json.decode, text)
  return ok and type(rec) == "table" and rec or nil
end

-- seconds the record has left to live
local function left(rec) return math.max(1, rec.created + rec.ttlMs / 1000 - os.time()) end

--- A new task for the request's principal (status working): its record,
-- written before anyone hears of it; nil and why when the principal holds
-- tasks.MAX already (or the store refuses).
function tasks.create(server, fields)
  local st, tenant, prefix = where(server)
  local now = os.time()
  local start = math.random(tasks.MAX)
  for i = 0, tasks.MAX - 1 do
    local slot = (start + i - 1) % tasks.MAX + 1
    local rec = { id = ("%d.%s"):format(slot, core.random_hex(16)), status = "working", created = now,
      createdAt = iso(now), lastUpdatedAt = iso(now), ttlMs = tasks.TTL * 1000, pollIntervalMs = tasks.POLL_MS }
    for k, v in pairs(fields or {}) do rec[k] = v end
    local done, version = st:cas(tenant, prefix .. slot, 0, json.encode(rec), tasks.TTL)
    if done == nil then return nil, version end
    if done then return rec, version end
  end
  return nil, ("this client holds %d tasks already (each is kept %d s)"):format(tasks.MAX, tasks.TTL)
end

--- The principal's task id: its record and version, or nil.
function tasks.load(server, id)
  local slot = slot_of(id)
  if not slot or slot > tasks.MAX then return nil end
  local st, tenant, prefix = where(server)
  local text, version = st:get(tenant, prefix .. slot)
  local rec = text and decode(text)
  if not rec or rec.id ~= id then return nil end
  return rec, version
end

--- Change task id with change(rec) (false: leave it), compare-and-set so
-- that no other worker's change is lost: the record after, or nil.
function tasks.change(server, id, change)
  local st, tenant, prefix = where(server)
  for _ = 1, 16 do
    local rec, version = tasks.load(server, id)
    if not rec then return nil end
    if change(rec) == false then return rec end
    rec.lastUpdatedAt = iso(os.time())
    local done = st:cas(tenant, prefix .. slot_of(id), version, json.encode(rec), left(rec))
    if done then return rec end
    if done == nil then return nil end
  end
  return nil
end

--- The Task as the wire has it (no result, error, questions, nor what
-- burrow keeps for itself).
function tasks.wire(rec)
  return { taskId = rec.id, status = rec.status, statusMessage = rec.statusMessage, createdAt = rec.createdAt,
    lastUpdatedAt = rec.lastUpdatedAt, ttlMs = rec.ttlMs, pollIntervalMs = rec.pollIntervalMs }
end

--- The CreateTaskResult of rec.
function tasks.created(rec)
  local out = tasks.wire(rec)
  out.resultType = "task"
  return out
end

-- ---------------------------------------------------------------- calls

--- A tools/call of tool (its table) by server: nil when it runs as a plain
-- call; the call's task state when it may become a task; nil and an error
-- (-32021) when the tool needs a task the client cannot take.
function tasks.call(server, tool)
  local support = tool.task
  if support ~= "optional" and support ~= "required" then return nil end
  if not tasks.enabled(server.session) then
    if support == "required" and server.session.stateless then
      local _, code, msg, data = tasks.missing(("tool %s runs only as a task"):format(tool.name))
      return false, code, msg, data
    end
    return nil
  end
  return { started = core.now() }
end

--- The call goes on as a task: its record made and the request answered
-- with it (tc: tasks.call's state; id, name, args: the request's). True
-- once it is a task (however it is answered); false when the principal
-- holds too many (the call runs on as a plain one).
function tasks.escalate(server, tc, id, name, args)
  if tc.rec then return true end
  if tc.refused then return false end
  local rec, why = tasks.create(server, { tool = name, args = args })
  if not rec then
    tc.refused = why
    server:log("warning", "not run as a task: " .. tostring(why), { tool = name })
    return false
  end
  tc.rec, tc.checked = rec, core.now()
  tc.answer = tasks.created(rec)
  tasks.detach(server, tc, id)
  return true
end

--- Answer the task's request now (tc.answer) and go on with its call,
-- where the channel can: not while every other HTTP worker runs a task
-- (tried again at the call's next check: a worker is soon free again).
function tasks.detach(server, tc, id)
  if tc.detached or not tc.answer then return end
  tc.detached = server:detach(id, tc.answer, tc.rec.id)
end

--- The state of a task's call that runs again (tasks/update brought the
-- last answers): the request id's answer is the empty one.
function tasks.resumed(server, rec, id)
  local tc = { started = core.now(), rec = rec, checked = core.now(), answer = {} }
  tasks.detach(server, tc, id)
  return tc
end

--- A check of a call that may be a task (at its every look at its cancel):
-- still running tasks.AFTER after it began, it becomes one; a task not
-- yet answered for, answered if a worker is free now.
function tasks.tick(server, tc, id, name, args)
  if not server.channel.detach then return end
  if not tc.rec then
    local after = server.ws.caps and server.ws.caps.task_after_ms
    if core.now() - tc.started >= (after and after / 1000 or tasks.AFTER) then tasks.escalate(server, tc, id, name, args) end
  elseif not tc.detached then
    tasks.detach(server, tc, id)
  end
end

--- A running task's look at its record (rate-limited): true once a
-- tasks/cancel (through any worker) has cancelled it.
function tasks.stopping(server, tc)
  if tc.cancelled then return true end
  if core.now() - tc.checked < tasks.CHECK then return false end
  tc.checked = core.now()
  local rec = tasks.load(server, tc.rec.id)
  tc.cancelled = rec == nil or rec.status == "cancelled"
  return tc.cancelled
end

-- The size of a value as JSON (nil: it cannot be encoded).
local function size(v)
  local ok, text = pcall(json.encode, v)
  return ok and #text or nil
end

--- The call is over with (res, code, msg, data), as tools/call would have
-- answered it: its task takes the outcome. A CallToolResult completes it
-- (isError too: the tool ran), an InputRequiredResult parks it in
-- input_required, a JSON-RPC error fails it; a task cancelled meanwhile
-- stays cancelled. The request's answer: nil when it was answered at the
-- task's start, else the CreateTaskResult.
function tasks.settle(server, tc, res, code, msg, data)
  local after = tasks.change(server, tc.rec.id, function(rec)
    if TERMINAL[rec.status] then
      if rec.status ~= "cancelled" or rec.stopped then return false end
      rec.stopped = true -- the call's work is over: nothing runs for it any more
      rec.statusMessage = tc.told and "cancelled by the client; the call stopped at its next check"
        or "cancelled by the client; the call ran to its end (its result is dropped)"
      return
    end
    rec.result, rec.error, rec.inputRequests, rec.state = nil, nil, nil, nil
    if tc.told then -- stopped, not by tasks/cancel: its request's cancel, or (answered already) the server stopping
      rec.status, rec.stopped = tc.detached and "failed" or "cancelled", true
      rec.statusMessage = tc.detached and "the call was stopped before its end (the server is stopping)"
        or "the request was cancelled"
      if tc.detached then rec.error = { code = -32603, message = rec.statusMessage } end
    elseif res and res.resultType == "input_required" then
      rec.status, rec.statusMessage = "input_required", "waiting for the client's answers (tasks/update)"
      rec.inputRequests, rec.state, rec.answers = res.inputRequests, res.requestState, {}
    elseif res == nil and code == nil then -- stopped before it ran (cancelled)
      rec.status, rec.statusMessage, rec.stopped = "cancelled", "the call was cancelled", true
    elseif res then
      res.resultType = "complete"
      local n = size(res)
      if not n or n > tasks.MAX_RESULT then
        res = { resultType = "complete", isError = true, content = json.array { { type = "text",
          text = ("%s: its result (%s bytes) is more than a task keeps (%d); narrow the call"):format(rec.tool,
            tostring(n), tasks.MAX_RESULT) } } }
      end
      rec.status, rec.statusMessage, rec.result = "completed", nil, res
      rec.stopped = true
    else
      rec.status, rec.statusMessage = "failed", msg
      rec.error = { code = code, message = msg, data = data }
      rec.stopped = true
    end
  end)
  if tc.detached then return nil end
  return tasks.created(after or tc.rec)
end

-- -------------------------------------------------------------- methods

local function task_param(self, params, what)
  if not tasks.enabled(self.session) then
    local _, code, msg, data = tasks.missing(what)
    return nil, code, msg, data
  end
  if type(params.taskId) ~= "string" then return nil, -32602, "Invalid params: taskId (a string) is required" end
  local rec, version = tasks.load(self, params.taskId)
  if not rec then return nil, -32602, ("Invalid params: no task %s (unknown, expired, or another client's)"):format(params.taskId) end
  return rec, version
end

--- tasks/get: the task, with its result, error or questions inlined.
function tasks.get(self, params)
  local rec, code, msg, data = task_param(self, params, "tasks/get")
  if not rec then return nil, code, msg, data end
  local out = tasks.wire(rec)
  if rec.status == "completed" then out.result = rec.result
  elseif rec.status == "failed" then out.error = rec.error
  elseif rec.status == "input_required" then out.inputRequests = rec.inputRequests end
  return out
end

--- tasks/cancel: the task is cancelled (a running call stops at its next
-- check, on whichever worker runs it); a task already over is left as it
-- is. An empty answer either way.
function tasks.cancel(self, params)
  local rec, code, msg, data = task_param(self, params, "tasks/cancel")
  if not rec then return nil, code, msg, data end
  local running = false
  tasks.change(self, rec.id, function(r)
    if TERMINAL[r.status] then return false end
    running = r.status == "working"
    r.status, r.statusMessage = "cancelled", "cancelled by the client"
    r.inputRequests, r.state, r.answers = nil, nil, nil
    if not running then r.stopped = true end -- parked: nothing runs for it
  end)
  if running and self.channel.cancel_task then self.channel:cancel_task(rec.id) end
  return {}
end

--- tasks/update: answers to the task's questions (inputResponses by their
-- keys; others are ignored). Once every question is answered the call runs
-- again with the answers. An empty answer.
function tasks.update(self, params, id)
  local rec, code, msg, data = task_param(self, params, "tasks/update")
  if not rec then return nil, code, msg, data end
  local responses = params.inputResponses
  if type(responses) ~= "table" or getmetatable(responses) == json.array_mt then
    return nil, -32602, "Invalid params: inputResponses must be an object"
  end
  local resume
  local after = tasks.change(self, rec.id, function(r)
    if r.status ~= "input_required" or type(r.inputRequests) ~= "table" then return false end
    local took = false
    for k, v in pairs(responses) do
      if r.inputRequests[k] ~= nil then
        r.answers = type(r.answers) == "table" and r.answers or {}
        r.answers[k], r.inputRequests[k], took = v, nil, true
      end
    end
    if not took then return false end
    if next(r.inputRequests) == nil then
      resume = { state = r.state, answers = r.answers }
      r.status, r.statusMessage, r.inputRequests, r.state, r.answers = "working", nil, nil, nil, nil
    end
  end)
  if not (resume and after) then return {} end
  return self:resume_task(id, after, resume)
end

return tasks
