#!/bin/sh
# Calls/s of one and of three `burrow mcp --http` instances behind HAProxy
# (balance roundrobin, no stick table), all with one Redis state store and
# quotas, so every call makes its round trip to the store (issue 45): wrk's
# stateless (MCP 2026-07-28) read_file of a 2 KiB file, bench/wrk_stateless.lua.
# The redis-server and HAProxy are started here on free loopback ports.
# On one 2-core machine three instances share the same two cores: the
# figure says what the store and the proxy cost, not what more machines buy.
#   bench/wrk_instances.sh [BURROW_BIN] [SECONDS] [CONNECTIONS]
#   (needs wrk, redis-server, redis-cli, haproxy)
set -eu
BIN=$(cd "$(dirname "${1:-build/burrow}")" && pwd)/$(basename "${1:-build/burrow}")
SECS=${2:-10}
CONNS=${3:-16}
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d)
PIDS= RPID=
trap 'kill $PIDS $RPID 2>/dev/null; wait 2>/dev/null; rm -rf "$DIR"' EXIT
free() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
RPORT=$(free)
redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" > "$DIR/redis.log" 2>&1 &
RPID=$!
until redis-cli -p "$RPORT" ping > /dev/null 2>&1; do sleep 0.05; done
awk 'BEGIN { for (i = 0; i < 32; i++) printf "line %02d of a two-KiB file for the bench: %s\n", i, "abcdefghij" }' > "$DIR/small.txt"
printf 'roots: [%s]\npolicies: [default, {name: quotas, max_calls_per_minute: 100000000}]\nstate: {url: "redis://127.0.0.1:%s/0"}\nhttp: {access_log: "off", max_calls: 64}\n' \
  "$DIR" "$RPORT" > "$DIR/burrow.yaml"

start() { # n: start n instances; their ports go in $DIR/ports
  : > "$DIR/ports"
  k=0
  while [ $k -lt "$1" ]; do
    "$BIN" mcp --config "$DIR/burrow.yaml" --http 127.0.0.1:0 > /dev/null 2> "$DIR/err$k" &
    PIDS="$PIDS $!"
    i=0
    until grep -q 'at http://' "$DIR/err$k"; do i=$((i + 1)); [ $i -lt 200 ] || { cat "$DIR/err$k"; exit 1; }; sleep 0.05; done
    grep -o 'http://[^ ]*/mcp' "$DIR/err$k" | head -1 | sed 's|.*:\([0-9]*\)/mcp|\1|' >> "$DIR/ports"
    k=$((k + 1))
  done
}

proxy() { # HAProxy in front of the ports in $DIR/ports; its port in $HP
  HP=$(free)
  {
    printf 'global\n  maxconn 4000\ndefaults\n  mode http\n  timeout connect 5s\n  timeout client 1m\n  timeout server 1m\n'
    printf 'frontend mcp\n  bind 127.0.0.1:%s\n  default_backend burrow\nbackend burrow\n  balance roundrobin\n' "$HP"
    n=0; while read -r p; do n=$((n + 1)); printf '  server b%s 127.0.0.1:%s\n' "$n" "$p"; done < "$DIR/ports"
  } > "$DIR/haproxy.cfg"
  haproxy -f "$DIR/haproxy.cfg" -db > "$DIR/haproxy.log" 2>&1 &
  PIDS="$PIDS $!"
  until curl -s -o /dev/null "http://127.0.0.1:$HP/healthz"; do sleep 0.05; done
}

echo "instances connections calls/s p50_ms p99_ms errors non2xx"
for n in 1 3; do
  start $n
  proxy
  wrk -t2 -c4 -d2s -s "$HERE/wrk_stateless.lua" "http://127.0.0.1:$HP/mcp" > /dev/null # warm up
  r=$(wrk -t2 -c"$CONNS" -d"${SECS}s" --latency -s "$HERE/wrk_stateless.lua" "http://127.0.0.1:$HP/mcp" | grep '^RESULT')
  echo "$n $CONNS $r"
  # this round's instances and proxy go; the store stays
  kill $PIDS 2>/dev/null || true
  wait $PIDS 2>/dev/null || true
  PIDS=
done
