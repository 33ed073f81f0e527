#!/usr/bin/env lua5.4
-- agent.lua - a Lua agent loop on burrow, as an agent framework runs one.
--
-- It opens a workspace with the rock (`require "burrow"`), hands the tool
-- list to a model in OpenAI's and in Anthropic's function-calling format,
-- and executes the tool calls the model answers with, feeding the results
-- back, until the model stops calling tools. The "model" here is a script
-- of the answers a model would give (no network): swap `scripted_model`
-- for an HTTP call to a real API and nothing else changes.
--
--   lua5.4 examples/agent.lua [WORKSPACE]     (default: a new temp dir)
--
-- Each API gets its own subdirectory of WORKSPACE, mounted as /work.

local burrow = require "burrow"
local json = burrow.core.json -- the JSON burrow itself uses (docs/embedding.md)

local workspace = arg[1] or os.tmpname()
if not arg[1] then
  os.remove(workspace) -- os.tmpname made a file; we want a directory
end
local function cleanup()
  if not arg[1] then os.execute("rm -rf '" .. workspace .. "'") end
end

-- What the model answers, turn by turn. Each turn: some text, and the tool
-- calls it asks for (several in one turn are parallel calls).
local SCRIPT = {
  { say = "Let me see what is in the workspace.", calls = { { "list_dir", { path = "/work" } } } },
  { say = "I'll write the plan down.",
    calls = { { "write_file", { path = "/work/notes/plan.md", content = "# Plan\n- read the code\n- fix the bug\n" } } } },
  { calls = { { "read_file", { path = "/work/notes/plan.md" } }, { "grep", { pattern = "bug", path = "/work/notes" } } } },
  { calls = { { "edit_file", { path = "/work/notes/plan.md", old_text = "- fix the bug", new_text = "- fix the bug (done)" } } } },
  { say = "Checking a file outside the workspace, which should be refused.",
    calls = { { "read_file", { path = "/work/../../etc/hostname" } } } },
  { say = "Done: the plan is written and the bug is marked fixed." },
}

-- The model's answer for `turn` in the API's shape, after checking that
-- the request offers every tool it wants to call (a real model can only
-- call what it was given). Tools the host does not serve are dropped.
local ids = 0
local function scripted_model(api, request, turn)
  local step = SCRIPT[turn] or { say = "(the script is over)" }
  local offered = {}
  for _, t in ipairs(request.tools) do
    offered[api == "openai" and t["function"].name or t.name] = true
  end
  local calls = {}
  for _, c in ipairs(step.calls or {}) do
    if offered[c[1]] then calls[#calls + 1] = c
    else print(("  (the model skips %s: not offered)"):format(c[1])) end
  end
  if api == "openai" then
    local msg = { role = "assistant", content = step.say }
    if #calls > 0 then
      msg.tool_calls = {}
      for i, c in ipairs(calls) do
        ids = ids + 1
        msg.tool_calls[i] = { id = "call_" .. ids, type = "function",
          ["function"] = { name = c[1], arguments = json.encode(c[2]) } } -- OpenAI sends a JSON string
      end
    end
    return { choices = { { message = msg, finish_reason = #calls > 0 and "tool_calls" or "stop" } } }
  else
    local content = {}
    if step.say then content[1] = { type = "text", text = step.say } end
    for _, c in ipairs(calls) do
      ids = ids + 1
      content[#content + 1] = { type = "tool_use", id = "toolu_" .. ids, name = c[1], input = c[2] }
    end
    return { role = "assistant", content = content, stop_reason = #calls > 0 and "tool_use" or "end_turn" }
  end
end

-- Run one call through burrow: the text the model sees and whether it failed.
local function execute(ws, name, args)
  local res, msg, code = ws:call(name, args)
  if not res then
    print(("    %s -> error %s"):format(name, code))
    return msg, true
  end
  local text = ws:render(name, res)
  if type(text) == "table" then text = table.concat(text, "\n") end
  print(("    %s -> ok: %s"):format(name, (text:gsub("\n", "\\n"):sub(1, 100))))
  return text, false
end

local function run(api, dir)
  assert(os.execute("mkdir -p '" .. dir .. "'"))
  local ws <close> = assert(burrow.open {
    roots = { { path = dir, mount = "/work" } },
    policies = { "default", "secrets" },
  })
  local tools = assert(ws:tools { format = api })
  local request = { model = "scripted", tools = tools, messages = {
    api == "openai" and { role = "system", content = "You edit files in /work." } or nil,
    { role = "user", content = "Write a plan to notes/plan.md and mark the bug fixed." },
  } }
  if api == "anthropic" then
    request.system, request.max_tokens = "You edit files in /work.", 1024
  end
  print(("[%s] %d tools offered (%d bytes of JSON): %s ..."):format(api, #tools, #json.encode(tools),
    api == "openai" and tools[1]["function"].name or tools[1].name))

  for turn = 1, 20 do
    local answer = scripted_model(api, request, turn)
    local calls = {}
    if api == "openai" then
      local msg = answer.choices[1].message
      request.messages[#request.messages + 1] = msg
      print(("  turn %d model: %s"):format(turn, msg.content or "(tool calls only)"))
      for _, tc in ipairs(msg.tool_calls or {}) do
        local args = assert(json.decode(tc["function"].arguments))
        local text = execute(ws, tc["function"].name, args)
        request.messages[#request.messages + 1] = { role = "tool", tool_call_id = tc.id, content = text }
        calls[#calls + 1] = tc
      end
    else
      request.messages[#request.messages + 1] = answer
      local results = {}
      if (answer.content[1] or {}).type ~= "text" then print(("  turn %d model: (tool calls only)"):format(turn)) end
      for _, block in ipairs(answer.content) do
        if block.type == "text" then print(("  turn %d model: %s"):format(turn, block.text)) end
        if block.type == "tool_use" then
          local text, failed = execute(ws, block.name, block.input)
          results[#results + 1] = { type = "tool_result", tool_use_id = block.id, content = text, is_error = failed }
        end
      end
      if #results > 0 then request.messages[#request.messages + 1] = { role = "user", content = results } end
      calls = results
    end
    if #calls == 0 then
      print(("[%s] finished after %d turns, %d messages"):format(api, turn, #request.messages))
      return ws:call("read_file", { path = "/work/notes/plan.md" })
    end
  end
  error("the model did not stop")
end

print(("burrow %s, workspace %s"):format(burrow.version, workspace))
for _, api in ipairs { "openai", "anthropic" } do
  local plan = run(api, workspace .. "/" .. api)
  print(("[%s] notes/plan.md now reads: %s"):format(api, plan and plan.content:gsub("\n", "\\n") or "(missing)"))
end
cleanup()
