-- P2-1 crash atomicity of write_file (reference/security-cases.md §2.3, P2-1):
-- a child lua5.4 rewrites a 4 MiB file alternating A and B through the Lua
-- API; SIGKILL lands a random 0-20 ms after it is ready. The target must
-- always be exactly A or exactly B. A new burrow.open sweeps stale temp files
-- of the root's top directory: afterwards only the target is left.

local F = require "security.fixture"

local TRIALS = 50
local MIB4 = 4 * 1024 * 1024

describe(F.tag("security: crash atomicity P2-1 (kill -9 during write_file)"), function()
  local base, root, fx, aux

  lazy_setup(function()
    base = F.mktemp()
    root = base .. "/root"
    F.sh("mkdir " .. F.q(root))
    F.write_host(base .. "/sibling.txt", "SIBLING")      -- the root's parent must stay as it is
    fx = {B = base, extra = {}}
    aux = F.mktemp()                                    -- child's ready flag and stderr
  end)

  lazy_teardown(function()
    if base then F.rmtree(base) end
    if aux then F.rmtree(aux) end
  end)

  it(("%d trials: the target is always exactly A or B; the sweep on open leaves only the target"):format(TRIALS), function()
    local A = string.rep(string.rep("A", 63) .. "\n", MIB4 // 64)
    local B = string.rep(string.rep("B", 63) .. "\n", MIB4 // 64)
    local target = root .. "/big.txt"
    F.write_host(target, A)
    local ready = aux .. "/ready"
    local errlog = aux .. "/child.err"
    local torn, changed, seen = {}, 0, {A = 0, B = 0}
    local strays_max = 0
    local last = A
    math.randomseed(os.time())

    F.guarded(fx, "crash", function()
      for trial = 1, TRIALS do
        os.remove(ready)
        local p = F.spawn("cd " .. F.q(F.REPO) ..
          " && LUA_PATH=" .. F.q(F.LUA_PATH) .. " LUA_CPATH=" .. F.q(F.LUA_CPATH) ..
          " exec lua5.4 spec/security/crash_child.lua " .. F.q(root) .. " big.txt " .. F.q(ready) ..
          " 5 2>" .. F.q(errlog))
        local deadline = F.now() + 5
        while not F.exists(ready) and F.alive(p.pid) and F.now() < deadline do F.sleep(0.001) end
        local started = F.exists(ready)
        F.sleep(math.random() * 0.020)
        local was_alive = F.alive(p.pid)
        F.stop(p, "KILL")
        local err = F.read_host(errlog) or ""
        assert.is_true(started, "trial " .. trial .. ": the child never got ready: " .. err)
        assert.is_true(was_alive, "trial " .. trial .. ": the child was gone before the kill: " .. err)
        local now = F.read_host(target)
        if now == A then seen.A = seen.A + 1
        elseif now == B then seen.B = seen.B + 1
        else
          torn[#torn + 1] = ("trial %d: %s bytes"):format(trial, now and #now or "missing")
        end
        if now ~= last then changed = changed + 1 end
        last = now
        strays_max = math.max(strays_max, #F.ls(root) - 1)
      end
      os.remove(ready); os.remove(errlog)
    end, {exclude = {"root"}})

    print(("\n    P2-1 [%s]: %d trials, A=%d B=%d torn=%d, content changed in %d trials, up to %d stray files before the sweep")
      :format(F.BACKEND, TRIALS, seen.A, seen.B, #torn, changed, strays_max))
    assert.are.equal(0, #torn, "torn files: " .. table.concat(torn, "; "))

    -- stale temp files are swept when the root is opened again
    local ws = F.open({{path = root, mode = "rw"}})
    ws:close()
    assert.are.same({"big.txt"}, F.ls(root), "files left in the root after the sweep")
    local c = F.read_host(target)
    assert.is_true(c == A or c == B, "the sweep changed the target")
  end)
end)
