#!/bin/sh
# The state store's round trips per call (issue 45): one `burrow mcp --http`
# with `state: {url: redis://...}` on a redis-server this script starts on
# a free loopback port (never the system's), N stateless (MCP 2026-07-28)
# calls of each kind, the Redis commands they cost counted from the
# server's INFO commandstats. Run without quotas (reads, stats and writes
# need nothing from the store) and with quotas (each call counts its
# minute, each write its bytes). The /readyz checker's own command (once a
# second) is measured over an idle spell as long as each batch and taken
# off. docs/benchmarks.md, "The state store's round trips".
#   bench/state_roundtrips.sh [BURROW_BIN] [N]     (needs redis-server, redis-cli, curl)
set -eu
BIN=$(cd "$(dirname "${1:-build/burrow}")" && pwd)/$(basename "${1:-build/burrow}")
N=${2:-200}
DIR=$(mktemp -d)
RPID= BPID=
trap 'kill $BPID $RPID 2>/dev/null; wait 2>/dev/null; rm -rf "$DIR"' EXIT
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$DIR" > "$DIR/redis.log" 2>&1 &
RPID=$!
until redis-cli -p "$PORT" ping > /dev/null 2>&1; do sleep 0.05; done
printf 'hello\n' > "$DIR/small.txt"

# round trips so far (what burrow sends: a script run, a read, a ping, a
# write's PUBLISH of its change; each one request and its reply) and commands in all (a script's own calls
# inside the server count in commandstats too)
trips() { redis-cli -p "$PORT" info commandstats | awk -F'[=,:]' '$1 ~ /^cmdstat_(evalsha|eval|hmget|ping|publish)$/ { n += $3 } END { print n + 0 }'; }
cmds() { redis-cli -p "$PORT" info commandstats | awk -F'[=,:]' '/^cmdstat_/ && $1 != "cmdstat_info" { n += $3 } END { print n + 0 }'; }

call() { # tool, arguments JSON
  curl -s -o /dev/null -X POST "$URL" -H 'Content-Type: application/json' -H 'Accept: application/json' \
    -H 'MCP-Protocol-Version: 2026-07-28' -H 'Mcp-Method: tools/call' -H "Mcp-Name: $1" \
    --data "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"$1\",\"arguments\":$2,\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\",\"io.modelcontextprotocol/clientCapabilities\":{}}}}"
}

batch() { # label, tool, arguments JSON
  t0=$(date +%s.%N); r0=$(trips); c0=$(cmds)
  i=0; while [ $i -lt "$N" ]; do call "$2" "$3"; i=$((i + 1)); done
  r1=$(trips); c1=$(cmds); t1=$(date +%s.%N)
  # the idle rate over as long a spell: what the /readyz checker sent meanwhile
  sleep "$(echo "$t1 - $t0" | bc)"; r2=$(trips); c2=$(cmds)
  echo "$1 $N $(echo "scale=2; ($r1 - $r0 - ($r2 - $r1)) / $N" | bc) $(echo "scale=2; ($c1 - $c0 - ($c2 - $c1)) / $N" | bc)"
}

run() { # label, policies YAML
  printf 'roots: [%s]\npolicies: %s\nstate: {url: "redis://127.0.0.1:%s/0"}\nhttp: {access_log: "off", max_calls: 64}\n' \
    "$DIR" "$2" "$PORT" > "$DIR/burrow.yaml"
  "$BIN" mcp --config "$DIR/burrow.yaml" --http 127.0.0.1:0 2> "$DIR/err" &
  BPID=$!
  i=0
  until grep -q 'at http://' "$DIR/err"; do i=$((i + 1)); [ $i -lt 200 ] || { cat "$DIR/err"; exit 1; }; sleep 0.05; done
  URL=$(grep -o 'http://[^ ]*/mcp' "$DIR/err" | head -1)
  call stat '{"path":"small.txt"}' # the workspace opened, the store connected
  batch "$1/read_file" read_file '{"path":"small.txt"}'
  batch "$1/stat" stat '{"path":"small.txt"}'
  batch "$1/write_file" write_file '{"path":"w.txt","content":"x"}'
  kill $BPID; wait $BPID 2>/dev/null || true; BPID=
}

echo "policies/tool calls round_trips_per_call redis_commands_per_call"
run none '[default]'
run quotas '[default, {name: quotas, max_bytes_written: 1GB, max_calls_per_minute: 1000000}]'
