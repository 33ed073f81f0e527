#!/usr/bin/env bash
# Run the libFuzzer targets built by `make fuzz-build` (build/fuzz/fuzz_NAME,
# one per host/fuzz/fuzz_NAME.c), one after the other, each for SECONDS,
# starting from its seeds in host/fuzz/corpus/NAME.
#
#   host/fuzz/run.sh [--keep] SECONDS [NAME...]
#
# `make fuzz` passes --keep: the inputs that found new coverage are kept in
# build/fuzz/corpus/NAME and the next run starts from them too. Without it
# (`make test`) they go to a temp dir, so a run depends on the seeds alone.
# A crash, a sanitizer report, a timeout or a failed check stops the target;
# the input is saved in build/fuzz/crashes/NAME/ and the target fails.
#
# Prints one line per target and closes with "N passed, N failed"; exits
# non-zero if a target failed or is missing.
#
# Environment: FUZZ_B (default build/fuzz), FUZZ_TIMEOUT (seconds one input
# may take, default 20), FUZZ_RSS_MB (default 2048).

set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2

keep=0
if [ "${1:-}" = --keep ]; then keep=1; shift; fi
seconds=${1:-}
case $seconds in ''|*[!0-9]*) echo "usage: host/fuzz/run.sh [--keep] SECONDS [NAME...]" >&2; exit 2 ;; esac
shift
B=${FUZZ_B:-build/fuzz}
names=("$@")
if [ ${#names[@]} = 0 ]; then
  for c in host/fuzz/fuzz_*.c; do n=${c#host/fuzz/fuzz_}; names+=("${n%.c}"); done
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/burrow-fuzz-run.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
for n in "${names[@]}"; do
  bin=$B/fuzz_$n seeds=host/fuzz/corpus/$n crashes=$B/crashes/$n log=$tmp/$n.log
  if [ ! -x "$bin" ]; then
    printf '%-16s FAILED: %s is missing (make fuzz-build)\n' "fuzz_$n" "$bin"
    failed=$((failed + 1)); continue
  fi
  if [ $keep = 1 ]; then corpus=$B/corpus/$n; else corpus=$tmp/corpus-$n; fi
  mkdir -p "$corpus" "$crashes"
  dirs=("$corpus")
  [ -d "$seeds" ] && dirs+=("$seeds")
  start=$(date +%s)
  "$bin" -max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-20}" \
    -rss_limit_mb="${FUZZ_RSS_MB:-2048}" -print_final_stats=1 \
    -artifact_prefix="$crashes/" "${dirs[@]}" >"$log" 2>&1 </dev/null
  rc=$?
  took=$(( $(date +%s) - start ))
  runs=$(grep -aoE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' | tail -n 1)
  cov=$(grep -aoE 'cov: [0-9]+' "$log" | tail -n 1)
  if [ $rc = 0 ]; then
    printf '%-16s ok      %4ss  %9s runs  %s\n' "fuzz_$n" "$took" "${runs:-?}" "${cov:-}"
    passed=$((passed + 1))
  else
    why=$(grep -aE 'FUZZ CHECK FAILED|ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|SUMMARY:' "$log" | head -n 1)
    input=$(grep -aoE "Test unit written to [^ ]+" "$log" | tail -n 1 | sed 's/^Test unit written to //')
    printf '%-16s FAILED  %4ss  %9s runs  %s\n' "fuzz_$n" "$took" "${runs:-?}" "${why:-exit $rc}"
    [ -n "$input" ] && printf '%-16s         input saved: %s (replay: %s %s)\n' "" "$input" "$bin" "$input"
    # a sanitizer's report: its first frames (a failed check said it all)
    grep -aE -A14 'ERROR: (AddressSanitizer|LeakSanitizer)|runtime error:' "$log" | head -n 16 | sed 's/^/    /'
    failed=$((failed + 1))
  fi
done
echo "fuzz: $passed passed, $failed failed"
[ $failed = 0 ]
