-- burrow.undo: the session's undo store. Before write_file, edit_file,
-- insert_lines or append_file change a file, the tool captures what was
-- there (its bytes, "absent", or the size before an append; notebook_edit:
-- the bytes its splice replaced, where); after the change it records that
-- with the hash the file then has. undo_edit restores the newest record
-- of a path only while the file still has that hash. Memory is bounded by the max_undo_bytes cap (and, over HTTP, the
-- tenant's http.tenants.NAME.max_undo_bytes): oldest records go first,
-- and a file larger than the cap leaves a marker that says so.

local core = require "burrow.core"

local undo = {}

undo.DEFAULT_BYTES = 64 * 1024 * 1024

local function limit(ctx)
  return ctx.caps.max_undo_bytes or undo.DEFAULT_BYTES
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

-- The session's store (the call's session record: it lives as long as the
-- MCP connection, or the workspace for the Lua API). It is a C object
-- (host/src/core/undo.c), outside every Lua state: an HTTP session's calls
-- run on any worker and find it by its id (undo.find). Its bytes count
-- against the session record's undo_budget {name =, cap =} (a tenant's,
-- which all its sessions share) when it has one.
local function store(ctx)
  local s = ctx.session
  if not s.undo then
    local cap, b = limit(ctx), s.undo_budget
    local caps = { cap = cap, max_records = max_records(cap), budget = b and b.name, budget_cap = b and b.cap }
    -- undo_named: a store several records share by name (an HTTP stateless
    -- client's, by tenant and token: its requests have no session)
    s.undo = s.undo_named and core.undo_named(s.undo_named, caps) or core.undo_store(caps)
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
function undo.record(ctx, idx, rel, snap, after)
  if not snap then return end
  store(ctx):record(key(idx, rel), snap.kind, snap.before, snap.size, after, snap.cut)
end

--- Record the files of one change of several (edit_files), each as
-- undo.record does, under one group: undo_edit of any of them takes them
-- all back. items: {{idx =, rel =, snap =, after =}...}. The group's id
-- ends in its file count, so a group whose oldest records a trim dropped
-- is known as such.
function undo.record_group(ctx, items)
  local s, group = store(ctx), ("%08x%08x:%d"):format(math.random(0, 0xffffffff),
    math.random(0, 0xffffffff), #items)
  for _, it in ipairs(items) do
    if it.snap then
      s:record(key(it.idx, it.rel), it.snap.kind, it.snap.before, it.snap.size, it.after, nil, group)
    end
  end
  return group
end

--- The files of a group: {{root =, rel =}...}, newest first, and how
-- many the group had.
function undo.members(ctx, group)
  local out = {}
  for _, k in ipairs(store(ctx):members(group)) do
    local root, rel = k:match("^(%d+):(.*)$")
    out[#out + 1] = { root = tonumber(root), rel = rel ~= "" and rel or "." }
  end
  return out, tonumber(group:match(":(%d+)$"))
end

--- The newest record of a path ({kind, before, size, after, cut, group}), or nil.
function undo.peek(ctx, idx, rel)
  return store(ctx):peek(key(idx, rel))
end

--- How many records of a path are left.
function undo.depth(ctx, idx, rel)
  return store(ctx):depth(key(idx, rel))
end

--- Forget the newest record of a path (it was undone).
function undo.pop(ctx, idx, rel)
  store(ctx):pop(key(idx, rel))
end

return undo
