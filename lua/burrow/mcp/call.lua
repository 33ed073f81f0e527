-- burrow.mcp.call: the tools/call path. tools/list's pages; a call's
-- arguments checked (and 2026-07-28's Mcp-Param-* headers against them);
-- Server:run_tool, the one way a request reaches a tool, with the call's
-- hooks; the requests a read-only call's wait answers meanwhile; the MCP
-- result of its answer; a task's call run again with its last answers;
-- what the client hears of a call in its log. Methods of the Server
-- (burrow.mcp.base), required with the first of them (burrow.mcp's LATER).

local core = require "burrow.core"
local json = core.json
-- burrow.mcp.approvals: required with the first approval (a start that
-- answers initialize needs none)
local function approvals() return require "burrow.mcp.approvals" end
-- burrow.mcp.tasks: required with the first call (a start that answers
-- initialize needs none)
local function tasks() return require "burrow.mcp.tasks" end
local printer = require "burrow.toolkit.printer"
local base = require "burrow.mcp.base"
local ask = require "burrow.mcp.ask"

local Server = base.Server
local LEVELS = base.LEVELS
local store_down = ask.store_down
local missing_capability = ask.missing_capability

local call = {}

local PAGE = 100 -- tools per tools/list page

function call.tools_list(self, params)
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
  local text, structured, meta
  local held = printer.holds(res)
  if held then -- a held page may find its file changed as it is written (lpage.c)
    local ok, t, s, m = pcall(self.ws.render, self.ws, name, res)
    if not ok then
      printer.done(res)
      local _, why, failed = printer.failed(t)
      return self:tool_result(name, nil, why, failed)
    end
    text, structured, meta = t, s, m
  else
    text, structured, meta = self.ws:render(name, res)
  end
  local content = json.array {}
  -- a tool may answer in several blocks: texts (a big text and its hint),
  -- or content blocks of its own (an image)
  for i, t in ipairs(type(text) == "table" and text or { text }) do
    content[i] = type(t) == "table" and t or { type = "text", text = t }
  end
  local out = { content = content, _meta = meta }
  -- the edge's form: a held set as the JSON the core writes (burrow.toolkit.printer)
  if self.ws:tool(name).output_schema then
    local why, failed
    out.structuredContent, why, failed = printer.wire(structured)
    if failed ~= nil then -- a held set that could not be written
      printer.done(res)
      return self:tool_result(name, nil, why, failed)
    end
  end
  if held then printer.done(res) end -- printed: the core's results freed now
  return out
end

-- SEP-2243: each argument whose schema says x-mcp-header = NAME against
-- the request's Mcp-Param-NAME header: its text as sent, or the bytes of
-- "=?base64?...?=" (strict Base64); a header present for an absent
-- argument, or absent for a present one, is a mismatch.
local function param_headers_match(tool, args, headers)
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

--- Run tool name with args as a tools/call runs it: the retry's approval
-- state, the queue's cancel, and the call's hooks (approvals, its
-- questions to the client, progress, log, the session's record). The one
-- way tools/call and the resource operations (burrow.mcp.resource_ops) reach
-- a tool. tc: the call's task state (burrow.mcp.tasks), nil for none. Returns
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
    grant, why, code = approvals().redeem(self, st, params, { session = self.session })
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
      if tc then tasks().tick(self, tc, id, name, args) end
      return self.channel:cancelled() or (tc ~= nil and tc.rec ~= nil and tasks().stopping(self, tc))
    end,
    task = tc and function() return tasks().escalate(self, tc, id, name, args) end or nil,
    approve = grant and approvals().approver(grant) or self:approver(),
    approved_by = "the client (MCP elicitation)", -- the audit's word for who approved
    session = self.session,
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
  -- the result as the tool gave it: this server prints it (tool_result)
  local res, msg, code, details = self.ws:run(name, args, hooks)
  -- a task's call told to stop (its worker's flag, or its record): so it
  -- stopped at a check, rather than ran to its end (the flag is reset next)
  if tc and tc.rec then tc.told = self.channel:cancelled() or tc.cancelled end
  self.channel:finish()
  -- a task's tool that failed (raised): burrow's failure, not the tool's answer
  if tc and tc.rec and hooks.internal_error then return false, nil, -32603, msg end
  if asked or asking.pending then -- nothing written: the client is asked (a signed state)
    local out, why, kcode
    if asked then out, why, kcode = approvals().ask(self, name, args, asked.req, asked.reason, { session = self.session }, answers)
    else out, why, kcode = approvals().ask_more(self, name, args, asking.pending, answers) end
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

-- A tools/call; box.tc: its task state (burrow.mcp.tasks), given for a task's
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
    local tc, c, m, d = tasks().call(self, self.ws:tool(name))
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
function call.tools_call(self, params, id)
  local box = {}
  local res, code, msg, data = run_call(self, params, id, box)
  if box.tc and box.tc.rec then return tasks().settle(self, box.tc, res, code, msg, data) end
  return res, code, msg, data
end

--- tasks/update brought the last answers of task rec: its call runs again
-- with them (resume: the requestState it parked with, the answers), after
-- the request's empty answer where the channel can answer first.
function Server:resume_task(id, rec, resume)
  local tc = tasks().resumed(self, rec, id)
  local params = { name = rec.tool, arguments = rec.args, requestState = resume.state, inputResponses = resume.answers }
  local res, code, msg, data = run_call(self, params, id, { tc = tc })
  -- its worker runs the task no more, even when the call stopped before it
  -- began (HTTP's finish may come twice; stdio's counts, and never detaches)
  if tc.detached then self.channel:finish() end
  tasks().settle(self, tc, res, code, msg, data)
  if tc.detached then return nil end
  return {}
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

return call
