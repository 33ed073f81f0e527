-- burrow.server.http_start's lifecycle (host/src/server/lhttp.c), in the caller's
-- own process as an embedding host runs it: a start that fails and a
-- worker that fails both leave the caller's signal mask as it was, a
-- failing worker ends http:wait with "failed" without a signal to the
-- process, and nothing of the listener is left behind (its port is free
-- again).

require "burrow" -- offers burrow.server from beside the core.so it loaded
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

  -- With the fault shim (build/faults.so) failing the Nth pthread_create,
  -- for every N a start makes, or bind: the start fails with an error,
  -- and the process is left as it was, no thread of the listener behind
  -- and the signal mask the caller's (a child Lua per case: the shim must
  -- be preloaded). A start that does not fail is waited to its end.
  it("a start failing at each thread it makes, or at bind, leaves no thread and the mask as it was", function()
    local H = require "helpers"
    local shim = H.REPO .. "/" .. (os.getenv("BURROW_BUILD") or "build") .. "/faults.so"
    local child = os.tmpname()
    local f = assert(io.open(child, "w"))
    f:write([=[
package.path = "lua/?.lua;lua/?/init.lua;" .. package.path
package.cpath = (os.getenv("BURROW_BUILD") or "build") .. "/lua/?.so;" .. package.cpath
require "burrow"
local server = require "burrow.server"
local function status(file, key)
  local fh = assert(io.open(file))
  local s = fh:read("a")
  fh:close()
  return s:match(key .. ":%s*(%S+)")
end
local t0, m0 = status("/proc/self/status", "Threads"), status("/proc/thread-self/status", "SigBlk")
local ok, h, err = pcall(server.http_start, { port = 0, workers = 2, module = "no.such.module.here" })
local how = not ok and "raised" or h and "started" or "refused"
if ok and h then h:wait() end
-- a thread that has been joined is gone at once; one left running is
-- still there after 5 s (waited for as a state, not a time)
local sleep, now = require("system").sleep, require("system").gettime
local until_t = now() + 5
while status("/proc/self/status", "Threads") ~= t0 and now() < until_t do sleep(0.01) end
io.write(how, " ", t0, " ", status("/proc/self/status", "Threads"), " ", m0, " ",
  status("/proc/thread-self/status", "SigBlk"), "\n")
]=])
    f:close()
    local log = os.tmpname()
    local function run(fault)
      os.remove(log)
      local cmd = ("cd %s && LD_PRELOAD=%s BURROW_FAULT=%s BURROW_FAULT_LOG=%s lua5.4 %s 2>&1")
        :format(H.q(H.REPO), H.q(shim), H.q(fault), H.q(log), H.q(child))
      local out = H.sh(cmd)
      local how, t0, t1, m0, m1 = out:match("(%a+) (%d+) (%d+) (%x+) (%x+)")
      assert(how, fault .. ": " .. out)
      return how, t0, t1, m0, m1
    end
    -- how many threads a start makes: counted, nothing failed
    assert.equal("started", (run("pthread_create:EAGAIN:after=1000000")))
    local fh = assert(io.open(log))
    local made = tonumber(fh:read("a"):match("seen pthread_create (%d+)"))
    fh:close()
    assert.is_true(made ~= nil and made >= 3, "a start makes its workers and the listener's threads")
    local failed = 0
    for n = 0, made - 1 do
      local how, t0, t1, m0, m1 = run(("pthread_create:EAGAIN:after=%d:times=1"):format(n))
      assert.equal(t0, t1, ("thread %d failing: %s, threads %s before, %s after"):format(n + 1, how, t0, t1))
      assert.equal(m0, m1, ("thread %d failing: the signal mask"):format(n + 1))
      if how ~= "started" then failed = failed + 1 end
    end
    assert.is_true(failed > 0, "some thread a start cannot do without")
    local how, t0, t1, m0, m1 = run("bind:EADDRINUSE")
    assert.equal("refused", how)
    assert.equal(t0, t1)
    assert.equal(m0, m1)
    os.remove(child)
    os.remove(log)
  end)
end)
