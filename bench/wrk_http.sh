#!/bin/sh
# Stateless (MCP 2026-07-28) read_file of a 2 KiB file over HTTP with wrk,
# at 1, 4, 16 and 50 connections: the listener's throughput as connections
# grow (docs/benchmarks.md, "The HTTP listener under many connections").
#   bench/wrk_http.sh [BURROW_BIN] [SECONDS]     (needs wrk: apt-get install wrk)
set -eu
BIN=${1:-build/burrow}
SECS=${2:-10}
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
wrk -t1 -c4 -d2s -s "$HERE/wrk_stateless.lua" "$URL" > /dev/null # warm up
echo "connections calls/s p50_ms p99_ms errors non2xx threads"
for c in 1 4 16 50; do
  t=$c; [ $t -gt 2 ] && t=2
  (sleep $((SECS / 2)); ls /proc/$PID/task | wc -l > "$DIR/threads") &
  TP=$!
  r=$(wrk -t$t -c$c -d${SECS}s --latency -s "$HERE/wrk_stateless.lua" "$URL" | grep '^RESULT')
  wait $TP
  echo "$c $r threads=$(cat "$DIR/threads")"
done
