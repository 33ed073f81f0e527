-- edit_files: a change across files as one. Every file judged and every
-- edit matched before anything is written; then all the files change, or
-- none; one undo_edit takes the whole change back; one diff.

local H = require "helpers"

local N = 10

describe(H.tag("edit_files"), function()
  local ws, dir

  -- ten files that each call old_name()
  local function ten()
    for i = 1, N do H.write(dir, ("m%02d.py"):format(i), ("import old_name\n\ndef f%d():\n    return old_name(%d)\n"):format(i, i)) end
  end

  local function snapshot()
    local s = {}
    for _, name in ipairs(H.ls(dir)) do s[name] = H.read(dir, name) end
    return s
  end

  local function rename_all(miss_at)
    local files = {}
    for i = 1, N do
      local old = i == miss_at and "return old_nam(" or "old_name("
      files[i] = { path = ("m%02d.py"):format(i), edits = { { old_text = old, new_text = "new_name(" } },
        old_text = "import old_name", new_text = "import new_name" }
      if i ~= miss_at then files[i].edits[1].old_text = "return old_name(" ; files[i].edits[1].new_text = "return new_name(" end
    end
    return files
  end

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  it("renames across ten files in one call, and one undo_edit takes all ten back", function()
    ten()
    local before = snapshot()
    local r = assert(ws:call("edit_files", { files = rename_all() }))
    assert.equal(N, #r.files)
    assert.equal(2 * N, r.replacements)
    for i = 1, N do
      local name = ("m%02d.py"):format(i)
      assert.equal(("import new_name\n\ndef f%d():\n    return new_name(%d)\n"):format(i, i), H.read(dir, name))
      assert.equal(H.sha256sum(dir, name), r.files[i].content_hash)
      assert.equal("edited", r.files[i].action)
      assert.truthy(r.diff:find("--- " .. name .. "\n+++ " .. name .. "\n", 1, true), "one diff names " .. name)
    end
    local u = assert(ws:call("undo_edit", { path = "m04.py" }))
    assert.equal(N, u.files)
    assert.same(before, snapshot())
    -- nothing left to undo for any of them
    local _, _, code = ws:call("undo_edit", { path = "m09.py" })
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("changes nothing when the seventh file's edit does not match, and names it", function()
    ten()
    local before = snapshot()
    local res, msg, code, details = ws:call("edit_files", { files = rename_all(7) })
    assert.is_nil(res)
    assert.equal("NOT_FOUND_TEXT", code)
    assert.matches("m07.py", msg, 1, true)
    assert.equal(7, details.file)
    assert.same(before, snapshot())
    assert.same({}, (function() local t = {} for _, n in ipairs(H.ls(dir)) do if n:find("burrow") then t[#t + 1] = n end end return t end)())
  end)

  it("changes nothing when one file's expected_hash is stale, and names it", function()
    ten()
    local before = snapshot()
    local files = rename_all()
    for i = 1, N do files[i].expected_hash = H.sha256sum(dir, files[i].path) end
    files[3].expected_hash = H.sha256_of("not what it holds")
    local _, msg, code, details = ws:call("edit_files", { files = files })
    assert.equal("HASH_MISMATCH", code)
    assert.matches("m03.py", msg, 1, true)
    assert.equal(3, details.file)
    assert.same(before, snapshot())
  end)

  it("refuses an expected_hash that is no hash (\"absent\" only for a new content)", function()
    ten()
    for _, f in ipairs { { path = "m01.py", old_text = "old_name", new_text = "x", expected_hash = "absent" },
                         { path = "m01.py", delete = true, expected_hash = "1234" },
                         { path = "m01.py", content = "x", expected_hash = "sha256:xyz" } } do
      local _, _, code, details = ws:call("edit_files", { files = { f } })
      assert.equal("INVALID_ARGUMENT", code)
      assert.equal("expected_hash", details.argument)
    end
    assert.matches("old_name", H.read(dir, "m01.py"), 1, true)
  end)

  it("changes nothing when a file changes between the judgement and the commit", function()
    ten()
    local calls = 0
    -- the hook the call asks just before its commit: another writer lands then
    local hooks = { cancelled = function()
      calls = calls + 1
      if calls == N + 1 then H.write(dir, "m05.py", "someone else's\n") end
      return false
    end }
    local _, msg, code, details = ws:call("edit_files", { files = rename_all() }, hooks)
    assert.equal(N + 1, calls, "asked once per file and once before the commit")
    assert.equal("HASH_MISMATCH", code)
    assert.matches("m05.py", msg, 1, true)
    assert.equal(5, details.file)
    assert.equal("someone else's\n", H.read(dir, "m05.py"))
    for i = 1, N do
      if i ~= 5 then assert.matches("old_name", H.read(dir, ("m%02d.py"):format(i)), 1, true) end
    end
  end)

  it("changes nothing when the call is cancelled before its commit", function()
    ten()
    local before = snapshot()
    local calls = 0
    local hooks = { cancelled = function() calls = calls + 1 return calls > N end }
    local _, _, code = ws:call("edit_files", { files = rename_all() }, hooks)
    assert.equal("EAGAIN", code)
    assert.same(before, snapshot())
  end)

  it("edits, replaces, creates and removes in one change, and undoes it whole", function()
    H.write(dir, "a.txt", "one\ntwo\n")
    H.write(dir, "b.txt", "bee\n")
    H.write(dir, "gone.txt", "bye\n")
    local before = snapshot()
    local r = assert(ws:call("edit_files", { files = {
      { path = "a.txt", old_text = "two", new_text = "2" },
      { path = "b.txt", content = "BEE\n" },
      { path = "sub/dir/new.txt", content = "fresh\n" },
      { path = "gone.txt", delete = true },
    } }))
    assert.same({ "edited", "written", "created", "deleted" },
      { r.files[1].action, r.files[2].action, r.files[3].action, r.files[4].action })
    assert.equal("one\n2\n", H.read(dir, "a.txt"))
    assert.equal("BEE\n", H.read(dir, "b.txt"))
    assert.equal("fresh\n", H.read(dir, "sub/dir/new.txt"))
    assert.is_false(H.exists(dir, "gone.txt"))
    assert.equal("absent", r.files[4].content_hash)
    assert.truthy(r.diff:find("--- gone.txt\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-bye\n", 1, true))
    assert.truthy(r.diff:find("--- /dev/null\n+++ sub/dir/new.txt\n@@ -0,0 +1,1 @@\n+fresh\n", 1, true))
    local u = assert(ws:call("undo_edit", { path = "gone.txt" }))
    assert.equal(4, u.files)
    assert.equal("content", u.restored)
    local now = snapshot()
    now.sub = nil -- the folders made for the new file stay (empty)
    assert.same(before, now)
    assert.is_false(H.exists(dir, "sub/dir/new.txt"))
  end)

  it("takes away the folders it made when the change does not happen at the commit", function()
    H.write(dir, "a.txt", "one\n")
    local calls = 0
    local hooks = { cancelled = function() -- a.txt changes just before the commit
      calls = calls + 1
      if calls == 4 then H.write(dir, "a.txt", "changed\n") end
      return false
    end }
    local _, _, code, details = ws:call("edit_files", { files = {
      { path = "x/y/new.txt", content = "fresh\n" },
      { path = "x/z/w/new.txt", content = "fresh\n" }, -- in a folder the first one made
      { path = "a.txt", content = "two\n" },
    } }, hooks)
    assert.equal(4, calls)
    assert.equal("HASH_MISMATCH", code)
    assert.equal(3, details.file)
    assert.is_false(H.exists(dir, "x"))
    assert.equal("changed\n", H.read(dir, "a.txt"))
  end)

  it("refuses a file named twice, however it is spelled or linked", function()
    H.write(dir, "a.txt", "one\n")
    H.write(dir, "b.txt", "bee\n")
    H.hardlink(dir, "b.txt", "b2.txt")
    H.symlink("a.txt", dir, "la.txt")
    local before = snapshot()
    for _, pair in ipairs { { "a.txt", "a.txt" }, { "a.txt", "./a.txt" }, { "a.txt", "sub/../a.txt" },
                            { "b.txt", "b2.txt" }, { "a.txt", "la.txt" } } do
      local _, msg, code = ws:call("edit_files", { files = {
        { path = pair[1], content = "x\n" }, { path = pair[2], content = "y\n" } } })
      assert.is_not_nil(code, pair[2])
      assert.truthy(code == "INVALID_ARGUMENT" or code == "POLICY_DENIED" or code == "ENOENT", pair[2] .. ": " .. tostring(msg))
      assert.same(before, snapshot())
    end
    local _, msg = ws:call("edit_files", { files = { { path = "a.txt", content = "x\n" }, { path = "./a.txt", content = "y\n" } } })
    assert.matches("same file as files[1]", msg, 1, true)
  end)

  it("refuses a directory, a link, and a new file listed with a missing one; nothing written", function()
    H.write(dir, "a.txt", "one\n")
    H.mkdir(dir, "d")
    H.write(dir, "b.txt", "bee\n")
    H.symlink("b.txt", dir, "l.txt")
    for _, case in ipairs { { "d", "EISDIR" }, { "l.txt", "POLICY_DENIED" }, { "missing.txt", "NOT_FOUND_TEXT" } } do
      local _, _, code = ws:call("edit_files", { files = {
        { path = "a.txt", content = "changed\n" },
        { path = case[1], old_text = "one", new_text = "two" } } })
      if case[1] == "missing.txt" then case[2] = "ENOENT" end
      assert.equal(case[2], code, case[1])
      assert.equal("one\n", H.read(dir, "a.txt"))
    end
  end)

  it("reports the rung of the loose ladder per file and for the call", function()
    H.write(dir, "a.py", "def f():\n    x = 1   \n")
    H.write(dir, "b.py", "y = 2\n")
    local r = assert(ws:call("edit_files", { match = "loose", files = {
      { path = "a.py", old_text = "    x = 1\n", new_text = "    x = 3\n" },
      { path = "b.py", old_text = "y = 2", new_text = "y = 4" } } }))
    assert.equal("trailing_whitespace", r.files[1].level)
    assert.equal("exact", r.files[2].level)
    assert.equal("trailing_whitespace", r.level)
  end)

  it("dry_run shows the diff and writes nothing", function()
    ten()
    local before = snapshot()
    local r = assert(ws:call("edit_files", { files = rename_all(), dry_run = true }))
    assert.is_true(r.dry_run)
    assert.truthy(r.diff:find("+import new_name", 1, true))
    assert.same(before, snapshot())
  end)

  it("caps the number of files and the bytes staged", function()
    local small = H.open(dir, { max_edit_files = 3, max_edit_files_bytes = 10 })
    local files = {}
    for i = 1, 4 do files[i] = { path = i .. ".txt", content = "x" } end
    local _, msg, code, details = small:call("edit_files", { files = files })
    assert.equal("TOO_LARGE", code)
    assert.equal("max_edit_files", details.limit)
    assert.matches("4 files", msg, 1, true)
    _, _, code, details = small:call("edit_files", { files = { { path = "a", content = "123456" }, { path = "b", content = "123456" } } })
    assert.equal("TOO_LARGE", code)
    assert.equal("max_edit_files_bytes", details.limit)
    assert.equal(2, details.file)
    assert.is_false(H.exists(dir, "a"))
  end)

  it("a quota that one file's bytes pass refuses the whole change", function()
    H.write(dir, "a.txt", "one\n")
    local q = H.open { roots = { { path = dir } }, policies = { "default", { name = "quotas", max_bytes_written = 100 } } }
    local _, _, code, details = q:call("edit_files", { files = {
      { path = "a.txt", content = "small\n" }, { path = "big.txt", content = string.rep("x", 200) } } })
    assert.equal("POLICY_DENIED", code)
    assert.equal(2, details.file)
    assert.equal("one\n", H.read(dir, "a.txt"))
    assert.is_false(H.exists(dir, "big.txt"))
  end)

  it("a change some of whose undo records were dropped (max_undo_bytes): refused, never by halves, and taken off each file's history", function()
    local small = H.open(dir, { max_undo_bytes = 64 * 1024 })
    local big = ("y"):rep(30 * 1024)
    H.write(dir, "a.txt", "a " .. big)
    H.write(dir, "b.txt", "b " .. big)
    H.write(dir, "c.txt", "c " .. big)
    assert(small:call("edit_files", { files = { { path = "a.txt", content = "A\n" }, { path = "b.txt", content = "B\n" },
      { path = "c.txt", content = "C\n" } } }))
    local _, msg, code, details = small:call("undo_edit", { path = "c.txt" })
    assert.equal("TOO_LARGE", code, msg)
    assert.equal("max_undo_bytes", details.limit)
    assert.is_true(details.group)
    assert.matches("cannot be undone as one", msg, 1, true)
    for n, v in pairs { ["a.txt"] = "A\n", ["b.txt"] = "B\n", ["c.txt"] = "C\n" } do assert.equal(v, H.read(dir, n)) end
    -- taken off: the next undo of c.txt is not the same refusal again
    local _, msg2, code2, details2 = small:call("undo_edit", { path = "c.txt" })
    assert.equal("INVALID_ARGUMENT", code2, msg2)
    assert.is_true(details2.nothing_to_undo, msg2)
    assert.equal("C\n", H.read(dir, "c.txt"))
  end)

  it("refuses undo of the whole change when one of its files changed since; nothing undone", function()
    H.write(dir, "a.txt", "a\n")
    H.write(dir, "b.txt", "b\n")
    assert(ws:call("edit_files", { files = { { path = "a.txt", content = "A\n" }, { path = "b.txt", content = "B\n" } } }))
    H.write(dir, "b.txt", "someone\n")
    local _, msg, code = ws:call("undo_edit", { path = "a.txt" })
    assert.equal("HASH_MISMATCH", code)
    assert.matches("b.txt", msg, 1, true)
    assert.equal("A\n", H.read(dir, "a.txt"))
    assert.equal("someone\n", H.read(dir, "b.txt"))
  end)

  it("changes files of two roots, one inside the other, as one; the same file by both mounts is named twice", function()
    H.write(dir, "a.txt", "o\n")
    H.write(dir, "inner/sub/b.txt", "i\n")
    local nws = H.open { roots = { { path = dir, mount = "/w" }, { path = dir .. "/inner", mount = "/in" } } }
    assert(nws:call("edit_files", { files = { { path = "/w/a.txt", content = "O\n" },
      { path = "/in/sub/b.txt", content = "I\n" }, { path = "/w/inner/c.txt", content = "C\n" } } }))
    assert.equal("I\n", H.read(dir, "inner/sub/b.txt"))
    local _, msg, code = nws:call("edit_files", { files = { { path = "/w/inner/sub/b.txt", content = "x\n" },
      { path = "/in/sub/b.txt", content = "y\n" } } })
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("same file as files[1]", msg, 1, true)
    assert.equal("I\n", H.read(dir, "inner/sub/b.txt"))
    assert(nws:call("undo_edit", { path = "/in/sub/b.txt" }))
    assert.equal("o\n", H.read(dir, "a.txt"))
    assert.equal("i\n", H.read(dir, "inner/sub/b.txt"))
    assert.is_false(H.exists(dir, "inner/c.txt"))
  end)

  it("keeps the files of different folders and of a folder and its subfolder under one lock set", function()
    H.write(dir, "s/a.txt", "1\n")
    H.write(dir, "s/t/b.txt", "2\n")
    H.write(dir, "s/t/u/c.txt", "3\n")
    H.write(dir, "top.txt", "0\n")
    local r = assert(ws:call("edit_files", { files = {
      { path = "s/t/u/c.txt", content = "C\n" }, { path = "s/a.txt", content = "A\n" },
      { path = "top.txt", content = "T\n" }, { path = "s/t/b.txt", content = "B\n" } } }))
    assert.equal(4, #r.files)
    assert.equal("A\n", H.read(dir, "s/a.txt"))
    assert.equal("B\n", H.read(dir, "s/t/b.txt"))
    assert.equal("C\n", H.read(dir, "s/t/u/c.txt"))
    assert.equal("T\n", H.read(dir, "top.txt"))
  end)
end)
