-- read_file: numbered lines, paging, caps, hashes, newline styles, BOM,
-- binary files, base64, large (mapped) files, non-regular files.

local H = require "helpers"
local core = require "burrow.core"

-- Rebuild the file text from read_file pages (numbered lines, no \r).
local function strip_numbers(content)
  local out = {}
  for _, row in ipairs(H.numbered(content)) do out[#out + 1] = row.text end
  return out
end

describe(H.tag("read_file"), function()
  local ws, dir

  before_each(function() ws, dir = H.workspace() end)
  after_each(H.cleanup)   -- closes every workspace H.open made

  -- Reopen the workspace on the same directory, with these caps.
  local function open(caps)
    ws:close()
    ws = H.open(dir, caps)
    return ws
  end

  local function read(args)
    return ws:call("read_file", args)
  end

  describe("line numbers and paging", function()
    it("numbers lines as N<TAB>line", function()
      H.write(dir, "a.txt", "alpha\nbeta\ngamma\n")
      local r = assert(read { path = "a.txt" })
      assert.equal("1\talpha\n2\tbeta\n3\tgamma\n", r.content)
      assert.equal("text", r.encoding)
      assert.equal(3, r.total_lines)
      assert.equal(1, r.start_line)
      assert.equal(3, r.end_line)
      assert.is_nil(r.next_offset)
      assert.is_false(r.truncated)
      assert.equal(17, r.size)
      assert.equal("a.txt", r.path)
    end)

    it("counts a last line without a newline", function()
      H.write(dir, "a.txt", "alpha\nbeta")
      local r = assert(read { path = "a.txt" })
      assert.equal("1\talpha\n2\tbeta\n", r.content)
      assert.equal(2, r.total_lines)
      assert.equal(2, r.end_line)
    end)

    it("keeps tabs and blank lines", function()
      H.write(dir, "a.txt", "\tindented\n\n  two spaces\n")
      local r = assert(read { path = "a.txt" })
      assert.equal("1\t\tindented\n2\t\n3\t  two spaces\n", r.content)
    end)

    it("starts at offset and stops after limit lines, giving next_offset", function()
      local lines = {}
      for i = 1, 10 do lines[i] = "line " .. i end
      H.write(dir, "ten.txt", table.concat(lines, "\n") .. "\n")
      local r = assert(read { path = "ten.txt", offset = 3, limit = 4 })
      assert.equal("3\tline 3\n4\tline 4\n5\tline 5\n6\tline 6\n", r.content)
      assert.equal(3, r.start_line)
      assert.equal(6, r.end_line)
      assert.equal(7, r.next_offset)
      assert.equal(10, r.total_lines)
      assert.is_false(r.truncated)

      r = assert(read { path = "ten.txt", offset = r.next_offset, limit = 4 })
      assert.equal("7\tline 7\n8\tline 8\n9\tline 9\n10\tline 10\n", r.content)
      assert.is_nil(r.next_offset)
      r = assert(read { path = "ten.txt", offset = 8, limit = 10 })
      assert.equal(8, r.start_line)
      assert.equal(10, r.end_line)
      assert.is_nil(r.next_offset)
    end)

    it("gives no next_offset when limit ends exactly at the last line", function()
      H.write(dir, "three.txt", "a\nb\nc\n")
      local r = assert(read { path = "three.txt", limit = 3 })
      assert.equal(3, r.end_line)
      assert.is_nil(r.next_offset)
    end)

    it("shows at most 2000 lines by default", function()
      local t = {}
      for i = 1, 2500 do t[i] = tostring(i) end
      H.write(dir, "many.txt", table.concat(t, "\n") .. "\n")
      local r = assert(read { path = "many.txt" })
      assert.equal(2000, r.end_line)
      assert.equal(2001, r.next_offset)
      assert.equal(2500, r.total_lines)
      local rows = H.numbered(r.content)
      assert.equal(2000, #rows)
      assert.equal("2000", rows[2000].text)
    end)

    it("returns no lines, and no error, for an offset past the end", function()
      H.write(dir, "a.txt", "a\nb\nc\n")
      local r = assert(read { path = "a.txt", offset = 10 })
      assert.equal("", r.content)
      assert.equal(3, r.total_lines)
      assert.is_nil(r.start_line)
      assert.is_nil(r.next_offset)
      local text = ws:render("read_file", r)
      assert.matches("past the end", text, 1, true)
      assert.matches("3 lines", text, 1, true)
    end)

    it("reads the line just past a file without final newline as past the end", function()
      H.write(dir, "a.txt", "a\nb")
      local r = assert(read { path = "a.txt", offset = 3 })
      assert.equal("", r.content)
      assert.equal(2, r.total_lines)
    end)
  end)

  describe("long lines", function()
    it("cuts a line over 2000 characters with a marker", function()
      H.write(dir, "long.txt", ("x"):rep(2500) .. "\nnext\n")
      local r = assert(read { path = "long.txt" })
      local rows = H.numbered(r.content)
      assert.equal(2, #rows)
      assert.equal(("x"):rep(2000), rows[1].text:sub(1, 2000))
      assert.is_nil(rows[1].text:find(("x"):rep(2001), 1, true))
      assert.matches("truncated", rows[1].text:sub(2001), 1, true)
      assert.equal("next", rows[2].text)
      assert.equal(2, r.total_lines)
    end)

    it("does not cut a line of exactly 2000 characters", function()
      H.write(dir, "edge.txt", ("y"):rep(2000) .. "\n")
      local r = assert(read { path = "edge.txt" })
      assert.equal("1\t" .. ("y"):rep(2000) .. "\n", r.content)
    end)

    it("counts characters, not bytes, and never splits a UTF-8 sequence", function()
      -- 2-byte é: 2000 of them is 4000 bytes, still not over the limit
      H.write(dir, "e.txt", ("é"):rep(2000) .. "\n")
      local r = assert(read { path = "e.txt" })
      assert.equal("1\t" .. ("é"):rep(2000) .. "\n", r.content)

      -- 3-byte €, after an ASCII byte so that byte offsets are odd
      H.write(dir, "euro.txt", "a" .. ("€"):rep(2600) .. "\n")
      r = assert(read { path = "euro.txt" })
      assert.is_not_nil(utf8.len(r.content), "output is not valid UTF-8")
      local text = H.numbered(r.content)[1].text
      assert.equal("a" .. ("€"):rep(1999), text:sub(1, 1 + 3 * 1999))
      assert.is_nil(text:find(("€"):rep(2000), 1, true))
      assert.matches("truncated", text, 1, true)

      -- 4-byte emoji
      H.write(dir, "emoji.txt", ("😀"):rep(2100))
      r = assert(read { path = "emoji.txt" })
      assert.is_not_nil(utf8.len(r.content), "output is not valid UTF-8")
      text = H.numbered(r.content)[1].text
      assert.equal(("😀"):rep(2000), text:sub(1, 4 * 2000))
      assert.is_nil(text:find(("😀"):rep(2001), 1, true))
    end)
  end)

  describe("max_result_bytes", function()
    local function numbered_file(n, width)
      local t = {}
      for i = 1, n do
        local s = ("row %d "):format(i)
        -- varying widths so pages do not end on a regular boundary
        t[i] = s .. ("abcdefghij"):rep(20):sub(1, (i * 7) % (width or 60))
      end
      return table.concat(t, "\n") .. "\n", t
    end

    it("stops on a whole line within the cap and gives the exact next offset", function()
      local text, lines = numbered_file(200)
      H.write(dir, "p.txt", text)
      open { max_result_bytes = 1000 }
      local r = assert(read { path = "p.txt" })
      assert.is_true(r.truncated)
      assert.is_true(#r.content <= 1000, "content is " .. #r.content .. " bytes")
      assert.equal("\n", r.content:sub(-1))
      local rows = H.numbered(r.content)
      assert.equal(r.end_line, rows[#rows].n)
      assert.equal(r.end_line + 1, r.next_offset)
      for i, row in ipairs(rows) do
        assert.equal(i, row.n)
        assert.equal(lines[i], row.text)
      end
      -- the next whole line would not have fitted
      local next_line = ("%d\t%s\n"):format(r.next_offset, lines[r.next_offset])
      assert.is_true(#r.content + #next_line > 1000)
    end)

    it("continues exactly where it stopped: the pages rebuild the file", function()
      local text, lines = numbered_file(300)
      H.write(dir, "p.txt", text)
      open { max_result_bytes = 700 }
      local got, offset, pages = {}, 1, 0
      repeat
        local r = assert(read { path = "p.txt", offset = offset })
        pages = pages + 1
        assert.is_true(#r.content <= 700)
        assert.equal(offset, r.start_line)
        for _, row in ipairs(H.numbered(r.content)) do
          assert.equal(#got + 1, row.n)
          got[#got + 1] = row.text
        end
        offset = r.next_offset
      until offset == nil or pages > 1000
      assert.is_true(pages > 5)
      assert.same(lines, got)
      assert.equal(text, table.concat(got, "\n") .. "\n")
    end)

    it("says in the rendered text where to continue", function()
      H.write(dir, "p.txt", (numbered_file(100)))
      open { max_result_bytes = 500 }
      local r = assert(read { path = "p.txt" })
      local text = ws:render("read_file", r)
      assert.matches("offset=" .. r.next_offset, text, 1, true)
      assert.equal(r.content, text:sub(1, #r.content))
    end)

    it("is not truncated when limit stops before the cap", function()
      H.write(dir, "p.txt", (numbered_file(100)))
      open { max_result_bytes = 100000 }
      local r = assert(read { path = "p.txt", limit = 5 })
      assert.is_false(r.truncated)
      assert.equal(6, r.next_offset)
    end)
  end)

  describe("content_hash", function()
    it("is sha256: and the hex SHA-256 of the bytes, as sha256sum gives", function()
      H.write(dir, "a.txt", "hello\r\nworld\n")
      local r = assert(read { path = "a.txt" })
      assert.matches("^sha256:%x+$", r.content_hash)
      assert.equal(64, #r.content_hash - #"sha256:")
      assert.equal(H.sha256sum(dir, "a.txt"), r.content_hash)
    end)

    it("is the hash of the whole file, whatever page is read", function()
      H.write(dir, "a.txt", "1\n2\n3\n4\n")
      local full = assert(read { path = "a.txt" }).content_hash
      local page = assert(read { path = "a.txt", offset = 3, limit = 1 }).content_hash
      assert.equal(full, page)
    end)

    it("is the hash of the empty string for an empty file", function()
      H.write(dir, "empty", "")
      local r = assert(read { path = "empty" })
      assert.equal("sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", r.content_hash)
    end)

    it("matches sha256sum for the raw bytes of a file with a BOM and CRLF", function()
      H.write(dir, "b.txt", "\239\187\191x\r\ny\r\n")
      local r = assert(read { path = "b.txt" })
      assert.equal(H.sha256sum(dir, "b.txt"), r.content_hash)
    end)
  end)

  describe("newlines and BOM", function()
    it("reports lf", function()
      H.write(dir, "a", "a\nb\n")
      assert.equal("lf", assert(read { path = "a" }).newline)
    end)

    it("reports crlf and shows the lines without \\r", function()
      H.write(dir, "a", "one\r\ntwo\r\nthree\r\n")
      local r = assert(read { path = "a" })
      assert.equal("crlf", r.newline)
      assert.equal("1\tone\n2\ttwo\n3\tthree\n", r.content)
      assert.is_nil(r.content:find("\r", 1, true))
      assert.equal(3, r.total_lines)
    end)

    it("reports mixed", function()
      H.write(dir, "a", "one\r\ntwo\nthree\r\n")
      local r = assert(read { path = "a" })
      assert.equal("mixed", r.newline)
      assert.equal("1\tone\n2\ttwo\n3\tthree\n", r.content)
    end)

    it("reports none for a single line without newline", function()
      H.write(dir, "a", "just one line")
      local r = assert(read { path = "a" })
      assert.equal("none", r.newline)
      assert.equal(1, r.total_lines)
      assert.equal("1\tjust one line\n", r.content)
    end)

    it("counts a CRLF that falls across a 16-byte boundary", function()
      -- \r at byte 16, \n at byte 17 (1-based)
      H.write(dir, "a", ("x"):rep(15) .. "\r\n" .. ("y"):rep(15) .. "\r\n")
      local r = assert(read { path = "a" })
      assert.equal("crlf", r.newline)
    end)

    it("detects a UTF-8 BOM and does not show it in line 1", function()
      H.write(dir, "bom.txt", "\239\187\191hello\nworld\n")
      local r = assert(read { path = "bom.txt" })
      assert.is_true(r.bom)
      assert.equal("1\thello\n2\tworld\n", r.content)
      assert.equal(H.sha256sum(dir, "bom.txt"), r.content_hash)
      assert.equal(15, r.size)
    end)

    it("reports bom = false for a file without one", function()
      H.write(dir, "a", "hello\n")
      assert.is_false(assert(read { path = "a" }).bom)
    end)

    it("does not count the BOM against the 2000-character line limit", function()
      H.write(dir, "bom2000.txt", "\239\187\191" .. ("y"):rep(2000) .. "\n")
      local r = assert(read { path = "bom2000.txt" })
      assert.is_true(r.bom)
      assert.equal("1\t" .. ("y"):rep(2000) .. "\n", r.content)
    end)

    it("handles a BOM with CRLF", function()
      H.write(dir, "a", "\239\187\191x\r\ny\r\n")
      local r = assert(read { path = "a" })
      assert.is_true(r.bom)
      assert.equal("crlf", r.newline)
      assert.equal("1\tx\n2\ty\n", r.content)
    end)
  end)

  describe("edge cases", function()
    it("reads an empty file as no lines", function()
      H.write(dir, "empty", "")
      local r = assert(read { path = "empty" })
      assert.equal("", r.content)
      assert.equal(0, r.total_lines)
      assert.equal(0, r.size)
      assert.is_false(r.truncated)
      assert.is_nil(r.next_offset)
      assert.matches("empty", (ws:render("read_file", r)), 1, true)
    end)

    it("refuses a file with NUL bytes as BINARY", function()
      H.write(dir, "bin", "abc\0def\n")
      local r, msg, code = read { path = "bin" }
      assert.is_nil(r)
      assert.equal("BINARY", code)
      assert.matches("bin", msg, 1, true)
      assert.matches("base64", msg, 1, true)
    end)

    it("reads a binary file as base64 and round-trips the bytes", function()
      local t = {}
      for i = 0, 255 do t[#t + 1] = string.char(i) end
      local bytes = table.concat(t):rep(3)
      H.write(dir, "bin", bytes)
      local r = assert(read { path = "bin", encoding = "base64" })
      assert.equal("base64", r.encoding)
      assert.equal(#bytes, r.size)
      assert.equal(bytes, core.base64_decode(r.content))
      local expect = H.sh("base64 -w0 " .. H.q(dir .. "/bin"))
      assert.equal(expect, r.content)
      assert.equal(H.sha256sum(dir, "bin"), r.content_hash)
    end)

    it("renders base64 as the bare base64 text", function()
      H.write(dir, "b", "hi")
      local r = assert(read { path = "b", encoding = "base64" })
      local text, s = ws:render("read_file", r)
      assert.equal("aGk=", text)
      assert.is_nil(s.content)
    end)

    it("refuses base64 output over max_result_bytes: TOO_LARGE", function()
      H.write(dir, "bin", ("\0\1\2"):rep(100))
      open { max_result_bytes = 100 }
      local r, msg, code = read { path = "bin", encoding = "base64" }
      assert.is_nil(r)
      assert.equal("TOO_LARGE", code)
      assert.matches("max_result_bytes", msg, 1, true)
    end)

    it("refuses a file over max_file_size: TOO_LARGE", function()
      H.write(dir, "big", ("a"):rep(101))
      H.write(dir, "fits", ("a"):rep(100))
      open { max_file_size = 100 }
      local r, msg, code = read { path = "big" }
      assert.is_nil(r)
      assert.equal("TOO_LARGE", code)
      assert.matches("big", msg, 1, true)
      r = assert(read { path = "fits" })
      assert.equal(100, r.size)
    end)

    it("refuses a directory: EISDIR", function()
      H.mkdir(dir, "sub")
      local r, _, code = read { path = "sub" }
      assert.is_nil(r)
      assert.equal("EISDIR", code)
    end)

    it("refuses a missing file: ENOENT naming the path", function()
      local r, msg, code = read { path = "nope/missing.txt" }
      assert.is_nil(r)
      assert.equal("ENOENT", code)
      assert.matches("nope/missing.txt", msg, 1, true)
      assert.is_nil(msg:find(dir, 1, true))
    end)

    it("refuses a FIFO with NOT_REGULAR and does not block on it", function()
      H.mkfifo(dir, "fifo")
      -- first in a child with a timeout, so a blocking open cannot hang the suite
      local out, _, code = H.burrow_cmd { "call", "read_file", '{"path":"fifo"}', "--root", dir }
      assert.are_not.equal(124, code, "read_file blocked on a FIFO")
      assert.equal(1, code)
      assert.equal("NOT_REGULAR", H.json.decode(out).error.code)
      local r, _, c = read { path = "fifo" }
      assert.is_nil(r)
      assert.equal("NOT_REGULAR", c)
    end)

    it("follows a symlink to a file inside the root", function()
      H.write(dir, "target.txt", "via link\n")
      H.symlink("target.txt", dir, "link.txt")
      assert.equal("1\tvia link\n", assert(read { path = "link.txt" }).content)
    end)

    it("reads a file by an absolute path under the root's mount", function()
      H.write(dir, "sub/a.txt", "abs\n")
      local r = assert(read { path = dir .. "/sub/a.txt" })
      assert.equal("1\tabs\n", r.content)
      assert.equal(dir .. "/sub/a.txt", r.path)
    end)
  end)

  describe("large files (the mmap path, over 1 MiB)", function()
    local text, lines

    before_each(function()
      lines = {}
      for i = 1, 30000 do lines[i] = ("%06d %s"):format(i, ("z"):rep(i % 70)) end
      text = table.concat(lines, "\n") .. "\n"
      assert(#text > 1024 * 1024)
      H.write(dir, "big.txt", text)
    end)

    it("reports size, total_lines and the hash of the whole file", function()
      local r = assert(read { path = "big.txt", limit = 10 })
      assert.equal(#text, r.size)
      assert.equal(30000, r.total_lines)
      assert.equal(H.sha256sum(dir, "big.txt"), r.content_hash)
      assert.equal("lf", r.newline)
      assert.equal(11, r.next_offset)
    end)

    it("reads lines deep in the file", function()
      local r = assert(read { path = "big.txt", offset = 29998, limit = 10 })
      assert.equal(("29998\t%s\n29999\t%s\n30000\t%s\n"):format(lines[29998], lines[29999], lines[30000]), r.content)
      assert.is_nil(r.next_offset)
    end)

    it("pages through the whole file under the default cap and rebuilds it", function()
      local got, offset, pages = {}, 1, 0
      repeat
        local r = assert(read { path = "big.txt", offset = offset, limit = 100000 })
        pages = pages + 1
        assert.is_true(#r.content <= 256 * 1024)
        for _, row in ipairs(H.numbered(r.content)) do
          assert.equal(#got + 1, row.n)
          got[#got + 1] = row.text
        end
        offset = r.next_offset
      until offset == nil or pages > 100
      assert.is_true(pages >= 5)
      assert.equal(text, table.concat(got, "\n") .. "\n")
    end)

    it("reads a large binary file as base64", function()
      H.sh("head -c 1500000 /dev/urandom > " .. H.q(dir .. "/rand.bin"))
      open { max_result_bytes = "4MiB" }
      local r = assert(read { path = "rand.bin", encoding = "base64" })
      assert.equal(1500000, r.size)
      assert.equal(H.read(dir, "rand.bin"), core.base64_decode(r.content))
      assert.equal(H.sha256sum(dir, "rand.bin"), r.content_hash)
    end)
  end)

  describe("tail", function()
    it("gives the last N lines as they are, unnumbered, with no hash", function()
      H.write(dir, "a.txt", "one\ntwo\nthree\nfour\n")
      local r = assert(read { path = "a.txt", tail = 2 })
      assert.equal("three\nfour\n", r.content)
      assert.equal(2, r.tail_lines)
      assert.is_nil(r.content_hash)
      assert.is_nil(r.total_lines) -- the start of the file was not read
      assert.is_false(r.truncated)
    end)

    it("drops the CR of CRLF and keeps a missing final newline missing", function()
      H.write(dir, "crlf.txt", "l1\r\nl2\r\nl3")
      assert.equal("l2\nl3", assert(read { path = "crlf.txt", tail = 2 }).content)
      H.write(dir, "lf.txt", "a\nb")
      assert.equal("b", assert(read { path = "lf.txt", tail = 1 }).content)
    end)

    it("a tail longer than the file is the whole file (without its BOM)", function()
      H.write(dir, "s.txt", "\239\187\191x\n\ny\n")
      local r = assert(read { path = "s.txt", tail = 50 })
      assert.equal("x\n\ny\n", r.content)
      assert.equal(3, r.tail_lines)
      assert.equal(3, r.total_lines)
      H.write(dir, "nl.txt", "\n")
      assert.equal("\n", assert(read { path = "nl.txt", tail = 5 }).content)
      H.write(dir, "empty.txt", "")
      local e = assert(read { path = "empty.txt", tail = 5 })
      assert.equal("", e.content)
      assert.equal(0, e.tail_lines)
    end)

    it("cannot be combined with offset, limit or encoding", function()
      H.write(dir, "a.txt", "x\n")
      for _, extra in ipairs { { offset = 1 }, { limit = 3 }, { encoding = "text" } } do
        local args = { path = "a.txt", tail = 1 }
        for k, v in pairs(extra) do args[k] = v end
        local r, msg, code = read(args)
        assert.is_nil(r)
        assert.equal("INVALID_ARGUMENT", code, msg)
      end
      local r, _, code = read { path = "a.txt", tail = 0 }
      assert.is_nil(r)
      assert.equal("INVALID_ARGUMENT", code)
    end)

    it("refuses a binary tail, cuts long lines, and caps the output from the front", function()
      H.write(dir, "b.bin", "text\n\0\1\2\n")
      local _, _, code = read { path = "b.bin", tail = 1 }
      assert.equal("BINARY", code)
      H.write(dir, "long.txt", "short\n" .. ("w"):rep(5000) .. "\n")
      local r = assert(read { path = "long.txt", tail = 1 })
      assert.matches("^w+ %[%.%.%. line truncated: 2000 of 5000 bytes shown%]\n$", r.content)
      assert.equal(1, r.cut_lines)
      local rows = {}
      for i = 1, 2000 do rows[i] = ("row %04d %s"):format(i, ("q"):rep(40)) end
      H.write(dir, "rows.txt", table.concat(rows, "\n") .. "\n")
      open { max_result_bytes = "4KiB" }
      local c = assert(read { path = "rows.txt", tail = 1000 })
      assert.is_true(c.truncated)
      assert.is_true(#c.content <= 4096)
      assert.equal(table.concat(rows, "\n", 2000 - c.tail_lines + 1, 2000) .. "\n", c.content)
      assert.matches("the last %d+ lines shown", (ws:render("read_file", c)))
    end)

    it("reads the end of a huge file (mapped) without the rest", function()
      local big = {}
      for i = 1, 300000 do big[i] = ("%07d"):format(i) end
      H.write(dir, "huge.txt", table.concat(big, "\n") .. "\n")
      local r = assert(read { path = "huge.txt", tail = 3 })
      assert.equal("0299998\n0299999\n0300000\n", r.content)
      assert.equal(2400000, r.size)
    end)
  end)

  describe("size, lines and tokens", function()
    it("a whole small file: its bytes, lines and tokens; the page is all of it", function()
      H.write(dir, "a.txt", "alpha\nbeta\ngamma\n") -- 17 bytes
      local r = assert(read { path = "a.txt" })
      assert.same({ 17, 3, 5 }, { r.size, r.total_lines, r.tokens_estimate })
      assert.same({ #r.content, (#r.content + 3) // 4 }, { r.page_bytes, r.page_tokens })
      assert.is_nil(r.remaining_bytes)
      assert.is_nil(r.remaining_tokens)
      assert.is_nil(r.remaining_lines)
    end)

    it("a capped page says what it cost and what remains, exactly", function()
      local t = {}
      for i = 1, 3000 do t[i] = ("line %04d of the file"):format(i) end -- 21 bytes + newline
      local text = table.concat(t, "\n") .. "\n"
      H.write(dir, "p.txt", text)
      open { max_result_bytes = 10000 }
      local r = assert(read { path = "p.txt", offset = 11 })
      assert.is_true(r.truncated)
      assert.same({ #text, 3000, (#text + 3) // 4 }, { r.size, r.total_lines, r.tokens_estimate })
      assert.same({ #r.content, (#r.content + 3) // 4 }, { r.page_bytes, r.page_tokens })
      local consumed = (r.next_offset - 1) * 22 -- the bytes before line next_offset
      assert.same({ #text - consumed, (#text - consumed + 3) // 4, 3000 - r.next_offset + 1 },
        { r.remaining_bytes, r.remaining_tokens, r.remaining_lines })
      local hint = ws:render("read_file", r)
      assert.matches(("(~%d tokens; %d lines, ~%d tokens remain); call read_file with offset=%d")
        :format(r.page_tokens, r.remaining_lines, r.remaining_tokens, r.next_offset), hint, 1, true)
    end)

    it("a big file (the mapped path) gives the same facts", function()
      local t = {}
      for i = 1, 100000 do t[i] = ("big row %06d"):format(i) end -- 14 bytes + newline
      local text = table.concat(t, "\n") .. "\n"
      H.write(dir, "big.txt", text)
      local r = assert(read { path = "big.txt", offset = 50001, limit = 10 })
      assert.same({ #text, 100000, (#text + 3) // 4 }, { r.size, r.total_lines, r.tokens_estimate })
      assert.same({ 50011, 50000 - 10, (50000 - 10) * 15 }, { r.next_offset, r.remaining_lines, r.remaining_bytes })
    end)

    it("binary read as base64 and an image: tokens as base64 (bytes/3)", function()
      H.write(dir, "b.bin", "\0\1\2\3\4\5\6")
      local r = assert(read { path = "b.bin", encoding = "base64" })
      assert.same({ 7, 3 }, { r.size, r.tokens_estimate })
      H.write(dir, "p.png", "\137PNG\r\n\26\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\8\2\0\0\0")
      r = assert(read { path = "p.png" })
      assert.same({ "image", 29, 10 }, { r.encoding, r.size, r.tokens_estimate })
    end)

    it("another encoding: counted as the UTF-8 text served", function()
      local u = "h\195\169llo\nworld\n" -- 13 bytes of UTF-8
      H.write(dir, "w.txt", "h\233llo\nworld\n")
      local r = assert(read { path = "w.txt", charset = "windows-1252", limit = 1 })
      assert.same({ 12, 2, (#u + 3) // 4 }, { r.size, r.total_lines, r.tokens_estimate })
      assert.same({ 1, 6 }, { r.remaining_lines, r.remaining_bytes })
    end)
  end)

  describe("the cursor", function()
    -- The file's bytes from cursor pages: a row cut by max_line_chars ends
    -- in the marker and goes on in the next row, on the next page.
    local MARK = " %[%.%.%. line truncated: %d+ of %d+ bytes shown%]$"
    local function rebuild(pages)
      local out = {}
      for _, content in ipairs(pages) do
        for row in content:gmatch("([^\n]*)\n") do
          local text = assert(row:match("^%d+\t(.*)$"), row)
          local cut = text:find(MARK)
          out[#out + 1] = cut and text:sub(1, cut - 1) or text .. "\n"
        end
      end
      return table.concat(out)
    end

    local function page_all(args0, max)
      local pages, cursor, n = {}, "1:0", 0
      local whole = args0.text
      repeat
        local args = { cursor = cursor }
        for k, v in pairs(args0) do if k ~= "text" then args[k] = v end end
        local r = assert(read(args))
        pages[#pages + 1] = r.content
        if r.cursor then -- what remains starts where this page's text ends
          assert.same({ #whole - tonumber(r.cursor:match(":(%d+)$")) }, { r.remaining_bytes })
        end
        cursor, n = r.cursor, n + 1
        assert.is_true(n < max, "no progress")
      until not cursor
      return pages, n
    end

    it("reads a file page by page: the pages join into the file exactly, cut lines included", function()
      local t = {}
      for i = 1, 4000 do
        t[i] = i % 97 == 0 and ("\195\169"):rep(300 + i % 50) .. "x" or ("line %d %s"):format(i, ("z"):rep(i % 40))
      end
      local text = table.concat(t, "\n") .. "\n"
      H.write(dir, "f.txt", text)
      open { max_line_chars = 100, max_result_bytes = 3000 }
      local pages, n = page_all({ path = "f.txt", text = text }, 10000)
      assert.is_true(n > 20)
      assert.equal(text, rebuild(pages))
    end)

    it("pages a big (mapped) file and a first line over the cap", function()
      local t = {}
      for i = 1, 90000 do t[i] = ("row %d %s"):format(i, i % 1000 == 0 and ("w"):rep(5000) or "") end
      local text = ("q"):rep(20000) .. "\n" .. table.concat(t, "\n") .. "\n"
      assert.is_true(#text > 1024 * 1024)
      H.write(dir, "big.txt", text)
      open { max_result_bytes = 256 * 1024 }
      local pages = page_all({ path = "big.txt", text = text }, 1000)
      assert.equal(text, rebuild(pages))
      open { max_line_chars = 100000, max_result_bytes = 1000 }
      H.write(dir, "one.txt", ("\195\169"):rep(3000) .. "\nend\n")
      pages = page_all({ path = "one.txt", text = ("\195\169"):rep(3000) .. "\nend\n" }, 100)
      assert.equal(("\195\169"):rep(3000) .. "\nend\n", rebuild(pages))
    end)

    it("a cut line's page gives a cursor inside it and no next_offset; a whole line's gives both", function()
      H.write(dir, "c.txt", "short\n" .. ("a"):rep(30) .. "\nafter\n")
      open { max_line_chars = 10 }
      local r = assert(read { path = "c.txt", cursor = "1:0" })
      assert.same({ 1, 2, "2:16", 2 }, { r.start_line, r.end_line, r.cursor, r.remaining_lines })
      assert.is_nil(r.next_offset)
      assert.matches('line 2 cut at max_line_chars; showing lines 1-2 of 3', ws:render("read_file", r), 1, true)
      assert.matches('call read_file with cursor="2:16" to continue]', ws:render("read_file", r), 1, true)
      r = assert(read { path = "c.txt", cursor = r.cursor })
      assert.equal("2\taaaaaaaaaa [... line truncated: 10 of 20 bytes shown]\n", r.content)
      -- by offset, cut lines are skipped as before: the cursor is the next whole line
      r = assert(read { path = "c.txt", limit = 2 })
      assert.same({ 3, "3:37" }, { r.next_offset, r.cursor })
      assert.matches('offset=3 (or cursor="3:37")', ws:render("read_file", r), 1, true)
    end)

    it("refuses a cursor it could not have given, or with offset or tail", function()
      H.write(dir, "s.txt", "abc\n")
      for _, c in ipairs { "x", "0:0", "1:", "1:99" } do
        local _, msg, code = read { path = "s.txt", cursor = c }
        assert.equal("INVALID_ARGUMENT", code, c .. " " .. tostring(msg))
      end
      assert.equal("INVALID_ARGUMENT", select(3, read { path = "s.txt", cursor = "1:0", offset = 1 }))
      assert.equal("INVALID_ARGUMENT", select(3, read { path = "s.txt", cursor = "1:0", tail = 1 }))
      assert.equal("INVALID_ARGUMENT", select(3, read { path = "s.txt", cursor = "1:0", encoding = "base64" }))
    end)

    it("resumes in a decoded (non-UTF-8) text by its UTF-8 bytes", function()
      H.write(dir, "w.txt", ("caf\233 "):rep(10) .. "\nfin\n")
      open { max_line_chars = 7 }
      local want = ("caf\195\169 "):rep(10) .. "\nfin\n"
      local pages, cursor = {}, "1:0"
      while cursor do
        local r = assert(read { path = "w.txt", charset = "windows-1252", cursor = cursor })
        pages[#pages + 1] = r.content
        cursor = r.cursor
      end
      assert.equal(want, rebuild(pages))
    end)
  end)

  describe("ws:render", function()
    it("gives the text with the resume hint, and a structured part without content", function()
      H.write(dir, "a.txt", "a\nb\nc\nd\n")
      local r = assert(read { path = "a.txt", limit = 2 })
      local text, s = ws:render("read_file", r)
      assert.equal("1\ta\n2\tb\n", text:sub(1, 8))
      assert.matches("offset=3", text, 1, true)
      assert.is_table(s)
      assert.is_nil(s.content)
      assert.equal(r.content_hash, s.content_hash)
      assert.equal(4, s.total_lines)
      assert.equal(1, s.start_line)
      assert.equal(2, s.end_line)
      assert.equal(3, s.next_offset)
      assert.equal("a.txt", s.path)
      assert.equal("lf", s.newline)
    end)

    it("gives the bare text when the whole file was shown", function()
      H.write(dir, "a.txt", "a\nb\n")
      local r = assert(read { path = "a.txt" })
      local text = ws:render("read_file", r)
      assert.equal("1\ta\n2\tb\n", text)
    end)

    it("gives only fields of the output schema in the structured part", function()
      H.write(dir, "a.txt", "a\nb\n")
      local r = assert(read { path = "a.txt" })
      local _, s = ws:render("read_file", r)
      local props = ws:tool("read_file").output_schema.properties
      for k in pairs(s) do
        assert.is_table(props[k], "structured field not in the output schema: " .. k)
      end
    end)
  end)
end)
