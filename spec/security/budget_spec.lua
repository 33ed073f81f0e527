-- Issue 11: every call has a budget. A glob stops at max_search_ms with
-- what it found; a folder copy, move or remove stops at max_tree_ms, both
-- while the policies check its entries and while the core stages it, and
-- (staged: issue 28) nothing is done; the policies' checks of a
-- walk's entries stop there too, the rest hidden (fail closed). Each case
-- ends well inside a generous bound on a loaded machine.

local F = require "security.fixture"

local BOUND = F.HANG -- seconds: bounded against unbounded, not a benchmark

-- A check() that burns ~1M instructions' worth of its budget per entry:
-- a few ms each, so 400 entries take seconds without a budget.
local SLOW = [[return { name = "slow", check = function(r)
  local x = 0
  for i = 1, 150000 do x = x + i end
  return nil
end }]]

describe(F.tag("security: call budgets (issue 11)"), function()
  local w, pdir

  local function caps(t)
    local c = {}
    for k, v in pairs(F.CAPS or {}) do c[k] = v end
    for k, v in pairs(t) do c[k] = v end
    return c
  end

  -- dirs x files empty files under w/rel
  local function tree(rel, dirs, files)
    F.sh(("cd %s && for d in $(seq 1 %d); do mkdir -p %s/d$d && (cd %s/d$d && seq 1 %d | xargs touch); done")
      :format(F.q(w), dirs, rel, rel, files))
  end

  before_each(function()
    w = F.mktemp()
    pdir = F.mktemp()
    F.write_host(pdir .. "/slow.lua", SLOW)
  end)
  after_each(function()
    F.rmtree(w)
    F.rmtree(pdir)
  end)

  it("glob stops at max_search_ms: limit = time, a partial list, and says so", function()
    tree("big", 40, 600)
    local ws = F.open({ { path = w, mode = "rw" } }, { caps = caps { max_search_ms = 2 } })
    local secs, res, msg = F.timed(ws.call, ws, "glob", { pattern = "**/*7" })
    assert.is_not_nil(res, msg)
    assert.are.equal("time", res.limit)
    assert.is_true(secs < BOUND)
    local text = ws:render("glob", res)
    assert.matches("[LIMIT time: the walk stopped at max_search_ms=2", text, 1, true)
    ws:close()
  end)

  it("a folder copy whose policy checks outlast max_tree_ms: TOO_LARGE, nothing copied", function()
    tree("src", 4, 100)
    local ws = F.open({ { path = w, mode = "rw" } },
      { caps = caps { max_tree_ms = 150 }, policies = { pdir .. "/slow.lua" } })
    local secs, res, msg, code = F.timed(ws.call, ws, "copy", { source = "src", destination = "dst", recursive = true })
    F.refused("copy", { "TOO_LARGE" }, res, msg, code)
    assert.matches("max_tree_ms=150", msg, 1, true)
    assert.is_false(F.exists(w .. "/dst"))
    assert.is_true(secs < BOUND, ("took %.1f s"):format(secs))
    ws:close()
  end)

  it("a folder remove and move whose policy checks outlast max_tree_ms: nothing taken", function()
    tree("src", 4, 100)
    local ws = F.open({ { path = w, mode = "rw" } },
      { caps = caps { max_tree_ms = 150 }, policies = { pdir .. "/slow.lua" } })
    local secs, res, msg, code = F.timed(ws.call, ws, "remove", { path = "src", recursive = true })
    F.refused("remove", { "TOO_LARGE" }, res, msg, code)
    assert.is_true(secs < BOUND, ("took %.1f s"):format(secs))
    secs, res, msg, code = F.timed(ws.call, ws, "move", { source = "src", destination = "moved" })
    F.refused("move", { "TOO_LARGE" }, res, msg, code)
    assert.is_true(secs < BOUND, ("took %.1f s"):format(secs))
    assert.is_true(F.exists(w .. "/src/d4/100"))
    assert.is_false(F.exists(w .. "/moved"))
    ws:close()
  end)

  it("a copy the core is still making at max_tree_ms stops, and nothing is copied", function()
    tree("src", 3, 1000) -- 3,000 files: no copy of them fits in a millisecond
    local ws = F.open({ { path = w, mode = "rw" } }, { caps = caps { max_tree_ms = 1 } })
    local secs, res, msg, code = F.timed(ws.call, ws, "copy", { source = "src", destination = "dst", recursive = true })
    F.refused("copy", { "TOO_LARGE" }, res, msg, code)
    assert.matches("max_tree_ms=1): nothing was copied", msg, 1, true)
    assert.is_true(secs < BOUND, ("took %.1f s"):format(secs))
    assert.is_false(F.exists(w .. "/dst"))
    assert.are.equal("", F.sh("ls -A " .. F.q(w) .. " | grep burrow-stage || true"))
    assert.is_true(F.exists(w .. "/src/d3/1000"))
    ws:close()
  end)

  it("the policies' checks of a walk's entries stop at max_tree_ms: the rest hidden, counted", function()
    tree("big", 4, 250)
    local ws = F.open({ { path = w, mode = "rw" } },
      { caps = caps { max_tree_ms = 150, max_entries = 1000 }, policies = { pdir .. "/slow.lua" } })
    local secs, res, msg = F.timed(ws.call, ws, "glob", { pattern = "**/*", max_results = 1000 })
    assert.is_not_nil(res, msg)
    assert.is_true(secs < BOUND, ("took %.1f s"):format(secs))
    assert.is_true((res.skipped_policy or 0) > 0, "some entries hidden")
    assert.is_true(#res.entries < 1000, "not every entry was checked in time, so not every entry is shown")
    -- asked before the walk (issue 28): an entry not checked in time is
    -- denied, a directory among them not entered, so its files are not
    -- counted either: shown and counted stay within the 1,004 entries
    assert.is_true(#res.entries + res.skipped_policy <= 1004,
      ("shown or counted: %d + %d"):format(#res.entries, res.skipped_policy))
    ws:close()
  end)

  -- the same check() declaring its paths (check_paths): grep and glob ask
  -- it inside the walk, as the walker meets each entry, before opening it
  it("a check() asked inside the walk (check_paths) stops at max_tree_ms too: the rest hidden, counted", function()
    tree("big", 4, 250)
    F.write_host(pdir .. "/slow_paths.lua", (SLOW:gsub("check = ", 'check_paths = { "**" }, check = ')))
    local ws = F.open({ { path = w, mode = "rw" } },
      { caps = caps { max_tree_ms = 150, max_entries = 1000 }, policies = { pdir .. "/slow_paths.lua" } })
    for _, call in ipairs { { "glob", { pattern = "**/*", max_results = 1000 } }, { "grep", { pattern = "x", output_mode = "files" } },
        { "list_dir", { path = ".", recursive = true } } } do
      local secs, res, msg = F.timed(ws.call, ws, call[1], call[2])
      assert.is_not_nil(res, msg)
      assert.is_true(secs < BOUND, ("%s took %.1f s"):format(call[1], secs))
      assert.is_true((res.skipped_policy or 0) > 0, call[1] .. ": some entries hidden")
      local shown = call[1] == "grep" and res.files_searched or #res.entries
      assert.is_true(shown + res.skipped_policy <= 1004, ("%s: shown or counted: %d + %d"):format(call[1], shown, res.skipped_policy))
    end
    ws:close()
  end)

  it("a walk that would ask a check() about more than ASK_MAX entries ends TOO_LARGE, nothing searched past it", function()
    tree("big", 2, 30)
    F.write_host(pdir .. "/all_paths.lua", 'return { name = "all", check_paths = { "**" }, check = function() return "allow" end }')
    local context = require "burrow.context"
    local keep = context.ASK_MAX
    context.ASK_MAX = 20
    local ws = F.open({ { path = w, mode = "rw" } }, { policies = { pdir .. "/all_paths.lua" } })
    for _, call in ipairs { { "glob", { pattern = "**/*" } }, { "grep", { pattern = "x" } }, { "list_dir", { path = ".", recursive = true } } } do
      local res, msg, code = ws:call(call[1], call[2])
      assert.is_nil(res, call[1])
      assert.equal("TOO_LARGE", code, msg)
      assert.matches("narrow the path", msg, 1, true)
    end
    context.ASK_MAX = keep
    local res = F.ok("glob", ws:call("glob", { pattern = "**/*" })) -- under the cap, every file shown
    assert.equal(60, #res.entries)
    assert.equal(0, res.skipped_policy)
    ws:close()
  end)
end)
