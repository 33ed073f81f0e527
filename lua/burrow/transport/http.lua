-- burrow.transport.http: `burrow mcp --http`, MCP over Streamable HTTP. The
-- listener is C (http.c: sessions, SSE streams, Host/Origin, tokens,
-- limits); this file starts it (http.serve, on the main Lua state) and is
-- the loop of each worker thread (http.worker, on a Lua state of its own).
--
-- Any worker serves any session: the scheduler (httpsched.c) hands a free
-- worker the next session in tenant order, and the worker builds the
-- session's burrow.mcp Server on its tenant's workspace (opened once per
-- worker) from the state the session's last call left (its snapshot:
-- protocol, client capabilities, log level, client scope, packs' state,
-- the id of its undo store), or keeps the Server it built last time when
-- no other worker has served the session since. Its file watches travel
-- by the id of their watcher (watch.c), and the listener's poller hands
-- their changes to any worker; state that cannot travel (a pack's state
-- that is not plain data) keeps the session on its worker.
-- Everything a Server sends goes through its one send function
-- (Server:send -> its channel's send): while it handles a POST, to that POST's
-- stream; otherwise (a notification of a watch, a request to the client)
-- to the session's GET stream.

local core = require "burrow.core"
local json = core.json
local listen = require "burrow.mcp.listen"
local session = require "burrow.mcp.session"
local sessionstore = require "burrow.mcp.sessionstore"

local http = {}

local POLL = 0.25 -- seconds between pumps of the sessions' watches when idle
local CACHE = 64  -- Servers a worker keeps for sessions it served (beside those homed on it)
local SNAPSHOT_MAX = 4 * 1024 * 1024 -- a larger state stays on its worker rather than be copied per call
http.MAX_UNDO_BYTES = 256 * 1024 * 1024 -- a tenant's undo budget unless http.max_undo_bytes says
http.MAX_WATCHES = 1024 -- a tenant's file watches, all its sessions, unless http.max_watches says
http.MAX_QUEUED = 256 * 1024 * 1024 -- body bytes waiting for the workers in all (lhttp.c's default for http.max_queued)
http.SHUTDOWN_GRACE = 10 -- seconds a SIGTERM gives the calls in flight unless http.shutdown_grace says

--- The workspace options of each tenant, from the setup the main state
-- made: tenant 1 is the command line's (its config and flags), the others
-- the config files http.tenants names.
local function tenant_options(setup, i)
  local options = require "burrow.transport.options"
  if i == 1 then return options(setup.cli) end
  local t = setup.tenants[i]
  return options { config = t.config, caps = {}, roots = nil }
end

-- A session's Server: mcp/init.lua's, with the transport's out, and a stdio
-- stand-in (begin/finish/cancelled of this worker; next() for a
-- server-to-client request waiting for the client's answer).
-- The principal a request was admitted as (its tenant, its token's id:
-- the first 16 hex digits of the token's sha256, or of an OAuth
-- principal's sha256 of iss and sub, nil without tokens; read_only for an
-- OAuth token of the read-only scope, state.read_only of this item) and
-- its tenant's budgets: what a session's record takes from the listener,
-- never from the record's own text.
local function admitted(state, tenant, token)
  return { tenant = state.setup.tenants[tenant].name, token = token and token:sub(1, 16) or nil,
    read_only = state.read_only or nil,
    undo_budget = state.setup.budgets[tenant], watch_budget = state.setup.watch_budgets[tenant] }
end

-- A session's Channel (mcp.channel's interface) on worker W: a response
-- (or a batch of them) is the POST's answer, which ends its call; the rest
-- goes to the POST's stream, or the session's GET stream (stream 0).
local function http_channel(W, state, sid)
  -- ch.sid, not an upvalue: a stateless principal's Server is kept and
  -- serves each of its requests under the request's own session id; it
  -- and every field a request sets (stream, param_headers, can_listen,
  -- persist, shared; awaiting, listening, detached by the Server) are the
  -- request's: mcp.renew_channel drops them all before the next
  local ch = {}
  ch.send = function(_, msg)
    if ch.detached then return 0 end -- a task's call, its request answered: no one to tell
    local final = getmetatable(msg) == json.array_mt or (msg.id ~= nil and msg.method == nil)
    -- a shared session's record is in the store before its answer is out:
    -- the client's next request may reach another instance
    if final and ch.persist then ch.persist() end
    return W:send(ch.sid, ch.stream or 0, msg, final)
  end
  -- MCP tasks (burrow.mcp.tasks): a stateless request answered now while its
  -- call goes on here as task task_id, unless every other worker runs a
  -- task already (one stays free for requests); a tasks/cancel through
  -- any worker stops it (W:cancel_task raises this worker's flag)
  ch.detach = function(_, task_id, msg)
    if not ch.stream or not W:task(task_id) then return false end
    W:send(ch.sid, ch.stream, msg, true)
    W:done(ch.sid, ch.stream)
    ch.detached = true
    return true
  end
  ch.cancel_task = function(_, task_id) return W:cancel_task(task_id) end
  ch.begin = function(_, id) return W:begin(ch.sid, json.encode(id)) end
  ch.finish = function() W:finish() end
  ch.cancelled = function() return W:cancelled() end
  -- the listener polls the watch fd a snapshot names (W:release)
  ch.watch = function() end
  ch.watch_done = function() end
  -- Server:await (a request of ours waiting for the client's answer):
  -- the next body of this session that answers nothing itself (the
  -- client's answer comes as a POST of a response); requests, and other
  -- sessions' items, stay queued in C (W:next_of), in order and counted
  -- against http.max_queued, until the call is over
  ch.next = function(_, timeout)
    local deadline = core.now() + (timeout or 300)
    local inbox = {}
    local sid = ch.sid
    while true do
      local left = deadline - core.now()
      if left <= 0 then return nil, "timeout" end
      -- a shared session's answers may reach another instance, which puts
      -- them in the store (burrow.mcp.sessionstore): looked for as often
      local kind, s, _, stream, body = W:next_of(sid, math.min(left, ch.shared and 0.05 or POLL))
      if kind == nil and ch.shared and #inbox == 0 and ch.awaiting ~= nil then
        inbox = sessionstore.take_answers(ch.shared.st, ch.shared.tenant, sid, ch.awaiting)
      end
      if kind == nil and #inbox > 0 then return table.remove(inbox, 1) end
      if kind == false then return nil, "the server is stopping" end
      if kind == "message" and s == sid and stream < 0 then return body end
      if kind == "close" and s == sid then
        -- its close: handled once the call is over
        state.closing = true
        return nil, "the session ended"
      end
    end
  end
  return require("burrow.mcp").renew_channel(require("burrow.mcp").renewable(ch), { sid = sid })
end

local function new_session(W, state, sid, ws, tenant, token)
  -- the session's record (burrow.mcp.session: undo store, client scope, packs'
  -- state, ...): every call of the session carries it (hooks.session); the
  -- tenant's workspace, which the worker's sessions share, holds none of
  -- it. Its undo store's bytes count against the tenant's budget.
  local fields = admitted(state, tenant, token)
  fields.id = "http:" .. sid:sub(1, 8)
  if state.setup.state_config then -- the undo store in the deployment's store: every instance names it so
    fields.undo_named = core.sha256("session\0" .. sid):sub(1, 32)
    fields.undo_ttl = state.setup.session_ttl or 1800
  end
  return require("burrow.mcp").new(ws, { channel = http_channel(W, state, sid), session = session.new(fields),
    approval_key = state.setup.approval_key, approval_shared = state.setup.approval_shared,
    approval_ttl = state.setup.approval_ttl,
    approval_store = state.setup.approval_store })
end

-- What travels with a session to the worker that serves it next: its
-- record (burrow.mcp.session) with its file watches beside it, as one JSON
-- text; or nil and true when it holds state that cannot travel (a reply
-- handler that is a function, a pack's state that is not plain data, over
-- SNAPSHOT_MAX): then it stays on this worker (its home). Its file watches
-- travel by the id of their published watcher; the fd the listener polls
-- for them and the seconds until a held change is due come third and
-- fourth.
local function snapshot(server)
  local wid, watch_fd, watch_in
  if server.watches then
    if next(server.subs) == nil and not listen.watching(server) then -- no subscription left: the watcher goes
      server.watches:drop()
      server.watches:close()
      server.watches = nil
    else
      wid, watch_fd = server.watches:id(), server.watches:fd()
      watch_in = server.due_at and math.max(0, server.due_at - core.now()) or -1
    end
  end
  local text = session.encode(server.session,
    { watcher = wid, subs = wid and server.subs or nil, listens = listen.snapshot(server) })
  if not text or #text > SNAPSHOT_MAX then return nil, true end
  return text, false, watch_fd, watch_in
end

-- A Server from a snapshot (snapshot's inverse): the principal as the
-- listener admitted this request.
local function restore(server, text)
  local fixed = { tenant = server.session.tenant, token = server.session.token, read_only = server.session.read_only or false,
    undo_budget = server.session.undo_budget, watch_budget = server.session.watch_budget }
  local s, extra = session.decode(text, fixed)
  if not s then return end
  server.session = s
  extra = type(extra) == "table" and extra or {}
  if type(extra.watcher) == "string" then
    require("burrow.mcp.resources").adopt(server, extra.watcher, extra.subs)
  end
  listen.adopt(server, extra.listens)
end

-- The Server of session sid as its state version says: the one this
-- worker kept when no other worker has served the session since, else one
-- built from the session's snapshot.
-- The tenant's workspace on this worker (opened at its first call here).
local function workspace(state, tenant)
  local ws = state.ws[tenant]
  if not ws then
    local opts = tenant_options(state.setup, tenant)
    -- the deployment's state store: the main file's (state:), shared by
    -- every instance; else the process's, every worker's policies count in one
    opts.state_config = state.setup.state_config
    if not opts.state_config then opts.state = core.state() end
    local err
    ws, err = require("burrow").open(opts)
    if not ws then error("tenant " .. tenant .. ": " .. tostring(err), 0) end
    -- http.metrics: the tenant's sink in C (httpmetrics.c), which its
    -- calls report to beside their audit line (init.lua); nil without
    ws.metrics = state.W:metrics(tenant)
    state.ws[tenant] = ws
  end
  return ws
end

local function server_for(W, state, sid, tenant, version, token)
  local c = state.cache[sid]
  state.tick = state.tick + 1
  if c and c.version == version then
    c.used = state.tick
    return c.server
  end
  local server = new_session(W, state, sid, workspace(state, tenant), tenant, token)
  local rec = W:record()
  if rec then restore(server, rec) end
  state.cache[sid] = { server = server, version = version, used = state.tick }
  -- bounded: the least recently served go first (never one homed here)
  local n, oldest, oldest_sid = 0, nil, nil
  for k, e in pairs(state.cache) do
    n = n + 1
    if not e.home and k ~= sid and (not oldest or e.used < oldest) then oldest, oldest_sid = e.used, k end
  end
  if n > CACHE and oldest_sid then
    -- its watcher is published (its snapshot names it): this state's hold
    -- on it goes now, not at a collection that may never come, so the fds
    -- of a listen closed meanwhile are not kept
    local old = state.cache[oldest_sid].server
    if old.watches then old.watches:close() end
    state.cache[oldest_sid] = nil
  end
  return server
end

-- The session ended: its watches and undo store go with it.
local function dispose(state, sid, server)
  state.cache[sid] = nil
  if server and server.watches then
    server.watches:drop()
    server.watches:close()
  end
  local undo = server and server.session.undo
  -- a stateless client's store outlives its requests (undo_named)
  if type(undo) == "userdata" and not server.session.undo_named then undo:drop() end
end

-- The same from a snapshot (the session's Server is another worker's).
local function dispose_snapshot(rec)
  if not rec then return end
  local id, r = session.undo_id(rec)
  local st = id and require("burrow.toolkit.undo").find(id)
  if st then st:drop() end
  r = type(r) == "table" and r or {}
  local w = type(r.watcher) == "string" and core.watcher_find(r.watcher)
  if w then
    for _, wid in pairs(type(r.subs) == "table" and r.subs or {}) do w:remove(wid) end
    for _, wid in ipairs(listen.watch_ids(r.listens)) do w:remove(wid) end
    w:drop()
    w:close()
  end
end

-- A shared session (the deployment's store holds its record:
-- burrow.mcp.sessionstore, httpshare.c): this call starts from the record as
-- the store has it (another instance may have changed it), and writes it
-- back before its answer goes out when it changed it. False when the call
-- does not go on (answered here); and true with it when the session ended
-- elsewhere (deleted on another instance, or expired): it ends here too.
local function share_in(W, state, sid, server, msg, stream, admitted_version)
  local c, st, tenant = state.cache[sid], server.ws.state, server.session.tenant
  local f, ver, text, at
  if c.share and admitted_version > 0 and c.share.version == admitted_version then
    f, ver = true, admitted_version -- the listener read the record as it came: the one held here
  else
    f, ver, text, at = sessionstore.fetch(st, tenant, sid)
  end
  local function answer(code, message)
    if type(msg) == "table" and msg.method ~= nil and msg.id ~= nil and stream >= 0 then
      W:send(sid, stream, { jsonrpc = "2.0", id = msg.id, error = { code = code, message = message } }, true)
    end
    if stream >= 0 then W:done(sid, stream) end
  end
  if ver == nil then
    answer(-32603, "STORE_UNAVAILABLE: the shared state store (Redis/Valkey), which holds this session, "
      .. "does not answer (" .. tostring(text) .. "); retry")
    return false
  end
  if not f then
    if ver == 0 and not c.share and type(msg) == "table" and msg.method == "initialize" then
      c.share = { version = 0 } -- a new session: its record is made with its answer
    else
      answer(-32001, "Session not found: it ended on another instance (deleted, or expired)")
      W:gone()
      dispose(state, sid, server)
      return false, true
    end
  elseif f ~= true and (not c.share or c.share.version ~= ver) then
    sessionstore.overlay(server.session, f)
    c.share = { version = ver, text = text, at = at }
  end
  local ttl = state.setup.session_ttl or 1800
  server.channel.shared = { st = st, tenant = tenant }
  server.channel.persist = function()
    local ok, why = sessionstore.persist(st, server.session, sid, server.session.token, c.share, ttl)
    if not ok and why ~= state.said then -- once a cause: a store that is down says so on every call
      state.said = why
      io.stderr:write(("burrow: http session %s: its record is not in the store: %s\n"):format(sid:sub(1, 8), tostring(why)))
    end
  end
  -- an answer to a request of ours that no call here asked: the asking
  -- call runs on another instance and finds it in the store
  if sessionstore.is_answer(msg) and getmetatable(msg) ~= json.array_mt and server.session.waiting[msg.id] == nil then
    local ok, why = sessionstore.post_answer(st, tenant, sid, msg)
    if not ok then io.stderr:write(("burrow: http session %s: an answer is lost: %s\n"):format(sid:sub(1, 8), tostring(why))) end
    return false
  end
  return true
end

-- One request of MCP 2026-07-28: what it needs is in its _meta, and
-- nothing of it outlives it but its undo store: the one of its tenant and
-- token (the token's sha256 as configured; none without authentication),
-- which every stateless request of that client finds by name, so
-- undo_edit takes back what an earlier request changed (docs/protocol.md).
-- The Server that answers it is the worker's for its principal (tenant,
-- token, read-only scope), built at the principal's first request here
-- and kept, as a session's is: a request builds no Server, channel and
-- closures again. Each request starts it as new_session left it
-- (Server:renew: a fresh record, every field a request set dropped) and
-- takes nothing from the one before; a request that failed midway leaves
-- it to be built again.
local STATELESS_KEPT = 64 -- principals whose Server a worker keeps; past it, the table starts over

local function stateless_server(W, state, sid, tenant, token)
  local key = ("%d\0%s\0%s"):format(tenant, token or "", state.read_only and "r" or "")
  local kept = state.stateless[key]
  if not kept or kept.busy then
    if not kept and state.nstateless >= STATELESS_KEPT then state.stateless, state.nstateless = {}, 0 end
    if not kept then state.nstateless = state.nstateless + 1 end
    local fields = admitted(state, tenant, token)
    fields.undo_named = core.sha256(("stateless\0%s\0%s"):format(tostring(fields.tenant), token or "")):sub(1, 32)
    kept = { fields = fields, server = new_session(W, state, sid, workspace(state, tenant), tenant, token) }
    state.stateless[key] = kept
  end
  local server = kept.server
  kept.fields.id = "http:" .. sid:sub(1, 8)
  server:renew(session.new(kept.fields)) -- undo_ttl unset: a shared history, a day (burrow.toolkit.undo)
  return kept
end

local function handle_stateless(W, state, sid, tenant, stream, body, params, token)
  local kept = stateless_server(W, state, sid, tenant, token)
  local server = kept.server
  kept.busy = true
  -- the request's channel: nothing of the one before (mcp.renew_channel); the
  -- Mcp-Param-* headers (mcp/call.lua checks them against the arguments)
  require("burrow.mcp").renew_channel(server.channel,
    { sid = sid, stream = stream, param_headers = params and json.decode(params) or {} })
  local msg, err = json.decode(body)
  if msg == nil then server:error(nil, -32700, "parse error: " .. tostring(err))
  else server:handle(msg) end
  server.channel.stream = nil
  W:finish() -- nothing of its call stays on this worker (a task it ran as, its cancel flag)
  W:done(sid, stream)
  dispose(state, sid, server)
  server.watches, server.session = nil, nil -- dispose's: its undo store stays named, not dropped
  kept.busy = false
end

local function handle(W, state, kind, sid, tenant, stream, body, version, stateless, params, token, shared_version)
  if stateless == true then return handle_stateless(W, state, sid, tenant, stream, body, params, token) end
  if kind == "close" then
    local c = state.cache[sid]
    if c and c.version == version then return dispose(state, sid, c.server) end
    state.cache[sid] = nil -- served elsewhere since: what to end is in the snapshot
    dispose_snapshot(W:record())
    return
  end
  local server = server_for(W, state, sid, tenant, version, token)
  if kind == "watch" then -- changes to send, on the session's GET stream
    server:pump_watch()
    return server
  end
  -- the request's channel: nothing of the one before (mcp.renew_channel). A
  -- subscriptions/listen: a session of its own (http.c), whose stream 0
  -- is the listen's; acknowledged, it stays open for what its watches send
  require("burrow.mcp").renew_channel(server.channel,
    { sid = sid, stream = stream >= 0 and stream or nil, can_listen = stateless == "listen" })
  local msg, err = json.decode(body)
  if state.setup.state_config and stateless == false then
    local go, ended = share_in(W, state, sid, server, msg, stream, shared_version or 0)
    if not go then
      server.channel.stream = nil
      if ended then return end
      return server
    end
  end
  if msg == nil then
    server:error(nil, -32700, "parse error: " .. tostring(err))
  else
    server:handle(msg)
  end
  server.channel.stream = nil
  if stream >= 0 and not server.channel.listening then W:done(sid, stream) end
  -- notifications that came while it awaited an answer (Server:await
  -- keeps them): they need no stream
  while #server.pending > 0 do
    local line = table.remove(server.pending, 1)
    local m = type(line) == "string" and json.decode(line)
    if m then server:handle(m) end
  end
  if server.channel.persist then server.channel.persist() end -- what notifications changed
  if server.big_garbage then
    server.big_garbage = false
    collectgarbage()
  end
  if state.closing then -- a waiting call took the session's close
    dispose(state, sid, server)
    return
  end
  return server
end

--- The loop of worker W (a thread of its own; lhttp.c starts it).
function http.worker(W, setup)
  collectgarbage("generational") -- as Server:run (mcp/init.lua): a call's garbage dies young
  -- cache: sid -> {server, version, used}: the Servers of sessions served here
  -- stateless: principal -> {server, fields}, the Servers of stateless requests (handle_stateless)
  local state = { setup = json.decode(setup), cache = {}, ws = {}, tick = 0, W = W, stateless = {}, nstateless = 0 }
  while true do
    local kind, sid, tenant, stream, body, version, stateless, params, token, shared_version, read_only = W:next(POLL)
    if kind == false then break end
    if kind then
      state.closing = false
      state.read_only = read_only -- this item's principal: an OAuth token of the read-only scope (admitted)
      local ok, server = pcall(handle, W, state, kind, sid, tenant, stream, body, version, stateless, params, token, shared_version)
      if not ok then
        io.stderr:write("burrow: http worker ", W:index(), ": ", tostring(server), "\n")
        W:finish()
        if stream and stream >= 0 then W:done(sid, stream) end
        server = nil
      end
      -- the session goes back to the scheduler with its state
      if server then
        local text, home, watch_fd, watch_in = snapshot(server)
        W:release(text, home, watch_fd, watch_in)
        state.cache[sid].version = version + 1
        state.cache[sid].home = home
      elseif not ok then
        W:release(nil, true) -- what it left is here, whatever it is
        if state.cache[sid] then
          state.cache[sid].version = version + 1
          state.cache[sid].home = true
        end
      else
        W:release(nil, false) -- closed
      end
    end
    -- a session homed here (its state cannot travel) has its watches'
    -- changes pumped from here, outside any request, on its GET stream (at
    -- most POLL late); the others' the listener's poller hands any worker
    for _, c in pairs(state.cache) do
      if c.home and c.server.watches then c.server:pump_watch() end
    end
  end
  for _, ws in pairs(state.ws) do ws:close() end
end

--- Parse "HOST:PORT" ("[::1]:8080", ":8080" for 127.0.0.1).
function http.parse_listen(s)
  local host, port = s:match("^%[(.-)%]:(%d+)$")
  if not host then host, port = s:match("^(.-):(%d+)$") end
  if not host then return nil, ("%q: give HOST:PORT"):format(s) end
  if host == "" then host = "127.0.0.1" end
  port = tonumber(port)
  if port > 65535 then return nil, ("%q: port over 65535"):format(s) end
  return host, port
end

--- Serve until SIGINT or SIGTERM. o: the command line (cli.lua's parse),
-- hc: the config's http section (config.lua), listen: "HOST:PORT".
function http.serve(o, hc, listen)
  hc = hc or {}
  local host, port = http.parse_listen(listen or hc.listen or "127.0.0.1:8080")
  if not host then return nil, port end
  -- tenant 1: the command line's workspace; then one per http.tenants
  local names, tenants = { default = 1 }, { { name = "default" } }
  for _, t in ipairs(hc.tenants or {}) do
    tenants[#tenants + 1] = t
    names[t.name] = #tenants
  end
  local limits = {} -- each tenant's own max_calls, max_sessions, max_running (none: 0)
  local budgets = {} -- each tenant's undo budget, which all its sessions share
  local watch_budgets = {} -- and its file watches (resources/subscribe)
  for i, t in ipairs(tenants) do
    limits[i] = { max_calls = t.max_calls or 0, max_sessions = t.max_sessions or 0, max_running = t.max_running or 0,
      max_kept_bytes = t.max_kept_bytes or 0, max_queued = t.max_queued or 0,
      max_streams = t.max_streams or 0, max_listens = t.max_listens or 0 }
    budgets[i] = { name = "http-tenant:" .. t.name, cap = t.max_undo_bytes or hc.max_undo_bytes or http.MAX_UNDO_BYTES }
    watch_budgets[i] = { name = "http-tenant:" .. t.name, cap = t.max_watches or hc.max_watches or http.MAX_WATCHES }
  end
  local tokens = {}
  for i, t in ipairs(hc.tokens or {}) do
    local idx = names[t.tenant or "default"]
    if not idx then return nil, ("http.tokens[%d]: no tenant %q"):format(i, t.tenant) end
    tokens[i] = { sha256 = t.sha256, tenant = idx, max_calls = t.max_calls,
      max_body = t.max_body, max_sessions = t.max_sessions }
  end
  -- every tenant's workspace opens here once, so a bad config fails now,
  -- not at a client's first call; the main file's state store is every
  -- tenant's
  local main_state
  local store_down -- why the deployment's store did not answer at the start
  -- http.metrics: the label values a tool or a policy may have, every
  -- tenant's (the configuration's names, never a client's)
  local tool_names, policy_names, seen = {}, {}, {}
  local function label(list, name)
    local key = (list == tool_names and "t:" or "p:") .. tostring(name)
    if type(name) == "string" and not seen[key] then
      seen[key] = true
      list[#list + 1] = name
    end
  end
  local tool_lists = {} -- each tenant's tools: a read-only OAuth scope's (burrow.transport.oauth)
  for i = 1, #tenants do
    -- a tenant's file holds its workspace only: the listener is this file's
    local t = tenants[i]
    if t.config then
      local topts = require("burrow.config").load(t.config)
      if topts and topts.state_config then
        return nil, ("http.tenants.%s.config: %s has a state: section; the deployment's state store is the main file's")
          :format(t.name, t.config)
      end
      if topts and topts.http then
        return nil, ("http.tenants.%s.config: %s has an http: section of its own; a tenant's file holds its workspace only (roots, tools, policies, caps)")
          :format(t.name, t.config)
      end
    end
    local ok, opts = pcall(tenant_options, { cli = o, tenants = tenants }, i)
    if not ok then return nil, type(opts) == "table" and (opts.fail or opts.usage) or tostring(opts) end
    if i == 1 then main_state = opts.state_config end
    opts.state_config = main_state
    local ws, err = require("burrow").open(opts)
    if not ws then return nil, ("tenant %s: %s"):format(tenants[i].name, err) end
    store_down = store_down or ws.state_down
    if hc.metrics then
      for _, t in ipairs(ws:tools()) do label(tool_names, t.name) end
      for _, p in ipairs(ws.policies.list or {}) do label(policy_names, p.label) end
    end
    tool_lists[i] = hc.oauth and ws:tools() or nil
    ws:close()
  end
  -- the used approval states: the operator's file, which every instance
  -- shares, or the process's state store (core.state(): its workers, each
  -- a Lua state of its own, refuse a replay to any of them); the file is
  -- opened now, so a bad path fails the start, not an approval
  local approval_store = hc.approval_store
  if approval_store then
    local ok, serr = core.store_open(approval_store)
    if not ok then return nil, "http.approval_store: " .. tostring(serr) end
  end
  -- the listener's own handle on the deployment's store (http.c): /readyz
  -- asks it once a second, and every request of a session looks its
  -- record up through it (httpshare.c), on the listener's threads; short
  -- timeouts, so a store that does not answer turns the instance not
  -- ready within about a second
  local store
  if main_state then
    local spec = { kind = "redis" }
    for k, v in pairs(main_state) do spec[k] = v end
    spec.pool = math.max(2, main_state.pool or 4)
    spec.timeout = math.min(main_state.timeout or 2, 1)
    spec.connect_timeout = math.min(main_state.connect_timeout or spec.timeout, 1)
    spec.outage_ok = true -- down now: an outage the instance outlives (below)
    local ok, st, serr = pcall(core.state_open, spec)
    if not (ok and st) then return nil, ("state (%s): %s"):format(main_state.url, tostring(ok and serr or st)) end
    store = st
    if serr then store_down = store_down or ("state (%s): %s"):format(main_state.url, tostring(serr)) end
  end
  -- the key approval states (MCP 2026-07-28) are signed with: the
  -- operator's file, which every instance behind one proxy shares; else,
  -- with a deployment's store, the one the first instance drew and put
  -- there (every instance of the store takes it), which each worker gets
  -- from the store when it first signs or checks a state
  -- (approvals.shared_key: a store down then is that call's
  -- STORE_UNAVAILABLE, not the start's); else one drawn now (a state then
  -- works on this instance only)
  local approval_key, approval_shared = nil, store ~= nil and not hc.approval_key_file
  if not (store or hc.approval_key_file) then approval_key = core.random_hex(32) end
  if hc.approval_key_file then
    local f, ferr = io.open(hc.approval_key_file, "rb")
    local key = f and f:read("a")
    if f then f:close() end
    if not key then return nil, ("http.approval_key_file: %s"):format(ferr or "cannot be read") end
    key = key:gsub("%s+$", "")
    if #key < 32 then
      return nil, ("http.approval_key_file: %s holds %d bytes; give at least 32 (e.g. head -c 32 /dev/urandom | base64 > FILE)")
        :format(hc.approval_key_file, #key)
    end
    approval_key = key
  end
  local metrics
  if hc.metrics then
    local mhost, mport = http.parse_listen(hc.metrics.listen)
    if not mhost then return nil, "http.metrics.listen: " .. mport end
    metrics = { host = mhost, port = mport, allow_remote = hc.metrics.allow_remote,
      tools = tool_names, policies = policy_names }
  end
  local oauth_setup, metadata_url
  local nstatic = #tokens -- the config's own, before the OAuth slots
  if hc.oauth then
    oauth_setup, metadata_url = require("burrow.transport.oauth").setup(hc.oauth, names, tokens, tool_lists, hc)
  end
  local server, err = require("burrow.server").http_start {
    oauth = oauth_setup,
    host = host, port = port, workers = hc.workers or 2, max_running = hc.max_running,
    shutdown_grace = hc.shutdown_grace or http.SHUTDOWN_GRACE, store = store,
    session_ttl = hc.session_ttl, max_body = hc.max_body, max_calls = hc.max_calls,
    max_sessions = hc.max_sessions, replay = hc.replay, retry_ms = hc.retry_ms, max_kept_bytes = hc.max_kept_bytes,
    -- the streams' event logs in the store (httpevlog.c): a quarter of the
    -- tenant's share, so one token's streams never fill what the tenant's
    -- sessions, quotas and approvals need (undo takes at most a half)
    events_budget = store and (main_state.max_bytes_per_tenant or 8 * 1024 * 1024) // 4 or nil,
    max_queued = hc.max_queued, max_session_queued = hc.max_session_queued,
    -- one tenant may fill half the shared queue when there are several
    max_tenant_queued = hc.max_tenant_queued
      or (#tenants > 1 and (hc.max_queued or http.MAX_QUEUED) // 2 or nil),
    max_connections = hc.max_connections, max_connections_per_address = hc.max_connections_per_address,
    max_streams = hc.max_streams, max_listens = hc.max_listens,
    max_unauthenticated = hc.max_unauthenticated, auth_timeout = hc.auth_timeout,
    max_sessions_per_address = hc.max_sessions_per_address,
    allowed_hosts = hc.allowed_hosts, allowed_origins = hc.allowed_origins,
    tokens = tokens,
    tenant_limits = limits,
    tenant_names = (function()
      local n = {}
      for i, t in ipairs(tenants) do n[i] = t.name end
      return n
    end)(),
    access_log = hc.access_log,
    metrics = metrics,
    setup = json.encode { cli = o, tenants = tenants, budgets = budgets, watch_budgets = watch_budgets,
      state_config = main_state, session_ttl = hc.session_ttl,
      approval_key = approval_key, approval_shared = approval_shared, approval_ttl = hc.approval_ttl,
      approval_store = approval_store },
  }
  if not server then return nil, err end
  -- every tenant's workspace opened above (roots, policies, the store):
  -- /readyz is 200 once the workers are up too
  server:ready()
  local function shown(h) return h:find(":", 1, true) and "[" .. h .. "]" or h end
  local scrape = metrics and ("; Prometheus metrics at http://%s:%d/metrics"):format(shown(metrics.host), server:metrics_port()) or ""
  io.stderr:write(("burrow %s: MCP over HTTP at http://%s:%d/mcp (%d tenant%s, %s); /healthz, /readyz%s; SIGINT or SIGTERM to stop\n")
    :format(core.version, shown(host), server:port(), #tenants, #tenants == 1 and "" or "s",
      nstatic > 0 and (nstatic .. " token" .. (nstatic == 1 and "" or "s")) or hc.oauth and "OAuth"
        or "no tokens: loopback only", scrape))
  if store_down then
    io.stderr:write("burrow: warning: ", store_down, "; serving all the same: calls that need the store ",
      "(shared sessions, quotas, approvals, undo) fail with STORE_UNAVAILABLE until it answers, the others ",
      "are served; /readyz says 503 until then\n")
  end
  if metadata_url then
    io.stderr:write(("burrow: OAuth resource server for %s (issuer %s); metadata at %s\n")
      :format(hc.oauth.audience, hc.oauth.issuer, metadata_url))
  end
  local why = server:wait()
  if why == "failed" then return nil, "an HTTP worker failed (see above)" end
  return true
end

return http
