#!/usr/bin/env bash
# The shared objects export what they promise and nothing else (nm -D):
# libburrow.so the burrow_* functions of burrow.h; the Lua modules, one
# file a layer: core.so luaopen_burrow_core and exactly the bw_* functions
# (BW_SHARED, core.h) that server.so and host.so import from it,
# server.so luaopen_burrow_server, host.so luaopen_burrow_host and
# burrow.h's burrow_*; the burrow command no bw_* and no OpenSSL EVP. And each module carries
# its own layers only (nm of build/obj/LAYER/*.o against each file's
# symbol table): core.so no server or API object, server.so and host.so no
# copy of the core, which they take from the core.so beside them.
# Usage: host/test/exports.sh [BUILD_DIR]; ends "exports: N passed, N failed".
set -u
B=${1:-build}
M=$B/lua/burrow
pass=0 fail=0
ok() { echo "ok   $*"; pass=$((pass + 1)); }
bad() { echo "FAIL $*"; fail=$((fail + 1)); }
# check LIBRARY REGEX WANT...: every defined dynamic symbol matches REGEX,
# and each WANT is among them
check() {
  local lib=$1 re=$2; shift 2
  local syms
  if [ ! -f "$lib" ]; then bad "$lib is missing"; return; fi
  if ! syms=$(nm -D --defined-only "$lib" 2>/dev/null | awk '{print $NF}'); then
    bad "$lib: nm -D could not read it"; return
  fi
  local extra
  extra=$(grep -vE "$re" <<<"$syms" | head -n 20)
  if [ -n "$extra" ]; then
    bad "$lib exports symbols outside $re:"; sed 's/^/  /' <<<"$extra"
  else
    ok "$lib exports only $re ($(wc -l <<<"$syms") symbols)"
  fi
  local w
  for w in "$@"; do
    if grep -qx "$w" <<<"$syms"; then pass=$((pass + 1)); else bad "$lib does not export $w"; fi
  done
}
# every function burrow.h declares
api=$(grep -oE '\bburrow_[a-z_]+\(' host/include/burrow.h | tr -d '(' | sort -u)
# shellcheck disable=SC2086
check "$B/libburrow.so" '^burrow_[a-z_]+$' $api
check "$M/core.so" '^(luaopen_burrow_core|bw_[a-z0-9_]+)$' luaopen_burrow_core
check "$M/server.so" '^luaopen_burrow_server$' luaopen_burrow_server
# (burrow_* too: host.so carries the embedding API, and exports it as
# libburrow.so does)
# shellcheck disable=SC2086
check "$M/host.so" '^(luaopen_burrow_host|burrow_[a-z_]+)$' luaopen_burrow_host $api

# core.so's bw_* are exactly what the modules above import: none missing
# (they would not load), none more (an internal function exported for
# nothing)
imports=$(nm -D --undefined-only "$M/server.so" "$M/host.so" 2>/dev/null | awk '$NF ~ /^bw_/ {print $NF}' | sort -u)
exports=$(nm -D --defined-only "$M/core.so" 2>/dev/null | awk '$NF ~ /^bw_/ {print $NF}' | sort -u)
if [ -z "$imports" ]; then
  bad "server.so and host.so import no bw_* from core.so (are they linked against it?)"
elif [ "$imports" = "$exports" ]; then
  ok "core.so exports exactly the $(wc -l <<<"$exports") bw_* server.so and host.so import"
else
  bad "core.so's bw_* exports differ from what server.so and host.so import (< imported only, > exported only):"
  diff <(echo "$imports") <(echo "$exports") | grep '^[<>]' | sed 's/^/  /'
fi

# server.so and host.so take the core from the core.so beside them: their
# DT_NEEDED names it by $ORIGIN (core.so's soname), nothing else of burrow
for lib in "$M/server.so" "$M/host.so"; do
  needed=$(readelf -d "$lib" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
  if ! grep -qx '$ORIGIN/core.so' <<<"$needed"; then
    bad "$lib does not need \$ORIGIN/core.so (needs: $(echo $needed))"
  elif grep -v '^\$ORIGIN/core.so$' <<<"$needed" | grep -qE 'burrow|core\.so'; then
    bad "$lib needs another burrow library: $(echo $needed)"
  else
    ok "$lib needs \$ORIGIN/core.so"
  fi
done

# none is unmapped by lua_close's dlclose (-z nodelete): the stdio
# server's reader and SIGHUP watcher threads run for the process
for lib in "$M/core.so" "$M/server.so" "$M/host.so"; do
  if readelf -d "$lib" 2>/dev/null | grep -q 'FLAGS_1.*NODELETE'; then
    ok "$lib stays mapped (NODELETE)"
  else
    bad "$lib can be unloaded under its own threads (link it with -z nodelete)"
  fi
done

# carries LIBRARY WHAT LAYER...: LIBRARY defines (its whole symbol table,
# hidden ones included) none of the global symbols of build/obj/LAYER/*.o
carries() {
  local lib=$1 what=$2; shift 2
  local layer objs=() own defs both
  if [ ! -f "$lib" ]; then bad "$lib is missing"; return; fi
  for layer in "$@"; do objs+=("$B"/obj/"$layer"/*.o); done
  defs=$(nm -g --defined-only "${objs[@]}" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u)
  own=$(nm --defined-only "$lib" 2>/dev/null | awk 'NF == 3 {print $3}' | sort -u)
  if [ -z "$defs" ]; then bad "$lib: no symbols in $B/obj/{$*}/*.o to compare with"; return; fi
  if [ -z "$own" ]; then bad "$lib: nm could not read its symbol table (stripped?)"; return; fi
  both=$(comm -12 <(echo "$defs") <(echo "$own") | head -n 20)
  if [ -n "$both" ]; then
    bad "$lib links $what (symbols of $B/obj/{$*}/*.o):"; sed 's/^/  /' <<<"$both"
  else
    ok "$lib links no $what"
  fi
}
carries "$M/core.so" "server or API object" server api cli
carries "$M/server.so" "core, binding or API object" core lua api cli
carries "$M/host.so" "core, binding or server object" core lua server cli

# the command exports Lua's API for C modules (-rdynamic), never bw_*
# (host/burrow.map)
leaked=$(nm -D --defined-only "$B/burrow" 2>/dev/null | awk '$NF ~ /^bw_/ {print $NF}' | head -n 20)
if [ -n "$leaked" ]; then bad "$B/burrow exports bw_*:"; sed 's/^/  /' <<<"$leaked"; else ok "$B/burrow exports no bw_*"; fi
# the command holds none of OpenSSL's EVP: it brings the provider
# machinery, which a statically linked command maps and relocates at every
# start (18,000 relocations); jwt.c opens libcrypto.so.3 when a JWKS is
# first parsed (docs/benchmarks.md, Start-up)
evp=$(nm "$B/burrow" 2>/dev/null | awk '$NF ~ /^(EVP_MD_fetch|OSSL_PROVIDER_load|EVP_DigestVerify|EVP_Digest)$/ {print $NF}' | head -n 20)
if [ -n "$evp" ]; then bad "$B/burrow carries OpenSSL's EVP:"; sed 's/^/  /' <<<"$evp"; else ok "$B/burrow carries no EVP"; fi
# libcrypto's CPU probe (CPUID, a trap to the hypervisor in a VM) runs at
# the first hash, not from the static archive's .init at every start
# (host/src/cli/cpuprobe.c): .init calls the empty wrapper
if ! nm "$B/burrow" 2>/dev/null | grep -q ' OPENSSL_cpuid_setup$'; then
  ok "$B/burrow holds no static libcrypto probe (STATIC=0)"
elif objdump -d -j .init "$B/burrow" 2>/dev/null | grep -q 'call.*<OPENSSL_cpuid_setup>'; then
  bad "$B/burrow runs libcrypto's CPU probe at every start (link it with --wrap=OPENSSL_cpuid_setup)"
elif objdump -d -j .init "$B/burrow" 2>/dev/null | grep -q 'call.*<__wrap_OPENSSL_cpuid_setup>'; then
  ok "$B/burrow defers libcrypto's CPU probe to the first hash"
else
  bad "$B/burrow: no call to the probe's wrapper found in .init (objdump)"
fi
echo "exports: $pass passed, $fail failed"
[ "$fail" = 0 ]
