-- Compare-and-set across processes (issue 10, item 5): two burrow
-- processes (spec/security/cas_child.lua, each its own lua5.4 with its own
-- burrow.open) edit one shared file at the same time.
--   (a) each reads the file and edits v=n to v=n+1 with expected_hash = the
--       hash it read: no version may be won by both (a double win), and
--       the final version is the number of wins.
--   (b) each puts its own lines into the file with edit_file and no
--       expected_hash: every edit that reported success is in the file
--       exactly once (no lost update), and none fails.
--   (c) a stuck holder of the lock (flock(1) on the directory) makes a
--       write EAGAIN after a bounded wait, never a hang.

local F = require "security.fixture"

-- per process and part; BURROW_CAS_EDITS sets them (make soak runs 2,000)
local EDITS = tonumber(os.getenv("BURROW_CAS_EDITS")) or 300
local LIMIT = 120      -- seconds a part may take before the children are stopped

describe(F.tag("security: compare-and-set across processes"), function()
  local base, root

  lazy_setup(function()
    base = F.mktemp()
    root = base .. "/root"
    F.sh("mkdir " .. F.q(root))
  end)

  lazy_teardown(function()
    if base then F.rmtree(base) end
  end)

  -- Run both children in MODE on NAME; their log lines, by tag.
  local function race(mode, name, rounds)
    local go = base .. "/go." .. mode
    local procs, logs = {}, {}
    for _, tag in ipairs({"A", "B"}) do
      logs[tag] = ("%s/log.%s.%s"):format(base, mode, tag)
      procs[tag] = F.spawn("cd " .. F.q(F.REPO) ..
        " && LUA_PATH=" .. F.q(F.LUA_PATH) .. " LUA_CPATH=" .. F.q(F.LUA_CPATH) ..
        " exec lua5.4 spec/security/cas_child.lua " .. table.concat({mode, F.q(root), F.q(name), tag, rounds or EDITS,
          F.q(go), F.q(logs[tag]), F.q(base .. "/at." .. mode .. "." .. tag),
          F.q(base .. "/at." .. mode .. "." .. (tag == "A" and "B" or "A"))}, " ") .. " 2>" .. F.q(logs[tag] .. ".err"))
    end
    local function ready(tag) return (F.read_host(logs[tag]) or ""):find("^READY\n") end
    local deadline = F.now() + 20
    while not (ready("A") and ready("B")) and F.now() < deadline do F.sleep(0.005) end
    F.write_host(go, "go\n")
    deadline = F.now() + LIMIT
    while (F.alive(procs.A.pid) or F.alive(procs.B.pid)) and F.now() < deadline do F.sleep(0.05) end
    F.stop(procs.A)
    F.stop(procs.B)
    local out = {}
    for tag in pairs(procs) do
      local txt = F.read_host(logs[tag]) or ""
      assert.is_truthy(txt:find("\nDONE\n$"), ("child %s did not finish: %s"):format(tag,
        F.read_host(logs[tag] .. ".err") or ""))
      local lines = {}
      for l in txt:gmatch("[^\n]+") do
        local k = l:match("^EAGAIN (%d+)$")
        if k then out.eagain = (out.eagain or 0) + tonumber(k) else lines[#lines + 1] = l end
      end
      out[tag] = lines
    end
    return out
  end

  it(("(a) %d compare-and-set edits per process with the same expected_hash: no double wins"):format(EDITS), function()
    F.write_host(root .. "/cas.txt", "v=0 start\n")
    local t0 = F.now()
    local logs = race("cas", "cas.txt")
    local won, tried = {A = {}, B = {}}, {A = {}, B = {}}
    local wins, codes = 0, {}
    for _, tag in ipairs({"A", "B"}) do
      for _, l in ipairs(logs[tag]) do
        local w = l:match("^W (%d+)$")
        local v, code = l:match("^L (%d+) (%S+)$")
        if w then won[tag][w] = true; tried[tag][w] = true; wins = wins + 1 end
        if v then tried[tag][v] = true; codes[code] = (codes[code] or 0) + 1 end
      end
    end
    local rounds, doubles = 0, 0
    for v in pairs(tried.A) do
      if tried.B[v] then rounds = rounds + 1 end
      if won.A[v] and won.B[v] then doubles = doubles + 1 end
    end
    local final = tonumber((F.read_host(root .. "/cas.txt") or ""):match("^v=(%d+)"))
    print(("\n    CAS (a) [%s]: %d edits per process, %d versions raced by both, %d wins, %d double wins, " ..
      "final v=%s, HASH_MISMATCH=%d, other failures=%d, EAGAIN retried=%d, %.1f s")
      :format(F.BACKEND, EDITS, rounds, wins, doubles, tostring(final), codes.HASH_MISMATCH or 0,
        (function() local k = 0 for c, m in pairs(codes) do if c ~= "HASH_MISMATCH" then k = k + m end end return k end)(),
        logs.eagain or 0, F.now() - t0))
    assert.are.equal(0, doubles, "versions won by both processes")
    assert.are.equal(wins, final, "every win is one version step")
    for c in pairs(codes) do assert.are.equal("HASH_MISMATCH", c, "a loser's code") end
    assert.is_true(rounds > 0, "the two processes never raced for one version")
  end)

  it(("(b) %d edits per process without expected_hash: every reported edit lands exactly once"):format(EDITS), function()
    F.write_host(root .. "/log.txt", "#begin\n#end\n")
    local t0 = F.now()
    local logs = race("append", "log.txt")
    local count = {}
    for l in (F.read_host(root .. "/log.txt") or ""):gmatch("[^\n]+") do count[l] = (count[l] or 0) + 1 end
    local ok, lost, dup, codes, failed = 0, 0, 0, {}, 0
    for _, tag in ipairs({"A", "B"}) do
      for _, l in ipairs(logs[tag]) do
        local i = l:match("^OK (%d+)$")
        local fi, code = l:match("^FAIL (%d+) (%S+)$")
        if i then
          ok = ok + 1
          local c = count[tag .. "-" .. i] or 0
          if c == 0 then lost = lost + 1 elseif c > 1 then dup = dup + 1 end
        elseif fi then
          failed = failed + 1
          codes[code] = (codes[code] or 0) + 1
        end
      end
    end
    local listed = {}
    for c, m in pairs(codes) do listed[#listed + 1] = c .. "=" .. m end
    print(("\n    CAS (b) [%s]: %d edits per process, %d reported success, %d lost, %d duplicated, %d failed %s, EAGAIN retried=%d, %.1f s")
      :format(F.BACKEND, EDITS, ok, lost, dup, failed, table.concat(listed, " "), logs.eagain or 0, F.now() - t0))
    assert.are.equal(0, lost, "edits reported done but not in the file")
    assert.are.equal(0, dup, "edits in the file more than once")
    assert.are.equal(0, failed, "edits that failed: " .. table.concat(listed, " "))
    assert.are.equal(2 * EDITS, ok)
  end)

  it(("(d) %d edit_files calls per process over three files in nested folders, in opposite orders: all or none, no double wins"):format(EDITS // 4), function()
    F.sh("mkdir -p " .. F.q(root .. "/t/s/u"))
    local names = {"t/a.txt", "t/s/b.txt", "t/s/u/c.txt"}
    for _, f in ipairs(names) do F.write_host(root .. "/" .. f, "v=0 start\n") end
    local t0 = F.now()
    local logs = race("files", table.concat(names, ","), EDITS // 4)
    local won, wins, codes, mixed = {A = {}, B = {}}, 0, {}, 0
    for _, tag in ipairs({"A", "B"}) do
      for _, l in ipairs(logs[tag]) do
        local w = l:match("^W (%d+)$")
        local _, code = l:match("^L (%d+) (%S+)$")
        if w then won[tag][w] = true; wins = wins + 1 end
        if code then codes[code] = (codes[code] or 0) + 1 end
        if l == "MIXED" then mixed = mixed + 1 end
      end
    end
    local doubles = 0
    for v in pairs(won.A) do if won.B[v] then doubles = doubles + 1 end end
    local finals = {}
    for i, f in ipairs(names) do finals[i] = tonumber((F.read_host(root .. "/" .. f) or ""):match("^v=(%d+)")) end
    print(("\n    CAS (d) [%s]: %d calls per process, %d wins, %d double wins, finals %s, HASH_MISMATCH=%d, other failures=%d, " ..
      "reads that met a commit half-way=%d, EAGAIN retried=%d, %.1f s")
      :format(F.BACKEND, EDITS // 4, wins, doubles, table.concat(finals, "/"), codes.HASH_MISMATCH or 0,
        (function() local k = 0 for c, m in pairs(codes) do if c ~= "HASH_MISMATCH" then k = k + m end end return k end)(),
        mixed, logs.eagain or 0, F.now() - t0))
    assert.are.equal(0, doubles, "versions won by both processes")
    assert.are.same({wins, wins, wins}, finals, "every file at the version of the wins: all or none each time")
    for c in pairs(codes) do assert.are.equal("HASH_MISMATCH", c, "a loser's code") end
  end)

  it("(c) a lock held by a stuck process: EAGAIN after a bounded wait, the file unchanged", function()
    local _, have = F.run("command -v flock")
    if not have then pending("no flock(1) here") return end
    F.write_host(root .. "/stuck.txt", "one\n")
    local ws = F.open({{path = root, mode = "rw"}})
    local holder = F.spawn("exec flock " .. F.q(root) .. " sleep 60")
    local deadline = F.now() + 5
    while F.now() < deadline do -- until flock(1) holds it (an append would wait)
      local _, ok = F.run("flock -n " .. F.q(root) .. " true")
      if not ok then break end
      F.sleep(0.01)
    end
    local t0 = F.now()
    local res, msg, code = ws:call("edit_file", {path = "stuck.txt", old_text = "one", new_text = "two"})
    local waited = F.now() - t0
    F.stop(holder)
    local after, _, code2 = ws:call("edit_file", {path = "stuck.txt", old_text = "one", new_text = "two"})
    ws:close()
    print(("\n    CAS (c) [%s]: %s after %.1f s: %s"):format(F.BACKEND, tostring(code), waited, tostring(msg)))
    assert.is_nil(res)
    assert.are.equal("EAGAIN", code)
    assert.matches("locked by another writer", msg)
    assert.is_true(waited < 30, "waited " .. waited .. " s")
    assert.is_truthy(after, "once the holder is gone the edit goes through: " .. tostring(code2))
    assert.are.equal("two\n", F.read_host(root .. "/stuck.txt"))
  end)
end)
