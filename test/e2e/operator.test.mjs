// End-to-end suite for what operators control, through the official MCP
// TypeScript SDK client: a policy's "ask" answered by the client's
// elicitation, SIGHUP reloading config, tools and policies in a live
// session, and --landlock stopping a direct host open.
//
//   cd test/e2e && npm ci && node --test

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";
import { ElicitRequestSchema, ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { waitFor } from "./http_helpers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, "..", "..");
const BIN = path.resolve(process.env.BURROW_BIN || path.join(REPO, "build", "burrow"));
const T = { timeout: 30_000 };

let TMP;
let counter = 0;
before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-op-"))); });
after(() => { if (TMP) fs.rmSync(TMP, { recursive: true, force: true }); });

function dir(files = {}) {
  const d = path.join(TMP, `case${++counter}`);
  fs.mkdirSync(path.join(d, "ws"), { recursive: true });
  for (const [rel, body] of Object.entries(files)) fs.writeFileSync(path.join(d, rel), body);
  return d;
}

function env(extra = {}) {
  const e = { ...getDefaultEnvironment(), ...extra };
  for (const [k, v] of Object.entries(process.env)) if (k.startsWith("BURROW_")) e[k] = v;
  return e;
}

async function connect(args, { elicit, extraEnv } = {}) {
  const transport = new StdioClientTransport({ command: BIN, args, env: env(extraEnv), stderr: "pipe" });
  const stderr = [];
  transport.stderr?.on("data", (d) => stderr.push(String(d)));
  const client = new Client({ name: "burrow-operator-e2e", version: "1.0.0" },
    { capabilities: elicit ? { elicitation: {} } : {} });
  if (elicit) client.setRequestHandler(ElicitRequestSchema, elicit);
  await client.connect(transport);
  return { client, transport, stderr };
}

const call = (client, name, args) => client.callTool({ name, arguments: args });
const code = (res) => res._meta?.["burrow/code"];

// A policy that asks before any write.
const ASK_WRITES = `
return {
  name = "ask-writes",
  check = function(req)
    if req.operation == "write" then return "ask", "writes need a person's yes" end
    return "allow"
  end,
}
`;

test("an 'ask' policy goes to the client as an elicitation: accept writes, decline refuses", T, async () => {
  const d = dir({ "ask.lua": ASK_WRITES, "burrow.yaml": "roots: [ws]\npolicies: [./ask.lua]\n" });
  const asked = [], ids = [];
  let answer = { action: "accept", content: { approve: true } };
  const { client } = await connect(["mcp", "--config", path.join(d, "burrow.yaml")], {
    elicit: async (req, extra) => { asked.push(req.params.message); ids.push(extra.requestId); return answer; },
  });
  try {
    const ok = await call(client, "write_file", { path: "yes.txt", content: "approved\n" });
    assert.equal(ok.isError, undefined, JSON.stringify(ok));
    assert.equal(fs.readFileSync(path.join(d, "ws", "yes.txt"), "utf8"), "approved\n");
    assert.equal(asked.length, 1);
    assert.match(asked[0], /write_file/);
    assert.match(asked[0], /writes need a person's yes/);

    answer = { action: "decline" };
    const no = await call(client, "write_file", { path: "no.txt", content: "x" });
    assert.equal(no.isError, true);
    assert.equal(code(no), "POLICY_DENIED");
    assert.match(no.content[0].text, /not approved/);
    assert.equal(fs.existsSync(path.join(d, "ws", "no.txt")), false);

    answer = { action: "accept", content: { approve: false } };
    const unticked = await call(client, "write_file", { path: "no.txt", content: "x" });
    assert.equal(code(unticked), "POLICY_DENIED");

    // issue 28: accepting the form approves; the ids cannot be guessed
    answer = { action: "accept" };
    const accepted = await call(client, "write_file", { path: "accepted.txt", content: "ok\n" });
    assert.equal(accepted.isError, undefined, JSON.stringify(accepted));
    assert.equal(fs.readFileSync(path.join(d, "ws", "accepted.txt"), "utf8"), "ok\n");
    for (const id of ids) assert.match(String(id), /^burrow-approval-[0-9a-f]{16}$/);
    assert.equal(new Set(ids).size, ids.length);

    const read = await call(client, "read_file", { path: "yes.txt" }); // reads are not asked about
    assert.equal(read.isError, undefined);
    assert.equal(asked.length, 4);
  } finally {
    await client.close();
  }
});

test("an 'ask' with a client that cannot be asked is denied and says approval was needed", T, async () => {
  const d = dir({ "ask.lua": ASK_WRITES, "burrow.yaml": "roots: [ws]\npolicies: [./ask.lua]\n" });
  const { client } = await connect(["mcp", "--config", path.join(d, "burrow.yaml")]);
  try {
    const res = await call(client, "write_file", { path: "x.txt", content: "x" });
    assert.equal(code(res), "POLICY_DENIED");
    assert.match(res.content[0].text, /approval needed/);
    assert.equal(fs.existsSync(path.join(d, "ws", "x.txt")), false);
  } finally {
    await client.close();
  }
});

// The ten-line policy an operator copies in docs/policies.md's spirit.
const NO_VENDOR = `
return {
  name = "no-vendor",
  check = function(req)
    if req.path:find("^vendor/") and req.operation ~= "read" then
      return "deny", "vendor/ is managed by the package manager"
    end
    return "allow"
  end,
}
`;

test("SIGHUP reloads config, tools and policies in a live session", T, async () => {
  const d = dir({ "no-vendor.lua": NO_VENDOR });
  const cfg = path.join(d, "burrow.yaml");
  fs.writeFileSync(cfg, "roots: [ws]\ntools: [read_file, write_file]\n");
  const { client, transport, stderr } = await connect(["mcp", "--config", cfg]);
  try {
    let changed;
    const listChanged = new Promise((resolve) => { changed = resolve; });
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => changed());

    assert.equal((await call(client, "write_file", { path: "vendor/a.txt", content: "1" })).isError, undefined);
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ["read_file", "write_file"]);

    fs.writeFileSync(cfg, "roots: [ws]\ntools: [read_file, write_file, stat]\npolicies: [default, ./no-vendor.lua]\n");
    process.kill(transport.pid, "SIGHUP");
    await listChanged;
    assert.deepEqual((await client.listTools()).tools.map((t) => t.name), ["read_file", "write_file", "stat"]);
    const denied = await call(client, "write_file", { path: "vendor/b.txt", content: "2" });
    assert.equal(code(denied), "POLICY_DENIED");
    assert.match(denied.content[0].text, /managed by the package manager/);
    assert.equal(fs.existsSync(path.join(d, "ws", "vendor", "b.txt")), false);

    // a broken config keeps the previous good state
    fs.writeFileSync(cfg, "roots: [ws\n");
    process.kill(transport.pid, "SIGHUP");
    await waitFor(() => stderr.join("").includes("reload failed"), "the log line of the failed reload");
    assert.match(stderr.join(""), /reload failed, keeping the previous configuration/);
    assert.equal(code(await call(client, "write_file", { path: "vendor/c.txt", content: "3" })), "POLICY_DENIED");
    assert.equal((await call(client, "stat", { path: "vendor/a.txt" })).isError, undefined);
  } finally {
    await client.close();
  }
});

// Raw JSON-RPC over stdio, for the test-only probe method.
function rawSession(args, extraEnv) {
  const child = spawn(BIN, args, { env: env(extraEnv), stdio: ["pipe", "pipe", "pipe"] });
  let out = "", err = "";
  child.stdout.on("data", (d) => { out += d; });
  child.stderr.on("data", (d) => { err += d; });
  return {
    send: (msg) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n"),
    done: () => new Promise((resolve) => { child.on("close", () => resolve({ out, err })); child.stdin.end(); }),
  };
}

// Raw JSON-RPC over stdio, answered as it goes: reply(id) waits for one.
function liveSession(args, extraEnv) {
  const child = spawn(BIN, args, { env: env(extraEnv), stdio: ["pipe", "pipe", "pipe"] });
  let buf = "", err = "";
  const messages = [], waiting = [];
  child.stderr.on("data", (d) => { err += d; });
  child.stdout.on("data", (d) => {
    buf += d;
    for (let i; (i = buf.indexOf("\n")) >= 0; buf = buf.slice(i + 1)) {
      messages.push(JSON.parse(buf.slice(0, i)));
      for (const w of waiting.splice(0)) w();
    }
  });
  const until = async (pred) => {
    for (let m; !(m = messages.find(pred));) await new Promise((r) => waiting.push(r));
    return messages.find(pred);
  };
  return {
    child, messages, stderr: () => err,
    raw: (line) => child.stdin.write(line + "\n"),
    send: (msg) => child.stdin.write(JSON.stringify({ jsonrpc: "2.0", ...msg }) + "\n"),
    reply: (id) => until((m) => m.id === id),
    until,
    close: () => new Promise((resolve) => { child.on("close", resolve); child.stdin.end(); }),
  };
}

test("only SIGHUP reloads: a stdin line starting with \\x01 is a parse error, not a reload", T, async () => {
  const d = dir({ "no-vendor.lua": NO_VENDOR });
  const cfg = path.join(d, "burrow.yaml");
  fs.writeFileSync(cfg, "roots: [ws]\ntools: [read_file, write_file]\n");
  const s = liveSession(["mcp", "--config", cfg]);
  const names = async (id) => {
    s.send({ id, method: "tools/list" });
    return (await s.reply(id)).result.tools.map((t) => t.name);
  };
  try {
    s.send({ id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    await s.reply(1);
    s.send({ method: "notifications/initialized" });
    assert.deepEqual(await names(2), ["read_file", "write_file"]);

    fs.writeFileSync(cfg, "roots: [ws]\ntools: [read_file, write_file, stat]\npolicies: [./no-vendor.lua]\n");
    s.raw("\x01reload");
    s.raw("\x01oversize");
    assert.deepEqual(await names(3), ["read_file", "write_file"], "the \\x01reload line reloaded the configuration");
    const errors = s.messages.filter((m) => m.id === null);
    assert.equal(errors.length, 2, JSON.stringify(s.messages));
    for (const e of errors) assert.equal(e.error.code, -32700, JSON.stringify(e));
    s.send({ id: 4, method: "tools/call", params: { name: "write_file", arguments: { path: "vendor/a.txt", content: "1" } } });
    assert.equal((await s.reply(4)).result.isError, undefined, "the old policies still hold");
    assert.doesNotMatch(s.stderr(), /reloaded/);

    // the signal still reloads, in the same session
    process.kill(s.child.pid, "SIGHUP");
    await s.until((m) => m.method === "notifications/tools/list_changed");
    assert.deepEqual(await names(5), ["read_file", "write_file", "stat"]);
    s.send({ id: 6, method: "tools/call", params: { name: "write_file", arguments: { path: "vendor/b.txt", content: "2" } } });
    assert.equal((await s.reply(6)).result._meta["burrow/code"], "POLICY_DENIED");
  } finally {
    await s.close();
  }
});

// A test-only operator tool (never installed) that opens a host path
// around the resolver: what Landlock stops.
const PROBE = path.join(HERE, "fixtures", "probe_open.lua");
const probeCall = (id, file) => ({ id, method: "tools/call", params: { name: "probe_open", arguments: { path: file } } });
const probed = (reply) => JSON.parse(reply.result.content[0].text).result;

test("--landlock: a host path opened around the resolver fails with EACCES; tools keep working", T, async (t) => {
  const d = dir();
  fs.writeFileSync(path.join(d, "ws", "in.txt"), "inside\n");
  fs.writeFileSync(path.join(d, "outside.txt"), "outside\n");
  fs.writeFileSync(path.join(d, "probe.yaml"), `roots: [ws]\ntools: [read_file, ${JSON.stringify(PROBE)}]\n`);
  const s = rawSession(["mcp", "--config", path.join(d, "probe.yaml"), "--landlock"]);
  s.send({ id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
  s.send(probeCall(2, path.join(d, "outside.txt")));
  s.send(probeCall(3, path.join(d, "ws", "in.txt")));
  s.send({ id: 4, method: "tools/call", params: { name: "read_file", arguments: { path: "in.txt" } } });
  const { out, err } = await s.done();
  if (/has no Landlock/.test(err)) {
    t.skip("SKIP: this kernel has no Landlock (the server said so and ran without it)");
    return;
  }
  assert.match(err, /Landlock ABI \d+/);
  const replies = Object.fromEntries(out.trim().split("\n").map((l) => JSON.parse(l)).map((m) => [m.id, m]));
  assert.equal(probed(replies[2]), "EACCES");
  assert.equal(probed(replies[3]), "OK");
  assert.equal(replies[4].result.isError, undefined);
  assert.match(replies[4].result.content[0].text, /inside/);
});

test("--landlock grants the config and the files it names, not their siblings; SIGHUP still reloads", T, async (t) => {
  const d = dir({ "no-vendor.lua": NO_VENDOR, "sibling.txt": "beside the config\n" });
  fs.mkdirSync(path.join(d, "logs"));
  fs.writeFileSync(path.join(d, "logs", "other.txt"), "beside the audit log\n");
  const cfg = path.join(d, "burrow.yaml");
  const config = (tools) => `roots: [ws]\ntools: [${tools}, ${JSON.stringify(PROBE)}]\npolicies: [audit, ./no-vendor.lua]\naudit: {file: logs/audit.jsonl, max_bytes: 100}\n`;
  fs.writeFileSync(cfg, config("read_file, write_file"));
  const s = liveSession(["mcp", "--config", cfg, "--landlock"]);
  const probe = async (id, file) => {
    s.send(probeCall(id, file));
    return probed(await s.reply(id));
  };
  try {
    s.send({ id: 1, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "t", version: "1" } } });
    await s.reply(1);
    // stderr is another pipe than the reply's: wait for the Landlock line itself
    await waitFor(() => /has no Landlock|Landlock ABI \d+/.test(s.stderr()), () => `the Landlock line in ${JSON.stringify(s.stderr())}`);
    if (/has no Landlock/.test(s.stderr())) {
      t.skip("SKIP: this kernel has no Landlock (the server said so and ran without it)");
      return;
    }
    assert.match(s.stderr(), /Landlock ABI \d+/);
    s.send({ method: "notifications/initialized" });
    assert.equal(await probe(2, path.join(d, "sibling.txt")), "EACCES", "a sibling of the config file is readable");
    assert.equal(await probe(3, path.join(d, "logs", "other.txt")), "EACCES", "a file beside the audit log is readable");
    assert.equal(await probe(4, d), "EACCES", "the config's directory can be listed");
    assert.equal(await probe(5, cfg), "OK");
    assert.equal(await probe(6, path.join(d, "no-vendor.lua")), "OK");
    assert.equal(await probe(7, path.join(REPO, "lua", "burrow", "init.lua")), "OK");

    s.send({ id: 8, method: "tools/call", params: { name: "write_file", arguments: { path: "vendor/a.txt", content: "1" } } });
    assert.equal((await s.reply(8)).result._meta["burrow/code"], "POLICY_DENIED");
    assert.match(fs.readFileSync(path.join(d, "logs", "audit.jsonl"), "utf8"), /vendor\/a\.txt/);
    // every record passes max_bytes: the log rotates, over an existing .1 too
    s.send({ id: 81, method: "tools/call", params: { name: "read_file", arguments: { path: "missing.txt" } } });
    await s.reply(81);
    assert.match(fs.readFileSync(path.join(d, "logs", "audit.jsonl"), "utf8"), /missing\.txt/);
    assert.match(fs.readFileSync(path.join(d, "logs", "audit.jsonl.1"), "utf8"), /vendor\/a\.txt/);

    // edited in place (same inode), then SIGHUP: read again under Landlock
    fs.writeFileSync(cfg, config("read_file, write_file, stat"));
    process.kill(s.child.pid, "SIGHUP");
    await s.until((m) => m.method === "notifications/tools/list_changed");
    s.send({ id: 9, method: "tools/list" });
    assert.deepEqual((await s.reply(9)).result.tools.map((x) => x.name), ["read_file", "write_file", "stat", "probe_open"]);
    s.send({ id: 10, method: "tools/call", params: { name: "stat", arguments: { path: "." } } });
    assert.equal((await s.reply(10)).result.isError, undefined);
    assert.doesNotMatch(s.stderr(), /reload failed/);
  } finally {
    await s.close();
  }
});

test("no test seam ships: BURROW_TEST_HOOKS opens no probe method, BURROW_TEST_REWORD rewords nothing", T, async () => {
  const d = dir();
  const s = rawSession(["mcp", "--root", path.join(d, "ws")], { BURROW_TEST_HOOKS: "1", BURROW_TEST_REWORD: "[reworded] " });
  s.send({ id: 1, method: "burrow/test/probe_open", params: { path: "/etc/passwd" } });
  s.send({ id: 2, method: "tools/call", params: { name: "read_file", arguments: { path: "missing.txt" } } });
  const { out } = await s.done();
  const replies = Object.fromEntries(out.trim().split("\n").map((l) => JSON.parse(l)).map((m) => [m.id, m]));
  assert.equal(replies[1].error.code, -32601);
  assert.doesNotMatch(replies[2].result.content[0].text, /reworded/);
  // and no installed file carries such a string or a hook symbol
  for (const f of [BIN, path.join(REPO, "build", "libburrow.so")]) {
    const bytes = fs.readFileSync(f);
    assert.equal(bytes.indexOf("BURROW_TEST_"), -1, `${f} has a BURROW_TEST_ string`);
    assert.equal(bytes.indexOf("mapped_hook"), -1, `${f} has a hook symbol`);
  }
  const lua = (dirp) => fs.readdirSync(dirp, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? lua(path.join(dirp, e.name)) : [path.join(dirp, e.name)]);
  for (const f of lua(path.join(REPO, "lua"))) {
    assert.doesNotMatch(fs.readFileSync(f, "utf8"), /BURROW_TEST_/, `${f} reads a test variable`);
  }
});

// Issue 14: a configuration that does not load still gives the client a
// server: initialize answers, every tool call fails with the file:line
// error; fixing the file and SIGHUP brings the tools back.
test("a bad policy file: the server answers, each call names the file and line; SIGHUP recovers", T, async () => {
  const d = dir({
    "mine.lua": "return {\n  name = 'mine',\n  check = function() return 'allow' end\n  rules = {}\n}\n",
    "burrow.yaml": "roots: [ws]\npolicies: [default, mine.lua]\n",
  });
  fs.writeFileSync(path.join(d, "ws", "a.txt"), "alpha\n");
  const { client, transport, stderr } = await connect(["mcp", "--config", path.join(d, "burrow.yaml")]);
  try {
    const { tools } = await client.listTools();
    assert.ok(tools.some((t) => t.name === "read_file"));
    const res = await call(client, "read_file", { path: "a.txt" });
    assert.equal(res.isError, true);
    assert.equal(code(res), "CONFIG_ERROR");
    assert.match(res.content[0].text, /mine\.lua:4: '}' expected/);
    assert.match(stderr.join(""), /mine\.lua:4: '}' expected/);
    fs.writeFileSync(path.join(d, "mine.lua"), "return { name = 'mine', check = function() return 'allow' end }\n");
    process.kill(transport.pid, "SIGHUP");
    const ok = await waitFor(async () => {
      const r = await call(client, "read_file", { path: "a.txt" });
      return !r.isError && r;
    }, "the reload to bring the tools back", 30_000, 100);
    assert.match(ok.content[0].text, /alpha/);
  } finally {
    await client.close();
  }
});
