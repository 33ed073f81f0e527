-- wrk script: one tools/call of the official filesystem server's
-- read_text_file per request, in the session (MCP 2025-06-18) whose id
-- and file are the script's arguments (wrk ... URL -- SESSION_ID PATH;
-- bench/wrk_official.sh opens it with curl through supergateway). The
-- answer comes as SSE (the SDK server's default); a reply that is not 200
-- with a result (not isError) counts (no_result).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json, text/event-stream"
wrk.headers["MCP-Protocol-Version"] = "2025-06-18"

function init(args)
  assert(args[1] and args[2], "usage: wrk ... -s wrk_official.lua URL -- SESSION_ID PATH")
  wrk.headers["Mcp-Session-Id"] = args[1]
  wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_text_file",'
    .. '"arguments":{"path":"' .. args[2] .. '"}}}'
end

-- beside this file: bench/wrk_report.lua (counts bad replies, writes RESULT)
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "wrk_report.lua")(function(body)
  return body:find('"result"', 1, true) and not body:find('"isError":true', 1, true)
end)
