-- Helpers for the pack specs: a workspace with a pack, the MCP text of a
-- result, and an MCP round trip through `burrow mcp --pack NAME`.

local H = require "helpers"
local json = H.json

local U = {}

-- burrow.open on dir with a pack (and optional caps / extra options).
function U.open(dir, pack, extra)
  local opts = { roots = { { path = dir, mount = extra and extra.mount } }, pack = pack }
  for k, v in pairs(extra or {}) do if k ~= "mount" then opts[k] = v end end
  return H.open(opts)
end

-- The text a tool call shows over MCP, or nil, message, code.
function U.text(ws, name, args)
  local res, msg, code = ws:call(name, args)
  if not res then return nil, msg, code end
  local text, structured = ws:render(name, res)
  if type(text) == "table" then
    local parts = {}
    for i, t in ipairs(text) do parts[i] = type(t) == "table" and (t.text or "") or t end
    text = table.concat(parts)
  end
  return text, structured, res
end

-- initialize, then each {name, args} as tools/call; replies by id (2..).
function U.mcp(dir, pack, calls, extra_args)
  local lines = {
    json.encode { jsonrpc = "2.0", id = 1, method = "initialize", params = { protocolVersion = "2025-06-18",
      capabilities = {}, clientInfo = { name = "busted", version = "1" } } },
    json.encode { jsonrpc = "2.0", method = "notifications/initialized" },
  }
  for i, c in ipairs(calls) do
    local msg = { jsonrpc = "2.0", id = i + 1, method = c.method or "tools/call" }
    if not c.method then msg.params = { name = c[1], arguments = c[2] or {} } end
    lines[#lines + 1] = json.encode(msg)
  end
  local args = { "mcp", "--pack", pack, "--root", dir }
  for _, a in ipairs(extra_args or {}) do args[#args + 1] = a end
  local out, err = H.burrow_cmd(args, table.concat(lines, "\n") .. "\n")
  local by_id = {}
  for line in out:gmatch("[^\n]+") do
    local m = json.decode(line)
    if type(m) == "table" and m.id then by_id[m.id] = m end
  end
  return by_id, err
end

return U
