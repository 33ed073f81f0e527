-- The part bench's wrk scripts share (wrk_stateless, wrk_session,
-- wrk_ping, wrk_official): each wrk thread counts its bad replies (bad, a
-- global of its own Lua state), done() adds them up through the threads
-- setup() kept and writes one RESULT line the shell scripts read. A
-- script loads it with dofile beside itself, then sets its request.
-- ok(body): does a 200 reply's body carry what a good answer has.
return function(ok)
  local threads = {}
  function setup(thread) threads[#threads + 1] = thread end

  bad = 0
  function response(status, headers, body)
    if status ~= 200 or not ok(body) then bad = bad + 1 end
  end

  function done(summary, latency, requests)
    local no_result = 0
    for _, t in ipairs(threads) do no_result = no_result + t:get("bad") end
    local e = summary.errors
    io.write(("RESULT calls_s=%.0f p50_ms=%.2f p99_ms=%.2f mean_ms=%.2f errors=%d non2xx=%d no_result=%d\n"):format(
      summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
      latency:percentile(99) / 1000, latency.mean / 1000, e.connect + e.read + e.write + e.timeout,
      e.status, no_result))
  end
end
