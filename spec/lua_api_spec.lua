-- The Lua API every Lua shares: run by test/anylua/run.sh from the rock
-- installed for each of Lua 5.1, 5.2, 5.3, 5.4 and LuaJIT (never from the
-- checkout's lua/): require "burrow" is the 5.4 binding under Lua 5.4,
-- burrow.ffi under LuaJIT, burrow.native (burrow.bridge) under 5.1-5.3.
-- Same assertions on all: open, call (waiting, and with a callback), errors,
-- tools, submit/poll/cancel, a policy's ask in a submitted call (ws:on_ask,
-- ws:answer), close. No helpers.lua here: it needs burrow.core.

local JIT = type(jit) == "table"
local burrow = require "burrow"
local WHICH = burrow.backend or "the Lua 5.4 binding"
local function now()
  if JIT then
    local ffi = require "ffi"
    pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } bw_ts; int clock_gettime(int, bw_ts *);")
    local ts = ffi.new("bw_ts")
    ffi.C.clock_gettime(1, ts)
    return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
  end
  if not burrow.backend then return require("burrow.core").now() end
  -- Lua 5.1-5.3 have no wall clock finer than a second; pump() spins, so
  -- the CPU time it uses is at most the time that passed (a bound under
  -- load only grows)
  return os.clock()
end

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("*a")
  p:close()
  return out
end

local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function pump(ws, cond, secs)
  local t0 = now()
  while not cond() and now() - t0 < (secs or 10) do ws:poll() end
  return cond()
end

describe("Lua API (" .. _VERSION .. (JIT and " LuaJIT" or "") .. ", " .. WHICH .. ")", function()
  local dir, ws

  before_each(function()
    dir = sh("mktemp -d /tmp/burrow-luaapi-XXXXXX"):gsub("%s+$", "")
    write(dir .. "/a.txt", "alpha\nbeta\n")
    ws = assert(burrow.open { roots = { { path = dir, mount = "/w" } } })
  end)

  after_each(function()
    if ws then ws:close() end
    os.execute("rm -rf '" .. dir .. "'")
  end)

  it("calls a tool and gets a table back", function()
    local res = assert(ws:call("read_file", { path = "/w/a.txt" }))
    assert.equal("1\talpha\n2\tbeta\n", res.content)
    assert.equal(2, res.total_lines)
  end)

  it("returns nil, message, code for tool errors", function()
    local res, msg, code = ws:call("read_file", { path = "/w/nope.txt" })
    assert.is_nil(res)
    assert.equal("ENOENT", code)
    assert.equal("ENOENT: /w/nope.txt does not exist", msg)
    res, msg, code = ws:call("read_file", { path = "/etc/passwd" })
    assert.is_nil(res)
    assert.equal("OUTSIDE_ROOT", code)
    res, msg, code = ws:call("no_such_tool", {})
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("refuses escapes under this Lua too: .., a symlink out, an absolute path (resolver "
    .. (os.getenv("BURROW_RESOLVER") or "default") .. ")", function()
    os.execute("ln -s /etc '" .. dir .. "/etc_link'")
    for _, p in ipairs { "/w/../etc/passwd", "/w/etc_link/passwd", "/w/etc_link", "/etc/passwd" } do
      local res, msg, code = ws:call("read_file", { path = p })
      assert.is_nil(res, p)
      assert.equal("OUTSIDE_ROOT", code, p .. ": " .. tostring(msg))
    end
    local res, _, code = ws:call("write_file", { path = "/w/etc_link/burrow-x", content = "x" })
    assert.is_nil(res)
    assert.equal("OUTSIDE_ROOT", code)
    -- the same through a call with a callback
    local got
    ws:call("read_file", { path = "/w/etc_link/passwd" }, function(r, m, c) got = { r, m, c } end)
    assert.is_true(pump(ws, function() return got ~= nil end))
    assert.is_nil(got[1])
    assert.equal("OUTSIDE_ROOT", got[3])
  end)

  it("a NUL byte cannot cut a tool name or a configuration short", function()
    -- C reads text up to a NUL: "read_file\0x" must not become read_file,
    -- and a config cut before its policies must not open without them
    local res, _, code = ws:call("read_file\0x", { path = "/w/a.txt" })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    if burrow.backend then -- YAML text crosses to C here (the 5.4 binding takes a table)
      local w, err = burrow.open("roots: [{path: '" .. dir .. "'}]\0\npolicies: [readonly]\n")
      assert.is_nil(w)
      assert.matches("NUL", err)
    end
    -- arguments are JSON: a NUL inside a string travels escaped
    assert(ws:call("write_file", { path = "/w/nul.txt", content = "a\0b" }))
    local f = assert(io.open(dir .. "/nul.txt", "rb"))
    assert.equal("a\0b", f:read("*a"))
    f:close()
  end)

  it("writes, and round-trips text with escapes and UTF-8", function()
    local text = 'quote " backslash \\ tab \t é ✓ 🙂\n'
    assert(ws:call("write_file", { path = "/w/u.txt", content = text }))
    local res = assert(ws:call("read_file", { path = "/w/u.txt" }))
    assert.equal("1\t" .. text, res.content)
  end)

  it("lists tools in the model formats", function()
    local mcp = assert(ws:tools())
    local names = {}
    for _, t in ipairs(mcp) do names[t.name] = true end
    assert.is_true(names.read_file and names.grep and true)
    local openai = assert(ws:tools { format = "openai" })
    assert.equal("function", openai[1].type)
    local anthropic = assert(ws:tools { format = "anthropic" })
    assert.is_table(anthropic[1].input_schema)
  end)

  it("call with a callback: a handle at once, the result in a later poll, handle:cancel()", function()
    local res, done
    local c = assert(ws:call("read_file", { path = "/w/a.txt" }, function(r, msg, code) res, done = r or { msg, code }, true end))
    assert.is_number(c.id)
    assert.is_true(pump(ws, function() return done end))
    assert.equal("1\talpha\n2\tbeta\n", res.content)
    local err
    ws:call("read_file", { path = "/etc/passwd" }, function(r, msg, code) err = { r, msg, code } end)
    assert.is_true(pump(ws, function() return err ~= nil end))
    assert.is_nil(err[1])
    assert.equal("OUTSIDE_ROOT", err[3])
    assert.matches("^OUTSIDE_ROOT: ", err[2])
    local line = ("a"):rep(200) .. ".\n"
    for i = 1, 3 do write(("%s/c%d.txt"):format(dir, i), line:rep(320)) end
    local partial
    c = ws:call("grep", { pattern = "a*a*a*\\d" }, function(r) partial = r end)
    pump(ws, function() return false end, 0.2)
    assert.is_nil(partial)
    assert.is_true(c:cancel())
    assert.is_true(pump(ws, function() return partial ~= nil end, 5))
    assert.is_true(partial.cancelled)
    assert.is_false(c:cancel(), "a finished call cannot be cancelled")
    assert.has_error(function() ws:call("read_file", { path = "/w/a.txt" }, "not a function") end)
    assert.has_error(function() ws:call(42, {}) end)
  end)

  it("submit runs off the caller's thread; poll delivers; errors as nil, msg, code", function()
    local got, err = {}, nil
    for i = 1, 10 do
      assert(ws:submit("grep", { pattern = "beta" }, function(res) got[i] = res end))
    end
    ws:submit("stat", { path = "/w/none" }, function(res, msg, code) err = { res, msg, code } end)
    assert.is_true(type(ws:fd()) == "number" and ws:fd() >= 0)
    assert.is_true(pump(ws, function() return #got == 10 and err ~= nil end))
    for i = 1, 10 do assert.equal("a.txt", got[i].matches[1].path) end
    assert.is_nil(err[1])
    assert.equal("ENOENT", err[3])
    assert.equal(0, ws:poll())
  end)

  it("cancel stops a running grep with a partial result", function()
    local line = ("a"):rep(200) .. ".\n"
    for i = 1, 3 do write(("%s/s%d.txt"):format(dir, i), line:rep(320)) end
    local res
    local id = ws:submit("grep", { pattern = "a*a*a*\\d" }, function(r) res = r end)
    pump(ws, function() return false end, 0.2)
    assert.is_nil(res)
    assert.is_true(ws:cancel(id))
    assert.is_true(pump(ws, function() return res ~= nil end, 5))
    assert.is_true(res.cancelled)
  end)

  it("caps are read by the LPeg grammar (the 5.4 LPeg, in LuaJIT too)", function()
    local w, err = burrow.open { roots = { { path = dir } }, caps = { max_file_size = "5XB" } }
    assert.is_nil(w)
    assert.matches('unknown unit "XB" at column 2', err, 1, true)
    w = assert(burrow.open { roots = { { path = dir } }, caps = { max_file_size = "1 KiB" } })
    local _, _, code = w:call("write_file", { path = "big.txt", content = ("x"):rep(2000) })
    w:close()
    assert.equal("TOO_LARGE", code)
  end)

  it("a policy's ask in a submitted call: ws:on_ask inside poll, \"later\" and ws:answer", function()
    write(dir .. "/asker.lua", "return { name = 'asker', check = function(req)\n"
      .. "  if req.operation == 'write' then return 'ask', 'writes need a yes' end\n  return 'allow'\nend }\n")
    local w = assert(burrow.open { roots = { { path = dir, mount = "/w" } }, policies = { dir .. "/asker.lua" } })
    local function write_call(name)
      local r = {}
      r.id = assert(w:submit("write_file", { path = "/w/" .. name, content = "x" }, function(res, msg, code)
        r.res, r.msg, r.code, r.done = res, msg, code, true
      end))
      return r
    end
    local r = write_call("none.txt") -- no hook: denied, as before
    assert.is_true(pump(w, function() return r.done end))
    assert.equal("POLICY_DENIED", r.code)
    assert.matches("cannot be asked", r.msg, 1, true)
    local seen, answer = {}, true
    w:on_ask(function(req, reason)
      seen[#seen + 1] = { req.call, req.tool, req.operation, req.path, reason, question = req.id }
      return answer, "said so"
    end)
    r = write_call("yes.txt")
    assert.is_true(pump(w, function() return r.done end))
    assert.equal("/w/yes.txt", r.res.path)
    assert.same({ r.id, "write_file", "write", "/w/yes.txt", "writes need a yes", question = seen[1].question }, seen[1])
    assert.are_not.equal(r.id, seen[1].question) -- a question has an id of its own
    answer = false
    r = write_call("no.txt")
    assert.is_true(pump(w, function() return r.done end))
    assert.matches("not approved (writes need a yes): said so", r.msg, 1, true)
    answer = "later"
    r = write_call("later.txt")
    assert.is_falsy(pump(w, function() return r.done end, 0.3))
    assert.equal(3, #seen)
    assert.is_false(w:answer(r.id, true), "the call's id answers no question")
    assert.is_true(w:answer(seen[3].question, true))
    assert.is_true(pump(w, function() return r.done end))
    assert.equal("/w/later.txt", r.res.path)
    w:on_ask(function() return "later" end, 200)
    r = write_call("timeout.txt")
    assert.is_true(pump(w, function() return r.done end))
    assert.matches("no answer within 200 ms", r.msg, 1, true)
    w:close()
  end)

  it("a closed workspace refuses calls", function()
    ws:close()
    assert.has_error(function() ws:call("read_file", { path = "/w/a.txt" }) end)
    ws = nil
  end)
end)
