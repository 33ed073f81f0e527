#!/bin/sh
# The instructions a call costs the HTTP server, counted by callgrind: a
# session-era (2025-11-25) and a stateless (2026-07-28) read_file of a
# 2 KiB file on one connection (bench/wrk_session.lua, wrk_stateless.lua),
# taking turns ROUNDS times, the server's user-space instructions (all its
# threads) divided by the calls wrk made. A count, not a time: the same on
# a busy machine as on an idle one, where bench/wrk_http.sh's rates and CPU
# times move by ±30%. It leaves out the kernel (syscalls, context
# switches, loopback TCP), which wrk_http.sh's CPU a call has.
# valgrind has no openat2: the walk resolver serves under it.
#   bench/http_instructions.sh [BURROW_BIN] [SECONDS] [ROUNDS]
#   (needs wrk and valgrind: apt-get install wrk valgrind)
set -eu
BIN=${1:-build/burrow}
SECS=${2:-5}
ROUNDS=${3:-2}
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
awk 'BEGIN { for (i = 0; i < 32; i++) printf "line %02d of a two-KiB file for the bench: %s\n", i, "abcdefghij" }' > "$DIR/small.txt"
head -c 2048 "$DIR/small.txt" > "$DIR/s" && mv "$DIR/s" "$DIR/small.txt"
printf 'roots: [%s]\nhttp: {access_log: "off", max_calls: 64}\n' "$DIR" > "$DIR/burrow.yaml"
BURROW_RESOLVER=walk valgrind --tool=callgrind --callgrind-out-file="$DIR/cg.%p.%n" \
  "$BIN" mcp --config "$DIR/burrow.yaml" --http 127.0.0.1:0 2> "$DIR/err" &
PID=$!
i=0
until grep -aq 'at http://' "$DIR/err"; do i=$((i + 1)); [ $i -lt 600 ] || { cat "$DIR/err"; exit 1; }; sleep 0.1; done
URL=$(grep -ao 'http://[^ ]*/mcp' "$DIR/err" | head -1)
curl -sS -D "$DIR/h" -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"wrk","version":"1"}}}' "$URL"
SID=$(tr -d '\r' < "$DIR/h" | sed -n 's/^[Mm]cp-[Ss]ession-[Ii]d: *//p')
[ -n "$SID" ] || { echo "no Mcp-Session-Id in the initialize answer:"; cat "$DIR/h"; exit 1; }
curl -sS -o /dev/null -H 'Content-Type: application/json' -H 'Accept: application/json, text/event-stream' \
  -H "Mcp-Session-Id: $SID" -H 'MCP-Protocol-Version: 2025-11-25' \
  -d '{"jsonrpc":"2.0","method":"notifications/initialized"}' "$URL"
# warm: each path's code loaded, its caches filled
wrk -t1 -c1 -d2s --timeout 30s -s "$HERE/wrk_session.lua" "$URL" -- "$SID" > /dev/null
wrk -t1 -c1 -d2s --timeout 30s -s "$HERE/wrk_stateless.lua" "$URL" > /dev/null
echo "# $BIN under callgrind, $SECS s a turn"
echo "era round calls instructions_a_call"
n=1
while [ $n -le "$ROUNDS" ]; do
  for era in session stateless; do
    callgrind_control -z $PID > /dev/null 2>&1
    if [ $era = session ]; then r=$(wrk -t1 -c1 -d${SECS}s --timeout 30s -s "$HERE/wrk_session.lua" "$URL" -- "$SID" | grep '^RESULT')
    else r=$(wrk -t1 -c1 -d${SECS}s --timeout 30s -s "$HERE/wrk_stateless.lua" "$URL" | grep '^RESULT'); fi
    echo "$r" | grep -q 'errors=0 non2xx=0 no_result=0$' || { echo "bad answers: $r"; exit 1; }
    before=$(ls "$DIR" | grep -c '^cg\.' || true)
    callgrind_control -d "$era$n" $PID > /dev/null 2>&1
    i=0
    until [ "$(ls "$DIR" | grep -c '^cg\.')" -gt "$before" ]; do i=$((i + 1)); [ $i -lt 100 ] || exit 1; sleep 0.1; done
    sleep 0.5 # the dump written whole
    f=$(ls -t "$DIR"/cg.* | head -1)
    calls=$(echo "$r" | sed 's/.*calls_s=\([0-9]*\).*/\1/')
    awk -v e=$era -v n=$n -v c="$calls" -v s="$SECS" '/^summary:/ { printf "%s %d %d %.0f\n", e, n, c * s, $2 / (c * s) }' "$f"
  done
  n=$((n + 1))
done | tee "$DIR/out"
awk '{ v[$1] = v[$1] " " $4 }
  function med(s,   x, n, i, j, t) { n = split(s, x, " ");
    for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (x[j] + 0 < x[i] + 0) { t = x[i]; x[i] = x[j]; x[j] = t }
    return x[int((n + 1) / 2)] }
  END { s = med(v["session"]); l = med(v["stateless"]);
    printf "median instructions a call: session %d, stateless %d: stateless %.2fx the session\n", s, l, l / s }' "$DIR/out"
