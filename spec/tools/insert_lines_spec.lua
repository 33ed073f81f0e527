-- insert_lines: whole lines before a line number, in the file's line
-- endings, through the atomic compare-and-set write of the edit engine.

local H = require "helpers"

describe(H.tag("insert_lines"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  local function insert(args)
    return ws:call("insert_lines", args)
  end

  it("inserts before line 1, in the middle, and appends at total + 1", function()
    H.write(dir, "a.txt", "b\nd\n")
    assert(insert { path = "a.txt", line = 1, content = "a" })
    assert(insert { path = "a.txt", line = 3, content = "c\n" })
    local r = assert(insert { path = "a.txt", line = 5, content = "e\nf" })
    assert.equal("a\nb\nc\nd\ne\nf\n", H.read(dir, "a.txt"))
    assert.equal(2, r.lines_inserted)
    assert.equal(6, r.total_lines)
    assert.equal(H.sha256sum(dir, "a.txt"), r.content_hash)
  end)

  it("returns a diff of the inserted lines", function()
    H.write(dir, "a.txt", "1\n2\n3\n")
    local r = assert(insert { path = "a.txt", line = 2, content = "1.5" })
    assert.equal("--- a.txt\n+++ a.txt\n@@ -1,3 +1,4 @@\n 1\n+1.5\n 2\n 3\n", r.diff)
  end)

  it("gives inserted lines the file's CRLF line endings", function()
    H.write(dir, "w.txt", "a\r\nb\r\n")
    assert(insert { path = "w.txt", line = 2, content = "x\ny\n" })
    assert.equal("a\r\nx\r\ny\r\nb\r\n", H.read(dir, "w.txt"))
  end)

  it("inserts after the BOM at line 1", function()
    H.write(dir, "b.txt", "\239\187\191a\n")
    assert(insert { path = "b.txt", line = 1, content = "first" })
    assert.equal("\239\187\191first\na\n", H.read(dir, "b.txt"))
  end)

  it("appends to a file without a final newline and keeps it without one", function()
    H.write(dir, "n.txt", "a\nb")
    assert(insert { path = "n.txt", line = 3, content = "c" })
    assert.equal("a\nb\nc", H.read(dir, "n.txt"))
  end)

  it("inserts into an empty file", function()
    H.write(dir, "e.txt", "")
    assert(insert { path = "e.txt", line = 1, content = "only" })
    assert.equal("only\n", H.read(dir, "e.txt"))
  end)

  it("refuses a line past total + 1, naming the range", function()
    H.write(dir, "a.txt", "a\nb\n")
    local _, msg, code = insert { path = "a.txt", line = 4, content = "x" }
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("the file has 2 lines; use 1 to 3", msg, 1, true)
    assert.equal("a\nb\n", H.read(dir, "a.txt"))
  end)

  it("refuses line 0 and empty content", function()
    H.write(dir, "a.txt", "a\n")
    local _, _, code = insert { path = "a.txt", line = 0, content = "x" }
    assert.equal("INVALID_ARGUMENT", code)
    _, _, code = insert { path = "a.txt", line = 1, content = "" }
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("honours expected_hash and dry_run", function()
    H.write(dir, "a.txt", "a\n")
    local _, msg, code = insert { path = "a.txt", line = 1, content = "x", expected_hash = H.sha256_of("other") }
    assert.equal("HASH_MISMATCH", code)
    assert.matches(H.sha256sum(dir, "a.txt"), msg, 1, true)
    local r = assert(insert { path = "a.txt", line = 1, content = "x", dry_run = true })
    assert.is_true(r.dry_run)
    assert.equal("a\n", H.read(dir, "a.txt"))
    assert(insert { path = "a.txt", line = 2, content = "b", expected_hash = H.sha256sum(dir, "a.txt") })
    assert.equal("a\nb\n", H.read(dir, "a.txt"))
  end)

  it("refuses a missing file, links and hard-linked files", function()
    local _, _, code = insert { path = "nope", line = 1, content = "x" }
    assert.equal("ENOENT", code)
    H.write(dir, "t.txt", "t\n")
    H.symlink("t.txt", dir, "l")
    H.hardlink(dir, "t.txt", "h")
    _, _, code = insert { path = "l", line = 1, content = "x" }
    assert.equal("POLICY_DENIED", code)
    _, _, code = insert { path = "h", line = 1, content = "x" }
    assert.equal("POLICY_DENIED", code)
    assert.equal("t\n", H.read(dir, "t.txt"))
  end)
end)
