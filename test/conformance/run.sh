#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package-lock.json) against `burrow mcp --http`: the `conformance`
# stage of test/run-all.sh.
#
# Runs each server scenario that needs no reference-server fixtures
# (test_* tools, test:// resources), one line per scenario, then
# "conformance: N passed, N failed".
#
# On Node < 22 the suite's `import {globSync} from "fs"` is taken from the
# pinned `glob` package instead (a one-line patch, applied here, idempotent).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 2
HERE=$(pwd)
REPO=$(cd ../.. && pwd)
BIN=${BURROW_BIN:-$REPO/build/burrow}
SCENARIOS=${BURROW_CONFORMANCE_SCENARIOS:-"server-initialize ping logging-set-level tools-list dns-rebinding-protection server-sse-polling server-sse-multiple-streams resources-list"}

if [ ! -d node_modules/@modelcontextprotocol/conformance ]; then
  npm ci --no-audit --no-fund || { echo "conformance: npm ci failed"; echo "conformance: 0 passed, 1 failed"; exit 1; }
fi
SUITE=node_modules/@modelcontextprotocol/conformance/dist/index.js
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  node -e '
    const fs = require("fs"), f = process.argv[1];
    const from = `import{existsSync as a,globSync as o,mkdtempSync as s,promises as c,readFileSync as l}from"fs"`;
    const to = `import{existsSync as a,mkdtempSync as s,promises as c,readFileSync as l}from"fs";import{globSync as o}from"glob"`;
    const s = fs.readFileSync(f, "utf8");
    if (s.includes(from)) fs.writeFileSync(f, s.replace(from, to));
    else if (!s.includes(to)) { console.error("conformance: the globSync import to patch was not found"); process.exit(1); }
  ' "$SUITE" || { echo "conformance: 0 passed, 1 failed"; exit 1; }
fi

WS=$(mktemp -d "${TMPDIR:-/tmp}/burrow-conformance.XXXXXX")
LOG=$WS/server.log
echo "hello" > "$WS/readme.txt"
"$BIN" mcp --root "$WS" --http 127.0.0.1:0 2>"$LOG" &
PID=$!
cleanup() { kill "$PID" 2>/dev/null; wait "$PID" 2>/dev/null; rm -rf "$WS"; }
trap cleanup EXIT
URL=
for _ in $(seq 100); do
  URL=$(grep -oE 'http://[^ ]+/mcp' "$LOG" | head -n 1)
  [ -n "$URL" ] && break
  kill -0 "$PID" 2>/dev/null || break
  sleep 0.1
done
if [ -z "$URL" ]; then
  cat "$LOG"; echo "conformance: the server did not start"; echo "conformance: 0 passed, 1 failed"; exit 1
fi
echo "server: $URL"

pass=0 fail=0
for sc in $SCENARIOS; do
  out=$(timeout 120 node "$SUITE" server --url "$URL" --scenario "$sc" 2>&1); rc=$?
  summary=$(grep -aE 'Passed: [0-9]+/[0-9]+' <<<"$out" | tail -n 1 | sed 's/\x1b\[[0-9;]*m//g')
  if [ "$rc" = 0 ] && [ -n "$summary" ] && grep -qE ', 0 failed' <<<"$summary"; then
    echo "PASS $sc: $summary"; pass=$((pass + 1))
  else
    sed 's/\x1b\[[0-9;]*m//g' <<<"$out" | grep -aE 'FAILURE|WARNING|Error' | head -n 20
    echo "FAIL $sc (exit $rc): ${summary:-no result}"; fail=$((fail + 1))
  fi
done
echo "conformance: $pass passed, $fail failed"
[ "$fail" = 0 ]
