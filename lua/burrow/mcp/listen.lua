-- burrow.mcp.listen: subscriptions/listen, MCP 2026-07-28's one channel for
-- what the server tells a client unasked. A listen names what it wants
-- (the SubscriptionFilter): notifications/resources/updated for the file
-- URIs in resourceSubscriptions (each a watch judged as a read, as
-- resources/subscribe's: what a read would be denied is not watched), and
-- the list changes it opts in to. The first message carrying its id is the
-- acknowledgement, which names what the server honours; every later one
-- carries the id in _meta (io.modelcontextprotocol/subscriptionId), and
-- nothing is sent that the listen did not ask for.
--
-- Over stdio a process holds up to MAX listens on its one channel; one
-- ends with the client's notifications/cancelled naming it. Over HTTP a
-- listen is the answer stream of its POST, held by the listener (http.c),
-- not a worker; it ends when the client closes that stream. Its state
-- (filter, watch ids) travels with the listen's session record like a
-- session's subscriptions do (burrow.transport.http: snapshot, restore).

local core = require "burrow.core"
local json = core.json
local resources = require "burrow.mcp.resources"

local listen = {}

local META = "io.modelcontextprotocol/"
local SUB = META .. "subscriptionId"
listen.MAX = 64       -- listens one stdio process holds at once
listen.MAX_URIS = 256 -- resourceSubscriptions of one listen (the watch caps apply too)

-- The list changes a listen may opt in to, and what each is sent as.
local LISTS = {
  toolsListChanged = "notifications/tools/list_changed",
  promptsListChanged = "notifications/prompts/list_changed",
  resourcesListChanged = "notifications/resources/list_changed",
}

--- One key per request id, whatever its JSON spelling: 7 and 7.0 are the
-- same id, "7" another.
function listen.key(id)
  if type(id) == "number" then
    local i = math.tointeger(id)
    return "n:" .. tostring(i or id)
  end
  return "s:" .. tostring(id)
end

--- Whether the lists can change here at all: only a reload (SIGHUP, a
-- stdio server with its configuration files) changes the tools, prompts
-- and roots; an HTTP server never reloads.
function listen.lists_change(self)
  return self.reopen ~= nil
end

local function send(self, l, method, params)
  params = params or {}
  params._meta = { [SUB] = l.id }
  self:send { method = method, params = params }
end

-- What a watch of listen l on uri sends: updated for the URI (a file's
-- bytes, its name, a folder's entries), and the list change when a folder
-- gained or lost entries and the listen asked for list changes.
local function notifier(self, l, uri)
  return function(ev)
    if not (ev.changed or ev.gone or ev.list) then return end
    send(self, l, "notifications/resources/updated", { uri = uri })
    if ev.list and l.filter.resourcesListChanged then
      send(self, l, "notifications/resources/list_changed")
    end
  end
end

local function bad(msg) return nil, -32602, "Invalid params: " .. msg end

-- The filter, checked: booleans for the lists, an array of strings (at
-- most MAX_URIS, duplicates once) for the URIs.
local function parse(f)
  if type(f) ~= "table" or getmetatable(f) == json.array_mt then
    return bad("notifications must be an object (the SubscriptionFilter: toolsListChanged, "
      .. "promptsListChanged, resourcesListChanged, resourceSubscriptions)")
  end
  for k in pairs(LISTS) do
    if f[k] ~= nil and type(f[k]) ~= "boolean" then return bad(("notifications.%s must be a boolean"):format(k)) end
  end
  local uris, seen = {}, {}
  local rs = f.resourceSubscriptions
  if rs ~= nil then
    if type(rs) ~= "table" or (next(rs) ~= nil and getmetatable(rs) ~= json.array_mt) then
      return bad("notifications.resourceSubscriptions must be an array of URIs")
    end
    if #rs > listen.MAX_URIS then
      return bad(("notifications.resourceSubscriptions names %d URIs; at most %d in one listen")
        :format(#rs, listen.MAX_URIS))
    end
    for i, u in ipairs(rs) do
      if type(u) ~= "string" then return bad(("notifications.resourceSubscriptions[%d] must be a string"):format(i)) end
      if not seen[u] then
        seen[u] = true
        uris[#uris + 1] = u
      end
    end
  end
  return { lists = f, uris = uris, asked_uris = rs ~= nil }
end

local function count(self)
  local n = 0
  for _ in pairs(self.listens) do n = n + 1 end
  return n
end

-- Watch uri for listen l: the watch id, or nil and why (and true for an
-- operator resource that watches nothing: honoured, never reported, as
-- resources/subscribe takes it). A file:// URI or an operator resource's
-- watch (resources.watch_path: the same path a subscribe would watch).
local function watch(self, l, uri)
  local path, why, quiet = resources.watch_path(self, uri)
  if not path then return nil, why, quiet end
  local watches = resources.watcher(self)
  local id, msg = watches:add(self.ws, path, notifier(self, l, uri), self.session)
  return id, msg
end

--- subscriptions/listen: the acknowledgement goes out now; there is no
-- response until the listen ends gracefully (listen.stop), and none when
-- the client ends it. A URI that cannot be watched (not a file:// URI
-- under a root, missing, denied by the policies as a read would be) is
-- left out of what is honoured, with the reason in the acknowledgement's
-- _meta["burrow/refused"].
function listen.open(self, params, id)
  if not self.channel.can_listen then
    return nil, -32601, "Method not found: subscriptions/listen (this transport serves it on a stream of its own)"
  end
  local f, code, msg = parse(params.notifications)
  if not f then return nil, code, msg end
  local key = listen.key(id)
  if self.listens[key] then
    return nil, -32600, "Invalid Request: a listen with this id is open; use another id"
  end
  if count(self) >= listen.MAX then
    return nil, -32000, ("%d listens are open on this connection (at most %d): cancel one first")
      :format(count(self), listen.MAX)
  end
  local honoured = {}
  for k in pairs(LISTS) do
    if f.lists[k] == true and listen.lists_change(self) then honoured[k] = true end
  end
  local l = { id = id, filter = honoured, subs = {} }
  local uris, refused = json.array {}, json.array {}
  for _, uri in ipairs(f.uris) do
    local wid, why, quiet = watch(self, l, uri)
    if wid then
      l.subs[uri] = wid
      uris[#uris + 1] = uri
    elseif quiet then
      uris[#uris + 1] = uri
    else
      refused[#refused + 1] = { uri = uri, reason = tostring(why) }
    end
  end
  if f.asked_uris then honoured.resourceSubscriptions = uris end
  self.listens[key] = l
  local meta = { [SUB] = id }
  if #refused > 0 then meta["burrow/refused"] = refused end
  self:send { method = "notifications/subscriptions/acknowledged",
    params = { notifications = honoured, _meta = meta } }
  self.channel.listening = true
end

--- The client's notifications/cancelled naming a listen: it ends (its
-- watches go); nothing is answered.
function listen.cancel(self, params)
  local l = params and params.requestId ~= nil and self.listens[listen.key(params.requestId)]
  if not l then return end
  for _, wid in pairs(l.subs) do self.watches:remove(wid) end
  self.listens[listen.key(l.id)] = nil
end

--- A list changed (a reload): every listen that asked for it hears it.
-- what: toolsListChanged, promptsListChanged or resourcesListChanged.
function listen.changed(self, what)
  for _, l in pairs(self.listens) do
    if l.filter[what] then send(self, l, LISTS[what]) end
  end
end

--- The workspace changed (SIGHUP): each watch is judged again; a URI the
-- new configuration refuses is no longer watched (said on stderr).
function listen.rewatch(self)
  for _, l in pairs(self.listens) do
    for uri, wid in pairs(l.subs) do
      self.watches:remove(wid)
      l.subs[uri] = nil
      local nid, why, quiet = watch(self, l, uri)
      if nid then l.subs[uri] = nid
      elseif not quiet then io.stderr:write("burrow: listen ", tostring(l.id), ": ", uri, " no longer watched: ", tostring(why), "\n") end
    end
  end
end

--- Whether any listen holds a watch (its watcher must stay).
function listen.watching(self)
  for _, l in pairs(self.listens) do
    if next(l.subs) then return true end
  end
  return false
end

--- The listens as plain data, for a session record (burrow.transport.http).
function listen.snapshot(self)
  if next(self.listens) == nil then return nil end
  local out = {}
  for key, l in pairs(self.listens) do
    out[key] = { id = l.id, filter = l.filter, subs = next(l.subs) and l.subs or nil }
  end
  return out
end

--- The listens of a record, in this Lua state: their watches are the
-- adopted watcher's (resources.adopt made self.watches), their callbacks
-- this state's.
function listen.adopt(self, snap)
  if type(snap) ~= "table" then return end
  for key, r in pairs(snap) do
    if type(r) == "table" and r.id ~= nil and type(r.filter) == "table" then
      local l = { id = r.id, filter = r.filter, subs = {} }
      for uri, wid in pairs(type(r.subs) == "table" and r.subs or {}) do
        local path = resources.watch_path(self, uri)
        if self.watches and path then
          self.watches:track(wid, path, notifier(self, l, uri), self.ws, self.session)
          l.subs[uri] = wid
        end
      end
      self.listens[key] = l
    end
  end
end

--- The watch ids a record's listens hold (to end them from a snapshot).
function listen.watch_ids(snap)
  local out = {}
  for _, r in pairs(type(snap) == "table" and snap or {}) do
    for _, wid in pairs(type(r) == "table" and type(r.subs) == "table" and r.subs or {}) do out[#out + 1] = wid end
  end
  return out
end

return listen
