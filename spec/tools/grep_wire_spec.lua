-- grep straight to the wire: over `burrow mcp` (stdio) and `burrow call`,
-- a content search's matches are written as JSON by the core (grepwire.c)
-- and, for MCP, its rendered lines too, instead of Lua tables encoded
-- afterwards. The bytes must be the table path's: each raw reply line of a
-- `burrow mcp` process is compared with the same call made in process
-- through ws:call (the Lua API's edge: tables) and rendered by mcp.new
-- without a stdio loop, and each `burrow call` output with json.encode of
-- the in-process result.

local H = require "helpers"
local json = H.json
local mcp = require "burrow.mcp"

local function lines(n, fmt)
  local t = {}
  for i = 1, n do t[i] = fmt:format(i, i) end
  return table.concat(t)
end

local FILES = {
  ["ctl.txt"] = "a match\tb\1c\127d\27[0m\r\n\"q\" match \\back\\\nno\nmatch at end",
  ["utf8.txt"] = "match \195\169 \226\130\172 \240\159\152\128\n\255\254 match bad\n\237\160\128 match surrogate\nmatch cut \226\130\n\192\175 match overlong\n",
  ["crlf.txt"] = "one match\r\ntwo\r\n\r\nthree match\r\nfour\r\nfive\r\nsix match\r\n",
  ["long.txt"] = ("x"):rep(3000) .. " match\n" .. ("\195\169"):rep(1500) .. "match\r\n" .. ("ab\1"):rep(700) .. "match\ny\n",
  ["ctx.txt"] = lines(40, "line %d %s\n"):gsub("line (%d+) ", function(n)
    n = tonumber(n)
    return (n % 7 == 0 or n == 8 or n == 30) and ("line %d match "):format(n) or nil
  end),
  ["multi.txt"] = "begin match\nmiddle\nend here\nbegin again\nmatch end\n",
  ["sub/q\"uote\\d.txt"] = "match in a quoted name\n",
  ["sub/ctl\1\127name.txt"] = "match in a control name\n",
  ["sub/nl\nname.txt"] = "match in a newline name\n",
  ["sub/bad\255name.txt"] = "match in a bad UTF-8 name\n",
  ["sub/deep/é.txt"] = "match é\n",
  ["bin.dat"] = "match\0binary\n",
  ["bin2.dat"] = "\0",
  ["large.txt"] = lines(60, "match %d of the large file %d\n"),
}

-- the calls: every shape of content result, and the other modes beside
local CALLS = {
  { pattern = "match" },
  { pattern = "match", context = 1 },
  { pattern = "match", context = 3 },
  { pattern = "match", before = 2 },
  { pattern = "match", after = 2 },
  { pattern = "match", path = "ctx.txt", context = 2 },
  { pattern = "match", path = "sub" },
  { pattern = "match", path = "sub/", context = 1 },
  { pattern = "match", path = "crlf.txt" },
  { pattern = "match\\nend|begin match\\n\\w+", multiline = true },
  { pattern = "begin[\\s\\S]*?end", multiline = true, context = 1 },
  { pattern = "MATCH", ignore_case = true, max_results = 7 },
  { pattern = "match", max_results = 1 },
  { pattern = "match", max_results = 25, context = 1 },
  { pattern = "match", max_results = 3, cursor = "5:large.txt" }, -- resumed in the middle of a file
  { pattern = "match", max_results = 4, context = 1, cursor = "8:ctx.txt" },
  { pattern = "\"", literal = true },
  { pattern = "\\\\", context = 1 },
  { pattern = "match", max_file_size = 100 },
  { pattern = "match", include = { "*.txt" }, exclude = { "large.txt" } },
  { pattern = "zzz-no-such-thing" },
  { pattern = "zzz-no-such-thing", max_file_size = 10 },
  { pattern = "match", output_mode = "files" },
  { pattern = "match", output_mode = "count" },
}

local same_bytes = H.same_bytes

-- A search capped by max_results (or the max_matches cap) stops when its first N in path order are
-- found: how many files the workers had searched by then (and their
-- bytes) depends on their timing, one large directory's entries being
-- shared between them. Those two counts are left out of the comparison.
local function coverage_free(text, a, caps)
  if not ((a.max_results or (caps or {}).max_matches) and text) then return text end
  return (text:gsub('"files_searched":%d+', '"files_searched":N'):gsub('"bytes_searched":%d+', '"bytes_searched":N'))
end

-- Replies of one `burrow mcp` process to grep calls, raw lines by id.
local function serve(dir, calls, caps, extra)
  local list = {}
  for i, a in ipairs(calls) do list[i] = { "grep", a } end
  return H.mcp_calls(dir, list, { caps = caps, flags = extra })
end

-- What the MCP server sends for a call made on the table path (its
-- tools_call: the tool result and the skipped_policy _meta).
local function want_reply(ws, server, id, a)
  local hooks = {}
  local res, msg, code, details = ws:call("grep", a, hooks)
  local out = server:tool_result("grep", res, msg, code, details)
  if (hooks.skipped_policy or 0) > 0 then
    out._meta = out._meta or {}
    out._meta["burrow/skipped_policy"] = hooks.skipped_policy
  end
  return json.encode { jsonrpc = "2.0", id = id, result = out }
end

-- opts: ws (burrow.open options beside the root and caps), extra (CLI flags)
local function check(dir, caps, calls, opts)
  opts = opts or {}
  local got = serve(dir, calls, caps, opts.extra)
  local o = { roots = { { path = dir } }, caps = caps }
  for k, v in pairs(opts.ws or {}) do o[k] = v end
  local ws = H.open(o)
  local server = mcp.new(ws) -- no stdio loop: the table path
  local wired = 0
  for i, a in ipairs(calls) do
    local label = "grep " .. json.encode(a) .. " caps " .. json.encode(caps or {})
    same_bytes(coverage_free(want_reply(ws, server, 100 + i, a), a, caps), coverage_free(got[100 + i], a, caps),
      "MCP: " .. label)
    -- the same call as the MCP server runs it (ws:run) holds the core's
    -- match set (content mode); the Lua API's edge gets tables, always
    local r = ws:run("grep", a)
    if r and (a.output_mode or "content") == "content" then
      assert.equal(opts.tables and "table" or "userdata", type(r.matches), label)
      wired = wired + 1
    elseif r then -- files and count: the lists are the core's too
      assert.equal(opts.tables and "table" or "userdata", type(r.files), label)
      assert.equal(opts.tables and "table" or "userdata", type(a.output_mode == "count" and r.counts or r.files), label)
      wired = wired + 1
    end
    local t = ws:call("grep", a)
    assert.equal(t and "table" or "nil", t and type(t.matches) or "nil", label)
    assert.is_nil(t and getmetatable(t), label) -- plain data, as before
    -- `burrow call`: the encoded result
    local res, msg, code, details = ws:call("grep", a)
    local want = json.encode(res or { error = { code = code, message = msg, details = details } }) .. "\n"
    local args = { "call", "grep", json.encode(a), "--root", dir }
    for k, v in pairs(caps or {}) do args[#args + 1] = "--cap"; args[#args + 1] = k .. "=" .. v end
    for _, f in ipairs(opts.cli or {}) do args[#args + 1] = f end
    local out = H.burrow_cmd(args)
    same_bytes(coverage_free(want, a, caps), coverage_free(out, a, caps), "burrow call: " .. label)
  end
  ws:close()
  return wired
end

local policy = H.policy_file

describe(H.tag("grep straight to the wire: the table path's bytes"), function()
  local dir
  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, FILES)
  end)
  after_each(function() H.cleanup() end)

  it("context, multiline, CRLF, bad UTF-8, odd paths, binary and size lists, no match, other modes", function()
    assert.is_true(check(dir, nil, CALLS) >= 18)
  end)

  it("long lines cut with the marker, max_matches, a small max_result_bytes cut", function()
    check(dir, { max_line_chars = 10 }, CALLS)
    check(dir, { max_matches = 5 }, CALLS)
    for _, bytes in ipairs { 1, 200, 700, 2000 } do
      check(dir, { max_result_bytes = bytes }, CALLS)
    end
  end)

  it("files and count lists: cut by max_result_bytes where the tables were (length + 1, + 12)", function()
    for i = 1, 40 do H.write(dir, ("list/n%02d%s.txt"):format(i, ("x"):rep(i % 7)), ("match\n"):rep(i % 3 + 1)) end
    local calls = { { pattern = "match", path = "list", output_mode = "files" },
      { pattern = "match", path = "list", output_mode = "count" } }
    local ws = H.open { roots = { { path = dir } } }
    local all = { files = assert(ws:call("grep", calls[1])).files, count = assert(ws:call("grep", calls[2])).counts }
    ws:close()
    assert.equal(40, #all.files)
    for _, bytes in ipairs { 1, 15, 16, 17, 100, 333, 334, 335, 700, 100000 } do
      check(dir, { max_result_bytes = bytes }, calls)
      local wsc = H.open { roots = { { path = dir } }, caps = { max_result_bytes = bytes } }
      for _, a in ipairs(calls) do
        local list = a.output_mode == "files" and all.files or all.count
        local used, want = 0, 0
        for i, v in ipairs(list) do -- the rule grep.lua's cap_bytes applied to the tables
          used = used + (a.output_mode == "files" and #v + 1 or #v.path + 12)
          if used > bytes and i > 1 then break end
          want = i
        end
        local got = assert(wsc:call("grep", a))
        local shown = a.output_mode == "files" and got.files or got.counts
        assert.equal(want, #shown, a.output_mode .. " at " .. bytes)
        for i = 1, want do assert.same(list[i], shown[i]) end
        assert.equal(want < #list, got.truncated, a.output_mode .. " at " .. bytes)
        assert.equal(a.output_mode == "files" and 40 or nil, a.output_mode == "files" and got.total or nil)
      end
      wsc:close()
    end
  end)

  it("skipped lists past 20 names, and their cap", function()
    for i = 1, 30 do H.write(dir, ("bins/b%02d.bin"):format(i), "match\0") end
    local calls = { { pattern = "match" }, { pattern = "match", context = 1, max_file_size = 50 } }
    check(dir, nil, calls)
    check(dir, { max_entries = 25 }, calls)
  end)

  it("a result over 64 KiB (both fragments spliced into the reply)", function()
    H.write(dir, "many.txt", lines(6000, "match \"%d\"\t\1 of many \195\169 %d\n"))
    local calls = { { pattern = "match", path = "many.txt" }, { pattern = "match", context = 1 },
      { pattern = "of many", max_results = 4000 } }
    check(dir, { max_matches = 100000, max_result_bytes = 8 * 1024 * 1024 }, calls)
    check(dir, { max_matches = 100000, max_result_bytes = 100000 }, calls)
  end)

  it("declared policy rules (the walk skips; still the wire path)", function()
    local file = policy("hide", 'return { name = "hide", rules = { { deny = { "read" }, paths = { "**/large.txt", "sub/**" }, reason = "hidden" } } }\n')
    local calls = { { pattern = "match" }, { pattern = "match", context = 1 } }
    check(dir, nil, calls, { ws = { policies = { file } }, extra = "--config " .. H.q(file .. ".yaml"),
      cli = { "--config", file .. ".yaml" } })
  end)

  it("a policy judging each object keeps the tables, and its bytes", function()
    local file = policy("judge", 'return { name = "judge", check = function(req) if req.path:find("large", 1, true) then return "deny", "hidden" end return "allow" end }\n')
    local calls = { { pattern = "match" }, { pattern = "match", context = 1 } }
    check(dir, nil, calls, { ws = { policies = { file } }, tables = true, extra = "--config " .. H.q(file .. ".yaml"),
      cli = { "--config", file .. ".yaml" } })
  end)
end)

describe(H.tag("json value fragments"), function()
  after_each(H.cleanup)

  it("a grep's matches fragment encodes as the tables do, and refuses to concatenate", function()
    local ws, dir = H.workspace(FILES)
    local a = { pattern = "match", context = 1 }
    local t = assert(ws:call("grep", a))
    local f = assert(ws:run("grep", a)) -- as an edge that prints it gets it
    assert.equal("userdata", type(f.matches))
    assert.equal(json.encode(t.matches), json.encode(f.matches:json()))
    assert.equal(json.encode(t.matches), json.encode(f.matches:tables())) -- the Lua API's form
    assert.equal(#t.matches, #f.matches)
    assert.equal(f.matches:json(), f.matches:json()) -- written once, kept with the set
    assert.has_error(function() return f.matches:json() .. "x" end)
    -- closed once printed (the MCP edge, ws:call): the core's result freed,
    -- what was written kept, nothing more written from it
    local j = f.matches:json()
    f.matches:close()
    assert.equal(j, f.matches:json())
    assert.has_error(function() return f.matches:tables() end)
    assert.has_error(function() return f.matches:text() end)
    assert.truthy(dir)
  end)

  it("json.write (burrow call's output) gives json.encode's bytes and a newline, big fragments spliced", function()
    local out, code = H.lua_child([[
      local json = require("burrow.core").json
      local big = ("x\1\"y\255"):rep(30000)
      for _, v in ipairs { { a = 1, b = { json.fragment(big), json.fragment("s") }, c = big },
                           { json.fragment(big), json.fragment(big), "mid", json.fragment(big) }, "plain", {} } do
        io.stdout:write(json.encode(v), "\n")
        io.stdout:flush()
        assert(json.write(v))
      end
    ]], 30)
    assert.equal(0, code, out)
    local lines = {}
    for l in out:gmatch("([^\n]*)\n") do lines[#lines + 1] = l end
    assert.equal(8, #lines)
    for i = 1, 8, 2 do assert.equal(lines[i], lines[i + 1]) end
  end)
end)

describe(H.tag("one renderer for grep's lines"), function()
  after_each(H.cleanup)

  local core = require "burrow.core"

  it("core.grep_lines writes match tables as the search writes its picks: groups, gaps, context", function()
    assert.equal("a:3:x\n--\na-8-p\na:9:y\na-10-q\na-11-r\n--\nb/c:1:z",
      core.grep_lines { { path = "a", line = 3, text = "x" },
        { path = "a", line = 9, text = "y", before = { "p" }, after = { "q", "r" } },
        { path = "b/c", line = 1, text = "z", before = {}, after = {} } })
    -- lines that run on make one group; without context, never a "--"
    assert.equal("a-1-p\na:2:x\na-3-q\na:4:y", core.grep_lines { { path = "a", line = 2, text = "x", before = { "p" }, after = { "q" } },
      { path = "a", line = 4, text = "y", before = {}, after = {} } })
    assert.equal("a:2:x\nb:9:y", core.grep_lines { { path = "a", line = 2, text = "x" }, { path = "b", line = 9, text = "y" } })
    assert.equal("", core.grep_lines {})
    assert.equal("n\0l:1:t\1\n", core.grep_lines { { path = "n\0l", line = 1, text = "t\1\n" } }) -- bytes as they are
  end)

  it("core.grep_lines refuses what is not a match table, naming which", function()
    for _, bad in ipairs { { 1 }, { { path = "a", line = "x", text = "t" } }, { { path = "a", line = 1 } },
      { { path = "a", line = 1, text = "t", before = { 1 } } }, { { path = "a", line = 1, text = "t", after = "s" } } } do
      local ok, err = pcall(core.grep_lines, bad)
      assert.is_false(ok)
      assert.matches("grep_lines: match 1 ", err)
    end
  end)

  it("the text of a result in tables is the wire text of the same search, byte for byte", function()
    local ws = H.workspace(FILES)
    for _, a in ipairs(CALLS) do
      if (a.output_mode or "content") == "content" then
        local t = assert(ws:call("grep", a))
        local w = assert(ws:run("grep", a))
        local text = ws:render("grep", w) -- with matches, a fragment: escaped for the reply
        assert.equal(w.total > 0 and "userdata" or "string", type(text))
        -- as the reply carries them (invalid UTF-8 is escaped as the encoder does)
        local plain = ws:render("grep", t)
        assert.equal("string", type(plain))
        assert.equal(json.encode { plain }, json.encode { text })
      end
    end
  end)
end)

describe(H.tag("one byte-cost rule for max_result_bytes"), function()
  local core = require "burrow.core"
  after_each(H.cleanup)

  it("a policy judging each object (hiding nothing) cuts where the core's own cut falls, cursor included", function()
    local allow = policy("allow", 'return { name = "allow", check = function() return "allow" end }\n')
    local calls = { { pattern = "match" }, { pattern = "match", context = 1 }, { pattern = "match", context = 3 },
      { pattern = "match", path = "ctx.txt", before = 2 }, { pattern = "match", path = "large.txt", after = 1 } }
    local cuts, dir = 0, H.tmpdir()
    H.write_all(dir, FILES)
    for _, max in ipairs { 40, 300, 1000, 2500, 7000 } do
      local caps = { max_result_bytes = max }
      local plain = H.open({ roots = { { path = dir } } }, caps)
      local judged = H.open({ roots = { { path = dir } }, policies = { allow } }, caps)
      for _, a in ipairs(calls) do
        local p, j = assert(plain:call("grep", a)), assert(judged:call("grep", a))
        local label = json.encode(a) .. " max " .. max
        assert.equal(json.encode(p.matches), json.encode(j.matches), label)
        assert.equal(p.cursor, j.cursor, label)
        assert.equal(p.truncated, j.truncated, label)
        if p.cursor then cuts = cuts + 1 end
      end
    end
    assert.is_true(cuts >= 10, "the budgets cut most of these results")
  end)

  it("core.grep_cut: the first match past the budget, never the very first, nil when all fit", function()
    local m = { { path = "ab", text = "xyz" }, { path = "ab", text = "q", before = { "p" }, after = { "r", "s" } },
      { path = "c", text = "" } }
    -- costs: 2+3+16 = 21; (2+1+16) + (2+1+16) + 2 * (2+1+16) = 76; 1+0+16 = 17
    assert.is_nil(core.grep_cut(m, 114))
    assert.equal(3, core.grep_cut(m, 113))
    assert.equal(3, core.grep_cut(m, 97))
    assert.equal(2, core.grep_cut(m, 96))
    assert.equal(2, core.grep_cut(m, 21))
    assert.equal(2, core.grep_cut(m, 0)) -- the first always stays
    assert.equal(2, core.grep_cut(m, -5))
    assert.is_nil(core.grep_cut({}, 0))
    for _, bad in ipairs { { 1 }, { { path = "a" } }, { { path = "a", text = "t", before = { 1 } } },
      { { path = "a", text = "t", after = "s" } } } do
      local ok, err = pcall(core.grep_cut, bad, 100)
      assert.is_false(ok)
      assert.matches("grep_cut: match 1 ", err)
    end
  end)
end)
