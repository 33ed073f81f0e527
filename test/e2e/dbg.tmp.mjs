import { startHttp, initBody, HEADERS } from "./http_helpers.mjs";
import fs from "node:fs";
import { createHash } from "node:crypto";
const sha = (t) => createHash("sha256").update(t).digest("hex");
fs.writeFileSync("/tmp/mc2.yaml", `roots: [/tmp/slowws]\nhttp:\n  tokens:\n    - {sha256: ${sha("abc")}, max_calls: 1}\n`);
const s = await startHttp(["--config", "/tmp/mc2.yaml"]);
const H = { ...HEADERS, authorization: "Bearer abc" };
const r = await fetch(s.url, { method: "POST", headers: H, body: initBody() });
console.log(r.status); await r.body.cancel();
const sid = r.headers.get("mcp-session-id");
for (let i = 0; i < 3; i++) {
const x = await fetch(s.url, { method: "POST", headers: { ...H, "mcp-session-id": sid }, body: JSON.stringify({ jsonrpc: "2.0", id: 2, method: "tools/list" }) });
console.log(i, x.status, (await x.text()).slice(0, 100));
await new Promise((r) => setTimeout(r, 500));
}
await s.stop();
