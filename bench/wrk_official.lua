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

local threads = {}
function setup(thread) threads[#threads + 1] = thread end

bad = 0
function response(status, headers, body)
  if status ~= 200 or not body:find('"result"', 1, true) or body:find('"isError":true', 1, true) then
    bad = bad + 1
  end
end

function done(summary, latency, requests)
  local no_result = 0
  for _, t in ipairs(threads) do no_result = no_result + t:get("bad") end
  io.write(("RESULT calls_s=%.0f p50_ms=%.2f p99_ms=%.2f mean_ms=%.2f errors=%d non2xx=%d no_result=%d\n"):format(
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, latency.mean / 1000, summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.timeout, summary.errors.status, no_result))
end
