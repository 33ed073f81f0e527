#!/usr/bin/env bash
# bench/grep_pair.sh: bench/grep.sh's queries (and its glob) on any tree,
# burrow against rg run by run: each round runs rg, burrow and (with
# BURROW_BASE) a second burrow one after another, the order rotating, so
# all of them see the same load of a shared machine; hyperfine runs one
# command's runs back to back instead, and a load change between commands
# moves their ratio. Reports per query the medians of wall and CPU time
# (user + system, GNU time) and the median over the rounds of each
# round's burrow / rg wall ratio, then the geometric mean of the grep
# ratios. Output goes to a file, as in bench/grep.sh.
#
# usage: bench/grep_pair.sh TREE [ROUNDS]   (default 9 rounds, 1 warm-up)
# Environment: BURROW_BIN (default: the checkout installed, bench/installed.sh),
#   BURROW_BASE (a second burrow, "before"), BENCH_QUERIES (names, comma separated),
#   BENCH_GLOB_ANCHOR (the glob row's anchor instead of rg --files, e.g. "fdfind -g *.h":
#   the rg column of that row is then that command's, named in the row).
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TREE=${1:?usage: bench/grep_pair.sh TREE [ROUNDS]}
ROUNDS=${2:-9}
. "$REPO/bench/installed.sh" # BIN
BASE=${BURROW_BASE:-}
[ -x /usr/bin/time ] || { echo "bench/grep_pair: needs GNU time (apt-get install time)" >&2; exit 2; }
command -v rg >/dev/null || { echo "bench/grep_pair: needs rg (apt-get install ripgrep)" >&2; exit 2; }
TMP=$(mktemp -d "${TMPDIR:-/tmp}/burrow-pair.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
CAPS=(--cap max_matches=100000000 --cap max_entries=100000000 --cap max_result_bytes=4GiB)

NAMES=(literal ci_literal alternation rare files count glob)
RGS=("rg -n rcu_read_lock" "rg -n -i irq_handler" "rg -n \\w+_SUSPEND|\\w+_RESUME"
  "rg -n [a-z]+_timeout_ms\\s*=\\s*[0-9]{4,}" "rg -l EXPORT_SYMBOL_GPL" "rg -c EXPORT_SYMBOL_GPL"
  "${BENCH_GLOB_ANCHOR:-rg --files -g *.h}")
ARGS=('grep {"pattern":"rcu_read_lock"}' 'grep {"pattern":"irq_handler","ignore_case":true}'
  'grep {"pattern":"\\w+_SUSPEND|\\w+_RESUME"}' 'grep {"pattern":"[a-z]+_timeout_ms\\s*=\\s*[0-9]{4,}"}'
  'grep {"pattern":"EXPORT_SYMBOL_GPL","output_mode":"files"}'
  'grep {"pattern":"EXPORT_SYMBOL_GPL","output_mode":"count"}' 'glob {"pattern":"**/*.h"}')

one() { # WHO ARGV...: one timed run, "WHO wall_ms cpu_ms" appended to $TMP/data
  local who=$1; shift
  local t0 t1
  t0=$(date +%s%N)
  /usr/bin/time -f "%U %S" -o "$TMP/time" "$@" > "$TMP/$who.out" 2>/dev/null || true
  t1=$(date +%s%N)
  echo "$who $(((t1 - t0) / 1000)) $(tail -n 1 "$TMP/time" | awk '{print ($1 + $2) * 1000}')" >> "$TMP/data"
}

cd "$TREE"
echo "tree $TREE ($(rg --files | wc -l) files rg searches), $ROUNDS rounds, load $(cut -d' ' -f1-3 /proc/loadavg)"
for i in "${!NAMES[@]}"; do
  [ -n "${BENCH_QUERIES:-}" ] && [[ ",$BENCH_QUERIES," != *",${NAMES[$i]},"* ]] && continue
  read -r -a rg <<< "${RGS[$i]}"
  tool=${ARGS[$i]%% *} json=${ARGS[$i]#* }
  whos=(rg new) && [ -n "$BASE" ] && whos+=(base)
  run() {
    case $1 in
      rg) one rg "${rg[@]}" ;;
      new) one new "$BIN" call "$tool" "$json" --root . "${CAPS[@]}" ;;
      base) one base "$BASE" call "$tool" "$json" --root . "${CAPS[@]}" ;;
    esac
  }
  for w in "${whos[@]}"; do run "$w"; done # warm-up
  : > "$TMP/data"
  for ((r = 0; r < ROUNDS; r++)); do
    for ((j = 0; j < ${#whos[@]}; j++)); do run "${whos[$(((r + j) % ${#whos[@]}))]}"; done
  done
  node -e '
    const lines = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").map(l => l.split(" "));
    const by = {}; for (const [w, us, cpu] of lines) (by[w] ??= []).push([us / 1000, +cpu]);
    const med = a => { const s = [...a].sort((x, y) => x - y), n = s.length; return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2; };
    const out = [process.argv[2].padEnd(12) + (process.argv[3] ? ` (rg = ${process.argv[3]})` : "")];
    for (const w of Object.keys(by)) out.push(`${w} ${med(by[w].map(x => x[0])).toFixed(0)} ms (cpu ${med(by[w].map(x => x[1])).toFixed(0)})`);
    for (const w of Object.keys(by)) if (w !== "rg")
      out.push(`${w}/rg ${med(by[w].map((x, k) => x[0] / by.rg[k][0])).toFixed(2)}`);
    console.log(out.join("  "));' "$TMP/data" "${NAMES[$i]}" \
    "$([ "${NAMES[$i]}" = glob ] && [ -n "${BENCH_GLOB_ANCHOR:-}" ] && echo "$BENCH_GLOB_ANCHOR")" | tee -a "$TMP/report"
done
node -e '
  const rows = require("fs").readFileSync(process.argv[1], "utf8").trim().split("\n").filter(l => !l.startsWith("glob"));
  for (const w of ["new", "base"]) {
    const r = rows.map(l => (l.match(new RegExp(w + "/rg ([0-9.]+)")) || [])[1]).filter(Boolean).map(Number);
    if (r.length) console.log(`geomean of the grep rows, ${w}/rg: ${Math.exp(r.reduce((s, x) => s + Math.log(x), 0) / r.length).toFixed(2)}`);
  }' "$TMP/report"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); burrow $(cd "$REPO" && git rev-parse --short HEAD)"
