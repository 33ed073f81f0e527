#!/usr/bin/env bash
# The official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in package-lock.json) against `burrow mcp --http`: the `conformance`
# stage of test/run-all.sh.
#
# Runs each server scenario that needs no reference-server fixtures at both
# wires (the session revision 2025-11-25 and the stateless 2026-07-28,
# --spec-version) against burrow's default configuration, and the
# scenarios whose fixtures are operator files (fixtures.yaml: the
# reference tools, prompts and resources) against a second server with them; one line per
# scenario, then "conformance: N passed, N failed".
#
# On Node < 22 the suite's `import {globSync} from "fs"` is taken from the
# pinned `glob` package instead (a one-line patch, applied here, idempotent).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")" || exit 2
HERE=$(pwd)
REPO=$(cd ../.. && pwd)
BIN=${BURROW_BIN:-$REPO/build/burrow}
# REVISION:SCENARIO
SESSION_ERA="server-initialize ping logging-set-level tools-list resources-list dns-rebinding-protection server-sse-polling server-sse-multiple-streams server-session-lifecycle"
STATELESS="tools-list resources-list dns-rebinding-protection caching sep-2164-resource-not-found server-sse-multiple-streams input-required-result-unsupported-methods input-required-result-validate-input http-header-validation"
# extensions, run at 2026-07-28 (the suite's default for them): the tasks
# extension against the fixtures (greet, slow_compute, ...); SEP-2640's
# skills, which burrow does not declare (their checks are then skipped)
EXTENSIONS="sep-2640-skills-directory sep-2640-skills-enumeration sep-2640-skills-manifest"
TASKS="tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications tasks-required-task-error tasks-mrtr-composition"
DEFAULT=$(for s in $SESSION_ERA; do printf '2025-11-25:%s ' "$s"; done; for s in $STATELESS $EXTENSIONS; do printf '2026-07-28:%s ' "$s"; done)
FIXTURED="prompts-list prompts-get-simple prompts-get-with-args prompts-get-embedded-resource prompts-get-with-image completion-complete resources-read-text resources-read-binary resources-templates-read tools-call-simple-text tools-call-image tools-call-audio tools-call-embedded-resource tools-call-mixed-content tools-call-error tools-call-with-progress json-schema-2020-12"
FIXTURED_SESSION_ERA="tools-call-with-logging tools-call-elicitation tools-call-sampling elicitation-sep1034-defaults elicitation-sep1330-enums resources-subscribe resources-unsubscribe" # 2026-07-28 removed them
FIXTURED_STATELESS="$TASKS input-required-result-basic-elicitation input-required-result-basic-sampling input-required-result-basic-list-roots input-required-result-request-state input-required-result-multiple-input-requests input-required-result-multi-round input-required-result-missing-input-response input-required-result-result-type input-required-result-tampered-state input-required-result-capability-check input-required-result-ignore-extra-params input-required-result-non-tool-request server-stateless http-custom-header-server-validation"
DEFAULT="$DEFAULT $(for s in $FIXTURED; do printf 'fixtures@2025-11-25:%s fixtures@2026-07-28:%s ' "$s" "$s"; done)"
DEFAULT="$DEFAULT $(for s in $FIXTURED_SESSION_ERA; do printf 'fixtures@2025-11-25:%s ' "$s"; done)"
DEFAULT="$DEFAULT $(for s in $FIXTURED_STATELESS; do printf 'fixtures@2026-07-28:%s ' "$s"; done)"
SCENARIOS=${BURROW_CONFORMANCE_SCENARIOS:-$DEFAULT}

if ! bash ../npm-current.sh . ; then
  npm ci --no-audit --no-fund || { echo "conformance: npm ci failed"; echo "conformance: 0 passed, 1 failed"; exit 1; }
fi
SUITE=node_modules/@modelcontextprotocol/conformance/dist/index.js
# Move `globSync as X` out of the suite's import from "fs" into an import from
# "glob", matched by pattern (the bundle's short names change each release).
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  node -e '
    const fs = require("fs"), f = process.argv[1];
    let s = fs.readFileSync(f, "utf8");
    if (/import\{globSync as [A-Za-z_$]+\}from"glob"/.test(s)) process.exit(0);
    const m = s.match(/import\{([^}]*)\}from"fs"/);
    const parts = m ? m[1].split(",") : [];
    const g = parts.find(p => /^globSync as [A-Za-z_$]+$/.test(p));
    if (!g) { console.error("conformance: the globSync import to patch was not found"); process.exit(1); }
    s = s.replace(m[0], `import{${parts.filter(p => p !== g).join(",")}}from"fs";import{${g}}from"glob"`);
    fs.writeFileSync(f, s);
  ' "$SUITE" || { echo "conformance: 0 passed, 1 failed"; exit 1; }
fi

# Every server scenario the suite lists is run at each revision it names
# that burrow serves (an extension's at 2026-07-28): one the suite adds
# and this file does not run fails the stage (the default list only).
missing=
if [ -z "${BURROW_CONFORMANCE_SCENARIOS:-}" ]; then
  listed=$(node "$SUITE" list --server 2>/dev/null | sed -nE 's/^  - ([a-z0-9-]+) \[([^]]*)\]$/\1 \2/p')
  if [ -z "$listed" ]; then echo "conformance: the suite listed no server scenarios"; echo "conformance: 0 passed, 1 failed"; exit 1; fi
  ran=" $(for item in $SCENARIOS; do r=${item%%:*}; printf '%s:%s ' "${r#fixtures@}" "${item#*:}"; done)"
  while read -r name tags; do
    revs=
    case ",$tags," in *,extension,*) revs=2026-07-28 ;; esac
    case ",$tags," in *,2025-11-25,*) revs="$revs 2025-11-25" ;; esac
    case ",$tags," in *,2026-07-28,*) revs="$revs 2026-07-28" ;; esac
    [ -z "$revs" ] && revs=${tags##*,} # only older revisions: its newest
    for r in $revs; do
      case "$ran" in *" $r:$name "*) ;; *) missing="$missing $name@$r" ;; esac
    done
  done <<<"$listed"
fi

WS=$(mktemp -d "${TMPDIR:-/tmp}/burrow-conformance.XXXXXX")
echo "hello" > "$WS/readme.txt"
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; wait "$p" 2>/dev/null; done; rm -rf "$WS"; }
trap cleanup EXIT
# start NAME ARGS...: burrow mcp --http with ARGS; its URL in URL
start() {
  local log=$WS/$1.log
  shift
  "$BIN" mcp "$@" --http 127.0.0.1:0 2>"$log" &
  local pid=$!
  PIDS+=("$pid")
  URL=
  for _ in $(seq 100); do
    URL=$(grep -oE 'http://[^ ]+/mcp' "$log" | head -n 1)
    [ -n "$URL" ] && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if [ -z "$URL" ]; then
    cat "$log"; echo "conformance: the server did not start"; echo "conformance: 0 passed, 1 failed"; exit 1
  fi
  echo "server: $URL ($*)"
}
# PROXY: the same scenarios through HAProxy (balance roundrobin, no stick
# table) to three instances of each server sharing one Redis store
# (BURROW_CONFORMANCE_PROXY=1; redis-server and haproxy from Debian, started
# here on free ports: never the system's)
free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
wait_port() { for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done; return 1; }
proxied() { # NAME ARGS...: three instances behind HAProxy; the proxy's URL in URL
  local name=$1 ports=() i
  shift
  for i in 1 2 3; do start "$name$i" "$@"; ports+=("$(sed -E 's#.*:([0-9]+)/mcp#\1#' <<<"$URL")"); done
  local port
  port=$(free_port)
  {
    printf 'defaults\n  mode http\n  timeout connect 5s\n  timeout client 5m\n  timeout server 5m\n'
    printf 'frontend f\n  bind 127.0.0.1:%s\n  default_backend b\nbackend b\n  balance roundrobin\n' "$port"
    for i in 0 1 2; do printf '  server s%d 127.0.0.1:%s\n' "$i" "${ports[$i]}"; done
  } >"$WS/$name.haproxy.cfg"
  haproxy -f "$WS/$name.haproxy.cfg" -db >"$WS/$name.haproxy.log" 2>&1 &
  PIDS+=("$!")
  wait_port "$port" || { echo "conformance: haproxy did not start"; cat "$WS/$name.haproxy.log"; echo "conformance: 0 passed, 1 failed"; exit 1; }
  URL="http://127.0.0.1:$port/mcp"
  echo "proxy: $URL (roundrobin, no stick table) -> ${ports[*]}"
}
if [ "${BURROW_CONFORMANCE_PROXY:-0}" = 1 ]; then
  for t in redis-server haproxy; do
    command -v "$t" >/dev/null || { echo "conformance: $t is missing (make deps installs it)"; echo "conformance: 0 passed, 1 failed"; exit 1; }
  done
  RPORT=$(free_port)
  redis-server --port "$RPORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$WS" >"$WS/redis.log" 2>&1 &
  PIDS+=("$!")
  wait_port "$RPORT" || { echo "conformance: redis-server did not start"; echo "conformance: 0 passed, 1 failed"; exit 1; }
  printf 'state: {url: "redis://127.0.0.1:%s/0"}\n' "$RPORT" >"$WS/store.yaml"
  # the fixtures' file with the store, its tools' paths made absolute
  { sed -E "s#^( *- )fixtures/#\1$HERE/fixtures/#" "$HERE/fixtures.yaml"; cat "$WS/store.yaml"; } >"$WS/fixtures-store.yaml"
  proxied default --config "$WS/store.yaml" --root "$WS"
  DEFAULT_URL=$URL
  proxied fixtures --config "$WS/fixtures-store.yaml" --root "$WS"
  FIXTURES_URL=$URL
else
  start default --root "$WS"
  DEFAULT_URL=$URL
  # the scenarios that call the suite's reference fixtures that are operator
  # files (fixtures.yaml: tools, prompts, resources), against a second server that has them
  start fixtures --config "$HERE/fixtures.yaml" --root "$WS"
  FIXTURES_URL=$URL
fi

# one scenario (its index, its item): its verdict line (and what failed)
# in $WS/out.N; JOBS of them at once (they wait on the server more than
# they compute), reported in order
run_one() {
  local n=$1 item=$2 rev name URL sc ver out rc summary
  rev=${item%%:*} name=${item#*:}
  [ "$rev" = "$item" ] && rev=2025-11-25
  URL=$DEFAULT_URL sc=$name
  case $rev in fixtures@*) rev=${rev#fixtures@} URL=$FIXTURES_URL sc="$name (fixtures)" ;; esac
  sc="$sc@$rev"
  # an extension's scenario runs at the suite's revision for extensions
  # (2026-07-28); naming one skips it as not applicable
  ver=(--spec-version "$rev")
  case " $EXTENSIONS $TASKS " in *" $name "*) ver=() ;; esac
  out=$(timeout 120 node "$SUITE" server --url "$URL" --scenario "$name" "${ver[@]}" 2>&1); rc=$?
  summary=$(grep -aE 'Passed: [0-9]+/[0-9]+' <<<"$out" | tail -n 1 | sed 's/\x1b\[[0-9;]*m//g')
  if [ "$rc" = 0 ] && [ -n "$summary" ] && grep -qE ', 0 failed' <<<"$summary"; then
    echo "PASS $sc: $summary" >"$WS/out.$n"
  else
    { sed 's/\x1b\[[0-9;]*m//g' <<<"$out" | grep -aE 'FAILURE|WARNING|Error' | head -n 20
      echo "FAIL $sc (exit $rc): ${summary:-no result}"; } >"$WS/out.$n"
  fi
}
# The tasks scenarios run alone, after the rest: a call becomes a task only
# while another worker of its server is free, which scenarios run beside
# them would take.
JOBS=${BURROW_CONFORMANCE_JOBS:-3}
n=0 alone=()
for item in $SCENARIOS; do
  n=$((n + 1))
  case " $TASKS " in *" ${item#*:} "*) alone+=("$n:$item"); continue ;; esac
  while [ "$(jobs -rp | wc -l)" -ge $((JOBS + ${#PIDS[@]})) ]; do wait -n; done
  run_one "$n" "$item" &
done
for p in $(jobs -rp); do
  case " ${PIDS[*]} " in *" $p "*) ;; *) wait "$p" ;; esac
done
for a in "${alone[@]}"; do run_one "${a%%:*}" "${a#*:}"; done
pass=0 fail=0
for i in $(seq "$n"); do
  cat "$WS/out.$i"
  if grep -q '^PASS ' "$WS/out.$i"; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
done
for m in $missing; do
  echo "FAIL $m: the suite lists it, run.sh does not run it (add it to a list above)"; fail=$((fail + 1))
done
echo "conformance: $pass passed, $fail failed"
[ "$fail" = 0 ]
