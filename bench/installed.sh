# bench/installed.sh (sourced): BIN, the burrow the benchmarks time. Set
# BURROW_BIN to time a given binary; by default the checkout is installed
# into a temporary prefix (`make install PREFIX=...`) and that copy is
# timed, because that is what users run: an installed burrow loads
# precompiled Lua, the build tree's binary parses the Lua sources on every
# start (about 2 ms of a one-shot `burrow call`; docs/benchmarks.md, Start-up).
# Needs REPO. The prefix is BENCH_PREFIX (default /var/tmp/burrow-bench-prefix),
# emptied and installed afresh each time.
if [ -n "${BURROW_BIN:-}" ]; then
  BIN=$BURROW_BIN
else
  BENCH_PREFIX=${BENCH_PREFIX:-/var/tmp/burrow-bench-prefix}
  rm -rf "$BENCH_PREFIX"
  make -C "$REPO" -s install PREFIX="$BENCH_PREFIX" >/dev/null ||
    { echo "bench: make install PREFIX=$BENCH_PREFIX failed" >&2; exit 2; }
  BIN=$BENCH_PREFIX/bin/burrow
  echo "bench: timing $BIN (the checkout, installed; BURROW_BIN=... for another)" >&2
fi
