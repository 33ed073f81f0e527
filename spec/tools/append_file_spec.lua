-- append_file: O_APPEND on the resolved file, created when absent; links,
-- hard links and non-regular files refused; the size cap.

local H = require "helpers"

describe(H.tag("append_file"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  local function append(args)
    return ws:call("append_file", args)
  end

  it("creates an absent file (and its parents), then appends to it", function()
    local r = assert(append { path = "log/a.log", content = "one\n" })
    assert.is_true(r.created)
    assert.equal(4, r.size)
    r = assert(append { path = "log/a.log", content = "two\n" })
    assert.is_false(r.created)
    assert.equal(4, r.bytes)
    assert.equal(8, r.size)
    assert.equal("one\ntwo\n", H.read(dir, "log/a.log"))
    assert.equal(H.sha256sum(dir, "log/a.log"), r.content_hash)
  end)

  it("appends bytes exactly as given (no newline added, CRLF kept)", function()
    H.write(dir, "a.txt", "x")
    assert(append { path = "a.txt", content = "y\r\nz" })
    assert.equal("xy\r\nz", H.read(dir, "a.txt"))
  end)

  it("appends base64 content as bytes", function()
    H.write(dir, "b.bin", "")
    assert(append { path = "b.bin", content = "AAEC", encoding = "base64" })
    assert.equal("\0\1\2", H.read(dir, "b.bin"))
  end)

  it("refuses malformed base64: INVALID_ARGUMENT naming content and the offset, nothing appended", function()
    H.write(dir, "b.bin", "x")
    for _, c in ipairs { { "QQ=====", 4 }, { "QQ=A", 3 }, { "QQ!!", 2 }, { "QQ==QQ==", 4 } } do
      local r, msg, code = append { path = "b.bin", content = c[1], encoding = "base64" }
      assert.is_nil(r, c[1])
      assert.equal("INVALID_ARGUMENT", code, msg)
      assert.matches("content", msg, 1, true)
      assert.matches("offset " .. c[2], msg, 1, true)
    end
    assert.equal("x", H.read(dir, "b.bin"))
    assert.is_nil((append { path = "new.bin", content = "QQ=A", encoding = "base64" }))
    assert.is_false(H.exists(dir, "new.bin"))
  end)

  it("keeps the inode and mode of the file it appends to", function()
    H.write(dir, "a.txt", "x")
    H.chmod(dir, "a.txt", "0640")
    local ino = H.sh("stat -c %i " .. H.q(dir .. "/a.txt"))
    assert(append { path = "a.txt", content = "y" })
    assert.equal(ino, H.sh("stat -c %i " .. H.q(dir .. "/a.txt")))
    assert.equal("640", H.mode(dir, "a.txt"))
  end)

  it("refuses a missing parent with create_dirs = false", function()
    local _, _, code = append { path = "no/such/a.txt", content = "x", create_dirs = false }
    assert.equal("ENOENT", code)
    assert.is_false(H.exists(dir, "no"))
  end)

  it("refuses to pass max_file_size", function()
    ws:close()
    ws = H.open(dir, { max_file_size = 10 })
    H.write(dir, "a.txt", "12345678")
    local _, _, code = append { path = "a.txt", content = "abc" }
    assert.equal("TOO_LARGE", code)
    assert.equal("12345678", H.read(dir, "a.txt"))
  end)

  it("refuses symlinks, hard-linked files, directories and FIFOs", function()
    H.write(dir, "t.txt", "t")
    H.symlink("t.txt", dir, "l")
    H.hardlink(dir, "t.txt", "h")
    H.mkdir(dir, "d")
    H.mkfifo(dir, "fifo")
    local _, _, code = append { path = "l", content = "x" }
    assert.equal("POLICY_DENIED", code)
    _, _, code = append { path = "h", content = "x" }
    assert.equal("POLICY_DENIED", code)
    _, _, code = append { path = "d", content = "x" }
    assert.equal("EISDIR", code)
    _, _, code = append { path = "fifo", content = "x" }
    assert.equal("NOT_REGULAR", code)
    _, _, code = append { path = "d/", content = "x" }
    assert.equal("EISDIR", code)
    assert.equal("t", H.read(dir, "t.txt"))
  end)

  it("a read-only root is READ_ONLY_ROOT", function()
    ws:close()
    ws = H.open { path = dir, mode = "ro" }
    local _, _, code = append { path = "a.txt", content = "x" }
    assert.equal("READ_ONLY_ROOT", code)
    assert.is_false(H.exists(dir, "a.txt"))
  end)
end)
