#!/usr/bin/env bash
# burrow's test driver; `make test` calls it after building.
#
# Runs, in order, and keeps going when one stage fails:
#   1. core     build/test_* for each host/test/test_*.c (a missing binary fails),
#               host/test/exports.sh (nm -D), host/test/arrows.sh (the layer
#               arrows: includes and nm), host/test/requires.lua (no require
#               cycle in lua/, lazy requires too) and host/test/docpaths.lua
#               (every path docs and comments cite exists); each ends
#               "N passed, N failed"
#   2. busted   busted --lua=lua5.4 -o TAP, BURROW_RESOLVER=openat2, with a
#               TMPDIR of its own: a folder of the spec helpers left
#               there (burrow-spec.*, burrow-sec.*: a spec that makes one
#               removes it: H.cleanup, F.rmtree, F.cleanup_temps) is
#               named and the stage counts 1 failed
#   3. busted   the same with BURROW_RESOLVER=walk    (the fallback resolver),
#               over the specs that exercise a resolver (WALK_SPECS below);
#               the others run once, in 2. With two CPUs or more 2 and 3
#               run at once, 2 as two busted processes (WALK_SPECS, the
#               rest); the long race, crash and soak runs are `make soak`'s
#   4. packs-reworded  busted over spec/packs with BURROW_TEST_REWORD set: every
#               native message a pack receives is reworded (the suite's own,
#               spec/support/reword.lua; burrow has no hook and reads no such variable),
#               so a pack that read the wording instead of codes and details fails
#   5. e2e      node --test test/e2e/*.test.mjs       (npm ci first if node_modules is missing)
#   6. anylua   test/anylua/run.sh: the rock built by LuaRocks for Lua 5.1, 5.2,
#               5.3 and 5.4 into trees of their own, then from those trees only
#               spec/lua_api_spec.lua and test/anylua/meta_spec.lua under lua5.1,
#               lua5.2, lua5.3, lua5.4 and luajit, test/luajit/ (the LÖVE example)
#               under luajit, and test/anylua/hosts_spec.lua (Neovim, nginx-lua)
#   7. conformance  test/conformance/run.sh: the official MCP conformance
#               suite (@modelcontextprotocol/conformance, pinned) against
#               burrow mcp --http, one passed or failed per scenario;
#               conformance-proxy: the same through HAProxy round robin (no
#               stick table) to three instances sharing one redis-server
#   8. fuzz     make fuzz-build, then host/fuzz/run.sh: each libFuzzer target
#               BURROW_FUZZ_SECONDS (default 3) from its seed corpus; one
#               passed or failed per target (needs clang and libFuzzer)
#
# Prints each stage's output as it runs, a per-stage summary with each
# stage's wall time and the total, and as its very last line
# "N passed, N failed" summed over all stages. Exits non-zero if
# anything failed or a stage could not run.
#
# A stage that cannot run (command or directory absent), that runs no test, or
# whose output has no result count, counts as 1 failed -- never as 0 -- with a
# visible SKIP/ERROR line. BURROW_ALLOW_MISSING=1 turns absent stages (and
# stages with no tests) into plain skips that do not fail the run.
#
# Environment:
#   BURROW_BUILD           build directory (default build; `make sanitize` uses build/sanitize):
#                          test_core, the burrow binary and lua/burrow/core.so (with the
#                          server.so and host.so beside it) are taken from it
#   BURROW_BIN             binary the e2e suite drives (default $BURROW_BUILD/burrow)
#   BURROW_ALLOW_MISSING   1 = absent stages do not count as failures
#   BURROW_STAGE_TIMEOUT   seconds per stage before it is killed (default 1800)
#   BURROW_FUZZ_SECONDS    seconds per fuzz target (default 3: 11 targets, under a minute)
#   BURROW_STAGES          space-separated subset to run: core busted-openat2 busted-walk packs-reworded e2e anylua conformance conformance-proxy fuzz

set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
REPO=$(pwd)

BUILD=${BURROW_BUILD:-build}
BUILD=${BUILD%/}
export BURROW_BIN=${BURROW_BIN:-$REPO/$BUILD/burrow}
ALLOW_MISSING=${BURROW_ALLOW_MISSING:-0}
STAGE_TIMEOUT=${BURROW_STAGE_TIMEOUT:-1800}
STAGES=${BURROW_STAGES:-"core busted-openat2 busted-walk packs-reworded e2e anylua conformance conformance-proxy fuzz"}
FUZZ_SECONDS=${BURROW_FUZZ_SECONDS:-3}

LOGDIR=$(mktemp -d "${TMPDIR:-/tmp}/burrow-tests.XXXXXX")
# at exit: the logs, and the busted stages' TMPDIRs (stage_tmp) if a stage was cut short
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup_logdir() {
  local t
  cat "$LOGDIR"/*.tmpdir 2>/dev/null | grep -E '/bt\.[A-Za-z0-9]{6}$' | while IFS= read -r t; do
    chmod -R u+rwx "$t" 2>/dev/null
    rm -rf "$t"
  done
  rm -rf "$LOGDIR"
}
trap cleanup_logdir EXIT

TOTAL_PASS=0
STAGE_T0=0
TOTAL_FAIL=0
TOTAL_SKIP=0
SUMMARY=()

if [ -t 1 ]; then BOLD=$'\e[1m'; RED=$'\e[31m'; GREEN=$'\e[32m'; YELLOW=$'\e[33m'; RESET=$'\e[0m'
else BOLD=; RED=; GREEN=; YELLOW=; RESET=; fi

banner() { printf '\n%s==== %s ====%s\n' "$BOLD" "$*" "$RESET"; }

# record NAME PASS FAIL SKIP NOTE
record() {
  local name=$1 pass=$2 fail=$3 skip=$4 note=${5:-}
  TOTAL_PASS=$((TOTAL_PASS + pass))
  TOTAL_FAIL=$((TOTAL_FAIL + fail))
  TOTAL_SKIP=$((TOTAL_SKIP + skip))
  local status=PASS color=$GREEN
  if [ "$fail" -gt 0 ]; then status=FAIL; color=$RED
  elif [ -n "$note" ]; then status=SKIP; color=$YELLOW; fi
  SUMMARY+=("$(printf '%s%-4s%s  %-16s %5d passed, %5d failed, %5d skipped %5ds%s' \
    "$color" "$status" "$RESET" "$name" "$pass" "$fail" "$skip" $((SECONDS - STAGE_T0)) "${note:+  ($note)}")")
}

# missing NAME REASON: a stage that cannot run
missing() {
  local name=$1 reason=$2
  if [ "$ALLOW_MISSING" = 1 ]; then
    printf '%sSKIP%s %s: %s (BURROW_ALLOW_MISSING=1: not counted as failed)\n' "$YELLOW" "$RESET" "$name" "$reason"
    record "$name" 0 0 0 "$reason"
  else
    printf '%sSKIP%s %s: %s -- counted as 1 failed (set BURROW_ALLOW_MISSING=1 to allow)\n' "$RED" "$RESET" "$name" "$reason"
    record "$name" 0 1 0 "$reason"
  fi
}

# run_logged LOG CMD...: runs CMD with a timeout, output shown and saved to LOG; returns its status
run_logged() {
  local log=$1; shift
  local rc
  if command -v timeout >/dev/null 2>&1; then
    timeout --kill-after=15 "$STAGE_TIMEOUT" "$@" </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  else
    "$@" </dev/null 2>&1 | tee "$log"
    rc=${PIPESTATUS[0]}
  fi
  if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    printf '%sERROR%s stage killed after %ss (BURROW_STAGE_TIMEOUT)\n' "$RED" "$RESET" "$STAGE_TIMEOUT" | tee -a "$log"
  fi
  return "$rc"
}

# finish NAME RC PASS FAIL SKIP FOUND: turns counts + exit status into a record
finish() {
  local name=$1 rc=$2 pass=$3 fail=$4 skip=$5 found=$6
  if [ "$found" != 1 ]; then
    printf '%sERROR%s %s: no test results in its output (exit %s) -- counted as 1 failed\n' "$RED" "$RESET" "$name" "$rc"
    record "$name" "$pass" $((fail + 1)) "$skip" "no result count"
  elif [ "$rc" != 0 ] && [ "$fail" = 0 ]; then
    printf '%sERROR%s %s: exited %s with no failed test -- counted as 1 failed\n' "$RED" "$RESET" "$name" "$rc"
    record "$name" "$pass" 1 "$skip" "exit $rc"
  elif [ $((pass + fail)) = 0 ]; then
    missing "$name" "ran no test"
  else
    record "$name" "$pass" "$fail" "$skip"
  fi
}

# ---------------------------------------------------------------- stages

# Every C test (one binary $BUILD/test_X per host/test/test_X.c: a source
# whose binary is missing counts as failed, never as absent), then the
# exports check (host/test/exports.sh: nm -D of libburrow.so and the Lua
# modules core.so, server.so, host.so, and which layers' objects each holds).
stage_core() {
  local name=core
  banner "C core tests: $BUILD/test_* for host/test/test_*.c, and the exports"
  local bins=() b src pass=0 fail=0 found=0 rc=0
  for src in host/test/test_*.c; do
    [ -f "$src" ] || continue
    b="$BUILD/$(basename "$src" .c)"
    if [ -x "$b" ] && [ -f "$b" ]; then bins+=("$b")
    else
      printf '%sERROR%s %s: no binary %s -- counted as 1 failed\n' "$RED" "$RESET" "$src" "$b"
      echo "ERROR $src: no binary $b" >>"$LOGDIR/core-missing.log"
      fail=$((fail + 1))
    fi
  done
  [ -f host/test/exports.sh ] && bins+=("host/test/exports.sh")
  [ -f host/test/arrows.sh ] && bins+=("host/test/arrows.sh")
  [ -f host/test/requires.lua ] && bins+=("host/test/requires.lua")
  [ -f host/test/docpaths.lua ] && bins+=("host/test/docpaths.lua")
  if [ ${#bins[@]} = 0 ] && [ "$fail" = 0 ]; then missing "$name" "host/test/test_*.c not found"; return; fi
  for b in "${bins[@]}"; do
    local log="$LOGDIR/core-$(basename "$b").log" line brc
    if [ "${b##*.}" = sh ]; then run_logged "$log" bash "$b" "$BUILD"; brc=$?
    elif [ "${b##*.}" = lua ]; then run_logged "$log" lua5.4 "$b"; brc=$?
    else run_logged "$log" "$b"; brc=$?; fi
    [ "$brc" != 0 ] && rc=$brc
    line=$(grep -aE '^[[:space:]]*([A-Za-z_-]+:[[:space:]]*)?[0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
    if [ -n "$line" ]; then
      found=1
      pass=$((pass + $(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')))
      fail=$((fail + $(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')))
    else
      # in its log too, so the summary's failed list names it
      echo "ERROR $b printed no 'N passed, N failed' line (exit $brc)" | tee -a "$log"
      fail=$((fail + 1))
    fi
  done
  finish "$name" "$rc" "$pass" "$fail" 0 "$found"
}

# stage_tmp NAME: a fresh TMPDIR for busted stage NAME, its path in
# $LOGDIR/NAME.tmpdir. Short and beside LOGDIR, not in it: a spec names
# paths in messages that Lua cuts at 59 characters (operator_errors_spec's
# policy file under a TMPDIR of more than 20).
stage_tmp() {
  local tmp
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/bt.XXXXXX") || return 1
  printf '%s\n' "$tmp" >"$LOGDIR/$1.tmpdir"
}

# leaks NAME LOG: what the specs of stage NAME left in their TMPDIR
# (stage_tmp), appended to LOG as "ERROR leaked:" lines (each entry and
# the first names in it), then removed with the folder.
leaks() {
  local tmp log=$2 d
  tmp=$(cat "$LOGDIR/$1.tmpdir" 2>/dev/null) || return 0
  case $tmp in */bt.??????) ;; *) return 0 ;; esac # only ever the folder stage_tmp made
  # only the folders the spec helpers make (H.tmpdir, F.mktemp): what a
  # tool a spec runs leaves there (npm, a compiler) on a first run is not
  # a spec's to remove, and goes with the folder all the same
  for d in "$tmp"/burrow-spec.* "$tmp"/burrow-sec.*; do
    [ -e "$d" ] || [ -L "$d" ] || continue
    printf 'ERROR leaked: %s/%s (%s)\n' "\$TMPDIR" "${d#"$tmp"/}" \
      "$(find "$d" -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null | LC_ALL=C sort | head -n 8 | tr '\n' ' ')"
  done >>"$log"
  chmod -R u+rwx "$tmp" 2>/dev/null
  rm -rf "$tmp"
}

# stage_busted RESOLVER [NAME REWORD SPEC...]: busted on one resolver; with
# REWORD, BURROW_TEST_REWORD=REWORD (native messages reworded for packs).
# TMPDIR is the stage's own folder (spec/helpers.lua's H.tmpdir and the
# security fixture's F.mktemp make theirs there); what is left in it when
# busted is done counts 1 failed (leaks).
stage_busted() {
  local resolver=$1 name=${2:-busted-$1} reword=${3:-}
  shift; [ $# -gt 0 ] && shift; [ $# -gt 0 ] && shift
  local log="$LOGDIR/$name.log"
  [ -n "${QUIET_LOG:-}" ] || banner "Lua specs: BURROW_RESOLVER=$resolver${reword:+ BURROW_TEST_REWORD='$reword'} busted --lua=lua5.4 -o TAP $*"
  if ! command -v busted >/dev/null 2>&1; then missing "$name" "busted not installed (apt-get install lua-busted)"; return; fi
  if [ ! -d spec ]; then missing "$name" "spec/ not found"; return; fi
  local args=(--lua=lua5.4 -o TAP) preload=${LD_PRELOAD:-}
  if [ "$BUILD" != build ]; then
    args+=("--cpath=$BUILD/lua/?.so;$BUILD/test-lua/?.so")
    # a sanitizer build of core.so loaded into a stock lua5.4 needs the runtimes preloaded
    if [ -f "$BUILD/lua/burrow/core.so" ] && command -v ldd >/dev/null 2>&1; then
      local san
      san=$(ldd "$BUILD/lua/burrow/core.so" 2>/dev/null | grep -oE '/[^ ]*lib(asan|ubsan)\.so[^ ]*' | tr '\n' ' ')
      preload="$san$preload"
    fi
  fi
  local rc tmp
  if [ ! -f "$log.rc" ]; then # busted runs here (not a report of a run beside another)
    if ! stage_tmp "$name"; then missing "$name" "cannot make a TMPDIR in ${TMPDIR:-/tmp}"; return; fi
    tmp=$(cat "$LOGDIR/$name.tmpdir")
  fi
  if [ -n "${QUIET_LOG:-}" ]; then # run beside another stage: its output shown when both are done
    TMPDIR=$tmp BURROW_RESOLVER=$resolver BURROW_TEST_REWORD=$reword LD_PRELOAD=$preload \
      timeout --kill-after=15 "$STAGE_TIMEOUT" busted "${args[@]}" "$@" </dev/null >"$log" 2>&1; rc=$?
    leaks "$name" "$log"
    echo "$rc" >"$log.rc"
    return
  fi
  if [ -f "$log.rc" ]; then rc=$(cat "$log.rc"); cat "$log" # ran beside another: report it
  else
    TMPDIR=$tmp BURROW_RESOLVER=$resolver BURROW_TEST_REWORD=$reword LD_PRELOAD=$preload \
      run_logged "$log" busted "${args[@]}" "$@"; rc=$?
    leaks "$name" "$log"
    grep -aE '^ERROR leaked: ' "$log"
  fi
  local pass fail skip leaked found=0
  skip=$(grep -caE '^ok [0-9]+ - # SKIP' "$log")
  pass=$(( $(grep -caE '^ok [0-9]+' "$log") - skip ))
  fail=$(grep -caE '^not ok [0-9]+' "$log")
  grep -qaE '^1\.\.[0-9]+' "$log" && found=1
  [ $((pass + fail + skip)) -gt 0 ] && found=1
  leaked=$(grep -caE '^ERROR leaked: ' "$log")
  if [ "$leaked" -gt 0 ]; then
    printf '%sERROR%s %s: the specs left %s entries in their TMPDIR (named above; a spec removes what it makes) -- counted as 1 failed\n' \
      "$RED" "$RESET" "$name" "$leaked"
    fail=$((fail + 1))
  fi
  finish "$name" "$rc" "$pass" "$fail" "$skip" "$found"
}

stage_e2e() {
  local name=e2e log="$LOGDIR/e2e.log"
  banner "end-to-end: node --test test/e2e/"
  if [ ! -d test/e2e ]; then missing "$name" "test/e2e/ not found"; return; fi
  if ! command -v node >/dev/null 2>&1; then missing "$name" "node not installed"; return; fi
  local files=()
  shopt -s nullglob
  files=(test/e2e/*.test.mjs test/e2e/*.test.js)
  shopt -u nullglob
  if [ ${#files[@]} = 0 ]; then missing "$name" "no test/e2e/*.test.mjs"; return; fi
  if ! bash test/npm-current.sh test/e2e; then
    echo "test/e2e/node_modules missing or older than the lockfile: npm ci"
    if ! command -v npm >/dev/null 2>&1; then missing "$name" "npm not installed (needed for npm ci)"; return; fi
    if ! (cd test/e2e && npm ci --no-audit --no-fund); then
      printf '%sERROR%s npm ci in test/e2e failed -- counted as 1 failed\n' "$RED" "$RESET"
      record "$name" 0 1 0 "npm ci failed"; return
    fi
  fi
  run_logged "$log" node --test --test-reporter=tap "${files[@]}"; local rc=$?
  local pass=0 fail=0 cancelled=0 skip=0 todo=0 found=0
  if grep -qaE '^# pass [0-9]+' "$log"; then
    found=1
    pass=$(grep -aE '^# pass [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+')
    fail=$(grep -aE '^# fail [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
    cancelled=$(grep -aE '^# cancelled [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
    skip=$(grep -aE '^# skipped [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
    todo=$(grep -aE '^# todo [0-9]+' "$log" | tail -n 1 | grep -oE '[0-9]+' || echo 0)
  fi
  finish "$name" "$rc" "$pass" $((${fail:-0} + ${cancelled:-0})) $((${skip:-0} + ${todo:-0})) "$found"
}

# The MCP conformance suite against burrow mcp --http (test/conformance/run.sh);
# conformance-proxy: the same through HAProxy round robin (no stick table)
# to three instances that share one Redis store.
stage_conformance() {
  local name=${1:-conformance} log="$LOGDIR/${1:-conformance}.log" proxy=0
  [ "$name" = conformance-proxy ] && proxy=1
  banner "MCP conformance: test/conformance/run.sh (burrow mcp --http$([ $proxy = 1 ] && echo ', three instances behind HAProxy, one Redis'))"
  if [ ! -f test/conformance/run.sh ]; then missing "$name" "test/conformance/run.sh not found"; return; fi
  if ! command -v node >/dev/null 2>&1; then missing "$name" "node not installed"; return; fi
  BURROW_CONFORMANCE_PROXY=$proxy run_logged "$log" bash test/conformance/run.sh; local rc=$?
  local line pass=0 fail=0 skip=0 found=0
  line=$(grep -aE '^conformance: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -n "$line" ]; then
    found=1
    pass=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')
    fail=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')
  fi
  skip=$(grep -caE '^PENDING ' "$log")
  finish "$name" "$rc" "$pass" "$fail" "$skip" "$found"
}

# Every Lua from the rock it installs: test/anylua/run.sh builds the rock
# for Lua 5.1-5.4 (LuaJIT takes the 5.1 tree) and runs the shared API spec,
# the type stubs' parity, the LÖVE example, Neovim and nginx-lua from there.
stage_anylua() {
  local name=anylua log="$LOGDIR/anylua.log"
  banner "any Lua: test/anylua/run.sh (the rock for 5.1, 5.2, 5.3, 5.4 and LuaJIT; Neovim, nginx-lua, LÖVE)"
  local c
  for c in luarocks busted lua5.1 lua5.2 lua5.3 luajit; do
    if ! command -v $c >/dev/null 2>&1; then missing "$name" "$c not installed (make deps)"; return; fi
  done
  run_logged "$log" bash test/anylua/run.sh; local rc=$?
  local pass fail skip found=0
  skip=$(grep -caE '^ok [0-9]+ - # SKIP' "$log")
  pass=$(( $(grep -caE '^ok [0-9]+' "$log") - skip ))
  fail=$(grep -caE '^not ok [0-9]+' "$log")
  [ $((pass + fail + skip)) -gt 0 ] && found=1
  finish "$name" "$rc" "$pass" "$fail" "$skip" "$found"
}

# The libFuzzer targets (host/fuzz/), built with clang into build/fuzz
# whatever BURROW_BUILD says, each run for a few seconds from its seeds.
stage_fuzz() {
  local name=fuzz log="$LOGDIR/fuzz.log" blog="$LOGDIR/fuzz-build.log"
  banner "fuzz targets: host/fuzz/run.sh, ${FUZZ_SECONDS}s each from the seed corpora"
  if ! command -v clang >/dev/null 2>&1; then
    missing "$name" "clang not installed (make deps, or apt-get install clang libclang-rt-14-dev)"; return
  fi
  echo "make fuzz-build (clang, ASan + UBSan, build/fuzz)"
  if ! MAKEFLAGS= make --no-print-directory -s -j"$(nproc 2>/dev/null || echo 2)" fuzz-build >"$blog" 2>&1; then
    tail -n 30 "$blog"
    printf '%sERROR%s make fuzz-build failed -- counted as 1 failed\n' "$RED" "$RESET"
    record "$name" 0 1 0 "build failed"; return
  fi
  run_logged "$log" bash host/fuzz/run.sh "$FUZZ_SECONDS"; local rc=$?
  local line pass=0 fail=0 found=0
  line=$(grep -aE '^fuzz: [0-9]+ passed, [0-9]+ failed' "$log" | tail -n 1)
  if [ -n "$line" ]; then
    found=1
    pass=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+')
    fail=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+')
  fi
  finish "$name" "$rc" "$pass" "$fail" 0 "$found"
}

# The fallback resolver runs only the specs that exercise a resolver:
# the attack cases (spec/security), the tools, the packs (their attack
# cases through their own tool names) and the policies (every path they
# take is resolved), the resources read and written, and the specs of
# opening, watching and calling through the C API, the rock and the
# binary. The rest (grammars, JSON, config, the MCP and session layers,
# the install and README) test no resolver and run once, in
# busted-openat2; so does the edit replay (matching in text it read, 2+
# minutes a pass). A new spec that opens, resolves or walks paths goes
# under spec/security or spec/tools, or in this list.
WALK_SPECS="spec/security spec/tools spec/packs spec/policy spec/resolver_spec.lua spec/tool_path_spec.lua \
  spec/watch_spec.lua spec/changes_spec.lua spec/api_spec.lua spec/lua_api_spec.lua spec/async_spec.lua \
  spec/cli_spec.lua spec/resource_ops_spec.lua spec/resources_mime_spec.lua spec/resources_validator_spec.lua"
# shellcheck disable=SC2086 # WALK_SPECS: one word a path
busted_walk() { stage_busted walk busted-walk "" --exclude-pattern=edit_replay_spec $WALK_SPECS; }
# The specs busted-openat2 runs beyond WALK_SPECS: every spec file under
# spec/ that no WALK_SPECS entry covers, and the edit replay.
rest_specs() {
  local f w covered
  while IFS= read -r f; do
    covered=0
    for w in $WALK_SPECS; do case $f in "$w" | "$w"/*) covered=1 ;; esac; done
    [ "$covered" = 0 ] && printf '%s\n' "$f"
  done < <(find spec -name '*_spec.lua' | LC_ALL=C sort)
  printf '%s\n' spec/tools/edit_replay_spec.lua
}
# With two CPUs or more, the two resolvers' busted stages run at once (each
# spec makes its own folders; a spec waits for states, never for times):
# their output is shown when both are done, each with the wall time of the
# pair. busted-openat2 runs as two processes beside busted-walk's one: the
# WALK_SPECS, and the rest (rest_specs), its two logs shown as one stage;
# one busted is one busy core, and a busted-openat2 of one process ran for
# minutes alone after busted-walk was done. BURROW_SERIAL_BUSTED=1 runs the
# stages one after the other, each one process.
PAIR=0
case " $STAGES " in *" busted-openat2 "*)
  case " $STAGES " in *" busted-walk "*)
    [ "$(nproc 2>/dev/null || echo 1)" -ge 2 ] && [ "${BURROW_SERIAL_BUSTED:-0}" != 1 ] && PAIR=1 ;;
  esac ;;
esac

SECONDS=0
for s in $STAGES; do
  STAGE_T0=$SECONDS # each stage's wall time goes into its summary line
  case $s in
    core) stage_core ;;
    busted-openat2)
      if [ "$PAIR" = 1 ]; then
        banner "Lua specs: busted-openat2 (two processes) and busted-walk at once (output below when all are done)"
        # shellcheck disable=SC2046,SC2086 # one word a path
        { QUIET_LOG=1 stage_busted openat2 busted-openat2 "" --exclude-pattern=edit_replay_spec $WALK_SPECS &
          QUIET_LOG=1 stage_busted openat2 busted-openat2-rest "" $(rest_specs) &
          QUIET_LOG=1 busted_walk & wait; }
        # the two halves of busted-openat2 as one log and one status
        rest=$LOGDIR/busted-openat2-rest.log
        cat "$rest" >>"$LOGDIR/busted-openat2.log"
        rest_rc=$(cat "$rest.rc" 2>/dev/null || echo 1)
        [ "$rest_rc" = 0 ] || echo "$rest_rc" >"$LOGDIR/busted-openat2.log.rc"
        mv "$rest" "$LOGDIR/busted-openat2-rest.part"
        PAIR_T0=$STAGE_T0
      fi
      stage_busted openat2 ;;
    busted-walk) [ "$PAIR" = 1 ] && STAGE_T0=$PAIR_T0; busted_walk ;;
    packs-reworded) stage_busted openat2 packs-reworded "[reworded] " spec/packs ;;
    e2e) stage_e2e ;;
    conformance) stage_conformance ;;
    conformance-proxy) stage_conformance conformance-proxy ;;
    anylua) stage_anylua ;;
    fuzz) stage_fuzz ;;
    *) echo "unknown stage '$s' in BURROW_STAGES"; record "$s" 0 1 0 "unknown stage" ;;
  esac
done

banner "summary"
for line in "${SUMMARY[@]}"; do printf '%s\n' "$line"; done
[ "$TOTAL_SKIP" -gt 0 ] && echo "($TOTAL_SKIP skipped/pending, not counted)"
# The failed tests by name, here at the end, where a CI log's tail shows
# them (each stage's own output has them with their messages, above).
if [ "$TOTAL_FAIL" -gt 0 ]; then
  echo "failed:"
  for log in "$LOGDIR"/*.log; do
    grep -aE '^[[:space:]]*not ok [0-9]+|^(FAIL|ERROR)[[:space:]]' "$log" 2>/dev/null \
      | grep -avE '^[[:space:]]*not ok [0-9]+ - # (SKIP|TODO)' | head -n 20 \
      | sed "s|^[[:space:]]*|  $(basename "$log" .log): |"
  done
fi
echo "wall time: $((SECONDS / 60)) min $((SECONDS % 60)) s in all"
if [ "$TOTAL_FAIL" -gt 0 ]; then status=1; else status=0; fi
echo "$TOTAL_PASS passed, $TOTAL_FAIL failed"
exit "$status"
