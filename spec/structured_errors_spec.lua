-- Structured errors (issue 25): the core says what a failure is about as
-- data, the fourth value after nil, detail, CODE ({on = "pattern" |
-- "include" | "exclude" | "time" | "size" | "root", index =, reason =}),
-- and the tools decide from it, never from the wording of the detail.

local H = require "helpers"
local core = H.core

describe(H.tag("structured errors"), function()
  after_each(H.cleanup)

  it("grep: a bad pattern, a bad include or exclude glob, each by name and index", function()
    local ws, dir = H.workspace()
    H.write(dir, "a.txt", "x\n")
    local r, detail, code, why = ws.roots:grep(1, ".", { pattern = "(" })
    assert.is_nil(r)
    assert.equal("INVALID_ARGUMENT", code)
    assert.same({ on = "pattern", reason = "missing closing parenthesis" }, why)
    assert.matches("missing closing parenthesis", detail, 1, true)
    r, _, code, why = ws.roots:grep(1, ".", { pattern = "x", include = { "*.txt", "a/../b" } })
    assert.equal("INVALID_ARGUMENT", code)
    assert.same({ on = "include", index = 2 }, why)
    r, _, code, why = ws.roots:grep(1, ".", { pattern = "x", exclude = { "../x" } })
    assert.same({ on = "exclude", index = 1 }, why)
  end)

  it("glob: a bad pattern", function()
    local ws = H.workspace()
    local r, _, code, why = ws.roots:glob(1, ".", "a/../b", {})
    assert.is_nil(r)
    assert.equal("INVALID_ARGUMENT", code)
    assert.same({ on = "pattern" }, why)
  end)

  it("a root that cannot be opened: which one", function()
    local dir = H.tmpdir()
    local r, detail, code, why = core.roots { { path = dir }, { path = dir .. "/missing" } }
    assert.is_nil(r)
    assert.equal("ENOENT", code)
    assert.same({ on = "root", index = 2 }, why)
    assert.not_matches("^root 2", detail) -- the index is data, not text
    -- and burrow.open names the root's path from it
    local ws, msg = H.burrow.open { roots = { { path = dir }, { path = dir .. "/missing" } } }
    assert.is_nil(ws)
    assert.matches("cannot open root " .. dir .. "/missing", msg, 1, true)
  end)

  it("a subtree copy: over its time budget, over the size cap, each as data", function()
    local ws, dir = H.workspace()
    H.sh("cd " .. H.q(dir) .. " && mkdir src && for i in $(seq 1 3000); do echo x > src/f$i; done")
    H.write(dir, "big/one", ("y"):rep(100))
    -- each progress report (every 1,024 entries) takes 20 ms: past a 1 ms budget
    local st, _, code, why = ws.roots:stage_copy(1, "src", 1, "dst", { recursive = true, max_ms = 1,
      progress = function() local t = os.clock() + 0.02 while os.clock() < t do end end })
    assert.is_nil(st)
    assert.equal("TOO_LARGE", code)
    assert.same({ on = "time" }, why)
    st, _, code, why = ws.roots:stage_copy(1, "big", 1, "big2", { recursive = true, max_bytes = 10 })
    assert.is_nil(st)
    assert.equal("TOO_LARGE", code)
    assert.same({ on = "size" }, why)
  end)

  it("no tool reads the core's wording: no message matching left in lua/", function()
    local out = H.sh("grep -rnE '(detail|msg|message|err)[a-z_]*:(find|match)' " .. H.q(H.REPO .. "/lua") .. " || true")
    assert.equal("", out)
  end)
end)
