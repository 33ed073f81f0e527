-- Operator prompts (burrow.workspace.prompts, the config's `prompts:` list) over MCP
-- stdio, in both eras: prompts/list, prompts/get (arguments checked, the
-- prompt's tool calls under the workspace's roots and policies),
-- completion/complete for a prompt's arguments and for paths under the
-- file template; a prompt file that is not one fails the configuration.

local H = require "helpers"
local json = H.json

local META = H.META_2026

local serve = H.mcp_config

local EXPLAIN = [[
return {
  name = "explain", title = "Explain a file", description = "Explain what a file does",
  arguments = { { name = "path", description = "the file", required = true }, { name = "tone" } },
  get = function(args, ctx)
    local r, msg = ctx:call("read_file", { path = args.path })
    if not r then return nil, msg end
    return { messages = { { role = "user", content = { type = "text", text = "Explain (" .. (args.tone or "plain") .. "):\n" .. r.content } } } }
  end,
  complete = function(arg, value)
    local out = {}
    for _, v in ipairs { "plain", "playful", "formal" } do
      if arg == "tone" and v:sub(1, #value) == value then out[#out + 1] = v end
    end
    return out
  end,
}
]]

describe(H.tag("operator prompts"), function()
  local dir, config

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "ws/src/main.c", "int main(void) { return 0; }\n")
    H.write(dir, "ws/src/mod.c", "int mod;\n")
    H.write(dir, "ws/.env", "SECRET=1\n")
    H.write(dir, "outside.txt", "outside the root\n")
    H.write(dir, "explain.lua", EXPLAIN)
    H.write(dir, "noenv.lua", 'return { name = "noenv", check = function(r)\n'
      .. '  if r.path:match("%.env$") then return "deny", "no env files" end\n  return "allow" end }\n')
    H.write(dir, "burrow.yaml", "roots: [ws]\npolicies: [default, ./noenv.lua]\nprompts: [explain.lua]\n")
    config = dir .. "/burrow.yaml"
  end)

  local function both(name, fn) H.both_eras(it, name, fn) end

  both("lists the prompt with its arguments, and gets it with its tool call's result", function(req, pre)
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "prompts/list", {})
    msgs[#msgs + 1] = req(2, "prompts/get", { name = "explain", arguments = { path = "src/main.c", tone = "formal" } })
    local r = serve(config, msgs)
    local p = r[1].result.prompts[1]
    assert.equal("explain", p.name)
    assert.equal("Explain a file", p.title)
    assert.same({ { name = "path", description = "the file", required = true }, { name = "tone" } }, p.arguments)
    local m = r[2].result.messages
    assert.equal("user", m[1].role)
    assert.matches("Explain %(formal%):\n1\tint main", m[1].content.text)
  end)

  both("refuses an unknown prompt, a missing or unknown argument and a non-string value with -32602", function(req, pre)
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "prompts/get", { name = "nope" })
    msgs[#msgs + 1] = req(2, "prompts/get", { name = "explain" })
    msgs[#msgs + 1] = req(3, "prompts/get", { name = "explain", arguments = { path = "src/main.c", colour = "red" } })
    msgs[#msgs + 1] = req(4, "prompts/get", { name = "explain", arguments = { path = 42 } })
    local r = serve(config, msgs)
    for id, pat in pairs { "no prompt named nope", "needs the argument path", "has no argument colour", "must be a string" } do
      assert.equal(-32602, r[id].error.code, json.encode(r[id]))
      assert.matches(pat, r[id].error.message)
    end
  end)

  both("a prompt's tool calls get the agent's limits: no path outside the roots, no file a policy denies", function(req, pre)
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "prompts/get", { name = "explain", arguments = { path = "../outside.txt" } })
    msgs[#msgs + 1] = req(2, "prompts/get", { name = "explain", arguments = { path = dir .. "/outside.txt" } })
    msgs[#msgs + 1] = req(3, "prompts/get", { name = "explain", arguments = { path = ".env" } })
    local r = serve(config, msgs)
    for id = 1, 3 do
      assert.is_table(r[id].error, json.encode(r[id]))
      assert.is_nil(json.encode(r[id]):find("outside the root\\n", 1, true))
      assert.is_nil(json.encode(r[id]):find("SECRET", 1, true))
    end
    assert.matches("OUTSIDE_ROOT", r[1].error.message)
    assert.matches("POLICY_DENIED", r[3].error.message)
  end)

  both("completes a prompt's argument and a path under the file template, never past the root", function(req, pre)
    local msgs = { table.unpack(pre) }
    local tmpl = "file://" .. dir .. "/ws/{+path}"
    msgs[#msgs + 1] = req(1, "completion/complete", { ref = { type = "ref/prompt", name = "explain" }, argument = { name = "tone", value = "pl" } })
    msgs[#msgs + 1] = req(2, "completion/complete", { ref = { type = "ref/resource", uri = tmpl }, argument = { name = "path", value = "src/m" } })
    msgs[#msgs + 1] = req(3, "completion/complete", { ref = { type = "ref/resource", uri = tmpl }, argument = { name = "path", value = "s" } })
    msgs[#msgs + 1] = req(4, "completion/complete", { ref = { type = "ref/resource", uri = tmpl }, argument = { name = "path", value = "../" } })
    msgs[#msgs + 1] = req(5, "completion/complete", { ref = { type = "ref/resource", uri = "file:///etc/{+path}" }, argument = { name = "path", value = "pa" } })
    local r = serve(config, msgs)
    assert.same({ "plain", "playful" }, r[1].result.completion.values)
    assert.same({ "src/main.c", "src/mod.c" }, r[2].result.completion.values)
    assert.same({ "src/" }, r[3].result.completion.values)
    assert.same({}, r[4].result.completion.values, "nothing outside the root: " .. json.encode(r[4]))
    assert.equal(-32602, r[5].error.code, "a template burrow does not serve")
  end)

  it("an initialize answer and server/discover advertise prompts and completions", function()
    local r = serve(config, {
      { id = 1, method = "initialize", params = { protocolVersion = "2025-11-25", capabilities = {}, clientInfo = { name = "b", version = "1" } } },
      { id = 2, method = "server/discover", params = { _meta = META } },
    })
    for id = 1, 2 do
      assert.is_table(r[id].result.capabilities.prompts)
      assert.is_table(r[id].result.capabilities.completions)
    end
  end)

  it("a prompt file that is not one fails the configuration, saying what is wrong (nothing is served)", function()
    local cases = {
      { "return 42", "must return a table" },
      { "return { name = 'bad name!', get = function() end }", "name must be 1 to 64 characters" },
      { "return { name = 'x' }", "get must be a function" },
      { "return { name = 'x', get = function() end, arguments = { { description = 'no name' } } }", "arguments%[1%] needs a name" },
      { "return { name = 'x', get = function() end, arguments = { { name = 'a' }, { name = 'a' } } }", "argument \"a\" is given twice" },
    }
    for _, c in ipairs(cases) do
      H.write(dir, "bad.lua", c[1])
      H.write(dir, "bad.yaml", "roots: [ws]\nprompts: [bad.lua]\n")
      local r, err = serve(dir .. "/bad.yaml", { { id = 1, method = "prompts/list", params = { _meta = META } },
        { id = 2, method = "tools/call", params = { name = "stat", arguments = { path = "src" }, _meta = META } } })
      assert.matches(c[2], err, 1, false)
      assert.matches("serving nothing", err, 1, true)
      assert.same({}, r[1].result.prompts, c[1])
      assert.is_true(r[2].result.isError, "no root is served: " .. c[1])
    end
    H.write(dir, "twice.yaml", "roots: [ws]\nprompts: [explain.lua, explain.lua]\n")
    local _, err = serve(dir .. "/twice.yaml", { { id = 1, method = "ping" } })
    assert.matches('prompt "explain" is defined twice', err, 1, true)
    H.write(dir, "missing.yaml", "roots: [ws]\nprompts: [nothere.lua]\n")
    _, err = serve(dir .. "/missing.yaml", { { id = 1, method = "ping" } })
    assert.matches("prompt file .*nothere%.lua cannot be read", err)
  end)
end)

-- A prompt that asks the client (ctx:ask) in 2026-07-28: input_required
-- rounds whose signed requestState names the prompt and its arguments, in
-- one process (the state's key is the process's own).
local ASKS = [[
return {
  name = "asks", arguments = { { name = "topic" } },
  get = function(args, ctx)
    local r, why = ctx:ask("ctx", "elicitation/create", { message = "Which context?",
      requestedSchema = { type = "object", properties = { context = { type = "string" } } } })
    if not r then return nil, why end
    return { messages = { { role = "user", content = { type = "text", text = (args.topic or "-") .. ": " .. tostring(r.content.context) } } } }
  end,
}
]]

describe(H.tag("a prompt's questions to the client (MRTR)"), function()
  local dir, ws, request, server

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "ws/a.txt", "a\n")
    H.write(dir, "asks.lua", ASKS)
    H.write(dir, "other.lua", (ASKS:gsub('name = "asks"', 'name = "other"')))
    ws = assert(H.burrow.open { roots = { { path = dir .. "/ws" } }, prompts = { dir .. "/asks.lua", dir .. "/other.lua" } })
    request, server = H.inproc_mcp(ws)
  end)
  after_each(function() ws:close() H.cleanup() end)

  local function get(_, params, meta) return request("prompts/get", params, meta) end

  it("asks, then answers the retry carrying the answer and its signed state", function()
    local r1 = get(1, { name = "asks", arguments = { topic = "t" } }).result
    assert.equal("input_required", r1.resultType)
    assert.equal("elicitation/create", r1.inputRequests.ctx.method)
    local r2 = get(2, { name = "asks", arguments = { topic = "t" }, requestState = r1.requestState,
      inputResponses = { ctx = { action = "accept", content = { context = "here" } } } }).result
    assert.equal("complete", r2.resultType)
    assert.equal("t: here", r2.messages[1].content.text)
  end)

  it("refuses a state for another prompt, other arguments, a tool's state, a tampered one, answers without one", function()
    local st = get(1, { name = "asks", arguments = { topic = "t" } }).result.requestState
    local answer = { ctx = { action = "accept", content = { context = "x" } } }
    local function refused(id, params, what)
      local m = get(id, params)
      assert.is_nil(m.result, what .. ": " .. H.json.encode(m))
      assert.equal(-32602, m.error.code, what)
    end
    refused(2, { name = "other", arguments = { topic = "t" }, requestState = st, inputResponses = answer }, "another prompt")
    refused(3, { name = "asks", arguments = { topic = "u" }, requestState = st, inputResponses = answer }, "other arguments")
    refused(4, { name = "asks", arguments = { topic = "t" }, requestState = st:gsub("^.", function(c) return c == "e" and "f" or "e" end),
      inputResponses = answer }, "a tampered state")
    refused(5, { name = "asks", arguments = { topic = "t" }, inputResponses = answer }, "answers without a state")
    -- a tool's state (same key, same tenant) opens no prompt
    local tool = require("burrow.mcp.approvals").ask_more(server, "read_file", { topic = "t" }, { ctx = { method = "elicitation/create", params = {} } }, {})
    refused(6, { name = "asks", arguments = { topic = "t" }, requestState = tool.requestState, inputResponses = answer }, "a tool's state")
  end)

  it("a client that declared no elicitation gets -32021 naming it", function()
    local m = get(1, { name = "asks", arguments = {} }, H.META_2026)
    assert.equal(-32021, m.error.code)
    assert.same({ elicitation = {} }, m.error.data.requiredCapabilities)
  end)
end)
