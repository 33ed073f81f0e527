-- burrow.mcp.session: what one MCP session is, as plain data. A transport
-- keeps it between requests (stdio in its one Server, HTTP in the
-- listener's record of the session, whichever worker serves it next), and
-- every call of the session gets it (hooks.session):
--
--   id           the session's name in logs and policy requests
--   tenant       the principal: its tenant's name ...
--   token        ... and its token's id (nil: the process, or no tokens)
--   read_only    true: an OAuth token of the read-only scope (http.oauth.scopes);
--                every object its calls touch is judged for reading only (context.lua)
--   protocol     the revision negotiated (nil before initialize)
--   client, client_caps, log_level      what the client said of itself
--   client_root_list, scope             its roots, and the scope they give
--   next_id, waiting   our requests the client has not answered (by the
--                      name of their reply handler, mcp.replies)
--   packs        the packs' state
--   undo         its undo store (a userdata; encoded by its id), or
--   undo_named   the name of a store its principal's requests share (a
--                stateless principal's; with the deployment's state store,
--                an HTTP session's too, derived from its id: burrow.toolkit.undo
--                keeps the records there, so every instance finds them)
--   undo_ttl     seconds such a shared history lives after its last change
--   undo_budget, watch_budget   its tenant's budgets
--   stateless    true for the record of one 2026-07-28 request
--
-- encode and decode take the whole record: a field added here travels
-- with the session without a list to keep in step.

local core = require "burrow.core"
local json = core.json

local session = {}

--- A new record: id, the principal (tenant, token) and anything else the
-- transport gives it (budgets).
function session.new(fields)
  local s = { next_id = 0, waiting = {} }
  for k, v in pairs(fields or {}) do s[k] = v end
  s.id = s.id or "mcp"
  return s
end

-- Is v JSON as encode writes it (tables, strings, numbers, booleans)?
local function plain(v, depth)
  local t = type(v)
  if t == "string" or t == "number" or t == "boolean" or v == json.null then return true end
  if t ~= "table" or depth > 32 then return false end
  for k, x in pairs(v) do
    if (type(k) ~= "string" and type(k) ~= "number") or not plain(x, depth + 1) then return false end
  end
  return true
end

--- The record as one JSON text, with extra (the transport's own part,
-- plain data) beside it; nil when it holds what cannot travel (a reply
-- handler that is a function, a pack's state that is not plain data): such
-- a session stays where it is.
function session.encode(s, extra)
  local out = {}
  for k, v in pairs(s) do
    if k == "undo" then
      if type(v) ~= "userdata" then return nil end
      -- a named store is found again by its name (undo_named), never by
      -- an id published in this process
      if not s.undo_named then out.undo = v:id() end
    elseif not plain(v, 0) then
      return nil
    else
      out[k] = v
    end
  end
  local ok, text = pcall(json.encode, { session = out, extra = extra })
  if not ok then return nil end
  return text
end

--- encode's inverse: the record and the transport's part, or nil. The
-- undo store comes back by its id (nil when it has gone); fixed (the
-- principal and budgets as the transport admitted this request) wins over
-- what the text says.
function session.decode(text, fixed)
  local ok, r = pcall(json.decode, text)
  if not ok or type(r) ~= "table" or type(r.session) ~= "table" then return nil end
  local s = r.session
  if type(s.undo) == "string" then s.undo = require("burrow.toolkit.undo").find(s.undo) else s.undo = nil end
  s.waiting = type(s.waiting) == "table" and s.waiting or {}
  s.next_id = tonumber(s.next_id) or 0
  for k, v in pairs(fixed or {}) do s[k] = v end
  return s, r.extra
end

--- The undo store id an encoded record names (to drop it with the session
-- when no worker holds its Server).
function session.undo_id(text)
  local ok, r = pcall(json.decode, text)
  local s = ok and type(r) == "table" and r.session
  return type(s) == "table" and type(s.undo) == "string" and s.undo or nil, ok and type(r) == "table" and r.extra or nil
end

-- What a 2026-07-28 request takes from the connection it came on: the
-- principal and what belongs to it, not the session's own state.
local INHERITED = { "id", "tenant", "token", "read_only", "scope", "packs", "undo", "undo_named", "undo_budget", "watch_budget" }

--- The record of one 2026-07-28 request: built fresh from its _meta
-- (revision, client capabilities and info, log level), with the principal
-- and its stores from base (the connection's record).
function session.stateless(base, protocol, client_caps, client, log_level)
  local s = session.new()
  for _, k in ipairs(INHERITED) do s[k] = base[k] end
  s.protocol, s.client_caps, s.client, s.log_level, s.stateless = protocol, client_caps, client, log_level, true
  return s
end

--- After such a request: a store it made for its principal (its undo
-- store, its packs' state: made on first use) stays with the connection.
function session.settle(base, s)
  if base.undo == nil then base.undo = s.undo end
  if base.packs == nil then base.packs = s.packs end
end

return session
