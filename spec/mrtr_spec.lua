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
