-- Server:renew (lua/burrow/mcp/init.lua): an HTTP worker keeps one Server
-- per principal for its stateless requests and renews it for each; nothing
-- a request set on it may reach the next, whatever the field's name.

local H = require "helpers"
local mcp = require "burrow.mcp"
local session = require "burrow.mcp.session"

describe(H.tag("Server:renew"), function()
  after_each(H.cleanup)

  it("drops every field a request set, keeps what mcp.new was given, and takes the new record", function()
    local ws = H.workspace { ["a.txt"] = "x\n" }
    local ch = mcp.channel()
    local s = mcp.new(ws, { channel = ch, approval_ttl = 60 })
    local key = require("burrow.mcp.approvals").key(s)
    s.pending[7] = function() end
    s.subs["file:///a.txt"] = 1
    s.batch, s.meanwhile, s.some_field_added_later = {}, true, "left by a request"
    local rec = session.new { id = "http:next" }
    assert.equal(s, s:renew(rec))
    assert.equal(rec, s.session)
    assert.same({}, s.pending)
    assert.same({}, s.subs)
    assert.same({}, s.listens)
    assert.is_nil(s.batch)
    assert.is_nil(s.meanwhile)
    assert.is_nil(s.some_field_added_later)
    assert.equal(ws, s.ws)
    assert.equal(ch, s.channel)
    assert.equal(60, s.approval_ttl)
    assert.equal(key, require("burrow.mcp.approvals").key(s)) -- the signing key drawn once stays
    -- and it still answers
    local out = {}
    ch.send = function(m) out[#out + 1] = m end
    s:handle { jsonrpc = "2.0", id = 1, method = "ping" }
    assert.equal(1, #out)
  end)
end)

-- mcp.renew_channel (lua/burrow/mcp/init.lua): an HTTP worker's channel
-- serves one request after another (lua/burrow/transport/http.lua renews
-- it at the start of each); nothing a request set on it may reach the
-- next, whatever the field's name.
describe(H.tag("mcp.renew_channel"), function()
  after_each(H.cleanup)
  it("drops every field a request set, keeps what the channel was made of, and takes the next request's", function()
    local sent = {}
    local ch = mcp.renewable { send = function(_, m) sent[#sent + 1] = m end, begin = function() return false end,
      limit = 3 }
    -- a request: the transport's fields, the Server's during its call, and one added later
    mcp.renew_channel(ch, { sid = "a", stream = 4, param_headers = { x = "1" }, can_listen = true })
    ch.awaiting, ch.listening, ch.detached, ch.persist = 7, true, true, function() end
    ch.some_field_added_later = "left by a request"
    assert.equal(ch, mcp.renew_channel(ch, { sid = "b" }))
    for _, k in ipairs { "stream", "param_headers", "can_listen", "awaiting", "listening", "detached",
      "persist", "some_field_added_later" } do
      assert.is_nil(ch[k], k)
    end
    assert.equal("b", ch.sid)
    assert.equal(3, ch.limit)
    assert.is_false(ch:begin())
    ch:send("m")
    assert.same({ "m" }, sent)
    -- a field the channel was made with is as it was made, whatever a request set it to
    ch.limit, ch.send = 9, function() end
    mcp.renew_channel(ch, { sid = "c" })
    assert.equal(3, ch.limit)
    ch:send("n")
    assert.same({ "m", "n" }, sent)
  end)

  it("a request that became a task leaves nothing: the next request's answer goes out", function()
    local ws = H.workspace { ["a.txt"] = "x\n" }
    local out = {}
    -- as http.lua's: once a task's request is answered, the call's sends go nowhere
    local ch = mcp.renewable { send = function(self, m)
      if self.detached then return 0 end
      out[#out + 1] = m
    end, begin = function() return false end, finish = function() end, cancelled = function() return false end }
    local s = mcp.new(ws, { channel = ch })
    for i = 1, 3 do
      mcp.renew_channel(ch, { sid = "r" .. i })
      s:renew(session.new { id = "http:r" .. i })
      s:handle { jsonrpc = "2.0", id = i, method = "ping" }
      ch.detached = true -- what a request that became a task leaves
    end
    assert.equal(3, #out)
  end)
end)
