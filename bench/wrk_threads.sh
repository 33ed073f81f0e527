#!/bin/sh
# Where a stateless call's time goes, thread by thread: wrk at each of
# CONNS connections (a stateless read_file of a 2 KiB file, as
# bench/wrk_http.sh) and, for each of the server's threads over the run,
# a call's share of its sleeps (voluntary context switches), its
# preemptions (involuntary ones), its CPU (/proc/PID/task/TID/stat) and
# its time ready but waiting for a CPU (schedstat): docs/benchmarks.md,
# "fewer sleeps a hop; the tail is the machine's". Threads a run left idle
# are not shown.
#   bench/wrk_threads.sh [BURROW_BIN] [SECONDS] [CONNS...]   (default: 50; needs wrk)
set -eu
BIN=${1:-build/burrow}
SECS=${2:-6}
[ $# -ge 2 ] && shift 2 || shift $#
[ $# -gt 0 ] || set -- 50
HERE=$(cd "$(dirname "$0")" && pwd)
DIR=$(mktemp -d)
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$DIR"' EXIT
awk 'BEGIN { for (i = 0; i < 32; i++) printf "line %02d of a two-KiB file for the bench: %s\n", i, "abcdefghij" }' > "$DIR/small.txt"
head -c 2048 "$DIR/small.txt" > "$DIR/s" && mv "$DIR/s" "$DIR/small.txt"
printf 'roots: [%s]\nhttp: {access_log: "off", max_calls: 64}\n' "$DIR" > "$DIR/burrow.yaml"
"$BIN" mcp --config "$DIR/burrow.yaml" --http 127.0.0.1:0 2> "$DIR/err" &
PID=$!
i=0
until grep -q 'at http://' "$DIR/err" 2>/dev/null; do i=$((i + 1)); [ $i -lt 200 ] || { cat "$DIR/err"; exit 1; }; sleep 0.05; done
URL=$(grep -o 'http://[^ ]*/mcp' "$DIR/err" | head -1)
wrk -t1 -c4 -d2s -s "$HERE/wrk_stateless.lua" "$URL" > /dev/null # warm up
# each thread: name, voluntary and involuntary switches, CPU ticks, run-queue wait (ns)
counters() {
  for d in /proc/$PID/task/*; do
    echo "$(tr ' ' _ < $d/comm) $(awk '/^voluntary_ctxt/ { v = $2 } /^nonvoluntary_ctxt/ { n = $2 } END { print v, n }' $d/status)" \
      "$(awk '{ print $14 + $15 }' $d/stat) $(awk '{ print $2 }' $d/schedstat)"
  done
}
HZ=$(getconf CLK_TCK)
echo "# $BIN, load average $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs"
for c in "$@"; do
  t=$c; [ $t -gt 2 ] && t=2
  counters > "$DIR/c0"
  r=$(wrk -t$t -c$c -d${SECS}s --latency -s "$HERE/wrk_stateless.lua" "$URL" | grep '^RESULT')
  counters > "$DIR/c1"
  echo "$c connections: $r" | awk '{ for (i = 1; i <= NF; i++) { if ($i ~ /^mean_ms=/) m = substr($i, 9); if ($i ~ /^p99_ms=/) p = substr($i, 8) }
    printf "%s p99/mean=%.1f\n", $0, p / m }'
  calls=$(echo "$r" | sed 's/.*calls_s=\([0-9]*\).*/\1/')
  paste "$DIR/c0" "$DIR/c1" | awk -v n=$((calls * SECS)) -v hz="$HZ" '
    { d = $9 - $4; if (($7 - $2) + ($8 - $3) < 3 && d == 0) next
      printf "  %-12s a call: sleeps %.2f, preempted %.2f, CPU %.1f us, waiting for a CPU %.1f us\n",
        $1, ($7 - $2) / n, ($8 - $3) / n, d / hz * 1e6 / n, ($10 - $5) / 1000 / n }'
done
