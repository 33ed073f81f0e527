-- A tool's own log lines (ctx:log) reach the MCP client as
-- notifications/message at or above the level it asked for, in both eras
-- (logging/setLevel in a session, _meta logLevel in 2026-07-28), and not at
-- all when it asked for none.

local H = require "helpers"

local TOOL = [[
return {
  name = "chatty", description = "logs three lines",
  input_schema = { type = "object", properties = {}, additionalProperties = false },
  annotations = { readOnlyHint = true }, permissions = {}, risk = "low",
  handler = function(ctx)
    ctx:log("debug", "a detail")
    ctx:log("info", "working", { step = 2 })
    ctx:log("warning", "careful")
    ctx:log("shouting", "not a level: dropped")
    return { ok = true }
  end,
}
]]

describe(H.tag("ctx:log from a tool"), function()
  local dir
  after_each(H.cleanup)
  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "ws/a.txt", "a\n")
    H.write(dir, "chatty.lua", TOOL)
    H.write(dir, "burrow.yaml", "roots: [ws]\ntools: [read_file, chatty.lua]\n")
  end)

  -- the notifications/message lines of one run, in order
  local function logs(messages)
    local tmp = H.tmpdir()
    local lines = {}
    for i, m in ipairs(messages) do
      m.jsonrpc = "2.0"
      lines[i] = H.json.encode(m)
    end
    H.write(tmp, "in", table.concat(lines, "\n") .. "\n")
    H.run(("timeout 60 %s mcp --config %s < %s > %s 2>/dev/null"):format(H.q(H.BURROW), H.q(dir .. "/burrow.yaml"),
      H.q(tmp .. "/in"), H.q(tmp .. "/out")))
    local out = {}
    for line in (H.read(tmp, "out") or ""):gmatch("[^\n]+") do
      local m = H.json.decode(line)
      if m.method == "notifications/message" then out[#out + 1] = m.params.level .. " " .. m.params.data.message end
    end
    return out
  end
  local init = { id = 1, method = "initialize", params = { protocolVersion = "2025-11-25", capabilities = {},
    clientInfo = { name = "b", version = "1" } } }
  local call = { id = 3, method = "tools/call", params = { name = "chatty", arguments = {} } }

  it("a session: at or above logging/setLevel's level, none before it is set", function()
    assert.same({}, logs { init, call })
    assert.same({ "info working", "warning careful" },
      logs { init, { id = 2, method = "logging/setLevel", params = { level = "info" } }, call })
  end)

  it("stateless: at or above _meta's logLevel, none without one", function()
    local function meta(level)
      return { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
        ["io.modelcontextprotocol/clientCapabilities"] = setmetatable({}, { __jsontype = "object" }),
        ["io.modelcontextprotocol/logLevel"] = level }
    end
    assert.same({}, logs { { id = 1, method = "tools/call", params = { name = "chatty", arguments = {}, _meta = meta(nil) } } })
    assert.same({ "debug a detail", "info working", "warning careful" },
      logs { { id = 1, method = "tools/call", params = { name = "chatty", arguments = {}, _meta = meta("debug") } } })
  end)
end)
