-- wrk script: one stateless (MCP 2026-07-28) tools/call of read_file per
-- request, JSON answer; bench/wrk_http.sh runs it at several connection
-- counts. A reply that is not 200 with a result (not isError) counts as
-- an error (no_result).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["Accept"] = "application/json"
wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
wrk.headers["Mcp-Method"] = "tools/call"
wrk.headers["Mcp-Name"] = "read_file"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file",'
  .. '"arguments":{"path":"small.txt"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientCapabilities":{}}}}'

-- beside this file: bench/wrk_report.lua (counts bad replies, writes RESULT)
local here = debug.getinfo(1, "S").source:match("^@(.*/)") or "./"
dofile(here .. "wrk_report.lua")(function(body)
  return body:find('"result"', 1, true) and not body:find('"isError":true', 1, true)
end)
