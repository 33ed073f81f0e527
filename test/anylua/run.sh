#!/usr/bin/env bash
# Every Lua, from what a user installs (test/run-all.sh's anylua stage):
#   1. the rock built by LuaRocks from a copy of the sources, offline, into
#      a tree for each of Lua 5.1 (also LuaJIT's: LuaRocks sees it as 5.1),
#      5.2, 5.3 and 5.4 ("ok"/"not ok" per build);
#   2. spec/lua_api_spec.lua and test/anylua/meta_spec.lua (the type stubs
#      against the real methods) under lua5.1, lua5.2, lua5.3, lua5.4 and
#      luajit, each with its tree's paths only (never the checkout's lua/);
#      the API spec again with BURROW_RESOLVER=walk under lua5.1 and luajit;
#   3. under luajit from the 5.1 tree: test/luajit/ (the LÖVE example, its
#      logic and LÖVE itself under xvfb-run);
#   4. under lua5.4: test/anylua/hosts_spec.lua, Neovim and nginx with its
#      Lua module loading burrow from the 5.1 tree.
# Output is TAP lines from busted (-o TAP) and this script's own; run-all.sh
# counts "ok N" and "not ok N". Exits non-zero if anything failed.
#   BURROW_ANY_KEEP=1  keep the trees (printed) instead of removing them
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.." || exit 2
REPO=$(pwd)
T=$(mktemp -d /tmp/burrow-anylua.XXXXXX)
if [ "${BURROW_ANY_KEEP:-0}" = 1 ]; then echo "# trees kept in $T"; else trap 'rm -rf "$T"' EXIT; fi
status=0
n=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
not_ok() { n=$((n + 1)); echo "not ok $n - $*"; status=1; }

# the rock builds from the sources alone, offline: no LuaRocks config, no
# rock server but an empty local one, HOME inside $T
mkdir -p "$T/src" "$T/home" "$T/norocks" "$T/run"
cp -r Makefile host lua rockspec LICENSE "$T/src"
echo > "$T/luarocks-config.lua"
export HOME=$T/home LUAROCKS_CONFIG=$T/luarocks-config.lua
unset LUA_PATH LUA_CPATH LUA_PATH_5_2 LUA_CPATH_5_2 LUA_PATH_5_3 LUA_CPATH_5_3 LUA_PATH_5_4 LUA_CPATH_5_4 BURROW_LUA_DIR BURROW_LIB
BUSTED=$(command -v busted) || { not_ok "busted not installed"; exit 1; }

declare -A BUILT
for v in 5.1 5.2 5.3 5.4; do
  if ! command -v "lua$v" >/dev/null 2>&1; then not_ok "Lua $v: lua$v not installed (make deps)"; continue; fi
  luarocks-admin --lua-version=$v make-manifest "$T/norocks" >/dev/null 2>&1
  if (cd "$T/src" && luarocks --lua-version=$v --only-server="$T/norocks" --tree="$T/$v" make) >"$T/build-$v.log" 2>&1; then
    ok "luarocks --lua-version=$v make installs burrow into a tree of its own"
    BUILT[$v]=1
    # the rockspec's test section (rockspec/check.lua), with the tree's paths
    if (eval "$(luarocks --lua-version=$v --tree="$T/$v" path)"; export LUA_PATH_${v/./_}=$LUA_PATH LUA_CPATH_${v/./_}=$LUA_CPATH
        cd "$T/src" && luarocks --lua-version=$v --only-server="$T/norocks" --tree="$T/$v" test) >"$T/test-$v.log" 2>&1 \
        && grep -q "burrow rock check: ok" "$T/test-$v.log"; then
      ok "luarocks --lua-version=$v test: $(grep -o 'burrow rock check: ok.*' "$T/test-$v.log")"
    else
      tail -n 20 "$T/test-$v.log" | sed 's/^/# /'
      not_ok "luarocks --lua-version=$v test"
    fi
  else
    tail -n 20 "$T/build-$v.log" | sed 's/^/# /'
    not_ok "luarocks --lua-version=$v make"
  fi
done

# run LUA TREEVERSION ARGS...: busted under LUA with only that tree's paths
# (LUA_PATH_5_x too, so a lua5.2 busted never sees the 5.1 tree's modules)
run() {
  local lua=$1 v=$2; shift 2
  (
    eval "$(luarocks --lua-version="$v" --tree="$T/$v" path)"
    export LUA_PATH_${v/./_}=$LUA_PATH LUA_CPATH_${v/./_}=$LUA_CPATH BURROW_REPO=$REPO BURROW_ANY_TREE51=$T/5.1
    cd "$T/run" && "$lua" "$BUSTED" -o TAP "$@"
  ) || status=1
}

for pair in lua5.1:5.1 lua5.2:5.2 lua5.3:5.3 lua5.4:5.4 luajit:5.1; do
  lua=${pair%%:*} v=${pair##*:}
  [ -n "${BUILT[$v]:-}" ] || continue
  if ! command -v "$lua" >/dev/null 2>&1; then not_ok "$lua not installed (make deps)"; continue; fi
  run "$lua" "$v" "$REPO/spec/lua_api_spec.lua" "$REPO/test/anylua/meta_spec.lua"
  # the other resolver, through both ways in (burrow.native, burrow.ffi)
  case $lua in lua5.1|luajit) BURROW_RESOLVER=walk run "$lua" "$v" "$REPO/spec/lua_api_spec.lua" ;; esac
done
if [ -n "${BUILT[5.1]:-}" ]; then
  command -v luajit >/dev/null 2>&1 && run luajit 5.1 "$REPO/test/luajit/"
  [ -n "${BUILT[5.4]:-}" ] && run lua5.4 5.4 "$REPO/test/anylua/hosts_spec.lua"
fi
echo "# anylua: $n checks of this script, the rest busted's"
exit $status
