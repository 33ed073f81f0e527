-- write_file: atomic create/replace, compare-and-set with expected_hash,
-- parent creation, mode preservation, refusal of links and directories,
-- base64, size cap, no temp files left behind.

local H = require "helpers"

describe(H.tag("write_file"), function()
  local ws, dir

  before_each(function() ws, dir = H.workspace() end)
  after_each(H.cleanup)   -- closes every workspace H.open made

  -- Reopen the workspace on the same directory, with these caps.
  local function open(caps)
    ws:close()
    ws = H.open(dir, caps)
    return ws
  end

  local function write(args)
    return ws:call("write_file", args)
  end

  local function no_temp_files(rel)
    for _, name in ipairs(H.ls(dir, rel)) do
      assert.is_nil(name:find("^%.burrow%."), "temp file left behind: " .. name)
      assert.is_nil(name:find("%.tmp$"), "temp file left behind: " .. name)
    end
  end

  describe("create and replace", function()
    it("creates a new file: created = true, bytes, content on disk", function()
      local r = assert(write { path = "new.txt", content = "hello\n" })
      assert.is_true(r.created)
      assert.equal(6, r.bytes)
      assert.equal("new.txt", r.path)
      assert.equal("hello\n", H.read(dir, "new.txt"))
    end)

    it("replaces an existing file: created = false, new content on disk", function()
      H.write(dir, "a.txt", "old content that is longer\n")
      local r = assert(write { path = "a.txt", content = "new\n" })
      assert.is_false(r.created)
      assert.equal(4, r.bytes)
      assert.equal("new\n", H.read(dir, "a.txt"))
    end)

    it("writes an empty file", function()
      local r = assert(write { path = "empty", content = "" })
      assert.equal(0, r.bytes)
      assert.equal("", H.read(dir, "empty"))
      assert.equal("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", r.content_hash)
    end)

    it("writes bytes as given: CRLF, tabs, NUL and non-ASCII kept", function()
      local s = "a\r\n\tb\0c\n\239\187\191é€\n"
      assert(write { path = "raw", content = s })
      assert.equal(s, H.read(dir, "raw"))
    end)

    it("returns a content_hash equal to read_file's and to sha256sum", function()
      local r = assert(write { path = "h.txt", content = "line 1\nline 2\n" })
      local rr = assert(ws:call("read_file", { path = "h.txt" }))
      assert.equal(rr.content_hash, r.content_hash)
      assert.equal(H.sha256sum(dir, "h.txt"), r.content_hash)
    end)

    it("writes by an absolute path under the root's mount", function()
      local r = assert(write { path = dir .. "/abs.txt", content = "x" })
      assert.equal(dir .. "/abs.txt", r.path)
      assert.equal("x", H.read(dir, "abs.txt"))
    end)

    it("refuses a path outside the root: OUTSIDE_ROOT, nothing written", function()
      local outside = H.tmpdir()
      local r, _, code = write { path = outside .. "/x.txt", content = "x" }
      assert.is_nil(r)
      assert.equal("OUTSIDE_ROOT", code)
      assert.is_false(H.exists(outside, "x.txt"))
      r, _, code = write { path = "../x.txt", content = "x" }
      assert.is_nil(r)
      assert.equal("OUTSIDE_ROOT", code)
    end)

    it("gives a new file the default mode (0666 minus the umask)", function()
      assert(write { path = "m.txt", content = "x" })
      local want = ("%o"):format(0x1B6 & ~H.umask()) -- 0666
      assert.equal(want, H.mode(dir, "m.txt"))
    end)

    it("keeps the mode of a replaced file (0640 stays 0640)", function()
      H.write(dir, "p.txt", "old\n")
      H.chmod(dir, "p.txt", "0640")
      assert(write { path = "p.txt", content = "new\n" })
      assert.equal("640", H.mode(dir, "p.txt"))
      assert.equal("new\n", H.read(dir, "p.txt"))
    end)

    it("keeps an executable mode (0755 stays 0755)", function()
      H.write(dir, "run.sh", "#!/bin/sh\n")
      H.chmod(dir, "run.sh", "0755")
      assert(write { path = "run.sh", content = "#!/bin/sh\necho hi\n" })
      assert.equal("755", H.mode(dir, "run.sh"))
    end)

    it("keeps the owner of a replaced file (when the host may chown)", function()
      if H.sh("id -u"):match("%d+") ~= "0" then
        pending("needs root to give the file another owner")
        return
      end
      H.write(dir, "owned.txt", "old\n")
      H.sh("chown 65534:65534 " .. H.q(dir .. "/owned.txt"))
      assert(write { path = "owned.txt", content = "new\n" })
      assert.equal("65534:65534", (H.sh("stat -c %u:%g " .. H.q(dir .. "/owned.txt")):gsub("%s+$", "")))
    end)

    it("replaces the file atomically: a new inode takes the old name", function()
      H.write(dir, "a.txt", "old\n")
      local before = H.sh("stat -c %i " .. H.q(dir .. "/a.txt"))
      assert(write { path = "a.txt", content = "new\n" })
      local after = H.sh("stat -c %i " .. H.q(dir .. "/a.txt"))
      assert.are_not.equal(before, after)
    end)
  end)

  describe("create_dirs", function()
    it("creates missing parent directories by default", function()
      local r = assert(write { path = "a/b/c/deep.txt", content = "deep\n" })
      assert.is_true(r.created)
      assert.equal("deep\n", H.read(dir, "a/b/c/deep.txt"))
      assert.equal("directory", H.file_type(dir, "a/b/c"))
    end)

    it("refuses a missing parent with create_dirs = false: ENOENT, nothing created", function()
      local r, msg, code = write { path = "x/y/z.txt", content = "z", create_dirs = false }
      assert.is_nil(r)
      assert.equal("ENOENT", code)
      assert.matches("x/y/z.txt", msg, 1, true)
      assert.is_false(H.exists(dir, "x"))
    end)

    it("writes into an existing directory with create_dirs = false", function()
      H.mkdir(dir, "sub")
      assert(write { path = "sub/f.txt", content = "f", create_dirs = false })
      assert.equal("f", H.read(dir, "sub/f.txt"))
    end)

    it("refuses a parent that is a file: ENOTDIR", function()
      H.write(dir, "file", "x")
      local r, _, code = write { path = "file/child.txt", content = "c" }
      assert.is_nil(r)
      assert.equal("ENOTDIR", code)
      assert.equal("x", H.read(dir, "file"))
    end)
  end)

  describe("expected_hash", function()
    it("writes when expected_hash is the current hash", function()
      H.write(dir, "a.txt", "v1\n")
      local h = assert(ws:call("read_file", { path = "a.txt" })).content_hash
      local r = assert(write { path = "a.txt", content = "v2\n", expected_hash = h })
      assert.is_false(r.created)
      assert.equal("v2\n", H.read(dir, "a.txt"))
    end)

    it("accepts the hash from a previous write to chain writes", function()
      local r1 = assert(write { path = "a.txt", content = "v1\n" })
      local r2 = assert(write { path = "a.txt", content = "v2\n", expected_hash = r1.content_hash })
      assert(write { path = "a.txt", content = "v3\n", expected_hash = r2.content_hash })
      assert.equal("v3\n", H.read(dir, "a.txt"))
    end)

    it("refuses a stale hash: HASH_MISMATCH carrying the current hash, file unchanged", function()
      H.write(dir, "a.txt", "v1\n")
      local h1 = assert(ws:call("read_file", { path = "a.txt" })).content_hash
      H.write(dir, "a.txt", "changed by someone else\n")
      local current = H.sha256sum(dir, "a.txt")
      local r, msg, code = write { path = "a.txt", content = "mine\n", expected_hash = h1 }
      assert.is_nil(r)
      assert.equal("HASH_MISMATCH", code)
      assert.matches("^HASH_MISMATCH: ", msg)
      assert.matches(current, msg, 1, true)
      assert.equal("changed by someone else\n", H.read(dir, "a.txt"))
    end)

    it("refuses a hash for a file that does not exist: HASH_MISMATCH, nothing created", function()
      local h = H.sha256_of("anything")
      local r, _, code = write { path = "ghost.txt", content = "x", expected_hash = h }
      assert.is_nil(r)
      assert.equal("HASH_MISMATCH", code)
      assert.is_false(H.exists(dir, "ghost.txt"))
    end)

    it("creates no parent directories when the compare-and-set fails", function()
      local h = H.sha256_of("anything")
      local r, _, code = write { path = "newdir/ghost.txt", content = "x", expected_hash = h }
      assert.is_nil(r)
      assert.equal("HASH_MISMATCH", code)
      assert.is_false(H.exists(dir, "newdir"), "a failed write left the directory newdir behind")
    end)

    it("\"absent\" creates a file that does not exist", function()
      local r = assert(write { path = "fresh.txt", content = "x", expected_hash = "absent" })
      assert.is_true(r.created)
      assert.equal("x", H.read(dir, "fresh.txt"))
    end)

    it("\"absent\" refuses an existing file: HASH_MISMATCH with its hash, file unchanged", function()
      H.write(dir, "there.txt", "keep me\n")
      local current = H.sha256sum(dir, "there.txt")
      local r, msg, code = write { path = "there.txt", content = "x", expected_hash = "absent" }
      assert.is_nil(r)
      assert.equal("HASH_MISMATCH", code)
      assert.matches(current, msg, 1, true)
      assert.equal("keep me\n", H.read(dir, "there.txt"))
    end)

    it("refuses a malformed expected_hash: INVALID_ARGUMENT, file unchanged", function()
      H.write(dir, "a.txt", "v1\n")
      local r, _, code = write { path = "a.txt", content = "x", expected_hash = "deadbeef" }
      assert.is_nil(r)
      assert.equal("INVALID_ARGUMENT", code)
      assert.equal("v1\n", H.read(dir, "a.txt"))
    end)
  end)

  describe("links and non-files", function()
    it("refuses to write through a symlink: POLICY_DENIED, target and link unchanged", function()
      H.write(dir, "target.txt", "original\n")
      H.symlink("target.txt", dir, "link.txt")
      local r, msg, code = write { path = "link.txt", content = "hijack\n" }
      assert.is_nil(r)
      assert.equal("POLICY_DENIED", code)
      assert.matches("link.txt", msg, 1, true)
      assert.equal("original\n", H.read(dir, "target.txt"))
      assert.equal("symbolic link", H.file_type(dir, "link.txt"))
    end)

    it("refuses a dangling symlink: POLICY_DENIED, nothing created", function()
      H.symlink("nowhere.txt", dir, "dangling")
      local r, _, code = write { path = "dangling", content = "x" }
      assert.is_nil(r)
      assert.equal("POLICY_DENIED", code)
      assert.is_false(H.exists(dir, "nowhere.txt"))
    end)

    it("refuses a file with other hard links: POLICY_DENIED, both names unchanged", function()
      H.write(dir, "one.txt", "shared\n")
      H.hardlink(dir, "one.txt", "two.txt")
      local r, _, code = write { path = "two.txt", content = "changed\n" }
      assert.is_nil(r)
      assert.equal("POLICY_DENIED", code)
      assert.equal("shared\n", H.read(dir, "one.txt"))
      assert.equal("shared\n", H.read(dir, "two.txt"))
    end)

    it("refuses a directory: EISDIR", function()
      H.mkdir(dir, "sub")
      H.write(dir, "sub/keep", "k")
      local r, _, code = write { path = "sub", content = "x" }
      assert.is_nil(r)
      assert.equal("EISDIR", code)
      assert.equal("directory", H.file_type(dir, "sub"))
      assert.equal("k", H.read(dir, "sub/keep"))
    end)

    it("refuses a path with a trailing slash: EISDIR", function()
      H.mkdir(dir, "dir")
      local r, _, code = write { path = "dir/", content = "x" }
      assert.is_nil(r)
      assert.equal("EISDIR", code)
      r, _, code = write { path = "fresh/", content = "x" }
      assert.is_nil(r)
      assert.equal("EISDIR", code)
      assert.is_false(H.exists(dir, "fresh"))
    end)

    it("refuses the root itself: EISDIR", function()
      local r, _, code = write { path = ".", content = "x" }
      assert.is_nil(r)
      assert.equal("EISDIR", code)
    end)

    it("refuses a FIFO: NOT_REGULAR", function()
      H.mkfifo(dir, "fifo")
      local r, _, code = write { path = "fifo", content = "x" }
      assert.is_nil(r)
      assert.equal("NOT_REGULAR", code)
      assert.equal("fifo", H.file_type(dir, "fifo"))
    end)
  end)

  describe("encoding and size", function()
    it("decodes base64 content and writes the raw bytes", function()
      local t = {}
      for i = 0, 255 do t[#t + 1] = string.char(i) end
      local bytes = table.concat(t)
      H.write(dir, "src.bin", bytes)
      local enc = H.sh("base64 -w0 " .. H.q(dir .. "/src.bin"))
      local r = assert(write { path = "out.bin", content = enc, encoding = "base64" })
      assert.equal(256, r.bytes)
      assert.equal(bytes, H.read(dir, "out.bin"))
      assert.equal(H.sha256sum(dir, "src.bin"), r.content_hash)
    end)

    it("accepts base64 wrapped over several lines", function()
      local r = assert(write { path = "w.bin", content = "aGVs\nbG8g\nd29y\nbGQ=\n", encoding = "base64" })
      assert.equal(11, r.bytes)
      assert.equal("hello world", H.read(dir, "w.bin"))
    end)

    it("refuses invalid base64: INVALID_ARGUMENT, nothing written", function()
      local r, _, code = write { path = "bad.bin", content = "not base64!", encoding = "base64" }
      assert.is_nil(r)
      assert.equal("INVALID_ARGUMENT", code)
      assert.is_false(H.exists(dir, "bad.bin"))
    end)

    -- Strict base64 (issue 10): the standard alphabet, whitespace skipped,
    -- '=' only as the last one or two characters of a group of four, no
    -- data after it, no stray bits. {content, offset of the first bad byte}
    local malformed = {
      { "QQ=====", 4 },      -- padding past the group
      { "QQ=A", 3 },         -- data after padding
      { "QQ==QUFB", 4 },     -- a second group after padding
      { "QQ!!", 2 },         -- junk
      { "Q===", 1 },         -- padding where a byte's bits must be
      { "====", 0 },
      { "QUFBQ", 5 },        -- ends mid-group
      { "QUFBQQ", 6 },       -- unpadded
      { "QR==", 1 },         -- nonzero bits after the last byte
      { "QQ\0=", 2 },
      { "QUFB-_==", 4 },     -- the URL-safe alphabet is not base64 here
      { "QUFB" .. ("="):rep(4000), 4 },
    }

    it("refuses malformed base64: INVALID_ARGUMENT naming content and the offset, nothing written", function()
      for _, c in ipairs(malformed) do
        local label = ("%q"):format(c[1]:sub(1, 20))
        local r, msg, code = write { path = "bad.bin", content = c[1], encoding = "base64" }
        assert.is_nil(r, label)
        assert.equal("INVALID_ARGUMENT", code, label .. ": " .. tostring(msg))
        assert.matches("content", msg, 1, true)
        assert.matches("offset " .. c[2], msg, 1, true)
        assert.is_false(H.exists(dir, "bad.bin"), label)
      end
    end)

    it("core.base64_size and core.base64_decode refuse the same inputs, at the same offset", function()
      for _, c in ipairs(malformed) do
        local label = ("%q"):format(c[1]:sub(1, 20))
        local n, msg, code = H.core.base64_size(c[1])
        assert.is_nil(n, label)
        assert.equal("INVALID_ARGUMENT", code, label)
        assert.matches("offset " .. c[2], msg, 1, true)
        local d, dmsg, dcode = H.core.base64_decode(c[1])
        assert.is_nil(d, label)
        assert.equal("INVALID_ARGUMENT", dcode, label)
        assert.equal(msg, dmsg, label)
      end
    end)

    it("skips spaces, tabs and line breaks anywhere, also after the padding", function()
      local s = " QU FB\r\n\tQQ\n=\n= \n"
      assert.equal(4, H.core.base64_size(s))
      local r = assert(write { path = "ws.bin", content = s, encoding = "base64" })
      assert.equal(4, r.bytes)
      assert.equal("AAAA", H.read(dir, "ws.bin"))
      assert.equal(0, H.core.base64_size(" \n"))
    end)

    it("core.base64_encode and core.base64_decode round-trip, the size is exact", function()
      for n = 0, 7 do
        local t = {}
        for i = 1, n do t[i] = string.char((i * 37 + n) % 256) end
        local raw = table.concat(t)
        local enc = H.core.base64_encode(raw)
        assert.equal(4 * ((n + 2) // 3), #enc)
        assert.equal(n, H.core.base64_size(enc))
        assert.equal(raw, H.core.base64_decode(enc))
      end
    end)

    it("a large valid base64 (over 3 MiB decoded) has its exact size and is written whole", function()
      local s = ("QUFB"):rep(1 << 20) .. "\nQUE="
      assert.equal(3 * (1 << 20) + 2, H.core.base64_size(s))
      local r = assert(write { path = "huge.bin", content = s, encoding = "base64" })
      assert.equal(3 * (1 << 20) + 2, r.bytes)
      assert.equal(("A"):rep(3 * (1 << 20) + 2), H.read(dir, "huge.bin"))
    end)

    it("refuses content over max_file_size: TOO_LARGE, nothing written", function()
      open { max_file_size = 100 }
      local r, msg, code = write { path = "big.txt", content = ("a"):rep(101) }
      assert.is_nil(r)
      assert.equal("TOO_LARGE", code)
      assert.matches("big.txt", msg, 1, true)
      assert.is_false(H.exists(dir, "big.txt"))
      assert(write { path = "ok.txt", content = ("a"):rep(100) })
    end)

    it("measures max_file_size on the decoded bytes of base64", function()
      open { max_file_size = 10 }
      -- 12 raw bytes, 16 base64 characters
      local r, _, code = write { path = "b.bin", content = "aGVsbG8gd29ybGQh", encoding = "base64" }
      assert.is_nil(r)
      assert.equal("TOO_LARGE", code)
      -- 9 raw bytes, 12 base64 characters
      assert(write { path = "c.bin", content = "aGVsbG8gd29y", encoding = "base64" })
      assert.equal("hello wor", H.read(dir, "c.bin"))
    end)

    it("writes a file over 1 MiB and reads it back identically", function()
      local t = {}
      for i = 1, 40000 do t[i] = ("%05d %s"):format(i, ("q"):rep(i % 50)) end
      local s = table.concat(t, "\n") .. "\n"
      assert(#s > 1024 * 1024)
      local r = assert(write { path = "big.txt", content = s })
      assert.equal(#s, r.bytes)
      assert.equal(s, H.read(dir, "big.txt"))
      assert.equal(H.sha256sum(dir, "big.txt"), r.content_hash)
    end)
  end)

  describe("temp files", function()
    it("leaves no temp files after creates, replaces and failed writes", function()
      H.mkdir(dir, "sub")
      H.write(dir, "sub/keep.txt", "v1\n")
      assert(write { path = "sub/new.txt", content = "a" })
      assert(write { path = "sub/new.txt", content = "b" })
      assert(write { path = "sub/keep.txt", content = "v2\n" })
      assert.is_nil(write { path = "sub/keep.txt", content = "x", expected_hash = "absent" })
      assert.is_nil(write { path = "sub/keep.txt", content = "x", expected_hash = H.sha256_of("zzz") })
      H.chmod(dir, "sub/keep.txt", "0600")
      assert(write { path = "sub/keep.txt", content = "v3\n" })
      no_temp_files("sub")
      no_temp_files(".")
      assert.same({ "keep.txt", "new.txt" }, H.ls(dir, "sub"))
    end)

    it("sweeps the temp files of a writer that died", function()
      -- a dead writer's leftover: .burrow.<pid>.<random>.tmp with a pid that is gone
      local pid = tonumber(H.sh("sh -c 'echo $$'"):match("%d+"))
      local stale = (".burrow.%d.00000000deadbeef.tmp"):format(pid)
      H.write(dir, stale, "partial")
      H.write(dir, ".burrow.notes", "an operator's file, not a temp")
      open()
      assert.is_false(H.exists(dir, stale))
      assert.is_true(H.exists(dir, ".burrow.notes"))
    end)
  end)

  describe("answers that must not tell about the outside", function()
    it("'link/' to an outside file is OUTSIDE_ROOT, the same as to an outside dir or nothing", function()
      local outside = H.tmpdir()
      H.write(outside, "file", "secret")
      H.symlink(outside .. "/file", dir, "to_file")
      H.symlink(outside, dir, "to_dir")
      H.symlink(outside .. "/missing", dir, "to_missing")
      for _, name in ipairs { "to_file/", "to_dir/", "to_missing/" } do
        local r, msg, code = write { path = name, content = "x" }
        assert.is_nil(r, name)
        assert.equal("OUTSIDE_ROOT", code, name .. ": " .. tostring(msg))
      end
      assert.equal("secret", H.read(outside, "file"))
      assert.is_false(H.exists(outside, "missing"))
    end)

    it("'missing/x/' is EISDIR and creates nothing", function()
      local r, msg, code = write { path = "missing/x/", content = "x" }
      assert.is_nil(r)
      assert.equal("EISDIR", code, msg)
      assert.is_false(H.exists(dir, "missing"))
    end)

    it("an error carries no detail left over from an earlier step", function()
      local _, msg, code = write { path = "missing/.", content = "x" }
      assert.equal("ENOENT", code)
      assert.is_nil(msg:find("final name", 1, true), msg)
    end)
  end)

  describe("sweeping", function()
    it("sweeps a dead writer's temp file in the directory it writes to", function()
      H.mkdir(dir, "deep/er")
      local pid = tonumber(H.sh("sh -c 'echo $$'"):match("%d+"))
      local stale = (".burrow.%d.00000000feedf00d.tmp"):format(pid)
      H.write(dir, "deep/er/" .. stale, "partial")
      assert(write { path = "deep/er/x.txt", content = "x" })
      assert.is_false(H.exists(dir, "deep/er/" .. stale))
    end)
  end)
end)
