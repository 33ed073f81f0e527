-- Issue 40, "staging survives a crash": `kill -9` inside a staged folder
-- move, copy (new and merged into a folder that is there) and remove, run
-- as the real `burrow call` under host/test/faults.c. The shim's
-- `any:KILL:after=N` makes the process kill itself (SIGKILL) before the
-- Nth call that changes the filesystem under the root: the kill lands at a
-- step of the operation, never after a guessed delay. A first run of each
-- operation counts its steps; each run then kills at a random step (half
-- the runs anywhere, half among the first and last 24 steps, where the
-- records are written and the commits made), then a new workspace opens
-- (the restart): each operation is whole at its source or whole at its
-- destination, byte for byte (types, modes, contents, link targets), a
-- half-made copy is gone, nothing else under the root changed, and no
-- `.burrow-stage.` name is left on disk or shown to the agent. A last case
-- kills a move in one process while another keeps its workspace open: its
-- next staged operation in that directory puts the folder back.
--
-- BURROW_CRASH_RUNS (default 8: each operation killed once anywhere and
-- once among the edge steps) and BURROW_CRASH_ENTRIES (default 1,000) set
-- the size; `make soak` runs 100 on 30,000. BURROW_CRASH_SEED repeats a
-- run (the seed is printed on a failure).

local F = require "security.fixture"
local K = require "security.crashkit"

local RUNS = tonumber(os.getenv("BURROW_CRASH_RUNS")) or 8
local ENTRIES = tonumber(os.getenv("BURROW_CRASH_ENTRIES")) or 1000
local SEED = tonumber(os.getenv("BURROW_CRASH_SEED")) or os.time()
local EDGE = 24

-- ENTRIES entries under dir: folders of 100, each with a subfolder, files
-- of a few sizes and modes, and links.
local function make_tree(dir)
  F.sh("mkdir -p " .. F.q(dir))
  local made, d = 0, 0
  local links = {}
  while made < ENTRIES do
    local top = ("%s/d%03d"):format(dir, d)
    local sub = top .. "/sub"
    assert(os.execute("mkdir -p " .. F.q(sub)))
    made = made + 2
    for i = 1, 98 do
      if made >= ENTRIES then break end
      local where = i % 3 == 0 and sub or top
      if i % 25 == 0 then
        links[#links + 1] = ("%s/l%02d\0../d%03d/f%02d"):format(where, i, d, i - 1)
      else
        local f = assert(io.open(("%s/f%02d"):format(where, i), "wb"))
        f:write(string.rep(("entry %d/%d "):format(d, i), i % 17 == 0 and 4000 or (i % 7) + 1), "\n")
        f:close()
      end
      made = made + 1
    end
    d = d + 1
  end
  for _, l in ipairs(links) do
    local path, target = l:match("^(.-)%z(.*)$")
    F.sh("ln -s " .. F.q(target) .. " " .. F.q(path))
  end
  F.sh("chmod 0755 " .. F.q(dir .. "/d000/f01") .. " && chmod 0600 " .. F.q(dir .. "/d000/f02"))
end

local state, stage_names = K.state, K.stage_names

describe(F.tag("security: staged operations survive kill -9 (issue 40)"), function()
  local tmp, so, tpl, root
  local S, D0 -- the source folder's and the merge target's states

  -- the operations: tool, arguments, and the wholes each may end in
  local OPS = {
    {name = "move", tool = "move", args = {source = "proj/src", destination = "proj/dst"},
     wholes = function(src, dst) return (src == S and dst == nil) or (src == nil and dst == S) end},
    {name = "copy", tool = "copy", args = {source = "proj/src", destination = "proj/dst", recursive = true},
     wholes = nil}, -- set once the copy's state is known (a copy takes no mode but the x bits)
    {name = "merge copy", tool = "copy", merge = true,
     args = {source = "proj/src", destination = "proj/dst", recursive = true, overwrite = true},
     wholes = nil}, -- set once the merged state is known
    {name = "remove", tool = "remove", args = {path = "proj/src", recursive = true},
     wholes = function(src, dst) return dst == nil and (src == S or src == nil) end},
  }

  local function reset(op)
    F.sh("rm -rf " .. F.q(root) .. " && cp -a " .. F.q(tpl) .. " " .. F.q(root))
    if op.merge then
      F.sh("mkdir -p " .. F.q(root .. "/proj/dst/d000") .. " && echo theirs > " .. F.q(root .. "/proj/dst/d000/f04") ..
        " && echo mine > " .. F.q(root .. "/proj/dst/own.txt"))
    end
  end

  -- burrow call under the shim; kill: the step to die at (nil: count them)
  local function call(op, kill, log)
    return K.call(so, root, kill, op.tool, op.args, "--root " .. F.q(root), log)
  end

  -- the restart: a new workspace on the root, as the agent sees it
  local function restart() return K.restart(root, {".", "proj"}) end

  lazy_setup(function()
    tmp = F.mktemp()
    so = K.shim(tmp)
    tpl = tmp .. "/tpl"
    root = tmp .. "/ws"
    make_tree(tpl .. "/proj/src")
    F.write_host(tpl .. "/proj/keep.txt", "keep\n")
    F.write_host(tpl .. "/outside.txt", "outside\n")
    S = state(tpl .. "/proj/src")
    -- each operation run whole once: its steps counted, its end state known
    for _, op in ipairs(OPS) do
      reset(op)
      if op.merge then D0 = state(root .. "/proj/dst") end
      local log = tmp .. "/count.log"
      os.remove(log)
      assert.are.equal(0, call(op, nil, log), op.name .. " runs whole")
      op.steps = K.steps(log)
      assert.is_true(op.steps and op.steps > 0, op.name .. ": its steps are counted")
      if op.merge then
        local M = state(root .. "/proj/dst")
        assert.are_not.equal(D0, M)
        op.wholes = function(src, dst) return src == S and (dst == D0 or dst == M) end
      elseif op.name == "copy" then
        local C = state(root .. "/proj/dst")
        assert.is_truthy(C)
        op.wholes = function(src, dst) return src == S and (dst == nil or dst == C) end
      end
    end
  end)

  lazy_teardown(function()
    if tmp then F.rmtree(tmp) end
  end)

  it(("%d kills at random steps on a %d-entry tree: whole at the source or at the destination (seed %d)")
    :format(RUNS, ENTRIES, SEED), function()
    math.randomseed(SEED)
    local bad, killed, counts = {}, 0, {}
    for run = 1, RUNS do
      local op = OPS[(run - 1) % #OPS + 1]
      local n = op.steps
      local k
      -- the operations take turns, and each round of them alternates
      -- anywhere / the edges, so every operation gets both kinds of kill
      if ((run - 1) // #OPS) % 2 == 0 or n <= 2 * EDGE then k = math.random(0, n - 1)
      else
        k = math.random(0, 2 * EDGE - 1)
        if k >= EDGE then k = n - 2 * EDGE + k end
      end
      reset(op)
      local status = call(op, k)
      if status == 137 then killed = killed + 1 end
      local visible = restart()
      local src, dst = state(root .. "/proj/src"), state(root .. "/proj/dst")
      local left = stage_names(root)
      local what = ("run %d: %s killed at step %d of %d (exit %s)"):format(run, op.name, k, n, tostring(status))
      counts[op.name] = (counts[op.name] or 0) + 1
      if status ~= 137 and status ~= 0 then bad[#bad + 1] = what .. ": the call failed" end
      if not op.wholes(src, dst) then
        bad[#bad + 1] = what .. (": not whole: source %s, destination %s"):format(
          src == nil and "absent" or src == S and "whole" or "CHANGED",
          dst == nil and "absent" or dst == S and "whole" or dst == D0 and "as before" or "OTHER")
      end
      if left ~= "" then bad[#bad + 1] = what .. ": left on disk: " .. left:gsub("\n", " ") end
      for _, v in ipairs(visible) do
        if v:find("burrow-stage", 1, true) then bad[#bad + 1] = what .. ": the agent sees " .. v end
      end
      if F.read_host(root .. "/proj/keep.txt") ~= "keep\n" or F.read_host(root .. "/outside.txt") ~= "outside\n" then
        bad[#bad + 1] = what .. ": a file beside it changed"
      end
    end
    assert.are.same({}, bad, "seed " .. SEED)
    assert.is_true(killed >= RUNS // 2, ("most runs were killed (%d of %d)"):format(killed, RUNS))
  end)

  it("a workspace kept open settles the crash at its next staged operation in that directory", function()
    local op = OPS[1]
    reset(op)
    local ws = F.open({{path = root, mode = "rw"}}) -- opened before the crash: its start saw nothing
    F.sh("mkdir -p " .. F.q(root .. "/proj/other"))
    -- the step of the move's rename aside: the last with its stage there
    local k, tried = nil, {}
    for step = op.steps - 1, 0, -1 do
      F.sh("rm -rf " .. F.q(root .. "/proj") .. " && cp -a " .. F.q(tpl .. "/proj") .. " " .. F.q(root .. "/proj") ..
        " && mkdir -p " .. F.q(root .. "/proj/other"))
      local status = call(op, step)
      local ls = F.sh("ls -A " .. F.q(root .. "/proj"))
      tried[#tried + 1] = step .. ": " .. tostring(status) .. " " .. ls:gsub("\n", " ")
      if ls:find(".burrow-stage.m.", 1, true) then k = step break end
    end
    assert.is_truthy(k, "a kill left the move's stage: " .. table.concat(tried, "; "))
    assert.is_nil(state(root .. "/proj/src"), "hidden before the recovery")
    local l = assert(ws:call("list_dir", {path = "proj", include_hidden = true}))
    for _, e in ipairs(l.entries) do assert.is_nil(e.name:find("burrow-stage", 1, true), "listed: " .. e.name) end
    F.ok("a staged remove in proj", ws:call("remove", {path = "proj/other", recursive = true}))
    assert.are.equal(S, state(root .. "/proj/src"), "put back whole")
    assert.are.equal("", stage_names(root))
    ws:close()
  end)
end)
