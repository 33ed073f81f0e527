#!/usr/bin/env bash
# bench/grep_shapes.sh: burrow's grep against ripgrep on four shapes of
# corpus, in the same run: a tree of many small files (a real node_modules
# installed from the npm registry, >= 30k files), one generated ~200 MB text
# file (the system's C headers repeated), the same 200 MB cut into 4 MiB
# files in one directory ("mid"), the Linux tree bench/grep.sh uses
# when it is already extracted, and "src": a 20,000-file part of that tree
# made a git repository, so its ~300 .gitignore files (a long one at the
# top) apply, as in a real checkout. Six query kinds on each, timed with
# hyperfine (medians of BENCH_GREP_RUNS runs after a warm-up, output to a
# file); burrow as a one-shot `burrow call grep`. Prints a markdown table
# of medians, the ratio burrow / rg, and both result counts (rg lines or
# files vs burrow's total) so a speed-up with a different answer shows.
#
# Environment (all optional):
#   BURROW_BIN       burrow binary (default: the checkout installed into a scratch prefix: bench/installed.sh)
#   BURROW_BASE      a second burrow binary to time beside it ("before")
#   BENCH_CACHE      where corpora are built once (default /var/tmp/burrow-shapes)
#   BENCH_GREP_RUNS  hyperfine --runs per command (default 5)
#   BENCH_SHAPES     which corpora (default "small big mid linux src")
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$REPO/bench/installed.sh" # BIN: BURROW_BIN, or the checkout installed
BASE=${BURROW_BASE:-}
CACHE=${BENCH_CACHE:-/var/tmp/burrow-shapes}
RUNS=${BENCH_GREP_RUNS:-5}
SHAPES=${BENCH_SHAPES:-small big mid linux src}
LINUX=${BENCH_LINUX:-/var/tmp/burrow-bench/linux-source-6.1}

[ -x "$BIN" ] || { echo "bench/grep_shapes: $BIN not found: run make first" >&2; exit 2; }
# bench-only Debian packages (not in DEBS): installed when root, else named
need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v hyperfine >/dev/null || need+=(hyperfine)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
  else
    echo "bench/grep_shapes: run as root: apt-get install -y ${need[*]}" >&2
    exit 2
  fi
fi
command -v npm >/dev/null || { echo "bench/grep_shapes: needs node and npm" >&2; exit 2; }

mkdir -p "$CACHE"
# many small files: node_modules of a few common tool chains (pinned majors)
if [[ " $SHAPES " == *" small "* ]] && [ ! -d "$CACHE/small/node_modules" ]; then
  mkdir -p "$CACHE/small"
  echo '{"name":"corpus","version":"1.0.0","private":true}' > "$CACHE/small/package.json"
  echo "+ npm install (once) into $CACHE/small"
  (cd "$CACHE/small" && npm install --no-audit --no-fund --ignore-scripts \
    jest@29 webpack@5 eslint@8 @babel/preset-env@7 typescript@5 rxjs@7 lodash@4 aws-sdk@2 \
    date-fns@2 @mui/material@5 core-js@3 lodash-es@4 >/dev/null)
fi
# one large file: /usr/include's headers in path order, repeated to 200 MiB
if [[ " $SHAPES " == *" big "* || " $SHAPES " == *" mid "* ]] && [ ! -f "$CACHE/big/big.txt" ]; then
  mkdir -p "$CACHE/big"
  echo "+ generating $CACHE/big/big.txt (once)"
  find /usr/include -name '*.h' -type f | LC_ALL=C sort | xargs cat > "$CACHE/seed.txt"
  while [ "$(stat -c %s "$CACHE/big/big.txt" 2>/dev/null || echo 0)" -lt 209715200 ]; do
    cat "$CACHE/seed.txt" >> "$CACHE/big/big.txt"
  done
  truncate -s 209715200 "$CACHE/big/big.txt"
  rm -f "$CACHE/seed.txt"
fi

# medium files: the large file cut at line ends into pieces of 4 MiB, in
# one directory (no directory to spread over the workers)
if [[ " $SHAPES " == *" mid "* ]] && [ ! -f "$CACHE/mid/f000" ]; then
  mkdir -p "$CACHE/mid"
  (cd "$CACHE/mid" && split -C 4194304 -d -a 3 ../big/big.txt f)
fi

# a real source tree of 20k+ files in git: the top-level dirs of the Linux
# tree below, its top .gitignore without Debian's packaging lines (which
# ignore everything but debian/), `git init` so ignore files apply
if [[ " $SHAPES " == *" src "* ]] && [ -d "$LINUX" ] && [ ! -d "$CACHE/src/.git" ]; then
  echo "+ copying a 20k-file part of $LINUX into $CACHE/src (once)"
  rm -rf "$CACHE/src" && mkdir -p "$CACHE/src"
  (cd "$LINUX" && cp -r fs include kernel net sound tools security crypto lib mm block scripts \
    init ipc virt Makefile "$CACHE/src/")
  sed '/^# Debian packaging/,$d' "$LINUX/.gitignore" > "$CACHE/src/.gitignore"
  git -C "$CACHE/src" init -q
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/burrow-shapes.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
CAPS="--cap max_matches=100000000 --cap max_entries=100000000 --cap max_result_bytes=4GiB --cap max_file_size=1GiB"

NAMES=(literal ci_literal alternation rare files count)
# queries that hit on every corpus (JavaScript and C alike), one per kind
RGS=("rg -n function" "rg -n -i deprecated" "rg -n '\w+_SUSPEND|\w+_RESUME'"
  "rg -n '[a-z]+_timeout_ms\s*=\s*[0-9]{4,}'" "rg -l return" "rg -c return")
ARGS=('{"pattern":"function"}' '{"pattern":"deprecated","ignore_case":true}'
  '{"pattern":"\\w+_SUSPEND|\\w+_RESUME"}' '{"pattern":"[a-z]+_timeout_ms\\s*=\\s*[0-9]{4,}"}'
  '{"pattern":"return","output_mode":"files"}' '{"pattern":"return","output_mode":"count"}')

median() { node -e 'const j=require(process.argv[1]); console.log(j.results.map(r => (r.median*1000).toFixed(1)).join(" "))' "$1"; }
# rg's answer as burrow counts it: content lines, files, or summed counts
rg_count() { case $1 in files) wc -l < "$2" ;; count) awk -F: '{s+=$NF} END {print s+0}' "$2" ;; *) wc -l < "$2" ;; esac; }
bw_count() { node -e 'const r=JSON.parse(require("fs").readFileSync(process.argv[1],"utf8")); console.log(r.total ?? r.files?.length ?? "?")' "$2"; }

echo "| corpus | query | rg ms | burrow ms | burrow / rg |${BASE:+ before ms | before / rg |} rg count | burrow count |"
echo "|---|---|---:|---:|---:|${BASE:+---:|---:|}---:|---:|"
for shape in $SHAPES; do
  case $shape in
    small) dir=$CACHE/small ;;
    big) dir=$CACHE/big ;;
    mid) dir=$CACHE/mid ;;
    linux) dir=$LINUX; [ -d "$dir" ] || { echo "(linux tree not at $dir: skipped)" >&2; continue; } ;;
    src) dir=$CACHE/src; [ -d "$dir/.git" ] || { echo "(no linux tree to copy src from: skipped)" >&2; continue; } ;;
  esac
  cd "$dir"
  for i in "${!NAMES[@]}"; do
    name=${NAMES[$i]} rg=${RGS[$i]} args=${ARGS[$i]}
    cmds=(-n rg "$rg > $TMP/rg.out" -n burrow "$BIN call grep '$args' --root . $CAPS > $TMP/bw.out")
    [ -n "$BASE" ] && cmds+=(-n before "$BASE call grep '$args' --root . $CAPS > $TMP/base.out")
    hyperfine --style none --ignore-failure --warmup 1 --runs "$RUNS" --export-json "$TMP/hf.json" "${cmds[@]}" >/dev/null 2>&1
    read -r -a m <<< "$(median "$TMP/hf.json")"
    ratio=$(node -e 'console.log((process.argv[2]/process.argv[1]).toFixed(2))' "${m[0]}" "${m[1]}")
    extra=""
    [ -n "$BASE" ] && extra=" ${m[2]} | $(node -e 'console.log((process.argv[2]/process.argv[1]).toFixed(2))' "${m[0]}" "${m[2]}") |"
    echo "| $shape | $name \`$rg\` | ${m[0]} | ${m[1]} | $ratio |$extra $(rg_count "$name" "$TMP/rg.out") | $(bw_count "$name" "$TMP/bw.out") |"
  done
done
echo
echo "machine: $(nproc) cores, $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg); runs=$RUNS; burrow $(cd "$REPO" && git rev-parse --short HEAD)"
