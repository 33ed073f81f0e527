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

-- each wrk thread counts its bad replies (bad, a global of its own state);
-- done() adds them up through the threads setup() kept
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
