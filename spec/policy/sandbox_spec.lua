-- The policy sandbox (host/src/lsandbox.c, core.sandbox) as operators meet
-- it through burrow.open{policies = {...}}: a policy that raises, loops,
-- allocates without end, runs a costly pattern or reaches for io, os,
-- load, require, debug... denies the call (POLICY_DENIED, with a reason
-- that says why), the call returns, and the next call on the same
-- workspace is served. Then core.sandbox itself: load/call, options as
-- `...`, copies across states, limits, memory accounting.
--
-- Cases that could hang the host if the sandbox fails run in a child
-- lua5.4 under `timeout`: the guard only decides "returned at all".

local H = require "helpers"
local burrow = require "burrow"
local core = require "burrow.core"

local GUARD = 20 -- seconds a child may take before it counts as hung

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
  local res, msg, code = ws:call("read_file", { path = path })
  assert.is_nil(res, label .. ": expected POLICY_DENIED, the call succeeded")
  assert.are.equal("POLICY_DENIED", code, label .. ": " .. tostring(msg))
  assert.is_string(msg)
  assert.are.equal("POLICY_DENIED: ", msg:sub(1, 15), label .. ": " .. msg)
  for _, needle in ipairs { ... } do
    assert.truthy(msg:find(needle, 1, true), label .. ": message should contain " .. ("%q"):format(needle) .. ", got: " .. msg)
  end
  return msg
end

-- The next ordinary call on ws is served: the host kept going.
local function still_serves(ws, label)
  local res, msg, code = ws:call("read_file", { path = "file.txt" })
  assert.is_table(res, (label or "") .. ": the next normal call failed: " .. tostring(code) .. " " .. tostring(msg))
  assert.are.equal("1\thello\n", res.content)
end

-- Run a Lua script in a child lua5.4 (repo root as cwd, our module paths),
-- killed after GUARD seconds. Returns its output and exit code.
local function child(src)
  local dir = H.tmpdir()
  local script = H.write(dir, "child.lua", src)
  -- a memory bound too (2 GB of address space), unless AddressSanitizer
  -- is preloaded: it reserves terabytes and would not start
  local asan = (os.getenv("LD_PRELOAD") or ""):find("asan", 1, true)
  local cmd = ("cd %s && %s LUA_PATH=%s LUA_CPATH=%s timeout -s KILL %d lua5.4 %s 2>&1"):format(
    H.q(H.REPO), asan and "" or "ulimit -v 2000000;", H.q(package.path), H.q(package.cpath), GUARD, H.q(script))
  local out, _, code = H.run(cmd)
  return out, code
end

-- A child that opens a workspace on root with one policy file, calls
-- read_file on `trigger`, then on file.txt, then closes the workspace.
local function child_calls(root, policy_path, trigger)
  return child(([[
local burrow = require "burrow"
local rv = os.getenv("BURROW_RESOLVER")
local ws = assert(burrow.open { roots = { { path = %q } }, policies = { %q },
  resolver = (rv ~= "" and rv) or nil })
io.stdout:setvbuf("no")
local res, msg, code = ws:call("read_file", { path = %q })
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
    assert.truthy(msg:find("^POLICY_DENIED: trigger: denied by policy: "), msg)
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
      { "optional items (2^n)", [[local x = req.path:match(("a?"):rep(40) .. ("a"):rep(40))]] },
      { "a class with a quantifier", [[local x = req.path:match(("[a-z]+"):rep(10) .. "$")]] },
    }
    for _, b in ipairs(bombs) do
      it(b[1] .. " is refused before it runs: denied with the pattern cost message", function()
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
      { "getmetatable('').__index", [[local string_lib = getmetatable("").__index]] },
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

    it("the globals are the documented set, and getmetatable('') gives nothing", function()
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
if getmetatable("") ~= nil then seen[#seen + 1] = "getmetatable('')" end
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

    it("a method call on a string uses the guarded pattern functions too", function()
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

    it("string.match with a 4th argument does not skip the pattern cost check", function()
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
  rawset(mt.__index, "type", function() return "string" end)
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

---------------------------------------------------------------------------

describe("core.sandbox", function()
  local sb

  after_each(function()
    if sb then sb:close() end
    sb = nil
  end)

  it("loads a policy and calls its check on a copy of the request", function()
    sb = core.sandbox { memory = 4 << 20, instructions = 100000 }
    assert.is_true(sb:load("p", [[
return { check = function(req) return "deny", req.tool .. ":" .. req.path .. ":" .. tostring(req.size) end }]]))
    local ok, answer, reason = sb:call("p", "check", { tool = "read_file", path = "a/b", size = 3 })
    assert.is_true(ok)
    assert.are.equal("deny", answer)
    assert.are.equal("read_file:a/b:3", reason)
  end)

  it("passes the options as the chunk's `...` (nothing when there are none)", function()
    sb = core.sandbox()
    assert.is_true(sb:load("with", [[
local opts, n = ..., select("#", ...)
return { check = function() return opts.max .. "/" .. opts.nested.unit, n end }]],
      { max = 5, nested = { unit = "KB" } }))
    assert.is_true(sb:load("without", [[
local n, opts = select("#", ...), ...
return { check = function() return tostring(opts), n end }]]))
    local ok, a, b = sb:call("with", "check")
    assert.is_true(ok)
    assert.are.equal("5/KB", a)
    assert.are.equal(1, b)
    ok, a, b = sb:call("without", "check")
    assert.is_true(ok)
    assert.are.equal("nil", a)
    assert.are.equal(0, b)
  end)

  it("copies values across: the host's tables are never shared, functions do not cross", function()
    sb = core.sandbox()
    local opts = { list = { "x" }, n = 1 }
    assert.is_true(sb:load("p", [[
local o = ...
o.n = 99
o.list[1] = "changed"
return {
  check = function(req) req.path = "changed"; return type(req.fn), { a = { b = { c = "deep" } }, n = 1.5 } end,
}]], opts))
    assert.are.equal(1, opts.n)
    assert.are.equal("x", opts.list[1])
    local req = { path = "p", fn = function() end }
    local ok, t, r = sb:call("p", "check", req)
    assert.is_true(ok)
    assert.are.equal("nil", t)
    assert.are.same({ a = { b = { c = "deep" } }, n = 1.5 }, r)
    assert.are.equal("p", req.path)
  end)

  it("a missing function answers just true; an unknown policy raises", function()
    sb = core.sandbox()
    assert.is_true(sb:load("p", [[return { check = function() return "allow" end }]]))
    local r = table.pack(sb:call("p", "after", {}, {}))
    assert.are.equal(1, r.n)
    assert.is_true(r[1])
    assert.has_error(function() sb:call("nope", "check", {}) end)
  end)

  it("errors, the budget and the cap come back as false, message", function()
    sb = core.sandbox { memory = 2 << 20, instructions = 50000 }
    assert.is_true(sb:load("err", [[return { check = function() error("bad policy") end }]]))
    assert.is_true(sb:load("loop", [[return { check = function() while true do end end }]]))
    assert.is_true(sb:load("mem", [[return { check = function() local t = {} while true do t[#t + 1] = ("m"):rep(65536) .. #t end end }]]))
    local ok, msg = sb:call("err", "check", {})
    assert.is_false(ok)
    assert.truthy(msg:find("bad policy", 1, true), msg)
    ok, msg = sb:call("loop", "check", {})
    assert.is_false(ok)
    assert.are.equal("instruction budget exceeded (50000)", msg)
    ok, msg = sb:call("mem", "check", {})
    assert.is_false(ok)
    assert.are.equal("out of memory (the policy memory cap)", msg)
  end)

  it("the budget is per call: a call using most of it succeeds every time", function()
    sb = core.sandbox { instructions = 200000 }
    assert.is_true(sb:load("p", [[return { check = function() local n = 0 for i = 1, 30000 do n = n + i end return "allow", n end }]]))
    for _ = 1, 5 do
      local ok, a = sb:call("p", "check", {})
      assert.is_true(ok)
      assert.are.equal("allow", a)
    end
  end)

  it("refuses binary chunks", function()
    sb = core.sandbox()
    local ok, msg = sb:load("bin", string.dump(function() return { check = function() end } end))
    assert.is_nil(ok)
    assert.truthy(msg:find("binary chunk", 1, true), msg)
  end)

  it("a policy's chunk must return a table with check", function()
    sb = core.sandbox()
    local ok, msg = sb:load("x", "return {}")
    assert.is_nil(ok)
    assert.truthy(msg:find("a policy must return a table with a check function", 1, true), msg)
  end)

  it("reports its memory, and never more than the cap above the start", function()
    local cap = 2 << 20
    sb = core.sandbox { memory = cap }
    local start = sb:memory()
    assert.is_true(start > 0)
    assert.is_true(sb:load("mem", [[return { check = function() local t = {} while true do t[#t + 1] = ("m"):rep(65536) .. #t end end }]]))
    for _ = 1, 3 do
      assert.is_false((sb:call("mem", "check", {})))
      assert.is_true(sb:memory() <= start + cap, "memory " .. sb:memory() .. " over the cap")
    end
  end)

  it("memory accounting returns to near the start after a failed call", function()
    local cap = 4 << 20
    sb = core.sandbox { memory = cap }
    assert.is_true(sb:load("mem", [[return { check = function() local t = {} while true do t[#t + 1] = ("m"):rep(1000) .. #t end end }]]))
    assert.is_true(sb:load("ok", [[return { check = function() return "allow" end }]]))
    local start = sb:memory()
    assert.is_false((sb:call("mem", "check", {})))
    local after = sb:memory()
    assert.is_true(after < start + 256 * 1024,
      ("after a call that ran out of memory the sandbox still holds %d bytes (start %d, cap %d)"):format(after, start, cap))
  end)

  it("after a call ran out of memory, the next call can use memory again (string.rep of 4 KB)", function()
    sb = core.sandbox { memory = 4 << 20 }
    assert.is_true(sb:load("mem", [[return { check = function() local t = {} while true do t[#t + 1] = ("m"):rep(1000) .. #t end end }]]))
    assert.is_true(sb:load("rep", [[return { check = function() return "allow", #(("r"):rep(4096)) end }]]))
    local ok, a, n = sb:call("rep", "check", {})
    assert.is_true(ok, tostring(a))
    assert.are.equal(4096, n)
    assert.is_false((sb:call("mem", "check", {})))
    ok, a, n = sb:call("rep", "check", {})
    assert.is_true(ok, "the call after the memory bomb failed: " .. tostring(a))
    assert.are.equal(4096, n)
  end)

  it("a library table changed by one policy is not what the next one sees", function()
    sb = core.sandbox()
    local ok0, err = sb:load("a", [[string.upper = nil; table.concat = nil; return { check = function() return "allow" end }]])
    assert.is_nil(ok0)
    assert.truthy(err:find("read-only", 1, true), err)
    assert.is_true(sb:load("b", [[return { check = function() return ("x"):upper(), table.concat({ "y" }) end }]]))
    local ok, a, b = sb:call("b", "check", {})
    assert.is_true(ok, tostring(a))
    assert.are.equal("X", a)
    assert.are.equal("y", b)
  end)

  it("a closed sandbox refuses use", function()
    local s = core.sandbox()
    s:close()
    assert.has_error(function() s:call("p", "check", {}) end)
    s:close() -- twice is harmless
  end)
end)
