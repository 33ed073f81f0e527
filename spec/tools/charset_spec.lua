-- Files in other encodings than UTF-8 (issue 13): read_file detects the
-- encoding (BOM, UTF-16 by its NULs, UTF-8 validity, then libuchardet) and
-- serves UTF-8 with `charset`; edit_file edits the UTF-8 text and writes
-- back in the file's encoding, BOM and newlines kept: the bytes on disk
-- equal the expected file exactly. Fixtures are made with iconv(1).

local H = require "helpers"

local function iconv(text, to)
  local tmp = os.tmpname()
  local f = assert(io.open(tmp, "wb")); f:write(text); f:close()
  local out = H.sh(("iconv -f UTF-8 -t %s %s"):format(to, H.q(tmp)))
  os.remove(tmp)
  return out
end

local JA = "これは日本語のテキストです。\n文字コードの検出を試します。\n東京都の天気は晴れです。\n"
local JA2 = JA:gsub("晴れ", "雨")
local CASES = {
  -- name, iconv name, BOM bytes, text, old, new, the charset read_file must say
  { "UTF-16LE with BOM", "UTF-16LE", "\255\254", "Windows Registry Editor Version 5.00\r\n\r\n[HKEY_CURRENT_USER\\Software\\x]\r\n\"Name\"=\"value\"\r\n", "\"value\"", "\"new\"", "utf-16le" },
  { "UTF-16BE with BOM", "UTF-16BE", "\254\255", "hello\nworld\n", "world", "there", "utf-16be" },
  { "UTF-16LE without BOM", "UTF-16LE", "", "plain ascii text\nsecond line\n", "second", "2nd", "utf-16le" },
  { "UTF-16BE without BOM", "UTF-16BE", "", "plain ascii text\nsecond line\n", "second", "2nd", "utf-16be" },
  { "UTF-32LE with BOM", "UTF-32LE", "\255\254\0\0", "a\nb\nc\n", "b", "B", "utf-32le" },
  { "Shift-JIS", "SHIFT_JIS", "", JA, "晴れ", "雨", "shift_jis" },
  { "EUC-JP", "EUC-JP", "", JA, "晴れ", "雨", "euc-jp" },
  { "GBK", "GBK", "", "这是一个中文文本文件，用于测试字符编码的检测。\n北京今天的天气很好。\n", "很好", "不错", nil },
  { "Big5", "BIG5", "", "這是一個中文文本文件，用於測試字符編碼的檢測。\n台北今天的天氣很好。\n", "很好", "不錯", "big5" },
  { "Windows-1252", "WINDOWS-1252", "", "Le café coûte 3 € à Paris, où l’on mange une crème brûlée.\nÇa va très bien.\n", "très", "fort", nil },
  { "ISO-8859-1", "ISO-8859-1", "", "Der Bär läuft über die Straße.\nGrüße aus München.\n", "Grüße", "Grüsse", nil },
  { "KOI8-R", "KOI8-R", "", "Съешь же ещё этих мягких французских булок, да выпей чаю.\nПривет, мир.\n", "мир", "всем", "koi8-r" },
  -- short texts: too few non-ASCII bytes for the detector's statistics
  -- (it said IBM852: "Ăr°sk°bing, Gr÷▀e"); burrow's second opinion reads
  -- them as the letters they are
  { "three short Latin-1 lines", "ISO-8859-1", "", "Ærøskøbing\nGröße\nseñor\n", "Größe", "Grösse", "windows-1252" },
  -- the detector says windows-1258 (the same characters at those bytes):
  -- a short text read alike by the guess and the fallback is the fallback's
  { "Windows-1252 smart quotes", "WINDOWS-1252", "", "He said “yes” – twice\n", "twice", "once", "windows-1252" },
  { "short Windows-1251", "WINDOWS-1251", "", "Привет, мир!\n", "мир", "всем", nil },
}

describe(H.tag("charsets"), function()
  local ws, dir
  before_each(function() dir = H.tmpdir(); ws = H.open(dir) end)
  after_each(function() ws:close(); H.cleanup() end)

  for _, c in ipairs(CASES) do
    local name, enc, bom, text, old, new, says = table.unpack(c)
    it(name .. ": read as UTF-8, edit one line, the bytes on disk are the expected file's", function()
      local bytes = bom .. iconv(text, enc)
      H.write(dir, "f.txt", bytes)
      local r = assert(ws:call("read_file", { path = "f.txt" }))
      if says then assert.equal(says, r.charset) end
      assert.is_not.equal("utf-8", r.charset)
      local lines = {}
      for l in text:gmatch("[^\n]*\n") do lines[#lines + 1] = l:gsub("\r?\n$", "") end
      assert.matches("1\t" .. lines[1], r.content, 1, true)
      assert.equal(bom ~= "", r.bom)
      -- grep finds a word of the decoded text and reports its line as UTF-8
      local g = assert(ws:call("grep", { pattern = old, path = "." }))
      assert.equal(1, #g.matches, name .. ": grep")
      assert.equal("f.txt", g.matches[1].path)
      local want_line
      for i, l in ipairs(lines) do if l:find(old, 1, true) and not want_line then want_line = i end end
      assert.equal(want_line, g.matches[1].line)
      assert.equal(lines[want_line], g.matches[1].text)
      local e = assert(ws:call("edit_file", { path = "f.txt", old_text = old, new_text = new }))
      assert.equal(r.charset, e.charset)
      local want = bom .. iconv((text:gsub(old, new, 1)), enc)
      assert(H.read(dir, "f.txt") == want, name .. ": bytes differ from the expected file")
      assert.equal(r.content_hash, e.previous_content_hash) -- hashes are of the bytes on disk
    end)
  end

  it("a character the encoding cannot hold is INVALID_ARGUMENT naming it and its line; nothing written", function()
    local bytes = iconv("Grüße\naus München\n", "ISO-8859-1")
    H.write(dir, "l.txt", bytes)
    local _, msg, code = ws:call("edit_file", { path = "l.txt", old_text = "München", new_text = "東京", charset = "iso-8859-1" })
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches('line 2: the character "東" (U+6771) cannot be written in iso-8859-1', msg, 1, true)
    assert(H.read(dir, "l.txt") == bytes)
  end)

  it("write_file keeps the file's encoding and BOM, names another with charset, refuses what it cannot hold", function()
    H.write(dir, "r.reg", "\255\254" .. iconv("old\r\n", "UTF-16LE"))
    local w = assert(ws:call("write_file", { path = "r.reg", content = "new\r\nlines\r\n" }))
    assert(H.read(dir, "r.reg") == "\255\254" .. iconv("new\r\nlines\r\n", "UTF-16LE"))
    assert.equal(w.content_hash, assert(ws:call("read_file", { path = "r.reg" })).content_hash)
    assert(ws:call("write_file", { path = "new.txt", content = JA, charset = "shift_jis" }))
    assert(H.read(dir, "new.txt") == iconv(JA, "SHIFT_JIS"))
    -- the next write keeps Shift-JIS (detected: a few words would be too few to tell)
    local _, msg, code = ws:call("write_file", { path = "new.txt", content = "日本語\n한국어\n" })
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches('line 2: the character "한" (U+D55C) cannot be written in shift_jis', msg, 1, true)
    assert(H.read(dir, "new.txt") == iconv(JA, "SHIFT_JIS"))
    assert(ws:call("write_file", { path = "new.txt", content = JA2 }))
    assert(H.read(dir, "new.txt") == iconv(JA2, "SHIFT_JIS"))
  end)

  it("grep decodes a large (mapped) UTF-16 file too, lines counted in the decoded text", function()
    local body = ("filler line of text\r\n"):rep(60000) .. "the needle is here\r\n"
    H.write(dir, "big16.txt", "\255\254" .. iconv(body, "UTF-16LE"))
    local g = assert(ws:call("grep", { pattern = "needle", path = "." }))
    assert.equal(1, #g.matches)
    assert.equal(60001, g.matches[1].line)
    assert.equal("the needle is here", g.matches[1].text)
  end)

  it("insert_lines and append_file go on in the file's encoding", function()
    H.write(dir, "u.txt", "\255\254" .. iconv("one\r\ntwo\r\n", "UTF-16LE"))
    assert(ws:call("insert_lines", { path = "u.txt", line = 2, content = "één\n" }))
    assert(ws:call("append_file", { path = "u.txt", content = "three\r\n" }))
    assert(H.read(dir, "u.txt") == "\255\254" .. iconv("one\r\néén\r\ntwo\r\nthree\r\n", "UTF-16LE"))
    H.write(dir, "j.txt", iconv(JA, "EUC-JP"))
    assert(ws:call("append_file", { path = "j.txt", content = "追加\n" }))
    assert(H.read(dir, "j.txt") == iconv(JA .. "追加\n", "EUC-JP"))
    local _, msg, code = ws:call("append_file", { path = "j.txt", content = "\u{1F600}\n" })
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("cannot be written in euc-jp", msg, 1, true)
  end)

  it("charset overrides detection on read and edit", function()
    local bytes = iconv("Ελληνικά\n", "ISO-8859-7")
    H.write(dir, "g.txt", bytes)
    local r = assert(ws:call("read_file", { path = "g.txt", charset = "iso-8859-7" }))
    assert.equal("iso-8859-7", r.charset)
    assert.matches("1\tΕλληνικά", r.content, 1, true)
    assert(ws:call("edit_file", { path = "g.txt", old_text = "Ελληνικά", new_text = "Ελλάδα", charset = "iso-8859-7" }))
    assert(H.read(dir, "g.txt") == iconv("Ελλάδα\n", "ISO-8859-7"))
    local _, _, code = ws:call("read_file", { path = "g.txt", charset = "no-such-charset" })
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("UTF-8 files are untouched: charset utf-8, the same bytes", function()
    H.write(dir, "u.txt", "naïve\n")
    local r = assert(ws:call("read_file", { path = "u.txt" }))
    assert.equal("utf-8", r.charset)
    -- UTF-8 with a stray byte stays UTF-8 (not a legacy encoding's mojibake), edited as bytes
    H.write(dir, "s.txt", "héllo wörld café\nbad \255 byte\n")
    r = assert(ws:call("read_file", { path = "s.txt" }))
    assert.equal("utf-8", r.charset)
    assert(ws:call("edit_file", { path = "s.txt", old_text = "café", new_text = "thé" }))
    assert(H.read(dir, "s.txt") == "héllo wörld thé\nbad \255 byte\n")
  end)

  -- libuchardet is opened on demand (dynlib.c): a machine without it at run
  -- time still serves every file; text that is not UTF-8 is read as when
  -- the detector has no answer (the fallback list: windows-1252 unless the
  -- operator says otherwise, else its bytes), and stderr says why, once.
  it("without libuchardet at run time: UTF-8 served, other text in the fallback charset, one line on stderr", function()
    local shim = H.BURROW:match("^(.*)/[^/]*$") .. "/faults.so"
    if not H.exists(shim) then
      shim = dir .. "/faults.so"
      H.sh("cc -O2 -shared -fPIC -o " .. H.q(shim) .. " " .. H.q(H.REPO .. "/host/test/faults.c") .. " -ldl")
    end
    H.write(dir, "l.txt", iconv("Der Bär läuft über die Straße.\nGrüße aus München.\n", "ISO-8859-1"))
    H.write(dir, "u.txt", "naïve\n")
    local function call(env, path, extra)
      local err = dir .. "/stderr"
      local out, _, code = H.run(("%s %s call read_file %s --root %s %s 2> %s"):format(env, H.q(H.BURROW),
        H.q(H.json.encode({ path = path })), H.q(dir), extra or "", H.q(err)))
      return out, H.read(dir, "stderr") or "", code
    end
    local out, err, code = call("", "l.txt")
    assert.equal(0, code, err)
    -- two short lines ISO-8859-1 and windows-1252 read alike: the fallback's name
    assert.equal("windows-1252", H.json.decode(out).charset)
    assert.equal("", err)
    local gone = "LD_PRELOAD=" .. H.q(shim) .. " BURROW_FAULT_DLOPEN=libuchardet.so.0"
    out, err, code = call(gone, "u.txt")
    assert.equal(0, code, err)
    assert.equal("1\tnaïve\n", H.json.decode(out).content)
    assert.equal("", err) -- UTF-8 never asks for the detector
    out, err, code = call(gone, "l.txt")
    assert.equal(0, code, err)
    local r = H.json.decode(out)
    assert.equal("windows-1252", r.charset)
    assert.matches("1\tDer Bär läuft", r.content, 1, true)
    assert.equal("burrow: cannot load libuchardet.so.0 (Debian: apt-get install libuchardet0): not found;"
      .. " text that is not UTF-8 is read in the first fallback charset that fits, else as its bytes\n", err)
    -- the operator's list without the detector: Polish in ISO-8859-2
    H.write(dir, "pl.txt", iconv("Zażółć gęślą jaźń\n", "ISO-8859-2"))
    H.write(dir, "c.yaml", "charsets: [utf-8, iso-8859-2]\n")
    out, err, code = call(gone, "pl.txt", "--config " .. H.q(dir .. "/c.yaml"))
    assert.equal(0, code, err)
    r = H.json.decode(out)
    assert.equal("iso-8859-2", r.charset)
    assert.equal("1\tZażółć gęślą jaźń\n", r.content)
    -- bytes no fallback defines (0x81 is undefined in windows-1252): as they are
    H.write(dir, "odd.txt", "a \129\129 b\n")
    out, err, code = call(gone, "odd.txt")
    assert.equal(0, code, err)
    assert.equal("utf-8", H.json.decode(out).charset)
  end)

  -- The operator's fallback list (config charsets:, burrow.open's
  -- charsets): a short text the detector cannot tell is read in the first
  -- charset of the list that defines its bytes; every tool that decodes
  -- (read, grep, edit, insert, append, write) and the packs use it alike.
  describe("the charsets list", function()
    local PL = "Zażółć gęślą jaźń\nkoń\n"
    local list = { "utf-8", "ISO-8859-2" }

    it("reads, greps and edits a short ISO-8859-2 file in the list's charset; byte-exact back", function()
      local bytes = iconv(PL, "ISO-8859-2")
      H.write(dir, "pl.txt", bytes)
      -- without the list: windows-1252's reading (the default fallback)
      local r = assert(ws:call("read_file", { path = "pl.txt" }))
      assert.is_not.equal("iso-8859-2", r.charset)
      local pws = H.open { roots = { { path = dir } }, charsets = list }
      r = assert(pws:call("read_file", { path = "pl.txt" }))
      assert.equal("iso-8859-2", r.charset)
      assert.equal("1\tZażółć gęślą jaźń\n2\tkoń\n", r.content)
      local g = assert(pws:call("grep", { pattern = "gęślą", path = "." }))
      assert.equal(1, #g.matches)
      assert.equal("Zażółć gęślą jaźń", g.matches[1].text)
      local e = assert(pws:call("edit_file", { path = "pl.txt", old_text = "koń", new_text = "źrebię" }))
      assert.equal("iso-8859-2", e.charset)
      assert(H.read(dir, "pl.txt") == iconv("Zażółć gęślą jaźń\nźrebię\n", "ISO-8859-2"))
      assert(pws:call("insert_lines", { path = "pl.txt", line = 1, content = "żółw\n" }))
      assert(pws:call("append_file", { path = "pl.txt", content = "łąka\n" }))
      assert(H.read(dir, "pl.txt") == iconv("żółw\nZażółć gęślą jaźń\nźrebię\nłąka\n", "ISO-8859-2"))
      assert(pws:call("write_file", { path = "pl.txt", content = "ćma\n" }))
      assert(H.read(dir, "pl.txt") == iconv("ćma\n", "ISO-8859-2"))
      pws:close()
    end)

    it("the first charset that defines every byte wins; a trusted long guess stands", function()
      -- 0x81 is undefined in windows-1252; koi8-r defines every byte, so
      -- the list's second takes it
      H.write(dir, "k.txt", "abc \129\130 def\n")
      assert.equal("utf-8", assert(ws:call("read_file", { path = "k.txt" })).charset) -- the default: none fits
      local pws = H.open { roots = { { path = dir } }, charsets = { "windows-1252", "koi8-r" } }
      local r = assert(pws:call("read_file", { path = "k.txt" }))
      assert.equal("koi8-r", r.charset)
      -- a long KOI8-R text: the detector's statistics are trusted over the list
      local ru = ("Съешь же ещё этих мягких французских булок, да выпей чаю.\n"):rep(4)
      H.write(dir, "ru.txt", iconv(ru, "KOI8-R"))
      local lws = H.open { roots = { { path = dir } }, charsets = { "iso-8859-2" } }
      assert.equal("koi8-r", assert(lws:call("read_file", { path = "ru.txt" })).charset)
      pws:close()
      lws:close()
    end)

    it("a pack decodes with the list as native tools do (mcp_filesystem read_text_file, edit_file)", function()
      H.write(dir, "pl.txt", iconv(PL, "ISO-8859-2"))
      local pws = H.open { roots = { { path = dir } }, charsets = list, pack = "mcp_filesystem" }
      local r = assert(pws:call("read_text_file", { path = dir .. "/pl.txt" }))
      assert.matches("Zażółć gęślą jaźń", H.json.encode(r), 1, true)
      assert(pws:call("edit_file", { path = dir .. "/pl.txt", edits = { { oldText = "koń", newText = "kot" } } }))
      assert(H.read(dir, "pl.txt") == iconv("Zażółć gęślą jaźń\nkot\n", "ISO-8859-2"))
      pws:close()
      -- codex apply_patch patches the decoded text and writes it back so
      local cws = H.open { roots = { { path = dir } }, charsets = list, pack = "codex" }
      local M = cws:mounts()[1].mount
      assert(cws:call("apply_patch", { input = "*** Begin Patch\n*** Update File: " .. M .. "/pl.txt\n@@\n-kot\n+żuk\n*** End Patch\n" }))
      assert(H.read(dir, "pl.txt") == iconv("Zażółć gęślą jaźń\nżuk\n", "ISO-8859-2"))
      cws:close()
    end)

    it("burrow.open refuses a list it cannot use, saying what to write", function()
      local bad = {
        { {}, "at least one charset" },
        { "windows-1252", "at least one charset" },
        { { "utf-8", "no-such-charset" }, "charsets[2]: no-such-charset is not a charset this system knows" },
        { { "utf-16le" }, "charsets[1]: utf-16le cannot be a fallback: it does not read ASCII as ASCII" },
        { { "utf-8", 5 }, "charsets[2] must be a charset's name, not number" },
        { { "x y" }, "charsets[1] must be a charset's name" },
        { { "a", "b", "c", "d", "e", "f", "g", "h", "i" }, "charsets lists 9 charsets; at most 8" },
      }
      for _, b in ipairs(bad) do
        local ws2, msg, code = require("burrow").open { roots = { { path = dir } }, charsets = b[1] }
        assert.is_nil(ws2)
        assert.equal("INVALID_ARGUMENT", code)
        assert.matches(b[2], msg, 1, true)
      end
    end)
  end)
end)
