-- examples/love/app.lua under plain LuaJIT (no LÖVE, no display here): a
-- folder listed and a grep of about a second while "frames" of 16 ms run;
-- no frame's update may stall. Run by test/anylua/run.sh under LuaJIT with
-- the installed rock's paths (burrow.ffi and libburrow from the 5.1 tree);
-- BURROW_REPO is the checkout holding examples/love.

package.path = (os.getenv("BURROW_REPO") or ".") .. "/examples/love/?.lua;" .. package.path
local ffi = require "ffi"
pcall(ffi.cdef, "typedef struct { long tv_sec; long tv_nsec; } bw_ts; int clock_gettime(int, bw_ts *); int usleep(unsigned);")
local function now()
  local ts = ffi.new("bw_ts")
  ffi.C.clock_gettime(1, ts)
  return tonumber(ts.tv_sec) + tonumber(ts.tv_nsec) / 1e9
end

local app = require "app"

describe("examples/love/app.lua under LuaJIT", function()
  local dir

  before_each(function()
    local p = io.popen("mktemp -d /tmp/burrow-love-XXXXXX")
    dir = p:read("*l")
    p:close()
    local line = ("a"):rep(200) .. ".\n"
    for i = 1, 2 do
      local f = assert(io.open(("%s/s%d.txt"):format(dir, i), "wb"))
      f:write(line:rep(320), "7\n")
      f:close()
    end
  end)

  after_each(function() os.execute("rm -rf '" .. dir .. "'") end)

  it("lists and greps while frames keep coming", function()
    local s = assert(app.new(dir, "a*a*\\d"))
    local worst, t0 = 0, now()
    while not s.grep and now() - t0 < 20 do
      local f0 = now()
      app.update(s, 1 / 60)
      local lines = app.lines(s)
      assert.is_true(#lines >= 2)
      worst = math.max(worst, now() - f0)
      ffi.C.usleep(16000)
    end
    local secs = now() - t0
    local text = table.concat(app.lines(s), "\n")
    app.close(s)
    print(("\n  love app: grep %.2f s over %d frames; slowest update %.2f ms"):format(secs, s.frames, worst * 1000))
    assert.is_table(s.grep.counts, text)
    assert.matches("/project: 2 entries", text, 1, true)
    assert.matches('grep "a*a*\\d": 2 lines in 2 files', text, 1, true)
    assert.is_true(secs > 0.3, "the grep was too short to show anything")
    assert.is_true(s.frames >= 10, "frames: " .. s.frames)
    -- an update only takes what finished: far below a 16 ms frame
    assert.is_true(worst < 0.010, ("an update took %.2f ms"):format(worst * 1000))
  end)

  it("cancel from a key press ends the grep with a partial result", function()
    local s = assert(app.new(dir, "a*a*a*\\d"))
    for _ = 1, 10 do app.update(s, 1 / 60) ffi.C.usleep(16000) end
    assert.is_nil(s.grep)
    app.cancel(s)
    local t0 = now()
    while not s.grep and now() - t0 < 5 do app.update(s, 1 / 60) ffi.C.usleep(2000) end
    app.close(s)
    assert.is_true(s.grep.cancelled)
    assert.matches(", cancelled", table.concat(app.lines(s), "\n"), 1, true)
  end)

  it("a folder that does not exist is an error, not a crash", function()
    local s, err = app.new(dir .. "/none", "x")
    assert.is_nil(s)
    assert.matches("ENOENT", err)
  end)

  it("a libburrow that cannot be loaded says which and how to fix it, never '(?)'", function()
    local bffi = require "burrow.ffi"
    local ws, err = bffi.open({}, { lib = dir .. "/no/libburrow.so" })
    assert.is_nil(ws)
    assert.matches("cannot load libburrow (" .. dir .. "/no/libburrow.so", err, 1, true)
    assert.not_matches("(?)", err, 1, true)
    assert.matches("BURROW_LIB", err, 1, true)
  end)
end)
