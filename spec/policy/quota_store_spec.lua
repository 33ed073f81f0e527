-- The quotas policy's shared store (store: FILE): the counters live in a
-- file the host opens and locks, so processes on one folder share one
-- budget. Two processes write at once; together they get exactly the
-- budget, never more.

local H = require "helpers"

-- A child process: opens the workspace with a shared quota and tries n
-- writes of 100 bytes, as fast as it can; prints how many were allowed.
local CHILD = [[
package.path = %q
package.cpath = %q
local burrow = require "burrow"
local ws = assert(burrow.open { roots = { { path = %q } },
  policies = { "default", { name = "quotas", max_bytes_written = %d, store = %q } } })
local ok = 0
for i = 1, %d do
  if ws:call("write_file", { path = ("%s-%%d.txt"):format(i), content = ("x"):rep(100) }) then ok = ok + 1 end
end
io.write(ok, "\n")
ws:close()
]]

local function child(dir, root, store, budget, tries, tag)
  local f = dir .. "/child-" .. tag .. ".lua"
  H.write(dir, "child-" .. tag .. ".lua", CHILD:format(package.path, package.cpath, root, budget, store, tries, tag))
  return f
end

describe(H.tag("policies: quotas with a shared store"), function()
  after_each(H.cleanup)

  it("two processes share one write budget: exactly the budget, together", function()
    local dir, root = H.tmpdir(), H.tmpdir()
    local store = dir .. "/quota.store"
    -- 60 writes of 100 bytes fit in 6000 bytes; each process tries 60
    local a = child(dir, root, store, 6000, 60, "a")
    local b = child(dir, root, store, 6000, 60, "b")
    local out = H.sh(("lua5.4 %s > %s/a.out & lua5.4 %s > %s/b.out & wait; cat %s/a.out %s/b.out")
      :format(H.q(a), H.q(dir), H.q(b), H.q(dir), H.q(dir), H.q(dir)))
    local na, nb = out:match("^(%d+)\n(%d+)\n$")
    assert.is_truthy(na, out)
    assert.are.equal(60, tonumber(na) + tonumber(nb), out)
    -- what was written is what was counted
    local files = H.ls(root)
    assert.are.equal(60, #files)
    -- and a third process finds the budget spent
    local c = child(dir, root, store, 6000, 1, "c")
    assert.are.equal("0\n", H.sh("lua5.4 " .. H.q(c)))
  end)

  it("without a store each workspace counts alone", function()
    local root = H.tmpdir()
    local function open()
      return H.open({ roots = { { path = root } }, policies = { { name = "quotas", max_bytes_written = 150 } } })
    end
    local w1, w2 = open(), open()
    assert(w1:call("write_file", { path = "a", content = ("x"):rep(100) }))
    assert(w2:call("write_file", { path = "b", content = ("x"):rep(100) }))
    assert.is_nil((w1:call("write_file", { path = "c", content = ("x"):rep(100) })))
  end)

  it("policy code gets shared_add only with a store, and never the file", function()
    local dir, root = H.tmpdir(), H.tmpdir()
    H.write(dir, "probe.lua", [[
      local options = ...
      return { name = "probe", check = function(req)
        if req.path == "has" then return shared_add and "deny" or "allow", "shared_add is there" end
        if req.path == "io" then return (io or open or require) and "deny" or "allow", "a file function" end
        if req.path == "add" then
          local ok, v = shared_add("k", 5, 7)
          local ok2, v2 = shared_add("k", 5, 7)
          return (ok and v == 5 and not ok2 and v2 == 5) and "deny" or "allow", "counted"
        end
        return "allow"
      end }
    ]])
    local plain = H.open({ roots = { { path = root } }, policies = { dir .. "/probe.lua" } })
    local _, msg = plain:call("stat", { path = "has" })
    assert.is_falsy(msg and msg:find("shared_add is there", 1, true))
    local ws = H.open({ roots = { { path = root } }, policies = { { path = dir .. "/probe.lua", store = dir .. "/s" } } })
    local _, m1 = ws:call("stat", { path = "has" })
    assert.is_truthy(m1 and m1:find("shared_add is there", 1, true), tostring(m1))
    local _, m2 = ws:call("stat", { path = "io" })
    assert.is_falsy(m2 and m2:find("a file function", 1, true))
    local _, m3 = ws:call("stat", { path = "add" })
    assert.is_truthy(m3 and m3:find("counted", 1, true), tostring(m3))
  end)

  it("a store that is a link or not a file is refused at load", function()
    local dir, root = H.tmpdir(), H.tmpdir()
    H.symlink("/etc/passwd", dir, "link")
    for _, store in ipairs { dir .. "/link", dir } do
      local ws, msg = H.burrow.open({ roots = { { path = root } },
        policies = { { name = "quotas", max_bytes_written = 10, store = store } } })
      assert.is_nil(ws, store)
      assert.is_truthy(msg:find("store", 1, true), msg)
    end
  end)
end)
