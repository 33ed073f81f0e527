#!/usr/bin/env bash
# test/npm-current.sh DIR: exit 0 when DIR/node_modules holds the version
# package-lock.json pins of each direct dependency (dev ones too), else 1 (missing, or
# left from an older lockfile: the caller runs npm ci). Used by the
# Makefile's test target, test/run-all.sh and test/conformance/run.sh.
dir=${1:?usage: npm-current.sh DIR}
[ -d "$dir/node_modules" ] || exit 1
node -e '
  const fs = require("fs"), path = require("path"), dir = path.resolve(process.argv[1]);
  const lock = JSON.parse(fs.readFileSync(path.join(dir, "package-lock.json"), "utf8"));
  const top = lock.packages[""];
  for (const name of Object.keys({ ...top.dependencies, ...top.devDependencies })) {
    const want = (lock.packages["node_modules/" + name] || {}).version;
    let have;
    try { have = JSON.parse(fs.readFileSync(path.join(dir, "node_modules", name, "package.json"), "utf8")).version; } catch {}
    if (have !== want) { console.error(`${dir}: ${name} ${have || "missing"}, the lockfile pins ${want}`); process.exit(1); }
  }
' "$dir"
