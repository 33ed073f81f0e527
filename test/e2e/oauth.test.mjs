// Issue 43: burrow mcp --http as an OAuth 2.1 resource server, as MCP's
// authorization spec has it, against a real OpenID provider
// (node-oidc-provider, fixtures/oidc_provider.mjs, started here on a free
// port). The official SDK clients' ClientCredentialsProvider (v1 and v2)
// find the protected resource metadata from burrow's 401, get an
// audience-bound JWT from the provider and call burrow with it; tokens for
// another audience, expired, from another issuer, with a tampered
// signature, or of the read-only scope calling write_file are refused with
// the status and WWW-Authenticate RFC 6750 gives; a key rotation at the
// provider is picked up; with the provider stopped, a token of a key
// burrow never saw is refused while the keys it holds still verify. Also:
// a claim maps principals to tenants, a session is bound to its principal
// and scope, opaque tokens go to introspection (RFC 7662); and against an
// issuer of the test's own, made-up kids cost no fetch, a huge token is
// refused unread, introspections at once are capped, an unreachable
// issuer fails closed.
//
//   cd test/e2e && npm ci && node --test oauth.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createHash, createPrivateKey, generateKeyPairSync, randomUUID, sign as cryptoSign } from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client as Client1 } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport as Transport1 } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ClientCredentialsProvider as Credentials1 } from "@modelcontextprotocol/sdk/client/auth-extensions.js";
import { Client as Client2, StreamableHTTPClientTransport as Transport2,
  ClientCredentialsProvider as Credentials2 } from "@modelcontextprotocol/client";
import { startHttp, freePort, waitFor } from "./http_helpers.mjs";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const T = { timeout: 120_000 };
let TMP, burrow, url, issuer, opPort, provider;
const others = [];

const jwk = (type, opts, alg) => {
  const { privateKey } = generateKeyPairSync(type, opts);
  return { ...privateKey.export({ format: "jwk" }), kid: randomUUID(), alg, use: "sig" };
};
const ec = () => jwk("ec", { namedCurve: "P-256" }, "ES256");
const KEYS = [ec(), jwk("rsa", { modulusLength: 2048 }, "RS256"), jwk("ed25519", {}, "EdDSA")];

/** Start the provider on port with keys: {issuer, stop()}. */
function startProvider(port, keys) {
  const file = path.join(TMP, `keys-${port}-${randomUUID()}.json`);
  fs.writeFileSync(file, JSON.stringify(keys));
  const proc = spawn(process.execPath, [path.join(HERE, "fixtures", "oidc_provider.mjs"), String(port), file],
    { stdio: ["ignore", "pipe", "pipe"] });
  let out = "", err = "";
  proc.stderr.on("data", (d) => { err += d; });
  return new Promise((resolve, reject) => {
    proc.on("exit", (code) => reject(new Error(`oidc provider exited ${code}: ${err}`)));
    proc.stdout.on("data", (d) => {
      out += d;
      const m = /ready (\S+)/.exec(out);
      if (m) resolve({ issuer: m[1], stop: () => new Promise((r) => {
        if (proc.exitCode !== null || proc.signalCode !== null) return r();
        proc.removeAllListeners("exit");
        proc.on("exit", () => r());
        proc.kill("SIGTERM");
      }) });
    });
  });
}

/** A client_credentials token of client from the provider at iss. */
async function token(client, { resource = url, scope = "burrow:read burrow:write", iss = issuer } = {}) {
  const r = await fetch(`${iss}/token`, {
    method: "POST",
    headers: { authorization: "Basic " + Buffer.from(`${client}:${client}-secret`).toString("base64"),
      "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ grant_type: "client_credentials", resource, scope }),
  });
  const j = await r.json();
  assert.equal(r.status, 200, JSON.stringify(j));
  return j.access_token;
}

/** One stateless tools/call (MCP 2026-07-28) with a bearer token:
 * {status, www, body (parsed: the JSON-RPC message)}. */
async function call(tok, name, args) {
  const meta = { "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": { name: "raw", version: "1" },
    "io.modelcontextprotocol/clientCapabilities": {} };
  const headers = { "content-type": "application/json", accept: "application/json, text/event-stream",
    "mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": name };
  if (tok !== null) headers.authorization = `Bearer ${tok}`;
  const r = await fetch(url, { method: "POST", headers,
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name, arguments: args, _meta: meta } }) });
  const text = await r.text();
  const data = text.split("\n").filter((l) => l.startsWith("data: {")).map((l) => l.slice(6)).pop();
  return { status: r.status, www: r.headers.get("www-authenticate"), body: JSON.parse(data || text || "null") };
}

const sha256 = (s) => createHash("sha256").update(s).digest("hex");
const resultText = (r) => r.content.map((b) => b.text).join("");

before(async () => {
  TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-oauth-")));
  opPort = await freePort();
  provider = await startProvider(opPort, KEYS);
  issuer = provider.issuer;
  const port = await freePort();
  url = `http://127.0.0.1:${port}/mcp`;
  fs.mkdirSync(path.join(TMP, "ws"));
  fs.writeFileSync(path.join(TMP, "ws", "notes.txt"), "alpha\n");
  fs.mkdirSync(path.join(TMP, "globex"));
  fs.writeFileSync(path.join(TMP, "globex.yaml"), "roots: [globex]\npolicies: [default, ./who.lua]\n");
  // the principal a call runs as, said back by a policy: quotas and
  // approvals key on the same tenant and token
  fs.writeFileSync(path.join(TMP, "who.lua"), `return { name = "who", check = function(r)
  if r.path == "whoami" then return "deny", ("tenant=%s token=%s"):format(r.tenant, r.token) end
  return "allow" end }\n`);
  fs.writeFileSync(path.join(TMP, "secret"), "burrow-secret\n");
  const meta = await (await fetch(`${issuer}/.well-known/openid-configuration`)).json();
  fs.writeFileSync(path.join(TMP, "burrow.yaml"), `roots: [ws]
policies: [default, ./who.lua]
http:
  tenants:
    globex: {config: globex.yaml}
  oauth:
    issuer: ${issuer}
    audience: ${url}
    scopes: {read: "burrow:read", write: "burrow:write"}
    refetch_interval: 1s
    skew: 1s
    tenant_claim: org
    tenants: {acme: default, globex: globex}
    introspection:
      endpoint: ${meta.introspection_endpoint}
      client_id: burrow
      client_secret_file: ./secret
`);
  burrow = await startHttp(["--config", path.join(TMP, "burrow.yaml")], { listen: `127.0.0.1:${port}` });
});

after(async () => {
  if (burrow) await burrow.stop();
  if (provider) await provider.stop();
  for (const p of others) await p.stop();
  if (TMP) fs.rmSync(TMP, { recursive: true, force: true });
});

test("the protected resource metadata needs no token; a 401 names it (RFC 9728)", T, async () => {
  const where = `http://127.0.0.1:${new URL(url).port}/.well-known/oauth-protected-resource`;
  for (const u of [where, `${where}/mcp`]) {
    const r = await fetch(u);
    assert.equal(r.status, 200, u);
    const m = await r.json();
    assert.equal(m.resource, url);
    assert.deepEqual(m.authorization_servers, [issuer]);
    assert.deepEqual(m.scopes_supported, ["burrow:read", "burrow:write"]);
    assert.deepEqual(m.bearer_methods_supported, ["header"]);
  }
  const r = await call(null, "read_file", { path: "notes.txt" });
  assert.equal(r.status, 401);
  assert.equal(r.www, `Bearer resource_metadata="${where}/mcp", scope="burrow:read burrow:write"`);
  // a static token's refusal words are not an OAuth server's: no error
  // without a token (RFC 6750 3.1), invalid_token with a bad one
  const bad = await call("not-a-token", "read_file", { path: "notes.txt" });
  assert.equal(bad.status, 401);
  assert.match(bad.www, /^Bearer resource_metadata="[^"]+", error="invalid_token", error_description="[^"]+"$/);
});

test("the v1 SDK's ClientCredentialsProvider gets an audience-bound token and calls burrow", T, async () => {
  const authProvider = new Credentials1({ clientId: "rw", clientSecret: "rw-secret", scope: "burrow:read burrow:write",
    expectedIssuer: issuer });
  const c = new Client1({ name: "oauth-v1", version: "1" });
  await c.connect(new Transport1(new URL(url), { authProvider }));
  const tok = authProvider.tokens().access_token;
  const claims = JSON.parse(Buffer.from(tok.split(".")[1], "base64url").toString());
  assert.equal(claims.aud, url); // RFC 8707: the resource the metadata named
  const read = await c.callTool({ name: "read_file", arguments: { path: "notes.txt" } });
  assert.equal(read.isError, undefined, resultText(read));
  assert.match(resultText(read), /alpha/);
  const w = await c.callTool({ name: "write_file", arguments: { path: "v1.txt", content: "one\n" } });
  assert.equal(w.isError, undefined, resultText(w));
  assert.equal(fs.readFileSync(path.join(TMP, "ws", "v1.txt"), "utf8"), "one\n");
  // the principal: the token's iss and sub, as a static token's id is its sha256's head
  const who = await c.callTool({ name: "read_file", arguments: { path: "whoami" } });
  assert.equal(who.isError, true);
  assert.match(resultText(who), new RegExp(`tenant=default token=${sha256(`${issuer}\nrw`).slice(0, 16)}`));
  await c.close();
});

test("the v2 SDK's ClientCredentialsProvider gets a token and calls burrow", T, async () => {
  const authProvider = new Credentials2({ clientId: "rw", clientSecret: "rw-secret", scope: "burrow:read burrow:write",
    expectedIssuer: issuer });
  const c = new Client2({ name: "oauth-v2", version: "1" });
  await c.connect(new Transport2(new URL(url), { authProvider }));
  const w = await c.callTool({ name: "write_file", arguments: { path: "v2.txt", content: "two\n" } });
  assert.equal(w.isError, undefined, resultText(w));
  assert.equal(fs.readFileSync(path.join(TMP, "ws", "v2.txt"), "utf8"), "two\n");
  await c.close();
});

test("a claim names the tenant: each principal writes in its tenant's roots; a tenant burrow lacks is refused", T, async () => {
  const g = await token("globex");
  const w = await call(g, "write_file", { path: "g.txt", content: "globex\n" });
  assert.equal(w.status, 200, JSON.stringify(w.body));
  assert.equal(w.body.result.isError, undefined, JSON.stringify(w.body));
  assert.equal(fs.readFileSync(path.join(TMP, "globex", "g.txt"), "utf8"), "globex\n");
  assert.equal(fs.existsSync(path.join(TMP, "ws", "g.txt")), false);
  const who = await call(g, "read_file", { path: "whoami" });
  assert.match(who.body.result.content[0].text, new RegExp(`tenant=globex token=${sha256(`${issuer}\nglobex`).slice(0, 16)}`));
  // the default tenant's file is not globex's to read
  const other = await call(g, "read_file", { path: "notes.txt" });
  assert.equal(other.body.result.isError, true);
  const i = await call(await token("initech"), "read_file", { path: "notes.txt" });
  assert.equal(i.status, 401);
  assert.match(i.www, /error="invalid_token", error_description="the token's tenant claim names no tenant of this server"/);
});

test("a session is its principal's: another principal of the tenant, or the same with another scope, gets 404", T, async () => {
  const init = (tok) => fetch(url, { method: "POST", headers: { "content-type": "application/json",
    accept: "application/json, text/event-stream", authorization: `Bearer ${tok}` },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) });
  const r = await init(await token("rw"));
  assert.equal(r.status, 200);
  await r.text();
  const sid = r.headers.get("mcp-session-id");
  assert.ok(sid);
  const list = async (tok) => {
    const x = await fetch(url, { method: "POST", headers: { "content-type": "application/json",
      accept: "application/json, text/event-stream", authorization: `Bearer ${tok}`, "mcp-session-id": sid,
      "mcp-protocol-version": "2025-11-25" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }) });
    await x.text();
    return x.status;
  };
  assert.equal(await list(await token("rw")), 200, "a new token of the same principal and scope");
  assert.equal(await list(await token("rs")), 404, "another principal of the same tenant");
  assert.equal(await list(await token("rw", { scope: "burrow:read" })), 404, "the same principal, read-only now");
});

test("RS256 and EdDSA tokens verify as ES256 ones do", T, async () => {
  for (const client of ["rs", "ed"]) {
    const tok = await token(client);
    const alg = JSON.parse(Buffer.from(tok.split(".")[0], "base64url").toString()).alg;
    assert.equal(alg, client === "rs" ? "RS256" : "EdDSA");
    const r = await call(tok, "read_file", { path: "notes.txt" });
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.result.isError, undefined);
  }
});

test("a token for another audience is refused: 401 invalid_token", T, async () => {
  const r = await call(await token("rw", { resource: "http://127.0.0.1:1/mcp" }), "read_file", { path: "notes.txt" });
  assert.equal(r.status, 401);
  assert.match(r.www, /error="invalid_token"/);
  assert.match(r.www, /not for this resource/);
});

test("an expired token is refused: 401 invalid_token", T, async () => {
  const tok = await token("short"); // lives 2 s; burrow's skew is 1 s
  assert.equal((await call(tok, "read_file", { path: "notes.txt" })).status, 200);
  const r = await waitFor(async () => { const x = await call(tok, "read_file", { path: "notes.txt" }); return x.status !== 200 && x; },
    "the short token to expire");
  assert.equal(r.status, 401);
  assert.match(r.www, /error="invalid_token", error_description="the token has expired"/);
});

test("a token of another issuer, even signed by a key burrow holds, is refused", T, async () => {
  const other = await startProvider(await freePort(), KEYS); // same keys, another issuer
  others.push(other);
  const r = await call(await token("rw", { iss: other.issuer }), "read_file", { path: "notes.txt" });
  assert.equal(r.status, 401);
  assert.match(r.www, /error="invalid_token", error_description="the token's issuer is not /);
});

test("a tampered token is refused: signature, payload", T, async () => {
  const tok = await token("rw");
  const [h, p, s] = tok.split(".");
  const flip = (x, i) => x.slice(0, i) + (x[i] === "A" ? "B" : "A") + x.slice(i + 1);
  const sig = await call(`${h}.${p}.${flip(s, 10)}`, "read_file", { path: "notes.txt" });
  assert.equal(sig.status, 401);
  assert.match(sig.www, /signature does not verify/);
  const claims = JSON.parse(Buffer.from(p, "base64url").toString());
  claims.scope = "burrow:read burrow:write admin";
  const body = await call(`${h}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${s}`, "read_file", { path: "notes.txt" });
  assert.equal(body.status, 401);
  assert.match(body.www, /signature does not verify/);
  // alg none with the same claims: never
  const none = Buffer.from(JSON.stringify({ alg: "none", typ: "at+jwt" })).toString("base64url");
  const n = await call(`${none}.${p}.`, "read_file", { path: "notes.txt" });
  assert.equal(n.status, 401);
  assert.match(n.www, /error="invalid_token"/);
});

test("the read-only scope reads, and write_file is refused 403 insufficient_scope", T, async () => {
  const tok = await token("ro", { scope: "burrow:read" });
  const read = await call(tok, "read_file", { path: "notes.txt" });
  assert.equal(read.status, 200);
  assert.match(read.body.result.content[0].text, /alpha/);
  const w = await call(tok, "write_file", { path: "ro.txt", content: "no\n" });
  assert.equal(w.status, 403);
  assert.match(w.www, /error="insufficient_scope"/);
  assert.match(w.www, /scope="burrow:write"$/); // the scope this call needs (MCP 2026-07-28, SEP-2350)
  assert.match(w.www, /resource_metadata="/);
  assert.equal(fs.existsSync(path.join(TMP, "ws", "ro.txt")), false);
});

test("an opaque token is asked of the introspection endpoint (RFC 7662)", T, async () => {
  const tok = await token("opaque");
  assert.equal(tok.split(".").length, 1, "an opaque token");
  const r = await call(tok, "read_file", { path: "notes.txt" });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  const made = await call("made-up-opaque-token", "read_file", { path: "notes.txt" });
  assert.equal(made.status, 401);
  assert.match(made.www, /error="invalid_token", error_description="the token is not active"/);
});

test("a key rotation at the provider is picked up; the provider stopped, a new key is refused and the held ones verify", T, async () => {
  const before = await token("rw"); // signed by the first key
  // rotation: a new ES256 key signs, the old one is still published
  await provider.stop();
  const rotated = [ec(), ...KEYS];
  provider = await startProvider(opPort, rotated);
  const fresh = await token("rw");
  assert.equal(JSON.parse(Buffer.from(fresh.split(".")[0], "base64url").toString()).kid, rotated[0].kid);
  // burrow fetches the keys again for the unknown kid (at most once a refetch_interval)
  await waitFor(async () => (await call(fresh, "read_file", { path: "notes.txt" })).status === 200,
    "the rotated key to be fetched");
  assert.equal((await call(before, "read_file", { path: "notes.txt" })).status, 200);
  // another rotation, and the provider goes before burrow sees the new key
  await provider.stop();
  const third = [ec(), ...rotated];
  provider = await startProvider(opPort, third);
  const unseen = await token("rw");
  await provider.stop();
  const r = await waitFor(async () => {
    const x = await call(unseen, "read_file", { path: "notes.txt" });
    assert.equal(x.status, 401, "a key burrow could not fetch never verifies");
    return /cannot fetch the keys/.test(burrow.stderr()) && x;
  }, "a failed fetch of the keys");
  assert.match(r.www, /error="invalid_token", error_description="no key of the issuer has kid/);
  assert.match(burrow.stderr(), /burrow: oauth: cannot fetch the keys of http:\/\/127\.0\.0\.1:\d+: .*the keys fetched before verify until they expire/);
  // the keys burrow holds, within their lifetime, still verify
  const held = await call(fresh, "read_file", { path: "notes.txt" });
  assert.equal(held.status, 200);
  assert.equal(held.body.result.isError, undefined);
});

// An issuer of the test's own (metadata and keys from a plain HTTP server
// that counts what burrow fetches), for what an attacker could do with the
// fetches themselves.
function fakeIssuer(keys) {
  const hits = { meta: 0, jwks: 0, introspect: 0 };
  const held = []; // introspection answers the test releases
  const pub = keys.map((k) => { const { d, ...p } = k; return p; });
  return new Promise((resolve) => {
    const srv = http.createServer((req, res) => {
      const iss = `http://127.0.0.1:${srv.address().port}`;
      if (req.url === "/.well-known/openid-configuration") {
        hits.meta++;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ issuer: iss, jwks_uri: `${iss}/jwks` }));
      } else if (req.url === "/jwks") {
        hits.jwks++;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ keys: pub }));
      } else if (req.url === "/introspect") {
        hits.introspect++;
        held.push(res);
      } else { res.writeHead(404); res.end(); }
    });
    srv.listen(0, "127.0.0.1", () => resolve({ issuer: `http://127.0.0.1:${srv.address().port}`, hits, held,
      stop: () => new Promise((r) => { srv.close(() => r()); srv.closeAllConnections(); }) }));
  });
}

/** An ES256 JWT signed here with key (a private JWK), header kid as given. */
function sign(key, kid, claims) {
  const h = Buffer.from(JSON.stringify({ alg: "ES256", typ: "at+jwt", kid })).toString("base64url");
  const p = Buffer.from(JSON.stringify(claims)).toString("base64url");
  const s = cryptoSign("sha256", Buffer.from(`${h}.${p}`), { key: createPrivateKey({ key, format: "jwk" }), dsaEncoding: "ieee-p1363" });
  return `${h}.${p}.${s.toString("base64url")}`;
}

async function burrowFor(iss, extra = "") {
  const port = await freePort();
  const u = `http://127.0.0.1:${port}/mcp`;
  const dir = fs.mkdtempSync(path.join(TMP, "b-"));
  fs.mkdirSync(path.join(dir, "ws"));
  fs.writeFileSync(path.join(dir, "ws", "notes.txt"), "alpha\n");
  fs.writeFileSync(path.join(dir, "secret"), "s3cret\n");
  fs.writeFileSync(path.join(dir, "burrow.yaml"),
    `roots: [ws]\nhttp:\n  oauth:\n    issuer: ${iss}\n    audience: ${u}\n${extra}`);
  const b = await startHttp(["--config", path.join(dir, "burrow.yaml")], { listen: `127.0.0.1:${port}` });
  others.push(b);
  return { b, url: u };
}

async function callAt(at, tok) {
  const r = await fetch(at, { method: "POST", headers: { "content-type": "application/json",
    accept: "application/json, text/event-stream", authorization: `Bearer ${tok}` },
  body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "initialize",
    params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } } }) });
  await r.text();
  return { status: r.status, www: r.headers.get("www-authenticate"), retryAfter: r.headers.get("retry-after") };
}

test("made-up kids cost at most one fetch per refetch_interval; a huge token is refused unread", T, async () => {
  const key = ec();
  const fake = await fakeIssuer([key]);
  others.push(fake);
  const { url: at } = await burrowFor(fake.issuer, "    refetch_interval: 1h\n");
  const now = Math.floor(Date.now() / 1000);
  const claims = { iss: fake.issuer, sub: "agent", aud: at, exp: now + 300, iat: now };
  assert.equal((await callAt(at, sign(key, key.kid, claims))).status, 200);
  assert.deepEqual(fake.hits, { meta: 1, jwks: 1, introspect: 0 });
  for (let i = 0; i < 30; i++) {
    const r = await callAt(at, sign(key, `made-up-${i}`, claims));
    assert.equal(r.status, 401);
    assert.match(r.www, /no key of the issuer has kid made-up-/);
  }
  assert.deepEqual(fake.hits, { meta: 1, jwks: 1, introspect: 0 }, "no fetch for the made-up kids");
  const huge = await callAt(at, sign(key, key.kid, { ...claims, pad: "x".repeat(20_000) }));
  assert.equal(huge.status, 401);
  assert.match(huge.www, /too long/);
  assert.deepEqual(fake.hits, { meta: 1, jwks: 1, introspect: 0 });
});

test("introspections at once are capped: past max_concurrent an opaque token is 503 at once, not a stalled listener", T, async () => {
  const fake = await fakeIssuer([ec()]);
  others.push(fake);
  const { url: at } = await burrowFor(fake.issuer,
    `    introspection: {endpoint: ${fake.issuer}/introspect, client_id: burrow, client_secret_file: ./secret, max_concurrent: 1}\n`);
  // a made-up opaque token whose introspection the provider holds
  const slow = [callAt(at, "opaque-1")];
  await waitFor(() => fake.held.length === 1, "an introspection held at the provider");
  const second = await callAt(at, "opaque-2");
  assert.equal(second.status, 503);
  assert.equal(second.retryAfter, "1");
  assert.equal(fake.hits.introspect, 1, "the second was never sent");
  // the listener still answers what needs no introspection meanwhile
  assert.equal((await fetch(`${new URL(at).origin}/.well-known/oauth-protected-resource/mcp`)).status, 200);
  for (const res of fake.held.splice(0)) { res.writeHead(200, { "content-type": "application/json" }); res.end('{"active":false}'); }
  for (const r of await Promise.all(slow)) {
    assert.equal(r.status, 401);
    assert.match(r.www, /the token is not active/);
  }
});

test("an issuer that cannot be reached: every JWT 503 (fail closed), with a log line", T, async () => {
  const iss = `http://127.0.0.1:${await freePort()}`; // nothing listens there
  const { b, url: at } = await burrowFor(iss);
  const now = Math.floor(Date.now() / 1000);
  const key = ec();
  // text that is no JWT is the client's fault, keys or not, and makes no fetch
  const junk = await callAt(at, "not-a-jwt");
  assert.equal(junk.status, 401);
  assert.doesNotMatch(b.stderr(), /cannot fetch the keys/);
  const r = await callAt(at, sign(key, key.kid, { iss, sub: "agent", aud: at, exp: now + 300 }));
  assert.equal(r.status, 503);
  assert.equal(r.retryAfter, "5");
  // the log line is written beside the answer, not before it: wait for it
  const line = /burrow: oauth: cannot fetch the keys of http:\/\/127\.0\.0\.1:\d+: .*refusing every JWT \(503\) until they can be fetched/;
  await waitFor(() => line.test(b.stderr()), () => `the log line in ${JSON.stringify(b.stderr())}`);
});
