-- quotas key on the principal (issue 45): the request's tenant and token.
-- A stateless MCP request is a session record of its own; 50,000 of them
-- from one token leave one budget in the state store, not 50,000, and the
-- tenant's other tokens are served throughout.
local H = require "helpers"
local burrow = require "burrow"
local core = require "burrow.core"

describe(H.tag("quotas: one budget per principal"), function()
  local root, ws, store

  before_each(function()
    root = H.tmpdir()
    H.write(root, "file.txt", "hello\n")
    store = core.state_open { kind = "memory" }
    ws = assert(burrow.open { roots = { { path = root } }, resolver = H.RESOLVER, state = store,
      policies = { { name = "quotas", max_calls_per_minute = 1000000, max_bytes_written = 1000 } } })
  end)

  after_each(function()
    ws:close()
    store:close()
    H.cleanup()
  end)

  -- one call as a request of its own (a fresh record, as a stateless
  -- request gets), of tenant t and token k
  local function call(tool, args, t, k, n)
    return ws:call(tool, args, { session = { id = "http:" .. n, tenant = t, token = k } })
  end

  it("50,000 requests of one token, each its own session: the store holds that principal's budget once", function()
    for i = 1, 50000 do
      local res, msg = call("stat", { path = "file.txt" }, "team", "aaaa", i)
      assert(res, msg)
    end
    -- one calls-per-minute counter (two if the minute turned meanwhile)
    local n = store:count("team")
    assert.is_true(n >= 1 and n <= 2, tostring(n))
    local res, msg = call("write_file", { path = "w.txt", content = ("x"):rep(600) }, "team", "aaaa", 0)
    assert(res, msg)
    assert.is_true(store:count("team") <= 3, "and one byte budget")
    -- another token of the tenant: a budget of its own, served
    res, msg = call("write_file", { path = "v.txt", content = ("y"):rep(900) }, "team", "bbbb", 0)
    assert(res, msg)
    -- the first token's budget is spent by what it wrote, in any session
    local _, m2, code = call("write_file", { path = "u.txt", content = ("z"):rep(600) }, "team", "aaaa", 99)
    assert.equals("POLICY_DENIED", code)
    assert.truthy(m2:find("1000 bytes this client may write (600 used)", 1, true), m2)
  end)

  it("a store that cannot take the count denies the call (fail closed), with the store's reason", function()
    local tiny = core.state_open { kind = "memory", max_entries_per_tenant = 1 }
    local w2 = assert(burrow.open { roots = { { path = root } }, resolver = H.RESOLVER, state = tiny,
      policies = { { name = "quotas", max_calls_per_minute = 10, max_bytes_written = 1000 } } })
    -- the first call takes the tenant's one entry (its minute's count)
    assert(w2:call("stat", { path = "file.txt" }, { session = { id = "a", tenant = "t", token = "k" } }))
    -- a write needs a second entry (the byte budget): refused, nothing written
    local res, msg, code = w2:call("write_file", { path = "n.txt", content = "n" },
      { session = { id = "a", tenant = "t", token = "k" } })
    assert.is_nil(res)
    assert.equals("POLICY_DENIED", code)
    assert.truthy(msg:find("state store did not answer", 1, true), msg)
    assert.truthy(msg:find("max_entries_per_tenant", 1, true), msg)
    assert.is_false(H.exists(root, "n.txt"))
    w2:close()
    tiny:close()
  end)

  it("an operator policy's state.* works on the deployment's store (here: a file allowed to be read once per token)", function()
    H.write(root, "once.lua", [[
return { name = "once", scope = "call", check = function(req)
  if req.operation ~= "read" then return "allow" end
  local first, why = state.once(req.tenant or "default", "once/" .. (req.token or "-") .. "/" .. req.path, 60)
  if first == nil then return "deny", why end
  return first and "allow" or "deny", "read once already"
end }]])
    local w2 = assert(burrow.open { roots = { { path = root } }, resolver = H.RESOLVER, state = store,
      policies = { root .. "/once.lua" } })
    local s1 = { session = { id = "1", tenant = "t", token = "k1" } }
    local s2 = { session = { id = "2", tenant = "t", token = "k2" } }
    assert(w2:call("read_file", { path = "file.txt" }, s1))
    local _, _, code = w2:call("read_file", { path = "file.txt" }, s1)
    assert.equals("POLICY_DENIED", code)
    assert(w2:call("read_file", { path = "file.txt" }, s2), "another token: its own mark")
    assert.equals(2, store:count("t"))
    w2:close()
  end)

  -- issue 45: "when the store is unreachable, a call that needs it fails
  -- closed with its own error code". A Redis store nobody answers (port 9
  -- on loopback: nothing listens there), opened as an outage the
  -- workspace outlives.
  it("a store that does not answer: a policy's refusal is STORE_UNAVAILABLE, one that does without it is served", function()
    local down = assert(core.state_open { kind = "redis", url = "redis://127.0.0.1:9/0", outage_ok = true })
    H.write(root, "lenient.lua", [[
return { name = "lenient", scope = "call", check = function(req)
  state.add(req.tenant or "default", "seen", 1, -1, 60) -- a count it can do without
  return "allow"
end }]])
    H.write(root, "strict.lua", [[
return { name = "strict", scope = "call", check = function(req)
  if req.operation ~= "write" then return "allow" end
  assert(state.add(req.tenant or "default", "writes", 1, -1, 60)) -- raises on the outage
  return "allow"
end }]])
    H.write(root, "mine.lua", [[
return { name = "mine", scope = "call", check = function(req)
  return req.path == "no.txt" and "deny" or "allow", "not this one"
end }]])
    local s = { session = { id = "a", tenant = "t", token = "k" } }
    local function open(policies)
      return assert(burrow.open { roots = { { path = root } }, resolver = H.RESOLVER, state = down, policies = policies })
    end
    local q = open { { name = "quotas", max_bytes_written = 1000 } }
    local res, msg, code = q:call("write_file", { path = "q.txt", content = "q" }, s)
    assert.is_nil(res)
    assert.equals("STORE_UNAVAILABLE", code)
    assert.truthy(msg:find("quota: the state store did not answer", 1, true), msg)
    assert.is_false(H.exists(root, "q.txt"))
    assert(q:call("stat", { path = "file.txt" }, s), "a read needs no count")
    q:close()
    local w = open { root .. "/lenient.lua", root .. "/strict.lua", root .. "/mine.lua" }
    assert(w:call("read_file", { path = "file.txt" }, s), "lenient does without the count")
    res, msg, code = w:call("write_file", { path = "s.txt", content = "s" }, s)
    assert.is_nil(res)
    assert.equals("STORE_UNAVAILABLE", code, msg) -- strict failed on the outage
    assert.is_false(H.exists(root, "s.txt"))
    w:close()
    local m = open { root .. "/lenient.lua", root .. "/mine.lua" }
    _, msg, code = m:call("write_file", { path = "no.txt", content = "n" }, s)
    assert.equals("POLICY_DENIED", code, msg) -- its own judgement, though lenient met the outage first
    m:close()
    down:close()
  end)
end)
