-- Issue 44, "edit_files ... rolled forward or back at the next start, so a
-- crash leaves all or none": `kill -9` at every step of one edit_files
-- commit of several files (edits in three folders, a new file, a removal),
-- run as the real `burrow call` under host/test/faults.c: the shim's
-- `any:KILL:after=N` makes the process kill itself (SIGKILL) before the
-- Nth call that changes the filesystem under the root, so the kill lands
-- at a step of the commit, never after a guessed delay. A first run counts
-- the steps; then each step is killed in turn, and a new workspace opens
-- on the root (the restart): the whole root is byte for byte either as it
-- was or as the whole change leaves it, no `.burrow-stage.` name is left
-- on disk, and the agent sees none. A last case kills between the renames
-- while another workspace stays open: its next edit_files in that root
-- finishes the change first. And across two roots (one record each):
-- each root all old or all new after any kill.

local F = require "security.fixture"
local K = require "security.crashkit"
local json = require("burrow.core").json

local state, stage_names = K.state, K.stage_names

local CHANGE = {files = {
  {path = "a/one.txt", old_text = "one", new_text = "ONE"},
  {path = "b/c/two.txt", content = "two, rewritten\n"},
  {path = "three.txt", old_text = "three", new_text = "THREE"},
  {path = "a/new.txt", content = "a new file\n"},
  {path = "b/gone.txt", delete = true},
}}

describe(F.tag("security: edit_files survives kill -9 (issue 44)"), function()
  local tmp, so, tpl, root, OLD, NEW, steps

  local function reset()
    -- the root folder itself kept: a workspace kept open holds it
    F.sh("mkdir -p " .. F.q(root) .. " && find " .. F.q(root) .. " -mindepth 1 -delete && cp -a " ..
      F.q(tpl .. "/.") .. " " .. F.q(root))
  end

  -- burrow call under the shim; kill: the step to die at (nil: count them)
  local function call(kill, log)
    return K.call(so, root, kill, "edit_files", CHANGE, "--root " .. F.q(root), log)
  end

  -- the restart: a new workspace on the root, as the agent sees it
  local function restart() return K.restart(root, {".", "a", "b", "b/c"}) end

  lazy_setup(function()
    tmp = F.mktemp()
    so = K.shim(tmp)
    tpl = tmp .. "/tpl"
    root = tmp .. "/ws"
    F.sh("mkdir -p " .. F.q(tpl .. "/a") .. " " .. F.q(tpl .. "/b/c"))
    F.write_host(tpl .. "/a/one.txt", "one\n")
    F.write_host(tpl .. "/b/c/two.txt", "two\n")
    F.write_host(tpl .. "/three.txt", "three\n")
    F.write_host(tpl .. "/b/gone.txt", "gone\n")
    F.write_host(tpl .. "/keep.txt", "keep\n")
    F.sh("chmod 0640 " .. F.q(tpl .. "/three.txt"))
    OLD = state(tpl)
    reset()
    local log = tmp .. "/count.log"
    assert.are.equal(0, call(nil, log), "the change runs whole")
    steps = K.steps(log)
    assert.is_true(steps and steps > 5, "its steps are counted")
    NEW = state(root)
    assert.are_not.equal(OLD, NEW)
    assert.are.equal("ONE\n", F.read_host(root .. "/a/one.txt"))
    assert.is_false(F.exists(root .. "/b/gone.txt"))
    assert.are.equal("", stage_names(root))
  end)

  lazy_teardown(function()
    if tmp then F.rmtree(tmp) end
  end)

  it("a kill at each step of the commit, then a restart: all old or all new", function()
    local bad, killed, old, new = {}, 0, 0, 0
    for k = 0, steps - 1 do
      reset()
      local status = call(k)
      if status == 137 then killed = killed + 1 end
      local visible = restart()
      local now = state(root)
      local what = ("killed at step %d of %d (exit %s)"):format(k, steps, tostring(status))
      if status ~= 137 and status ~= 0 then bad[#bad + 1] = what .. ": the call failed" end
      if now == OLD then old = old + 1
      elseif now == NEW then new = new + 1
      else bad[#bad + 1] = what .. ": a mix:\n" .. now end
      local left = stage_names(root)
      if left ~= "" then bad[#bad + 1] = what .. ": left on disk: " .. left:gsub("\n", " ") end
      for _, v in ipairs(visible) do
        if v:find("burrow-stage", 1, true) then bad[#bad + 1] = what .. ": the agent sees " .. v end
      end
    end
    assert.are.same({}, bad)
    assert.are.equal(steps, killed, "every run was killed")
    -- both ends are reached: early kills go back, late ones forward
    assert.is_true(old > 0 and new > 0, ("all old %d times, all new %d times"):format(old, new))
  end)

  -- Across two roots the change is one record per root: each root ends
  -- all old or all new, not both together (docs/security.md says so).
  it("across two roots: a kill at each step leaves each root all old or all new", function()
    local two = tmp .. "/two"
    local r1, r2 = two .. "/r1", two .. "/r2"
    local function reset2()
      F.sh("rm -rf " .. F.q(two) .. " && mkdir -p " .. F.q(r1 .. "/d") .. " " .. F.q(r2 .. "/e"))
      F.write_host(r1 .. "/x.txt", "x\n")
      F.write_host(r1 .. "/d/y.txt", "y\n")
      F.write_host(r2 .. "/z.txt", "z\n")
      F.write_host(r2 .. "/e/w.txt", "w\n")
    end
    local args = {files = {
      {path = "/r1/x.txt", content = "X\n"}, {path = "/r2/z.txt", content = "Z\n"},
      {path = "/r1/d/y.txt", delete = true}, {path = "/r2/e/w.txt", old_text = "w", new_text = "W"}}}
    local roots = ("--root %s --root %s"):format(F.q(r1 .. ":/r1"), F.q(r2 .. ":/r2"))
    local function run(kill, log) return K.call(so, two, kill, "edit_files", args, roots, log) end
    reset2()
    local O1, O2 = state(r1), state(r2)
    local log = tmp .. "/count2.log"
    assert.are.equal(0, run(nil, log), "the change runs whole")
    local n = K.steps(log)
    local N1, N2 = state(r1), state(r2)
    assert.are_not.equal(O1, N1)
    assert.are_not.equal(O2, N2)
    local bad, split = {}, 0
    for k = 0, n - 1 do
      reset2()
      local status = run(k)
      F.sh(("%s call list_dir %s %s"):format(F.q(K.BIN), F.q(json.encode({path = "/r1"})), roots)) -- the restart
      local s1, s2 = state(r1), state(r2)
      local what = ("killed at step %d of %d (exit %s)"):format(k, n, tostring(status))
      if status ~= 137 then bad[#bad + 1] = what .. ": not killed" end
      if s1 ~= O1 and s1 ~= N1 then bad[#bad + 1] = what .. ": /r1 a mix:\n" .. s1 end
      if s2 ~= O2 and s2 ~= N2 then bad[#bad + 1] = what .. ": /r2 a mix:\n" .. s2 end
      if (s1 == N1) ~= (s2 == N2) then split = split + 1 end
      local left = stage_names(two)
      if left ~= "" then bad[#bad + 1] = what .. ": left on disk: " .. left:gsub("\n", " ") end
    end
    assert.are.same({}, bad)
    -- the window between the two roots' commit points is there (the doc says so)
    assert.is_true(split > 0 and split < n, ("one root new and the other old after %d of %d kills"):format(split, n))
  end)

  it("a workspace kept open finishes a committed change at its next edit_files", function()
    reset()
    local ws = F.open({{path = root, mode = "rw"}}) -- opened before the crash: its start saw nothing
    -- the last step that leaves a staged name: a kill between the renames
    local k
    for step = steps - 1, 0, -1 do
      reset()
      call(step)
      if stage_names(root) ~= "" and state(root) ~= OLD then k = step break end
    end
    assert.is_truthy(k, "a kill left the change half made")
    F.ok("another change in the root", ws:call("edit_files", {files = {
      {path = "keep.txt", old_text = "keep", new_text = "kept"}}}))
    assert.are.equal("kept\n", F.read_host(root .. "/keep.txt"))
    F.write_host(root .. "/keep.txt", "keep\n")
    assert.are.equal(NEW, state(root), "the crashed change finished")
    assert.are.equal("", stage_names(root))
    ws:close()
  end)
end)
