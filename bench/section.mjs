// bench/section.mjs: write one bench's part of docs/benchmarks.md, between
// its own markers <!-- NAME:start --> and <!-- NAME:end -->: replaced where
// they are, else appended once (after `heading`, if given). The rest of the
// file, other benches' parts and the hand-written notes, is kept.
import fs from "node:fs";

export function writeSection(file, name, text, heading = "") {
  const START = `<!-- ${name}:start -->`, END = `<!-- ${name}:end -->`;
  const block = `${START}\n${text.replace(/\n+$/, "")}\n${END}`;
  let doc = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "# Benchmarks\n";
  const a = doc.indexOf(START), b = doc.indexOf(END);
  if (a >= 0 && b > a) doc = doc.slice(0, a) + block + doc.slice(b + END.length);
  else doc = doc.replace(/\n*$/, "\n\n") + (heading ? `${heading}\n\n` : "") + block + "\n";
  fs.writeFileSync(file, doc);
  return block;
}
