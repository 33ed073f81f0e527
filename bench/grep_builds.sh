#!/bin/bash
# bench/grep_builds.sh BIN_A BIN_B [RUNS] [TREE]: two burrow builds' grep
# over one tree (default /usr/include), runs alternating A, B so load
# drifts hit both; prints the CPU seconds (user+sys) each spent over RUNS
# runs and the median wall time, per pattern, and B/A. Used to show a change
# to grep's per-file work costs nothing on a UTF-8 tree (docs/benchmarks.md,
# "Two builds' grep"):
# run it twice with A and B swapped, the machine is shared.
set -eu
A=$1 B=$2 N=${3:-21} TREE=${4:-/usr/include}
cd "$TREE"
T=$(mktemp)
trap 'rm -f "$T"' EXIT
for pat in 'restrict' '\\w+_MAX\\b'; do
  declare -a wa=() wb=()
  ca=0 cb=0
  for _ in $(seq "$N"); do
    for w in A B; do
      bin=${!w}
      s=$(date +%s%N)
      /usr/bin/time -o "$T" -f "%U %S" "$bin" call grep "{\"pattern\":\"$pat\",\"path\":\".\",\"output_mode\":\"count\"}" \
        --root . --cap max_entries=100000000 --cap max_result_bytes=4GiB >/dev/null 2>&1
      ms=$(( ($(date +%s%N) - s) / 1000000 ))
      cpu=$(awk '{print $1 + $2}' "$T")
      if [ "$w" = A ]; then wa+=("$ms"); ca=$(echo "$ca + $cpu" | bc); else wb+=("$ms"); cb=$(echo "$cb + $cpu" | bc); fi
    done
  done
  ma=$(printf '%s\n' "${wa[@]}" | sort -n | sed -n "$(( (N + 1) / 2 ))p")
  mb=$(printf '%s\n' "${wb[@]}" | sort -n | sed -n "$(( (N + 1) / 2 ))p")
  printf 'pattern %-12s CPU A %5.2fs B %5.2fs B/A %.3f | median wall A %d ms B %d ms B/A %.3f\n' \
    "$pat" "$ca" "$cb" "$(echo "scale=4; $cb / $ca" | bc)" "$ma" "$mb" "$(echo "scale=4; $mb / $ma" | bc)"
done
