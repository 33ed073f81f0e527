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

local threads = {}
function setup(thread) threads[#threads + 1] = thread end

bad = 0
function response(status, headers, body)
  if status ~= 200 or not body:find('"result"', 1, true) then bad = bad + 1 end
end

function done(summary, latency, requests)
  local no_result = 0
  for _, t in ipairs(threads) do no_result = no_result + t:get("bad") end
  io.write(("RESULT calls_s=%.0f p50_ms=%.2f p99_ms=%.2f mean_ms=%.2f errors=%d non2xx=%d no_result=%d\n"):format(
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, latency.mean / 1000, summary.errors.connect + summary.errors.read + summary.errors.write
      + summary.errors.timeout, summary.errors.status, no_result))
end
