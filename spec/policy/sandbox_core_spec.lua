-- core.sandbox itself (host/src/lua/lsandbox.c, lsbcharge.c), below
-- burrow.open: load/call, options as `...`, copies across states, limits,
-- memory accounting, the library functions' charges. How operators meet it
-- through burrow.open{policies = ...} is sandbox_spec.lua.

local H = require "helpers"
local core = require "burrow.core"
local pattern = require "burrow.pattern_test" -- test-only (host/test/lpattern.c): the bound asked directly

local GUARD = 20 -- seconds a child may take before it counts as hung

local function child(src) return H.lua_child(src, GUARD) end

describe("core.sandbox", function()
  local sb

  after_each(function()
    if sb then sb:close() end
    sb = nil
    H.cleanup() -- the children's scripts (H.lua_child)
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
    local ok, msg = sb:call("err", "check", {})
    assert.is_false(ok)
    assert.truthy(msg:find("bad policy", 1, true), msg)
    ok, msg = sb:call("loop", "check", {})
    assert.is_false(ok)
    assert.are.equal("instruction budget exceeded (50000)", msg)
    -- allocation is charged to the budget too (1 per 128 bytes): the cap
    -- is met first with the default budget
    sb:close()
    sb = core.sandbox { memory = 2 << 20 }
    assert.is_true(sb:load("mem", [[return { check = function() local t = {} while true do t[#t + 1] = ("m"):rep(65536) .. #t end end }]]))
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

  it("xpcall returns what stock xpcall returns; its handler gets the error", function()
    sb = core.sandbox()
    assert.is_true(sb:load("p", [[
return { check = function()
  local r = table.pack(xpcall(function(a, b) return a + b, "two" end, function(e) return "H" .. e end, 1, 2))
  local ok, h = xpcall(function() error("boom", 0) end, function(m) return "handled " .. m end)
  local ok2, h2 = xpcall(function() error("boom", 0) end, function() error("again", 0) end)
  return "deny", ("%s %d %s %d | %s %s | %s %s | %s"):format(tostring(r[1]), r[2], r[3], r.n,
    tostring(ok), h, tostring(ok2), h2, tostring(pcall(xpcall, function() end)))
end }]]))
    local ok, answer, reason = sb:call("p", "check", {})
    assert.is_true(ok, tostring(answer))
    assert.are.equal("deny", answer)
    assert.are.equal("true 3 two 3 | false handled boom | false again | false", reason)
  end)

  it("an error a library function raises names the policy's line, as in stock Lua", function()
    sb = core.sandbox()
    assert.is_true(sb:load("p", [[
return { check = function()
  local a = select(2, pcall(function() return string.rep() end))
  local b = select(2, pcall(function()
    return table.concat({ {} })
  end))
  local c = select(2, pcall(table.sort, { 3, 2, 1 }, function() error("from the comparator", 0) end))
  return "deny", a .. " / " .. b .. " / " .. c
end }]]))
    local ok, answer, reason = sb:call("p", "check", {})
    assert.is_true(ok, tostring(answer))
    assert.are.equal("deny", answer)
    assert.truthy(reason:find("^%[string \"p\"%]:2: bad argument #1 to 'string.rep'"), reason)
    assert.truthy(reason:find(" / [string \"p\"]:4: invalid value", 1, true), reason)
    assert.truthy(reason:find(" / from the comparator$"), reason)
  end)

  it("an error message crosses cut to 1,000 bytes, like any bounded copy", function()
    sb = core.sandbox()
    assert.is_true(sb:load("p", [[return { check = function() error(("x"):rep(4000000), 0) end }]]))
    local ok, msg = sb:call("p", "check", {})
    assert.is_false(ok)
    assert.are.equal(("x"):rep(1000) .. "... (4000000 bytes)", msg)
  end)

  it("patterns an operator writes run on a 4,096-byte path within the budget", function()
    -- each is charged a bound of its work before it runs (16 steps a
    -- unit): ordinary patterns over a long path cost a small part of the
    -- budget; "([^/]+)$" rescans each 250-byte segment from each of its
    -- places (5 ms of stock matching) and costs two thirds of it
    sb = core.sandbox()
    assert.is_true(sb:load("p", [[
return { check = function(req)
  local p = req.path
  assert(not p:find("%.env$") and p:gsub("/+$", "") == p and p:match("^.*/(.*)$") == "file.txt")
  local base = p:match("([^/]+)$")
  local dir = p:match("^(.*)/")
  local n = 0
  for _ in p:gmatch("[^/]+") do n = n + 1 end
  local ext = p:match("%.([%w_]+)$")
  local under = p:gsub("[^%w/]", "_")
  local deep = select(2, p:gsub("/", "/"))
  local secret = p:find("/.ssh/", 1, true) or p:lower():find("secret", 1, true)
  local seg = p:match("^" .. ("[^/]+/"):rep(3))
  return "allow", ("%s %d %s %d %d %s %s"):format(base, n, ext, #under, deep, tostring(secret), tostring(seg ~= nil))
end }]]))
    local seg = ("d"):rep(250) .. "/"
    local path = seg:rep(16) .. "file.txt"
    assert.is_true(#path > 4000 and #path <= 4096)
    local ok, answer, reason = sb:call("p", "check", { path = path })
    assert.is_true(ok, tostring(answer))
    assert.are.equal("allow", answer)
    assert.are.equal(("file.txt 17 txt %d 16 nil true"):format(#path), reason)
  end)

  it("find, match, gmatch and gsub answer as stock Lua's, errors included", function()
    -- the sandbox's are the stock functions behind a bound, but for a
    -- plain find (memmem) and gmatch's iterator (charged in turn)
    local cases = {
      [[("hello world"):find("o w")]], [[("hello world"):find("o", 6)]], [[("hello world"):find("l+")]],
      [[("hello"):find("", 6)]], [[("hello"):find("", 7)]], [[("hello"):find("", -2)]], [[("hello"):find("l", -10)]],
      [[("a.b"):find(".", 1, true)]], [[("a.b"):find("%.")]], [[("a+b"):find("+", 1, true)]], [[("a)b"):find("a)")]],
      [[("aXbXc"):find("X", 3, true)]], [[("abc"):find("abcd", 1, true)]], [[("abc"):find("c", 4, true)]],
      [[string.find(12345, 34)]], [[("x"):find("x", 1.0)]], [[("a\0b"):find("\0", 1, true)]], [[("a\0b"):find("%z")]],
      [[("key = value"):match("^(%w+)%s*=%s*(%w+)$")]], [[("  trim  "):match("^%s*(.-)%s*$")]],
      [[("f(a(b)c)d"):match("%b()")]], [[("THE (quick) fox"):find("%f[%a]%a+", 5)]],
      [[("hello"):match("()ll()")]], [[("abab"):match("(ab)%1")]], [[("abc"):match("^b")]], [[("abc"):match("b", 2)]],
      [[("abc"):match("c$")]], [[("a$c"):match("$c")]], [=[("a]b"):match("[]]")]=], [[("a-b"):match("[a-]+")]],
      [[collect("one two  three", "%a+")]], [[collect("k=v, a=b", "(%w+)=(%w+)")]], [[collect("abc", "")]],
      [[collect("^a^a", "^a")]], [[collect("abcabc", "b", 3)]], [[collect("aaa", "a*")]], [[collect("abc", "()")]],
      [[("hello world"):gsub("o", "0")]], [[("hello"):gsub("", "-")]], [[("abc"):gsub("%w", "%0%0")]],
      [[("abc"):gsub("(a)(b)", "%2%1")]], [[("hello world"):gsub("%w+", { hello = "HI" })]],
      [[("abc"):gsub(".", function(c) return c:upper() end)]], [[("abc"):gsub(".", "x", 2)]],
      [[("abc"):gsub("^a", "")]], [[("x y"):gsub("%s", 5)]], [[("abc"):gsub("b", function() return false end)]],
      -- errors (called as functions: a method call numbers the arguments
      -- from the subject, and the sandbox's functions are called from C)
      [[string.find("x", "[a")]], [[string.find("x", "%")]], [[string.match("x", "(%1)")]],
      [[string.gsub("x", "x", "%2")]], [[string.gsub("x", "x", true)]], [[string.find("x", {})]],
      [[string.find("x", "x", "y")]], [[string.gmatch("x", "%b")()]], [[string.match("x", "%f")]],
      [[string.match("x", "(x")]], [[string.match("x", "x)")]], [[string.gsub("x", "x", "%y")]],
      [[string.gsub("x", ".", { x = {} })]], [[string.find({}, "x")]], [[string.gmatch("x")]],
    }
    local prelude = [[
local function collect(s, p, init)
  local t = {}
  for a, b in s:gmatch(p, init) do t[#t + 1] = tostring(a) .. "," .. tostring(b) end
  return table.concat(t, ";")
end
local function ser(ok, ...)
  local t = { tostring(ok), select("#", ...) }
  for i = 1, select("#", ...) do
    local v = select(i, ...)
    if not ok then v = tostring(v):gsub("^.-:%d+: ", ""):gsub("to '[^']*'", "to ?") end
    t[#t + 1] = type(v) .. ":" .. tostring(v)
  end
  return table.concat(t, " ")
end
]]
    local src = { prelude, "return { check = function() local r = {}" }
    for i, c in ipairs(cases) do src[#src + 1] = ("r[%d] = ser(pcall(function() return %s end))"):format(i, c) end
    src[#src + 1] = "return 'allow', r end }"
    sb = core.sandbox()
    assert.is_true(sb:load("p", table.concat(src, "\n")))
    local ok, answer, got = sb:call("p", "check", {})
    assert.is_true(ok, tostring(answer))
    local env = setmetatable({}, { __index = _G })
    assert(load(prelude, "=prelude", "t", env))()
    local collect, ser = load(prelude .. "return collect, ser", "=prelude", "t", env)()
    env.collect = collect
    for i, c in ipairs(cases) do
      local want = ser(pcall(assert(load("return " .. c, "=case", "t", env))))
      assert.are.equal(want, got[i], c)
    end
  end)

  it("the bound's analysis knows where a try matches as the stock matcher does", function()
    -- pattern.states (host/test/lpattern.c) says, for each start, whether a try of the
    -- whole pattern there fails, matches up to a known end, matches, or
    -- may do either; the bound cuts its tries and follows gmatch's and
    -- gsub's walk by it, so it must never be wrong. Random patterns on
    -- random subjects, then every byte against sets of every odd shape.
    local rnd = 12345
    local function random(n) rnd = (rnd * 1103515245 + 12345) % 2147483648 return rnd % n + 1 end
    local pieces = { "a", "b", "/", "%.", ".", "%a", "%d", "%w", "%W", "%s", "[ab]", "[^a]", "[a-c]", "[%a/]",
      "[]]", "[^]]", "[a-]", "[%]]", "[a-%]]", "[-a]", "[%-b]", "$", "^", "-", "*", "%%", "[^%w]", "%z", "%u" }
    local reps = { "", "", "", "*", "+", "-", "?" }
    local others = { "(", ")", "()", "%1", "%b()", "%bab", "%f[%w]", "%f[%s]", "%f[^a]" }
    local bytes = { "a", "b", "/", ".", "(", ")", " ", "1", "]", "-", "%", "^", "A", "\0" }
    local checked, U, M = 0, 0, 0
    for _ = 1, 3000 do
      local p, s = {}, {}
      for _ = 1, random(6) do
        p[#p + 1] = random(7) == 1 and others[random(#others)] or pieces[random(#pieces)] .. reps[random(#reps)]
      end
      for _ = 1, random(15) - 1 do s[#s + 1] = bytes[random(#bytes)] end
      p, s = table.concat(p), table.concat(s)
      local states = pattern.states(s, p)
      for i = 1, #s + 1 do
        local ok, st, en = pcall(string.find, s, "^" .. p, i) -- gmatch reads a leading ^ as a byte, so does "^^"
        if ok then
          local want, good = states[i]
          if want == "F" then good = st == nil
          elseif want == "U" then good, U = st ~= nil, U + 1
          elseif want == "M" then good, M = true, M + 1
          else good = st == i and en == tonumber(want:sub(2)) end
          assert(good, ("s=%q p=%q i=%d: %s, stock %s %s"):format(s, p, i, want, tostring(st), tostring(en)))
          checked = checked + 1
        end
      end
    end
    assert.is_true(checked > 15000 and M < checked / 10, checked .. " " .. M)
    local all = {}
    for b = 0, 255 do all[b + 1] = string.char(b) end
    all = table.concat(all)
    for _, set in ipairs { "[]]", "[^]]", "[a-]", "[%]]", "[a-%]]", "[-a]", "[%-b]", "[^%w]", "[%w_]", "[a-z%d]",
      "[%a-z]", "[z-a]", "[\0-\31]", "[^\0]", "[%z]", "[%Z]", "[%A]", "[^%A%D]", "[%x%X]", "[---]", "[]-a]", "[^]-a]",
      "[%^]", "[^^]", "[a^]", "[\200-\255]", "[%\200]", "%w", "%S", "%G", "%C", "%P", "%L", "%U", "%X", "%Z", ".",
      "%%", "%]", "%z", "%q" } do
      local states = pattern.states(all, set)
      for b = 0, 255 do
        local yes = string.find(string.char(b), "^" .. set) ~= nil
        assert(yes == (states[b + 1] == "S" .. b + 1), ("%q on byte %d: %s"):format(set, b, states[b + 1]))
      end
    end
  end)

  it("the bound is never below the work: each shape's bound grows as its work does", function()
    -- the steps of a few costly shapes, against their known growth: the
    -- bound of a try that rescans (x* then a failing rest) is quadratic
    -- in the run, linear where the run is cut short, and exponential in
    -- nested repetitions; find stops at the first start sure to match
    local function bound(fn, s, p)
      local coarse, fine = pattern.bound(fn, s, p)
      assert.is_true(fine <= coarse, p)
      return fine
    end
    local a = ("a"):rep(1000)
    assert.is_true(bound("find", a, "a*b") > 1000 * 1000 / 2)
    assert.is_true(bound("find", a, "a*b") < 20 * 1000 * 1000)
    assert.is_true(bound("find", a, "a*a*b") > 1000 * 1000 * 1000 / 6)
    assert.is_true(bound("find", ("ab"):rep(500), "a*c") < 100 * 1000) -- runs of one
    assert.is_true(bound("find", a, "a*") < 5000) -- sure to match at the first start
    assert.is_true(bound("find", ("ab"):rep(500), "a*b") < 100) -- so is "ab"
    assert.is_true(bound("find", a, "%b()") < 100 * 1000) -- no "(" anywhere
    assert.is_true(bound("find", ("("):rep(1000), "%b()") > 1000 * 1000 / 2)
    assert.is_true(bound("find", a, "(a*)%1b") > 1000 * 1000 / 2)
    assert.is_true(bound("gsub", a, "(b?)") > 1000) -- every place matches
    assert.is_true(bound("gmatch", ("ab/"):rep(300), "[^/]+") < 30 * 900) -- the walk skips each match
    local coarse = pattern.bound("find", a, "a*b")
    assert.is_true(coarse >= bound("find", a, "a*b"))
  end)

  it("a gmatch iterator made in one call pays again when a later call runs it", function()
    -- each make() pays for 8 iterators over 50 KB (and their analysis);
    -- the check runs the 24 kept by three calls: more than its budget
    sb = core.sandbox()
    assert.is_true(sb:load("p", [[
local s, its = ("a"):rep(50000), {}
return {
  make = function() for _ = 1, 8 do its[#its + 1] = s:gmatch("b") end return "made", #its end,
  check = function() for _, it in ipairs(its) do for _ in it do end end return "allow" end,
}]]))
    for i = 1, 3 do
      local ok, made, n = sb:call("p", "make", {})
      assert.is_true(ok, tostring(made))
      assert.are.equal(8 * i, n)
    end
    local ok, msg = sb:call("p", "check", {})
    assert.is_false(ok)
    assert.truthy(msg:find("pattern too costly for the policy sandbox on a subject of 50000 bytes", 1, true), msg)
  end)

  it("the time limit is an option (seconds), and a call past it is stopped", function()
    assert.has_error(function() core.sandbox { time = 0 } end)
    local out, code = child([[
local core = require "burrow.core"
local sb = core.sandbox { time = 0.3 }
assert(sb:load("slow", [=[return { check = function()
  local s = ("a"):rep(1000):rep(4000)
  local t = s:sub(1, -2) .. "b"
  for _ = 1, 1e6 do local x = s < t end
end }]=]))
local t0 = core.now()
local ok, msg = sb:call("slow", "check", {})
print(("took %.2f"):format(core.now() - t0), ok, msg)
]])
    assert.are.equal(0, code, out)
    assert.truthy(out:find("false\ttime limit exceeded (0.3 s)", 1, true), out)
    assert.is_true(tonumber(out:match("took ([%d.]+)")) < 2, out)
  end)

  it("a closed sandbox refuses use", function()
    local s = core.sandbox()
    s:close()
    assert.has_error(function() s:call("p", "check", {}) end)
    s:close() -- twice is harmless
  end)
end)
