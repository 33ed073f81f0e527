// End-to-end: two `burrow mcp` processes on one folder, one quotas store
// (policies: [{name: quotas, store: FILE}]): the write budget is shared,
// whichever process the writes go through. And max_calls_per_minute on a
// clock the test sets (the fault shim's BURROW_FAULT_CLOCK: time() reads a
// file), so "wait and retry" is shown to open the next minute's budget
// without waiting for a minute.
//
//   cd test/e2e && node --test quota_store.test.mjs

import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(process.env.BURROW_BIN || path.join(HERE, "..", "..", "build", "burrow"));

const SHIM = path.resolve(HERE, "..", "..", process.env.BURROW_BUILD || "build", "faults.so");

async function connect(config, extra = {}) {
  const env = { ...getDefaultEnvironment() };
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith("BURROW_")) env[k] = v;
  Object.assign(env, extra);
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", "--config", config], env, stderr: "pipe" });
  const client = new Client({ name: "burrow-quota-e2e", version: "1.0.0" });
  await client.connect(transport);
  return client;
}

test("two burrow mcp processes share one write quota through the store", { timeout: 60_000 }, async () => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-quota-")));
  try {
    fs.mkdirSync(path.join(d, "ws"));
    const config = path.join(d, "burrow.yaml");
    fs.writeFileSync(config, "roots: [ws]\npolicies:\n  - default\n  - {name: quotas, max_bytes_written: 3000, store: quota.store}\n");
    const [a, b] = await Promise.all([connect(config), connect(config)]);
    try {
      const write = (c, name) => c.callTool({ name: "write_file", arguments: { path: name, content: "x".repeat(100) } });
      const results = await Promise.all([
        Promise.all(Array.from({ length: 25 }, (_, i) => write(a, `a${i}.txt`))),
        Promise.all(Array.from({ length: 25 }, (_, i) => write(b, `b${i}.txt`))),
      ]);
      const ok = results.flat().filter((r) => !r.isError).length;
      const denied = results.flat().filter((r) => r.isError);
      assert.equal(ok, 30, "3000 bytes: 30 writes of 100, across both processes");
      assert.ok(denied.every((r) => r._meta["burrow/code"] === "POLICY_DENIED" && /shared store/.test(r.content[0].text)));
      assert.equal(fs.readdirSync(path.join(d, "ws")).length, 30);
      assert.ok(fs.existsSync(path.join(d, "quota.store")), "the store is relative to the config file");
    } finally { await a.close(); await b.close(); }
  } finally { fs.rmSync(d, { recursive: true, force: true }); }
});

for (const store of [false, true]) {
  test(`max_calls_per_minute on a set clock: the next minute has a budget again${store ? " (shared store)" : ""}`, { timeout: 60_000 }, async () => {
    const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-quota-clock-")));
    try {
      fs.mkdirSync(path.join(d, "ws"));
      fs.writeFileSync(path.join(d, "ws/r.txt"), "r\n");
      const clock = path.join(d, "clock");
      const minute = 29_000_000; // any minute: the test's, not the wall clock's
      fs.writeFileSync(clock, String(minute * 60 + 5));
      const config = path.join(d, "burrow.yaml");
      fs.writeFileSync(config, "roots: [ws]\npolicies:\n  - default\n  - {name: quotas, max_calls_per_minute: 2"
        + (store ? ", store: quota.store" : "") + "}\n");
      const c = await connect(config, { LD_PRELOAD: SHIM, BURROW_FAULT_CLOCK: clock });
      try {
        const read = () => c.callTool({ name: "read_file", arguments: { path: "r.txt" } });
        const denied = (r) => r.isError && r._meta["burrow/code"] === "POLICY_DENIED" && /2 calls per minute reached/.test(r.content[0].text);
        assert.equal((await read()).isError, undefined, "call 1");
        assert.equal((await read()).isError, undefined, "call 2");
        assert.ok(denied(await read()), "call 3: over the minute's budget");
        fs.writeFileSync(clock, String(minute * 60 + 59)); // the same minute, later
        assert.ok(denied(await read()), "still the same minute");
        fs.writeFileSync(clock, String((minute + 1) * 60)); // the next minute
        assert.equal((await read()).isError, undefined, "the next minute: call 1");
        assert.equal((await read()).isError, undefined, "the next minute: call 2");
        assert.ok(denied(await read()), "the next minute: call 3");
      } finally { await c.close(); }
    } finally { fs.rmSync(d, { recursive: true, force: true }); }
  });
}
