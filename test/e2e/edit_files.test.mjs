// End-to-end: edit_files over MCP stdio with the official TypeScript SDK
// client (which checks structuredContent against the output schema): a
// rename across ten files where the seventh edit does not match changes
// nothing and names the file; the same rename applied wholly, with one
// diff, and one undo_edit takes all ten back; a stale expected_hash on
// one file changes nothing.
//
//   BURROW_BIN=/path/to/burrow node --test test/e2e/edit_files.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(process.env.BURROW_BIN || path.join(HERE, "..", "..", "build", "burrow"));
const T = { timeout: 30_000 };
const sha256 = (data) => "sha256:" + createHash("sha256").update(data).digest("hex");
const N = 10;
const name = (i) => `m${String(i).padStart(2, "0")}.py`;
const original = (i) => `import old_name\n\ndef f${i}():\n    return old_name(${i})\n`;
const renamed = (i) => `import new_name\n\ndef f${i}():\n    return new_name(${i})\n`;

let TMP;
before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-e2e-edit-files-"))); });
after(() => { if (TMP) fs.rmSync(TMP, { recursive: true, force: true }); });

async function session(dir, fn) {
  const env = { ...getDefaultEnvironment(), ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("BURROW_"))) };
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", "--root", dir], env, stderr: "pipe" });
  const client = new Client({ name: "burrow-e2e-edit-files", version: "0.0.0" }, { capabilities: {} });
  await client.connect(transport);
  await client.listTools(); // the SDK keeps the output schemas it validates against
  try {
    return await fn((tool, args) => client.callTool({ name: tool, arguments: args }));
  } finally {
    await client.close();
  }
}

const text = (r) => r.content.map((c) => c.text ?? "").join("");
function ok(r, what) {
  if (r.isError) assert.fail(`${what}: ${text(r)}`);
  return r.structuredContent;
}
function refused(r, code, what) {
  assert.equal(r.isError, true, `${what}: expected ${code}, got ${JSON.stringify(r).slice(0, 300)}`);
  assert.equal(r._meta?.["burrow/code"], code, `${what}: ${text(r)}`);
  assert.ok(text(r).startsWith(code + ": "), `${what}: ${text(r)}`);
  return r;
}

function tree() {
  const dir = fs.mkdtempSync(path.join(TMP, "ws"));
  for (let i = 1; i <= N; i++) fs.writeFileSync(path.join(dir, name(i)), original(i));
  return dir;
}
const contents = (dir) => Object.fromEntries(fs.readdirSync(dir).sort().map((f) => [f, fs.readFileSync(path.join(dir, f), "utf8")]));

// every file: the import and the call renamed; at miss, an old_text that is not there
function rename(miss) {
  const files = [];
  for (let i = 1; i <= N; i++) {
    files.push({ path: name(i), edits: [
      { old_text: "import old_name", new_text: "import new_name" },
      { old_text: i === miss ? "return old_nam(" : "return old_name(", new_text: "return new_name(" },
    ] });
  }
  return { files };
}

test("a rename across ten files whose seventh edit does not match changes nothing", T, async () => {
  const dir = tree();
  const before = contents(dir);
  await session(dir, async (call) => {
    const r = refused(await call("edit_files", rename(7)), "NOT_FOUND_TEXT", "seventh edit");
    assert.match(text(r), /m07\.py/);
    assert.equal(r._meta["burrow/details"].file, 7);
    assert.equal(r._meta["burrow/details"].path, "m07.py");
  });
  assert.deepEqual(contents(dir), before, "no file changed, no temp file left");
});

test("a rename across ten files applies wholly, and one undo_edit takes all ten back", T, async () => {
  const dir = tree();
  const before = contents(dir);
  await session(dir, async (call) => {
    const s = ok(await call("edit_files", rename()), "rename");
    assert.equal(s.files.length, N);
    assert.equal(s.replacements, 2 * N);
    assert.equal(s.level, "exact");
    for (let i = 1; i <= N; i++) {
      const f = path.join(dir, name(i));
      assert.equal(fs.readFileSync(f, "utf8"), renamed(i));
      assert.equal(s.files[i - 1].content_hash, sha256(fs.readFileSync(f)));
      assert.ok(s.diff.includes(`--- ${name(i)}\n+++ ${name(i)}\n`), `the one diff shows ${name(i)}`);
    }
    const u = ok(await call("undo_edit", { path: name(3) }), "undo");
    assert.equal(u.files, N);
    assert.deepEqual(contents(dir), before, "all ten back");
    refused(await call("undo_edit", { path: name(8) }), "INVALID_ARGUMENT", "nothing left to undo");
  });
});

test("a stale expected_hash on one file changes nothing and names it", T, async () => {
  const dir = tree();
  const before = contents(dir);
  const args = rename();
  for (let i = 1; i <= N; i++) args.files[i - 1].expected_hash = sha256(original(i));
  args.files[4].expected_hash = sha256("stale");
  await session(dir, async (call) => {
    const r = refused(await call("edit_files", args), "HASH_MISMATCH", "stale hash");
    assert.equal(r._meta["burrow/details"].file, 5);
    assert.match(text(r), /m05\.py/);
  });
  assert.deepEqual(contents(dir), before);
});
