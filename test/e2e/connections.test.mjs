// Issue 26: one client address cannot hold every connection. With
// http.max_connections_per_address 8, eight half-open connections from
// 127.0.0.1 (a socket that never sends a request) take that address's
// share: its ninth is closed at once, while a client from 127.0.0.2 is
// served. At b663a06 1,030 half-open connections locked everyone out.
//
//   cd test/e2e && npm ci && node --test connections.test.mjs

import { test, after } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { startHttp, initBody, waitFor } from "./http_helpers.mjs";

let server, dir;
const sockets = [];
after(async () => {
  for (const s of sockets) s.destroy();
  if (server) await server.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

// initialize from a given local address: the HTTP status, or the error
function initFrom(port, localAddress) {
  return new Promise((resolve) => {
    const req = http.request({ host: "127.0.0.1", port, path: "/mcp", method: "POST", localAddress, agent: false,
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" } }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode }));
    });
    req.on("error", (e) => resolve({ error: e.code || String(e) }));
    req.end(initBody(1));
  });
}

// a connection that says nothing; resolves once it is open (or refused)
function halfOpen(port) {
  return new Promise((resolve) => {
    const s = net.connect({ host: "127.0.0.1", port, localAddress: "127.0.0.1" }, () => resolve(s));
    s.on("error", () => resolve(s));
    sockets.push(s);
  });
}

test("half-open connections from one address take only its share", { timeout: 60_000 }, async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-conn-")));
  fs.writeFileSync(path.join(dir, "burrow.yaml"), `roots: [${dir}]\nhttp: {max_connections_per_address: 8}\n`);
  server = await startHttp(["--config", path.join(dir, "burrow.yaml")]);
  const before = await initFrom(server.port, "127.0.0.1");
  assert.equal(before.status, 200, JSON.stringify(before));
  for (let i = 0; i < 8; i++) await halfOpen(server.port);
  // the server has them (a thread each) once it answers another address
  const other = await initFrom(server.port, "127.0.0.2");
  assert.equal(other.status, 200, `another address is served: ${JSON.stringify(other)}`);
  const ninth = await initFrom(server.port, "127.0.0.1");
  assert.ok(ninth.error, `the address's ninth connection is closed at once: ${JSON.stringify(ninth)}`);
  for (const s of sockets.splice(0)) s.destroy();
  // its share is back once they are closed (the server notices the close)
  let again;
  await waitFor(async () => (again = await initFrom(server.port, "127.0.0.1")).status === 200,
    () => `the address served again (last: ${JSON.stringify(again)})`, 30_000, 100);
});

// Unauthenticated connections (none of their requests has passed the
// token, Host and Origin checks yet) are capped in all
// (http.max_unauthenticated) and closed after http.auth_timeout of
// silence: connections that never send a request, from any number of
// addresses, cannot lock out a client whose connection has passed, and
// the server takes new ones again once they time out.
test("unauthenticated connections are capped in all and time out; a connection that passed is served", { timeout: 60_000 }, async () => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-unauth-")));
  fs.writeFileSync(path.join(d, "burrow.yaml"), `roots: [${d}]\nhttp: {max_unauthenticated: 6, auth_timeout: 2s}\n`);
  const s = await startHttp(["--config", path.join(d, "burrow.yaml")]);
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const post = (body, sid) => new Promise((resolve) => {
    const headers = { "content-type": "application/json", accept: "application/json, text/event-stream" };
    if (sid) Object.assign(headers, { "mcp-session-id": sid, "mcp-protocol-version": "2025-11-25" });
    const req = http.request({ host: "127.0.0.1", port: s.port, path: "/mcp", method: "POST", agent, headers }, (res) => {
      res.resume();
      res.on("end", () => resolve({ status: res.statusCode, sid: res.headers["mcp-session-id"] }));
    });
    req.on("error", (e) => resolve({ error: e.code || String(e) }));
    req.end(body);
  });
  const half = [];
  try {
    const init = await post(initBody(1));
    assert.equal(init.status, 200, JSON.stringify(init));
    const closed = [];
    for (let i = 0; i < 6; i++) {
      const sock = await new Promise((resolve) => {
        const x = net.connect({ host: "127.0.0.1", port: s.port, localAddress: `127.0.0.${10 + i}` }, () => resolve(x));
        x.on("error", () => resolve(x));
      });
      closed.push(new Promise((r) => sock.on("close", r)));
      half.push(sock);
    }
    // a state: the server has counted them once a new connection is refused
    let fresh;
    await waitFor(async () => (fresh = await initFrom(s.port, "127.0.0.2")).status !== 200,
      "the six counted (a seventh unauthenticated connection refused)");
    assert.ok(fresh.error, `the seventh unauthenticated connection is closed at once: ${JSON.stringify(fresh)}`);
    // the connection that passed is still served
    const list = await post(JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }), init.sid);
    assert.equal(list.status, 200, JSON.stringify(list));
    // the silent ones are closed by the server after auth_timeout ...
    await Promise.all(closed);
    // ... and new connections are taken again
    let again;
    await waitFor(async () => (again = await initFrom(s.port, "127.0.0.2")).status === 200,
      () => `new connections taken again (last: ${JSON.stringify(again)})`, 30_000, 50);
  } finally {
    for (const x of half) x.destroy();
    agent.destroy();
    await s.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
});

// One client address takes at most its share of the sessions
// (http.max_sessions_per_address): its next initialize is 429 naming the
// key, another address is served, and a session it ends gives the slot
// back. Before, one client's initialize calls could fill every slot.
test("one address takes only its share of the sessions", { timeout: 60_000 }, async () => {
  const d = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-share-")));
  fs.writeFileSync(path.join(d, "burrow.yaml"), `roots: [${d}]\nhttp: {max_sessions_per_address: 3}\n`);
  const s = await startHttp(["--config", path.join(d, "burrow.yaml")]);
  const call = (localAddress, method, headers = {}, body) => new Promise((resolve) => {
    const req = http.request({ host: "127.0.0.1", port: s.port, path: "/mcp", method, localAddress, agent: false,
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers } }, (res) => {
      let text = "";
      res.on("data", (x) => { text += x; });
      res.on("end", () => resolve({ status: res.statusCode, sid: res.headers["mcp-session-id"], text }));
    });
    req.on("error", (e) => resolve({ error: e.code || String(e) }));
    req.end(body);
  });
  try {
    const mine = [];
    for (let i = 0; i < 3; i++) {
      const r = await call("127.0.0.1", "POST", {}, initBody(1));
      assert.equal(r.status, 200, JSON.stringify(r));
      mine.push(r.sid);
    }
    const fourth = await call("127.0.0.1", "POST", {}, initBody(1));
    assert.equal(fourth.status, 429, JSON.stringify(fourth));
    assert.match(fourth.text, /http\.max_sessions_per_address/);
    const other = await call("127.0.0.2", "POST", {}, initBody(1));
    assert.equal(other.status, 200, "another address is served");
    const del = await call("127.0.0.1", "DELETE", { "mcp-session-id": mine[0], "mcp-protocol-version": "2025-11-25" });
    assert.equal(del.status, 200, JSON.stringify(del));
    const again = await call("127.0.0.1", "POST", {}, initBody(1));
    assert.equal(again.status, 200, "the ended session's slot is back");
  } finally {
    await s.stop();
    fs.rmSync(d, { recursive: true, force: true });
  }
});
