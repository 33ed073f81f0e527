-- remove: files, links (never their targets), empty directories, trees
-- with recursive; never the root; expected_hash as compare-and-set.

local H = require "helpers"

describe(H.tag("remove"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  local function remove(args)
    return ws:call("remove", args)
  end

  it("removes a file", function()
    H.write(dir, "a.txt", "x")
    local r = assert(remove { path = "a.txt" })
    assert.equal(1, r.files)
    assert.is_false(H.exists(dir, "a.txt"))
  end)

  it("removes a symlink, not its target", function()
    H.write(dir, "t.txt", "target")
    H.symlink("t.txt", dir, "l")
    H.mkdir(dir, "d")
    H.write(dir, "d/keep", "k")
    H.symlink("d", dir, "ld")
    assert(remove { path = "l" })
    assert(remove { path = "ld", recursive = true })
    assert.is_false(H.exists(dir, "l"))
    assert.is_false(H.exists(dir, "ld"))
    assert.equal("target", H.read(dir, "t.txt"))
    assert.equal("k", H.read(dir, "d/keep"))
  end)

  it("removes an empty directory; a full one needs recursive", function()
    H.mkdir(dir, "empty")
    assert(remove { path = "empty" })
    H.write(dir, "full/a", "x")
    local _, msg, code = remove { path = "full" }
    assert.equal("EEXIST", code)
    assert.matches("recursive", msg, 1, true)
    local r = assert(remove { path = "full", recursive = true })
    assert.equal(1, r.files)
    assert.equal(1, r.dirs)
    assert.is_false(H.exists(dir, "full"))
  end)

  it("removes a deep tree with links, FIFOs and hidden files", function()
    H.write(dir, "t/a/b/c/d/e/f.txt", "x")
    H.write(dir, "t/.hidden", "h")
    H.mkfifo(dir, "t/a/fifo")
    H.symlink("../..", dir, "t/a/up")
    local r = assert(remove { path = "t", recursive = true })
    assert.equal(6, r.dirs)
    assert.equal(4, r.files)
    assert.is_false(H.exists(dir, "t"))
  end)

  it("refuses the root, \".\", \"..\" names and the mount path", function()
    for _, p in ipairs { ".", "./", "sub/..", dir } do
      local _, _, code = remove { path = p, recursive = true }
      assert.equal("INVALID_ARGUMENT", code, p)
    end
    local _, _, code = remove { path = "" }
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("ENOENT for a missing path, ENOTDIR for file/", function()
    local _, _, code = remove { path = "nope" }
    assert.equal("ENOENT", code)
    H.write(dir, "f", "x")
    _, _, code = remove { path = "f/" }
    assert.equal("ENOTDIR", code)
    assert.equal("x", H.read(dir, "f"))
  end)

  it("with expected_hash removes only an unchanged file", function()
    H.write(dir, "a.txt", "v1")
    local _, _, code = remove { path = "a.txt", expected_hash = H.sha256_of("v0") }
    assert.equal("HASH_MISMATCH", code)
    assert.is_true(H.exists(dir, "a.txt"))
    assert(remove { path = "a.txt", expected_hash = H.sha256sum(dir, "a.txt") })
    assert.is_false(H.exists(dir, "a.txt"))
  end)

  it("a read-only root is READ_ONLY_ROOT", function()
    H.write(dir, "a.txt", "x")
    ws:close()
    ws = H.open { path = dir, mode = "ro" }
    local _, _, code = remove { path = "a.txt" }
    assert.equal("READ_ONLY_ROOT", code)
    assert.is_true(H.exists(dir, "a.txt"))
  end)
end)
