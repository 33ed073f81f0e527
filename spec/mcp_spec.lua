-- The MCP server over stdio: `build/burrow mcp --root DIR` fed a file of
-- JSON-RPC lines, its stdout parsed line by line.

local H = require "helpers"
local json = H.json

-- Run the server on a list of messages (tables are JSON-encoded, strings
-- are sent as raw lines). Returns the decoded replies (in order), a map
-- id -> reply, the raw stdout, stderr and the exit status.
local function serve(dir, messages, extra_args)
  local tmp = H.tmpdir()
  local lines = {}
  for i, m in ipairs(messages) do
    if type(m) == "table" then
      if m.jsonrpc == nil then m.jsonrpc = "2.0" end
      lines[i] = json.encode(m)
    else
      lines[i] = m
    end
  end
  H.write(tmp, "in", table.concat(lines, "\n") .. "\n")
  local args = { "mcp", "--root", dir }
  for _, a in ipairs(extra_args or {}) do args[#args + 1] = a end
  local parts = { H.q(H.BURROW) }
  for _, a in ipairs(args) do parts[#parts + 1] = H.q(a) end
  local cmd = ("timeout 60 %s < %s > %s 2> %s"):format(table.concat(parts, " "),
    H.q(tmp .. "/in"), H.q(tmp .. "/out"), H.q(tmp .. "/err"))
  local _, _, code = H.run(cmd)
  local out = H.read(tmp, "out") or ""
  local replies, by_id = {}, {}
  for line in out:gmatch("[^\n]+") do
    local msg = json.decode(line)
    replies[#replies + 1] = msg or { unparsed = line }
    if type(msg) == "table" and msg.id ~= nil and msg.id ~= json.null then by_id[msg.id] = msg end
  end
  return replies, by_id, out, H.read(tmp, "err") or "", code
end

local function init(id, version)
  return {
    id = id,
    method = "initialize",
    params = {
      protocolVersion = version or "2025-06-18",
      capabilities = {},
      clientInfo = { name = "busted", version = "1.0" },
    },
  }
end

local initialized = { method = "notifications/initialized" }

local function call(id, name, arguments)
  return { id = id, method = "tools/call", params = { name = name, arguments = arguments } }
end

describe(H.tag("burrow mcp"), function()
  local dir

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "notes.txt", "first\nsecond\nthird\n")
  end)

  after_each(H.cleanup)

  describe("initialize", function()
    for _, v in ipairs { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" } do
      it("echoes the supported revision " .. v, function()
        local _, by_id = serve(dir, { init(1, v) })
        assert.is_table(by_id[1], "no reply to initialize")
        assert.equal(v, by_id[1].result.protocolVersion)
      end)
    end

    it("answers an unknown revision with the latest, 2025-11-25", function()
      local _, by_id = serve(dir, { init(1, "2099-01-01") })
      assert.equal("2025-11-25", by_id[1].result.protocolVersion)
    end)

    it("describes the server and its tools capability", function()
      local _, by_id = serve(dir, { init(1) })
      local r = by_id[1].result
      assert.equal("burrow", r.serverInfo.name)
      assert.equal(H.core.version, r.serverInfo.version)
      assert.is_table(r.capabilities.tools)
    end)

    it("replies with jsonrpc 2.0 and the request's id, string ids included", function()
      local _, by_id = serve(dir, { init("init-1") })
      local r = by_id["init-1"]
      assert.is_table(r)
      assert.equal("2.0", r.jsonrpc)
      assert.equal("init-1", r.id)
    end)
  end)

  it("sends no reply to notifications", function()
    local replies = serve(dir, {
      init(1),
      initialized,
      { method = "notifications/cancelled", params = { requestId = 99 } },
      { method = "notifications/whatever" },
      { id = 2, method = "ping" },
    })
    assert.equal(2, #replies)
    assert.equal(1, replies[1].id)
    assert.equal(2, replies[2].id)
  end)

  it("answers ping with an empty result object", function()
    local _, by_id, out = serve(dir, { init(1), initialized, { id = 7, method = "ping" } })
    assert.is_table(by_id[7].result)
    assert.is_nil(next(by_id[7].result))
    assert.matches('"result":{}', out, 1, true)
  end)

  it("answers malformed JSON with -32700 and id null, then keeps serving", function()
    local replies, by_id, out = serve(dir, {
      init(1),
      '{"jsonrpc":"2.0","id":2,"method":"ping"',
      "not json at all",
      { id = 3, method = "ping" },
    })
    assert.equal(4, #replies)
    local parse_errors = 0
    for _, r in ipairs(replies) do
      if r.error and r.error.code == -32700 then
        parse_errors = parse_errors + 1
        assert.equal(json.null, r.id)
      end
    end
    assert.equal(2, parse_errors)
    assert.matches('"id":null', out, 1, true)
    assert.is_table(by_id[3], "no reply after the parse errors")
    assert.is_table(by_id[3].result)
  end)

  describe("JSON-RPC by the book", function()
    -- each raw line, and the error code its reply must carry (id: the
    -- reply's id; null when the request has no usable one)
    local cases = {
      { '"str"', -32600, json.null, "a string" },
      { "42", -32600, json.null, "a number" },
      { "null", -32600, json.null, "null" },
      { "true", -32600, json.null, "a boolean" },
      { '{"jsonrpc":"2.0","id":5}', -32600, 5, "an id but no method" },
      { '{"jsonrpc":"2.0","id":6,"params":{}}', -32600, 6, "params but no method" },
      { '{"jsonrpc":"2.0"}', -32600, json.null, "no id and no method" },
      { '{"id":7,"method":"ping"}', -32600, 7, "no jsonrpc" },
      { '{"jsonrpc":"1.0","id":8,"method":"ping"}', -32600, 8, "jsonrpc 1.0" },
      { '{"jsonrpc":"2.0","id":9,"method":42}', -32600, 9, "a method that is not a string" },
      { '{"jsonrpc":"2.0","id":null,"method":"ping"}', -32600, json.null, "id null" },
      { '{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}', -32600, json.null, "id an object" },
      { '{"jsonrpc":"2.0","id":10,"method":"ping","params":"x"}', -32600, 10, "params a string" },
      { '{"jsonrpc":"2.0","method":"notifications/x","params":3}', -32600, json.null, "a notification with params a number" },
      { '{"jsonrpc":"2.0","id":11,"method":"ping","params":[1]}', -32602, 11, "params an array" },
      { '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"stat","arguments":[1]}}', -32602, 12, "tools/call arguments an array" },
      { '{"jsonrpc":"2.0","id":13,"method":"tools/call","params":{"name":"stat","arguments":"x"}}', -32602, 13, "tools/call arguments a string" },
      { '{"jsonrpc":"2.0","id":14,"method":"tools/list","params":{"cursor":5}}', -32602, 14, "a cursor that is not a string" },
      { '{"jsonrpc":"2.0","id":15,"method":"initialize","params":{}}', -32602, 15, "initialize without protocolVersion" },
      { '{"jsonrpc":"2.0","id":16,"method":"logging/setLevel","params":{"level":"verbose"}}', -32602, 16, "setLevel verbose" },
      { '{"jsonrpc":"2.0","id":17,"method":"logging/setLevel","params":{}}', -32602, 17, "setLevel without a level" },
      { '{"jsonrpc":"2.0","id":18,"method":"sampling/createMessage"}', -32601, 18, "an unknown method" },
      { '{"jsonrpc":"2.0","id":20,"method":"tools_list"}', -32601, 20, "a handler's Lua name, which is no method (tools_list)" },
      { '{"jsonrpc":"2.0","id":21,"method":"logging_setLevel","params":{"level":"info"}}', -32601, 21, "logging_setLevel, no method either" },
      { '{"jsonrpc":"2.0","id":19,"method":"ping"', -32700, json.null, "cut JSON" },
    }
    for _, c in ipairs(cases) do
      it(("answers %s with %d"):format(c[4], c[2]), function()
        local replies = serve(dir, { init(1), initialized, c[1], { id = "after", method = "ping" } })
        assert.equal(3, #replies, "one reply each: " .. json.encode(replies))
        local r = replies[2]
        assert.is_table(r.error, json.encode(r))
        assert.equal(c[2], r.error.code)
        assert.equal(c[3], r.id)
        assert.equal("2.0", r.jsonrpc)
        assert.equal("after", replies[3].id, "the server goes on")
      end)
    end

    it("says nothing to a response it did not wait for (result or error, no method)", function()
      local replies = serve(dir, { init(1), initialized,
        '{"jsonrpc":"2.0","id":"x","result":{}}', '{"jsonrpc":"2.0","id":"y","error":{"code":1,"message":"m"}}',
        { id = 2, method = "ping" } })
      assert.equal(2, #replies)
      assert.equal(2, replies[2].id)
    end)

    it("refuses a batch with -32600 in 2025-06-18, which removed them", function()
      local replies = serve(dir, { init(1, "2025-06-18"), initialized, '[{"jsonrpc":"2.0","id":2,"method":"ping"}]' })
      assert.equal(2, #replies)
      assert.equal(-32600, replies[2].error.code)
      assert.equal(json.null, replies[2].id)
    end)

    it("answers a batch with one array in 2025-03-26; [] is -32600; notifications get nothing", function()
      local replies = serve(dir, { init(1, "2025-03-26"), initialized,
        '[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},'
          .. '{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"stat","arguments":{"path":"notes.txt"}}},42]',
        "[]",
        '[{"jsonrpc":"2.0","method":"notifications/x"}]',
        { id = 4, method = "ping" } })
      assert.equal(4, #replies, json.encode(replies))
      local batch = replies[2]
      assert.equal(json.array_mt, getmetatable(batch))
      assert.equal(3, #batch)
      assert.equal(2, batch[1].id)
      assert.same({}, batch[1].result)
      assert.equal(3, batch[2].id)
      assert.equal("notes.txt", batch[2].result.structuredContent.path)
      assert.equal(-32600, batch[3].error.code)
      assert.equal(-32600, replies[3].error.code) -- []
      assert.equal(4, replies[4].id) -- the all-notification batch said nothing
    end)
  end)

  it("neither runs nor answers a tools/call cancelled while it waited in the queue", function()
    local replies, by_id = serve(dir, { init(1), initialized,
      call(2, "grep", { pattern = "first" }),
      { method = "notifications/cancelled", params = { requestId = "w" } },
      call("w", "write_file", { path = "made.txt", content = "x" }),
      { id = 3, method = "ping" } })
    assert.is_nil(by_id.w, "a cancelled request was answered")
    assert.is_false(H.exists(dir, "made.txt"), "a cancelled request ran")
    assert.equal(3, #replies)
    assert.equal(3, replies[3].id)
  end)

  describe("logging", function()
    local function secrets()
      local cfg = H.tmpdir()
      H.write(cfg, "burrow.yaml", "policies: [secrets]\n")
      H.write(dir, ".env", "TOKEN=x\n")
      return { "--config", cfg .. "/burrow.yaml" }
    end

    it("logs a denied call as a warning once the client set a level, never before", function()
      local replies = serve(dir, { init(1), initialized,
        call(2, "read_file", { path = ".env" }),
        { id = 3, method = "logging/setLevel", params = { level = "warning" } },
        call(4, "read_file", { path = ".env" }) }, secrets())
      local notes = {}
      for i, r in ipairs(replies) do
        if r.method == "notifications/message" then notes[#notes + 1] = { at = i, msg = r } end
      end
      assert.equal(1, #notes, json.encode(replies))
      local p = notes[1].msg.params
      assert.equal("warning", p.level)
      assert.equal("burrow", p.logger)
      assert.equal("read_file", p.data.tool)
      assert.equal("POLICY_DENIED", p.data.code)
      assert.matches("POLICY_DENIED", p.data.message, 1, true)
      assert.equal(4, replies[notes[1].at + 1].id, "the log line comes before the call's reply")
    end)

    it("sends nothing under the level set: a denial is not an error", function()
      local replies = serve(dir, { init(1), initialized,
        { id = 2, method = "logging/setLevel", params = { level = "error" } },
        call(3, "read_file", { path = ".env" }) }, secrets())
      for _, r in ipairs(replies) do assert.is_nil(r.method, json.encode(r)) end
    end)

    it("counts the files a walk skipped, at info", function()
      H.write(dir, "bin.dat", "a\0b")
      local replies = serve(dir, { init(1), initialized,
        { id = 2, method = "logging/setLevel", params = { level = "info" } },
        call(3, "grep", { pattern = "first" }) })
      local note
      for _, r in ipairs(replies) do if r.method == "notifications/message" then note = r.params end end
      assert.is_table(note, json.encode(replies))
      assert.equal("info", note.level)
      assert.equal(1, note.data.binary)
    end)
  end)

  it("answers an id nested too deep to echo with -32700, then keeps serving", function()
    -- found by fuzzing: the reply's encoder refused the 1500-deep id and
    -- the error ended the server
    local replies, by_id = serve(dir, {
      init(1),
      '{"jsonrpc":"2.0","id":' .. string.rep("[", 1500) .. string.rep("]", 1500) .. ',"method":"ping"}',
      { id = 3, method = "ping" },
    })
    assert.equal(3, #replies)
    assert.equal(-32700, replies[2].error.code)
    assert.is_table(by_id[3] and by_id[3].result, "no reply after the deep id")
  end)

  it("answers an unknown method with -32601", function()
    local _, by_id = serve(dir, { init(1), initialized, { id = 2, method = "resources/frobnicate" } })
    assert.is_nil(by_id[2].result)
    assert.equal(-32601, by_id[2].error.code)
  end)

  describe("tools/list", function()
    it("lists the native tools with input schemas and annotations", function()
      local _, by_id = serve(dir, { init(1), initialized, { id = 2, method = "tools/list" } })
      local tools = by_id[2].result.tools
      local names = {}
      for _, t in ipairs(tools) do
        names[#names + 1] = t.name
        assert.equal("object", t.inputSchema.type)
        assert.is_string(t.description)
        assert.is_table(t.annotations)
      end
      table.sort(names)
      local native = { table.unpack(require("burrow.workspace.registry").native) }
      table.sort(native)
      assert.same(native, names)
    end)
  end)

  describe("tools/call", function()
    it("answers an unknown tool with -32602", function()
      local _, by_id = serve(dir, { init(1), initialized, call(2, "format_disk", {}) })
      assert.is_nil(by_id[2].result)
      assert.equal(-32602, by_id[2].error.code)
    end)

    it("returns text content and structuredContent on success", function()
      local _, by_id = serve(dir, { init(1), initialized, call(2, "read_file", { path = "notes.txt" }) })
      local r = by_id[2].result
      assert.is_table(r, "no result")
      assert.is_not_true(r.isError)
      assert.equal(1, #r.content)
      assert.equal("text", r.content[1].type)
      assert.equal("1\tfirst\n2\tsecond\n3\tthird\n", r.content[1].text)
      local s = r.structuredContent
      assert.is_table(s)
      assert.equal(H.sha256sum(dir, "notes.txt"), s.content_hash)
      assert.equal(3, s.total_lines)
      assert.is_nil(s.content, "the text is given once, in content")
    end)

    it("gives the resume hint in the text of a paged read", function()
      local _, by_id = serve(dir, { init(1), initialized, call(2, "read_file", { path = "notes.txt", limit = 1 }) })
      local r = by_id[2].result
      assert.matches("^1\tfirst\n", r.content[1].text)
      assert.matches("offset=2", r.content[1].text, 1, true)
      assert.equal(2, r.structuredContent.next_offset)
    end)

    it("reports a tool failure as a result with isError and _meta burrow/code", function()
      local _, by_id = serve(dir, { init(1), initialized, call(2, "read_file", { path = "missing.txt" }) })
      local r = by_id[2].result
      assert.is_table(r, "a tool failure is a result, not a JSON-RPC error")
      assert.is_nil(by_id[2].error)
      assert.is_true(r.isError)
      assert.equal("ENOENT", r._meta["burrow/code"])
      assert.matches("^ENOENT", r.content[1].text)
      assert.matches("missing.txt", r.content[1].text, 1, true)
    end)

    it("says in _meta how many entries the policies hid from a walk, in a pack's dialect too", function()
      H.write(dir, ".env", "TOKEN=x\n")
      H.write(dir, "sub/.env", "TOKEN=y\n")
      H.write(dir, "sub/ok.txt", "TOKEN=ok\n")
      local cfg = H.tmpdir()
      H.write(cfg, "burrow.yaml", "policies: [secrets]\n")
      local _, by_id = serve(dir, { init(1), initialized, call(2, "grep", { pattern = "TOKEN", include_hidden = true }) },
        { "--config", cfg .. "/burrow.yaml" })
      local r = by_id[2].result
      assert.equal(2, r._meta["burrow/skipped_policy"])
      assert.is_nil(r.content[1].text:find("TOKEN=x", 1, true))
      _, by_id = serve(dir, { init(1), initialized, call(2, "search_files", { path = dir, pattern = "**/.env" }) },
        { "--config", cfg .. "/burrow.yaml", "--pack", "mcp_filesystem" })
      r = by_id[2].result
      assert.is_true((r._meta or {})["burrow/skipped_policy"] ~= nil, "search_files: no burrow/skipped_policy")
      assert.is_nil(r.content[1].text:find(".env", 1, true), r.content[1].text)
    end)

    it("reports bad arguments as isError INVALID_ARGUMENT", function()
      local _, by_id = serve(dir, { init(1), initialized, call(2, "read_file", { path = "notes.txt", bogus = true }) })
      local r = by_id[2].result
      assert.is_true(r.isError)
      assert.equal("INVALID_ARGUMENT", r._meta["burrow/code"])
      assert.matches("'bogus'", r.content[1].text, 1, true)
    end)

    it("writes a file and reports it in structuredContent", function()
      local _, by_id = serve(dir, {
        init(1), initialized,
        call(2, "write_file", { path = "out/new.txt", content = "made by mcp\n" }),
        call(3, "read_file", { path = "out/new.txt" }),
      })
      local w = by_id[2].result
      assert.is_not_true(w.isError)
      assert.is_true(w.structuredContent.created)
      assert.equal("made by mcp\n", H.read(dir, "out/new.txt"))
      assert.equal(w.structuredContent.content_hash, by_id[3].result.structuredContent.content_hash)
    end)

    it("treats missing arguments as {}", function()
      local _, by_id = serve(dir, { init(1), initialized, { id = 2, method = "tools/call", params = { name = "list_dir" } } })
      local r = by_id[2].result
      assert.is_not_true(r.isError)
      assert.equal("notes.txt", r.structuredContent.entries[1].path)
    end)

    it("answers every request in a session, in order", function()
      local msgs = { init(1), initialized }
      for i = 2, 21 do msgs[#msgs + 1] = call(i, "stat", { path = "notes.txt" }) end
      local replies = serve(dir, msgs)
      assert.equal(21, #replies)
      for i, r in ipairs(replies) do
        assert.equal(i, r.id)
      end
    end)
  end)

  it("writes nothing but JSON-RPC lines on stdout", function()
    H.write(dir, "latin1.txt", "caf\233\n")
    local replies, _, out, err = serve(dir, {
      init(1), initialized,
      { id = 2, method = "tools/list" },
      call(3, "read_file", { path = "notes.txt" }),
      call(4, "read_file", { path = "nope" }),
      call(5, "read_file", { path = "latin1.txt" }),
      "garbage",
      { id = 6, method = "nope" },
      { id = 7, method = "ping" },
    })
    assert.equal(8, #replies)
    for line in out:gmatch("[^\n]*\n?") do
      if line ~= "" then
        local body = line:gsub("\n$", "")
        local msg = json.decode(body)
        assert.is_table(msg, "not JSON on stdout: " .. body)
        assert.equal("2.0", msg.jsonrpc)
        assert.is_not_nil(utf8.len(body), "stdout is not valid UTF-8")
      end
    end
    assert.equal("\n", out:sub(-1))
    assert.matches("burrow", err, 1, true) -- the banner goes to stderr
  end)

  it("refuses a request over max_request_bytes and keeps serving", function()
    local pad = ("a"):rep(5000)
    local replies, by_id = serve(dir, {
      init(1),
      { id = 2, method = "ping", params = { pad = pad } },
      { id = 3, method = "ping" },
    }, { "--cap", "max_request_bytes=1000" })
    assert.equal(3, #replies)
    assert.is_nil(by_id[2] and by_id[2].result, "a 5 KB request was served under max_request_bytes=1000")
    local refused = 0
    for _, r in ipairs(replies) do
      if r.error and r.error.code == -32600 then refused = refused + 1 end
    end
    assert.equal(1, refused)
    assert.is_table(by_id[3].result)
  end)

  it("echoes 64-bit integer and zero ids exactly", function()
    local _, _, out = serve(dir, {
      '{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}',
      '{"jsonrpc":"2.0","id":0,"method":"ping"}',
    })
    assert.matches('"id":9007199254740993', out, 1, true)
    assert.matches('"id":0', out, 1, true)
  end)

  it("exits 0 when stdin closes", function()
    local _, _, _, _, code = serve(dir, { init(1), initialized })
    assert.equal(0, code)
  end)

  it("serves several roots and a virtual mount", function()
    local other = H.tmpdir()
    H.write(other, "b.txt", "from b\n")
    local _, by_id = serve(dir .. ":/workspace", {
      init(1), initialized,
      call(2, "read_file", { path = "/workspace/notes.txt" }),
      call(3, "read_file", { path = other .. "/b.txt" }),
      call(4, "write_file", { path = other .. "/c.txt", content = "x" }),
      call(5, "read_file", { path = dir .. "/notes.txt" }),
    }, { "--root", other .. ":ro" })
    assert.equal("1\tfirst\n2\tsecond\n3\tthird\n", by_id[2].result.content[1].text)
    assert.equal("1\tfrom b\n", by_id[3].result.content[1].text)
    assert.equal("READ_ONLY_ROOT", by_id[4].result._meta["burrow/code"])
    assert.is_false(H.exists(other, "c.txt"))
    assert.equal("OUTSIDE_ROOT", by_id[5].result._meta["burrow/code"])
  end)

  describe("big results", function()
    it("a capped text over 1 MiB comes as two blocks: the lines, then the exact resume hint", function()
      local line = ("x"):rep(99) .. "\n"
      H.write(dir, "big.txt", line:rep(30000)) -- 3,000,000 bytes
      local _, by_id = serve(dir, { init(1), initialized, call(2, "read_file", { path = "big.txt", limit = 100000 }) },
        { "--cap", "max_result_bytes=2MiB" })
      local res = by_id[2].result
      assert.is_nil(res.isError)
      assert.equal(2, #res.content)
      local text, hint = res.content[1].text, res.content[2].text
      assert.truthy(#text <= 2 * 1024 * 1024 and #text > 1024 * 1024, #text)
      local last = tonumber(text:match("(%d+)\t[^\n]*\n$"))
      assert.equal(res.structuredContent.end_line, last)
      assert.equal(last + 1, res.structuredContent.next_offset)
      assert.truthy(hint:find(("offset=%d"):format(last + 1), 1, true), hint)
    end)
  end)
end)
