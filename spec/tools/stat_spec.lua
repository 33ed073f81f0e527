-- stat: what a path is, with lstat semantics.

local H = require "helpers"

describe(H.tag("stat"), function()
  local ws, dir

  before_each(function() ws, dir = H.workspace() end)
  after_each(H.cleanup)

  local function stat(path)
    return ws:call("stat", { path = path })
  end

  it("describes a regular file", function()
    H.write(dir, "sub/f.txt", "hello")
    H.chmod(dir, "sub/f.txt", "0644")
    local r = assert(stat("sub/f.txt"))
    assert.equal("sub/f.txt", r.path)
    assert.equal("f.txt", r.name)
    assert.equal("file", r.type)
    assert.equal(5, r.size)
    assert.equal("0644", r.mode)
    assert.equal(1, r.nlink)
    assert.is_false(r.is_symlink)
    assert.is_nil(r.target)
  end)

  it("gives a file's lines and tokens_estimate (text: bytes/4 rounded up)", function()
    H.write(dir, "t.txt", "one\ntwo\nthree") -- 13 bytes, 3 lines
    local r = assert(stat("t.txt"))
    assert.same({ 13, 3, true, 4 }, { r.size, r.lines, r.lines_exact, r.tokens_estimate })
    assert.is_nil(r.binary)
    assert.matches("lines: 3\ntokens_estimate: 4", ws:render("stat", r), 1, true)
    H.write(dir, "e.txt", "")
    assert.same({ 0, 0, true, 0 }, { stat("e.txt").size, stat("e.txt").lines, stat("e.txt").lines_exact,
      stat("e.txt").tokens_estimate })
  end)

  it("gives a binary file or an image no lines, and tokens as base64 (bytes/3 rounded up)", function()
    H.write(dir, "b.bin", "ab\0cd\n\n") -- 7 bytes
    local r = assert(stat("b.bin"))
    assert.same({ 7, true, true, 3 }, { r.size, r.binary, r.lines_exact, r.tokens_estimate })
    assert.is_nil(r.lines)
    H.write(dir, "p.png", "\137PNG\r\n\26\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\8\2\0\0\0") -- 29 bytes
    r = assert(stat("p.png"))
    assert.same({ 29, true, 10 }, { r.size, r.binary, r.tokens_estimate })
    assert.is_nil(r.lines)
  end)

  it("counts a big file's lines only once read_file has read it (lines_exact)", function()
    local t = {}
    for i = 1, 150000 do t[i] = ("row %d"):format(i) end
    local text = table.concat(t, "\n") .. "\n"
    assert.is_true(#text > 1024 * 1024)
    H.write(dir, "big.txt", text)
    local r = assert(stat("big.txt"))
    assert.same({ #text, false, (#text + 3) // 4 }, { r.size, r.lines_exact, r.tokens_estimate })
    assert.is_nil(r.lines)
    assert(ws:call("read_file", { path = "big.txt", limit = 1 }))
    r = assert(stat("big.txt"))
    assert.same({ 150000, true }, { r.lines, r.lines_exact })
  end)

  it("gives a directory no lines or tokens", function()
    H.mkdir(dir, "d")
    local r = assert(stat("d"))
    assert.is_nil(r.lines)
    assert.is_nil(r.lines_exact)
    assert.is_nil(r.tokens_estimate)
  end)

  it("describes a directory", function()
    H.mkdir(dir, "d/e")
    local r = assert(stat("d"))
    assert.equal("dir", r.type)
    assert.equal("d", r.name)
    assert.is_false(r.is_symlink)
    assert.equal(("%04o"):format(tonumber(H.mode(dir, "d"), 8)), r.mode)
  end)

  it("describes a symlink itself, with its target text, not what it points to", function()
    H.write(dir, "target.txt", "0123456789")
    H.symlink("target.txt", dir, "link")
    local r = assert(stat("link"))
    assert.equal("symlink", r.type)
    assert.is_true(r.is_symlink)
    assert.equal("target.txt", r.target)
    assert.equal("link", r.name)
    assert.equal(#"target.txt", r.size)
  end)

  it("describes a dangling symlink", function()
    H.symlink("no/such/file", dir, "dangling")
    local r = assert(stat("dangling"))
    assert.equal("symlink", r.type)
    assert.equal("no/such/file", r.target)
  end)

  it("gives the target text of a link pointing outside the root without following it", function()
    H.symlink("/etc/passwd", dir, "out")
    local r = assert(stat("out"))
    assert.equal("symlink", r.type)
    assert.equal("/etc/passwd", r.target)
  end)

  it("describes a FIFO as other, without blocking", function()
    H.mkfifo(dir, "fifo")
    local r = assert(stat("fifo"))
    assert.equal("other", r.type)
  end)

  it("gives the permission bits as a four-digit octal string", function()
    H.write(dir, "a", "")
    for _, m in ipairs { "0600", "0755", "0400", "0777", "0000" } do
      H.chmod(dir, "a", m)
      assert.equal(m, assert(stat("a")).mode)
    end
    H.chmod(dir, "a", "4755")
    assert.equal("4755", assert(stat("a")).mode)
  end)

  it("gives mtime in ISO 8601 UTC", function()
    H.write(dir, "old.txt", "")
    H.sh("touch -d '1999-12-31 23:59:58 UTC' " .. H.q(dir .. "/old.txt"))
    local r = assert(stat("old.txt"))
    assert.equal("1999-12-31T23:59:58Z", r.mtime)
  end)

  it("gives mtime in UTC whatever the local time zone", function()
    local _, has_tz = H.run("test -e /usr/share/zoneinfo/Asia/Tokyo -a -e /usr/share/zoneinfo/America/New_York")
    if not has_tz then
      pending("needs tzdata")
      return
    end
    H.write(dir, "z.txt", "")
    H.sh("TZ=Asia/Tokyo touch -d '2024-07-01 09:00:00' " .. H.q(dir .. "/z.txt"))
    local out = H.run("TZ=America/New_York " .. H.q(H.BURROW) .. " call stat '{\"path\":\"z.txt\"}' --root "
      .. H.q(dir) .. " 2>/dev/null")
    assert.equal("2024-07-01T00:00:00Z", H.json.decode(out).mtime)
  end)

  it("gives the hard-link count", function()
    H.write(dir, "one", "x")
    assert.equal(1, assert(stat("one")).nlink)
    H.hardlink(dir, "one", "two")
    assert.equal(2, assert(stat("one")).nlink)
    assert.equal(2, assert(stat("two")).nlink)
  end)

  it("takes an absolute path under the root's mount", function()
    H.write(dir, "abs.txt", "abc")
    local r = assert(stat(dir .. "/abs.txt"))
    assert.equal(dir .. "/abs.txt", r.path)
    assert.equal("abs.txt", r.name)
    assert.equal(3, r.size)
  end)

  it("describes a symlink in the middle of the path by following it", function()
    H.write(dir, "real/f.txt", "abc")
    H.symlink("real", dir, "alias")
    local r = assert(stat("alias/f.txt"))
    assert.equal("file", r.type)
    assert.equal(3, r.size)
  end)

  it("refuses a missing path: ENOENT naming it", function()
    local r, msg, code = stat("missing/thing")
    assert.is_nil(r)
    assert.equal("ENOENT", code)
    assert.matches("missing/thing", msg, 1, true)
  end)

  it("refuses a path outside the roots: OUTSIDE_ROOT", function()
    local r, _, code = stat("/etc/passwd")
    assert.is_nil(r)
    assert.equal("OUTSIDE_ROOT", code)
  end)

  it("renders a readable summary and the whole result as structured content", function()
    H.write(dir, "f.txt", "hello")
    local r = assert(stat("f.txt"))
    local text, s = ws:render("stat", r)
    assert.matches("type: file", text, 1, true)
    assert.matches("size: 5", text, 1, true)
    assert.same(r, s)
  end)
end)
