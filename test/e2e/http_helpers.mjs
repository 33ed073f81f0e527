// Helpers of the HTTP tests: start `burrow mcp --http` on a free port and
// read its URL from stderr; parse an SSE body; the raw initialize request.

import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const HERE = path.dirname(fileURLToPath(import.meta.url));
export const REPO = path.resolve(HERE, "..", "..");
export const BIN = path.resolve(process.env.BURROW_BIN || path.join(REPO, "build", "burrow"));

export const HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };

export function initBody(id = 1, version = "2025-11-25") {
  return JSON.stringify({ jsonrpc: "2.0", id, method: "initialize",
    params: { protocolVersion: version, capabilities: {}, clientInfo: { name: "raw", version: "1" } } });
}

/** Start the server; resolves to {url, port, proc, stderr(), stop()}, or
 * rejects with its stderr if it exits first. `listen` defaults to a free
 * loopback port; `command` (argv) runs instead of burrow's own, e.g. a
 * shell that sets a limit and execs it. */
export function startHttp(args, { listen = "127.0.0.1:0", env = {}, command = null } = {}) {
  const argv = command || [BIN, "mcp", ...args, ...(listen ? ["--http", listen] : [])];
  const proc = spawn(argv[0], argv.slice(1),
    { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  return new Promise((resolve, reject) => {
    const onExit = (code) => reject(Object.assign(new Error(`burrow exited ${code}: ${err}`), { code, stderr: err }));
    proc.on("exit", onExit);
    proc.stderr.on("data", (d) => {
      err += d;
      const m = err.match(/at (http:\/\/\S+\/mcp)/);
      if (m) {
        proc.off("exit", onExit);
        const url = m[1];
        resolve({
          url, port: Number(new URL(url).port), proc,
          stderr: () => err,
          stop: () => new Promise((r) => {
            if (proc.exitCode !== null || proc.signalCode !== null) return r(proc.exitCode ?? proc.signalCode);
            proc.on("exit", (code) => r(code));
            proc.kill("SIGTERM");
          }),
        });
      }
    });
  });
}

/** Run burrow to its end (for start-up refusals): {code, stderr}. */
export function runToEnd(args, timeoutMs = 10_000) {
  const proc = spawn(BIN, args, { stdio: ["ignore", "ignore", "pipe"] });
  let err = "";
  proc.stderr.on("data", (d) => { err += d; });
  return new Promise((resolve) => {
    const t = setTimeout(() => proc.kill("SIGKILL"), timeoutMs);
    proc.on("exit", (code, sig) => { clearTimeout(t); resolve({ code, sig, stderr: err }); });
  });
}

/** The events of an SSE body: {id, event, data, retry}; ends with the body
 * or after timeoutMs. */
export async function* sseEvents(body, timeoutMs = 30_000) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  const until = Date.now() + timeoutMs;
  let buf = "";
  try {
    while (Date.now() < until) {
      let timer;
      const { value, done } = await Promise.race([reader.read(),
        new Promise((r) => { timer = setTimeout(() => r({ done: true }), Math.max(1, until - Date.now())); })]);
      clearTimeout(timer);
      if (done) return;
      buf += value;
      let i;
      while ((i = buf.indexOf("\n\n")) >= 0) {
        const block = buf.slice(0, i);
        buf = buf.slice(i + 2);
        if (block.startsWith(":")) continue; // a comment: keep-alive
        const ev = { data: "" };
        const data = [];
        for (const line of block.split("\n")) {
          const k = line.indexOf(":");
          const name = k < 0 ? line : line.slice(0, k);
          const val = k < 0 ? "" : line.slice(k + 1).replace(/^ /, "");
          if (name === "data") data.push(val);
          else if (name === "id") ev.id = val;
          else if (name === "event") ev.event = val;
          else if (name === "retry") ev.retry = Number(val);
        }
        ev.data = data.join("\n");
        yield ev;
      }
    }
  } finally {
    reader.cancel().catch(() => {});
  }
}

/** A raw HTTP request with node:http (fetch cannot set Host), the body
 * given whole or as chunks (no Content-Length): {status, headers, body}.
 * The answer is taken as soon as it comes, even mid-upload. */
export function rawRequest(url, { method = "POST", headers = {}, body, chunks } = {}) {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method, headers }, (res) => {
      let data = "";
      res.on("data", (d) => { data += d; });
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
      res.on("error", () => resolve({ status: res.statusCode, headers: res.headers, body: data }));
    });
    req.on("error", reject);
    if (chunks) {
      // a slow writer on purpose (an attack's pacing, not a wait for the
      // server): each chunk goes out a few ms after the last is flushed,
      // so the body trickles in; nothing here waits for a state
      let i = 0;
      const next = () => {
        if (i === chunks.length) return req.end();
        req.write(chunks[i++], () => setTimeout(next, 5));
      };
      next();
    } else {
      req.end(body);
    }
  });
}

/** HAProxy in front of burrow instances, each session pinned to one (docs/deploy.md). */
export function haproxyConfig(port, backends, { sticky = true, checks = false } = {}) {
  return `global
  maxconn 2000
defaults
  mode http
  timeout connect 5s
  timeout client 5m
  timeout server 5m
frontend mcp
  bind 127.0.0.1:${port}
  default_backend burrow
backend burrow
  balance roundrobin
${sticky ? `  # one instance per session: learnt from the initialize answer's header,
  # looked up on every later request's
  stick-table type string len 64 size 1m expire 30m
  stick on req.hdr(mcp-session-id)
  stick store-response res.hdr(mcp-session-id)
` : ""}  http-response set-header X-Served-By %[srv_name]
${checks ? `  # an instance that dies is out within a check or two; a request sent
  # to it meanwhile is tried again on another (it never reached burrow)
  option redispatch 1
  retries 3
  retry-on conn-failure empty-response
` : ""}${backends.map((b, i) => `  server b${i + 1} 127.0.0.1:${b}${checks ? " check inter 100ms fall 1 rise 1" : ""}`).join("\n")}
`;
}

/** A free loopback port (for a proxy in front of the servers). */
export function freePort() {
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, "127.0.0.1", () => { const p = s.address().port; s.close(() => resolve(p)); });
  });
}

/** Wait for a state, never for a time (CI machines are busy): resolves
 * to cond()'s first truthy value (cond may be async; it is asked again
 * pollMs after each falsy answer). Past timeoutMs it fails, naming what it
 * waited for (what: text, or a function giving it then): the deadline
 * only bounds a failure, so it is generous. */
export async function waitFor(cond, what, timeoutMs = 30_000, pollMs = 20) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const got = await cond();
    if (got) return got;
    if (Date.now() > until) throw new Error(`waited ${timeoutMs} ms in vain for ${typeof what === "function" ? what() : what}`);
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Resolves once something accepts connections on the loopback port. */
export async function waitPort(port, ms = 30_000) {
  await waitFor(() => new Promise((r) => {
    const c = net.connect(port, "127.0.0.1", () => { c.end(); r(true); });
    c.on("error", () => r(false));
  }), `something listening on ${port}`, ms, 50);
}

/** A new temporary directory where many small files are quick to make:
 * on /dev/shm (tmpfs) when it has a GiB free, else under os.tmpdir(). A
 * busy disk takes a minute for the 30,000 files tmpfs makes in a second. */
export function fastTmpdir(prefix) {
  let base = os.tmpdir();
  try {
    const s = fs.statfsSync("/dev/shm");
    if (s.bavail * s.bsize >= 2 ** 30) base = "/dev/shm";
  } catch { /* no /dev/shm here */ }
  return fs.realpathSync(fs.mkdtempSync(path.join(base, prefix)));
}

/** One stateless 2026-07-28 request of token `token` declaring the tasks
 * extension (SEP-2663), its answer to id: the result, or the error as
 * {error}. `whole`: the body read to its end (the server ended the
 * stream) before the answer is picked; else the SSE events only up to it,
 * for at most timeoutMs. */
export async function taskRequest(url, token, id, method, params, { whole = true, timeoutMs = 60_000 } = {}) {
  const V = "2026-07-28", EXT = "io.modelcontextprotocol/tasks";
  const r = await fetch(url, {
    method: "POST",
    headers: { ...HEADERS, "mcp-protocol-version": V, "mcp-method": method,
      "mcp-name": method === "tools/call" ? params.name : params.taskId, authorization: `Bearer ${token}` },
    body: JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: {
      "io.modelcontextprotocol/protocolVersion": V,
      "io.modelcontextprotocol/clientCapabilities": { extensions: { [EXT]: {} } } } } }),
  });
  const sse = (r.headers.get("content-type") || "").includes("text/event-stream");
  let msg, text = "";
  if (whole) {
    text = await r.text();
    const msgs = sse
      ? text.split("\n").filter((l) => l.startsWith("data:") && l.slice(5).trim()).map((l) => JSON.parse(l.slice(5)))
      : [JSON.parse(text)];
    msg = msgs.find((m) => m.id === id);
  } else if (sse) {
    for await (const e of sseEvents(r.body, timeoutMs)) {
      const m = e.data && JSON.parse(e.data);
      if (m && m.id === id) { msg = m; break; }
    }
  } else {
    msg = JSON.parse(await r.text());
  }
  if (!msg) throw new Error(`no answer to ${method} in ${text.slice(0, 300)}`);
  return msg.error ? { error: msg.error } : msg.result;
}
