-- MCP 2026-07-28's multi round-trip requests for a tool that asks the
-- client itself (ctx:ask) and then writes where a policy asks for
-- approval: the tool's answers ride in the approval's signed state, so the
-- approved retry runs the tool with them and the call completes (before,
-- the approval's state dropped them and the client was asked again, in a
-- loop that never wrote).

local H = require "helpers"

local TOOL = [[
return {
  name = "greet_file", description = "asks a name, writes held/NAME.txt",
  input_schema = { type = "object", properties = {}, additionalProperties = false },
  permissions = { "fs.write" }, risk = "medium",
  handler = function(ctx)
    local r, why = ctx:ask("name", "elicitation/create", { message = "Your name?",
      requestedSchema = { type = "object", properties = { name = { type = "string" } } } })
    if not r then return ctx:fail("EIO", "ask", why) end
    local res, msg, code = ctx:call("write_file", { path = "held/" .. r.content.name .. ".txt", content = "hi\n" })
    if not res then return nil, msg, code end
    return { text = "wrote held/" .. r.content.name .. ".txt" }
  end,
  render = function(r) return r.text, {} end,
}
]]

describe(H.tag("a tool's questions and a policy's approval in one call (MRTR)"), function()
  local dir, ws, request

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "ws/a.txt", "a\n")
    H.write(dir, "greet.lua", TOOL)
    H.write(dir, "hold.lua", 'return { name = "hold", check = function(r)\n'
      .. '  if r.operation == "write" and r.path:match("^held/") then return "ask", "held by the test" end\n'
      .. '  return "allow" end }\n')
    ws = assert(H.burrow.open { roots = { { path = dir .. "/ws" } }, tools = { "write_file", dir .. "/greet.lua" },
      policies = { "default", dir .. "/hold.lua" } })
    request = H.inproc_mcp(ws)
  end)
  after_each(function() ws:close() H.cleanup() end)

  local function call(_, extra)
    local params = { name = "greet_file", arguments = {} }
    for k, v in pairs(extra or {}) do params[k] = v end
    local m = request("tools/call", params)
    return m.result, m
  end

  it("asks the tool's question, then the approval, then writes with the answer", function()
    local r1 = call(1)
    assert.equal("input_required", r1.resultType)
    assert.is_table(r1.inputRequests.name)
    local r2 = call(2, { requestState = r1.requestState, inputResponses = { name = { action = "accept", content = { name = "ann" } } } })
    assert.equal("input_required", r2.resultType)
    assert.is_table(r2.inputRequests.approve, "the approval is asked next")
    assert.is_nil(r2.inputRequests.name)
    local r3 = call(3, { requestState = r2.requestState, inputResponses = { approve = { action = "accept", content = { approve = true } } } })
    assert.equal("complete", r3.resultType, H.json.encode(r3))
    assert.is_nil(r3.isError, H.json.encode(r3))
    assert.equal("hi\n", H.read(dir, "ws/held/ann.txt"))
  end)
end)

-- Issue 40: one audit line per agent call. A 2026-07-28 approval wrote
-- four: the first round's deny, two read_file lines of the approval's own
-- content hash (read through the workspace, audited as calls the agent
-- never made) and the retry's allow. The first round stops at a question
-- (input_required), so the retry, the same call come again, writes the
-- call's one line; in the session era the question is asked inside the
-- call, whose line it already was.
describe(H.tag("an approved call's audit (issue 40)"), function()
  local dir, ws, request, server

  local function open(tools)
    ws = assert(H.burrow.open { roots = { { path = dir .. "/ws" } }, tools = tools,
      policies = { "default", dir .. "/hold.lua", "audit" }, audit = dir .. "/audit.jsonl" })
    request, server = H.inproc_mcp(ws)
  end

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "ws/a.txt", "a\n")
    H.write(dir, "ws/held/old.txt", "old\n")
    H.write(dir, "hold.lua", 'return { name = "hold", check = function(r)\n'
      .. '  if r.operation == "write" and r.path:match("^held/") then return "ask", "held by the test" end\n'
      .. '  return "allow" end }\n')
  end)
  after_each(function() ws:close() H.cleanup() end)

  local function lines()
    local out = {}
    for l in (H.read(dir, "audit.jsonl") or ""):gmatch("[^\n]+") do out[#out + 1] = H.json.decode(l) end
    return out
  end

  -- a fresh table each time: a request's params get its _meta
  local function write() return { name = "write_file", arguments = { path = "held/new.txt", content = "new\n" } } end
  local function retry(r1, answer)
    local p = write()
    p.requestState, p.inputResponses = r1.requestState, { approve = answer }
    return request("tools/call", p)
  end

  it("2026-07-28, approved: one line, the allow, with approved_by", function()
    open { "read_file", "write_file" }
    local r1 = request("tools/call", write()).result
    assert.equal("input_required", r1.resultType)
    local r2 = retry(r1, { action = "accept", content = { approve = true } })
    assert.is_nil(r2.error, H.json.encode(r2))
    assert.is_nil(r2.result.isError, H.json.encode(r2))
    assert.equal("new\n", H.read(dir, "ws/held/new.txt"))
    local l = lines()
    assert.equal(1, #l, H.json.encode(l))
    assert.equal("write_file", l[1].tool)
    assert.equal("held/new.txt", l[1].path)
    assert.equal("allow", l[1].decision)
    assert.equal("OK", l[1].code)
    assert.equal("the client (MCP 2026-07-28 input_required)", l[1].approved_by)
  end)

  it("2026-07-28, declined: one line, the deny, without approved_by", function()
    open { "read_file", "write_file" }
    local r1 = request("tools/call", write()).result
    local r2 = retry(r1, { action = "accept", content = { approve = false } })
    assert.equal(true, r2.result.isError, H.json.encode(r2))
    assert.is_false(H.exists(dir, "ws/held/new.txt"))
    local l = lines()
    assert.equal(1, #l, H.json.encode(l))
    assert.equal("write_file", l[1].tool)
    assert.equal("deny", l[1].decision)
    assert.equal("POLICY_DENIED", l[1].code)
    assert.is_nil(l[1].approved_by)
  end)

  it("2026-07-28, the other calls around it keep their own lines", function()
    open { "read_file", "write_file" }
    request("tools/call", { name = "read_file", arguments = { path = "a.txt" } })
    local r1 = request("tools/call", write()).result
    retry(r1, { action = "accept", content = { approve = true } })
    request("tools/call", { name = "read_file", arguments = { path = "held/new.txt" } })
    local l = lines()
    assert.equal(3, #l, H.json.encode(l))
    assert.same({ "read_file", "write_file", "read_file" }, { l[1].tool, l[2].tool, l[3].tool })
    assert.same({ "a.txt", "held/new.txt", "held/new.txt" }, { l[1].path, l[2].path, l[3].path })
    assert.is_nil(l[1].approved_by)
    assert.is_string(l[2].approved_by)
    assert.is_nil(l[3].approved_by)
  end)

  it("2026-07-28, a client that cannot answer a form: one line, the deny (-32021)", function()
    open { "read_file", "write_file" }
    local m = request("tools/call", write(), H.META_2026)
    assert.equal(-32021, m.error and m.error.code, H.json.encode(m))
    local l = lines()
    assert.equal(1, #l, H.json.encode(l))
    assert.same({ "write_file", "deny", "POLICY_DENIED" }, { l[1].tool, l[1].decision, l[1].code })
  end)

  it("a session (2025-11-25), approved by elicitation: one line, the allow, with approved_by", function()
    open { "read_file", "write_file" }
    local out = {}
    server.channel = require("burrow.mcp").channel(function(m) out[#out + 1] = m end)
    server:handle { jsonrpc = "2.0", id = "init", method = "initialize", params = { protocolVersion = "2025-11-25",
      capabilities = { elicitation = {} }, clientInfo = { name = "busted", version = "1" } } }
    local asked = 0
    server.ask_client = function(_, method) -- the client's answer to the form
      asked = asked + 1
      assert.equal("elicitation/create", method)
      return { action = "accept", content = { approve = true } }
    end
    server:handle { jsonrpc = "2.0", id = 2, method = "tools/call", params = write() }
    local m
    for _, x in ipairs(out) do if x.id == 2 then m = x end end
    assert.is_nil(m.result.isError, H.json.encode(m))
    assert.equal(1, asked)
    assert.equal("new\n", H.read(dir, "ws/held/new.txt"))
    local l = lines()
    assert.equal(1, #l, H.json.encode(l))
    assert.equal("allow", l[1].decision)
    assert.equal("the client (MCP elicitation)", l[1].approved_by)
  end)

  -- the content check reads the file as read_file reads it, whether or not
  -- the operator lists read_file: without it the hash was a refusal's
  -- code both times, and a change went unseen
  for _, tools in ipairs { { "read_file", "write_file" }, { "write_file" } } do
    it("a file changed since the question is refused on the retry (tools: " .. table.concat(tools, ", ") .. ")", function()
      open(tools)
      local over = { name = "write_file", arguments = { path = "held/old.txt", content = "over\n" } }
      local r1 = request("tools/call", over).result
      assert.equal("input_required", r1.resultType)
      H.write(dir, "ws/held/old.txt", "changed meanwhile\n")
      local r2 = request("tools/call", { name = over.name, arguments = over.arguments, requestState = r1.requestState,
        inputResponses = { approve = { action = "accept", content = { approve = true } } } })
      assert.equal(-32602, r2.error and r2.error.code, H.json.encode(r2))
      assert.matches("changed since the approval", r2.error.message)
      assert.equal("changed meanwhile\n", H.read(dir, "ws/held/old.txt"))
      assert.same({}, lines())
    end)
  end
end)
