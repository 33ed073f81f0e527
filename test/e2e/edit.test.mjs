// End-to-end: the edit engine and the other mutations through the official
// MCP TypeScript SDK client, which checks every structuredContent against
// the tool's outputSchema: edit_file (diff, levels, errors with their
// _meta code), insert_lines, append_file, mkdir, copy, move, remove,
// undo_edit in one session, read_file answering an image block, a notebook
// read as cells and edited with notebook_edit, and a UTF-16 file round trip.
//
//   BURROW_BIN=/path/to/burrow node --test test/e2e/edit.test.mjs

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport, getDefaultEnvironment } from "@modelcontextprotocol/sdk/client/stdio.js";

const HERE = path.dirname(fileURLToPath(import.meta.url));
const BIN = path.resolve(process.env.BURROW_BIN || path.join(HERE, "..", "..", "build", "burrow"));
const T = { timeout: 30_000 };
const sha256 = (data) => "sha256:" + createHash("sha256").update(data).digest("hex");

let TMP;
before(() => { TMP = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "burrow-e2e-edit-"))); });
after(() => { if (TMP) fs.rmSync(TMP, { recursive: true, force: true }); });

async function session(dir, fn) {
  const env = { ...getDefaultEnvironment(), ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith("BURROW_"))) };
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", "--root", dir], env, stderr: "pipe" });
  const client = new Client({ name: "burrow-e2e-edit", version: "0.0.0" }, { capabilities: {} });
  await client.connect(transport);
  await client.listTools(); // the SDK keeps the output schemas it validates against
  try {
    return await fn((name, args) => client.callTool({ name, arguments: args }));
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
  return text(r);
}

test("edit_file, insert_lines, append_file and undo_edit in one session", T, async () => {
  const dir = fs.mkdtempSync(path.join(TMP, "ws"));
  fs.writeFileSync(path.join(dir, "a.go"), "func f() {\r\n\tif x {\r\n\t\treturn 1\r\n\t}\r\n}\r\n");
  await session(dir, async (call) => {
    let s = ok(await call("edit_file", { path: "a.go", old_text: "\t\treturn 1\n", new_text: "\t\treturn 2\n" }), "exact edit");
    assert.equal(s.replacements, 1);
    assert.equal(s.edits[0].level, "exact");
    assert.equal(s.level, "exact");
    assert.match(s.diff, /^--- a\.go\n\+\+\+ a\.go\n@@ -1,5 \+1,5 @@\n/);
    assert.equal(fs.readFileSync(path.join(dir, "a.go"), "utf8"), "func f() {\r\n\tif x {\r\n\t\treturn 2\r\n\t}\r\n}\r\n");
    assert.equal(s.content_hash, sha256(fs.readFileSync(path.join(dir, "a.go"))));

    const msg = refused(await call("edit_file", { path: "a.go", old_text: "    if x {\n        return 2\n", new_text: "x" }), "NOT_FOUND_TEXT", "spaces for tabs");
    assert.match(msg, /tabs vs spaces/);
    s = ok(await call("edit_file", { path: "a.go", match: "loose", old_text: "    if x {\n        return 2\n", new_text: "    if x {\n        return 3\n" }), "loose edit");
    assert.equal(s.edits[0].level, "indentation");
    assert.equal(s.level, "indentation");
    assert.match(text(await call("edit_file", { path: "a.go", match: "loose", dry_run: true, old_text: "    if x {\n", new_text: "    if y {\n" })),
      /\nedit 1 matched at level indentation \(when indentation is ignored; new_text re-indented to the block\)\n/);
    assert.equal(fs.readFileSync(path.join(dir, "a.go"), "utf8"), "func f() {\r\n\tif x {\r\n\t\treturn 3\r\n\t}\r\n}\r\n");
    // issue 44: one line found from after the indentation, new lines after it: a guess, refused
    let g = await call("edit_file", { path: "a.go", match: "loose", old_text: "return 3", new_text: "return 3\n\tlog()" });
    assert.match(refused(g, "AMBIGUOUS_TEXT", "after the indentation"), /only after the line's indentation/);
    assert.deepEqual(g._meta["burrow/details"], { path: "a.go", edit: 1, matches: 1, lines: [3], level: "exact",
      reindent_line: 2, new_line_text: "\tlog()", after_indent: true, have_text: "\t\treturn 3" });
    assert.equal(fs.readFileSync(path.join(dir, "a.go"), "utf8"), "func f() {\r\n\tif x {\r\n\t\treturn 3\r\n\t}\r\n}\r\n");

    // the details beside the code: what a client decides from (docs/tools.md "Errors")
    let r = await call("edit_file", { path: "a.go", old_text: "\t", new_text: "  " });
    refused(r, "AMBIGUOUS_TEXT", "ambiguous");
    assert.deepEqual(r._meta["burrow/details"], { path: "a.go", edit: 1, matches: 4, lines: [2, 3, 4], level: "exact" });
    r = await call("edit_file", { path: "a.go", edits: [{ old_text: "func f", new_text: "g" }, { old_text: "f()", new_text: "h" }] });
    refused(r, "OVERLAPPING_EDITS", "overlap");
    assert.deepEqual([r._meta["burrow/details"].edit, r._meta["burrow/details"].other], [1, 2]);
    r = await call("edit_file", { path: "a.go", old_text: "func", new_text: "fn", expected_hash: sha256("x") });
    refused(r, "HASH_MISMATCH", "stale hash");
    assert.deepEqual(r._meta["burrow/details"], { path: "a.go", expected: sha256("x"), current: sha256(fs.readFileSync(path.join(dir, "a.go"))) });

    s = ok(await call("insert_lines", { path: "a.go", line: 1, content: "package main\n" }), "insert");
    assert.equal(s.lines_inserted, 1);
    s = ok(await call("append_file", { path: "a.go", content: "// end\r\n" }), "append");
    assert.equal(s.created, false);

    for (const want of ["package main\r\nfunc f() {", "func f() {\r\n\tif x {\r\n\t\treturn 3", "func f() {\r\n\tif x {\r\n\t\treturn 2"]) {
      s = ok(await call("undo_edit", { path: "a.go" }), "undo");
      assert.ok(fs.readFileSync(path.join(dir, "a.go"), "utf8").startsWith(want), `after undo: ${want}`);
    }
  });
});

test("mkdir, copy, move and remove; the root is refused", T, async () => {
  const dir = fs.mkdtempSync(path.join(TMP, "ws"));
  fs.writeFileSync(path.join(dir, "f.txt"), "F\n");
  await session(dir, async (call) => {
    assert.equal(ok(await call("mkdir", { path: "d/e" }), "mkdir").created, true);
    assert.equal(ok(await call("copy", { source: "f.txt", destination: "d/e/g.txt" }), "copy").files, 1);
    const s = ok(await call("copy", { source: "d", destination: "d2", recursive: true }), "copy tree");
    assert.deepEqual([s.files, s.dirs], [1, 2]);
    refused(await call("move", { source: "f.txt", destination: "d2/e/g.txt" }), "EEXIST", "move onto a file");
    ok(await call("move", { source: "f.txt", destination: "d2/e/g.txt", overwrite: true }), "move overwrite");
    assert.equal(fs.existsSync(path.join(dir, "f.txt")), false);
    refused(await call("remove", { path: "d2" }), "EEXIST", "remove a full dir");
    ok(await call("remove", { path: "d2", recursive: true }), "remove tree");
    refused(await call("remove", { path: ".", recursive: true }), "INVALID_ARGUMENT", "remove the root");
    assert.deepEqual(fs.readdirSync(dir).sort(), ["d"]);
  });
});

test("read_file answers a PNG with an image content block", T, async () => {
  const dir = fs.mkdtempSync(path.join(TMP, "ws"));
  const chunk = (type, data) => {
    const len = Buffer.alloc(4); len.writeUInt32BE(data.length);
    const crc = Buffer.alloc(4); crc.writeUInt32BE(zlib.crc32 ? zlib.crc32(Buffer.concat([Buffer.from(type), data])) : 0);
    return Buffer.concat([len, Buffer.from(type), data, crc]);
  };
  const ihdr = Buffer.from([0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0, 0, 0]);
  const png = Buffer.concat([Buffer.from("\x89PNG\r\n\x1a\n", "latin1"), chunk("IHDR", ihdr),
    chunk("IDAT", zlib.deflateSync(Buffer.from([0, 255, 0, 0]))), chunk("IEND", Buffer.alloc(0))]);
  fs.writeFileSync(path.join(dir, "dot.png"), png);
  await session(dir, async (call) => {
    const r = await call("read_file", { path: "dot.png" });
    assert.equal(r.isError, undefined);
    const img = r.content.find((c) => c.type === "image");
    assert.ok(img, `an image block: ${JSON.stringify(r.content).slice(0, 300)}`);
    assert.equal(img.mimeType, "image/png");
    assert.deepEqual(Buffer.from(img.data, "base64"), png);
    assert.equal(r.structuredContent.mime_type, "image/png");
  });
});

test("a notebook reads as cells with an image block; notebook_edit edits a cell", T, async () => {
  const dir = fs.mkdtempSync(path.join(TMP, "ws"));
  const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";
  const nb = {
    cells: [
      { cell_type: "markdown", id: "m1", metadata: {}, source: ["# Title"] },
      { cell_type: "code", execution_count: 1, id: "c1", metadata: {},
        outputs: [{ data: { "image/png": PNG, "text/plain": ["<Figure>"] }, metadata: {}, output_type: "display_data" }],
        source: ["plot()"] },
    ],
    metadata: {}, nbformat: 4, nbformat_minor: 5,
  };
  const file = path.join(dir, "n.ipynb");
  fs.writeFileSync(file, JSON.stringify(nb, null, 1) + "\n");
  await session(dir, async (call) => {
    const r = await call("read_file", { path: "n.ipynb" });
    assert.equal(r.isError, undefined, text(r));
    assert.match(r.content[0].text, /<cell id="c1">plot\(\)\n<outputs>\n\[image 1: image\/png\]/);
    const img = r.content.find((c) => c.type === "image");
    assert.equal(img.data, PNG);
    assert.equal(r.structuredContent.cells, 2);
    const e = ok(await call("notebook_edit", { path: "n.ipynb", cell_id: "c1", new_source: "plot(2)\n",
      expected_hash: r.structuredContent.content_hash }), "notebook_edit");
    assert.equal(e.content_hash, sha256(fs.readFileSync(file)));
    assert.deepEqual(JSON.parse(fs.readFileSync(file, "utf8")).cells[1].source, ["plot(2)\n"]);
    refused(await call("notebook_edit", { path: "n.ipynb", cell_id: "c1", new_source: "x",
      expected_hash: r.structuredContent.content_hash }), "HASH_MISMATCH", "a stale hash");
  });
});

test("a UTF-16 file reads as UTF-8 with its charset and is edited in UTF-16", T, async () => {
  const dir = fs.mkdtempSync(path.join(TMP, "ws"));
  const file = path.join(dir, "r.reg");
  const enc = (s) => Buffer.concat([Buffer.from([0xff, 0xfe]), Buffer.from(s, "utf16le")]);
  fs.writeFileSync(file, enc("Windows Registry Editor Version 5.00\r\n\"Name\"=\"café\"\r\n"));
  await session(dir, async (call) => {
    const r = ok(await call("read_file", { path: "r.reg" }), "read");
    assert.equal(r.charset, "utf-16le");
    const e = ok(await call("edit_file", { path: "r.reg", old_text: "café", new_text: "thé" }), "edit");
    assert.equal(e.charset, "utf-16le");
    assert.deepEqual(fs.readFileSync(file), enc("Windows Registry Editor Version 5.00\r\n\"Name\"=\"thé\"\r\n"));
  });
});

// Issue 28: an edit_file call is cancellable. Thousands of edits on a big
// file take seconds to match; the client's cancel (an AbortSignal, which
// the SDK sends as notifications/cancelled) ends the matching, nothing is
// written, and the server answers the next call at once. Before, the edit
// ran to its end and wrote after the cancel.
test("edit_file: a cancel ends the matching of many edits; nothing is written", { timeout: 120_000 }, async () => {
  const dir = fs.mkdtempSync(path.join(TMP, "cancel-"));
  const lines = [], edits = [];
  for (let i = 1; i <= 6000; i++) {
    lines.push(`line ${String(i).padStart(5, "0")} ${"x".repeat(300)}`);
    edits.push({ old_text: `line ${String(6001 - i).padStart(5, "0")}`, new_text: `LINE ${String(6001 - i).padStart(5, "0")}` });
  }
  const body = lines.join("\n") + "\n";
  fs.writeFileSync(path.join(dir, "big.txt"), body);
  const transport = new StdioClientTransport({ command: BIN, args: ["mcp", "--root", dir], stderr: "inherit" });
  const client = new Client({ name: "edit-cancel", version: "1" }, { capabilities: {} });
  await client.connect(transport);
  try {
    // a state, not a time: the call runs once a ping is answered while it
    // is unanswered (the stdio reader answers pings during a call; a ping
    // that came before the call began waits behind it, and is answered
    // after it). A machine slow to begin the call gets another try.
    let outcome, running = false;
    const abort = new AbortController();
    for (let attempt = 0; attempt < 5 && !running; attempt++) {
      fs.writeFileSync(path.join(dir, "big.txt"), body);
      let settled = false;
      const call = client.callTool({ name: "edit_file", arguments: { path: "big.txt", edits } }, undefined,
        { signal: abort.signal, timeout: 110_000 });
      outcome = call.then(() => { settled = true; return "answered"; }, (e) => { settled = true; return e; });
      await client.ping();
      running = !settled;
      if (!running) await outcome;
    }
    assert.ok(running, "the edit was seen running in one of 5 tries");
    abort.abort("enough");
    assert.notEqual(await outcome, "answered");
    const next = await client.callTool({ name: "read_file", arguments: { path: "big.txt", limit: 1 } });
    assert.match(next.content[0].text, /line 00001/);
    assert.equal(fs.readFileSync(path.join(dir, "big.txt"), "utf8"), body, "nothing was written");
  } finally {
    await client.close();
  }
});
