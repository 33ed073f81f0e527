// Scale-out without stickiness (issue 27): two `burrow mcp --http`
// instances on one shared folder behind HAProxy with `balance roundrobin`
// and no stick table, one deployment key and one store of used approval
// states. 4 clients of the official v2 SDK (@modelcontextprotocol/client,
// MCP 2026-07-28) x 500 mixed calls (reads, listings, greps, stats,
// compare-and-set increments of one shared counter, and writes a policy
// asks about, approved through the SDK's own elicitation handler): every
// client is served by both instances, approvals asked by one instance are
// answered on the other, and no compare-and-set update is lost. The
// session-era test with the stick table is scaleout.test.mjs.
//
//   cd test/e2e && node --test scaleout_stateless.test.mjs     (needs haproxy)

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { startHttp, haproxyConfig, freePort, waitPort } from "./http_helpers.mjs";
import { HAPROXY } from "./redis_helpers.mjs";

const CLIENTS = 4, CALLS = 500;

test("two instances, round robin, no stick table: 2026-07-28 clients on both, approvals across instances, no lost compare-and-set", { timeout: 300_000, skip: !HAPROXY && "haproxy not installed" }, async () => {
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-scale2-")));
  const shared = path.join(tmp, "shared");
  fs.mkdirSync(path.join(shared, "held"), { recursive: true });
  fs.writeFileSync(path.join(shared, "counter.txt"), "0\n");
  for (let i = 0; i < 20; i++) fs.writeFileSync(path.join(shared, `f${i}.txt`), `file ${i}\nneedle ${i}\n`);
  fs.writeFileSync(path.join(tmp, "ask.lua"), `return { name = "hold", check = function(r)
  if r.operation == "write" and r.path:match("^held/") then return "ask", "held by the test" end
  return "allow" end }\n`);
  fs.writeFileSync(path.join(tmp, "approval.key"), "scale-out test key, 32 bytes or more\n");
  fs.writeFileSync(path.join(tmp, "burrow.yaml"), "roots: [shared]\npolicies: [./ask.lua]\n"
    + "http: {approval_key_file: approval.key, approval_store: used-approvals.db}\n");
  const a = await startHttp(["--config", path.join(tmp, "burrow.yaml")]);
  const b = await startHttp(["--config", path.join(tmp, "burrow.yaml")]);
  const port = await freePort();
  const cfg = path.join(tmp, "haproxy.cfg");
  fs.writeFileSync(cfg, haproxyConfig(port, [a.port, b.port], { sticky: false }));
  const hap = spawn(HAPROXY, ["-f", cfg, "-db"], { stdio: ["ignore", "ignore", "pipe"] });
  let hapErr = "";
  hap.stderr.on("data", (d) => { hapErr += d; });
  try {
    await waitPort(port);
    const url = `http://127.0.0.1:${port}/mcp`;
    const results = await Promise.all(Array.from({ length: CLIENTS }, async (_, c) => {
      const served = new Set();
      let last = null, crossed = 0, retries = 0;
      const fetchSeen = async (u, init) => {
        const r = await fetch(u, init);
        const who = r.headers.get("x-served-by");
        if (who) served.add(who);
        // a retry of a call that asked carries the state: the request just
        // before it (this client's calls are sequential) was its question
        if (typeof init?.body === "string" && init.body.includes('"requestState"')) {
          retries++;
          if (last && who && last !== who) crossed++;
        }
        last = who;
        return r;
      };
      const client = new Client({ name: `scale2-${c}`, version: "1" },
        { capabilities: { elicitation: {} }, versionNegotiation: { mode: { pin: "2026-07-28" } } });
      let asked = 0;
      client.setRequestHandler("elicitation/create", async () => { asked++; return { action: "accept", content: { approve: true } }; });
      await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: fetchSeen }));
      assert.equal(client.getNegotiatedProtocolVersion(), "2026-07-28");
      let increments = 0, conflicts = 0, approved = 0;
      for (let i = 0; i < CALLS; i++) {
        const kind = i % 6;
        if (kind === 0) { // compare-and-set: read, write n+1 if unchanged, else count the conflict
          const r = await client.callTool({ name: "read_file", arguments: { path: "counter.txt" } });
          assert.equal(r.isError, undefined, JSON.stringify(r));
          const n = Number(/^\s*1\t(\d+)/.exec(r.content[0].text)[1]);
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
        } else if (kind === 4 && i % 24 === 4) { // a write the policy asks about: approved
          const w = await client.callTool({ name: "write_file", arguments: { path: `held/c${c}-${i}.txt`, content: `${i}\n` } });
          assert.equal(w.isError, undefined, JSON.stringify(w));
          approved++;
        } else {
          const r = await client.callTool({ name: "stat", arguments: { path: "counter.txt" } });
          assert.equal(r.isError, undefined);
        }
      }
      await client.close();
      return { increments, conflicts, approved, asked, retries, crossed, served: [...served] };
    }));
    const increments = results.reduce((s, r) => s + r.increments, 0);
    const conflicts = results.reduce((s, r) => s + r.conflicts, 0);
    const approved = results.reduce((s, r) => s + r.approved, 0);
    const crossed = results.reduce((s, r) => s + r.crossed, 0);
    const final = Number(fs.readFileSync(path.join(shared, "counter.txt"), "utf8").trim());
    console.log(`${CLIENTS} clients x ${CALLS} calls: ${increments} increments, ${conflicts} conflicts refused, counter ${final}; `
      + `${approved} approvals, ${crossed} answered on the other instance; instances per client: ${results.map((r) => r.served.join("+")).join(", ")}`);
    for (const r of results) {
      assert.equal(r.served.length, 2, `a client was served by both instances: ${r.served}`);
      assert.equal(r.asked, r.approved, "each held write was asked once");
      assert.equal(r.retries, r.approved);
    }
    assert.ok(crossed > 0, "an approval asked by one instance was answered on the other");
    assert.equal(fs.readdirSync(path.join(shared, "held")).length, approved, "every approved write landed");
    assert.equal(final, increments, "every compare-and-set that succeeded is in the counter: none lost");
  } finally {
    hap.kill("SIGTERM");
    await a.stop();
    await b.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
    if (hap.exitCode && hap.exitCode !== 0 && hap.exitCode !== 143) console.log(hapErr);
  }
});
