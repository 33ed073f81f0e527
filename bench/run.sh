#!/usr/bin/env bash
# `make bench`: burrow against the official MCP filesystem server, same
# machine, same workspace, same harness (shared/bench/bench.mjs), same run.
# Writes the raw JSON to bench/results/ and a Markdown table of medians and
# ratios to docs/benchmarks.md. See bench/README.md.
#
# Environment (all optional):
#   BURROW_BIN         burrow binary (default: the checkout installed into a scratch prefix: bench/installed.sh)
#   BENCH_SRC          the harness (default ../shared/bench next to the repo, else /work/shared/bench)
#   BENCH_RUNS         bench.mjs --runs: repetitions of big-file/search/glob/tree (default 5)
#   BENCH_N            bench.mjs --n: small sequential reads (default 1000)
#   BENCH_STARTUP_RUNS bench.mjs --startup-runs (default 5)
#   BENCH_ROUNDS       how many times to run the pair, alternating official/burrow (default 1);
#                      the report takes the median over rounds
#   BENCH_SERVERS      subset to run: "official burrow" (default both)
#   BENCH_OUT          report path (default docs/benchmarks.md)
#   BENCH_KEEP=1       keep the temp dir (harness copy + workspace)
#   BENCH_BYTES=0      skip bench/big_bytes.mjs (the 50 MiB read, client counting bytes, vs the official server)
#   BENCH_GREP=0       skip bench/grep.sh (grep/glob vs rg, GNU grep, fd, find
#                      on the Linux source; its knobs are in that file)
#   BENCH_EDIT=0       skip bench/edit.sh (edit_file vs the official server)
#   BENCH_EDIT_SCALE=0 skip bench/edit_scale.lua (5,000 edits, every newline, a 50 MB notebook vs one read and write)
#   BENCH_POLICY=0     skip bench/policy.lua (no policy vs default + secrets: small reads, grep)
#   BENCH_HTTP=0       skip bench/http.mjs (small reads over Streamable HTTP vs stdio)
#   BENCH_TREE=0       skip bench/tree.sh (folder copy, remove, cross-device move vs coreutils)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$REPO"

. "$REPO/bench/installed.sh" # BIN: BURROW_BIN, or the checkout installed
RUNS=${BENCH_RUNS:-5}
N=${BENCH_N:-1000}
STARTUP_RUNS=${BENCH_STARTUP_RUNS:-5}
ROUNDS=${BENCH_ROUNDS:-1}
SERVERS=${BENCH_SERVERS:-"official burrow"}
OUT=${BENCH_OUT:-$REPO/docs/benchmarks.md}

if [ -n "${BENCH_SRC:-}" ]; then SRC=$BENCH_SRC
elif [ -f "$(dirname "$REPO")/shared/bench/bench.mjs" ]; then SRC=$(dirname "$REPO")/shared/bench
else SRC=/work/shared/bench; fi
[ -f "$SRC/bench.mjs" ] || { echo "bench: harness not found at $SRC (set BENCH_SRC)" >&2; exit 2; }
command -v node >/dev/null && command -v npm >/dev/null || { echo "bench: node and npm are needed" >&2; exit 2; }

case " $SERVERS " in *" burrow "*)
  [ -x "$BIN" ] || { echo "bench: $BIN not found: run make first (or set BURROW_BIN)" >&2; exit 2; } ;;
esac

TMP=$(mktemp -d "${TMPDIR:-/tmp}/burrow-bench.XXXXXX")
if [ "${BENCH_KEEP:-0}" = 1 ]; then echo "bench: keeping $TMP"; else trap 'rm -rf "$TMP"' EXIT; fi
H=$TMP/harness
WS=$TMP/ws
STAMP=$(date -u +%Y%m%dT%H%M%SZ)
RESULTS=$REPO/bench/results
mkdir -p "$RESULTS"

echo "+ harness: $SRC -> $H"
cp -r "$SRC" "$H"
chmod -R u+w "$H"
rm -rf "$H/node_modules"
echo "+ (cd $H && npm ci)"
(cd "$H" && npm ci --no-audit --no-fund --loglevel=error)
echo "+ node gen_workspace.mjs $WS"
node "$H/gen_workspace.mjs" "$WS"

COMMON=(--ws "$WS" --runs "$RUNS" --n "$N" --startup-runs "$STARTUP_RUNS")
# The official server: its tools are auto-detected (read_text_file, head, tail,
# search_files, directory_tree; it has no content search).
OFFICIAL_CMD=(node node_modules/@modelcontextprotocol/server-filesystem/dist/index.js @WS@)
OFFICIAL_OPTS=()
# burrow: read_file pages by lines (default limit 2000) and caps results at
# 256 KiB / files at 50 MiB, so the whole-file read (bench.mjs reads big.txt,
# exactly 50 MiB, in one call and expects all of it) needs a limit above its
# 524,288 lines and raised caps. The head-100 measurement overrides limit.
BURROW_CMD=("$BIN" mcp --root @WS@ --cap max_result_bytes=64MiB --cap max_file_size=64MiB)
BURROW_OPTS=(--read-tool read_file --head-arg limit --read-args '{"path":"$PATH","limit":1000000}')

quote() { # shell-quote for display: plain words as they are, others in single quotes
  local a out= q="'"
  for a in "$@"; do
    if [[ $a =~ ^[A-Za-z0-9_./@=:,+%-]+$ ]]; then out+="${out:+ }$a"
    else out+="${out:+ }'${a//$q/$q\\$q$q}'"; fi
  done
  printf '%s' "$out"
}
# the same, for the report: temp and repo paths written as $WS and relative paths
shown() { local s; s=$(quote "$@"); s=${s//"$WS"/\$WS}; s=${s//"$REPO"\//}; printf '%s' "$s"; }

REPORT_ARGS=(--out "$OUT"
  --cmd-official "node bench.mjs $(shown "${COMMON[@]}" "${OFFICIAL_OPTS[@]}") --json official.json -- $(shown "${OFFICIAL_CMD[@]}")"
  --cmd-burrow "node bench.mjs $(shown "${COMMON[@]}" "${BURROW_OPTS[@]}") --json burrow.json -- $(shown "${BURROW_CMD[@]}")")
FAILED=0

run_one() { # NAME ROUND
  local name=$1 round=$2 rc=0
  local json="$RESULTS/$name-$STAMP-r$round.json"
  local -a opts cmd
  if [ "$name" = official ]; then opts=("${OFFICIAL_OPTS[@]}"); cmd=("${OFFICIAL_CMD[@]}")
  else opts=("${BURROW_OPTS[@]}"); cmd=("${BURROW_CMD[@]}"); fi
  echo
  echo "+ [$name, round $round/$ROUNDS] node bench.mjs $(quote "${COMMON[@]}" "${opts[@]}") --json $json -- $(quote "${cmd[@]}")"
  (cd "$H" && node bench.mjs "${COMMON[@]}" "${opts[@]}" --label "$name" --json "$json" -- "${cmd[@]}" >/dev/null) || rc=$?
  if [ "$rc" != 0 ] || [ ! -s "$json" ]; then
    echo "bench: $name round $round failed (exit $rc)" >&2
    FAILED=1
    REPORT_ARGS+=(--failed "$name")
    return 0
  fi
  REPORT_ARGS+=("--$name" "$json")
}

for ((r = 1; r <= ROUNDS; r++)); do
  for s in $SERVERS; do
    case $s in official|burrow) run_one "$s" "$r" ;; *) echo "bench: unknown server '$s'" >&2; exit 2 ;; esac
  done
done

echo
echo "+ node bench/report.mjs -> ${OUT#"$REPO"/}"
node "$REPO/bench/report.mjs" "${REPORT_ARGS[@]}"
echo "raw results: ${RESULTS#"$REPO"/}/*-$STAMP-*.json"
if [ "${BENCH_BYTES:-1}" != 0 ] && [ -x "$BIN" ]; then
  echo
  echo "+ node bench/big_bytes.mjs BIN \$WS 7 official"
  BENCH_OUT=$OUT node "$REPO/bench/big_bytes.mjs" "$BIN" "$WS" 7 \
    "$H/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" || FAILED=1
fi
if [ "${BENCH_GREP:-1}" != 0 ]; then
  echo
  echo "+ bash bench/grep.sh"
  BENCH_OUT=$OUT BURROW_BIN=$BIN bash "$REPO/bench/grep.sh" || FAILED=1
fi
if [ "${BENCH_POLICY:-1}" != 0 ]; then
  echo "+ lua5.4 bench/policy.lua $OUT"
  BENCH_POLICY_TREE=${BENCH_POLICY_TREE:-} lua5.4 "$REPO/bench/policy.lua" "$OUT" || FAILED=1
fi
if [ "${BENCH_EDIT:-1}" != 0 ]; then
  echo
  echo "+ bash bench/edit.sh"
  BENCH_OUT=$OUT BURROW_BIN=$BIN BENCH_HARNESS=$H bash "$REPO/bench/edit.sh" || FAILED=1
fi
if [ "${BENCH_EDIT_SCALE:-1}" != 0 ]; then
  echo
  echo "+ lua5.4 bench/edit_scale.lua $OUT"
  lua5.4 "$REPO/bench/edit_scale.lua" "$OUT" || FAILED=1
fi
if [ "${BENCH_TREE:-1}" != 0 ]; then
  echo
  echo "+ bash bench/tree.sh"
  BENCH_OUT=$OUT BURROW_BIN=$BIN bash "$REPO/bench/tree.sh" || FAILED=1
fi
if [ "${BENCH_HTTP:-1}" != 0 ]; then
  echo
  echo "+ node bench/http.mjs"
  BENCH_OUT=$OUT BURROW_BIN=$BIN node "$REPO/bench/http.mjs" || FAILED=1
fi
exit "$FAILED"
