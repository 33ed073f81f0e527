#!/usr/bin/env bash
# bench/grep.sh: burrow's grep and glob against ripgrep, GNU grep, fd and
# find on the Linux kernel source (Debian's linux-source-6.1), same machine,
# same run. Each command is timed with hyperfine (medians of BENCH_GREP_RUNS
# runs after a warm-up, output written to a file so no tool can take the
# /dev/null shortcut); burrow is timed as a one-shot `burrow call` and as
# calls to one running `burrow mcp` (bench/grep_mcp.mjs). Writes the table
# into docs/benchmarks.md between the grep-bench markers.
#
# Environment (all optional):
#   BURROW_BIN       burrow binary (default: the checkout installed into a scratch prefix: bench/installed.sh)
#   BENCH_CACHE      where the tree is extracted once (default /var/tmp/burrow-bench)
#   BENCH_GREP_RUNS  hyperfine --runs per command (default 5)
#   BENCH_OUT        report (default docs/benchmarks.md)
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
. "$REPO/bench/installed.sh" # BIN: BURROW_BIN, or the checkout installed
CACHE=${BENCH_CACHE:-/var/tmp/burrow-bench}
TREE=$CACHE/linux-source-6.1
TARBALL=/usr/src/linux-source-6.1.tar.xz
RUNS=${BENCH_GREP_RUNS:-5}
OUT=${BENCH_OUT:-$REPO/docs/benchmarks.md}

[ -x "$BIN" ] || { echo "bench/grep: $BIN not found: run make first" >&2; exit 2; }

# Debian packages the comparison needs: installed when root, else named.
need=()
command -v rg >/dev/null || need+=(ripgrep)
command -v hyperfine >/dev/null || need+=(hyperfine)
command -v fdfind >/dev/null || command -v fd >/dev/null || need+=(fd-find)
[ -d "$TREE" ] || [ -f "$TARBALL" ] || need+=(linux-source-6.1)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "+ apt-get install -y ${need[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${need[@]}"
  else
    echo "bench/grep: run as root: apt-get install -y ${need[*]}" >&2
    exit 2
  fi
fi
FD=$(command -v fdfind || command -v fd)
if [ ! -d "$TREE" ]; then
  echo "+ extracting $TARBALL into $CACHE (once)"
  mkdir -p "$CACHE"
  tar -xf "$TARBALL" -C "$CACHE"
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/burrow-grep-bench.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
CAPS="--cap max_matches=100000000 --cap max_entries=100000000 --cap max_result_bytes=4GiB"

# Each query: a name, its label in the report, the rg and GNU grep
# commands, and burrow's grep arguments (JSON).
NAMES=(literal ci_literal alternation rare files count)
LABELS=("literal \`rcu_read_lock\`" "case-insensitive literal \`-i irq_handler\`"
  "alternation \`\\w+_SUSPEND|\\w+_RESUME\`" "rare regex \`[a-z]+_timeout_ms\\s*=\\s*[0-9]{4,}\`"
  "files with matches \`-l EXPORT_SYMBOL_GPL\`" "count per file \`-c EXPORT_SYMBOL_GPL\`")
RGS=("rg -n rcu_read_lock" "rg -n -i irq_handler" "rg -n '\w+_SUSPEND|\w+_RESUME'"
  "rg -n '[a-z]+_timeout_ms\s*=\s*[0-9]{4,}'" "rg -l EXPORT_SYMBOL_GPL" "rg -c EXPORT_SYMBOL_GPL")
GNUS=("grep -rnI rcu_read_lock ." "grep -rnIi irq_handler ." "grep -rnIE '\w+_SUSPEND|\w+_RESUME' ."
  "grep -rnIE '[a-z]+_timeout_ms\s*=\s*[0-9]{4,}' ." "grep -rlI EXPORT_SYMBOL_GPL ." "grep -rcI EXPORT_SYMBOL_GPL .")
ARGS=('{"pattern":"rcu_read_lock"}' '{"pattern":"irq_handler","ignore_case":true}'
  '{"pattern":"\\w+_SUSPEND|\\w+_RESUME"}' '{"pattern":"[a-z]+_timeout_ms\\s*=\\s*[0-9]{4,}"}'
  '{"pattern":"EXPORT_SYMBOL_GPL","output_mode":"files"}' '{"pattern":"EXPORT_SYMBOL_GPL","output_mode":"count"}')
GLOB_JSON='{"pattern":"**/*.h"}'

cd "$TREE"
hf() { # NAME CMD...: hyperfine (no match is exit 1: not a failure), JSON in $TMP/NAME.json
  local name=$1; shift
  hyperfine --style basic --ignore-failure --warmup 1 --runs "$RUNS" --export-json "$TMP/$name.json" "$@" >/dev/null
}

: > "$TMP/queries.jsonl"
for i in "${!NAMES[@]}"; do
  name=${NAMES[$i]} rg=${RGS[$i]} gnu=${GNUS[$i]} args=${ARGS[$i]}
  node -e 'const [n, l, r, g, a] = process.argv.slice(1);
    console.log(JSON.stringify({ name: n, label: l, rg: r, gnu: g, base: r, tool: "grep", args: JSON.parse(a) }))' \
    "$name" "${LABELS[$i]}" "$rg" "$gnu" "$args" >> "$TMP/queries.jsonl"
  echo "+ [$name] $rg  |  $gnu  |  burrow call grep '$args'"
  hf "$name" -n rg "$rg > $TMP/$name.rg" -n grep "$gnu > $TMP/$name.grep" \
    -n burrow "$BIN call grep '$args' --root . $CAPS > $TMP/$name.burrow"
done
node -e 'console.log(JSON.stringify({ name: "glob", label: "glob `**/*.h`", base: process.argv[2], tool: "glob", args: JSON.parse(process.argv[1]) }))' \
  "$GLOB_JSON" "$FD -g '*.h'" >> "$TMP/queries.jsonl"
echo "+ [glob] $FD -g '*.h' | find . -name '*.h' | rg --files -g '*.h' | burrow call glob $GLOB_JSON"
hf glob -n fd "$FD -g '*.h' > $TMP/glob.fd" -n find "find . -name '*.h' -type f -not -path '*/.*' > $TMP/glob.find" \
  -n rg "rg --files -g '*.h' > $TMP/glob.rg" -n burrow "$BIN call glob '$GLOB_JSON' --root . $CAPS > $TMP/glob.burrow"

echo "+ node bench/grep_mcp.mjs (one burrow mcp, $RUNS runs per query, each next to a run of rg or fd)"
node "$REPO/bench/grep_mcp.mjs" --bin "$BIN" --root "$TREE" --runs "$RUNS" --queries "$TMP/queries.jsonl" \
  > "$TMP/mcp.json"

node "$REPO/bench/grep_report.mjs" --dir "$TMP" --out "$OUT" --runs "$RUNS" --tree "$TREE" \
  --commit "$(cd "$REPO" && git rev-parse --short HEAD)$(cd "$REPO" && git diff --quiet HEAD -- host lua || echo ' (with uncommitted changes)')" \
  --fd "$(basename "$FD")" --caps "$CAPS"
