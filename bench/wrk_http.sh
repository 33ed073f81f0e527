#!/bin/sh
# Stateless (MCP 2026-07-28) read_file of a 2 KiB file over HTTP with wrk,
# at 1, 4, 16 and 50 connections: the listener's throughput as connections
# grow (docs/benchmarks.md, "The HTTP listener under many connections").
# Then, on one connection, the same call session-era (2025-11-25, in a
# session curl opens: bench/wrk_session.lua) and stateless, taking turns
# ROUNDS times: the stateless rate against the session's, both medians.
# And a floor: 50 connections of a session's ping, which the listener
# answers in C (bench/wrk_ping.lua): the tail this machine gives a call
# before any Lua runs.
# PIN=1: for the one-connection turns, the server's threads on CPU 0 and
# wrk on CPU 1 (taskset). Unpinned, each run's connection lands on one of
# the listener's threads and the scheduler places that thread and the
# worker on one core or on two: the CPU a call of either era then moves
# by 2x from run to run with that draw alone (docs/benchmarks.md).
#   bench/wrk_http.sh [BURROW_BIN] [SECONDS] [ROUNDS]   (needs wrk: apt-get install wrk)
set -eu
BIN=${1:-build/burrow}
SECS=${2:-10}
ROUNDS=${3:-3}
DIR=$(mktemp -d)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
awk 'BEGIN { for (i = 0; i < 32; i++) printf "line %02d of a two-KiB file for the bench: %s\n", i, "abcdefghij" }' > "$DIR/small.txt"
head -c 2048 "$DIR/small.txt" > "$DIR/s" && mv "$DIR/s" "$DIR/small.txt"
# max_calls above the 50 connections: every call is taken (16 by default)
printf 'roots: [%s]\nhttp: {access_log: "off", max_calls: 64}\n' "$DIR" > "$DIR/burrow.yaml"
"$BIN" mcp --config "$DIR/burrow.yaml" --http 127.0.0.1:0 2> "$DIR/err" &
PID=$!
i=0
until grep -q 'at http://' "$DIR/err"; do i=$((i + 1)); [ $i -lt 200 ] || { cat "$DIR/err"; exit 1; }; sleep 0.05; done
URL=$(grep -o 'http://[^ ]*/mcp' "$DIR/err" | head -1)
HERE=$(cd "$(dirname "$0")" && pwd)
echo "# $BIN, load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
wrk -t1 -c4 -d2s -s "$HERE/wrk_stateless.lua" "$URL" > /dev/null # warm up
echo "connections calls/s p50_ms p99_ms mean_ms errors non2xx no_result threads"
for c in 1 4 16 50; do
  t=$c; [ $t -gt 2 ] && t=2
  (sleep $((SECS / 2)); ls /proc/$PID/task | wc -l > "$DIR/threads") &
  TP=$!
  r=$(wrk -t$t -c$c -d${SECS}s --latency -s "$HERE/wrk_stateless.lua" "$URL" | grep '^RESULT')
  wait $TP
  echo "$c $r threads=$(cat "$DIR/threads")"
done

# a session (2025-11-25): initialize, its id from the answer's header, initialized
curl -sS -D "$DIR/h" -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}' "$URL"
SID=$(tr -d '\r' < "$DIR/h" | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *//p')
[ -n "$SID" ] || { echo "no Mcp-Session-Id in the initialize answer:"; cat "$DIR/h"; exit 1; }
curl -sS -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25' \
  -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$URL"
r=$(wrk -t2 -c50 -d${SECS}s --latency -s "$HERE/wrk_ping.lua" "$URL" -- "$SID" | grep '^RESULT')
echo "floor: 50 connections of ping, answered by the listener (no Lua): $r"
# the server's CPU a call (utime + stime of /proc/PID/stat over the run):
# steadier than a rate on a shared machine, whose load moves the rate
ticks() { awk '{ print $14 + $15 }' /proc/$PID/stat; }
HZ=$(getconf CLK_TCK)
one() { # one ERA SCRIPT [ARG]
  era=$1; shift
  t0=$(ticks)
  r=$($CLI wrk -t1 -c1 -d${SECS}s --latency -s "$@" | grep '^RESULT')
  t1=$(ticks)
  calls=$(echo "$r" | sed 's/.*calls_s=\([0-9]*\).*/\1/')
  cpu=$(awk -v d=$((t1 - t0)) -v hz="$HZ" -v c="$calls" -v s="$SECS" 'BEGIN { printf "%.0f", d / hz * 1e6 / (c * s) }')
  echo "$era $n $r cpu_us_call=$cpu" | tee -a "$DIR/one"
}
CLI=
if [ "${PIN:-0}" = 1 ]; then
  taskset -a -p -c 0 $PID > /dev/null
  CLI="taskset -c 1"
fi
echo "one connection, taking turns${CLI:+ (the server on CPU 0, wrk on CPU 1)}: era round calls/s p50_ms p99_ms mean_ms errors non2xx no_result cpu_us_call"
: > "$DIR/one"
n=1
while [ $n -le "$ROUNDS" ]; do
  one session "$HERE/wrk_session.lua" "$URL" -- "$SID"
  one stateless "$HERE/wrk_stateless.lua" "$URL"
  n=$((n + 1))
done
awk '{ split($4, a, "="); v[$1] = v[$1] " " a[2]; split($NF, b, "="); u[$1] = u[$1] " " b[2] }
  function med(s,   x, n, i, j, t) { n = split(s, x, " ");
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] + 0 < x[i] + 0) { t = x[i]; x[i] = x[j]; x[j] = t }
    return x[int((n + 1) / 2)] }
  END { s = med(v["session"]); l = med(v["stateless"]);
    printf "median calls/s: session %d, stateless %d: stateless %.2fx the session\n", s, l, l / s;
    s = med(u["session"]); l = med(u["stateless"]);
    printf "median server CPU a call: session %d us, stateless %d us: the session %.2fx the stateless\n", s, l, s / l }' "$DIR/one"
