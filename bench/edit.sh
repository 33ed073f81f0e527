#!/usr/bin/env bash
# bench/edit.sh: edit_file through MCP, burrow against the official MCP
# filesystem server in the same run (bench/edit_bench.mjs): one edit in a
# 50 MiB file and 1,000 small edits in one session. Writes the table into
# docs/benchmarks.md between the edit-bench markers; raw JSON goes to
# bench/results/. `make bench` runs it after bench/run.sh's own servers.
#
# Environment (all optional):
#   BURROW_BIN        burrow binary (default: the checkout installed into a scratch prefix: bench/installed.sh)
#   BENCH_HARNESS     a copy of shared/bench with node_modules installed (bench/run.sh
#                     passes its own); else one is made in a temp dir with npm ci
#   BENCH_SRC         the harness to copy (default ../shared/bench, else /work/shared/bench)
#   BENCH_EDIT_RUNS   calls on the 50 MiB file (default 5)
#   BENCH_EDIT_N      small edits (default 1000)
#   BENCH_EDIT_ROUNDS rounds, alternating the servers; medians over rounds (default 3)
#   BENCH_OUT         report (default docs/benchmarks.md)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$REPO/bench/installed.sh" # BIN: BURROW_BIN, or the checkout installed
OUT=${BENCH_OUT:-$REPO/docs/benchmarks.md}
RUNS=${BENCH_EDIT_RUNS:-5}
N=${BENCH_EDIT_N:-1000}
ROUNDS=${BENCH_EDIT_ROUNDS:-3}
[ -x "$BIN" ] || { echo "bench/edit: $BIN not found: run make first" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/burrow-edit-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
H=${BENCH_HARNESS:-}
if [ -z "$H" ] || [ ! -d "$H/node_modules" ]; then
  if [ -n "${BENCH_SRC:-}" ]; then SRC=$BENCH_SRC
  elif [ -f "$(dirname "$REPO")/shared/bench/bench.mjs" ]; then SRC=$(dirname "$REPO")/shared/bench
  else SRC=/work/shared/bench; fi
  H=$TMP/harness
  echo "+ harness: $SRC -> $H; npm ci"
  cp -r "$SRC" "$H" && chmod -R u+w "$H" && rm -rf "$H/node_modules"
  (cd "$H" && npm ci --no-audit --no-fund --loglevel=error)
fi
OFFICIAL=$H/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js
[ -f "$OFFICIAL" ] || { echo "bench/edit: $OFFICIAL not found" >&2; exit 2; }

mkdir -p "$REPO/bench/results"
JSON=$REPO/bench/results/edit-$(date -u +%Y%m%dT%H%M%SZ).json
echo "+ node bench/edit_bench.mjs --runs $RUNS --n $N --rounds $ROUNDS -> ${OUT#"$REPO"/}"
node "$REPO/bench/edit_bench.mjs" --ws "$TMP/ws" --official "$OFFICIAL" --burrow "$BIN" \
  --runs "$RUNS" --n "$N" --rounds "$ROUNDS" --json "$JSON" --out "$OUT"
echo "raw results: ${JSON#"$REPO"/}"
