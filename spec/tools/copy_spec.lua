-- copy: files through the atomic write, trees with links copied as links,
-- special files skipped, overwrite and the copy-into-itself case.

local H = require "helpers"

describe(H.tag("copy"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  local function copy(args)
    return ws:call("copy", args)
  end

  it("copies a file and returns its hash", function()
    H.write(dir, "a.txt", "content\n")
    local r = assert(copy { source = "a.txt", destination = "b.txt" })
    assert.equal("content\n", H.read(dir, "b.txt"))
    assert.equal(H.sha256sum(dir, "b.txt"), r.content_hash)
    assert.equal(8, r.bytes)
  end)

  it("keeps executable bits", function()
    H.write(dir, "run.sh", "#!/bin/sh\n")
    H.chmod(dir, "run.sh", "0755")
    assert(copy { source = "run.sh", destination = "run2.sh" })
    assert.equal("755", H.mode(dir, "run2.sh"))
  end)

  it("refuses an existing destination without overwrite, replaces it with", function()
    H.write(dir, "a", "A")
    H.write(dir, "b", "B")
    local _, _, code = copy { source = "a", destination = "b" }
    assert.equal("EEXIST", code)
    assert.equal("B", H.read(dir, "b"))
    assert(copy { source = "a", destination = "b", overwrite = true })
    assert.equal("A", H.read(dir, "b"))
  end)

  it("a directory needs recursive", function()
    H.write(dir, "d/f", "x")
    local _, msg, code = copy { source = "d", destination = "e" }
    assert.equal("EISDIR", code)
    assert.matches("recursive", msg, 1, true)
    assert.matches("^EISDIR: d is", msg)
  end)

  it("a file onto an existing folder: EISDIR names the destination, the folder untouched", function()
    H.write(dir, "a.txt", "A")
    H.write(dir, "folder/keep", "K")
    for _, overwrite in ipairs { false, true } do
      local res, msg, code = copy { source = "a.txt", destination = "folder", overwrite = overwrite }
      assert.is_nil(res)
      assert.equal("EISDIR", code)
      assert.matches("^EISDIR: folder is a directory", msg)
      assert.equal("K", H.read(dir, "folder/keep"))
    end
  end)

  it("copies a tree: files, empty dirs, links as links; FIFOs skipped", function()
    H.write(dir, "t/a/b.txt", "b")
    H.mkdir(dir, "t/empty")
    H.symlink("a/b.txt", dir, "t/link")
    H.symlink("../../outside", dir, "t/out")
    H.mkfifo(dir, "t/fifo")
    local r = assert(copy { source = "t", destination = "t2", recursive = true })
    assert.equal(1, r.files)
    assert.equal(2, r.links)
    assert.equal(1, r.skipped)
    assert.equal(3, r.dirs)
    assert.equal("b", H.read(dir, "t2/a/b.txt"))
    assert.equal("directory", H.file_type(dir, "t2/empty"))
    assert.equal("symbolic link", H.file_type(dir, "t2/link"))
    assert.equal("../../outside", H.sh("readlink " .. H.q(dir .. "/t2/out")):gsub("%s+$", ""))
    assert.is_false(H.exists(dir, "t2/fifo"))
  end)

  it("copies a tree into itself without recursing into the copy", function()
    H.write(dir, "t/a.txt", "a")
    assert(copy { source = "t", destination = "t/copy", recursive = true })
    assert.equal("a", H.read(dir, "t/copy/a.txt"))
    assert.is_false(H.exists(dir, "t/copy/copy"))
  end)

  it("merges into an existing tree with overwrite", function()
    H.write(dir, "s/a", "new")
    H.write(dir, "d/a", "old")
    H.write(dir, "d/keep", "k")
    local _, _, code = copy { source = "s", destination = "d", recursive = true }
    assert.equal("EEXIST", code)
    assert(copy { source = "s", destination = "d", recursive = true, overwrite = true })
    assert.equal("new", H.read(dir, "d/a"))
    assert.equal("k", H.read(dir, "d/keep"))
  end)

  it("follows an in-root link given as the source, refuses a FIFO", function()
    H.write(dir, "t.txt", "t")
    H.symlink("t.txt", dir, "l")
    assert(copy { source = "l", destination = "c.txt" })
    assert.equal("t", H.read(dir, "c.txt"))
    H.mkfifo(dir, "fifo")
    local _, _, code = copy { source = "fifo", destination = "f2" }
    assert.equal("NOT_REGULAR", code)
  end)

  it("copies out of a read-only root into a read-write one, never into the read-only one", function()
    local ro = H.tmpdir()
    H.write(ro, "r.txt", "R")
    ws:close()
    ws = H.open { roots = { { path = dir }, { path = ro, mode = "ro" } } }
    assert(copy { source = ro .. "/r.txt", destination = "r.txt" })
    assert.equal("R", H.read(dir, "r.txt"))
    local _, _, code = copy { source = "r.txt", destination = ro .. "/x.txt" }
    assert.equal("READ_ONLY_ROOT", code)
    assert.is_false(H.exists(ro, "x.txt"))
  end)

  it("refuses a file over max_file_size", function()
    ws:close()
    ws = H.open(dir, { max_file_size = 4 })
    H.write(dir, "big", "12345")
    local _, _, code = copy { source = "big", destination = "big2" }
    assert.equal("TOO_LARGE", code)
    assert.is_false(H.exists(dir, "big2"))
  end)
end)
