-- burrow.undo: the session's undo store. Before write_file, edit_file,
-- insert_lines or append_file change a file, the tool captures what was
-- there (its bytes, "absent", or the size before an append); after the
-- change it records that with the hash the file then has. undo_edit
-- restores the newest record of a path only while the file still has that
-- hash. Memory is bounded by the max_undo_bytes cap: oldest records go
-- first, and a file larger than the cap leaves a marker that says so.

local undo = {}

undo.DEFAULT_BYTES = 64 * 1024 * 1024

local function limit(ctx)
  return ctx.caps.max_undo_bytes or undo.DEFAULT_BYTES
end
undo.limit = limit

-- The session's store (the call's session record: it lives as long as the
-- MCP connection, or the workspace for the Lua API).
local function store(ctx)
  local s = ctx.session
  if not s.undo then s.undo = { by_key = {}, queue = {}, head = 1, bytes = 0, count = 0 } end
  return s.undo
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
function undo.capture(ctx, idx, rel)
  local data, _, code = ctx.roots:content(idx, rel, limit(ctx))
  if data then return { kind = "content", before = data } end
  if code == "ENOENT" then return { kind = "absent" } end
  if code == "TOO_LARGE" then
    local st = ctx.roots:stat(idx, rel)
    return { kind = "too_large", size = st and st.size or 0 }
  end
end

-- Records kept at most, whatever their size: a record of an append or of
-- a few bytes costs its table and strings (about 200 bytes), which the
-- byte count does not see (the soak found 100,000 append records holding
-- megabytes under a 256 KiB cap). One record per 256 bytes of the cap,
-- and never fewer than 64.
local function max_records(cap)
  return math.max(64, cap // 256)
end

-- Drop the oldest records until the store fits its limit.
local function trim(st, cap)
  local most = max_records(cap)
  while (st.bytes > cap or st.count > most) and st.head <= #st.queue do
    local e = st.queue[st.head]
    st.queue[st.head] = false
    st.head = st.head + 1
    if e and not e.dead then
      e.dead = true
      st.bytes, st.count = st.bytes - e.cost, st.count - 1
      local stack = st.by_key[e.key]
      for i, x in ipairs(stack or {}) do
        if x == e then table.remove(stack, i) break end
      end
      if stack and #stack == 0 then st.by_key[e.key] = nil end
    end
  end
  if st.head > 256 and st.head > #st.queue // 2 then -- compact the queue
    local q = {}
    for i = st.head, #st.queue do
      if st.queue[i] and not st.queue[i].dead then q[#q + 1] = st.queue[i] end
    end
    st.queue, st.head = q, 1
  end
end

--- Record a change of (idx, rel): snap from undo.capture, after = the
-- content_hash the file has now.
function undo.record(ctx, idx, rel, snap, after)
  if not snap then return end
  local st, cap = store(ctx), limit(ctx)
  local e = { key = key(idx, rel), kind = snap.kind, before = snap.before,
    size = snap.size, after = after, cost = snap.before and #snap.before or 0 }
  if e.cost > cap then e.kind, e.size, e.before, e.cost = "too_large", e.cost, nil, 0 end
  local stack = st.by_key[e.key] or {}
  st.by_key[e.key] = stack
  stack[#stack + 1] = e
  st.queue[#st.queue + 1] = e
  st.bytes, st.count = st.bytes + e.cost, st.count + 1
  trim(st, cap)
end

--- The newest record of a path, or nil.
function undo.peek(ctx, idx, rel)
  local stack = store(ctx).by_key[key(idx, rel)]
  return stack and stack[#stack]
end

--- How many records of a path are left.
function undo.depth(ctx, idx, rel)
  local stack = store(ctx).by_key[key(idx, rel)]
  return stack and #stack or 0
end

--- Forget the newest record of a path (it was undone).
function undo.pop(ctx, idx, rel)
  local st = store(ctx)
  local stack = st.by_key[key(idx, rel)]
  local e = stack and table.remove(stack)
  if e and not e.dead then
    e.dead = true
    st.bytes, st.count = st.bytes - e.cost, st.count - 1
  end
  if stack and #stack == 0 then st.by_key[key(idx, rel)] = nil end
  if e then e.before = nil end -- the queue may still hold the record
  return e
end

return undo
