-- burrow.mcp.approvals: a policy's "ask" as a Multi Round-Trip Request (MCP
-- 2026-07-28, where the server cannot send the client a request).
--
-- Round 1: the call stops at the ask (nothing written) and its answer is
-- an InputRequiredResult: one elicitation/create form ("approve") and a
-- requestState. Round 2: the client sends the same tools/call again with
-- inputResponses.approve and that requestState; the call runs, and the one
-- question the state names (tool, operation, path) takes the client's
-- answer.
--
-- The state is the server's word, signed: base64(JSON) "." HMAC-SHA256
-- under the deployment key, over the tool, a hash of its arguments, the
-- operation and path asked about, that file's content hash when asked, the
-- tenant, an expiry and a random nonce. A retry is refused (-32602, nothing
-- runs) when the state is tampered with, expired, already used, or names
-- other arguments, another tool or tenant, or a file whose content changed
-- since the question.

local core = require "burrow.core"
local json = core.json

local approvals = {}

approvals.TTL = 300        -- seconds a question may wait for its answer
approvals.INPUT = "approve" -- the inputRequests key
local stores = {} -- path -> the shared store of used states (http.approval_store)

-- The approval key every instance of a deployment's store signs with:
-- the one in the store, or one drawn here and put there when there is none
-- (compare-and-set: two instances drawing at once agree on one); it lives
-- a year from each instance's first use (an operator who wants it fixed,
-- or rotated, gives http.approval_key_file). Got at first need, not at the
-- start, so an instance started while the store is down serves all the
-- rest and signs once the store answers; kept once got (per store object:
-- each worker's Lua state asks once). nil and why when the store does not
-- answer.
local KEY_TTL = 365 * 86400
local shared_keys = setmetatable({}, { __mode = "k" })
function approvals.shared_key(st)
  if shared_keys[st] then return shared_keys[st] end
  local mine = core.random_hex(32)
  for _ = 1, 3 do
    local v, ver = st:get("", "http/approval-key")
    if v == nil then return nil, "the state store did not answer (" .. tostring(ver) .. ")" end
    if v then
      st:cas("", "http/approval-key", ver, v, KEY_TTL)
      shared_keys[st] = v
      return v
    end
    local done, err = st:cas("", "http/approval-key", 0, mine, KEY_TTL)
    if done == nil then return nil, "the state store did not answer (" .. tostring(err) .. ")" end
    if done then
      shared_keys[st] = mine
      return mine
    end
  end
  return nil, "the state store's approval key changed under every retry"
end

--- The key that signs s's (a Server's) approval states (MRTR): the
-- deployment's (HTTP: http.approval_key_file, set by burrow.transport.http; with a
-- deployment's store and no file, the store's, got at first need:
-- approval_shared), else one drawn at first use, which only this process
-- knows. nil, why and STORE_UNAVAILABLE when the store's is needed and the
-- store does not answer.
function approvals.key(s)
  if not s.approval_key and s.approval_shared then
    local key, why = approvals.shared_key(s.ws.state)
    if not key then return nil, why, "STORE_UNAVAILABLE" end
    s.approval_key = key
  end
  s.approval_key = s.approval_key or core.random_hex(32)
  return s.approval_key
end

-- Mark nonce r used until x: in the shared file when the deployment names
-- one (http.approval_store: every instance on the machine sees it), else
-- in the deployment's state store (burrow mcp's: every worker of the
-- process sees it), under the principal's tenant. true the first time;
-- nil and why when the store cannot answer (the retry is refused).
local function use_once(s, r, x, now)
  if s.approval_store then
    local st = stores[s.approval_store]
    if not st then
      local err
      st, err = core.store_open(s.approval_store)
      if not st then return nil, "the approval store cannot be opened: " .. tostring(err) end
      stores[s.approval_store] = st
    end
    local first, err = st:once("once:mrtr:" .. r, x)
    if first == nil then return nil, "the approval store: " .. tostring(err), "STORE_UNAVAILABLE" end
    return first
  end
  local tenant = s.session and s.session.tenant or "default"
  local first, err = s.ws.state:once(tenant, "approvals/used/" .. r, math.max(1, x - now + 1))
  if first == nil then
    return nil, "the state store did not answer (" .. tostring(err) .. "): ask again later", "STORE_UNAVAILABLE"
  end
  return first
end

-- The content hash of the file a question is about, as read_file gives
-- it ("absent" when there is none; a refusal's code when it cannot be read).
-- The native read_file, whether or not the operator lists it (else the
-- hash was "unreadable:INVALID_ARGUMENT" both times and a change went
-- unseen), judged by the policies (a hash of a file they hide is not
-- handed out) but never put to an approver, and not audited: the agent
-- did not call it.
local function no_asking() return false, "an approval's own read is not asked about" end
function approvals.file_hash(ws, hooks, path)
  local quiet = { session = hooks and hooks.session, approve = no_asking, unaudited = true }
  local res, _, code = ws:call_native("read_file", { path = path, limit = 1 }, quiet)
  if not res and code ~= "ENOENT" and code ~= "POLICY_DENIED" and code ~= "EISDIR" then
    -- a binary file: read_file gives it (and its hash) only as base64
    res, _, code = ws:call_native("read_file", { path = path, encoding = "base64" }, quiet)
  end
  if res then return res.content_hash or "unknown" end
  return code == "ENOENT" and "absent" or ("unreadable:" .. tostring(code))
end

local function args_hash(args) return core.sha256(json.encode(args)) end

local function sign(key, payload)
  return payload .. "." .. core.hmac_sha256(key, "burrow-mrtr-1." .. payload)
end

--- The form that asks the client's user about req (an elicitation's
-- params), in either era of MCP.
function approvals.form(tool, req, reason)
  return {
    message = ("Allow %s to %s %s? %s"):format(tool, req.operation, req.path, reason),
    requestedSchema = {
      type = "object",
      properties = { approve = { type = "boolean", title = "Allow", description = "Let this call go ahead" } },
      required = json.array { "approve" },
    },
  }
end

--- What the user's answer to that form (an elicitation result) decides:
-- true, or false and why. Accepting the form approves; only an approve box
-- left unticked says no.
function approvals.verdict(r)
  r = type(r) == "table" and r or {}
  if r.action ~= "accept" then return false, "the user chose " .. tostring(r.action or "no answer") end
  if type(r.content) == "table" and r.content.approve == false then return false, "the user said no" end
  return true
end

--- The InputRequiredResult of question req (asked by tool name with
-- args) for a client that declared elicitation; s: the Server. answers:
-- what the tool's own questions (ctx:ask) got in the rounds before, kept
-- in the signed state so the retry runs the tool with them again.
function approvals.ask(s, name, args, req, reason, hooks, answers)
  local key, kerr, kcode = approvals.key(s)
  if not key then return nil, kerr, kcode end
  local payload = core.base64_encode(json.encode {
    k = "approve", t = name, a = args_hash(args), o = req.operation, p = req.path,
    h = approvals.file_hash(s.ws, hooks, req.path),
    n = s.session and s.session.tenant or "default", u = s.session and s.session.token,
    x = math.floor(os.time() + (s.approval_ttl or approvals.TTL)),
    r = core.random_hex(16),
    q = answers ~= nil and next(answers) ~= nil and answers or nil,
  })
  return {
    resultType = "input_required",
    inputRequests = {
      [approvals.INPUT] = { method = "elicitation/create", params = approvals.form(req.tool or name, req, reason) },
    },
    requestState = sign(key, payload),
  }
end

approvals.MAX_STATE = 64 * 1024 -- a requestState (a tool's asks carry their answers in it)

--- A retry's requestState opened: its fields when burrow signed it, for
-- this tool, these arguments, this tenant and this token, and it has not
-- expired; else nil and why (the client's error).
function approvals.open(s, name, args, state)
  if type(state) ~= "string" or #state > approvals.MAX_STATE then
    return nil, "requestState must be the string burrow sent"
  end
  local payload = state:match("^([A-Za-z0-9+/=]+)%.%x+$")
  local key, kerr, kcode = approvals.key(s)
  if not key then return nil, kerr, kcode end
  if not payload or not core.equal_ct(sign(key, payload), state) then
    return nil, "requestState failed its integrity check (not one burrow signed, or changed)"
  end
  local ok, st = pcall(function() return json.decode(core.base64_decode(payload)) end)
  if not ok or type(st) ~= "table" then return nil, "requestState failed its integrity check" end
  if type(st.x) ~= "number" or st.x < os.time() then
    return nil, "requestState expired: ask again (call the tool without inputResponses)"
  end
  if st.t ~= name or st.a ~= args_hash(args) then
    return nil, "requestState was issued for another call (tool or arguments differ): ask again"
  end
  if st.n ~= (s.session and s.session.tenant or "default") then
    return nil, "requestState was issued to another tenant"
  end
  -- tokens of one tenant are different agents: one's approval is not another's
  if st.u ~= (s.session and s.session.token) then
    return nil, "requestState was issued to another token: ask again with this one"
  end
  return st
end

--- An approval state (approvals.open's) redeemed: the grant {operation,
-- path, answer} it carries, or nil and why. It is used up here, before the
-- call runs, so a replay cannot race the first use.
function approvals.redeem(s, st, params, hooks)
  if type(st.r) ~= "string" or not st.r:match("^%x+$") or #st.r > 64 then
    return nil, "requestState failed its integrity check"
  end
  local first, err, code = use_once(s, st.r, st.x, os.time())
  if first == nil then return nil, err, code end
  if not first then return nil, "requestState was used already: ask again" end
  if approvals.file_hash(s.ws, hooks, st.p) ~= st.h then
    return nil, ("%s changed since the approval was asked: ask again"):format(st.p)
  end
  local responses = type(params.inputResponses) == "table" and params.inputResponses or {}
  return { operation = st.o, path = st.p, answer = responses[approvals.INPUT] }
end

--- A tool's own questions to the client (ctx:ask) in 2026-07-28: the
-- InputRequiredResult of the pending ones, its state carrying the answers
-- of the rounds before (signed: the client cannot change them).
function approvals.ask_more(s, name, args, pending, answers)
  local key, kerr, kcode = approvals.key(s)
  if not key then return nil, kerr, kcode end
  local payload = core.base64_encode(json.encode {
    k = "ask", t = name, a = args_hash(args), n = s.session and s.session.tenant or "default",
    u = s.session and s.session.token, x = math.floor(os.time() + (s.approval_ttl or approvals.TTL)), q = answers,
  })
  return { resultType = "input_required", inputRequests = pending, requestState = sign(key, payload) }
end

--- The approve hook of a retried call: the question the state names gets
-- the client's answer; any other is refused.
function approvals.approver(grant)
  return function(req)
    if req.operation ~= grant.operation or req.path ~= grant.path then
      return false, "this approval was for " .. grant.operation .. " " .. grant.path
    end
    return approvals.verdict(grant.answer)
  end
end

return approvals
