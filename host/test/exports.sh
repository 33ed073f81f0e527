#!/usr/bin/env bash
# The shared objects export what they promise and nothing else (nm -D):
# libburrow.so the burrow_* functions of burrow.h, core.so luaopen_burrow_core
# (and the API's burrow_* if it carries them), never an internal bw_*.
# Usage: host/test/exports.sh [BUILD_DIR]; ends "exports: N passed, N failed".
set -u
B=${1:-build}
pass=0 fail=0
# check LIBRARY REGEX WANT...: every defined dynamic symbol matches REGEX,
# and each WANT is among them
check() {
  local lib=$1 re=$2; shift 2
  local syms
  if ! syms=$(nm -D --defined-only "$lib" 2>/dev/null | awk '{print $NF}'); then
    echo "FAIL $lib: nm -D could not read it"; fail=$((fail + 1)); return
  fi
  local extra
  extra=$(grep -vE "$re" <<<"$syms" | head -n 20)
  if [ -n "$extra" ]; then
    echo "FAIL $lib exports symbols outside $re:"; sed 's/^/  /' <<<"$extra"; fail=$((fail + 1))
  else
    echo "ok   $lib exports only $re ($(wc -l <<<"$syms") symbols)"; pass=$((pass + 1))
  fi
  local w
  for w in "$@"; do
    if grep -qx "$w" <<<"$syms"; then pass=$((pass + 1)); else echo "FAIL $lib does not export $w"; fail=$((fail + 1)); fi
  done
}
# every function burrow.h declares
api=$(grep -oE '\bburrow_[a-z_]+\(' host/include/burrow.h | tr -d '(' | sort -u)
# shellcheck disable=SC2086
check "$B/libburrow.so" '^burrow_[a-z_]+$' $api
# (burrow_* too: a core.so that carries the embedding API, for an FFI,
# exports it as libburrow.so does)
# (luaopen_burrow_server and luaopen_burrow_host: the layers above the
# binding, their modules in the same file; burrow/init.lua offers them)
check "$B/lua/burrow/core.so" '^(luaopen|burrow)_[a-z_]+$' luaopen_burrow_core luaopen_burrow_server luaopen_burrow_host
echo "exports: $pass passed, $fail failed"
[ "$fail" = 0 ]
