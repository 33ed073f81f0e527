-- wrk script: a session-era (MCP 2025-11-25) ping in the session whose id
-- is the script's argument (wrk ... URL -- SESSION_ID), answered by the
-- listener in C with no Lua worker: bench/wrk_http.sh's floor, the tail
-- a call has on this machine before any of burrow's work.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"ping"}'

function init(args)
  assert(args[1], "usage: wrk ... -s wrk_ping.lua URL -- SESSION_ID")
  wrk.headers["Mcp-Session-Id"] = args[1]
end

-- beside this file: bench/wrk_report.lua (counts bad replies, writes RESULT)
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "wrk_report.lua")(function(body) return body:find('"result"', 1, true) end)
