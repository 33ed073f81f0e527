#!/usr/bin/env bash
# bench/tree.sh: the subtree operations against coreutils, side by side in
# one run, on one tree of many files (default 11,000 files in 1,100
# directories, ~70 MB): `burrow call copy` against `cp -r && sync -f`,
# `burrow call remove` against `rm -rf`, and a move across filesystems
# (a root on $TREE_XDEV, default /dev/shm) against `mv && sync -f`. Each
# burrow call runs with the secrets policy, so every entry is judged. The
# pair alternates, ROUNDS times; medians and the ratio burrow / coreutils
# are printed (and, with BENCH_OUT, written there between the tree-bench
# markers). Times are wall clock of the whole command, start-up included.
#
# Environment (all optional):
#   BURROW_BIN     burrow binary (default: the checkout installed: bench/installed.sh)
#   TREE_FILES     files in the tree (default 11000)
#   TREE_ROUNDS    rounds (default 5)
#   TREE_XDEV      a directory on another filesystem (default /dev/shm; "" skips the move)
#   BENCH_OUT      a Markdown file to write the table into
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$REPO/bench/installed.sh" # BIN
FILES=${TREE_FILES:-11000}
ROUNDS=${TREE_ROUNDS:-5}
XDEV=${TREE_XDEV-/dev/shm}
[ -x "$BIN" ] || { echo "bench/tree: $BIN not found: run make first" >&2; exit 2; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/burrow-tree-bench.XXXXXX")
XT=
if [ -n "$XDEV" ] && [ -d "$XDEV" ]; then XT=$(mktemp -d "$XDEV/burrow-tree-bench.XXXXXX"); fi
trap 'rm -rf "$TMP" ${XT:+"$XT"}' EXIT

# The tree: FILES files of 1-12 KiB (a source tree's sizes), 10 a directory,
# directories 3 deep, made once and copied for each run (cp -a).
echo "+ making a tree of $FILES files in $TMP/proto"
python3 - "$TMP/proto/tree" "$FILES" <<'EOF'
import os, random, sys
root, n = sys.argv[1], int(sys.argv[2])
rnd = random.Random(28)
for i in range(n):
    d = os.path.join(root, "d%02d" % (i // 1000), "e%02d" % (i // 100 % 10), "f%02d" % (i // 10 % 10))
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "file%05d.c" % i), "wb") as f:
        f.write(rnd.randbytes(rnd.randint(1024, 12 * 1024)))
EOF
du -sh "$TMP/proto/tree" | sed 's/^/+ /'

now() { date +%s%N; }
# run NAME CMD...: the wall time in ms, appended to $TMP/NAME
run() {
  local name=$1; shift
  local t0 t1
  t0=$(now)
  "$@" >/dev/null
  t1=$(now)
  echo $(((t1 - t0) / 1000000)) >>"$TMP/$name"
}
fresh() { rm -rf "$TMP/w" && mkdir -p "$TMP/w" && cp -a "$TMP/proto/tree" "$TMP/w/src" && sync -f "$TMP/w"; }
bw() { "$BIN" call "$1" "$2" --root "$TMP/w" ${3:+--root "$3"} --config "$TMP/policy.yaml"; }
printf 'policies: [default, secrets]\ncaps: {max_tree_ms: 600s}\n' >"$TMP/policy.yaml"

for r in $(seq 1 "$ROUNDS"); do
  echo "+ round $r of $ROUNDS"
  fresh; run cp_copy sh -c "cp -r '$TMP/w/src' '$TMP/w/dst' && sync -f '$TMP/w/dst'"
  fresh; run bw_copy bw copy '{"source":"src","destination":"dst","recursive":true}'
  [ -f "$TMP/w/dst/d00/e00/f00/file00000.c" ] || { echo "bench/tree: burrow's copy is missing files" >&2; exit 1; }
  fresh; run rm_remove rm -rf "$TMP/w/src"
  fresh; run bw_remove bw remove '{"path":"src","recursive":true}'
  [ ! -e "$TMP/w/src" ] || { echo "bench/tree: burrow's remove left the tree" >&2; exit 1; }
  if [ -n "$XT" ]; then
    fresh; rm -rf "$XT/moved"; run mv_move sh -c "mv '$TMP/w/src' '$XT/moved' && sync -f '$XT/moved'"
    fresh; rm -rf "$XT/moved"; run bw_move bw move "{\"source\":\"src\",\"destination\":\"$XT/moved\"}" "$XT"
    [ -f "$XT/moved/d00/e00/f00/file00000.c" ] && [ ! -e "$TMP/w/src" ] ||
      { echo "bench/tree: burrow's move across filesystems did not land" >&2; exit 1; }
    rm -rf "$XT/moved"
  fi
done

median() { sort -n "$TMP/$1" | awk '{v[NR]=$1} END {print (NR % 2) ? v[(NR+1)/2] : int((v[NR/2]+v[NR/2+1])/2)}'; }
row() { # op burrow-file anchor-file anchor-name
  local b a
  b=$(median "$2"); a=$(median "$3")
  printf '| %s | %s ms | %s ms (%s) | %s× |\n' "$1" "$b" "$a" "$4" "$(awk -v b="$b" -v a="$a" 'BEGIN {printf "%.2f", b / (a > 0 ? a : 1)}')"
}
TABLE=$(
  echo "| operation ($FILES files, $(du -sh "$TMP/proto/tree" | cut -f1)) | burrow | coreutils | ratio |"
  echo "|---|---|---|---|"
  row "copy -r" bw_copy cp_copy "cp -r && sync -f"
  row "remove -r" bw_remove rm_remove "rm -rf"
  [ -z "$XT" ] || row "move across filesystems" bw_move mv_move "mv && sync -f"
)
echo
echo "medians of $ROUNDS rounds, $(nproc) cores, $(uname -r):"
echo "$TABLE"
if [ -n "${BENCH_OUT:-}" ] && [ -f "$BENCH_OUT" ]; then
  python3 - "$BENCH_OUT" "$TABLE" "$ROUNDS" <<'EOF'
import sys
path, table, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
s = open(path).read()
a, b = "<!-- tree-bench:start -->", "<!-- tree-bench:end -->"
body = f"{a}\n{table}\n\nMedians of {rounds} rounds (`bench/tree.sh`).\n{b}"
if a in s and b in s:
    s = s[:s.index(a)] + body + s[s.index(b) + len(b):]
else:
    s += "\n" + body + "\n"
open(path, "w").write(s)
EOF
fi
