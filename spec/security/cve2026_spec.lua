-- The 2026 resolver CVE classes (reference/security-cases.md, "2026
-- additions"), each a named case, tried with every tool that takes a path
-- and each of its path arguments, on the backend under test (the runner
-- sets BURROW_RESOLVER):
--
--   GO-2026-4403    Go os.Root: Root.Open("../") opened the parent: `..`
--                   as the final component was opened from the directory
--                   before it, and that directory was the root.
--   GO-2026-4602    Go os.Root: ReadDir gave the FileInfo of a symlink's
--                   target outside the root: a listing's metadata leaked.
--   CVE-2026-39822  Go os.Root (GO-2026-4970): a final symlink followed by
--                   a trailing slash was followed out of the root.
--   CVE-2026-27967  Zed: the agent's file tools checked the path string
--                   and then followed a symlink in it out of the project.
--   CVE-2026-140247 node-tar: `link/../x` judged lexically (as `x`, inside)
--                   while the kernel resolves the link first, then `..`
--                   from its target: outside.
--
-- Every call is made in a fresh root beside one outside tree; each cell
-- asserts its exact code, or for a call that succeeds where the path stays
-- inside, what it touched in the root. Around each cell: nothing outside
-- the roots changed (F.guarded), a refused call changed nothing in the
-- root either, and no answer carries outside content, names or metadata.

local F = require "security.fixture"
local json = require("burrow.core").json

local OUT, PD = "OUTSIDE_ROOT", "POLICY_DENIED"

-- the outside: content, names and metadata no answer may carry
local MARK = "CVEMARK-7c2e"                     -- the outside files' content
local SECRET_SIZE = 31337 + #MARK                -- outside/secret.txt's size
local MTIME, MTIME_TEXT = 981173106, "2001-02-03" -- every outside object's mtime
local UNLISTED = { "unlisted-x9q", "unlisted-parent-k7w" } -- names only a listing of outside shows

-- A root's links (name => target); $B is the base the outside sits in.
local LINKS = {
  { "up", "../.." },                                -- the base: outside/, beside the roots
  { "out_dir", "../../outside" }, { "out_abs", "$B/outside" },
  { "out_file", "../../outside/secret.txt" }, { "abs_file", "$B/outside/secret.txt" },
  { "dangle", "../../outside/new.txt" }, { "dangle_dir", "../../outside/newdir" },
  { "esc", "../../outside/dir" },                   -- esc/.. is outside, lexically the root
  { "sub/out_link", "../../../outside/secret.txt" }, { "chain", "out_file" },
  { "in_dir", "sub" }, { "in_file", "file.txt" }, { "in_deep", "sub/deeper" },
}

-- Each tool that takes a path, by path argument: the arguments that try it.
local USES = {
  { "read_file", function(p) return { path = p } end },
  { "write_file", function(p) return { path = p, content = "PWNED", create_dirs = true } end },
  { "edit_file", function(p) return { path = p, old_text = MARK, new_text = "PWNED" } end },
  -- a change of several files: the path with an honest file beside it
  { "edit_files", function(p) return { files = { { path = "mine.txt", content = "MINE\n" }, { path = p, content = "PWNED" } } } end },
  { "append_file", function(p) return { path = p, content = "PWNED" } end },
  { "insert_lines", function(p) return { path = p, line = 1, content = "PWNED" } end },
  { "notebook_edit", function(p) return { path = p, index = 0, new_source = "PWNED", edit_mode = "insert", cell_type = "code" } end },
  { "undo_edit", function(p) return { path = p } end },
  { "list_dir", function(p) return { path = p, recursive = true, include_hidden = true } end },
  { "stat", function(p) return { path = p } end },
  { "glob", function(p) return { path = p, pattern = "**", include_hidden = true } end },
  { "grep", function(p) return { path = p, pattern = "CVE[M]ARK|ROOTFILE|SUBFILE|INROOT", include_hidden = true } end },
  { "mkdir", function(p) return { path = p, parents = true } end },
  { "remove", function(p) return { path = p, recursive = true } end },
  { "move.source", function(p) return { source = p, destination = "moved_here" } end },
  { "move.destination", function(p) return { source = "mine.txt", destination = p } end },
  { "copy.source", function(p) return { source = p, destination = "copied_here", recursive = true } end },
  { "copy.destination", function(p) return { source = "mine.txt", destination = p, overwrite = true } end },
}

-- Expectations: every use OUT unless a row says otherwise.
local function all(code) local t = {}; for _, u in ipairs(USES) do t[u[1]] = code end; return t end
local function with(base, over)
  local t = {}
  for k, v in pairs(base) do t[k] = v end
  for k, v in pairs(over) do t[k] = v end
  return t
end
local REFUSED = all(OUT)
-- a path whose final component is a link (not followed): what acts on the
-- name (stat, remove, move) acts on the link itself; a write never replaces it
local LINK = with(REFUSED, { stat = "ok", remove = "ok", ["move.source"] = "ok",
  ["move.destination"] = "EEXIST", ["copy.destination"] = PD })
-- a directory inside the root (the root itself through `..`): listed, never its parent
local READS_EISDIR = { read_file = "EISDIR", write_file = "EISDIR", edit_file = "EISDIR", append_file = "EISDIR",
  insert_lines = "EISDIR", notebook_edit = "EISDIR", undo_edit = "INVALID_ARGUMENT" }
local THE_ROOT = with(READS_EISDIR, { list_dir = "ok", stat = "ok", glob = "ok", grep = "ok", mkdir = "ok",
  remove = "INVALID_ARGUMENT", ["move.source"] = "INVALID_ARGUMENT", ["move.destination"] = "INVALID_ARGUMENT",
  ["copy.source"] = "ok", ["copy.destination"] = "EISDIR" })
local A_DIR = with(THE_ROOT, { remove = "ok", ["move.source"] = "ok" })

-- {path, expect, target = the root's entry the path names (for "ok"
-- cells), link = the target is the link itself}
local CASES = {
  { "GO-2026-4403", "`..` as the final component never opens the root's parent", {
    { "..", REFUSED }, { "../", REFUSED }, { "./..", REFUSED }, { "sub/../..", REFUSED }, { "sub/../../", REFUSED },
    { "in_dir/../..", REFUSED }, { "up/..", REFUSED }, { "out_dir/..", REFUSED }, { "out_dir/../", REFUSED },
    { "esc/..", REFUSED },
    -- `..` that ends in the root names the root, and only the root
    { "sub/..", THE_ROOT, target = "." }, { "in_dir/..", THE_ROOT, target = "." }, { "sub/deeper/../..", THE_ROOT, target = "." },
  } },
  { "GO-2026-4602", "a listing shows a link's own metadata, never its outside target's", {
    { ".", THE_ROOT, target = "." }, { "sub", with(A_DIR, { ["move.destination"] = "EEXIST" }), target = "sub" },
    { "out_file", LINK, target = "out_file", link = true }, { "abs_file", LINK, target = "abs_file", link = true },
    { "out_dir", LINK, target = "out_dir", link = true }, { "out_abs", LINK, target = "out_abs", link = true },
    { "up", LINK, target = "up", link = true }, { "sub/out_link", LINK, target = "sub/out_link", link = true },
  } },
  { "CVE-2026-39822", "a link followed by a trailing slash is resolved beneath the root", {
    { "out_file/", REFUSED }, { "out_dir/", REFUSED }, { "out_abs/", REFUSED }, { "up/", REFUSED },
    { "dangle/", REFUSED }, { "dangle_dir/", REFUSED }, { "chain/", REFUSED }, { "sub/out_link/", REFUSED },
    { "out_dir/.", REFUSED }, { "out_dir/./", REFUSED }, { "abs_file/", REFUSED },
    -- inside: a link to a directory is followed, a link to a file is not a directory
    { "in_dir/", with(A_DIR, { ["move.destination"] = "ENOTDIR", ["copy.destination"] = "ENOTDIR" }), target = "sub" },
    { "in_file/", all("ENOTDIR") },
  } },
  { "CVE-2026-27967", "a link in an agent's path never leads a file tool out of the root", {
    { "out_file", LINK, target = "out_file", link = true }, { "chain", LINK, target = "chain", link = true },
    { "dangle", LINK, target = "dangle", link = true }, { "dangle_dir", LINK, target = "dangle_dir", link = true },
    { "out_dir/secret.txt", REFUSED }, { "out_abs/secret.txt", REFUSED }, { "out_dir/new.txt", REFUSED },
    { "out_dir/newdir/x", REFUSED }, { "up/outside/secret.txt", REFUSED }, { "sub/out_link", LINK, target = "sub/out_link", link = true },
  } },
  { "CVE-2026-140247", "`link/..` is resolved through the link, as the kernel does, never as the lexical path", {
    -- lexically these are secret.txt, newfile, ... in the root; the link makes them outside
    { "esc/../secret.txt", REFUSED }, { "esc/../unlisted-x9q.txt", REFUSED }, { "esc/../newfile", REFUSED },
    { "esc/../newdir/x", REFUSED }, { "esc/../dir/../secret.txt", REFUSED }, { "out_dir/../outside/secret.txt", REFUSED },
    -- inside: in_deep/../file.txt is sub/file.txt (not the root's file.txt)
    { "in_deep/../file.txt", { read_file = "ok", write_file = "ok", edit_file = "NOT_FOUND_TEXT", append_file = "ok",
      insert_lines = "ok", notebook_edit = "INVALID_ARGUMENT", undo_edit = "INVALID_ARGUMENT", list_dir = "ENOTDIR",
      stat = "ok", glob = "ENOTDIR", grep = "ok", mkdir = "EEXIST", remove = "ok", ["move.source"] = "ok",
      ["move.destination"] = "EEXIST", ["copy.source"] = "ok", ["copy.destination"] = "ok" }, target = "sub/file.txt" },
    { "in_deep/../newfile", { read_file = "ENOENT", write_file = "ok", edit_file = "ENOENT", append_file = "ok",
      insert_lines = "ENOENT", notebook_edit = "ENOENT", undo_edit = "INVALID_ARGUMENT", list_dir = "ENOENT",
      stat = "ENOENT", glob = "ENOENT", grep = "ENOENT", mkdir = "ok", remove = "ENOENT", ["move.source"] = "ENOENT",
      ["move.destination"] = "ok", ["copy.source"] = "ENOENT", ["copy.destination"] = "ok" }, target = "sub/newfile" },
  } },
}

-- edit_files writes a whole content as write_file does: the same answer
-- for every path (and nothing at all written when it refuses)
for _, cve in ipairs(CASES) do
  for _, row in ipairs(cve[3]) do
    local e = row[2]
    if e.edit_files == nil and e.write_file ~= nil then
      row[2] = with(e, { edit_files = e.write_file })
    end
  end
end

---------------------------------------------------------------------------

local B, n_roots = nil, 0

-- The outside tree: every object's mtime MTIME, names no root has.
local function build_outside()
  B = F.mktemp()
  F.sh(("mkdir -p %s/outside/dir %s/r"):format(F.q(B), F.q(B)))
  F.write_host(B .. "/outside/secret.txt", string.rep("C", 31337) .. MARK)
  F.write_host(B .. "/outside/unlisted-x9q.txt", MARK)
  F.write_host(B .. "/unlisted-parent-k7w", MARK)
  F.sh(("touch -h -d @%d %s/outside/secret.txt %s/outside/unlisted-x9q.txt %s/outside/dir %s/outside %s/unlisted-parent-k7w")
    :format(MTIME, F.q(B), F.q(B), F.q(B), F.q(B), F.q(B)))
end

-- The template of every root, B/r/tpl: files, directories and LINKS (a
-- relative link's target is the same from B/r/N).
local function build_template()
  local root = B .. "/r/tpl"
  local cmds = { ("mkdir -p %s/sub/deeper && cd %s"):format(F.q(root), F.q(root)) }
  for _, f in ipairs { { "secret.txt", "INROOT\n" }, { "file.txt", "ROOTFILE\n" }, { "sub/file.txt", "SUBFILE\n" },
      { "mine.txt", "MINE\n" } } do
    cmds[#cmds + 1] = ("printf %%s %s > %s"):format(F.q(f[2]), F.q(f[1]))
  end
  for _, l in ipairs(LINKS) do
    cmds[#cmds + 1] = ("ln -s %s %s"):format(F.q((l[2]:gsub("%$B", B))), F.q(l[1]))
  end
  F.sh(table.concat(cmds, " && "))
end

-- A fresh root B/r/N: a copy of the template (one process, not one a link).
local function fresh_root()
  n_roots = n_roots + 1
  local root = ("%s/r/%d"):format(B, n_roots)
  F.sh(("cp -a %s %s"):format(F.q(B .. "/r/tpl"), F.q(root)))
  return root
end

local function readlink(path)
  local out, ok = F.run("readlink " .. F.q(path))
  return ok and (out:gsub("\n$", "")) or nil
end

-- No outside content, name or metadata anywhere in an answer (the path
-- the agent wrote, which may name an outside file, taken out first).
local function no_leak(label, v, path)
  local function walk(x, where)
    if type(x) == "string" then
      local named = false -- only when the agent's path itself names one
      for _, m in ipairs(UNLISTED) do named = named or path:find(m, 1, true) ~= nil end
      local at = named and x:find(path, 1, true)
      while at do
        x = x:sub(1, at - 1) .. x:sub(at + #path)
        at = x:find(path, 1, true)
      end
      assert(not x:find(MARK, 1, true), label .. ": outside content at " .. where)
      assert(not x:find(MTIME_TEXT, 1, true), label .. ": an outside object's mtime at " .. where)
      for _, name in ipairs(UNLISTED) do
        assert(not x:find(name, 1, true), label .. ": an outside name at " .. where .. ": " .. x)
      end
    elseif type(x) == "number" then
      assert(x ~= SECRET_SIZE and x ~= MTIME, label .. ": an outside object's size or mtime at " .. where)
    elseif type(x) == "table" then
      for k, y in pairs(x) do walk(y, where .. "." .. tostring(k)) end
    end
  end
  walk(v, "result")
end

-- The entries of a listing (list_dir, glob, grep's files) name objects of
-- the root, and a link's entry is the link's own: type symlink, its size
-- the length of its text (GO-2026-4602).
local function entries_inside(label, root, list)
  for _, e in ipairs(list or {}) do
    local p = type(e) == "table" and e.path or e
    local st = F.lstat(root .. "/" .. p)
    assert(st, label .. ": a listed entry the root does not hold: " .. tostring(p))
    if type(e) == "table" and st.type == "symbolic link" then
      assert.are.equal("symlink", e.type, label .. ": " .. p .. " is listed as its target")
      if e.size ~= nil then
        assert.are.equal(#readlink(root .. "/" .. p), e.size, label .. ": " .. p .. "'s size is not the link's")
      end
    end
  end
end

-- What a call that succeeded touched, for the "ok" cells.
local function contained(label, use, row, root, res, before)
  local t = root .. "/" .. row.target
  if use == "read_file" then
    assert.is_truthy(res.content:find((F.read_host(t):gsub("\n$", "")), 1, true), label .. ": did not read " .. row.target)
  elseif use == "write_file" or use == "edit_files" then
    assert.are.equal("PWNED", F.read_host(t), label .. ": the write did not land on " .. row.target)
  elseif use == "append_file" or use == "insert_lines" then
    assert.is_truthy((F.read_host(t) or ""):find("PWNED", 1, true), label .. ": did not land on " .. row.target)
  elseif use == "stat" then
    if row.link then
      assert.are.equal("symlink", res.type, label)
      assert.are.equal(#readlink(t), res.size, label .. ": the size is not the link's")
    else
      assert.are.equal(F.lstat(t).type == "directory" and "dir" or "file", res.type, label)
    end
  elseif use == "list_dir" or use == "glob" then
    assert.is_table(res.entries, label)
    entries_inside(label, root, res.entries)
    if use == "list_dir" and row.target == "." then -- the root's own entries: nothing of its parent
      local names = {}
      for _, e in ipairs(res.entries) do names[e.name] = true end
      assert.is_true(names["file.txt"] and names["up"] and not names["outside"], label .. ": not the root's listing")
    end
  elseif use == "grep" then
    local files = {}
    for _, m in ipairs(res.matches or {}) do files[#files + 1] = m.path or m.file end
    for _, f in ipairs(res.files or {}) do files[#files + 1] = type(f) == "table" and f.path or f end
    assert.is_true(#files > 0, label .. ": found nothing in the root")
    entries_inside(label, root, files)
  elseif use == "mkdir" then
    assert.are.equal("directory", F.lstat(t).type, label)
  elseif use == "remove" then
    assert.is_nil(F.lstat(t), label .. ": " .. row.target .. " is still there")
  elseif use == "move.source" then
    assert.is_nil(F.lstat(t), label .. ": " .. row.target .. " did not move")
    assert.are.equal(before.type, F.lstat(root .. "/moved_here").type, label .. ": moved_here is not what moved")
    if row.link then assert.are.equal(before.text, readlink(root .. "/moved_here"), label) end
  elseif use == "copy.source" then
    assert.is_truthy(F.lstat(root .. "/copied_here"), label .. ": nothing copied")
  elseif use == "move.destination" or use == "copy.destination" then
    assert.are.equal("MINE\n", F.read_host(t), label .. ": did not land on " .. row.target)
  else
    error(label .. ": no containment check for " .. use)
  end
  -- whatever it did, no outside bytes came into the root (grep -r follows no link)
  local out = F.run("grep -rl " .. F.q(MARK) .. " " .. F.q(root) .. " 2>/dev/null")
  assert.are.equal("", out, label .. ": outside content copied into the root")
end

describe(F.tag("security: the 2026 resolver CVE classes"), function()
  local fx
  lazy_setup(function()
    build_outside()
    build_template()
    fx = { B = B, extra = {} }
  end)
  lazy_teardown(function() if B then F.rmtree(B) end end)

  for _, cve in ipairs(CASES) do
    local id, what, rows = cve[1], cve[2], cve[3]
    describe(id .. ": " .. what, function()
      for _, row in ipairs(rows) do
        local path, expect = row[1], row[2]
        it(("%s %q, every tool"):format(id, path), function()
          for _, u in ipairs(USES) do
            local use, args = u[1], u[2](path)
            local want = expect[use] or OUT
            local label = ("%s %s %s %q"):format(id, use, json.encode(args), path)
            local root = fresh_root()
            local tool = use:match("^[^.]+")
            local ws = F.open({ { path = root, mode = "rw" } })
            local before = row.target and F.lstat(root .. "/" .. row.target) or nil
            if before and row.link then before.text = readlink(root .. "/" .. row.target) end
            local inside = F.snapshot(root, { exclude = {} })
            F.guarded(fx, label, function()
              local res, msg, code = ws:call(tool, args)
              if want == "ok" then
                F.ok(label, res, msg, code)
                no_leak(label, res, path)
                contained(label, use, row, root, res, before)
              else
                F.refused(label, want, res, msg, code)
                no_leak(label, msg, path)
                local diffs = F.compare(inside, F.snapshot(root, { exclude = {} }))
                assert.are.same({}, diffs, label .. ": a refused call changed the root")
              end
            end, { exclude = { "r" } })
            ws:close()
          end
        end)
      end
    end)
  end
end)
