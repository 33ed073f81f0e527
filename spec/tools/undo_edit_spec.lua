-- undo_edit: per session, the content before the last write or edit of a
-- path; a stack per path; refuses (with the current hash) when the file
-- changed since; bounded by max_undo_bytes, oldest dropped first.

local H = require "helpers"

describe(H.tag("undo_edit"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  local function undo(path)
    return ws:call("undo_edit", { path = path })
  end

  it("undoes an edit_file, then the write_file before it", function()
    assert(ws:call("write_file", { path = "a.txt", content = "v1\n" }))
    assert(ws:call("write_file", { path = "a.txt", content = "v2\n" }))
    assert(ws:call("edit_file", { path = "a.txt", old_text = "v2", new_text = "v3" }))
    local r = assert(undo "a.txt")
    assert.equal("v2\n", H.read(dir, "a.txt"))
    assert.equal("content", r.restored)
    assert.equal(H.sha256sum(dir, "a.txt"), r.content_hash)
    assert(undo "a.txt")
    assert.equal("v1\n", H.read(dir, "a.txt"))
    r = assert(undo "a.txt")
    assert.equal("removed", r.restored)
    assert.is_false(H.exists(dir, "a.txt"))
    local _, msg, code = undo "a.txt"
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("nothing", msg:gsub("no write or edit", "nothing"), 1, true)
  end)

  it("undoes insert_lines and append_file", function()
    H.write(dir, "a.txt", "a\nb\n")
    assert(ws:call("insert_lines", { path = "a.txt", line = 2, content = "x" }))
    assert(ws:call("append_file", { path = "a.txt", content = "tail\n" }))
    local r = assert(undo "a.txt")
    assert.equal("truncated", r.restored)
    assert.equal("a\nx\nb\n", H.read(dir, "a.txt"))
    assert(undo "a.txt")
    assert.equal("a\nb\n", H.read(dir, "a.txt"))
  end)

  it("refuses, with the current hash, when the file changed since", function()
    H.write(dir, "a.txt", "one\n")
    assert(ws:call("edit_file", { path = "a.txt", old_text = "one", new_text = "two" }))
    H.write(dir, "a.txt", "changed by someone\n")
    local _, msg, code = undo "a.txt"
    assert.equal("HASH_MISMATCH", code)
    assert.matches(H.sha256sum(dir, "a.txt"), msg, 1, true)
    assert.equal("changed by someone\n", H.read(dir, "a.txt"))
  end)

  it("keeps records per path: undoing one file leaves another alone", function()
    assert(ws:call("write_file", { path = "a", content = "a1" }))
    assert(ws:call("write_file", { path = "b", content = "b1" }))
    assert(ws:call("write_file", { path = "a", content = "a2" }))
    assert(undo "b")
    assert.is_false(H.exists(dir, "b"))
    assert.equal("a2", H.read(dir, "a"))
    assert(undo "./a")
    assert.equal("a1", H.read(dir, "a"))
  end)

  it("does not record dry runs or failed edits", function()
    H.write(dir, "a.txt", "x\n")
    assert(ws:call("edit_file", { path = "a.txt", old_text = "x", new_text = "y", dry_run = true }))
    ws:call("edit_file", { path = "a.txt", old_text = "zzz", new_text = "y" })
    local _, _, code = undo "a.txt"
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("keeps a bounded number of records however small they are (found by the soak)", function()
    ws:close()
    ws = H.open(dir, { max_undo_bytes = 64 * 1024 }) -- 256 records at most
    for i = 1, 3000 do assert(ws:call("append_file", { path = "log", content = i .. "\n" })) end
    collectgarbage()
    local _, count = ws.session.undo:totals()
    assert.is_true(count <= 256 and count > 0, "records kept: " .. count)
    assert(undo "log") -- the newest is still there
  end)

  it("is bounded: the oldest records go first, a file over the bound says so", function()
    ws:close()
    ws = H.open(dir, { max_undo_bytes = 100 })
    assert(ws:call("write_file", { path = "old", content = ("o"):rep(60) }))
    assert(ws:call("write_file", { path = "old", content = "o2" }))        -- keeps 60 bytes
    assert(ws:call("write_file", { path = "new", content = ("n"):rep(60) }))
    assert(ws:call("write_file", { path = "new", content = "n2" }))        -- keeps 60: the old goes
    local _, _, code = undo "old"
    assert.equal("INVALID_ARGUMENT", code)
    assert(undo "new")
    assert.equal(("n"):rep(60), H.read(dir, "new"))
    H.write(dir, "huge", ("h"):rep(500))
    assert(ws:call("edit_file", { path = "huge", old_text = "hhh", new_text = "x", replace_all = true }))
    local _, msg
    _, msg, code = undo "huge"
    assert.equal("TOO_LARGE", code)
    assert.matches("max_undo_bytes", msg, 1, true)
  end)

  it("lives as long as the session: a new workspace has no history", function()
    assert(ws:call("write_file", { path = "a", content = "1" }))
    ws:close()
    ws = H.open(dir)
    local _, _, code = undo "a"
    assert.equal("INVALID_ARGUMENT", code)
  end)
end)
