#!/bin/sh
# make soak (issue 45): one token's stateless (MCP 2026-07-28) calls, a
# million of them by default, against `burrow mcp --http` with the quotas
# policy on the embedded store (a call budget and a byte budget per
# principal): the server's RSS must stay flat, since nothing it keeps grows
# with the number of requests. wrk sends the calls in rounds of
# SOAK_ROUND_SECONDS; RSS is read after each round; the last reading must
# be within 10 % of the one after the first 100,000 calls (that the store
# keeps one record per principal is spec/policy/principal_spec.lua's).
#   test/soak/rss_stateless.sh [BURROW_BIN] [CALLS]     (needs wrk)
set -eu
BIN=${1:-build/burrow}
CALLS=${2:-1000000}
ROUND=${SOAK_ROUND_SECONDS:-15}
HERE=$(cd "$(dirname "$0")/../../bench" && pwd)
command -v wrk >/dev/null || { echo "rss_stateless: wrk is missing (apt-get install wrk)"; exit 1; }
DIR=$(mktemp -d)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
head -c 2048 /dev/zero | tr '\0' 'x' > "$DIR/small.txt"
TOKEN=soak-token-0123456789abcdef
SHA=$(printf %s "$TOKEN" | sha256sum | cut -d' ' -f1)
cat > "$DIR/burrow.yaml" <<EOF
roots: [$DIR]
policies: [default, {name: quotas, max_bytes_written: 1GB, max_calls_per_minute: 100000000}]
http: {access_log: "off", max_calls: 64, tokens: [{sha256: $SHA, max_calls: 64}]}
EOF
"$BIN" mcp --config "$DIR/burrow.yaml" --http 127.0.0.1:0 2> "$DIR/err" &
PID=$!
i=0
until grep -q 'at http://' "$DIR/err"; do i=$((i + 1)); [ $i -lt 200 ] || { cat "$DIR/err"; exit 1; }; sleep 0.05; done
URL=$(grep -o 'http://[^ ]*/mcp' "$DIR/err" | head -1)
rss() { awk '/^VmRSS/ { print $2 }' "/proc/$PID/status"; }
done_calls=0 base= last=
echo "calls rss_kib"
while [ "$done_calls" -lt "$CALLS" ]; do
  out=$(wrk -t2 -c16 -d${ROUND}s -H "Authorization: Bearer $TOKEN" -s "$HERE/wrk_stateless.lua" "$URL")
  n=$(printf '%s\n' "$out" | awk '/requests in/ { print $1 }')
  bad=$(printf '%s\n' "$out" | sed -n 's/.*non2xx=\([0-9]*\).*/\1/p')
  [ "${bad:-0}" = 0 ] || { printf '%s\n' "$out"; echo "rss_stateless: $bad answers were not results"; exit 1; }
  done_calls=$((done_calls + n))
  last=$(rss)
  if [ -z "$base" ] && [ "$done_calls" -ge 100000 ]; then base=$last; fi
  echo "$done_calls $last"
done
[ -n "$base" ] || base=$last
limit=$((base + base / 10))
echo "rss_stateless: $done_calls calls; RSS $base KiB after the first 100,000, $last KiB at the end (limit $limit)"
[ "$last" -le "$limit" ] || { echo "rss_stateless: RSS grew past 10 %"; exit 1; }
