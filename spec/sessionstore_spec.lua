-- burrow.mcp.sessionstore: a session's record in the deployment's store, as
-- two instances see it (two Server records over one embedded store here;
-- over Redis and three real instances: test/e2e/sessions_shared.test.mjs).

local H = require "helpers"
local core = H.core
local ss = require "burrow.mcp.sessionstore"
local session = require "burrow.mcp.session"

local SID = ("ab"):rep(16)

local function new_record(fields)
  return session.new(fields or { id = "http:abababab", tenant = "t1", token = "0123456789abcdef" })
end

describe("burrow.mcp.sessionstore", function()
  local st
  before_each(function() st = core.state_open { kind = "memory" } end)
  after_each(function() st:close() end)

  it("keeps what a call changed, and nothing of one process (its undo store) nor the principal", function()
    local s = new_record()
    s.protocol, s.log_level = "2025-06-18", "info"
    local base = { version = 0 }
    assert.is_true(ss.persist(st, s, SID, s.token, base, 1800))
    assert.is_true(base.version > 0)
    local v = st:get("t1", "session/" .. SID)
    assert.equal("burrow-session 1 0123456789abcdef\n", v:sub(1, 34))
    local f, ver = ss.fetch(st, "t1", SID)
    assert.equal(base.version, ver)
    assert.equal("2025-06-18", f.protocol)
    assert.equal("info", f.log_level)
    assert.is_nil(f.tenant)
    assert.is_nil(f.token)
    assert.is_nil(f._at)
  end)

  it("writes nothing when a call changed nothing", function()
    local s = new_record()
    s.protocol = "2025-06-18"
    local base = { version = 0 }
    assert.is_true(ss.persist(st, s, SID, s.token, base, 1800))
    local v1 = base.version
    assert.is_true(ss.persist(st, s, SID, s.token, base, 1800))
    assert.equal(v1, base.version)
    local _, ver = ss.fetch(st, "t1", SID)
    assert.equal(v1, ver)
  end)

  it("writes an unchanged record again once a quarter of its idle time has passed", function()
    local s = new_record()
    local base = { version = 0 }
    assert.is_true(ss.persist(st, s, SID, s.token, base, 1800))
    local v1 = base.version
    base.at = base.at - 451 -- as if written 451 s ago
    assert.is_true(ss.persist(st, s, SID, s.token, base, 1800))
    assert.is_true(base.version > v1)
  end)

  it("merges two instances' changes to different fields, the later write winning on the same field", function()
    local a = new_record()
    a.protocol, a.log_level = "2025-06-18", "info"
    local base_a = { version = 0 }
    assert.is_true(ss.persist(st, a, SID, a.token, base_a, 1800))
    -- instance B reads the record
    local f, ver, text, at = ss.fetch(st, "t1", SID)
    local b = new_record()
    ss.overlay(b, f)
    local base_b = { version = ver, text = text, at = at }
    -- A changes the log level, B the client's roots, both from the same version
    a.log_level = "debug"
    assert.is_true(ss.persist(st, a, SID, a.token, base_a, 1800))
    b.client_root_list = { "file:///w" }
    assert.is_true(ss.persist(st, b, SID, b.token, base_b, 1800))
    local g = ss.fetch(st, "t1", SID)
    assert.equal("debug", g.log_level)
    assert.same({ "file:///w" }, g.client_root_list)
    assert.equal("2025-06-18", g.protocol)
  end)

  it("overlay keeps the principal and what stays on this instance", function()
    local s = new_record()
    s.undo = "a handle of this process"
    s.stale = true
    ss.overlay(s, { protocol = "2025-11-25", tenant = "other", token = "ffff", undo = "theirs" })
    assert.equal("2025-11-25", s.protocol)
    assert.equal("t1", s.tenant)
    assert.equal("0123456789abcdef", s.token)
    assert.equal("a handle of this process", s.undo)
    assert.is_nil(s.stale)
    assert.same({}, s.waiting)
  end)

  it("a record deleted meanwhile (the session ended elsewhere) is not made again", function()
    local s = new_record()
    local base = { version = 0 }
    assert.is_true(ss.persist(st, s, SID, s.token, base, 1800))
    assert.is_true(st:del("t1", "session/" .. SID))
    s.log_level = "debug"
    local ok, why = ss.persist(st, s, SID, s.token, base, 1800)
    assert.is_nil(ok)
    assert.equal("gone", why)
    assert.is_false((st:get("t1", "session/" .. SID)))
  end)

  it("answers wait in the store for their asker, each taken by the call that asked it, bounded", function()
    for i = 1, 3 do assert.is_true(ss.post_answer(st, "t1", SID, { id = "q" .. i, result = {} })) end
    local got = ss.take_answers(st, "t1", SID, "q2")
    assert.equal(1, #got)
    assert.matches('"id":"q2"', got[1])
    assert.same({}, ss.take_answers(st, "t1", SID, "q2"))
    assert.equal(1, #ss.take_answers(st, "t1", SID, "q1"))
    assert.equal(1, #ss.take_answers(st, "t1", SID, "q3"))
    assert.is_false((st:get("t1", "answers/" .. SID))) -- the last one taken: the record goes
    for i = 1, ss.MAX_ANSWERS do assert.is_true(ss.post_answer(st, "t1", SID, { id = i, result = {} })) end
    local ok, why = ss.post_answer(st, "t1", SID, { id = 0, result = {} })
    assert.is_nil(ok)
    assert.matches("too many", why)
  end)

  it("tells an answer from anything else", function()
    assert.is_true(ss.is_answer { id = 1, result = {} })
    assert.is_true(ss.is_answer { id = "x", error = { code = 1 } })
    assert.is_false(ss.is_answer { id = 1, method = "ping" })
    assert.is_false(ss.is_answer { method = "notifications/initialized" })
    assert.is_false(ss.is_answer(nil))
  end)
end)
