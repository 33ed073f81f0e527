#!/bin/sh
# Start-up against its anchors in one run (docs/benchmarks.md, Start-up):
#  - `BIN call stat` as a process against /bin/true (hyperfine, in 5
#    rounds of RUNS/5 runs each), medians and the ratio;
#  - its CPU time against /bin/true's (bench/startup_cpu.py, RUNS each,
#    taking turns);
#  - its page faults against /bin/true's (perf stat -r 100, if perf runs);
#  - spawn -> initialize result of `BIN mcp` against the static C floor
#    (bench/startup.mjs, which builds bench/init_floor.c).
#   bench/startup.sh [RUNS] [BIN...]    (needs hyperfine, node and python3)
# No BIN: the checkout installed into a scratch prefix (bench/installed.sh);
# several: all timed in the same runs (before and after, say).
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
RUNS=${1:-300}
[ $# -gt 0 ] && shift
if [ $# -eq 0 ]; then
  . "$REPO/bench/installed.sh"
  set -- "$BIN"
fi
BINS="$*" # paths without spaces
ROOT=$(mktemp -d)
trap 'rm -rf "$ROOT"' EXIT
echo "a small file" > "$ROOT/a.txt"
echo "# load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
set -- /bin/true
for b in $BINS; do set -- "$@" "$b call stat '{\"path\":\"a.txt\"}' --root $ROOT"; done
# hyperfine runs one command's runs after another's: in 5 rounds of
# RUNS/5, so a burst of load on a shared machine falls on every command;
# each command's median of its rounds' medians
for r in 1 2 3 4 5; do
  (cd "$ROOT" && hyperfine -N --warmup 10 --runs $((RUNS / 5)) --export-json "$ROOT/h$r.json" "$@" > /dev/null)
done
node -e '
const rounds = process.argv.slice(1).map((f) => require(f).results);
const med = (a) => { const s = [...a].sort((x, y) => x - y); return s[s.length >> 1]; };
const m = rounds[0].map((_, i) => med(rounds.map((r) => r[i].median)));
rounds[0].forEach((x, i) => console.log(`${x.command.split(" ")[0]}${i ? " call stat" : ""}: median ${(m[i] * 1e3).toFixed(2)} ms (rounds: ${rounds.map((r) => (r[i].median * 1e3).toFixed(2)).join(" ")}), ${(m[i] / m[0]).toFixed(2)}x /bin/true`));
' "$ROOT"/h1.json "$ROOT"/h2.json "$ROOT"/h3.json "$ROOT"/h4.json "$ROOT"/h5.json
# CPU time (user + sys) taking turns: moves less with the load than wall time
python3 "$REPO/bench/startup_cpu.py" "$RUNS" "$ROOT" $BINS
if perf stat -e page-faults true > /dev/null 2>&1; then
  for c in /bin/true $BINS; do
    if [ "$c" = /bin/true ]; then set -- /bin/true; else set -- "$c" call stat '{"path":"a.txt"}' --root "$ROOT"; fi
    n=$(cd "$ROOT" && perf stat -x, -e page-faults -r 100 "$@" 2>&1 >/dev/null | awk -F, '/page-faults/ {print $1}')
    echo "$1: $n page faults"
  done
fi
# shellcheck disable=SC2086
set -- $BINS
first=$1
shift
node "$REPO/bench/startup.mjs" "$first" 40 "$ROOT" "$@"
