-- undo_edit: put back what a path held before the last write_file,
-- edit_file, insert_lines, append_file or notebook_edit of this session,
-- only while the file is as that change left it (compare-and-set on its
-- hash).

local undo = require "burrow.toolkit.undo"
local context = require "burrow.toolkit.context"

local undo_members -- the undo of a group's files, once claimed (below)

-- A shared undo store (the deployment's state store) that does not answer:
-- STORE_UNAVAILABLE, nothing undone (fail closed); its other refusals
-- (a tenant's share of it full: TOO_LARGE) as it words them.
local function unanswered(ctx, path, msg, code)
  if code ~= "STORE_UNAVAILABLE" then return ctx:fail(code, path, ("%s; nothing was undone"):format(msg)) end
  return ctx:fail(code, path, ("the shared undo store (the deployment's state store) does not answer (%s); nothing was undone; retry")
    :format(msg))
end

-- Undo a change of several files (edit_files) in one step: every file of
-- the group back as it was, all or none (roots:commit_files), each only
-- while it is still as the change left it. With a shared store the group
-- is held for this call meanwhile (undo.claim), on every instance.
local function undo_group(ctx, a, idx, rel, group)
  local members, count, code = undo.claim(ctx, group)
  if members == nil and code == "EAGAIN" then
    return ctx:fail("EAGAIN", a.path, "it was changed with other files by one edit_files call, which another call "
      .. "is undoing now; nothing was undone here; retry in a few seconds", { group = true })
  end
  if members == nil then return unanswered(ctx, a.path, count, code) end
  if members == false then
    -- the group's record is gone: another call undid the change (and took
    -- this file's record with it), or the record is gone for good (it
    -- expired, or was never kept: it is put before its files' records)
    local e, emsg, ecode = undo.peek(ctx, idx, rel)
    if not e and ecode then return unanswered(ctx, a.path, emsg, ecode) end
    if e and e.group == group then -- for good: taken off, as a marker is
      local popped, pmsg, pcode = undo.pop(ctx, idx, rel)
      if not popped then return ctx:fail(pcode, a.path, ("%s; nothing was undone; retry"):format(pmsg)) end
      return ctx:fail("TOO_LARGE", a.path, "it was changed with other files by one edit_files call whose undo record "
        .. "is gone (it expired, or the tenant's undo budget could not keep it), so that change cannot be undone as one: "
        .. "it is taken off this file's history; nothing was undone; undo_edit again takes back the change before it",
        { group = true, limit = "max_undo_bytes" })
    end
    return ctx:fail("EAGAIN", a.path, "it was changed with other files by one edit_files call, which another call "
      .. "has undone; nothing was undone here", { group = true })
  end
  -- held by this call now: dropped once undone (or past the undo's commit
  -- point), else let go, so no undo is by halves and none is lost
  local out = table.pack(pcall(undo_members, ctx, a, idx, rel, group, members, count))
  local details = out[5]
  if (out[1] and out[2]) or (type(details) == "table" and details.committed) then
    local done, dmsg = undo.finish(ctx, group)
    if not done then -- undone; the group's record stays until it expires
      io.stderr:write(("burrow: undo_edit: the undone change's group record is still in the shared store: %s\n"):format(tostring(dmsg)))
    end
  else
    undo.release(ctx, group) -- a failure here: the hold lapses by itself
  end
  if not out[1] then error(out[2], 0) end
  return table.unpack(out, 2, out.n)
end

undo_members = function(ctx, a, idx, rel, group, members, count)
  if #members ~= count then -- never by halves: taken off, as a marker is
    local popped, pmsg, pcode = undo.pop(ctx, idx, rel)
    if not popped then return ctx:fail(pcode, a.path, ("%s; nothing was undone; retry"):format(pmsg)) end
    return ctx:fail("TOO_LARGE", a.path, ("it was changed with %d other files by one edit_files call, and the undo records of %d of them were dropped (max_undo_bytes), so that change cannot be undone as one: it is taken off this file's history; nothing was undone; undo_edit again takes back the change before it")
      :format(count - 1, count - #members), { limit = "max_undo_bytes", group = true })
  end
  local items, paths, mine = {}, {}, 1
  local _, own, oinfo = ctx:resolve_write(a.path)
  for i, m in ipairs(members) do
    local is_own = m.rel == own and m.root == oinfo.root
    local info = not is_own and m.root and m.root >= 1 and m.root <= ctx.roots:count() and ctx.roots:info(m.root)
    if not is_own and not info then
      return ctx:fail("INVALID_ARGUMENT", a.path, ("it was changed with other files by one edit_files call, one of them in a root this server does not have (root %s); nothing was undone")
        :format(tostring(m.root)), { group = true })
    end
    local p = is_own and a.path or context.join(info.mount, m.rel)
    if is_own then mine = i end
    local h, rel, code = ctx:resolve_write(p)
    if not h then return nil, rel, code end
    local e, emsg, ecode = undo.peek(ctx, h, rel)
    if not e and ecode then return unanswered(ctx, p, emsg, ecode) end
    if not e or e.group ~= group then
      return ctx:fail("INVALID_ARGUMENT", p, "it was changed again by this session after the edit_files call that changed it with " .. a.path .. "; undo that change of it first",
        { group = true })
    end
    if e.kind ~= "content" and e.kind ~= "absent" then
      return ctx:fail("TOO_LARGE", p, ("its content before the edit_files call (%d bytes) was not kept (max_undo_bytes); nothing was undone")
        :format(e.size or 0), { limit = "max_undo_bytes" })
    end
    if e.before then
      local ok, cmsg, ccode = ctx:commit(nil, #e.before, nil, p)
      if not ok then return nil, cmsg, ccode end
    end
    items[i] = { h, rel, data = e.before, expected = e.after, create_dirs = true }
    paths[i] = { p = p, h = h, rel = rel }
  end
  local res, detail, code, extra = ctx.roots:commit_files(items, { max_compare = ctx.caps.max_file_size })
  if not res then
    local i = type(extra) == "table" and extra.index
    if code == "HASH_MISMATCH" then detail = ("it changed since the edit_files call (now %s)"):format(extra.current) end
    local said = type(extra) == "table" and extra.committed -- past the commit point
    return ctx:fail(code, i and paths[i].p or a.path, (detail or "the undo failed") .. (said and "" or "; nothing was undone"),
      { file = i or nil, current = extra and extra.current, committed = said or nil })
  end
  for _, p in ipairs(paths) do undo.pop(ctx, p.h, p.rel) end
  local me = items[mine]
  return { path = a.path, restored = me.data and "content" or "removed", size = me.data and #me.data or 0,
    content_hash = res[mine].content_hash, remaining = undo.depth(ctx, paths[mine].h, paths[mine].rel),
    files = #items }
end

return {
  name = "undo_edit",
  title = "Undo last edit",
  description = [[Undo the last change this session made to a file with write_file, edit_file, insert_lines, append_file or edit_files: the previous content comes back (a file the change created is removed; an edit_files change comes back whole, every file it changed). Call it again to undo the change before that. It refuses, and gives the current content_hash, if the file was changed since by anything else. History is kept for this session only (over HTTP with a shared state store, on every instance of the deployment), oldest dropped first.
Example: {"path": "src/app.py"}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "File whose last change to undo." },
    },
    required = { "path" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      restored = { type = "string", enum = { "content", "removed", "truncated" } },
      content_hash = { type = "string" },
      size = { type = "integer" },
      remaining = { type = "integer" },
      files = { type = "integer" },
    },
    required = { "path", "restored", "content_hash" },
  },
  kind = "modify", -- annotations, permissions and risk (burrow.toolkit.kinds)
  commit_size = true, -- policies see the size restored (ctx:commit)

  handler = function(ctx, a)
    local idx, rel, code0 = ctx:resolve_write(a.path)
    if not idx then return nil, rel, code0 end
    local e, emsg, ecode = undo.peek(ctx, idx, rel)
    if not e and ecode then return unanswered(ctx, a.path, emsg, ecode) end
    if not e then
      return ctx:fail("INVALID_ARGUMENT", a.path, "no write or edit of this path to undo in this session",
        { nothing_to_undo = true })
    end
    if e.group then return undo_group(ctx, a, idx, rel, e.group) end
    if e.kind == "too_large" then
      undo.pop(ctx, idx, rel)
      if undo.shared(ctx) then -- one file's history is one record of the state store
        return ctx:fail("TOO_LARGE", a.path, ("its previous content (%d bytes) was not kept: the shared undo store keeps at most %d bytes of a file (a record of the deployment's state store is 1 MiB)")
          :format(e.size or 0, undo.limit(ctx)), { limit = "shared_undo_record", max = undo.limit(ctx), size = e.size })
      end
      return ctx:fail("TOO_LARGE", a.path, ("its previous content (%d bytes) was over max_undo_bytes (%d) and was not kept")
        :format(e.size or 0, undo.limit(ctx)), { limit = "max_undo_bytes", max = undo.limit(ctx), size = e.size })
    end
    if e.kind == "no_room" then
      undo.pop(ctx, idx, rel)
      return ctx:fail("TOO_LARGE", a.path, ("its previous content (%d bytes) was not kept: the tenant's undo budget (http.tenants.NAME.max_undo_bytes, shared by all its sessions) was full")
        :format(e.size or 0), { limit = "max_undo_bytes", budget = "tenant", size = e.size })
    end
    local now, hash, ncode = ctx.roots:content(idx, rel, ctx.caps.max_file_size)
    if not now and ncode ~= "ENOENT" then return ctx:fail(ncode, a.path, hash) end
    local current = now and hash or "absent"
    if current ~= e.after then
      return ctx:fail("HASH_MISMATCH", a.path,
        ("it changed since the last change of this session (current %s); nothing was undone"):format(current),
        { expected = e.after, current = current })
    end
    local res, detail, code, restored, size
    if e.kind == "absent" then
      res, detail, code = ctx.roots:remove(idx, rel, { expected_hash = e.after })
      restored, size = "removed", 0
    else
      local data = e.before
      if e.kind == "truncate" then
        data = now:sub(1, e.size)
      elseif e.kind == "splice" then -- the file the change left (its hash), the old bytes back in
        if e.size + e.cut > #now then return ctx:fail("EIO", a.path, "the undo record does not fit the file; nothing was undone") end
        -- its halves cut and the file let go before they are joined, as
        -- notebook_edit does (a full collection: only where it frees megabytes)
        local head, tail = now:sub(1, e.size), now:sub(e.size + e.cut + 1)
        local big = #now > 4 * 1024 * 1024
        now = nil
        if big then collectgarbage() end
        data = head .. e.before .. tail
      end
      local ok, cmsg, ccode = ctx:commit("path", #data)
      if not ok then return nil, cmsg, ccode end
      res, detail, code = ctx.roots:write(idx, rel, data, { expected_hash = e.after, max_compare = ctx.caps.max_file_size })
      restored, size = e.kind == "truncate" and "truncated" or "content", #data
    end
    if not res then
      if code == "HASH_MISMATCH" then detail = "it changed while being restored; nothing was undone" end
      return ctx:fail(code, a.path, detail)
    end
    local popped, pmsg = undo.pop(ctx, idx, rel)
    if not popped then -- restored; its record stays, and names a hash the file no longer has
      io.stderr:write(("burrow: undo_edit: the undone record is still in the shared store: %s\n"):format(tostring(pmsg)))
    end
    return { path = a.path, restored = restored, size = size,
      content_hash = restored == "removed" and "absent" or res.content_hash,
      remaining = undo.depth(ctx, idx, rel) }
  end,

  render = function(r)
    local what = r.restored == "removed" and ("Removed %s, which the undone change had created"):format(r.path)
      or ("Restored %s to its content before the last change (%d bytes, %s)"):format(r.path, r.size, r.content_hash)
    if (r.files or 1) > 1 then what = what .. ("; the %d other files of that edit_files call were restored with it"):format(r.files - 1) end
    return what, r
  end,
}
