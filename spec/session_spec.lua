-- burrow.mcp.session: a session's record as plain data, encoded and decoded
-- whole (what an HTTP session carries from one worker to the next).
local session = require "burrow.mcp.session"
local core = require "burrow.core"

describe("burrow.mcp.session", function()
  it("a new record has its id, principal and empty request table", function()
    local s = session.new { id = "http:abc", tenant = "t1", token = "0123456789abcdef" }
    assert.same({ id = "http:abc", tenant = "t1", token = "0123456789abcdef", next_id = 0, waiting = {} }, s)
  end)

  it("every field travels, one no list names included", function()
    local s = session.new { id = "x", tenant = "t" }
    s.protocol, s.log_level, s.client_caps = "2025-11-25", "info", { roots = { listChanged = true } }
    s.scope, s.packs = { "/w" }, { codex = { n = 2 } }
    s.waiting["burrow-1"], s.next_id = "roots", 1
    s.some_new_field = { a = 1 } -- added by a later change: no list to keep in step
    local text = assert(session.encode(s, { watcher = "w1" }))
    local back, extra = session.decode(text)
    assert.same(s, back)
    assert.same({ watcher = "w1" }, extra)
  end)

  it("what cannot travel keeps the session home (nil)", function()
    local s = session.new { id = "x" }
    s.waiting["burrow-1"] = function() end
    assert.is_nil(session.encode(s))
    local s2 = session.new { id = "y" }
    s2.packs = { f = io.stdout }
    assert.is_nil(session.encode(s2))
  end)

  it("the principal the listener admitted wins over the record's text", function()
    local s = session.new { id = "x", tenant = "a", token = "aaaa" }
    local text = assert(session.encode(s))
    local back = session.decode(text, { tenant = "b", token = "bbbb" })
    assert.equals("b", back.tenant)
    assert.equals("bbbb", back.token)
    assert.is_nil(session.decode("not json"))
    assert.is_nil(session.decode('{"session": 3}'))
  end)

  it("an undo store travels by its id and comes back as the store", function()
    local st = core.undo_store { cap = 1024 * 1024, max_records = 16 }
    local s = session.new { id = "x" }
    s.undo = st
    local text = assert(session.encode(s))
    assert.equals(st:id(), (session.undo_id(text)))
    local back = session.decode(text)
    assert.equals(st:id(), back.undo:id()) -- the store published under that id
    st:drop() -- the session ended: the id names nothing now
    assert.is_nil(session.decode(text).undo)
  end)

  it("a 2026-07-28 request's record: fresh from its _meta, the principal's stores inherited and kept", function()
    local base = session.new { id = "stdio", tenant = "default", token = "t0" }
    base.protocol, base.log_level, base.waiting["burrow-1"] = "2025-11-25", "debug", "roots"
    local s = session.stateless(base, "2026-07-28", { elicitation = {} }, { name = "c" }, nil)
    assert.equals("2026-07-28", s.protocol)
    assert.is_true(s.stateless)
    assert.is_nil(s.log_level) -- the request's own level, not the connection's
    assert.same({}, s.waiting) -- nothing of the session's own requests
    assert.equals("default", s.tenant)
    assert.equals("t0", s.token)
    s.packs = { made = true } -- made on first use by the request
    session.settle(base, s)
    assert.same({ made = true }, base.packs)
    assert.equals("2025-11-25", base.protocol)
  end)
end)
