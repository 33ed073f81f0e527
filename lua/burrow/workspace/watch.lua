-- burrow.workspace.watch: file watches on a workspace's objects, for embedders
-- (ws:watch) and MCP's resources/subscribe. A path is resolved once into a
-- handle and judged by the policies as a read (what a read would be
-- denied is not watched); the kernel then watches that very object
-- (host/src/core/watch.c). Events are coalesced per watch: a callback runs at
-- most once per interval whatever the number of changes.
--
--   local set = watch.new{max = 256, interval_ms = 100[, budget = {name =, cap =}]
--                         [, follow = {state =, tenant =}]}
--   local id = set:add(ws, "src/main.c", function(ev) ... end)
--   -- ev = {path =, changed =, list =, gone =}; a folder's entry changes
--   -- (list) only when they show in a listing of it (hidden ones do not)
--   set:fd()          -- readable when events wait: poll it in your loop
--   set:poll()        -- run the callbacks due; seconds until the next one
--   set:remove(id); set:close()

local core = require "burrow.core"
local context = require "burrow.toolkit.context"

local watch = {}
local Set = {}
Set.__index = Set
Set.__name = "burrow.WatchSet"

-- The tool name policies and the audit see for a watch.
local TOOL = { name = "watch", permissions = { "fs.read" } }
-- A folder's view is taken as list_dir lists it.
local LIST = { name = "watch", permissions = { "fs.list" } }

-- A watched folder's entries past this many are not compared: its entry
-- changes are not reported (fail closed, docs/security.md).
watch.VIEW_MAX = 10000

-- A folder's view: which folder its path names (device and inode) and a
-- digest of the entries a listing of it shows (name, type, size and
-- modification time, as list_dir shows them: a visible file replaced by
-- a rename over it is a change, as it was before views), as the
-- policies and the session's scope let it be listed, so an entry created
-- or removed that they hide changes nothing an agent sees: no
-- notification (a directory's inotify events name every entry).
-- "dev:ino:digest", with "?" for a digest past VIEW_MAX entries; "" where
-- nothing is hidden (no rules, no check() of objects, no client scope:
-- every change shows); nil when the path names no folder it may list.
local function view(ws, path, session)
  local policies = ws.policies
  if not (policies.hides or policies:judges_objects() or (session and session.scope)) then return "" end
  local ctx = context.new(ws, LIST, { session = session }, nil, { path = path })
  local idx, rel, info = ctx:resolve(path)
  local out
  if idx and info.type == "dir" then
    local opts = ctx:walk_opts(rel, { max_depth = 0, max_entries = watch.VIEW_MAX, include_hidden = true }, nil, info)
    local raw, omitted, _, nested
    if opts then raw, omitted, _, nested = ctx.roots:list(idx, rel, opts) end
    if raw then
      local digest = "?"
      if omitted == 0 then
        ctx:reveal(raw, function(e) return e.path end, info, nested)
        local names = {}
        for i, e in ipairs(raw) do
          names[i] = ("%s\0%s\0%s\0%s"):format(e.name, e.type, tostring(e.size), tostring(e.mtime))
        end
        table.sort(names)
        digest = core.sha256(table.concat(names, "\n"))
      end
      out = ("%d:%d:%s"):format(info.dev, info.ino, digest)
    end
  end
  ctx:close()
  return out
end

function watch.new(opts)
  opts = opts or {}
  local w = core.watcher(opts.max or 256, opts.interval_ms or 100)
  -- budget {name =, cap =}: a cap this set's watches share with every set
  -- naming it (an HTTP tenant's, http.max_watches)
  if opts.budget then assert(w:budget(opts.budget.name, opts.budget.cap)) end
  -- follow {state =, tenant =}: also hear the changes burrow's writes
  -- publish through that store (every instance sharing it; changes.c);
  -- a store that cannot (the file) leaves inotify alone, and says so
  if opts.follow then
    local ok, msg = w:follow(opts.follow.state, opts.follow.tenant)
    if not ok then io.stderr:write("burrow: watches hear inotify only: ", tostring(msg), "\n") end
  end
  return setmetatable({
    w = w,
    subs = {}, -- id -> {path =, fn =}
  }, Set)
end

--- Watch the object path names in ws (a file: its bytes and its name; a
-- directory: entries created and removed). Returns the watch's id, or
-- nil, "CODE: message", CODE (a path the policies would not let be read,
-- outside every root, a link out, a missing file, past the cap).
-- session: the record of the connection that watches (its id, its client
-- scope: context.lua), ws.session when nil.
function Set:add(ws, path, fn, session)
  if type(path) ~= "string" then error("watch: path must be a string", 2) end
  if type(fn) ~= "function" then error("watch: expected a callback function", 2) end
  local ctx = context.new(ws, TOOL, { session = session }, nil, { path = path })
  local h, rel, info = ctx:open(path, "read", false, "path")
  local folder = h and info.type == "dir"
  local id, msg, code
  if not h then
    msg, code = rel, info
  else
    -- where it is (mount, in-root path), for the changes heard through
    -- the store; a root with inotify off hears only those
    local got, detail, c = self.w:add(ws.roots, h, ws.changes and info.mount or nil,
      not (ws.inotify_off and ws.inotify_off[info.root]))
    if got then id = got
    else _, msg, code = ctx:fail(c, path, detail) end
  end
  ctx:close()
  -- the audit: one record per judged request, as a tool call has
  local outcome = { code = id and "OK" or code, duration_ms = 0 }
  for _, req in ipairs(ctx.reqs) do
    outcome.decision = req.decision or (id and "allow" or "deny")
    outcome.reason = req.reason or (not id and msg or nil)
    for _, rec in ipairs(ws.policies:after(req, outcome)) do ws.audit:write(rec) end
  end
  if not id then return nil, msg, code end
  self.subs[id] = { path = path, fn = fn, ws = ws, session = session }
  if folder then self.w:view(id, view(ws, path, session) or "") end
  return id
end

--- A Set over a watcher another Lua state made and published (w:id(),
-- core.watcher_find): an HTTP session's watches, served by any worker.
-- Its callbacks are this state's: Set:track gives each watch its own.
function watch.adopt(w)
  return setmetatable({ w = w, subs = {} }, Set)
end

--- The callback of watch id (made by another state's Set:add) in this
-- state; ws and session as Set:add had them (a folder's changes are
-- judged against its view as that session sees it).
function Set:track(id, path, fn, ws, session)
  self.subs[id] = { path = path, fn = fn, ws = ws, session = session }
end

-- A folder watch's entries changed: whether the change shows in its view
-- (the view is kept for the next one). Fail closed: nothing is reported
-- when the path no longer names the folder watched (moved away, swapped
-- for a link: the listing there is another object's), when the folder is
-- past VIEW_MAX entries, or when the last view is unknown (the change
-- then sets the view the next one is compared with). A watch tracked
-- without its workspace cannot tell: it reports as the kernel did.
local function object(v) return v and v:match("^(%d+:%d+):") end

function Set:shows(id, sub)
  if not sub.ws then return true end
  local now = view(sub.ws, sub.path, sub.session)
  if now == "" then return true end -- nothing hidden
  local before = self.w:view(id) or ""
  if not now then return false end
  if before == "" then -- none taken when the watch was added: this one is the first
    self.w:view(id, now)
    return false
  end
  if object(now) ~= object(before) then return false end
  if now == before then return false end
  self.w:view(id, now)
  return before:sub(-2) ~= ":?" and now:sub(-2) ~= ":?"
end

--- The watcher's id, which another Lua state adopts it by (publishes it).
function Set:id() return self.w:id() end

--- End every watch and unpublish the watcher (the session ended, or its
-- last subscription): other states' Sets over it hold an empty watcher.
function Set:drop()
  for id in pairs(self.subs) do self.w:remove(id) end
  self.subs = {}
  self.w:drop()
end

function Set:remove(id)
  if not self.subs[id] then return false end
  self.subs[id] = nil
  return self.w:remove(id)
end

--- The fd an event loop polls for readability (never read it yourself).
function Set:fd() return self.w:fd() end

function Set:count() return self.w:count() end

--- Read what the kernel has, run the callbacks of the watches due. Returns
-- how many ran and the seconds until a held (coalesced) event is due, or
-- nil when none waits: call poll again then, even if the fd stays quiet.
function Set:poll()
  self.w:read()
  local events, next_s = self.w:due(core.now())
  local ran = 0
  for _, ev in ipairs(events) do
    local sub = self.subs[ev.id]
    -- a folder's entries changed, nothing else: reported when its view did
    if sub and ev.list and not ev.gone and not ev.changed and not self:shows(ev.id, sub) then sub = nil end
    if sub then
      ev.path = sub.path
      local ok, err = pcall(sub.fn, ev)
      if not ok then io.stderr:write("burrow: watch callback for ", sub.path, " failed: ", tostring(err), "\n") end
      ran = ran + 1
    end
  end
  return ran, next_s
end

function Set:close()
  if self.w then self.w:close() end
  self.subs = {}
end

Set.__close = Set.close

return watch
