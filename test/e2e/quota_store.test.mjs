// End-to-end: two `burrow mcp` processes on one folder, one quotas store
// (policies: [{name: quotas, store: FILE}]): the write budget is shared,
// whichever process the writes go through.
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

async function connect(config) {
  const env = { ...getDefaultEnvironment() };
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith("BURROW_")) env[k] = v;
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
