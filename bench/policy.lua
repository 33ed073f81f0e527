-- bench/policy.lua: what the operator's rules cost at the point of use.
-- Same process, same tree, alternating: a workspace with no policy against
-- one with `default` + `secrets` (declared rules applied by the core, in
-- the walker threads for grep), and one with a policy whose check()
-- judges each object (asked about every entry before a walk:
-- ctx:asked_rules), without and with check_paths (the entries it is about,
-- held back by the walker until check() is asked: ctx:walk_judge). Medians of several rounds; ratios only (absolute
-- times on a shared machine mean little).
--
--   lua5.4 bench/policy.lua [OUT.md]    (make bench runs it; BENCH_POLICY=0 skips)
--
-- Environment: BENCH_POLICY_TREE  an existing tree to grep as well (e.g. the
--              Linux source bench/grep.sh unpacks); BENCH_POLICY_ROUNDS (7).

package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = "build/lua/?.so;" .. package.cpath
package.path = (arg[0]:match("^(.*)/[^/]*$") or ".") .. "/?.lua;" .. package.path -- bench/section.lua

local burrow = require "burrow"
local core = require "burrow.core"

local ROUNDS = tonumber(os.getenv("BENCH_POLICY_ROUNDS")) or 7
local READS = 5000

local function sh(cmd) assert(os.execute(cmd), cmd) end

-- A tree of many small files with a few secrets in it.
local function make_tree()
  local dir = os.tmpname()
  os.remove(dir)
  sh("mkdir -p " .. dir)
  for d = 1, 300 do
    local sub = ("%s/pkg%03d/src"):format(dir, d)
    sh("mkdir -p " .. sub)
    for f = 1, 100 do
      local fh = assert(io.open(("%s/mod%03d.js"):format(sub, f), "w"))
      fh:write(("// module %d of package %d\nfunction f%d() { return %d }\nmodule.exports = f%d\n"):format(f, d, f, f, f))
      fh:close()
    end
    if d % 50 == 0 then
      local fh = assert(io.open(("%s/pkg%03d/.env"):format(dir, d), "w"))
      fh:write("TOKEN=needle\n")
      fh:close()
    end
  end
  local fh = assert(io.open(dir .. "/small.txt", "w"))
  fh:write(("line of text\n"):rep(40))
  fh:close()
  return dir
end

local function median(t)
  table.sort(t)
  return t[(#t + 1) // 2]
end

local function time(f)
  local t0 = core.now()
  f()
  return core.now() - t0
end

local function open(dir, policies)
  return assert(burrow.open { roots = { { path = dir } }, policies = policies })
end

-- A policy whose check() judges each object (a dynamic rule: here the
-- same .env files secrets hides), in a file of its own outside the tree.
local function check_policy(decl)
  local file = os.tmpname() .. ".lua"
  local fh = assert(io.open(file, "w"))
  fh:write(([[return { name = "noenv", %s check = function(req)
  if req.resolved and req.resolved:match("%%.env$") then return "deny", "no .env files" end
end }
]]):format(decl))
  fh:close()
  return file
end

local function measure(label, dir, pattern, rows)
  local pfile, dfile = check_policy(""), check_policy([[check_paths = { "**/.env" },]])
  local none, ruled, checked = open(dir, {}), open(dir, { "default", "secrets" }), open(dir, { pfile })
  local declared = open(dir, { dfile })
  local t = { read = { {}, {}, {}, {} }, grep = { {}, {}, {}, {} }, list = { {}, {}, {}, {} } }
  for round = 1, ROUNDS do
    local order = round % 2 == 1 and { none, ruled, checked, declared } or { declared, checked, ruled, none }
    for k, ws in ipairs(order) do
      local slot = ws == none and 1 or ws == ruled and 2 or ws == checked and 3 or 4
      if label == "many small files" then
        t.read[slot][round] = time(function()
          for _ = 1, READS do assert(ws:call("read_file", { path = "small.txt" })) end
        end) / READS
      end
      t.grep[slot][round] = time(function()
        assert(ws:call("grep", { pattern = pattern, output_mode = "count", include_hidden = true }))
      end)
      if label == "many small files" then
        t.list[slot][round] = time(function()
          assert(ws:call("list_dir", { path = ".", recursive = true, include_hidden = true }))
        end)
      end
      local _ = k
    end
  end
  none:close()
  ruled:close()
  checked:close()
  declared:close()
  os.remove(pfile)
  os.remove(dfile)
  if label == "many small files" then
    local a, b, c, d = median(t.read[1]), median(t.read[2]), median(t.read[3]), median(t.read[4])
    rows[#rows + 1] = ("| small read_file (%s) | %.1f µs | %.1f µs | %.2f× | %.1f µs | %.2f× | %.1f µs | %.2f× |")
      :format(label, a * 1e6, b * 1e6, b / a, c * 1e6, c / a, d * 1e6, d / a)
  end
  local a, b, c, d = median(t.grep[1]), median(t.grep[2]), median(t.grep[3]), median(t.grep[4])
  rows[#rows + 1] = ("| grep `%s` (%s) | %.1f ms | %.1f ms | %.2f× | %.1f ms | %.2f× | %.1f ms | %.2f× |")
    :format(pattern, label, a * 1e3, b * 1e3, b / a, c * 1e3, c / a, d * 1e3, d / a)
  if label == "many small files" then
    a, b, c, d = median(t.list[1]), median(t.list[2]), median(t.list[3]), median(t.list[4])
    rows[#rows + 1] = ("| recursive list_dir (%s) | %.1f ms | %.1f ms | %.2f× | %.1f ms | %.2f× | %.1f ms | %.2f× |")
      :format(label, a * 1e3, b * 1e3, b / a, c * 1e3, c / a, d * 1e3, d / a)
  end
end

local rows = {}
local tree = make_tree()
measure("many small files", tree, "module 7[0-9] ", rows)
local big = os.getenv("BENCH_POLICY_TREE")
if big and big ~= "" then measure(big:match("[^/]+$"), big, "struct file_operations", rows) end
sh("rm -rf " .. tree)

local out = {
  "## Policies at the point of use (`bench/policy.lua`)",
  "",
  ("Same process, same tree, alternating rounds (%d, medians): no policy against `default` + `secrets`"):format(ROUNDS),
  "(declared rules the core compiles once and applies to the path named and, for grep, in the walker",
  "threads), and against a policy whose `check()` hides the same files: asked about every entry",
  "before a walk, or with `check_paths = {\"**/.env\"}` (asked inside the one walk: the walker holds",
  "back the entries it is about until check() has allowed them).",
  "The tree of many small files is 30,000 files in 300 packages with 6 `.env` files; each policy",
  "hides those (skipped_policy). Goal: within 1.1× of no policy for declared rules, 1.2× for a",
  "`check()` that declares its paths.",
  "",
  "| what | no policy | default + secrets | ratio | check() | ratio | check() + check_paths | ratio |",
  "|---|---|---|---|---|---|---|---|",
}
for _, r in ipairs(rows) do out[#out + 1] = r end
local text = table.concat(out, "\n") .. "\n"
io.write(text)

if arg[1] then require("section")(arg[1], "policy bench", text) end
