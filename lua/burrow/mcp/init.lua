-- burrow.mcp: the Model Context Protocol over stdio. One JSON-RPC message
-- per line in, one per line out, nothing else on stdout. Tool failures are
-- results with isError; protocol failures are JSON-RPC errors. Stdin is
-- read by a C thread (burrow.server.stdio) so a cancel notification reaches
-- the call in flight while it runs, and a ping during a tool call is
-- answered by that thread at once; other requests that arrive meanwhile
-- are queued and answered in order after the call.
--
-- This file is the Server's public face (mcp.new, mcp.channel, the stdio
-- loop); its parts: the Server's table and its messages out
-- (burrow.mcp.base), the questions a call asks the client (mcp/ask.lua), the
-- tools/call path (mcp/call.lua), the other requests (mcp/handlers.lua), the
-- methods by era and the JSON-RPC checks (mcp/dispatch.lua), 2026-07-28's
-- requests (mcp/stateless.lua), SIGHUP's reload (mcp/reload.lua).

local core = require "burrow.core"
local json = core.json
-- resources: required with their first use (a start that answers
-- initialize needs none; docs/benchmarks.md, Start-up)
local function resources() return require "burrow.mcp.resources" end
local session = require "burrow.mcp.session"
local base = require "burrow.mcp.base"
require "burrow.mcp.dispatch" -- Server:handle, handle_one, dispatch...

local mcp = {}

-- the session revisions, the stateless ones (2026-07-28) and the names of
-- the handlers of the client's answers: base's own tables
mcp.versions = base.versions
mcp.stateless_versions = base.stateless_versions
mcp.replies = base.replies

local Server = base.Server

-- The Server's methods of the files that add them later, by name: each
-- file is required with the first call of one of its names (a start that
-- answers initialize calls none: docs/benchmarks.md, Start-up): mcp/ask.lua
-- (what the server asks the client), mcp/call.lua (the tools/call path, the
-- requests a read-only call's wait answers meanwhile), mcp/reload.lua
-- (SIGHUP). Until then each name is a stand-in that requires its file,
-- whose definition takes the stand-in's place, and calls that (no
-- metatable: a field of a Server that is nil costs its lookups nothing).
-- A method a program wrapped meanwhile keeps its wrapper, whose inner call
-- (the stand-in) then reaches the definition, as the Workspace's later
-- methods do (burrow/init.lua). spec/mcp_lazy_spec.lua checks that these
-- are the methods the files add.
local function asks() require "burrow.mcp.ask" end
local function calls() require "burrow.mcp.call" end
local function reloads() require "burrow.mcp.reload" end
mcp.LATER = { request = asks, await = asks, approver = asks, ask_client = asks, retry_state = asks, asker = asks,
  with_questions = asks, tool_result = calls, run_tool = calls, resume_task = calls, log_call = calls,
  meanwhile_ok = calls, serve_meanwhile = calls, reload = reloads }
local stand_ins, defined = {}, {}
for name, load in pairs(mcp.LATER) do
  stand_ins[name] = function(...)
    if not defined[name] then
      local held = {} -- the wrappers in place of stand-ins
      for n in pairs(mcp.LATER) do
        local v = rawget(Server, n)
        if v ~= stand_ins[n] then held[n] = v end
      end
      load()
      for n in pairs(mcp.LATER) do
        local v = rawget(Server, n)
        if v ~= stand_ins[n] and v ~= held[n] then -- the file's definition
          defined[n] = v
          if held[n] then Server[n] = held[n] end
        end
      end
    end
    local method = defined[name]
    if not method then error(("burrow.mcp: the file of Server:%s does not define it"):format(name)) end
    return method(...)
  end
  Server[name] = stand_ins[name]
end

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
--   ch:start()       stdio: its reader thread and SIGHUP watcher start
--                    (Server:run's loop reads the next message meanwhile)
--   ch.answered      stdio: mcp.on_stdio answered a message before the loop
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

--- A channel that serves one request after another (an HTTP worker's: a
-- session's, or a stateless principal's kept Server): what it is made of
-- now (its functions, its constants) is what mcp.renew_channel keeps, as
-- it is now; its metatable holds them. Returns ch.
function mcp.renewable(ch)
  local made = {}
  for k, v in pairs(ch) do made[k] = v end
  return setmetatable(ch, { __name = "burrow.mcp.channel", made = made })
end

--- ch as mcp.renewable left it, then fields (the next request's: sid,
-- stream, ...) set on it: every field a request set, the transport's or
-- the Server's during its call (awaiting, listening, ...), is dropped,
-- whatever its name (no list of them to keep up: as Server:renew does for
-- the Server), and what it was made of is as it was made. Returns ch.
function mcp.renew_channel(ch, fields)
  local made = getmetatable(ch).made
  for k in pairs(ch) do
    if made[k] == nil then ch[k] = nil end
  end
  for k, v in pairs(made) do ch[k] = v end
  for k, v in pairs(fields) do ch[k] = v end
  return ch
end

-- The name of a Server's session on ws (nil: a Server mcp.on_stdio made
-- before its workspace opened; Server:attach names it then).
local function session_id(ws) return ws and ws.session and ws.session.id or "mcp" end

--- opts.reopen: function() -> a new workspace | nil, message (SIGHUP);
-- opts.channel (mcp.channel()'s by default); opts.approval_key,
-- approval_ttl, approval_store: how MRTR states are signed and used once
function mcp.new(ws, opts)
  opts = opts or {}
  -- session: this connection's record (burrow.mcp.session), handed to every
  -- call (hooks.session). Its log_level is nil until the client sets one
  -- (logging/setLevel): no notifications/message before it asked for them
  return setmetatable({ ws = ws, reopen = opts.reopen, channel = opts.channel or mcp.channel(),
    approval_key = opts.approval_key, approval_shared = opts.approval_shared,
    approval_ttl = opts.approval_ttl, approval_store = opts.approval_store,
    session = opts.session or session.new { id = session_id(ws) },
    pending = {},
    subs = {},    -- resources/subscribe: uri -> watch id
    listens = {}, -- subscriptions/listen: listen.key(id) -> {id, filter, subs}
  }, Server)
end

-- What mcp.new sets from its arguments: all a Server keeps when it is
-- renewed (Server:renew); approval_key too once drawn (approvals.key)
local KEPT = { ws = true, reopen = true, channel = true, approval_key = true, approval_shared = true,
  approval_ttl = true, approval_store = true }

--- The Server as mcp.new would make it again on the same workspace and
-- channel, for another request of the same principal (an HTTP worker's
-- stateless requests): every other field a request set on it is dropped,
-- whatever its name (no list of them to keep up), and session is its
-- record. Returns the Server.
function Server:renew(session)
  for k in pairs(self) do
    if not KEPT[k] then self[k] = nil end
  end
  self.session, self.pending, self.subs, self.listens = session, {}, {}, {}
  return self
end

-- Send the watch's changes that are due; remember when the held ones are.
function Server:pump_watch()
  local wait = self.watches and resources().pump(self) -- none before the first subscription or listen
  self.due_at = wait and core.now() + wait
end

-- The process's stdin and stdout as a Server's channel (lserver.c's
-- stdio: one a process). A start the system refuses (file descriptors,
-- threads) is the operator's to fix: one line and exit 2 (cli.lua), no
-- traceback. Its reader thread and SIGHUP watcher (io:start) start with
-- the first call, or once the first message is answered (ch:start): a
-- start to the initialize answer makes no thread (docs/benchmarks.md,
-- Start-up).
local function stdio_channel(max_request)
  local made, stdio = pcall(require("burrow.server").stdio, max_request)
  if not made then error({ fail = tostring(stdio) .. " (the process's thread or file limits?)" }, 0) end
  local threads = false
  local function start_threads()
    if threads then return end
    local ok, err = stdio:start()
    if not ok then error({ fail = err .. " (the process's thread limits?)" }, 0) end
    threads = true
  end
  -- the first subscription's watch fd wakes the loop (false, "watch");
  -- another transport watches it itself and calls resources.pump(self)
  -- when the fd is readable and when the time it returns has passed
  return {
    wire = true,       -- stdio encodes; the loop serve_meanwhile reads from
    can_listen = true, -- subscriptions/listen: on this one channel, by id
    send = function(_, msg) return stdio:send(msg) end,
    begin = function(_, id) start_threads(); return stdio:begin(id) end,
    finish = function() return stdio:finish() end,
    cancelled = function() return stdio:cancelled() end,
    next = function(_, timeout) return stdio:next(timeout) end,
    watch = function(_, fd) return stdio:watch(fd) end,
    watch_done = function() return stdio:watch_done() end,
    start = start_threads,
  }
end

--- `burrow mcp` over stdio: a Server on the process's stdin and stdout
-- made before its workspace opens. An initialize request already waiting
-- (a client sends it as it starts the process) is answered at once: its
-- answer needs no workspace (base.initialize), so the handshake does not
-- wait for the roots and policies to open, and no request that needs them
-- is served before Server:attach gives it the workspace. Anything else
-- waiting (another request, a batch, a line that is not JSON, one past
-- max_request bytes) is kept, as it came, for Server:run to serve after
-- the workspace opened; so is nothing (stdin quiet or closed). opts: as
-- mcp.new's.
function mcp.on_stdio(max_request, opts)
  local self = mcp.new(nil, opts)
  self.channel = stdio_channel(max_request)
  local line, event = self.channel:next(0)
  if line == nil then return self end
  local msg = type(line) == "string" and json.decode(line)
  local params = type(msg) == "table" and msg.params
  local meta = type(params) == "table" and params._meta
  -- a session revision's initialize (one with a revision in _meta is
  -- burrow.mcp.stateless's, which may need the workspace)
  if type(msg) == "table" and getmetatable(msg) ~= json.array_mt and msg.method == "initialize"
    and not (type(meta) == "table" and meta[base.META .. "protocolVersion"] ~= nil) then
    self:handle(msg)
    self.channel.answered = true
  else
    self.pending[#self.pending + 1] = line or { event = event }
  end
  return self
end

--- The workspace of a Server mcp.on_stdio made before it opened; returns
-- the Server.
function Server:attach(ws)
  self.ws = ws
  self.session.id = session_id(ws)
  return self
end

-- Seconds without a message after which the loop collects its garbage
-- and returns the freed memory (once per quiet spell).
local IDLE_TIDY_S = 0.5

-- Serve until stdin closes. restart_gc: the caller stopped the collector
-- for its start (cli.lua); it runs again once the first message (or event)
-- is handled, or at once when mcp.on_stdio answered one: restarted before
-- it, its first steps were ~5% of the instructions before the initialize
-- answer (a first call's garbage waits for its end, where a big reply's is
-- collected anyway).
function Server:run(max_request, restart_gc)
  -- stdio made here, unless mcp.on_stdio made it (and its channel, which
  -- alone has start) before the workspace opened
  if not self.channel.start then self.channel = stdio_channel(max_request) end
  local ch = self.channel
  -- once the first message is answered: the threads start, and the
  -- collector turns generational. A call's garbage (arguments, a result's
  -- tables) dies young: the generational collector takes it in small
  -- steps, not in the long incremental sweeps that land in some calls'
  -- latency. Switched to after the first message: the switch is a full
  -- collection (4% of a start-up's instructions), and the first message
  -- (initialize) waited for it.
  local generational = false
  local function answered()
    if generational then return end
    ch:start()
    collectgarbage("generational")
    if restart_gc then collectgarbage("restart") end
    generational = true
  end
  -- mcp.on_stdio's answer was the first: as soon as the workspace is in
  -- (a switch after the next message would mark what that loaded too)
  if ch.answered then answered() end
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
        line, event = ch:next(wait) -- nil: until a message comes
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
      if event == "watch" then ch:watch_done() end
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
    answered()
    if self.big_garbage then -- free a big reply's strings now, before the heap doubles
      self.big_garbage = false
      collectgarbage()
    end
  end
end

return mcp
