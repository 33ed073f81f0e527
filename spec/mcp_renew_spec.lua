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
    local key = s:mrtr_key()
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
    assert.equal(key, s:mrtr_key()) -- the signing key drawn once stays
    -- and it still answers
    local out = {}
    ch.send = function(m) out[#out + 1] = m end
    s:handle { jsonrpc = "2.0", id = 1, method = "ping" }
    assert.equal(1, #out)
  end)
end)
