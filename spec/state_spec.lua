-- The state store from Lua (host/src/lua/lstate.c): core.state_open for
-- the embedded backend, the counter file and Redis/Valkey (against a
-- redis-server this spec starts on a free port and stops; never the
-- system service), and core.state(), the process's own store, the same C
-- object for every Lua state of the process. Exactness under threads and
-- the million-key bound are the C suites' (host/test/test_state.c,
-- host/test/test_stateredis.c).

local H = require "helpers"
local core = H.core

local eventually = H.eventually

-- The behaviour both backends share.
local function shared_cases(open)
  it("adds up to a limit, and says so", function()
    local st = open()
    assert.same({ true, 3 }, { st:add("t", "c", 3, 10, 60) })
    assert.same({ true, 10 }, { st:add("t", "c", 7, 10, 60) })
    assert.same({ false, 10 }, { st:add("t", "c", 1, 10, 60) })
    assert.same({ true, 11 }, { st:add("t", "c", 1, nil, 60) }) -- nil: no limit
    assert.same({ true, 0 }, { st:add("t", "c", -50, -1, 60) }) -- never below 0
    assert.same({ true, 1 }, { st:add("u", "c", 1, 10, 60) }) -- another tenant's own
  end)

  it("marks a key once while it lives", function()
    local st = open()
    assert.is_true(st:once("t", "nonce", 60))
    assert.is_false(st:once("t", "nonce", 60))
    assert.is_true(st:once("other", "nonce", 60))
  end)

  it("counts a tenant's live entries, and deletes", function()
    local st = open()
    assert.equal(0, st:count("p"))
    st:once("p", "a", 60)
    st:add("p", "b", 1, -1, 60)
    st:once("q", "a", 60)
    assert.equal(2, st:count("p"))
    assert.is_true(st:del("p", "a"))
    assert.is_false(st:del("p", "a"))
    assert.equal(1, st:count("p"))
    assert.is_true(st:once("p", "a", 60)) -- deleted: first again
    assert.is_true(st:stats().entries >= 3)
  end)

  it("expires a mark and a counter's window", function()
    local st = open()
    assert.is_true(st:once("t", "long", 3600))
    assert.is_true(st:once("t", "short", 0.05))
    assert.is_true(eventually(function() return st:once("t", "short", 3600) end))
    assert.is_false(st:once("t", "long", 3600))
    st:add("t", "win", 5, -1, 0.05)
    assert.is_true(eventually(function() return select(2, st:add("t", "win", 1, -1, 0.05)) == 1 end))
  end)

  it("fails with nil, message, code on a bad ttl or a NUL in a name; raises on misuse", function()
    local st = open()
    local ok, msg, code = st:once("t", "k", 0)
    assert.is_nil(ok)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("ttl", msg)
    ok, msg, code = st:add("t", "a\0b", 1, -1, 60)
    assert.is_nil(ok)
    assert.equal("INVALID_ARGUMENT", code)
    assert.has_error(function() st:add("t", "k", "one", -1, 60) end)
    assert.has_error(function() st:once("t", "k") end)
    st:close()
    st:close() -- twice is harmless
    assert.has_error(function() st:once("t", "k", 60) end, "attempt to use a closed state store")
  end)
end

describe(H.tag("core.state_open{kind = 'memory'}"), function()
  after_each(H.cleanup)

  shared_cases(function() return assert(core.state_open { kind = "memory" }) end)

  it("keeps versioned records: get, compare-and-set, delete", function()
    local st = core.state_open {}
    assert.equal("memory", st:kind())
    assert.same({ false, 0 }, { st:get("t", "s") })
    local done, v1 = st:cas("t", "s", 0, "one", 60)
    assert.is_true(done)
    assert.is_true(v1 > 0)
    assert.same({ "one", v1 }, { st:get("t", "s") })
    -- create-only loses to the record there; a stale version loses too
    assert.same({ false, v1 }, { st:cas("t", "s", 0, "two", 60) })
    local done2, v2 = st:cas("t", "s", v1, "two", 60)
    assert.is_true(done2)
    assert.is_true(v2 > v1)
    assert.same({ false, v2 }, { st:cas("t", "s", v1, "late", 60) })
    assert.same({ "two", v2 }, { st:get("t", "s") })
    assert.is_false(st:del("t", "s", v1)) -- at a stale version: kept
    assert.is_true(st:del("t", "s", v2))
    assert.same({ false, 0 }, { st:get("t", "s") })
    -- bytes, not text
    assert.is_true((st:cas("t", "bin", 0, "a\0b\255", 60)))
    assert.equal("a\0b\255", (st:get("t", "bin")))
    -- a mark's key is no record
    st:once("t", "m", 60)
    local ok, _, code = st:get("t", "m")
    assert.is_nil(ok)
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("fails closed when a tenant's share is full, and another tenant goes on", function()
    local st = core.state_open { max_entries_per_tenant = 5, max_bytes_per_tenant = 4096, max_entries = 8 }
    for i = 1, 5 do assert.is_true(st:once("a", "k" .. i, 3600)) end
    local ok, msg, code = st:once("a", "k6", 3600)
    assert.is_nil(ok)
    assert.equal("TOO_LARGE", code)
    assert.matches("max_entries_per_tenant", msg, 1, true)
    ok, msg, code = st:add("a", "calls", 1, 10, 60)
    assert.is_nil(ok) -- never a yes
    assert.equal("TOO_LARGE", code)
    assert.is_true(st:once("b", "k1", 3600))
    assert.equal(5, st:count("a"))
    for i = 1, 5 do assert.is_false(st:once("a", "k" .. i, 3600)) end -- none was dropped
    -- the byte share
    ok, msg, code = st:cas("c", "big", 0, ("x"):rep(5000), 60)
    assert.is_nil(ok)
    assert.matches("max_bytes_per_tenant", msg, 1, true)
    -- the store's own cap: 8 entries in all
    st:once("b", "k2", 3600)
    assert.is_true(st:once("c", "k", 3600))
    ok, msg, code = st:once("d", "k", 3600)
    assert.is_nil(ok)
    assert.matches("max_entries", msg, 1, true)
    assert.same({ entries = 8, bytes = st:stats().bytes }, st:stats())
  end)

  it("makes room from a tenant's expired entries only", function()
    local st = core.state_open { max_entries_per_tenant = 3 }
    for i = 1, 3 do st:once("a", "short" .. i, 0.05) end
    assert.is_true(eventually(function() return st:once("a", "next", 3600) == true end))
    assert.is_true(st:count("a") <= 3)
  end)
end)

describe(H.tag("core.state_open{kind = 'file'}"), function()
  after_each(H.cleanup)

  shared_cases(function() return assert(core.state_open { kind = "file", path = H.tmpfile("state.db") }) end)

  it("has no records, and says so", function()
    local st = assert(core.state_open { kind = "file", path = H.tmpfile("state.db") })
    assert.equal("file", st:kind())
    local ok, msg, code = st:cas("t", "s", 0, "x", 60)
    assert.is_nil(ok)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("not records", msg, 1, true)
  end)

  it("is shared by two handles and by another process, beside the approval marks", function()
    local p = H.tmpfile("state.db")
    local a = assert(core.state_open { kind = "file", path = p })
    local b = assert(core.state_open { kind = "file", path = p })
    local host = assert(core.store_open(p)) -- the approval states' store, as approvals.lua opens it
    assert.is_true(host:once("once:mrtr:abc", os.time() + 600))
    assert.same({ true, 1 }, { a:add("acme", "calls", 1, 3, 600) })
    assert.same({ true, 2 }, { b:add("acme", "calls", 1, 3, 600) })
    local out, code = H.lua_child(([[
      local st = assert(require("burrow.core").state_open { kind = "file", path = %q })
      print(st:add("acme", "calls", 1, 3, 600))
      print(st:add("acme", "calls", 1, 3, 600))
      print(st:once("acme", "nonce", 600))
    ]]):format(p), 30)
    assert.equal(0, code, out)
    assert.equal("true\t3\nfalse\t3\ntrue\n", out)
    assert.is_false(a:once("acme", "nonce", 600))
    assert.equal(2, a:count("acme"))
    assert.is_false(host:once("once:mrtr:abc", os.time() + 600)) -- still a replay
  end)

  it("refuses a path it cannot open with nil, message, code", function()
    local st, msg, code = core.state_open { kind = "file", path = H.tmpdir() .. "/no/such/dir" }
    assert.is_nil(st)
    assert.equal("ENOENT", code)
    assert.matches("no/such/dir", msg, 1, true)
  end)
end)

describe(H.tag("core.state(), the process's store"), function()
  after_each(H.cleanup)

  it("is one object in a Lua state, the embedded backend", function()
    assert.equal(core.state(), core.state())
    assert.equal("memory", core.state():kind())
    core.state():close() -- a closed one is replaced
    assert.equal("memory", core.state():kind())
  end)

  it("is the same store in another Lua state on another thread", function()
    -- an operator's tool adding to the process store; ws:call runs it in
    -- this state, ws:submit in the API host's own state and worker thread
    local tools, dir = H.tmpdir(), H.tmpdir()
    H.write(tools, "bump.lua", [[
return {
  name = "bump",
  description = "Add one to a counter of the process's state store.",
  input_schema = { type = "object", properties = { key = { type = "string" } }, required = { "key" } },
  handler = function(ctx, args)
    local added, value = require("burrow.core").state():add("spec", args.key, 1, -1, 600)
    return { added = added, value = value }
  end,
}
]])
    local key = ("two-states-%d-%d"):format(os.time(), math.random(1 << 30))
    local ws = H.open { roots = { { path = dir } }, tool_path = tools, tools = { "bump" } }
    assert.equal(1, ws:call("bump", { key = key }).value)
    local res
    assert(ws:submit("bump", { key = key }, function(r) res = r end))
    local t0 = core.now()
    while not res and core.now() - t0 < 30 do ws:poll() end
    assert.is_table(res)
    assert.equal(2, res.value) -- the other state saw this one's addition
    assert.same({ true, 3 }, { core.state():add("spec", key, 1, -1, 600) })
  end)
end)

describe(H.tag("core.state_open{kind = 'redis'}"), function()
  local srv
  setup(function()
    srv = H.redis_server()
    if not srv.missing then srv.start() end
  end)
  teardown(function()
    if srv and not srv.missing then srv.stop() end
    H.cleanup()
  end)

  local function open(opts)
    srv.need()
    srv.flush()
    local o = { kind = "redis", url = srv.url }
    for k, v in pairs(opts or {}) do o[k] = v end
    return assert(core.state_open(o))
  end

  shared_cases(open)

  it("keeps versioned records: get, compare-and-set, delete", function()
    local st = open()
    assert.equal("redis", st:kind())
    assert.same({ false, 0 }, { st:get("t", "s") })
    local done, v1 = st:cas("t", "s", 0, "one", 60)
    assert.is_true(done)
    assert.is_true(v1 > 0)
    assert.same({ "one", v1 }, { st:get("t", "s") })
    assert.same({ false, v1 }, { st:cas("t", "s", 0, "two", 60) })
    local done2, v2 = st:cas("t", "s", v1, "two", 60)
    assert.is_true(done2)
    assert.is_true(v2 > v1)
    assert.same({ false, v2 }, { st:cas("t", "s", v1, "late", 60) })
    assert.is_false(st:del("t", "s", v1))
    assert.is_true(st:del("t", "s", v2))
    assert.same({ false, 0 }, { st:get("t", "s") })
    assert.is_true((st:cas("t", "bin", 0, "a\0b\255", 60)))
    assert.equal("a\0b\255", (st:get("t", "bin")))
    st:once("t", "m", 60)
    local ok, _, code = st:get("t", "m")
    assert.is_nil(ok)
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("fails closed when a tenant's share is full, and another tenant goes on", function()
    local st = open { max_entries_per_tenant = 5, max_bytes_per_tenant = 4096 }
    for i = 1, 5 do assert.is_true(st:once("a", "k" .. i, 3600)) end
    local ok, msg, code = st:once("a", "k6", 3600)
    assert.is_nil(ok)
    assert.equal("TOO_LARGE", code)
    assert.matches("max_entries_per_tenant", msg, 1, true)
    ok, _, code = st:add("a", "calls", 1, 10, 60)
    assert.is_nil(ok)
    assert.equal("TOO_LARGE", code)
    assert.is_true(st:once("b", "k1", 3600))
    assert.equal(5, st:count("a"))
    for i = 1, 5 do assert.is_false(st:once("a", "k" .. i, 3600)) end
    ok, msg = st:cas("c", "big", 0, ("x"):rep(5000), 60)
    assert.is_nil(ok)
    assert.matches("max_bytes_per_tenant", msg, 1, true)
  end)

  it("is one quota for two handles and another process", function()
    local a = open()
    local b = assert(core.state_open { kind = "redis", url = srv.url })
    assert.same({ true, 1 }, { a:add("acme", "calls", 1, 3, 600) })
    assert.same({ true, 2 }, { b:add("acme", "calls", 1, 3, 600) })
    local out, code = H.lua_child(([[
      local st = assert(require("burrow.core").state_open { kind = "redis", url = %q })
      print(st:add("acme", "calls", 1, 3, 600))
      print(st:add("acme", "calls", 1, 3, 600))
      print(st:once("acme", "nonce", 600))
    ]]):format(srv.url), 30)
    assert.equal(0, code, out)
    assert.equal("true\t3\nfalse\t3\ntrue\n", out)
    assert.is_false(a:once("acme", "nonce", 600))
    assert.equal(2, b:count("acme"))
  end)

  it("fails every call with STORE_UNAVAILABLE while the server is down, and recovers with no reopening", function()
    local st = open { timeout = 1 }
    assert.same({ true, 1 }, { st:add("t", "c", 1, -1, 60) })
    srv.stop()
    for _, call in ipairs {
      function() return st:add("t", "c", 1, -1, 60) end,
      function() return st:once("t", "m", 60) end,
      function() return st:get("t", "r") end,
      function() return st:cas("t", "r", 0, "x", 60) end,
      function() return st:del("t", "c") end,
      function() return st:count("t") end,
      function() return st:stats() end,
    } do
      local ok, msg, code = call()
      assert.is_nil(ok)
      assert.equal("STORE_UNAVAILABLE", code)
      assert.matches("^STORE_UNAVAILABLE: state store %(redis%): 127%.0%.0%.1:" .. srv.port, msg)
    end
    srv.start()
    assert.is_true(eventually(function() return st:add("t", "c", 1, -1, 60) == true end))
    assert.is_true(st:once("t", "m", 60)) -- a new server: nothing kept (no persistence)
  end)

  it("takes its password from a file, never from the URL", function()
    local pw = H.write(srv.dir, "password", "Sp3c-secret\n")
    H.sh(("redis-cli -p %d config set requirepass Sp3c-secret"):format(srv.port))
    local st, msg, code = core.state_open { kind = "redis", url = srv.url }
    assert.is_nil(st)
    assert.equal("STORE_UNAVAILABLE", code)
    assert.matches("NOAUTH", msg, 1, true)
    st = assert(core.state_open { kind = "redis", url = srv.url, password_file = pw })
    assert.is_true(st:once("t", "k", 60))
    st, msg, code = core.state_open { kind = "redis", url = srv.url:gsub("//", "//:Sp3c-secret@") }
    assert.is_nil(st)
    assert.equal("INVALID_ARGUMENT", code)
    assert.is_nil(msg:find("Sp3c", 1, true))
    H.sh(("redis-cli -p %d -a Sp3c-secret --no-auth-warning config set requirepass ''"):format(srv.port))
  end)

  -- issue 45: "after 50,000 stateless calls of one token the quota state
  -- holds one record for that principal (asserted on the store, embedded
  -- and Redis) and the tenant's other tokens are served" (the embedded
  -- half: spec/policy/principal_spec.lua)
  it("50,000 requests of one token, each a session of its own: one budget for it in Redis", function()
    local st = open()
    local root = H.tmpdir()
    H.write(root, "file.txt", "hello\n")
    local ws = assert(require("burrow").open { roots = { { path = root } }, state = st,
      policies = { { name = "quotas", max_calls_per_minute = 1000000, max_bytes_written = 1000 } } })
    local function call(tool, args, k, n)
      return ws:call(tool, args, { session = { id = "http:" .. n, tenant = "team", token = k } })
    end
    for i = 1, 50000 do assert(call("stat", { path = "file.txt" }, "aaaa", i)) end
    -- one calls-per-minute counter (two if the minute turned meanwhile)
    local n = st:count("team")
    assert.is_true(n >= 1 and n <= 2, tostring(n))
    assert(call("write_file", { path = "w.txt", content = ("x"):rep(600) }, "aaaa", 0))
    assert.is_true(st:count("team") <= 3, "and one byte budget")
    assert(call("write_file", { path = "v.txt", content = ("y"):rep(900) }, "bbbb", 0), "another token: served")
    local _, msg, code = call("write_file", { path = "u.txt", content = ("z"):rep(600) }, "aaaa", 99)
    assert.equal("POLICY_DENIED", code)
    assert.truthy(msg:find("(600 used)", 1, true), msg)
    ws:close()
    st:close()
  end)

  it("raises on misuse and refuses a bad URL", function()
    assert.has_error(function() core.state_open { kind = "redis" } end, "state_open: a redis store needs a url")
    assert.has_error(function() core.state_open { kind = "redis", url = srv.url, verify = "no" } end)
    assert.has_error(function() core.state_open { kind = "redis", url = srv.url, timeout = -1 } end)
    local st, _, code = core.state_open { kind = "redis", url = "http://127.0.0.1" }
    assert.is_nil(st)
    assert.equal("INVALID_ARGUMENT", code)
  end)
end)
