-- Issue 10, "sizes from the core": every write path is charged the bytes
-- the core writes, the same way, whatever tool or pack makes the write.
-- A probe policy records each request's size (and commit flag); quotas
-- must deny the write that would pass the budget and leave the file as it
-- was.

local H = require "helpers"

local function probe_policy(dir)
  H.write(dir, "probe.lua", [[
local seen = {}
return { name = "probe", seen = seen,
  check = function(req)
    if req.operation == "write" and not req.member then
      seen[#seen + 1] = ("%s:%s:%s"):format(req.tool, tostring(req.size), req.commit and "commit" or "call")
    end
    return "allow"
  end,
  after = function(req) return { sizes = table.concat(seen, ",") } end,
}]])
  return dir .. "/probe.lua"
end

-- Open a workspace whose audit sink keeps the probe's records in memory.
local function open_probe(root, extra)
  local pdir = H.tmpdir()
  local opts = { roots = { { path = root } }, policies = { probe_policy(pdir) } }
  for k, v in pairs(extra or {}) do opts[k] = v end
  local ws = H.open(opts)
  local records, shown = {}, 0
  ws.audit = { write = function(_, rec) records[#records + 1] = rec end, close = function() end }
  -- the sizes seen since the last look (the probe keeps them all)
  return ws, function()
    local all = records[#records] and records[#records].sizes or ""
    local new = all:sub(shown + 1):gsub("^,", "")
    shown = #all
    return new
  end
end

describe(H.tag("quotas: the size each write path is charged"), function()
  local root

  before_each(function()
    root = H.tmpdir()
    H.write(root, "a.txt", "one\ntwo\none\none\n")
    H.write(root, "src/x.bin", ("x"):rep(1000))
    H.write(root, "src/y.bin", ("y"):rep(500))
  end)
  after_each(H.cleanup)

  it("edit_file replace_all is charged per replacement, when the core knows the count", function()
    local ws, sizes = open_probe(root)
    assert(ws:call("edit_file", { path = "a.txt", old_text = "one", new_text = "ONE!", replace_all = true }))
    -- asked at the call without a size, then at commit with 3 x 4 bytes
    assert.are.equal("edit_file:nil:call,edit_file:12:commit", sizes())
  end)

  it("write_file, append_file and insert_lines are charged their content; base64 decoded", function()
    local ws, sizes = open_probe(root)
    assert(ws:call("write_file", { path = "w.txt", content = "aGVsbG8=", encoding = "base64" }))
    assert.are.equal("write_file:5:call", sizes())
    assert(ws:call("append_file", { path = "w.txt", content = "12345678" }))
    assert.are.equal("append_file:8:call", sizes())
    assert(ws:call("insert_lines", { path = "w.txt", line = 1, content = "abc\n" }))
    assert.are.equal("insert_lines:4:call", sizes())
  end)

  it("copy is charged the bytes of every file it copies", function()
    local ws, sizes = open_probe(root)
    assert(ws:call("copy", { source = "src", destination = "dst", recursive = true }))
    -- a tree: asked at the call without a size, then, staged, with the
    -- bytes the staged copy holds (what lands)
    assert.are.equal("copy:nil:call,copy:1500:commit", sizes())
    assert(ws:call("copy", { source = "src/x.bin", destination = "one.bin" }))
    assert.are.equal("copy:1000:call", sizes())
  end)

  it("undo_edit is charged the content it restores", function()
    local ws, sizes = open_probe(root)
    assert(ws:call("write_file", { path = "a.txt", content = "short\n" }))
    sizes()
    assert(ws:call("undo_edit", { path = "a.txt" }))
    assert.are.equal("undo_edit:nil:call,undo_edit:16:commit", sizes())
  end)

  it("pack writes go through the native tools and are charged the same way", function()
    local ws, sizes = open_probe(root, { pack = "codex" })
    assert(ws:call("apply_patch", { input = "*** Begin Patch\n*** Add File: p.txt\n+hello\n*** End Patch\n" }))
    -- a patch is one edit_files change: each file it writes told with its bytes
    local seen = sizes()
    assert.truthy(seen:find("edit_files:6:commit", 1, true), seen)
    ws, sizes = open_probe(root, { pack = "claude_code" })
    assert(ws:call("Write", { file_path = root .. "/q.txt", content = "12345" }))
    assert.truthy(sizes():find("write_file:5:call", 1, true))
  end)

  -- Issue 28: the size a policy sees is the bytes that land, whatever the
  -- charset or the notebook's JSON makes of the argument.
  it("a charset other than UTF-8 and a notebook edit are charged the bytes written", function()
    local ws, sizes = open_probe(root)
    local text = ("\u{e9}"):rep(300) -- 300 characters, 600 bytes of UTF-8
    assert(ws:call("write_file", { path = "u32.txt", content = text, charset = "utf-32le" }))
    local size = #H.read(root, "u32.txt")
    assert.are.equal(1200, size)
    -- judged at the call by the content's 600 bytes, then again by the 1,200 written
    assert.are.equal("write_file:600:call,write_file:1200:commit", sizes())
    assert(ws:call("append_file", { path = "u32.txt", content = "ab", charset = "utf-32le" }))
    assert.are.equal(1208, #H.read(root, "u32.txt"))
    assert.are.equal("append_file:2:call,append_file:8:commit", sizes())
    H.write(root, "n.ipynb", '{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n')
    assert(ws:call("notebook_edit", { path = "n.ipynb", new_source = ("x"):rep(1000), edit_mode = "insert", cell_type = "code" }))
    local nb = #H.read(root, "n.ipynb")
    assert.is_true(nb > 1000)
    assert.are.equal(("notebook_edit:nil:call,notebook_edit:%d:commit"):format(nb), sizes())
  end)

  it("a quota refuses a utf-32 write by the bytes it would write", function()
    local pdir = H.tmpdir()
    local qws = H.open({ roots = { { path = root } }, policies = { { name = "quotas", max_bytes_written = 2000 } } })
    local res, _, code = qws:call("write_file", { path = "big32.txt", content = ("a"):rep(900), charset = "utf-32le" })
    assert.is_nil(res)
    assert.are.equal("POLICY_DENIED", code)
    assert.is_false(H.exists(root, "big32.txt"))
    local _ = pdir
  end)
end)

describe(H.tag("quotas: max_bytes_written on every write path"), function()
  local root

  before_each(function()
    root = H.tmpdir()
    H.write(root, "a.txt", "head\n" .. ("one\n"):rep(100))
    H.write(root, "src/x.bin", ("x"):rep(3000))
  end)
  after_each(H.cleanup)

  local function quota_ws(n)
    return H.open({ roots = { { path = root } }, policies = { { name = "quotas", max_bytes_written = n } } })
  end

  local function denied(res, msg, code)
    assert.is_nil(res, "expected a quota refusal")
    assert.are.equal("POLICY_DENIED", code, msg)
    assert.truthy(msg:find("quota", 1, true), msg)
  end

  it("an edit whose replace_all would place more than the budget is refused, file unchanged", function()
    local ws = quota_ws(200)
    -- 100 replacements of 3 bytes: 300 bytes placed, over the 200 left
    denied(ws:call("edit_file", { path = "a.txt", old_text = "one", new_text = "two", replace_all = true }))
    assert.are.equal("head\n" .. ("one\n"):rep(100), H.read(root, "a.txt"))
    -- a single replacement fits
    assert(ws:call("edit_file", { path = "a.txt", old_text = "head\n", new_text = "HEAD\n" }))
  end)

  it("a copy of more than the budget is refused, nothing copied", function()
    local ws = quota_ws(2000)
    denied(ws:call("copy", { source = "src", destination = "dst", recursive = true }))
    assert.is_false(H.exists(root .. "/dst"))
  end)

  it("append_file and insert_lines count against the same budget", function()
    local ws = quota_ws(10)
    assert(ws:call("append_file", { path = "n.txt", content = "123456" }))
    denied(ws:call("insert_lines", { path = "n.txt", line = 1, content = "abcdef\n" }))
    assert.are.equal("123456", H.read(root, "n.txt"))
  end)

  it("malformed base64 is INVALID_ARGUMENT before any policy, and charges nothing", function()
    local ws = quota_ws(10)
    local res, msg, code = ws:call("write_file", { path = "b.bin", content = "QQ=====", encoding = "base64" })
    assert.is_nil(res)
    assert.are.equal("INVALID_ARGUMENT", code, msg)
    assert(ws:call("write_file", { path = "c.txt", content = "1234567890" }))
  end)
end)
