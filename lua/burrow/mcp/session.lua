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
-- encode and decode (burrow.mcp.session_text) take the whole record: a
-- field added here travels with the session without a list to keep in
-- step.

local session = {}

--- A new record: id, the principal (tenant, token) and anything else the
-- transport gives it (budgets).
function session.new(fields)
  local s = { next_id = 0, waiting = {} }
  for k, v in pairs(fields or {}) do s[k] = v end
  s.id = s.id or "mcp"
  return s
end

-- encode, decode and undo_id, the record as one text (for another worker
-- or instance: HTTP), are burrow.mcp.session_text's, required with the
-- first of them (a stdio server needs none: docs/benchmarks.md, Start-up).
local TEXT = { encode = true, decode = true, undo_id = true }
setmetatable(session, { __index = function(_, k)
  if not TEXT[k] then return nil end
  setmetatable(session, nil)
  for name, f in pairs(require "burrow.mcp.session_text") do session[name] = f end
  return rawget(session, k)
end })

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
