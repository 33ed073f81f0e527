-- wrk script: one session-era (MCP 2025-11-25) tools/call of read_file per
-- request, in the session whose id is the script's argument (wrk ... URL
-- -- SESSION_ID; bench/wrk_http.sh opens it with curl), JSON answer: the
-- anchor bench/wrk_stateless.lua's one-connection rate is held against.
-- A reply that is not 200 with a result (not isError) counts (no_result).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json"
wrk.headers["MCP-Protocol-Version"] = "2025-11-25"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file",'
  .. '"arguments":{"path":"small.txt"}}}'

function init(args)
  assert(args[1], "usage: wrk ... -s wrk_session.lua URL -- SESSION_ID")
  wrk.headers["Mcp-Session-Id"] = args[1]
end

-- beside this file: bench/wrk_report.lua (counts bad replies, writes RESULT)
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "wrk_report.lua")(function(body)
  return body:find('"result"', 1, true) and not body:find('"isError":true', 1, true)
end)
