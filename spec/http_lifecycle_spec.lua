-- burrow.server.http_start's lifecycle (host/src/server/lhttp.c), in the caller's
-- own process as an embedding host runs it: a start that fails and a
-- worker that fails both leave the caller's signal mask as it was, a
-- failing worker ends http:wait with "failed" without a signal to the
-- process, and nothing of the listener is left behind (its port is free
-- again).

require "burrow" -- offers burrow.server from the core.so it loaded
local server = require "burrow.server"

-- The calling thread's blocked signals (the kernel's word for it).
local function blocked()
  local f = assert(io.open("/proc/thread-self/status"))
  local s = f:read("a")
  f:close()
  return s:match("SigBlk:%s*(%x+)")
end

-- A port nobody listens on now.
local function free_port()
  local h = assert(server.http_start { port = 0, workers = 1, module = "no.such.module.here" })
  local port = h:port()
  assert.equal("failed", h:wait())
  return port
end

describe("server.http_start lifecycle", function()
  it("a worker that fails ends wait() with 'failed'; the signal mask is given back", function()
    local before = blocked()
    local h = assert(server.http_start { port = 0, workers = 2, module = "no.such.module.here" })
    assert.are_not.equal(before, blocked(), "SIGINT, SIGTERM, SIGHUP are blocked while it runs")
    assert.equal("failed", h:wait())
    assert.equal(before, blocked())
    assert.has_error(function() h:port() end, "the HTTP server is stopped")
  end)

  it("a start that fails (the port is taken) says why and leaves the mask as it was", function()
    local before = blocked()
    local port = free_port()
    -- hold the port with a first listener, whose workers fail at once
    local first = assert(server.http_start { port = port, workers = 1, module = "no.such.module.here" })
    local second, err = server.http_start { port = port, workers = 1 }
    assert.is_nil(second)
    assert.matches("cannot listen", err)
    assert.equal("failed", first:wait())
    assert.equal(before, blocked())
    -- the first listener's port is free again
    local third = assert(server.http_start { port = port, workers = 1, module = "no.such.module.here" })
    assert.equal(port, third:port())
    assert.equal("failed", third:wait())
  end)

  it("a bad token hash is an error, and the mask is still the caller's", function()
    local before = blocked()
    assert.has_error(function() server.http_start { port = 0, tokens = { { sha256 = "short" } } } end,
      "token 1: sha256 must be 64 hex digits")
    assert.equal(before, blocked())
  end)
end)
