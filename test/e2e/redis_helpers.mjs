// Helpers of the tests on a shared state store: find a binary on PATH or in
// /usr/sbin; a redis-server of the test's own on a free loopback port (never
// the system's), stopped and started again at will; HAProxy on a config of
// the test's; three `burrow mcp --http` instances on one Redis behind it.

import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { freePort, haproxyConfig, startHttp, waitPort } from "./http_helpers.mjs";

/** The path of a program (PATH, then /usr/sbin and /usr/bin, where Debian
 * puts haproxy and redis-server), or "" when it is not installed. */
export function which(name) {
  return spawnSync("sh", ["-c", `command -v ${name} || ls /usr/sbin/${name} /usr/bin/${name} 2>/dev/null`],
    { encoding: "utf8" }).stdout.trim().split("\n")[0];
}

export const REDIS = which("redis-server"), HAPROXY = which("haproxy"), REDIS_CLI = which("redis-cli");

export const needRedis = () => assert.ok(REDIS, "redis-server is missing: apt-get install redis-server (make deps installs it)");
export const needHaproxy = () => assert.ok(HAPROXY, "haproxy is missing: apt-get install haproxy (make deps installs it)");

/** Resolves once p has exited, sending it SIGTERM if it runs. */
export const stopped = (p) => new Promise((r) => {
  if (p.exitCode !== null || p.signalCode) r(); else { p.on("exit", () => r()); p.kill("SIGTERM"); }
});

/** A redis-server to be on the loopback port, no persistence (a start after
 * a stop is empty), its files in dir: {port, proc, start(), stop()}. Nothing
 * runs until start(), which resolves once it accepts connections (a process
 * that does not is stopped and the start fails); stop() waits for its end. */
export function redisOn(dir, port) {
  const r = {
    port, proc: null,
    async start() {
      needRedis();
      r.proc = spawn(REDIS, ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir],
        { stdio: ["ignore", "ignore", "pipe"] });
      try {
        await waitPort(port);
      } catch (e) {
        await stopped(r.proc);
        throw e;
      }
      return r;
    },
    async stop() { if (r.proc) await stopped(r.proc); },
  };
  return r;
}

/** HAProxy on dir/haproxy.cfg (config: its text), resolved once it accepts
 * connections on port (a process that does not is stopped and this fails). */
export async function startHaproxy(dir, port, config) {
  needHaproxy();
  fs.writeFileSync(path.join(dir, "haproxy.cfg"), config);
  const p = spawn(HAPROXY, ["-f", path.join(dir, "haproxy.cfg"), "-db"], { stdio: ["ignore", "ignore", "pipe"] });
  try {
    await waitPort(port);
  } catch (e) {
    await stopped(p);
    throw e;
  }
  return p;
}

/** Three instances on one folder (tmp/shared, with an "ask" policy on its
 * held/, tmp/ask.lua) and one Redis, behind HAProxy round robin without a
 * stick table (with checks: a dead instance is out within a check or two,
 * and what could not reach it goes to another). setup({tmp, ws, rport})
 * writes the test's own files and returns burrow.yaml's text. Resolves to
 * {tmp, ws, rport, redis (redisOn's), burrows, url (the proxy's), stop()}. */
export async function cluster({ prefix, checks = false, setup }) {
  needRedis();
  needHaproxy();
  const tmp = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), prefix)));
  const burrows = [];
  let redis, hap;
  const stop = async () => {
    for (const b of burrows) await b.stop();
    if (hap) await stopped(hap);
    if (redis) await redis.stop();
    fs.rmSync(tmp, { recursive: true, force: true });
  };
  try {
    redis = redisOn(tmp, await freePort());
    await redis.start();
    const ws = path.join(tmp, "shared");
    fs.mkdirSync(path.join(ws, "held"), { recursive: true });
    fs.writeFileSync(path.join(tmp, "ask.lua"), `return { name = "hold", check = function(r)
  if r.operation == "write" and r.path:match("^held/") then return "ask", "held by the test" end
  return "allow" end }\n`);
    fs.writeFileSync(path.join(tmp, "burrow.yaml"), setup({ tmp, ws, rport: redis.port }));
    for (let i = 0; i < 3; i++) burrows.push(await startHttp(["--config", path.join(tmp, "burrow.yaml")]));
    const port = await freePort();
    hap = await startHaproxy(tmp, port, haproxyConfig(port, burrows.map((b) => b.port), { sticky: false, checks }));
    return { tmp, ws, rport: redis.port, redis, burrows, url: `http://127.0.0.1:${port}/mcp`, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}
