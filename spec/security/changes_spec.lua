-- Changes heard through the state store (host/src/core/changes.c) as an
-- attacker would send them: anyone who can publish on the store (another
-- tenant's instance, a compromised one, a client of the Redis server)
-- forges messages. A message only selects watches whose own (mount,
-- in-root path) it names exactly: it is never a path anything opens, a
-- path that does not decode clean ("..", absolute, empty components, NUL,
-- another field) selects nothing, another tenant's channel is never
-- heard, and a flood costs a bounded queue and a gap, never memory.
-- Runs on both resolvers (BURROW_RESOLVER=walk).

local H = require "helpers"
local core = H.core

local function settle(s)
  local t = core.now()
  while core.now() - t < s do end
end

local function poll_until(ws, got, n, secs)
  local t = core.now()
  repeat
    ws:poll_watch()
    if #got >= n then return true end
    settle(0.01)
  until core.now() - t > secs
  return false
end

-- A message as burrow writes one (changes.c): "bw1\0" kind "\0" mount "\0" rel.
local function msg(kind, mount, rel) return "bw1\0" .. kind .. "\0" .. mount .. "\0" .. rel end

local function rss_kb()
  local f = assert(io.open("/proc/self/status"))
  local kb = tonumber(f:read("a"):match("VmRSS:%s*(%d+)"))
  f:close()
  return kb
end

describe(H.tag("security: changes heard through the store"), function()
  local st, ws, d, got, dir_got
  before_each(function()
    st = core.state_open { kind = "memory" }
    d = H.tmpdir()
    H.write(d, "f.txt", "1")
    H.mkdir(d, "sub")
    H.write(H.tmpdir(), "outside.txt", "secret")
    ws = H.open { roots = { { path = d, mount = "/w", inotify = false } }, state = st,
      session = { id = "s", tenant = "alpha" } }
    got, dir_got = {}, {}
    assert(ws:watch("/w/f.txt", function(ev) got[#got + 1] = ev end))
    assert(ws:watch("/w/sub", function(ev) dir_got[#dir_got + 1] = ev end))
  end)
  after_each(function()
    H.cleanup()
    st:close()
  end)

  it("forged paths that do not decode clean select nothing", function()
    local forged = {
      msg("w", "/w", "sub/../f.txt"), msg("w", "/w", "./f.txt"), msg("w", "/w", "/f.txt"),
      msg("w", "/w", "f.txt/"), msg("w", "/w", "sub//x"), msg("w", "/w", ""), msg("w", "/w", ".."),
      msg("w", "/w", "../w/f.txt"), msg("w", "/w/../w", "f.txt"), msg("w", "w", "f.txt"),
      msg("w", "/w/", "f.txt"), msg("w", "//w", "f.txt"), msg("x", "/w", "f.txt"),
      msg("w", "/w", "f.txt") .. "\0extra", "bw2\0w\0/w\0f.txt", "bw1\0w\0/w", "",
      msg("w", "/w", "f.txt\0"), msg("w", "/w", "sub/..") , msg("w", "/w", ("a/"):rep(3000) .. "f.txt"),
    }
    for _, m in ipairs(forged) do assert(st:publish("alpha", "changes", m)) end
    assert.is_false(poll_until(ws, got, 1, 0.4))
    assert.are.equal(0, #dir_got)
    -- the same channel carries a clean one: the forged ones were heard and dropped
    assert(st:publish("alpha", "changes", msg("w", "/w", "f.txt")))
    assert.is_true(poll_until(ws, got, 1, 5))
    assert.are.equal("/w/f.txt", got[1].path)
  end)

  it("burrow itself refuses to publish such paths", function()
    for _, rel in ipairs { "../x", "a/../b", "/abs", "", "a//b", "a/", "." .. "/a" } do
      local ok, _, code = st:change("alpha", "/w", rel, false)
      assert.is_nil(ok, rel)
      assert.are.equal("INVALID_ARGUMENT", code)
    end
    local ok, _, code = st:change("alpha", "relative", "f.txt", false)
    assert.is_nil(ok)
    assert.are.equal("INVALID_ARGUMENT", code)
  end)

  it("a path outside the root, another mount, another tenant: nothing", function()
    assert(st:publish("alpha", "changes", msg("w", "/", "outside.txt")))
    assert(st:publish("alpha", "changes", msg("d", "/elsewhere", "f.txt")))
    assert(st:change("beta", "/w", "f.txt", false))
    assert(st:change("", "/w", "f.txt", false))
    assert.is_false(poll_until(ws, got, 1, 0.4))
    -- and a subscription of another tenant hears none of alpha's
    local sub = assert(st:subscribe("beta", { "changes" }))
    assert(st:change("alpha", "/w", "sub/x", false))
    assert.is_true(poll_until(ws, dir_got, 1, 5)) -- alpha's own heard it
    assert.is_nil(sub:next())
    sub:close()
  end)

  it("a flood costs a bounded queue, and changes are heard after it", function()
    -- fill the feed's queue faster than anyone polls, with messages as
    -- large as a message may be
    local big = msg("w", "/w", ("d/"):rep(4000) .. "x")
    local before = rss_kb()
    for _ = 1, 20000 do assert(st:publish("alpha", "changes", big)) end
    local grown = rss_kb() - before
    -- 20,000 x 8 KB would be 160 MB kept; the queue holds at most 1 MiB
    assert.is_true(grown < 32 * 1024, ("RSS grew %d KB"):format(grown))
    -- (whether the feed's thread kept up or dropped some and marked every
    -- watch with the gap is the machine's timing; the queue's bound and
    -- its gap are test_state's and test_stateredis's)
    -- a change after the flood is heard: the feed drained it all
    local n = #got
    local t = core.now()
    repeat
      assert(st:change("alpha", "/w", "f.txt", false))
      ws:poll_watch()
      settle(0.05)
    until #got > n or core.now() - t > 10
    assert.is_true(#got > n)
  end)

  it("a policy's sandbox has no publish or subscribe (docs/policies.md)", function()
    local pdir = H.tmpdir()
    H.write(pdir, "probe.lua", [[return { name = "probe", check = function(req)
  if state.publish ~= nil or state.subscribe ~= nil or state.change ~= nil then return "deny", "the sandbox can publish" end
  return "allow" end }]])
    local d2 = H.tmpdir()
    H.write(d2, "x.txt", "x")
    local pws = H.open { roots = { { path = d2 } }, state = st, policies = { "default", pdir .. "/probe.lua" } }
    local res, msg = pws:call("stat", { path = "x.txt" })
    assert.is_table(res, msg)
  end)

  it("a publish larger than a message may be is refused", function()
    local ok, _, code = st:publish("alpha", "changes", ("x"):rep(16385))
    assert.is_nil(ok)
    assert.are.equal("TOO_LARGE", code)
    ok, _, code = st:publish("alpha", "chan:nel", "x")
    assert.is_nil(ok)
    assert.are.equal("INVALID_ARGUMENT", code)
  end)
end)
