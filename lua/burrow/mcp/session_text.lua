-- burrow.mcp.session_text: a session's record (burrow.mcp.session) as one
-- JSON text and back, whole, for whichever worker or instance serves the
-- session next (HTTP). burrow.mcp.session gives these as its own
-- (session.encode, decode, undo_id), required with the first of them.

local core = require "burrow.core"
local json = core.json

local codec = {}

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
function codec.encode(s, extra)
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
function codec.decode(text, fixed)
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
function codec.undo_id(text)
  local ok, r = pcall(json.decode, text)
  local s = ok and type(r) == "table" and r.session
  return type(s) == "table" and type(s.undo) == "string" and s.undo or nil, ok and type(r) == "table" and r.extra or nil
end

return codec
