#!/bin/sh
# One connection of wrk against burrow (a stateless 2026-07-28 read_file,
# and a session-era one) and against the official filesystem server behind
# supergateway (stateful, its read_text_file in one session), the same
# 2 KiB file, taking turns ROUNDS times: issue 41's bar, burrow at least
# 10x the official server at one connection (docs/benchmarks.md). The
# peers come from bench/peers (npm ci there; http.mjs starts them alike).
#   bench/wrk_official.sh [BURROW_BIN] [SECONDS] [ROUNDS]   (needs wrk and node)
set -eu
BIN=${1:-build/burrow}
SECS=${2:-10}
ROUNDS=${3:-3}
HERE=$(cd "$(dirname "$0")" && pwd)
PEERS=$HERE/peers/node_modules
[ -f "$PEERS/supergateway/dist/index.js" ] || (cd "$HERE/peers" && npm ci --no-audit --no-fund > /dev/null)
DIR=$(mktemp -d)
PIDS=
trap 'for p in $PIDS; do kill $p 2>/dev/null; wait $p 2>/dev/null; done; rm -rf "$DIR"' EXIT
awk 'BEGIN { for (i = 0; i < 32; i++) printf "line %02d of a two-KiB file for the bench: %s\n", i, "abcdefghij" }' > "$DIR/small.txt"
head -c 2048 "$DIR/small.txt" > "$DIR/s" && mv "$DIR/s" "$DIR/small.txt"
printf 'roots: [%s]\nhttp: {access_log: "off"}\n' "$DIR" > "$DIR/burrow.yaml"
"$BIN" mcp --config "$DIR/burrow.yaml" --http 127.0.0.1:0 2> "$DIR/err" &
PIDS="$PIDS $!"
PORT=$(( 20000 + $(od -An -N2 -tu2 /dev/urandom) % 20000 ))
node "$PEERS/supergateway/dist/index.js" --stdio "node $PEERS/@modelcontextprotocol/server-filesystem/dist/index.js $DIR" \
  --outputTransport streamableHttp --stateful --port "$PORT" --logLevel info > "$DIR/gw" 2>&1 &
PIDS="$PIDS $!"
i=0
until grep -q 'at http://' "$DIR/err" && grep -qi 'listening on port' "$DIR/gw"; do
  i=$((i + 1)); [ $i -lt 400 ] || { cat "$DIR/err" "$DIR/gw"; exit 1; }; sleep 0.05
done
URL=$(grep -o 'http://[^ ]*/mcp' "$DIR/err" | head -1)
GW=http://127.0.0.1:$PORT/mcp
session() { # session URL VERSION -> its Mcp-Session-Id, initialized
  curl -sS -D "$DIR/h" -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"$2\",\"capabilities\":{},\"clientInfo\":{\"name\":\"wrk\",\"version\":\"1\"}}}" "$1"
  sid=$(tr -d '\r' < "$DIR/h" | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *//p')
  [ -n "$sid" ] || { echo "no Mcp-Session-Id from $1:" >&2; cat "$DIR/h" >&2; exit 1; }
  curl -sS -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
    -H "Mcp-Session-Id: $sid" -H "MCP-Protocol-Version: $2" \
    -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$1"
  echo "$sid"
}
SID=$(session "$URL" 2025-11-25)
OSID=$(session "$GW" 2025-06-18)
echo "# $BIN against the official filesystem server behind supergateway, load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
echo "# one connection, taking turns: server round calls/s p50_ms p99_ms mean_ms errors non2xx no_result"
wrk -t1 -c1 -d2s -s "$HERE/wrk_official.lua" "$GW" -- "$OSID" "$DIR/small.txt" > /dev/null # warm up
: > "$DIR/one"
n=1
while [ $n -le "$ROUNDS" ]; do
  echo "official $n $(wrk -t1 -c1 -d${SECS}s --latency -s "$HERE/wrk_official.lua" "$GW" -- "$OSID" "$DIR/small.txt" | grep '^RESULT')" | tee -a "$DIR/one"
  echo "stateless $n $(wrk -t1 -c1 -d${SECS}s --latency -s "$HERE/wrk_stateless.lua" "$URL" | grep '^RESULT')" | tee -a "$DIR/one"
  echo "session $n $(wrk -t1 -c1 -d${SECS}s --latency -s "$HERE/wrk_session.lua" "$URL" -- "$SID" | grep '^RESULT')" | tee -a "$DIR/one"
  n=$((n + 1))
done
awk '{ split($4, a, "="); v[$1] = v[$1] " " a[2] }
  function med(s,   x, n, i, j, t) { n = split(s, x, " ");
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] + 0 < x[i] + 0) { t = x[i]; x[i] = x[j]; x[j] = t }
    return x[int((n + 1) / 2)] }
  END { o = med(v["official"]); l = med(v["stateless"]); s = med(v["session"]);
    printf "median calls/s: official %d, burrow stateless %d (%.1fx the official), burrow session %d (%.1fx)\n", o, l, l / o, s, s / o }' "$DIR/one"
