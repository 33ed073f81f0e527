-- read_file over `burrow mcp`: the text is numbered and JSON-escaped in one
-- C pass (a json.fragment, spliced into the reply) instead of a Lua string
-- escaped again by the encoder. The reply must be byte for byte what the
-- string path gives: each raw stdout line is compared with the same call
-- rendered in process (mcp.new without its stdio loop: the string path).

local H = require "helpers"
local json = H.json
local mcp = require "burrow.mcp"

local long = ("x"):rep(5000)
local FILES = {
  ["ctl.txt"] = "a\tb\1c\127d\27[0m\r\n\"q\"\\back\\\n\0after nul? no\n", -- NUL past the probe is text
  ["utf8.txt"] = "ok \195\169 \226\130\172 \240\159\152\128\n\255\254 bad\n\237\160\128 surrogate\nends in a cut \226\130\n\192\175 overlong\n",
  ["crlf.txt"] = "one\r\ntwo\r\n\r\nthree\r\n",
  ["mixed.txt"] = "a\r\nb\nc\r\nno final newline",
  ["bom.txt"] = "\239\187\191first\r\nsecond\n",
  ["long.txt"] = long .. "\n" .. ("\195\169"):rep(3000) .. "\r\n" .. ("ab\1"):rep(1000) .. "\ny\n",
  ["empty.txt"] = "",
  ["lines.txt"] = (function()
    local t = {}
    for i = 1, 5000 do t[i] = ("line %d\tof \"lines\" \195\169\n"):format(i) end
    return table.concat(t)
  end)(),
}
FILES["ctl.txt"] = FILES["ctl.txt"]:gsub("%z", "0") -- keep it text (no NUL in the probe)

local CALLS = {
  {}, { limit = 1 }, { offset = 2 }, { offset = 2, limit = 2 }, { offset = 100000 }, { limit = 4000 },
  { cursor = "1:0" }, { cursor = "1:0", limit = 2 }, { cursor = "1:3" }, -- bw_lines_at, on both paths
}

-- Replies of one `burrow mcp` process to read_file calls, raw lines by id.
local function serve(dir, calls, caps)
  local list = {}
  for i, a in ipairs(calls) do list[i] = { "read_file", a } end
  return H.mcp_calls(dir, list, { caps = caps })
end

local function check(dir, caps, calls)
  local got = serve(dir, calls, caps)
  local ws = H.open(dir, caps)
  local server = mcp.new(ws) -- no stdio loop: the string path
  for i, a in ipairs(calls) do
    local res, msg, code, details = ws:call("read_file", a)
    local want = json.encode { jsonrpc = "2.0", id = 100 + i, result = server:tool_result("read_file", res, msg, code, details) }
    assert.equal(want, got[100 + i], "read_file " .. json.encode(a))
    if res and res.content_hash then -- the validator rides beside the spliced text
      assert.equal(res.content_hash, json.decode(got[100 + i]).result._meta["burrow/sha256"])
    end
  end
  ws:close()
end

describe(H.tag("read_file over MCP: one-pass JSON text"), function()
  local dir
  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, FILES)
  end)
  after_each(function() H.cleanup() end)

  local function calls_for(names)
    local calls = {}
    for _, name in ipairs(names) do
      for _, c in ipairs(CALLS) do
        local a = { path = name }
        for k, v in pairs(c) do a[k] = v end
        calls[#calls + 1] = a
      end
    end
    return calls
  end
  local names = {}
  for name in pairs(FILES) do names[#names + 1] = name end
  table.sort(names)

  it("gives the string path's bytes: tabs, controls, bad UTF-8, CRLF, BOM, long lines", function()
    check(dir, nil, calls_for(names))
  end)

  it("gives them with lines cut at max_line_chars and a small result cap", function()
    check(dir, { max_line_chars = 7, max_result_bytes = 1000 }, calls_for(names))
  end)

  it("gives them when the first line alone is over the cap", function()
    H.write(dir, "one.txt", ("\195\169\1"):rep(3000) .. "\n")
    check(dir, { max_line_chars = 100000, max_result_bytes = 1000 }, calls_for { "one.txt" })
  end)

  it("gives them for a text over 1 MiB (spliced, hint in its own block)", function()
    local t = {}
    for i = 1, 40000 do t[i] = ("row %d\t\"%s\"\1\195\169\n"):format(i, ("z"):rep(i % 50)) end
    H.write(dir, "big.txt", table.concat(t))
    check(dir, { max_result_bytes = 8 * 1024 * 1024 }, calls_for { "big.txt" })
    check(dir, { max_result_bytes = 2 * 1024 * 1024 }, { { path = "big.txt", limit = 1000000 } })
  end)

  it("gives them for a stale validator, and a matching one is not modified", function()
    local calls = {}
    for _, name in ipairs(names) do
      local hash = H.sha256_of(FILES[name])
      calls[#calls + 1] = { path = name, if_none_match = "sha256:00" }
      calls[#calls + 1] = { path = name, if_none_match = hash, limit = 2 }
    end
    check(dir, nil, calls)
    local got = serve(dir, { { path = "lines.txt", if_none_match = H.sha256_of(FILES["lines.txt"]) } }, nil)
    local r = json.decode(got[101]).result
    assert.is_true(r.structuredContent.not_modified)
    assert.is_true(r._meta["burrow/not_modified"])
    assert.is_nil(got[101]:find("line 1", 1, true))
  end)

  it("a pack's read (ctx:call) still gets a string", function()
    local got = serve(dir, { { path = "lines.txt" } }, nil)
    assert.truthy(got[101]:find('"1\\tline 1\\tof \\"lines\\" é\\n', 1, true))
    local ws = H.open(dir)
    local r = assert(ws:call("read_file", { path = "lines.txt" }))
    assert.equal("string", type(r.content))
    ws:close()
  end)
end)

-- The page is data until it leaves (burrow.toolkit.printer): ws:run
-- gives the held page (lpage.c), each edge prints it, and every form is
-- the page ws:call gives as a string.
describe(H.tag("read_file's page, printed at the edge"), function()
  local printer = require "burrow.toolkit.printer"
  local dir
  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, FILES)
  end)
  after_each(function() H.cleanup() end)

  local PAGES = {
    { path = "lines.txt" }, { path = "lines.txt", offset = 4000, limit = 3 }, { path = "long.txt" },
    { path = "utf8.txt", cursor = "2:3" }, { path = "empty.txt" }, { path = "bom.txt" },
  }
  local CAPS = { max_line_chars = 7, max_result_bytes = 1000 }

  it("ws:run holds it; printer.tables makes it ws:call's string; closed once printed", function()
    local ws = H.open(dir, CAPS)
    for _, a in ipairs(PAGES) do
      local want = assert(ws:call("read_file", a))
      local res = assert(ws:run("read_file", a))
      assert.is_true(printer.held(res.content), json.encode(a))
      assert.equal(want.page_bytes, #res.content)
      local page = res.content
      local got = printer.tables(res)
      assert.equal("string", type(got.content))
      assert.equal(json.encode(want), json.encode(got), json.encode(a))
      assert.has_error(function() page:tables() end) -- printed: the file is closed
    end
    ws:close()
  end)

  it("printer.wire gives the bytes of the string (burrow call), tagged pages are strings", function()
    local ws = H.open(dir, CAPS)
    for _, a in ipairs(PAGES) do
      local want = json.encode(assert(ws:call("read_file", a)))
      local res = assert(ws:run("read_file", a))
      assert.equal(want, json.encode(printer.wire(res)), json.encode(a))
      printer.done(res)
      local out, _, code = H.burrow_cmd { "call", "read_file", json.encode(a), "--root", dir,
        "--cap", "max_line_chars=7", "--cap", "max_result_bytes=1000" }
      assert.equal(0, code)
      assert.equal(want .. "\n", out)
    end
    ws:close()
    local tagged = H.open(dir, { untrusted_boundary = true })
    local res = assert(tagged:run("read_file", { path = "lines.txt", limit = 2 }))
    assert.equal("string", type(res.content))
    assert.truthy(res.content:find("untrusted", 1, true))
    tagged:close()
  end)
end)

describe(H.tag("read_file's page, changed before it is printed"), function()
  local printer = require "burrow.toolkit.printer"
  after_each(function() H.cleanup() end)

  -- a file large enough to be mapped (fileio.c), changed in place between
  -- the count (ws:run) and the write (the edge): the text would not be
  -- the page the result describes, so each edge answers EAGAIN instead
  it("each edge fails the call with EAGAIN rather than print text the result does not describe", function()
    local dir = H.tmpdir()
    local rows = {}
    for i = 1, 150000 do rows[i] = ("row %06d\n"):format(i) end
    local text = table.concat(rows)
    H.write(dir, "big.txt", text)
    local ws = H.open(dir, { max_result_bytes = 4096 })
    local server = mcp.new(ws)
    local edges = {
      printer.tables, printer.wire, -- ws:call, a pack's ctx:call, the C API; burrow call
      function(res) -- the MCP server
        local out = server:tool_result("read_file", res)
        if not out.isError then return out end
        return nil, out.content[1].text, out._meta["burrow/code"]
      end,
    }
    for i, print in ipairs(edges) do
      local res = assert(ws:run("read_file", { path = "big.txt" }))
      assert.is_true(printer.held(res.content))
      local f = assert(io.open(dir .. "/big.txt", "r+b")) -- in place: the mapping sees it
      f:write((text:sub(1, 2000):gsub("\n", "x")))
      f:close()
      local out, msg, code = print(res)
      assert.is_nil(out, "edge " .. i)
      assert.equal("EAGAIN", code)
      assert.truthy(msg:find("the file changed while read_file wrote its page; read it again", 1, true), msg)
      if print ~= printer.wire then -- closed (burrow call's edge exits)
        local ok, err = pcall(res.content.tables, res.content)
        assert.is_false(ok)
        assert.truthy(tostring(err):find("used after page:close()", 1, true), tostring(err))
      end
      H.write(dir, "big.txt", text)
      -- unchanged, the same edge prints it
      res = assert(ws:run("read_file", { path = "big.txt" }))
      assert.truthy(print(res))
    end
    ws:close()
  end)
end)

describe(H.tag("json.fragment"), function()
  local S = { "", "plain", "tab\there", "q\"b\\", "\1\31\127", "\255bad\226\130", "é€😀", ("x"):rep(70000) .. "\n" }

  it("encodes as the string it was made from, and concatenates like one", function()
    for _, s in ipairs(S) do
      local f = json.fragment(s)
      assert.equal(json.encode(s), json.encode(f))
      assert.equal(#s, #f)
      assert.equal(json.encode(s .. "[hint]"), json.encode(f .. "[hint]"))
      assert.equal(json.encode("<" .. s), json.encode("<" .. f))
      assert.equal(json.encode { a = { s, 1 } }, json.encode { a = { f, 1 } })
      assert.equal(json.encode(s .. s), json.encode(f .. f))
    end
  end)

  it("other userdata still fail to encode", function()
    assert.has_error(function() json.encode(io.stdout) end)
  end)
end)
