-- burrow.mcp.sessionstore: a session of MCP's session revisions (2025-*) kept
-- in the deployment's state store (the config's state: Redis or Valkey),
-- so any instance behind a plain round-robin proxy serves any request of
-- it. No sticky proxy, and an instance's death loses only its calls in
-- flight.
--
-- The record is the store's "session/<id>" under the session's tenant:
-- a first line naming the token that opened it (httpsess.c's adoption reads
-- only that: httpshare.c), then the session's record (burrow.mcp.session) as
-- JSON, less what belongs to one process (its undo store, its file
-- watches: those stay on the instance that made them) and less the
-- principal, which every request brings (fixed at admission). The
-- listener reads it at each request's admission (httpshare.c: one round
-- trip) and hands its version with the item; a call reads it again only
-- when that is not the version its worker holds, and writes it back only
-- when the call changed it, before its answer is out (so the client's next request,
-- whichever instance it reaches, sees the change); two instances changing
-- one session at once merge field by field, the later change of a field
-- winning. A record nobody changes is written again once a quarter of the
-- session's idle time has passed, so it lives while the session is used.
--
-- Answers to our requests to the client (an approval's elicitation, a
-- tool's ctx:ask) come as POSTs that the proxy may send to any instance:
-- one that reaches an instance whose call did not ask is put in the
-- store's "answers/<id>" list, which the asking call polls.

local core = require "burrow.core"
local json = core.json
local session = require "burrow.mcp.session"

local M = {}

local MAGIC = "burrow-session 1 "
-- what stays on its instance, and the principal (fixed at admission)
local KEPT_HERE = { undo = true, tenant = true, token = true, read_only = true, undo_budget = true, watch_budget = true,
  undo_named = true, undo_ttl = true } -- the shared undo store's name: each instance derives it from the session id
local RETRIES = 8
M.MAX_ANSWERS = 64 -- answers waiting for their asker, per session
M.ANSWER_TTL = 600

local function key(sid) return "session/" .. sid end

-- The part of session s every instance shares.
local function shared(s)
  local out = {}
  for k, v in pairs(s) do
    if not KEPT_HERE[k] then out[k] = v end
  end
  return out
end

-- The fields of a record's text (nil: not a record of ours).
local function fields_of(text)
  local nl = text:find("\n", 1, true)
  if not nl or text:sub(1, #MAGIC) ~= MAGIC then return nil end
  local ok, r = pcall(json.decode, text:sub(nl + 1))
  if not ok or type(r) ~= "table" or type(r.session) ~= "table" then return nil end
  local f, at = r.session, tonumber(r.session._at)
  f._at = nil
  return f, json.encode { session = f }, at
end

--- The session's shared record: its fields, the record's version, their
-- JSON text and when it was written (os.time); nil and 0 when the store has none (never made, ended
-- or expired); nil, nil and the store's message when it does not answer.
function M.fetch(st, tenant, sid)
  local v, ver = st:get(tenant, key(sid))
  if v == nil then return nil, nil, ver end
  if v == false then return nil, 0 end
  local f, text, at = fields_of(v)
  if not f then return nil, 0 end
  return f, ver, text, at
end

--- Session s takes the shared fields f (another instance's changes); what
-- stays here and the principal are kept.
function M.overlay(s, f)
  for k in pairs(s) do
    if not KEPT_HERE[k] and f[k] == nil then s[k] = nil end
  end
  for k, v in pairs(f) do
    if not KEPT_HERE[k] then s[k] = v end
  end
  if type(s.waiting) ~= "table" then s.waiting = {} end
  s.next_id = tonumber(s.next_id) or 0
end

local function same(a, b)
  if a == b then return true end
  local ok1, x = pcall(json.encode, a)
  local ok2, y = pcall(json.encode, b)
  return ok1 and ok2 and x == y
end

--- Write session s back when it changed since the record it was read
-- from (base: {text =, version =, at =}, updated here), or when the record
-- is due to be written again (ttl: the session's idle time). True; or nil
-- and why (the store did not answer; the session ended meanwhile: "gone").
function M.persist(st, s, sid, token, base, ttl)
  local mine = shared(s)
  mine._at = nil
  local ok, text = pcall(json.encode, { session = mine })
  if not ok then return nil, "the session's state is not plain data: " .. tostring(text) end
  local now = os.time()
  if text == base.text and base.version > 0 and now - (base.at or 0) < ttl / 4 then return true end
  local tenant = tostring(s.tenant or "")
  local expected, out = base.version, mine
  local base_fields = base.text and json.decode(base.text).session or {}
  for _ = 1, RETRIES do
    out._at = now
    local body = json.encode { session = out }
    local done, ver = st:cas(tenant, key(sid), expected, MAGIC .. (token or "-") .. "\n" .. body,
      math.max(60, ttl))
    if done == nil then return nil, ver end
    if done then
      out._at = nil
      base.text, base.version, base.at = json.encode { session = out }, ver, now
      return true
    end
    -- another instance wrote first: its record, with this call's own
    -- changes on top, field by field
    local theirs, tver = M.fetch(st, tenant, sid)
    if not theirs then return nil, tver == 0 and "gone" or "the store did not answer" end
    for k in pairs(mine) do
      if not same(mine[k], base_fields[k]) then theirs[k] = mine[k] end
    end
    for k in pairs(base_fields) do
      if mine[k] == nil then theirs[k] = nil end
    end
    out, expected = theirs, tver
    out._at = nil
  end
  return nil, "the session's record changed under every retry"
end

--- A response to a request of ours that this instance's call did not ask:
-- kept in the store for the asker, wherever it runs. True, or nil and why.
function M.post_answer(st, tenant, sid, msg)
  local k = "answers/" .. sid
  local entry = { id = json.encode(msg.id), text = json.encode(msg) }
  for _ = 1, RETRIES do
    local v, ver = st:get(tenant, k)
    if v == nil then return nil, ver end
    local list = v and json.decode(v) or {}
    if #list >= M.MAX_ANSWERS then return nil, "too many answers waiting" end
    list[#list + 1] = entry
    local done, err = st:cas(tenant, k, v and ver or 0, json.encode(list), M.ANSWER_TTL)
    if done == nil then return nil, err end
    if done then return true end
  end
  return nil, "the answers' record changed under every retry"
end

--- The answers to our request id waiting for session sid's call that asked
-- it (their texts), taken from the store, the others' left for their
-- askers (two calls of one session may ask at once, on two instances);
-- {} when none or when the store does not answer.
function M.take_answers(st, tenant, sid, id)
  local k, want = "answers/" .. sid, json.encode(id)
  for _ = 1, RETRIES do
    local v, ver = st:get(tenant, k)
    if not v then return {} end
    local ok, list = pcall(json.decode, v)
    if not ok or type(list) ~= "table" then list = {} end
    local mine, rest = {}, {}
    for _, e in ipairs(list) do
      if type(e) == "table" and e.id == want then mine[#mine + 1] = e.text
      elseif type(e) == "table" then rest[#rest + 1] = e end
    end
    if #mine == 0 then return {} end
    local done
    if #rest == 0 then done = st:del(tenant, k, ver)
    else done = st:cas(tenant, k, ver, json.encode(rest), M.ANSWER_TTL) end
    if done == nil then return {} end
    if done then return mine end
  end
  return {}
end

--- Is msg (a decoded body) a response, or a batch of them only?
function M.is_answer(msg)
  if type(msg) ~= "table" then return false end
  if getmetatable(msg) == json.array_mt then
    for _, m in ipairs(msg) do
      if not M.is_answer(m) then return false end
    end
    return #msg > 0
  end
  return msg.method == nil and msg.id ~= nil and (msg.result ~= nil or msg.error ~= nil)
end

return M
