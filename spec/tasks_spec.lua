-- MCP tasks (the io.modelcontextprotocol/tasks extension at 2026-07-28,
-- burrow.mcp.tasks) on an in-process server, whose channel cannot answer a
-- request before its call ends: a call that becomes a task runs to its end
-- inside its request, and the answer is the finished task. The records live
-- in the workspace's state store, per principal (tenant and token), bounded
-- (tasks.MAX) and expiring (tasks.TTL). The HTTP side (answered at once,
-- the call going on, read and cancelled through another worker) is
-- test/e2e/tasks.test.mjs's.

local H = require "helpers"
local mcp = require "burrow.mcp"
local session = require "burrow.mcp.session"
local tasks = require "burrow.mcp.tasks"

local EXT = "io.modelcontextprotocol/tasks"
local core = require "burrow.core"

-- Wait for fn() to hold (polling, up to limit seconds): whether it did.
local function wait_until(fn, limit)
  local until_t = core.now() + limit
  repeat
    if fn() then return true end
    core.sleep(0.05)
  until core.now() > until_t
  return fn() and true or false
end

local function sorted_keys(t)
  local out = {}
  for k in pairs(t) do out[#out + 1] = k end
  table.sort(out)
  return out
end

local TOOLS = {
  ["job.lua"] = [[
return {
  name = "job", description = "a task: answers its label",
  input_schema = { type = "object", properties = { label = { type = "string" } } },
  permissions = {}, risk = "low", task = "optional",
  handler = function(ctx, a)
    local made = ctx:task()
    return { text = ("job %s (task: %s)"):format(tostring(a.label), tostring(made)) }
  end,
  render = function(r) return r.text, {} end,
}]],
  ["only_task.lua"] = [[
return {
  name = "only_task", description = "runs only as a task",
  input_schema = { type = "object", properties = {} },
  permissions = {}, risk = "low", task = "required",
  handler = function(ctx) ctx:task() return { text = "done" } end,
  render = function(r) return r.text, {} end,
}]],
  ["asker.lua"] = [[
return {
  name = "asker", description = "a task that asks a name",
  input_schema = { type = "object", properties = {} },
  permissions = {}, risk = "low", task = "optional",
  handler = function(ctx)
    ctx:task()
    local r, why = ctx:ask("name", "elicitation/create", { message = "Your name?",
      requestedSchema = { type = "object", properties = { name = { type = "string" } } } })
    if not r then return ctx:fail("EIO", "ask", why) end
    return { text = "hello " .. tostring(r.content.name) }
  end,
  render = function(r) return r.text, {} end,
}]],
  ["crash.lua"] = [[
return {
  name = "crash", description = "a task whose tool raises",
  input_schema = { type = "object", properties = {} },
  permissions = {}, risk = "low", task = "optional",
  handler = function(ctx) ctx:task() error("on purpose") end,
}]],
}

local function meta(caps)
  return { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
    ["io.modelcontextprotocol/clientCapabilities"] = caps }
end
local WITH = meta { elicitation = {}, extensions = { [EXT] = {} } }
local WITHOUT = meta { elicitation = {} }

describe(H.tag("MCP tasks (burrow.mcp.tasks)"), function()
  local dir, ws, saved

  -- a client of principal (tenant, token) on ws: request(method, params[, meta])
  local function client(tenant, token)
    local out, n = {}, 0
    local server = mcp.new(ws, { channel = mcp.channel(function(m) out[#out + 1] = m end),
      session = session.new { tenant = tenant, token = token } })
    return function(method, params, m)
      n = n + 1
      params._meta = m or WITH
      server:handle { jsonrpc = "2.0", id = n, method = method, params = params }
      for _, msg in ipairs(out) do if msg.id == n then return msg end end
    end
  end

  before_each(function()
    saved = { MAX = tasks.MAX, TTL = tasks.TTL }
    dir = H.tmpdir()
    H.write(dir, "ws/a.txt", "a\n")
    local list = {}
    for f, src in pairs(TOOLS) do list[#list + 1] = H.write(dir, f, src) end
    ws = assert(H.burrow.open { roots = { { path = dir .. "/ws" } }, tools = list })
  end)
  after_each(function()
    tasks.MAX, tasks.TTL = saved.MAX, saved.TTL
    ws:close()
    H.cleanup()
  end)

  it("makes a task of a call the tool escalates, its result inlined by tasks/get", function()
    local req = client("default", "aaaa")
    local r = req("tools/call", { name = "job", arguments = { label = "x" } }).result
    assert.equal("task", r.resultType)
    assert.is_string(r.taskId)
    assert.equal("completed", r.status, "in-process: run to its end inside the request")
    assert.is_nil(r.result)
    assert.is_nil(r.requestState)
    assert.is_true(math.type(r.ttlMs) == "integer" and r.ttlMs > 0)
    local g = req("tasks/get", { taskId = r.taskId }).result
    assert.equal("complete", g.resultType)
    assert.equal("completed", g.status)
    assert.equal("job x (task: true)", g.result.content[1].text)
  end)

  it("runs the call plainly for a client without the extension, and gates tasks/* with -32021", function()
    local req = client("default", "aaaa")
    local r = req("tools/call", { name = "job", arguments = { label = "y" } }, WITHOUT).result
    assert.equal("complete", r.resultType)
    assert.is_nil(r.taskId)
    assert.equal("job y (task: false)", r.content[1].text)
    for _, m in ipairs { "tasks/get", "tasks/update", "tasks/cancel" } do
      local e = req(m, { taskId = "1.00", inputResponses = {} }, WITHOUT).error
      assert.equal(-32021, e.code, m)
      assert.is_table(e.data.requiredCapabilities.extensions[EXT], m)
    end
    local e = req("tools/call", { name = "only_task", arguments = {} }, WITHOUT).error
    assert.equal(-32021, e.code)
    assert.is_table(e.data.requiredCapabilities.extensions[EXT])
  end)

  it("gives the session era no tasks: tasks/* are -32601, a required tool runs as a plain call", function()
    local out = {}
    local server = mcp.new(ws, { channel = mcp.channel(function(m) out[#out + 1] = m end) })
    server:handle { jsonrpc = "2.0", id = 1, method = "initialize", params = { protocolVersion = "2025-11-25",
      capabilities = { extensions = { [EXT] = {} } }, clientInfo = { name = "busted", version = "1" } } }
    server:handle { jsonrpc = "2.0", id = 2, method = "tasks/get", params = { taskId = "1.00" } }
    server:handle { jsonrpc = "2.0", id = 3, method = "tools/call", params = { name = "only_task", arguments = {} } }
    assert.equal(-32601, out[2].error.code)
    assert.is_nil(out[3].result.taskId)
    assert.equal("done", out[3].result.content[1].text)
  end)

  it("answers tasks/result and tasks/list with -32601, and an unknown task with -32602", function()
    local req = client("default", "aaaa")
    assert.equal(-32601, req("tasks/result", { taskId = "1.00" }).error.code)
    assert.equal(-32601, req("tasks/list", {}).error.code)
    assert.equal(-32602, req("tasks/get", { taskId = "1.0123" }).error.code)
    assert.equal(-32602, req("tasks/get", { taskId = "not-one-of-ours" }).error.code)
    assert.equal(-32602, req("tasks/cancel", { taskId = "99999.ab" }).error.code)
  end)

  it("fails a task whose tool raised (a protocol error), completes one whose tool failed", function()
    local req = client("default", "aaaa")
    local t = req("tools/call", { name = "crash", arguments = {} }).result
    local g = req("tasks/get", { taskId = t.taskId }).result
    assert.equal("failed", g.status)
    assert.equal(-32603, g.error.code)
    assert.is_nil(g.result)
  end)

  it("parks a task on its question, resumes it when tasks/update answers", function()
    local req = client("default", "aaaa")
    local t = req("tools/call", { name = "asker", arguments = {} }).result
    assert.equal("input_required", t.status)
    local g = req("tasks/get", { taskId = t.taskId }).result
    assert.equal("elicitation/create", g.inputRequests.name.method)
    assert.is_nil(g.requestState, "the signed state stays in the record")
    local ack = req("tasks/update", { taskId = t.taskId, inputResponses = { other = {} } }).result
    assert.same({ "_meta", "resultType" }, sorted_keys(ack))
    assert.equal("input_required", req("tasks/get", { taskId = t.taskId }).result.status, "an unknown key answers nothing")
    req("tasks/update", { taskId = t.taskId, inputResponses = { name = { action = "accept", content = { name = "ann" } } } })
    g = req("tasks/get", { taskId = t.taskId }).result
    assert.equal("completed", g.status, H.json.encode(g))
    assert.equal("hello ann", g.result.content[1].text)
  end)

  it("cancels a parked task; a cancel of a finished one changes nothing", function()
    local req = client("default", "aaaa")
    local t = req("tools/call", { name = "asker", arguments = {} }).result
    local ack = req("tasks/cancel", { taskId = t.taskId }).result
    assert.equal("complete", ack.resultType)
    assert.is_nil(ack.taskId)
    assert.equal("cancelled", req("tasks/get", { taskId = t.taskId }).result.status)
    local done = req("tools/call", { name = "job", arguments = {} }).result
    assert.equal("complete", req("tasks/cancel", { taskId = done.taskId }).result.resultType)
    assert.equal("completed", req("tasks/get", { taskId = done.taskId }).result.status)
  end)

  it("keeps a principal's tasks from another token and another tenant (as tasks that never were)", function()
    local mine, same = client("default", "aaaa"), client("default", "aaaa")
    local t = mine("tools/call", { name = "asker", arguments = {} }).result
    assert.equal("input_required", same("tasks/get", { taskId = t.taskId }).result.status,
      "the same principal through another server (worker)")
    for _, other in ipairs { client("default", "bbbb"), client("other", "aaaa") } do
      assert.equal(-32602, other("tasks/get", { taskId = t.taskId }).error.code)
      assert.equal(-32602, other("tasks/cancel", { taskId = t.taskId }).error.code)
      assert.equal(-32602, other("tasks/update", { taskId = t.taskId, inputResponses = { name = {} } }).error.code)
    end
    assert.equal("input_required", mine("tasks/get", { taskId = t.taskId }).result.status, "untouched")
  end)

  it("holds at most tasks.MAX tasks a principal: past them a call runs as a plain one", function()
    tasks.MAX = 3
    local req, other = client("default", "aaaa"), client("default", "bbbb")
    for i = 1, 3 do assert.equal("task", req("tools/call", { name = "job", arguments = { label = tostring(i) } }).result.resultType) end
    local r = req("tools/call", { name = "job", arguments = { label = "4" } }).result
    assert.equal("complete", r.resultType)
    assert.equal("job 4 (task: false)", r.content[1].text)
    assert.equal("task", other("tools/call", { name = "job", arguments = {} }).result.resultType, "another principal's own share")
  end)

  it("drops a task when its ttl has passed, and frees its slot", function()
    tasks.MAX, tasks.TTL = 1, 1
    local req = client("default", "aaaa")
    local t = req("tools/call", { name = "job", arguments = {} }).result
    assert.equal(1000, t.ttlMs)
    assert.equal("completed", req("tasks/get", { taskId = t.taskId }).result.status)
    local gone = wait_until(function() return req("tasks/get", { taskId = t.taskId }).error ~= nil end, 5)
    assert.is_true(gone, "expired within 5 s")
    assert.equal(-32602, req("tasks/get", { taskId = t.taskId }).error.code)
    assert.equal("task", req("tools/call", { name = "job", arguments = {} }).result.resultType, "its slot is free again")
  end)
end)
