-- bench/edit_scale.lua: an edit costs the file plus the edits, not their
-- product. Against the anchor of the same run, one read and one write of
-- the same file through burrow (the file's bytes read, then write_file of
-- them: the atomic, durable write every edit ends with), each measured in
-- a process of its own (its peak RSS from /proc, VmHWM):
--   - 5,000 edits in one edit_file call on an 8.6 MB file;
--   - replace_all of every newline of that file (one region that grows
--     line by line: quadratic in diff.c before it was built as it grows);
--   - notebook_edit of one cell of a 50 MB notebook.
-- Medians of several rounds, ratios only; writes its table between the
-- edit-scale markers of the report.
--
--   lua5.4 bench/edit_scale.lua [OUT.md]   (make bench runs it; BENCH_EDIT_SCALE=0 skips)
--
-- Environment: BENCH_EDIT_SCALE_ROUNDS (5).

package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "build/lua/?.so;" .. package.cpath
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path -- bench/section.lua

local burrow = require "burrow"
local core = require "burrow.core"

local ROUNDS = tonumber(os.getenv("BENCH_EDIT_SCALE_ROUNDS")) or 5

local function sh(cmd) assert(os.execute(cmd), cmd) end

local function slurp(path)
  local fh = assert(io.open(path, "rb"))
  local s = fh:read("a")
  fh:close()
  return s
end

local function spit(path, s)
  local fh = assert(io.open(path, "wb"))
  fh:write(s)
  fh:close()
end

local function peak_kb()
  return tonumber(slurp("/proc/self/status"):match("VmHWM:%s*(%d+)"))
end

-- One measurement in this process (bench/edit_scale.lua --one KIND DIR):
-- prints seconds and peak RSS in kB.
local function one(kind, dir)
  local ws = assert(burrow.open { roots = { { path = dir } } })
  local t0 = core.now()
  if kind == "rw-text" or kind == "rw-notebook" then
    local name = kind == "rw-text" and "f.txt" or "nb.ipynb"
    local s = slurp(dir .. "/" .. name)
    assert(ws:call("write_file", { path = name, content = s }))
  elseif kind == "edits" then
    local edits = {}
    for i = 1, 5000 do
      local n = i * 40 -- every 40th line
      edits[i] = { old_text = ("line %07d of the file "):format(n), new_text = ("LINE %07d of the file "):format(n) }
    end
    local r, msg = ws:call("edit_file", { path = "f.txt", edits = edits })
    assert(r, msg)
  elseif kind == "newlines" then
    local r, msg = ws:call("edit_file", { path = "f.txt", old_text = "\n", new_text = " ", replace_all = true })
    assert(r, msg)
  elseif kind == "notebook" then
    local r, msg = ws:call("notebook_edit", { path = "nb.ipynb", cell_id = "cell-1000", new_source = "print('edited')\n" })
    assert(r, msg)
  end
  local secs = core.now() - t0
  ws:close()
  io.write(("%.6f %d\n"):format(secs, peak_kb()))
end

if arg[1] == "--one" then
  one(arg[2], arg[3])
  return
end

local function median(t)
  local c = {}
  for i, v in ipairs(t) do c[i] = v end
  table.sort(c)
  return c[(#c + 1) // 2]
end

-- The files: fresh for each run (an edit changes them).
local TEXT, NOTEBOOK
do
  local lines = {}
  -- 200,000 lines of 43 bytes: 8.6 MB
  for i = 1, 200000 do lines[i] = ("line %07d of the file %s\n"):format(i, ("x"):rep(17)) end
  TEXT = table.concat(lines)
  local cells = {}
  for i = 1, 2000 do
    cells[i] = ('{"cell_type": "code", "execution_count": 1, "id": "c%d", "metadata": {}, "outputs": [{"name": "stdout", "output_type": "stream", "text": ["%s"]}], "source": ["x = %d\\n"]}')
      :format(i, ("o"):rep(25000), i)
  end
  NOTEBOOK = '{"cells": [' .. table.concat(cells, ", ") ..
    '], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}\n'
end

local function run(kind)
  local dir = os.tmpname()
  os.remove(dir)
  sh("mkdir -p " .. dir)
  spit(dir .. "/f.txt", TEXT)
  spit(dir .. "/nb.ipynb", NOTEBOOK)
  local p = assert(io.popen(("lua5.4 %s --one %s %s"):format(arg[0], kind, dir)))
  local out = p:read("a")
  p:close()
  sh("rm -rf " .. dir)
  local secs, kb = out:match("^(%S+) (%d+)")
  assert(secs, kind .. ": " .. out)
  return tonumber(secs), tonumber(kb)
end

local KINDS = { "rw-text", "edits", "newlines", "rw-notebook", "notebook" }
local t, rss = {}, {}
for _, k in ipairs(KINDS) do t[k], rss[k] = {}, {} end
for r = 1, ROUNDS do
  for _, k in ipairs(KINDS) do
    local s, kb = run(k)
    t[k][r], rss[k][r] = s, kb
    io.stderr:write(("round %d %s: %.3f s, peak RSS %d MB\n"):format(r, k, s, kb // 1024))
  end
end

local mb = function(bytes) return bytes / 1e6 end
local function row(label, k, anchor, size)
  local a, s = median(t[anchor]), median(t[k])
  return ("| %s | %.1f ms | %.1f ms | %.2f× | %d MB | %.1f× |"):format(label, s * 1e3, a * 1e3, s / a,
    median(rss[k]) // 1024, median(rss[k]) * 1024 / size)
end
local out = {
  "## Edits against one read and write (`bench/edit_scale.lua`)",
  "",
  ("Each measured in a process of its own (peak RSS: VmHWM, the whole process), medians of %d rounds,"):format(ROUNDS),
  ("%s, `lua5.4 bench/edit_scale.lua`. Anchor: the same file's bytes read and written back with"):format(os.date("!%Y-%m-%d")),
  "`write_file` (atomic and durable, as every edit ends) in the same run. Goal (issue 28): within 3×",
  "the anchor; the notebook's RSS within 3× its size.",
  "",
  "| what | time | anchor | ratio | peak RSS | RSS / file |",
  "|---|---:|---:|---:|---:|---:|",
  row(("5,000 edits in one call, %.1f MB text file"):format(mb(#TEXT)), "edits", "rw-text", #TEXT),
  row(("replace_all of every newline (%d lines), same file"):format(200000), "newlines", "rw-text", #TEXT),
  row(("notebook_edit of one cell, %.0f MB notebook (2,000 cells)"):format(mb(#NOTEBOOK)), "notebook", "rw-notebook", #NOTEBOOK),
  ("| anchor: read + write_file of the text file | %.1f ms | | | %d MB | |"):format(median(t["rw-text"]) * 1e3,
    median(rss["rw-text"]) // 1024),
  ("| anchor: read + write_file of the notebook | %.1f ms | | | %d MB | |"):format(median(t["rw-notebook"]) * 1e3,
    median(rss["rw-notebook"]) // 1024),
}
local text = table.concat(out, "\n") .. "\n"
io.write(text)

if arg[1] then require("section")(arg[1], "edit-scale bench", text) end
