-- The policy sandbox (host/src/lua/lsandbox.c, core.sandbox) as operators meet
-- it through burrow.open{policies = {...}}: a policy that raises, loops,
-- allocates without end, runs a costly pattern or reaches for io, os,
-- load, require, debug... denies the call (POLICY_DENIED, with a reason
-- that says why), the call returns, and the next call on the same
-- workspace is served. core.sandbox itself (load/call, options as `...`,
-- copies across states, limits, memory accounting): sandbox_core_spec.lua.
--
-- Cases that could hang the host if the sandbox fails run in a child
-- lua5.4 under `timeout`: the guard only decides "returned at all".

local H = require "helpers"
local burrow = require "burrow"
local core = require "burrow.core"

local GUARD = 20 -- seconds a child may take before it counts as hung
local BOUND = 5 -- seconds a denied call may take (the time limit is 2 s)

---------------------------------------------------------------------------
-- helpers (local to this file)

local opened = {}

local function close_all()
  for i = #opened, 1, -1 do
    opened[i]:close()
    opened[i] = nil
  end
end

-- Write a policy file into dir; returns its path.
local function policy_file(dir, name, src)
  return H.write(dir, name .. ".lua", src)
end

-- Open a workspace on root with these policies (and other burrow.open options).
local function open_ws(root, policies, extra)
  local opts = { roots = { { path = root } }, policies = policies, resolver = H.RESOLVER }
  for k, v in pairs(extra or {}) do opts[k] = v end
  local ws, msg, code = burrow.open(opts)
  assert(ws, ("burrow.open failed: %s (%s)"):format(tostring(msg), tostring(code)))
  opened[#opened + 1] = ws
  return ws
end

-- read_file of path on ws is denied by policy and the message contains
-- every needle; returns the message.
local function denied(ws, path, label, ...)
  local res, msg, code, _, detail = ws:call("read_file", { path = path })
  assert.is_nil(res, label .. ": expected POLICY_DENIED, the call succeeded")
  assert.are.equal("POLICY_DENIED", code, label .. ": " .. tostring(msg))
  assert.is_string(msg)
  assert.are.equal("POLICY_DENIED: ", msg:sub(1, 15), label .. ": " .. msg)
  -- a policy's own error goes to the operator (detail), never the agent (msg)
  local all = detail and msg .. "\n" .. detail or msg
  if detail then
    assert.truthy(msg:find("(policy error)", 1, true), label .. ": " .. msg)
    assert.falsy(msg:find(detail, 1, true), label .. ": the policy's error reached the agent: " .. msg)
  end
  for _, needle in ipairs { ... } do
    assert.truthy(all:find(needle, 1, true), label .. ": message should contain " .. ("%q"):format(needle) .. ", got: " .. all)
  end
  return all
end

-- The next ordinary call on ws is served: the host kept going.
local function still_serves(ws, label)
  local res, msg, code = ws:call("read_file", { path = "file.txt" })
  assert.is_table(res, (label or "") .. ": the next normal call failed: " .. tostring(code) .. " " .. tostring(msg))
  assert.are.equal("1\thello\n", res.content)
end

-- Run a Lua script in a child lua5.4 (repo root as cwd, our module paths),
-- killed after GUARD seconds. Returns its output and exit code.
local function child(src) return H.lua_child(src, GUARD) end

-- A child that opens a workspace on root with one policy file, calls
-- read_file on `trigger` (and says how long that took), then on
-- file.txt, then closes the workspace.
local function child_calls(root, policy_path, trigger)
  return child(([[
local burrow = require "burrow"
local now = require("burrow.core").now
local rv = os.getenv("BURROW_RESOLVER")
local ws = assert(burrow.open { roots = { { path = %q } }, policies = { %q },
  resolver = (rv ~= "" and rv) or nil })
io.stdout:setvbuf("no")
local t0 = now()
local res, msg, code = ws:call("read_file", { path = %q })
print("took", ("%%.3f"):format(now() - t0))
print("first", code or "OK", msg)
res, msg, code = ws:call("read_file", { path = "file.txt" })
print("second", code or "OK", msg)
ws:close()
print("closed")
]]):format(root, policy_path, trigger))
end

local function child_finished(label, out, code)
  assert.are_not.equal(137, code, label .. ": did not return within " .. GUARD .. " s (killed); output so far:\n" .. out)
  assert.are.equal(0, code, label .. ": child failed:\n" .. out)
end

-- A policy that does `body` (Lua statements) when the path is "trigger"
-- or longer than 100 bytes, and allows everything else.
local function on_trigger(body)
  return ([[
return {
  name = "bomb",
  check = function(req)
    if req.path == "trigger" or #req.path > 100 then
      %s
    end
    return "allow"
  end,
}
]]):format(body)
end

---------------------------------------------------------------------------

describe(H.tag("policy sandbox through burrow.open"), function()
  local root, pdir

  before_each(function()
    root = H.tmpdir()
    H.write(root, "file.txt", "hello\n")
    pdir = H.tmpdir()
  end)

  after_each(function()
    close_all()
    H.cleanup()
  end)

  -- a policy that misbehaves on "trigger": three triggered calls are
  -- denied with the needles, and a normal call after each is served
  local function misbehaves(body, ...)
    local ws = open_ws(root, { policy_file(pdir, "bomb", on_trigger(body)) })
    local msg
    for i = 1, 3 do
      msg = denied(ws, "trigger", "trigger #" .. i, "policy bomb failed, so the call is denied", ...)
      still_serves(ws, "after trigger #" .. i)
    end
    return msg
  end

  it("a policy that raises denies with its error message", function()
    local msg = misbehaves([[error("the policy author's bug")]], "the policy author's bug")
    assert.truthy(msg:find("^POLICY_DENIED: trigger: denied by policy bomb %(policy error%)"), msg)
  end)

  it("a policy that raises a non-string value still denies", function()
    misbehaves([[error({ code = 1 })]], "error without a message")
  end)

  it("a policy that loops forever stops at the instruction budget and denies", function()
    misbehaves([[while true do end]], "instruction budget exceeded")
  end)

  it("a recursion bomb denies (stack overflow or budget)", function()
    local ws = open_ws(root, { policy_file(pdir, "bomb", on_trigger([[
      local function f(n) return 1 + f(n + 1) end
      f(1)]])) })
    denied(ws, "trigger", "recursion", "policy bomb failed")
    still_serves(ws)
  end)

  it("a policy that allocates without end stops at the memory cap and denies", function()
    misbehaves([[
      local t = {}
      for i = 1, 1e6 do t[i] = ("x"):rep(100000) .. i end]], "out of memory (the policy memory cap)")
  end)

  it("a table-growing memory bomb denies too (memory cap or budget)", function()
    local ws = open_ws(root, { policy_file(pdir, "bomb", on_trigger([[
      local t = {}
      while true do t[#t + 1] = { #t, #t, #t, #t } end]])) })
    local msg = denied(ws, "trigger", "table bomb", "policy bomb failed")
    assert.truthy(msg:find("out of memory", 1, true) or msg:find("instruction budget", 1, true), msg)
    still_serves(ws)
  end)

  describe("string.rep bombs", function()
    it("('x'):rep(2^40) denies", function()
      misbehaves([[local s = ("x"):rep(1 << 40)]])
    end)
    it("string.rep with a separator past the cap denies", function()
      misbehaves([[local s = string.rep(("y"):rep(1000), 100000, ("z"):rep(1000))]])
    end)
    it("doubling a string in a loop denies at the memory cap", function()
      misbehaves([[local s = "x" for _ = 1, 64 do s = s .. s end]], "out of memory")
    end)
  end)

  describe("string-pattern bombs (a pattern runs in one C call where no hook fires)", function()
    local LONG = ("a"):rep(200) -- a path of 200 bytes: the policy fires on > 100
    local bombs = {
      { "req.path:match", [[local x = req.path:match(("a*"):rep(20) .. "b")]] },
      { "string.match", [[local x = string.match(req.path, ("a*"):rep(20) .. "b")]] },
      { "req.path:find", [[local x = req.path:find(("a-"):rep(20) .. "b")]] },
      { "string.find with init", [[local x = string.find(req.path, ("a*"):rep(20) .. "b", 1)]] },
      { "req.path:gmatch", [[for x in req.path:gmatch(("a*"):rep(20) .. "b") do end]] },
      { "req.path:gsub", [[local x = req.path:gsub(("a*"):rep(20) .. "b", "")]] },
      { "string.gsub with a function", [[local x = string.gsub(req.path, ("(a*)"):rep(20) .. "b", function() end)]] },
      { "optional items (2^n)", [[local x = req.path:match(("a?"):rep(40) .. ("a"):rep(40) .. "b")]] },
      { "a class with a quantifier", [[local x = req.path:match(("[a-z]+"):rep(10) .. "b")]] },
    }
    for _, b in ipairs(bombs) do
      it(b[1] .. " is stopped by the budget: denied with the pattern cost message", function()
        local ws = open_ws(root, { policy_file(pdir, "bomb", on_trigger(b[2])) })
        denied(ws, LONG, b[1], "policy bomb failed",
          "pattern too costly for the policy sandbox on a subject of")
        still_serves(ws, b[1])
      end)
    end

    it("a cheap pattern on the same long path runs, and a plain find is never refused", function()
      local ws = open_ws(root, { policy_file(pdir, "cheap", [[
return {
  name = "cheap",
  check = function(req)
    if #req.path > 100 then
      assert(req.path:match("^a+$"), "anchored match failed")
      assert(not req.path:find(("a*"):rep(20) .. "b", 1, true), "plain find")
      assert(req.path:find("aaaa", 1, true) == 1, "plain find position")
      return "deny", "cheap patterns ran"
    end
    return "allow"
  end,
}]]) })
      denied(ws, LONG, "cheap", "cheap patterns ran")
      still_serves(ws)
    end)
  end)

  describe("what a policy cannot reach", function()
    local attempts = {
      { "io.open", [[io.open("/etc/passwd")]] },
      { "io.write", [[io.write("x")]] },
      { "os.execute", [[os.execute("touch /tmp/burrow-policy-pwned")]] },
      { "os.exit", [[os.exit(3)]] },
      { "os.getenv", [[os.getenv("HOME")]] },
      { "os.remove", [[os.remove("/tmp/x")]] },
      { "os.rename", [[os.rename("/tmp/x", "/tmp/y")]] },
      { "os.tmpname", [[os.tmpname()]] },
      { "load", [[load("return 1")()]] },
      { "loadstring", [[loadstring("return 1")()]] },
      { "dofile", [[dofile("/etc/passwd")]] },
      { "loadfile", [[loadfile("/etc/passwd")]] },
      { "require", [[require("os")]] },
      { "package.loaded", [[local x = package.loaded.io]] },
      { "debug.getinfo", [[debug.getinfo(1)]] },
      { "debug.sethook", [[debug.sethook()]] },
      { "print", [[print("hello from a policy")]] },
      { "collectgarbage", [[collectgarbage("stop")]] },
      { "string.dump", [[string.dump(function() end)]] },
      { "coroutine.wrap", [[coroutine.wrap(function() end)()]] },
    }
    for _, a in ipairs(attempts) do
      it(a[1] .. " is not there: the call is denied", function()
        local ws = open_ws(root, { policy_file(pdir, "bomb", on_trigger(a[2])) })
        denied(ws, "trigger", a[1], "policy bomb failed", "nil value")
        still_serves(ws, a[1])
      end)
    end

    it("the globals are the documented set", function()
      local ws = open_ws(root, { policy_file(pdir, "globals", [[
local seen = {}
for _, k in ipairs { "io", "load", "loadstring", "dofile", "loadfile", "require",
  "package", "debug", "print", "collectgarbage", "coroutine", "module" } do
  if _ENV[k] ~= nil then seen[#seen + 1] = k end
end
for _, k in ipairs { "execute", "exit", "getenv", "remove", "rename", "tmpname", "setlocale" } do
  if os[k] ~= nil then seen[#seen + 1] = "os." .. k end
end
if string.dump ~= nil then seen[#seen + 1] = "string.dump" end
local have = {}
for _, k in ipairs { "assert", "error", "ipairs", "next", "pairs", "pcall", "select",
  "tonumber", "tostring", "type", "xpcall", "rawequal", "rawlen", "rawget",
  "setmetatable", "getmetatable", "size", "_VERSION", "string", "table", "math", "utf8", "os" } do
  if _ENV[k] == nil then have[#have + 1] = k end
end
for _, k in ipairs { "rawset" } do -- rawset would write into the shared libraries' views
  if _ENV[k] ~= nil then seen[#seen + 1] = k end
end
for _, k in ipairs {} do
  if _ENV[k] == nil then have[#have + 1] = k end
end
for _, k in ipairs { "time", "clock", "date", "difftime" } do
  if os[k] == nil then have[#have + 1] = "os." .. k end
end
for _, k in ipairs { "byte", "char", "format", "len", "lower", "rep", "reverse", "sub",
  "upper", "find", "match", "gmatch", "gsub" } do
  if string[k] == nil then have[#have + 1] = "string." .. k end
end
local report = "reachable: " .. table.concat(seen, ",") .. "; missing: " .. table.concat(have, ",")
return {
  name = "globals",
  check = function() return "deny", report end,
}]]) })
      local msg = denied(ws, "file.txt", "globals")
      assert.truthy(msg:find("reachable: ; missing: $"), msg)
    end)

    it("getmetatable behaves as stock Lua's, and what it gives for a string or _ENV is read-only", function()
      -- a string's metatable is a read-only view: __index is the sandbox's
      -- string library, its arithmetic works, nothing in it can be changed
      -- (another policy calls the same functions); _ENV's metatable is the
      -- policy's own, its __index the read-only base all policies share
      local ws = open_ws(root, { policy_file(pdir, "meta", [[
local mt = getmetatable("")
local checks = {
  type(mt) == "table",
  mt.__index.upper("x") == "X",
  mt.__index == string,
  ("10") + 1 == 11,
  not pcall(function() mt.__index = {} end),
  not pcall(function() mt.__index.upper = function() return "pwned" end end),
  not pcall(function() mt.__add = nil end),
  ("x"):upper() == "X",
  type(getmetatable(_ENV)) == "table",
  not pcall(function() getmetatable(_ENV).__index.type = nil end),
  getmetatable(string) == false,
  getmetatable(1) == nil and getmetatable(nil) == nil and getmetatable(pcall) == nil,
  not pcall(getmetatable),
}
local mine = {}
checks[#checks + 1] = getmetatable(setmetatable({}, mine)) == mine
checks[#checks + 1] = getmetatable(setmetatable({}, { __metatable = "locked" })) == "locked"
local failed = {}
for i, ok in ipairs(checks) do if not ok then failed[#failed + 1] = i end end
return { name = "meta", check = function() return "deny", "failed checks: " .. table.concat(failed, ",") .. "." end }]]) })
      local msg = denied(ws, "file.txt", "getmetatable")
      assert.truthy(msg:find("failed checks: .", 1, true), msg)
    end)

    it("metatables: the class idiom and __index chains work; a metatable's own metatable is fixed", function()
      local ws = open_ws(root, { policy_file(pdir, "classes", [=[
local C = {}
C.__index = C
function C.new(x) return setmetatable({ x = x }, C) end
function C:get() return self.x end
local o = C.new(5)
function C:later() return 7 end -- methods added after use are seen
local Base = { hello = function() return "hi" end }
local D = { __index = setmetatable({}, { __index = Base }) }
local d = setmetatable({}, D)
local _, inherit = pcall(function()
  local B = {} B.__index = B
  local E = setmetatable({}, B) E.__index = E
  return setmetatable({}, E)
end)
local _, self = pcall(function() local t = {} return setmetatable(t, t) end)
setmetatable(_ENV, { __index = getmetatable(_ENV).__index,
  __newindex = function(_, k) error("undeclared global " .. k, 2) end })
local strict = select(2, pcall(function() undeclared = 1 end))
local report = table.concat({ o:get() + o:later(), tostring(getmetatable(o) == C), tostring(getmetatable(C)),
  d.hello(), inherit, self, strict }, " | ")
return { name = "classes", check = function() return "deny", report end }]=]) })
      local msg = denied(ws, "file.txt", "classes")
      assert.truthy(msg:find("12 | true | false | hi | ", 1, true), msg)
      assert.truthy(msg:find("a table with a metatable of its own cannot be a metatable", 1, true), msg)
      assert.truthy(msg:find("a table cannot be its own metatable", 1, true), msg)
      assert.truthy(msg:find("undeclared global undeclared", 1, true), msg)
    end)

    it("a method call on a string uses the bounded pattern functions too", function()
      local ws = open_ws(root, { policy_file(pdir, "bomb", on_trigger(
        [[local x = ("a"):rep(300):match(("a*"):rep(20) .. "b")]])) })
      denied(ws, "trigger", "method", "pattern too costly")
      still_serves(ws)
    end)
  end)

  describe("a policy that does not load: burrow.open fails (nothing is served)", function()
    local function open_fails(src, ...)
      local p = policy_file(pdir, "broken", src)
      local ws, msg, code = burrow.open { roots = { { path = root } }, policies = { p }, resolver = H.RESOLVER }
      if ws then ws:close() end
      assert.is_nil(ws, "burrow.open should fail")
      assert.are.equal("INVALID_ARGUMENT", code)
      assert.truthy(msg:find("policy broken", 1, true), msg)
      for _, needle in ipairs { ... } do
        assert.truthy(msg:find(needle, 1, true), "expected " .. needle .. " in: " .. msg)
      end
    end

    it("a binary chunk is refused (text chunks only)", function()
      local f = assert(io.open(pdir .. "/broken.lua", "wb"))
      f:write(string.dump(function() return { check = function() return "allow" end } end))
      f:close()
      local ws, msg, code = burrow.open { roots = { { path = root } }, policies = { pdir .. "/broken.lua" }, resolver = H.RESOLVER }
      if ws then ws:close() end
      assert.is_nil(ws)
      assert.are.equal("INVALID_ARGUMENT", code)
      assert.truthy(msg:find("binary chunk", 1, true), msg)
    end)
    it("a syntax error", function() open_fails("return {", "expected") end)
    it("an error while loading", function() open_fails([[error("no config for this policy")]], "no config for this policy") end)
    it("an endless loop while loading", function() open_fails([[while true do end]], "instruction budget exceeded") end)
    it("a memory bomb while loading", function()
      open_fails([[local t = {} for i = 1, 1e6 do t[i] = ("x"):rep(100000) .. i end]], "out of memory")
    end)
    it("a chunk that returns no table with a check function", function()
      open_fails([[return { name = "x" }]], "a policy must return a table with a check function")
      open_fails([[return 42]], "a policy must return a table with a check function")
    end)
    it("a missing file", function()
      local ws, msg, code = burrow.open { roots = { { path = root } }, policies = { pdir .. "/nope.lua" }, resolver = H.RESOLVER }
      assert.is_nil(ws)
      assert.are.equal("INVALID_ARGUMENT", code)
      assert.truthy(msg:find("cannot read", 1, true), msg)
    end)
  end)

  describe("hazards that could hang the host (run in a child under a " .. GUARD .. " s guard)", function()
    -- Known failing at the time of writing; see the report of this spec.
    it("a loop that catches the budget error with pcall still ends: denied", function()
      local p = policy_file(pdir, "bomb", on_trigger([[
        while true do pcall(function() while true do end end) end]]))
      local out, code = child_calls(root, p, "trigger")
      child_finished("pcall loop", out, code)
      assert.truthy(out:find("first\tPOLICY_DENIED", 1, true), out)
      assert.truthy(out:find("instruction budget exceeded", 1, true), out)
      assert.truthy(out:find("second\tOK", 1, true), out)
    end)

    it("string.match with a 4th argument is not taken for a plain search", function()
      -- string.match(s, p, init) has no `plain` flag; a 4th argument must not
      -- switch the guard off
      local p = policy_file(pdir, "bomb", on_trigger([[
        local x = req.path:match(("a*"):rep(20) .. "b", 1, true)]]))
      local out, code = child_calls(root, p, ("a"):rep(200))
      child_finished("match with 4 args", out, code)
      assert.truthy(out:find("first\tPOLICY_DENIED", 1, true), out)
      assert.truthy(out:find("pattern too costly", 1, true), out)
      assert.truthy(out:find("second\tOK", 1, true), out)
    end)

    it("a __gc finalizer is refused: at load the policy does not load, in a call the call is denied", function()
      -- finalizers would run outside any call (and in ws:close()), so
      -- policies cannot set them
      local at_load = policy_file(pdir, "bomb", [[
setmetatable({}, { __gc = function() while true do end end })
return { name = "bomb", check = function() return "allow" end }]])
      local ws, msg = burrow.open { roots = { { path = root } }, policies = { at_load }, resolver = H.RESOLVER }
      assert.is_nil(ws)
      assert.truthy(msg:find("__gc is not available to policies", 1, true), msg)
      local p = policy_file(pdir, "bomb2", on_trigger([[
        setmetatable({}, { __gc = function() while true do end end })]]))
      local out, code = child_calls(root, p, "trigger")
      child_finished("__gc loop", out, code)
      assert.truthy(out:find("first\tPOLICY_DENIED", 1, true), out)
      assert.truthy(out:find("__gc is not available", 1, true), out)
      assert.truthy(out:find("second\tOK", 1, true), out)
      assert.truthy(out:find("closed", 1, true), out)
    end)

    it("an answer that is a small graph with a huge unfolding does not hang or exhaust the host", function()
      -- 15 levels of 8 references to the level below: 120 tables in the
      -- sandbox, 8^15 once copied out as a tree
      local p = policy_file(pdir, "bomb", on_trigger([[
        local t = {}
        for _ = 1, 15 do
          local n = {}
          for j = 1, 8 do n[j] = t end
          t = n
        end
        return "deny", t]]))
      local out, code = child_calls(root, p, "trigger")
      child_finished("graph answer", out, code)
      assert.truthy(out:find("first\tPOLICY_DENIED", 1, true), out)
      assert.truthy(out:find("second\tOK", 1, true), out)
    end)

    it("a memory bomb wrapped in pcall still ends: the call returns", function()
      local p = policy_file(pdir, "bomb", on_trigger([[
        for _ = 1, 1e9 do pcall(string.rep, "x", 1 << 30) end]]))
      local out, code = child_calls(root, p, "trigger")
      child_finished("pcall memory", out, code)
      assert.truthy(out:find("first\tPOLICY_DENIED", 1, true), out)
      assert.truthy(out:find("second\tOK", 1, true), out)
    end)
  end)

  describe("the budget has no holes: denied within " .. BOUND .. " s, and the next call is served", function()
    -- Each case hung the host or held it for seconds before the budget
    -- counted library work, xpcall handlers and the time (measured once
    -- with a 20 s kill: "before"). Each runs in a child under the guard.
    local function bounded(label, body, ...)
      local p = policy_file(pdir, "bomb", on_trigger(body))
      local out, code = child_calls(root, p, "trigger")
      child_finished(label, out, code)
      assert.truthy(out:find("first\tPOLICY_DENIED", 1, true), label .. ": not denied:\n" .. out)
      for _, needle in ipairs { ... } do
        assert.truthy(out:find(needle, 1, true), label .. ": expected " .. needle .. " in:\n" .. out)
      end
      assert.truthy(out:find("second\tOK", 1, true), label .. ": the next call was not served:\n" .. out)
      assert.truthy(out:find("closed", 1, true), out)
      local took = tonumber(out:match("took\t([%d.]+)"))
      assert.is_true(took < BOUND, ("%s: the call took %.2f s"):format(label, took))
    end

    local BUDGET = "instruction budget exceeded (1000000)"
    local PATTERN = "pattern too costly for the policy sandbox"
    local TIME = "time limit exceeded (2 s)"
    -- strings built in a few instructions (one 1,000-byte string copied)
    local MB = [[("%s"):rep(1000):rep(1000)]]

    it("an xpcall message handler that loops (before: hung)", function()
      bounded("xpcall", [[xpcall(function() while true do end end, function() while true do end end)]], BUDGET)
    end)

    it("an xpcall handler that loops in a metamethod, or in a nested xpcall (before: hung)", function()
      bounded("xpcall __index", [[
        xpcall(function() while true do end end, function()
          return setmetatable({}, { __index = function() while true do end end }).x
        end)]], BUDGET)
      bounded("nested xpcall", [[
        xpcall(function() while true do end end, function()
          xpcall(function() while true do end end, function() while true do end end)
        end)]], BUDGET)
    end)

    it("string.find plain on a 10 MB string with a 100 KB needle of near-matches runs in linear time (before: hung, 28 s reported)", function()
      -- 10 MB of "a", the needle 99,999 "a" then "b": every place a
      -- near-match; memmem instead of memchr + memcmp
      bounded("find plain", [[
        local h = ("a"):rep(1000):rep(5000)
        local s = h .. h
        h = nil
        local i = s:find(("a"):rep(99999) .. "b", 1, true)
        return "deny", "the search ended: " .. tostring(i)]], "the search ended: nil")
    end)

    it("a long literal pattern (no special characters, or one) on a long subject (before: hung)", function()
      bounded("literal", [[
        local s = ]] .. MB:format("a") .. [[
        local i = s:find(("a"):rep(99999) .. "b")
        return "deny", "the search ended: " .. tostring(i)]], "the search ended: nil")
      bounded("literal and a dot", [[
        local s = ]] .. MB:format("a") .. [[
        return s:find(("a"):rep(99999) .. ".b")]], PATTERN)
    end)

    it("%b() on 1 MB of '(' (before: hung, 15 s reported)", function()
      bounded("%b", [[return (]] .. MB:format("(") .. [[):find("%b()")]], PATTERN, "subject of 1000000 bytes")
    end)

    it("%f frontiers (before: hung), back-references and long sets (refused before) are counted too", function()
      bounded("%f in a loop", [[
        local s = ]] .. MB:format("a b ") .. [[
        for _ = 1, 1e6 do s:gsub("%f[%w]", "") end]], PATTERN)
      bounded("back-reference", [[return (]] .. MB:format("a") .. [[):find("(a*)%1b")]], PATTERN)
      bounded("a set of 100 KB", [[
        local set = "[" .. ("b"):rep(100000) .. "a]"
        return (("a"):rep(100000)):find(set .. "*c")]], PATTERN)
    end)

    it("a replacement string of 100,000 empty captures per match (before: hung)", function()
      bounded("gsub replacement", [[return (("a"):rep(100000)):gsub("(b?)", ("%1"):rep(100000))]], PATTERN)
    end)

    it("string.gsub with a function replacement on a big string (before: allowed, 0.07 s), and with a table in a loop (before: hung)", function()
      -- the budget runs out in the function or in the matcher
      bounded("gsub function", [[return (]] .. MB:format("x") .. [[):gsub(".", function(c) return c end)]], "policy bomb failed")
      bounded("gsub table loop", [[
        local s = ]] .. MB:format("x") .. [[
        for _ = 1, 1e6 do s:gsub(".", {}) end]], PATTERN)
    end)

    it("coroutines are not in the sandbox: create + resume and wrap loops are denied at once (as before)", function()
      bounded("coroutine.create", [[
        local co = coroutine.create(function() while true do end end)
        coroutine.resume(co)]], "global 'coroutine'")
      bounded("coroutine.wrap", [[coroutine.wrap(function() while true do end end)()]], "global 'coroutine'")
    end)

    it("metamethods that loop, called by the VM or from C (counted before too)", function()
      local loop = "function() while true do end end"
      local cases = {
        { "__index", ("return setmetatable({}, { __index = %s }).x"):format(loop) },
        { "__eq", ("local mt = { __eq = %s } return setmetatable({}, mt) == setmetatable({}, mt)"):format(loop) },
        { "__lt in a sort comparator", ([[
          local mt = { __lt = %s }
          local t = {}
          for i = 1, 10 do t[i] = setmetatable({}, mt) end
          table.sort(t, function(a, b) return a < b end)]]):format(loop) },
        { "__concat", ("return setmetatable({}, { __concat = %s }) .. 'x'"):format(loop) },
        { "__close", ("do local x <close> = setmetatable({}, { __close = %s }) end"):format(loop) },
        { "__tostring", ("return tostring(setmetatable({}, { __tostring = %s }))"):format(loop) },
      }
      for _, c in ipairs(cases) do bounded(c[1], c[2], BUDGET) end
      -- __gc is refused (a finalizer runs with hooks off): "hazards" above
    end)

    it("__len of 2^50 under table.insert and table.remove, and table.move over 2^50 slots (before: hung)", function()
      local huge = "setmetatable({}, { __len = function() return 1 << 50 end })"
      bounded("insert", "table.insert(" .. huge .. ", 1, 'x')", BUDGET)
      bounded("remove", "table.remove(" .. huge .. ", 1)", BUDGET)
      bounded("move", "table.move({}, 1, 1 << 50, 1)", BUDGET)
    end)

    it("a 2,000-table __index chain read by table.unpack or as gsub's replacement table (before: 12 s, 18 s)", function()
      -- each element read walks the whole chain inside one C call
      local chain = "local t = {} for _ = 1, 1999 do t = setmetatable({}, { __index = t }) end\n"
      bounded("unpack", chain .. [[for _ = 1, 10 do select("#", table.unpack(t, 1, 400000)) end]], BUDGET)
      bounded("gsub table", chain .. [[return (]] .. MB:format("x") .. [[):gsub(".", t)]], PATTERN)
    end)

    it("weak-keyed tables are refused, set at once or later (before: 15 s in one collection)", function()
      -- the collector converges ephemerons in time quadratic in their
      -- entries, in one atomic step: 40,000 chained in random order, built
      -- over a few calls, held the host 15 s in the collection after a
      -- failed call; __mode is read at every cycle, so a metatable in use
      -- may not gain one either
      local WEAK = "weak tables (__mode) are not available to policies"
      bounded("__mode at once", [[setmetatable({}, { __mode = "k" })]], WEAK)
      bounded("__mode later", [[local mt = {} setmetatable({}, mt) mt.__mode = "k"]], WEAK)
      bounded("_ENV's __mode", [[getmetatable(_ENV).__mode = "k"]], WEAK)
      bounded("a metatable's metatable swapped", [[local mt = {} setmetatable({}, mt) setmetatable(mt, {})]],
        "cannot change a protected metatable")
    end)

    it("string.rep('', 2^60) (before: hung)", function()
      bounded("rep", [[return #string.rep("", 1 << 60)]], BUDGET)
    end)

    it("table.sort with a slow comparator on a big table (counted before too), and sorting in a loop (before: hung)", function()
      bounded("slow comparator", [[
        local t = { (]] .. MB:format("x") .. [[):byte(1, 200000) }
        table.sort(t, function(a, b) for _ = 1, 50 do end return a < b end)]], BUDGET)
      bounded("sort loop", [[
        local t = { (("x"):rep(100000)):byte(1, -1) }
        for _ = 1, 1e6 do table.sort(t) end]], BUDGET)
    end)

    it("loops of calls that each do much (before: 3.4 s for find, hung for the rest)", function()
      local s = "local s = " .. MB:format("a") .. "\n"
      bounded("find plain", s .. [[for _ = 1, 1e6 do s:find("b", 1, true) end]], "plain find too costly")
      bounded("an 8 MB pattern", [[
        local p = ("a"):rep(1000):rep(8000) .. "."
        for _ = 1, 1e6 do ("b"):find(p) end]], PATTERN)
      bounded("utf8.len", s .. [[for _ = 1, 1e6 do utf8.len(s) end]], BUDGET)
      bounded("string.byte", s .. [[for _ = 1, 1e6 do local a = s:byte(1, 200000) end]], BUDGET)
      bounded("table.unpack", [[
        local t = { (("x"):rep(200000)):byte(1, -1) }
        for _ = 1, 1e6 do select("#", table.unpack(t)) end]], BUDGET)
      bounded("8 MB concatenation", [[
        local s = ("x"):rep(1000):rep(8000)
        for _ = 1, 1e6 do local y = s .. "x" end]], BUDGET)
    end)

    it("a gmatch iterator pays what its gmatch paid again after an error, and is not run again after its end", function()
      -- the stock iterator starts again where the last match ended: called
      -- after its end it would scan the rest again for nothing, and after
      -- an error it redoes the work up to the error
      local s = [[local s = ("a"):rep(1000):rep(50) .. "b"
]]
      bounded("after its end", s .. [[
        local it = s:gmatch("c")
        for _ = 1, 1e7 do it() end]], BUDGET)
      bounded("after an error", s .. [[
        local it = s:gmatch("b%1")
        for _ = 1, 1e7 do pcall(it) end]], PATTERN)
    end)

    it("work nothing counts stops at the time limit (before: hung)", function()
      -- comparing two 4 MB strings, next() over 150,000 empty slots: one
      -- instruction each, the hook reads the clock every 1,000
      bounded("string comparison", [[
        local s = ("a"):rep(1000):rep(4000)
        local t = s:sub(1, -2) .. "b"
        for _ = 1, 1e6 do local x = s < t end]], TIME)
      bounded("next", [[
        local t = { (("x"):rep(150000)):byte(1, -1) }
        table.move({}, 1, 150000, 1, t)
        for _ = 1, 1e6 do next(t) end]], TIME)
    end)
  end)

  describe("isolation between policies of one workspace", function()
    it("each policy has globals of its own", function()
      local a = policy_file(pdir, "a", [[
shared_value = "from a"
return { name = "a", check = function() return "allow" end }]])
      local b = policy_file(pdir, "b", [[
return { name = "b", check = function()
  if shared_value ~= nil then return "deny", "b sees a's global: " .. shared_value end
  return "allow"
end }]])
      local ws = open_ws(root, { a, b })
      still_serves(ws)
    end)

    it("one policy cannot change the library functions another one uses", function()
      -- string, table, os, math are shared tables: a policy that writes
      -- into them must not switch another policy (here: secrets) off
      H.write(root, "id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----\n")
      H.write(root, ".env", "TOKEN=1\n")
      local evil = policy_file(pdir, "evil", [[
string.match = function() return "harmless" end
string.find = function() return nil end
return { name = "evil", check = function() return "allow" end }]])
      local ws, msg = burrow.open { roots = { { path = root } }, policies = { evil, "secrets" }, resolver = H.RESOLVER }
      assert.is_nil(ws, "a policy that writes into the libraries must not load")
      assert.truthy(msg:find("read-only", 1, true), msg)
      -- the same attempt at call time fails that call, and secrets still holds
      local late = policy_file(pdir, "late", [[
return { name = "late", check = function()
  pcall(function() string.match = function() return "harmless" end end)
  pcall(function() getmetatable(_ENV).__index.string = { match = function() end } end)
  return "allow"
end }]])
      ws = open_ws(root, { late, "secrets" })
      denied(ws, "id_rsa", "read id_rsa", "secrets policy")
      denied(ws, ".env", "read .env", "secrets policy")
    end)

    it("the base table behind _ENV cannot be written either", function()
      local evil = policy_file(pdir, "evil", [[
local mt = getmetatable(_ENV)
if mt and type(mt.__index) == "table" then
  if rawset then rawset(mt.__index, "type", function() return "string" end) end
  pcall(function() mt.__index.type = function() return "string" end end)
end
return { name = "evil", check = function() return "allow" end }]])
      local b = policy_file(pdir, "b", [[
return { name = "b", check = function()
  if type(1) ~= "number" then return "deny", "type() was replaced by another policy" end
  return "allow"
end }]])
      local ws = open_ws(root, { evil, b })
      still_serves(ws)
    end)
  end)

  it("policy.limits.time sets the time limit of the workspaces opened after", function()
    local p = policy_file(pdir, "slow", on_trigger([[
      local s = ("a"):rep(1000):rep(4000)
      local t = s:sub(1, -2) .. "b"
      for _ = 1, 1e6 do local x = s < t end]]))
    local out, code = child(([[
local policy = require "burrow.policy"
assert(policy.limits.time == 2, "the default is 2 s")
policy.limits = { memory = policy.limits.memory, instructions = policy.limits.instructions, time = 0.5 }
local burrow = require "burrow"
local ws = assert(burrow.open { roots = { { path = %q } }, policies = { %q } })
local res, msg, code = ws:call("read_file", { path = "trigger" })
print(code, msg)
]]):format(root, p))
    assert.are.equal(0, code, out)
    assert.truthy(out:find("POLICY_DENIED", 1, true), out)
    assert.truthy(out:find("time limit exceeded (0.5 s)", 1, true), out)
  end)

  it("after a policy runs out of memory, the next calls may use memory again", function()
    -- fills the cap in small steps: a list of 1 KB strings
    local bomb = policy_file(pdir, "bomb", on_trigger([[
      local head, n = nil, 0
      while true do n = n + 1; head = { head, ("x"):rep(1000) .. n } end]]))
    -- an ordinary policy that builds a few KB of text on every call
    local text = policy_file(pdir, "text", [[
return { name = "text", check = function(req)
  local banner = ("-"):rep(4096)
  local line = ("%s %s"):format(req.tool, req.path):rep(100, " ")
  return "allow"
end }]])
    local ws = open_ws(root, { bomb, text })
    still_serves(ws, "before the bomb")
    denied(ws, "trigger", "bomb", "out of memory")
    still_serves(ws, "right after the bomb")
    still_serves(ws, "second call after the bomb")
  end)
end)
