-- Encodings widen nothing (issue 13): a charset argument cannot make a
-- binary file editable as text, a conversion that would not give the same
-- bytes back is refused before anything is written, caps hold for a
-- UTF-16 file as for any other, and a denied path stays denied whatever
-- its encoding.

local F = require "security.fixture"
local H = require "helpers"

describe(F.tag("security: charsets"), function()
  local dir, ws

  before_each(function()
    dir = H.tmpdir()
    ws = F.open({{path = dir, mode = "rw"}}, {policies = {"secrets"}})
  end)
  after_each(function() ws:close(); H.cleanup() end)

  it("a binary file stays binary under any charset: nothing written", function()
    local bin = "\0\1\2ELF\0\0" .. ("\255\254"):rep(100) .. "abc\n"
    H.write(dir, "b.bin", bin)
    for _, cs in ipairs { "iso-8859-1", "windows-1252", "utf-8" } do
      local _, _, code = ws:call("edit_file", { path = "b.bin", old_text = "abc", new_text = "xyz", charset = cs })
      assert.equal("BINARY", code, cs)
    end
    assert(H.read(dir, "b.bin") == bin)
  end)

  it("a charset under which the bytes do not come back the same is refused, nothing written", function()
    -- invalid as UTF-16 (a lone surrogate): no lossy decode-encode
    local bytes = "\255\254a\0\0\216b\0\n\0"
    H.write(dir, "s.txt", bytes)
    local _, _, code = ws:call("edit_file", { path = "s.txt", old_text = "b", new_text = "c", charset = "utf-16le" })
    assert.equal("INVALID_ARGUMENT", code)
    assert(H.read(dir, "s.txt") == bytes)
    -- Shift-JIS bytes claimed to be EUC-JP: refused, not rewritten
    local sj = H.sh("printf '\\x93\\xfa\\x96\\x7b\\x8c\\xea\\n'")
    H.write(dir, "j.txt", sj)
    _, _, code = ws:call("edit_file", { path = "j.txt", old_text = "x", new_text = "y", charset = "euc-jp" })
    assert.is_truthy(code)
    assert(H.read(dir, "j.txt") == sj)
  end)

  it("a UTF-16 file over max_file_size is TOO_LARGE like any file", function()
    local small = F.open({{path = dir, mode = "rw"}},
      {caps = {max_result_bytes = 262144, max_entries = 1000, max_file_size = 4096}})
    H.write(dir, "big16.txt", "\255\254" .. ("a\0"):rep(4096))
    local _, _, code = small:call("read_file", { path = "big16.txt" })
    assert.equal("TOO_LARGE", code)
    _, _, code = small:call("edit_file", { path = "big16.txt", old_text = "a", new_text = "b", replace_all = true })
    assert.equal("TOO_LARGE", code)
    small:close()
  end)

  it("grep over decoded text keeps the policy's rules and the size cap", function()
    H.write(dir, ".env", "\255\254" .. ("S\0E\0C\0R\0E\0T\0=\0x\0\n\0"))
    H.write(dir, "ok16.txt", "\255\254" .. ("S\0E\0C\0R\0E\0T\0\n\0"))
    local r = assert(ws:call("grep", { pattern = "SECRET", path = ".", include_hidden = true }))
    assert.equal(1, #r.matches)
    assert.equal("ok16.txt", r.matches[1].path)
    local small = F.open({{path = dir, mode = "rw"}},
      {caps = {max_result_bytes = 262144, max_entries = 1000, max_file_size = 4096}})
    H.write(dir, "big16.txt", "\255\254" .. ("S\0E\0C\0R\0E\0T\0\n\0"):rep(400))
    r = assert(small:call("grep", { pattern = "SECRET", path = "." }))
    for _, m in ipairs(r.matches) do assert.is_not.equal("big16.txt", m.path) end
    assert.equal(1, r.skipped_size_count)
    small:close()
  end)

  it("a denied path stays denied in any encoding", function()
    H.write(dir, ".env", "\255\254S\0=\0x\0\n\0")
    for _, tool in ipairs { "read_file", "edit_file" } do
      local args = { path = ".env", charset = "utf-16le" }
      if tool == "edit_file" then args.old_text, args.new_text = "x", "y" end
      local _, _, code = ws:call(tool, args)
      assert.equal("POLICY_DENIED", code, tool)
    end
  end)

  -- The operator's fallback list (config charsets:) is chosen on the
  -- first 64 KiB: a file that fits a listed charset there and not after
  -- cannot be read, searched or edited into other bytes than its own.
  it("a fallback charset the file leaves later: read refuses, edit writes nothing, grep sees the bytes", function()
    local lws = F.open({{path = dir, mode = "rw"}}, {policies = {"secrets"}, charsets = {"utf-8", "windows-1252"}})
    -- a short Latin-1 head, 64 KiB of ASCII, then 0x81 (undefined in windows-1252)
    local bytes = "caf\233 au lait\n" .. ("x"):rep(70000) .. "\nneedle \129\n"
    H.write(dir, "late.txt", bytes)
    local _, msg, code = lws:call("read_file", { path = "late.txt" })
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("not valid windows-1252", msg, 1, true)
    _, _, code = lws:call("edit_file", { path = "late.txt", old_text = "lait", new_text = "miel" })
    assert.is_truthy(code)
    assert(H.read(dir, "late.txt") == bytes)
    local g = assert(lws:call("grep", { pattern = "needle", path = "." }))
    assert.equal(1, #g.matches)
    assert.equal(3, g.matches[1].line)
    -- a denied file stays denied however the list reads it
    H.write(dir, ".env", "TOKEN=caf\233\n")
    _, _, code = lws:call("read_file", { path = ".env" })
    assert.equal("POLICY_DENIED", code)
    lws:close()
  end)
end)
