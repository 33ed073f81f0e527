-- move: rename with RENAME_NOREPLACE unless overwrite; links move as links;
-- trailing slashes name directories; roots and read-only roots.

local H = require "helpers"

describe(H.tag("move"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  local function move(args)
    return ws:call("move", args)
  end

  it("renames a file, keeping its inode", function()
    H.write(dir, "a.txt", "x")
    H.mkdir(dir, "sub")
    local ino = H.sh("stat -c %i " .. H.q(dir .. "/a.txt"))
    assert(move { source = "a.txt", destination = "sub/../b.txt" })
    assert.is_false(H.exists(dir, "a.txt"))
    assert.equal(ino, H.sh("stat -c %i " .. H.q(dir .. "/b.txt")))
  end)

  it("moves a directory into another", function()
    H.write(dir, "d/f", "x")
    H.mkdir(dir, "into")
    assert(move { source = "d", destination = "into/d" })
    assert.equal("x", H.read(dir, "into/d/f"))
  end)

  it("refuses an existing destination without overwrite: EEXIST, both files unchanged", function()
    H.write(dir, "a", "A")
    H.write(dir, "b", "B")
    local _, msg, code = move { source = "a", destination = "b" }
    assert.equal("EEXIST", code)
    assert.matches("overwrite", msg, 1, true)
    assert.equal("A", H.read(dir, "a"))
    assert.equal("B", H.read(dir, "b"))
    assert(move { source = "a", destination = "b", overwrite = true })
    assert.equal("A", H.read(dir, "b"))
    assert.is_false(H.exists(dir, "a"))
  end)

  it("a file onto an existing folder with overwrite: EISDIR names the destination", function()
    H.write(dir, "a.txt", "A")
    H.write(dir, "folder/keep", "K")
    local res, msg, code = move { source = "a.txt", destination = "folder", overwrite = true }
    assert.is_nil(res)
    assert.equal("EISDIR", code)
    assert.matches("^EISDIR: folder is a directory", msg)
    assert.equal("A", H.read(dir, "a.txt"))
  end)

  it("moves a symlink as a link", function()
    H.write(dir, "t.txt", "t")
    H.symlink("t.txt", dir, "l")
    H.mkdir(dir, "sub")
    assert(move { source = "l", destination = "l2" })
    assert.equal("t.txt", H.sh("readlink " .. H.q(dir .. "/l2")):gsub("%s+$", ""))
    assert.equal("t", H.read(dir, "t.txt"))
  end)

  it("refuses to overwrite a symlink, and a dangling link counts as existing", function()
    H.write(dir, "a", "A")
    H.symlink("missing", dir, "dl")
    local _, _, code = move { source = "a", destination = "dl" }
    assert.equal("EEXIST", code)
    _, _, code = move { source = "a", destination = "dl", overwrite = true }
    assert.equal("POLICY_DENIED", code)
    assert.equal("A", H.read(dir, "a"))
  end)

  it("a trailing slash on a file is ENOTDIR", function()
    H.write(dir, "a", "A")
    local _, _, code = move { source = "a", destination = "new/" }
    assert.equal("ENOTDIR", code)
    _, _, code = move { source = "a/", destination = "b" }
    assert.equal("ENOTDIR", code)
  end)

  it("refuses the root and a directory into itself", function()
    H.mkdir(dir, "d")
    local _, _, code = move { source = ".", destination = "x" }
    assert.equal("INVALID_ARGUMENT", code)
    _, _, code = move { source = dir, destination = "x" }
    assert.equal("INVALID_ARGUMENT", code)
    _, _, code = move { source = "d", destination = "d/inner" }
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("ENOENT names the missing side: the source, or the destination's directory", function()
    local _, msg, code = move { source = "nope", destination = "x" }
    assert.equal("ENOENT", code)
    assert.matches("^ENOENT: nope", msg)
    H.write(dir, "a", "A")
    _, msg, code = move { source = "a", destination = "no/such/dir/a" }
    assert.equal("ENOENT", code)
    assert.matches("^ENOENT: no/such/dir/a", msg)
  end)

  it("moves between two roots on one filesystem; a read-only root refuses", function()
    local other = H.tmpdir()
    local ro = H.tmpdir()
    H.write(dir, "a", "A")
    H.write(ro, "r", "R")
    ws:close()
    ws = H.open { roots = { { path = dir }, { path = other }, { path = ro, mode = "ro" } } }
    assert(move { source = "a", destination = other .. "/a" })
    assert.equal("A", H.read(other, "a"))
    local _, _, code = move { source = ro .. "/r", destination = "r" }
    assert.equal("READ_ONLY_ROOT", code)
    _, _, code = move { source = other .. "/a", destination = ro .. "/a" }
    assert.equal("READ_ONLY_ROOT", code)
    assert.equal("R", H.read(ro, "r"))
  end)
end)
