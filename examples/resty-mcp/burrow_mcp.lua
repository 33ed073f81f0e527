-- burrow's tools served by lua-resty-mcp (an MCP server library for
-- OpenResty and nginx-lua) over its Streamable HTTP transport. In nginx.conf:
--
--   location = /mcp { content_by_lua_block {
--     require("resty.mcp").transport.streamable_http.endpoint(function(mcp, server)
--       assert(require("burrow_mcp").serve(mcp, server, { roots = { { path = "/srv/project", mount = "/workspace" } } }))
--     end)
--   } }
--
-- One burrow workspace per MCP session: a workspace runs its calls one at a
-- time on its own thread, so a session's long grep never holds up another
-- session's calls. Each call goes through burrow.adapters.wait with
-- ngx.sleep, so the nginx worker serves other requests meanwhile, and a
-- client's notifications/cancelled cancels burrow's call (a grep stops with
-- a partial result). Tool results are burrow's JSON as one text block.
-- Hand-checked with lua-resty-mcp 7005729 under Debian 12's nginx 1.22 with
-- libnginx-mod-http-lua and luajit2 (docs/embedding.md, "Any Lua").

local burrow = require "burrow"
local adapters = require "burrow.adapters"
local cjson = require "cjson.safe"

local M = {}

local function tool(mcp, ws, def)
  local name = def.name
  return mcp.tool(name, function(args, ctx)
    local call
    local function sleep(s) -- between polls: has the client cancelled?
      if call and ctx.cancelled() then
        call:cancel()
        call = nil
      end
      ngx.sleep(s)
    end
    local res, msg = adapters.wait(ws, name, args, sleep, function(c) call = c end)
    if not res then return nil, msg end -- lua-resty-mcp: isError with msg as the text
    return cjson.encode(res)
  end, {
    title = def.title,
    description = def.description,
    input_schema = def.inputSchema,
    annotations = def.annotations,
  })
end

--- Open a workspace from `config` (burrow.open's: a table or YAML text),
-- register its tools on `server`, run the session, and close the workspace
-- when the session ends. Returns true, or nil and burrow.open's message.
function M.serve(mcp, server, config)
  local ws, err = burrow.open(config)
  if not ws then return nil, err end
  for _, def in ipairs(assert(ws:tools { format = "mcp" })) do
    assert(server:register(tool(mcp, ws, def)))
  end
  server:run()
  -- run() returns at once; the session's loop is a thread it spawned from
  -- this one (server.main_loop, a lua-resty-mcp internal): wait for it
  if server.main_loop then ngx.thread.wait(server.main_loop) end
  ws:close()
  return true
end

return M
