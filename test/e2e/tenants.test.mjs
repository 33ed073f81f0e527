// Issue 26: a tenant's own limits (http.tenants.NAME.max_sessions,
// max_calls) hold across all its tokens' sessions, beside the tokens'
// limits (the lower wins), and another tenant is not refused by them.
//
//   cd test/e2e && npm ci && node --test tenants.test.mjs

import { test, after } from "node:test";
import assert from "node:assert/strict";
import crypto from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { startHttp, initBody, HEADERS } from "./http_helpers.mjs";

let server, dir;
after(async () => {
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

const sha = (s) => crypto.createHash("sha256").update(s).digest("hex");

async function init(url, token) {
  const r = await fetch(url, { method: "POST", headers: { ...HEADERS, authorization: `Bearer ${token}` }, body: initBody(1) });
  const text = await r.text();
  return { status: r.status, text, sid: r.headers.get("mcp-session-id") };
}

test("a tenant's max_sessions and max_calls hold across its tokens; other tenants are served", { timeout: 60_000 }, async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-tenants-")));
  fs.mkdirSync(path.join(dir, "ws"));
  fs.mkdirSync(path.join(dir, "small"));
  fs.writeFileSync(path.join(dir, "ask.lua"), `return { name = "ask", check = function(r)
    if r.operation == "write" and not r.member then return "ask", "hold" end return "allow" end }\n`);
  fs.writeFileSync(path.join(dir, "small.yaml"), "roots: [small]\npolicies: [./ask.lua]\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"), [
    "roots: [ws]",
    "http:",
    "  tenants:",
    "    small: {config: small.yaml, max_sessions: 2, max_calls: 1}",
    "  tokens:",
    `    - {sha256: ${sha("small-a")}, tenant: small}`,
    `    - {sha256: ${sha("small-b")}, tenant: small}`,
    `    - {sha256: ${sha("big")}}`,
    "",
  ].join("\n"));
  server = await startHttp(["--config", path.join(dir, "burrow.yaml")]);

  // sessions: two for small across its two tokens, then its third is refused
  const holderTransport = new StreamableHTTPClientTransport(new URL(server.url),
    { requestInit: { headers: { authorization: "Bearer small-a" } } });
  const holder = new Client({ name: "holder", version: "1" }, { capabilities: { elicitation: {} } });
  let release, asked;
  const askedP = new Promise((r) => { asked = r; });
  const held = new Promise((r) => { release = r; });
  holder.setRequestHandler(ElicitRequestSchema, async () => { asked(); await held; return { action: "accept", content: { approve: true } }; });
  await holder.connect(holderTransport);
  const second = await init(server.url, "small-b");
  assert.equal(second.status, 200, second.text);
  const third = await init(server.url, "small-a");
  assert.equal(third.status, 429, third.text);
  assert.match(third.text, /tenant has its most sessions open/);
  const big = await init(server.url, "big");
  assert.equal(big.status, 200, "another tenant opens sessions");

  // calls: small's one call parked; its other session's call is refused
  const call = holder.callTool({ name: "write_file", arguments: { path: "w.txt", content: "w\n" } });
  await askedP;
  const h = { ...HEADERS, authorization: "Bearer small-b", "mcp-session-id": second.sid, "mcp-protocol-version": "2025-11-25" };
  await (await fetch(server.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }) })).text();
  const list = () => fetch(server.url, { method: "POST", headers: h, body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "tools/list" }) });
  const refused = await list();
  const refusedText = await refused.text();
  assert.equal(refused.status, 429, refusedText);
  assert.match(refusedText, /tenant has its most calls running/);
  release();
  const res = await call;
  assert.equal(res.isError, undefined, JSON.stringify(res));
  const again = await list();
  await again.text();
  assert.equal(again.status, 200, "the tenant's call is over: the next one runs");
  await holder.close();
});
