-- edit_files: a change across files as one. Every file is judged (the
-- policies, its precondition) and every edit matched before anything is
-- written; then all the new contents are staged beside their targets and
-- put in place together under the locks of all their directories, each
-- hash compared again first (roots:commit_files, core/txn.c): all the
-- files change, or none. One undo record for the whole change, one diff.

local core = require "burrow.core"
local E = require "burrow.toolkit.edits"
local undo = require "burrow.toolkit.undo"

local MAX_DIFF = 64 * 1024

local file_schema = {
  type = "object",
  properties = {
    path = { type = "string", description = "File to change: relative to the first root, or an absolute path under a root." },
    edits = { type = "array", items = E.schema, description = "Edits of this file, as edit_file takes them." },
    old_text = { type = "string", description = "Shorthand for one edit: the text to find." },
    new_text = { type = "string", description = "Shorthand for one edit: its replacement." },
    replace_all = { type = "boolean", description = "Shorthand for one edit: replace every match." },
    content = { type = "string", description = "Instead of edits: the file's whole new content (a new file is created)." },
    encoding = { type = "string", enum = { "text", "base64" }, description = "content's encoding (default text)." },
    delete = { type = "boolean", description = "Instead of edits: remove the file." },
    expected_hash = { type = "string", description = "Change it only if its content_hash is still this (\"absent\": it must not exist)." },
    charset = { type = "string", description = "The file's character encoding, over the one detected (edits are made on its UTF-8 text; content is written in it)." },
  },
  required = { "path" },
  additionalProperties = false,
}

-- What the entry asks: "edit", "write" or "delete", or nil, why not.
local function kind_of(f)
  local n = (f.content ~= nil and 1 or 0) + (f.delete and 1 or 0)
    + ((f.edits or f.old_text ~= nil or f.new_text ~= nil) and 1 or 0)
  if n ~= 1 then return nil, "give exactly one of edits (or old_text/new_text), content, delete=true" end
  return f.content ~= nil and "write" or f.delete and "delete" or "edit"
end

-- Resolve and judge one entry, then compute what it becomes: a table
-- {h, rel, data, old, old_hash, ...} or nil, message, code, details.
local function judge(ctx, a, i, f, seen)
  local kind, why = kind_of(f)
  local fail = function(code, detail, d)
    d = d or {}
    d.file = i
    return ctx:fail(code, f.path, detail, d)
  end
  if not kind then return fail("INVALID_ARGUMENT", why, { argument = "files" }) end
  local h, rel, info, why0
  if kind == "delete" then
    h, rel, info, why0 = ctx:open(f.path, "delete", true)
    if h and info.readonly then return fail("READ_ONLY_ROOT") end
    -- the diff shows the lines it removes: judged as a read too
    if h then
      local r
      r, rel, info, why0 = ctx:open(f.path, "read", true)
      if not r then h = nil end
    end
    -- as resolve_write does for the others: a shared undo store must answer first
    if h then
      local ok, umsg, ucode = undo.ready(ctx, h, rel)
      if not ok then
        return fail(ucode, ("the shared undo store (the deployment's state store) does not answer (%s); nothing was changed; retry"):format(umsg))
      end
    end
  else
    h, rel, info, why0 = ctx:resolve_write(f.path)
  end
  if not h then -- the refusal's own details, and which file
    why0 = type(why0) == "table" and why0 or (ctx.failed and ctx.failed.msg == rel and ctx.failed.details) or {}
    why0.file = i
    return nil, rel, info, why0
  end
  -- one file once, however it is spelled or linked
  local at = info.exists and ctx:locate(f.path, false)
  local id = at and at.dev and (at.dev .. ":" .. at.ino) or (info.root .. ":" .. info.rel)
  if seen[id] then
    return fail("INVALID_ARGUMENT", ("it is the same file as files[%d] (%s); name each file once"):format(seen[id], a.files[seen[id]].path))
  end
  seen[id] = i
  if info.type == "dir" then return fail("EISDIR") end
  if info.type == "symlink" then return fail("POLICY_DENIED", "the path is a symlink; name the file it leads to") end
  if info.exists and info.type ~= "file" then return fail("NOT_REGULAR") end
  if info.exists and (info.nlink or 1) > 1 then return fail("POLICY_DENIED", "the file has other hard links; writing is refused") end
  local e = { h = h, rel = rel, path = f.path, kind = kind }
  local want = f.expected_hash and f.expected_hash:lower()
  if want and not (want:match("^sha256:%x+$") or (want == "absent" and kind == "write")) then
    return fail("INVALID_ARGUMENT", ("expected_hash must be \"sha256:<hex>\" from read_file%s")
      :format(kind == "write" and ", or \"absent\" for a file that must not exist" or ""), { argument = "expected_hash" })
  end
  if kind == "edit" then
    local list, eerr, ei = E.collect(f)
    if not list then return fail("INVALID_ARGUMENT", eerr, { argument = "edits", edit = ei }) end
    local res, detail, code, extra = ctx.roots:edit(h, rel, list, {
      dry_run = true, text = true, match = a.match, charset = f.charset, charsets = ctx.ws.charsets,
      expected_hash = want, max_bytes = ctx.caps.max_file_size, max_ms = ctx:ms_left("max_edit_ms"),
      max_diff = math.min(MAX_DIFF, ctx.caps.max_result_bytes // 2), keep_original = undo.limit(ctx),
    })
    if not res then return E.failure(ctx, f.path, code, detail, extra, { expected_hash = want, match = a.match }, #list, { file = i }) end
    e.data, e.old_hash, e.placed, e.res = res.text, res.previous_content_hash, res.placed, res
    e.snap = res.original and { kind = "content", before = res.original } or { kind = "too_large", size = res.old_size }
    return e
  end
  local old, hash, code = ctx.roots:content(h, rel, ctx.caps.max_file_size)
  if not old and code ~= "ENOENT" then return fail(code, hash) end
  e.old, e.old_hash = old, old and hash or "absent"
  if want and want ~= e.old_hash then
    return fail("HASH_MISMATCH", ("expected %s, current %s; read it again before changing it"):format(want, e.old_hash),
      { expected = want, current = e.old_hash })
  end
  if kind == "delete" and not old then return fail("ENOENT") end
  if kind == "write" then
    e.data = f.content
    if f.encoding == "base64" then
      e.data = core.base64_decode(f.content)
      if not e.data then return fail("INVALID_ARGUMENT", "content is not valid base64", { argument = "content" }) end
    else -- text in the file's own encoding, as write_file writes it
      local enc, eerr, ecode = E.encode(ctx, old, f.charset, e.data)
      if not enc then return fail(ecode, eerr) end
      e.data = enc
    end
    if #e.data > ctx.caps.max_file_size then return fail("TOO_LARGE", ("over max_file_size (%d bytes)"):format(ctx.caps.max_file_size)) end
    e.placed = #e.data
  end
  e.snap = not old and { kind = "absent" } or #old <= undo.limit(ctx) and { kind = "content", before = old }
    or { kind = "too_large", size = #old }
  return e
end

-- The result of a judged entry, and its part of the diff (headers, hunks).
local function outcome(e, hash, room)
  local r = { path = e.path, action = e.kind == "edit" and "edited" or e.kind == "delete" and "deleted"
    or e.old and "written" or "created", content_hash = hash, previous_content_hash = e.old_hash }
  local hunks, cut
  if e.res then
    local lv = {}
    for k, x in ipairs(e.res.edits) do lv[k] = { replacements = x.count, level = x.level, line = x.line } end
    r.replacements, r.level, r.edits = 0, E.level(lv), core.json.array(lv)
    for _, x in ipairs(lv) do r.replacements = r.replacements + x.replacements end
    r.first_changed_line, r.added_lines, r.removed_lines = e.res.first_line, e.res.added, e.res.removed
    hunks, cut = e.res.diff, e.res.diff_truncated
    if #hunks > room then hunks, cut = "", true end
  else
    hunks, r.first_changed_line, r.added_lines, r.removed_lines, cut = E.whole_diff(e.old, e.data, room)
  end
  local from = e.old_hash == "absent" and "/dev/null" or e.path
  local to = e.kind == "delete" and "/dev/null" or e.path
  return r, ("--- %s\n+++ %s\n%s"):format(from, to, hunks), cut
end

return {
  name = "edit_files",
  title = "Edit files",
  description = [[Change several files as one: a rename across files, a refactor, a patch. Each file takes edits as edit_file does (old_text must match exactly one place, unless replace_all; match="loose" tries the same ladder and says which level matched), or its whole new content, or delete=true. Every file is checked first (policies, expected_hash, every edit matched); then all the files change together, or, if anything fails (an edit that does not match, a file changed meanwhile, a refusal), none does and the error names the file. One undo_edit of any of the files takes the whole change back. Returns one unified diff for all the files.
Example: {"files": [{"path": "src/a.py", "edits": [{"old_text": "old_name(", "new_text": "new_name(", "replace_all": true}]}, {"path": "src/b.py", "old_text": "import old_name", "new_text": "import new_name"}, {"path": "src/new.py", "content": "x = 1\n"}]}]],
  input_schema = {
    type = "object",
    properties = {
      files = { type = "array", items = file_schema, description = "The files to change, each once." },
      match = { type = "string", enum = { "exact", "loose" }, description = "exact (default) or loose, for every file's edits." },
      dry_run = { type = "boolean", description = "Return the diff without writing (default false)." },
    },
    required = { "files" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      files = { type = "array", items = { type = "object" } },
      replacements = { type = "integer" },
      level = { type = "string", enum = { "exact", "trailing_whitespace", "indentation", "unicode" } },
      diff = { type = "string" },
      diff_truncated = { type = "boolean" },
      dry_run = { type = "boolean" },
    },
    required = { "files", "diff" },
  },
  kind = "modify", -- annotations, permissions and risk (burrow.toolkit.kinds)
  records_undo = true, -- undo_edit takes it back (ctx:resolve_write asks a shared undo store first)
  path_args = {}, -- the paths are files[i].path: each opened and judged by the handler
  reads = true, -- the diff shows parts of each file: judged as a read too
  commit_size = true, -- policies see the bytes placed in each file (ctx:commit)

  handler = function(ctx, a)
    local caps = ctx.caps
    if #a.files == 0 then return ctx:fail("INVALID_ARGUMENT", "files", "it is empty", { argument = "files" }) end
    if #a.files > caps.max_edit_files then
      return ctx:fail("TOO_LARGE", "files", ("%d files, over max_edit_files (%d); split the change")
        :format(#a.files, caps.max_edit_files), { limit = "max_edit_files", max = caps.max_edit_files })
    end
    -- 1. judge every file and compute every new content: nothing written
    local list, seen, total = {}, {}, 0
    for i, f in ipairs(a.files) do
      if ctx:cancelled() then return ctx:fail("EAGAIN", f.path, "the call was cancelled; nothing was changed") end
      local e, msg, code, details = judge(ctx, a, i, f, seen)
      if not e then return nil, msg, code, details end
      total = total + #(e.data or "")
      if total > caps.max_edit_files_bytes then
        return ctx:fail("TOO_LARGE", f.path, ("the new contents pass max_edit_files_bytes (%d) at this file; split the change")
          :format(caps.max_edit_files_bytes), { limit = "max_edit_files_bytes", max = caps.max_edit_files_bytes, file = i })
      end
      list[i] = e
    end
    -- 2. the sizes each write places, told to the policies (quotas)
    for i, e in ipairs(list) do
      if e.data and not a.dry_run then
        local ok, msg, code, details = ctx:commit(nil, e.placed, nil, e.path)
        if not ok then
          if type(details) == "table" then details.file = i end
          return nil, msg, code, details
        end
      end
    end
    -- 3. all or none (core/txn.c: a cancel up to the first rename changes nothing)
    local done = {}
    if not a.dry_run then
      if ctx:cancelled() then return ctx:fail("EAGAIN", "files", "the call was cancelled; nothing was changed") end
      local items = {}
      for i, e in ipairs(list) do
        items[i] = { e.h, e.rel, data = e.data, expected = e.old_hash, create_dirs = true }
      end
      local res, detail, code, extra = ctx.roots:commit_files(items, { max_compare = caps.max_file_size, max_ms = ctx:ms_left("max_edit_ms") })
      if not res then
        local i = type(extra) == "table" and extra.index
        local d = { file = i or nil, current = extra and extra.current }
        if code == "HASH_MISMATCH" then detail = ("it changed since it was read (now %s)"):format(extra.current) end
        -- past the commit point the change is not undone: the core says so
        local said = type(extra) == "table" and extra.committed
        return ctx:fail(code, i and list[i].path or "files", (detail or "the change failed") .. (said and "" or "; nothing was changed"), d)
      end
      done = res
      local rec = {}
      for i, e in ipairs(list) do rec[i] = { idx = e.h, rel = e.rel, snap = e.snap, after = res[i].content_hash } end
      undo.record_group(ctx, rec)
    end
    -- 4. one result, one diff
    local files, diffs, room, cut, replacements, levels = {}, {}, math.min(MAX_DIFF, caps.max_result_bytes // 2), false, 0, {}
    for i, e in ipairs(list) do
      local hash = done[i] and done[i].content_hash or (e.data and core.sha256(e.data)) or "absent"
      local r, d, c = outcome(e, hash, room)
      files[i], cut = r, cut or c
      replacements = replacements + (r.replacements or 0)
      if r.level then levels[#levels + 1] = { level = r.level } end
      if #d <= room then diffs[#diffs + 1], room = d, room - #d else cut = true end
    end
    local diff = table.concat(diffs)
    return {
      files = core.json.array(files),
      replacements = replacements,
      level = E.level(levels),
      diff = caps.untrusted_boundary and ctx:untrusted(diff, a.files[1].path) or diff,
      diff_truncated = cut,
      dry_run = a.dry_run or false,
    }
  end,

  render = function(r)
    local lines = { ("%s %d file%s:"):format(r.dry_run and "Dry run, nothing written:" or "Changed", #r.files, #r.files == 1 and "" or "s") }
    for _, f in ipairs(r.files) do
      local how = f.level and f.level ~= "exact" and (" (matched at level %s)"):format(f.level) or ""
      lines[#lines + 1] = ("  %s %s: +%d -%d lines%s"):format(f.action, f.path, f.added_lines or 0, f.removed_lines or 0, how)
    end
    local text = table.concat(lines, "\n") .. "\n" .. r.diff
    if r.diff_truncated then text = text .. "[diff cut: read_file shows the rest]\n" end
    return text, r
  end,
}
