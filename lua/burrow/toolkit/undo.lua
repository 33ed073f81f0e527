-- burrow.toolkit.undo: the session's undo store. Before write_file, edit_file,
-- insert_lines or append_file change a file, the tool captures what was
-- there (its bytes, "absent", or the size before an append; notebook_edit:
-- the bytes its splice replaced, where); after the change it records that
-- with the hash the file then has. undo_edit restores the newest record
-- of a path only while the file still has that hash. Memory is bounded by the max_undo_bytes cap (and, over HTTP, the
-- tenant's http.tenants.NAME.max_undo_bytes): oldest records go first,
-- and a file larger than the cap leaves a marker that says so. Over HTTP
-- with the deployment's state store (state:), the records live there, so
-- any instance undoes what another recorded (shared_store below).

local core = require "burrow.core"

local undo = {}

undo.DEFAULT_BYTES = 64 * 1024 * 1024
-- A shared store's history of one file is one record of the state store
-- (at most 1 MiB): the bytes of one change it keeps, the path and the
-- hash beside them
undo.SHARED_MAX = 1024 * 1024 - 8192
undo.SHARED_TTL = 86400 -- a stateless principal's history: a day after the file's last change
-- The state store's per-tenant caps unless the config's state: says (state.h)
local STATE_TENANT_BYTES, STATE_TENANT_ENTRIES = 8 * 1024 * 1024, 10000

-- Are the session's records in the deployment's state store (the config's
-- state:, so every instance behind the proxy sees them)? Only for a
-- session that names its store (an HTTP session, a stateless principal:
-- undo_named, the same on every instance).
local function shared(ctx)
  local o = ctx.ws.opts
  return ctx.session.undo_named ~= nil and o ~= nil and o.state_config ~= nil
end
undo.shared = shared

local function limit(ctx)
  local cap = ctx.caps.max_undo_bytes or undo.DEFAULT_BYTES
  if shared(ctx) then return math.min(cap, undo.SHARED_MAX) end
  return cap
end
undo.limit = limit

-- Records kept at most, whatever their size: a record of an append or of
-- a few bytes costs its bookkeeping (about 200 bytes), which the byte
-- count does not see (the soak found 100,000 append records holding
-- megabytes under a 256 KiB cap). One record per 256 bytes of the cap,
-- and never fewer than 64.
local function max_records(cap)
  return math.max(64, cap // 256)
end

-- The shared store of the session (core.undo_shared): its records in the
-- deployment's state store under the principal's tenant, "undo/<id>/...",
-- so an edit made through one instance is undone through any. What the
-- tenant's records hold is charged to its counter up to its undo budget
-- (http.max_undo_bytes), but never more than half the tenant's share of
-- the store (state.max_bytes_per_tenant), whose other half stays for its
-- sessions, quotas and approvals; each record is charged at least a
-- share of the entries cap, so undo takes at most half of those too.
local function shared_store(ctx, caps)
  local s, sc = ctx.session, ctx.ws.opts.state_config
  local bytes = sc.max_bytes_per_tenant or STATE_TENANT_BYTES
  local entries = sc.max_entries_per_tenant or STATE_TENANT_ENTRIES
  local budget = bytes // 2
  if s.undo_budget and s.undo_budget.cap then budget = math.min(budget, s.undo_budget.cap) end
  return core.undo_shared(ctx.ws.state, tostring(s.tenant or ""), s.undo_named, { cap = caps.cap,
    max_records = caps.max_records, budget = budget, entry_cost = bytes // entries,
    ttl = s.undo_ttl or undo.SHARED_TTL })
end

-- The session's store (the call's session record: it lives as long as the
-- MCP connection, or the workspace for the Lua API). It is a C object
-- (host/src/core/undo.c), outside every Lua state: an HTTP session's calls
-- run on any worker and find it by its id (undo.find). Its bytes count
-- against the session record's undo_budget {name =, cap =} (a tenant's,
-- which all its sessions share) when it has one. With the deployment's
-- state store, a named one keeps its records there (shared_store).
local function store(ctx)
  local s = ctx.session
  if not s.undo then
    local cap, b = limit(ctx), s.undo_budget
    local caps = { cap = cap, max_records = max_records(cap), budget = b and b.name, budget_cap = b and b.cap }
    -- undo_named: a store several records share by name (an HTTP stateless
    -- client's, by tenant and token: its requests have no session)
    if shared(ctx) then s.undo = shared_store(ctx, caps)
    else s.undo = s.undo_named and core.undo_named(s.undo_named, caps) or core.undo_store(caps) end
  end
  return s.undo
end

--- The store published as id (an HTTP session's, from another worker),
-- or nil.
function undo.find(id)
  return core.undo_find(id)
end

-- Paths of one file spelled differently ("./a", "a//b") share a key.
-- idx: a root index, or a handle (ctx:resolve) and its in-root path.
local function key(idx, rel)
  if type(idx) ~= "number" then idx = idx:root() end
  local parts = {}
  for c in rel:gmatch("[^/]+") do
    if c ~= "." then parts[#parts + 1] = c end
  end
  return idx .. ":" .. table.concat(parts, "/")
end

--- What the file is before a change: {kind = "content", before = bytes},
-- {kind = "absent"}, or {kind = "too_large", size = n}; nil when it is
-- nothing a write could replace (the write itself will say why).
function undo.capture(ctx, idx, rel, read)
  -- read: the content the caller already holds, which its write replaces
  -- only if it is still what is there (compare-and-set): no second read
  if read and #read <= limit(ctx) then return { kind = "content", before = read } end
  local data, _, code = ctx.roots:content(idx, rel, limit(ctx))
  if data then return { kind = "content", before = data } end
  if code == "ENOENT" then return { kind = "absent" } end
  if code == "TOO_LARGE" then
    local st = ctx.roots:stat(idx, rel)
    return { kind = "too_large", size = st and st.size or 0 }
  end
end

--- Record a change of (idx, rel): snap from undo.capture (or {kind =
-- "truncate", size =} for an append; {kind = "splice", before =, size =,
-- cut =} for a change that wrote cut bytes at offset size in place of
-- before), after = the content_hash the file has now. The oldest records
-- go first when the store or its budget is full; a record that cannot
-- fit is kept as a marker ("too_large" over max_undo_bytes, "no_room"
-- when the tenant's budget is spent).
-- A shared store that failed after the change (undo.ready answered just
-- before): the change stands and is not recorded, which an undo then
-- finds out safely (the record below it names another content hash).
function undo.record(ctx, idx, rel, snap, after)
  if not snap then return end
  local kept, msg, code = store(ctx):record(key(idx, rel), snap.kind, snap.before, snap.size, after, snap.cut)
  if not kept then
    io.stderr:write(("burrow: undo of a change is not kept: %s: %s\n"):format(tostring(code), tostring(msg)))
  end
  return kept, msg, code
end

--- Record the files of one change of several (edit_files), each as
-- undo.record does, under one group: undo_edit of any of them takes them
-- all back. items: {{idx =, rel =, snap =, after =}...}. The group's id
-- ends in its file count, so a group whose oldest records a trim dropped
-- is known as such.
-- With a shared store the group's files are also kept in a record of the
-- group (put_group), which an undo holds while it undoes them (undo.claim).
-- That record is put first: a file's record that names its group comes
-- after it, so an undo that finds the group's record gone knows it is
-- gone for good (undo_edit then takes that file's change off its history).
function undo.record_group(ctx, items)
  local s, group = store(ctx), ("%08x%08x:%d"):format(math.random(0, 0xffffffff),
    math.random(0, 0xffffffff), #items)
  local keys = {}
  for _, it in ipairs(items) do
    if it.snap then keys[#keys + 1] = key(it.idx, it.rel) end
  end
  local put, msg, code = s:put_group(group, keys)
  if not put then -- its files are then undone by none (undo_edit says so): never by halves
    io.stderr:write(("burrow: undo of a change of %d files is not kept: %s: %s\n"):format(#keys, tostring(code), tostring(msg)))
  end
  for _, it in ipairs(items) do
    if it.snap then
      local kept, kmsg, kcode = s:record(key(it.idx, it.rel), it.snap.kind, it.snap.before, it.snap.size, it.after, nil, group)
      if not kept then -- as undo.record: the change stands, an undo finds the gap safely
        io.stderr:write(("burrow: undo of a change is not kept: %s: %s\n"):format(tostring(kcode), tostring(kmsg)))
      end
    end
  end
  return group
end

local function members_of(keys)
  local out = {}
  for _, k in ipairs(keys) do
    local root, rel = k:match("^(%d+):(.*)$")
    out[#out + 1] = { root = tonumber(root), rel = rel ~= "" and rel or "." }
  end
  return out
end

--- The files of a group: {{root =, rel =}...}, newest first, and how
-- many the group had.
function undo.members(ctx, group)
  return members_of(store(ctx):members(group)), tonumber(group:match(":(%d+)$"))
end

--- The files of a group held for one undo of it, as undo.members but in
-- the order of the change (a stale file's index is the same with either
-- store); with a shared store the group's record is held for this call
-- (a mark that lapses by itself: BW_UNDO_GROUP_HOLD, 10 s, in
-- host/src/core/undo.h), so no other call, on
-- any instance, undoes it meanwhile: false when it is not there (undone,
-- or lost); nil, message, code when another call holds it (EAGAIN) or the
-- store does not answer. Then undo.finish (the undo went through) or
-- undo.release (it failed).
function undo.claim(ctx, group)
  local keys, msg, code = store(ctx):take_group(group)
  if not keys then return keys, msg, code end
  return members_of(keys), tonumber(group:match(":(%d+)$"))
end

--- A claimed group's undo failed: let go of it, its record kept for a
-- later undo (true, or nil, message, code: then the hold lapses by itself).
function undo.release(ctx, group)
  return store(ctx):group_release(group)
end

--- A claimed group was undone: its record dropped (true, or nil, message,
-- code: then the record stays, its files' records popped, until it expires).
function undo.finish(ctx, group)
  return store(ctx):group_done(group)
end

--- Before a change that will be recorded (ctx:resolve_write of a tool
-- with records_undo): with a shared store, is it there? true, or nil,
-- message, code: the change is refused (fail closed), since an agent that
-- relies on undo_edit would lose its way back. Its read is the one the
-- record then starts from. Nothing to ask of a store in this process.
function undo.ready(ctx, idx, rel)
  if not shared(ctx) then return true end
  local d, msg, code = store(ctx):depth(key(idx, rel))
  if d then return true end
  return nil, msg, code
end

--- The newest record of a path ({kind, before, size, after, cut, group}),
-- or nil; nil, message, code when a shared store does not answer.
function undo.peek(ctx, idx, rel)
  return store(ctx):peek(key(idx, rel))
end

--- How many records of a path are left (nil when a shared store does not answer).
function undo.depth(ctx, idx, rel)
  return store(ctx):depth(key(idx, rel))
end

--- Forget the newest record of a path (it was undone): true, or nil,
-- message, code.
function undo.pop(ctx, idx, rel)
  return store(ctx):pop(key(idx, rel))
end

return undo
