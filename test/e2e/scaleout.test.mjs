// Scale-out: two `burrow mcp --http` instances on one shared folder behind
// HAProxy, which pins each Mcp-Session-Id to one instance (stick table on
// the header, stored from the initialize response; docs/deploy.md has the
// same config). 4 SDK clients x 500 mixed calls (reads, listings, greps and
// compare-and-set increments of one shared counter): every session is
// answered by one instance only, both instances serve, and no
// compare-and-set update is lost across the two processes.
//
//   cd test/e2e && node --test scaleout.test.mjs     (needs haproxy: apt-get install haproxy)

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { startHttp, haproxyConfig, freePort, waitPort } from "./http_helpers.mjs";
import { HAPROXY } from "./redis_helpers.mjs";

const CLIENTS = 4, CALLS = 500;

test("two instances behind HAProxy: sessions pinned, no lost compare-and-set", { timeout: 180_000, skip: !HAPROXY && "haproxy not installed" }, async () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-scale-")));
  const shared = path.join(tmp, "shared");
  fs.mkdirSync(shared);
  fs.writeFileSync(path.join(shared, "counter.txt"), "0\n");
  for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(shared, `f${i}.txt`), `file ${i}\nneedle ${i}\n`);
  const a = await startHttp(["--root", shared]);
  const b = await startHttp(["--root", shared]);
  const port = await freePort();
  const cfg = path.join(tmp, "haproxy.cfg");
  fs.writeFileSync(cfg, haproxyConfig(port, [a.port, b.port]));
  const hap = spawn(HAPROXY, ["-f", cfg, "-db"], { stdio: ["ignore", "ignore", "pipe"] });
  let hapErr = "";
  hap.stderr.on("data", (d) => { hapErr += d; });
  try {
    await waitPort(port);
    const url = `http://127.0.0.1:${port}/mcp`;
    const served = Array.from({ length: CLIENTS }, () => new Set());
    const results = await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
      const fetchSeen = async (u, init) => {
        const r = await fetch(u, init);
        const who = r.headers.get("x-served-by");
        if (who) served[c].add(who);
        return r;
      };
      const client = new Client({ name: `scale-${c}`, version: "1" });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchSeen }));
      let increments = 0, conflicts = 0;
      const readErrors = [];
      for (let i = 0; i < CALLS; i++) {
        const kind = i % 5;
        if (kind === 0) { // compare-and-set: read, write n+1 if unchanged, else count the conflict
          const r = await client.callTool({ name: "read_file", arguments: { path: "counter.txt" } });
          if (r.isError) { readErrors.push(r.content[0].text); continue; }
          const n = Number(/^\s*1\t(\d+)/.exec(r.content[0].text)[1]); // "1\t41\n": numbered lines
          const w = await client.callTool({ name: "write_file", arguments: { path: "counter.txt",
            content: `${n + 1}\n`, expected_hash: r.structuredContent.content_hash } });
          if (w.isError) {
            assert.equal(w._meta["burrow/code"], "HASH_MISMATCH", JSON.stringify(w));
            conflicts++;
          } else increments++;
        } else if (kind === 1) {
          const r = await client.callTool({ name: "read_file", arguments: { path: `f${i % 20}.txt` } });
          assert.equal(r.isError, undefined);
        } else if (kind === 2) {
          const r = await client.callTool({ name: "list_dir", arguments: { path: "." } });
          assert.equal(r.isError, undefined);
        } else if (kind === 3) {
          const r = await client.callTool({ name: "grep", arguments: { pattern: `needle ${i % 20}$` } });
          assert.equal(r.structuredContent.total, 1);
        } else {
          const r = await client.callTool({ name: "stat", arguments: { path: "counter.txt" } });
          assert.equal(r.isError, undefined);
        }
      }
      await client.close();
      return { increments, conflicts, readErrors };
    }));
    const increments = results.reduce((s, r) => s + r.increments, 0);
    const conflicts = results.reduce((s, r) => s + r.conflicts, 0);
    const readErrors = results.flatMap((r) => r.readErrors);
    if (readErrors.length) console.log(`${readErrors.length} reads of the counter failed: ${[...new Set(readErrors)].slice(0, 3).join(" | ")}`);
    const final = Number(fs.readFileSync(path.join(shared, "counter.txt"), "utf8").trim());
    console.log(`${CLIENTS} clients x ${CALLS} calls: ${increments} increments, ${conflicts} conflicts refused, counter ${final}; instances per session: ${served.map((s) => [...s].join("+")).join(", ")}`);
    for (const s of served) assert.equal(s.size, 1, `a session was answered by ${[...s].join(" and ")}`);
    assert.equal(new Set(served.map((s) => [...s][0])).size, 2, "both instances served sessions");
    assert.equal(final, increments, "every compare-and-set that succeeded is in the counter: none lost");
  } finally {
    hap.kill("SIGTERM");
    await a.stop();
    await b.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
    if (hap.exitCode && hap.exitCode !== 0 && hap.exitCode !== 143) console.log(hapErr);
  }
});
