-- examples/love/ run by LÖVE itself, headless: Xvfb (xvfb-run) for the
-- display, Mesa's llvmpipe for OpenGL. The example's test mode
-- (BURROW_LOVE_RESULT, main.lua) greps four slow files, reports the frames
-- drawn and the longest frame while the grep ran, and quits. Skipped
-- (pending) where `love` or `xvfb-run` is missing. Run by test/anylua/run.sh
-- under LuaJIT with the installed rock's LUA_PATH and LUA_CPATH, which LÖVE
-- inherits: burrow.ffi and libburrow come from the 5.1 tree (BURROW_LIB,
-- if set, names another libburrow); BURROW_REPO is the checkout.

local function sh(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("*a")
  p:close()
  return out
end

local function have(cmd) return sh("command -v " .. cmd) ~= "" end

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

describe("examples/love/ under LÖVE and Xvfb", function()
  if not (have("love") and have("xvfb-run")) then
    pending("love or xvfb-run not installed (apt-get install love xvfb xauth libgl1-mesa-dri)")
    return
  end
  if not (os.getenv("LUA_PATH") or ""):find("/share/lua/5.1/", 1, true) then
    pending("LUA_PATH must name a Lua 5.1 rocks tree holding burrow (test/anylua/run.sh sets it)")
    return
  end
  local dir, out

  before_each(function()
    dir = sh("mktemp -d /tmp/burrow-love-XXXXXX"):match("[^\n]+")
    out = dir .. ".result"
    local line = ("a"):rep(200) .. ".\n"
    for i = 1, 4 do
      local f = assert(io.open(("%s/s%d.txt"):format(dir, i), "wb"))
      f:write(line:rep(320), "7\n")
      f:close()
    end
  end)

  after_each(function() os.execute("rm -rf " .. q(dir) .. " " .. q(out)) end)

  it("lists and greps a folder while frames keep coming", function()
    local repo = os.getenv("BURROW_REPO") or sh("pwd"):match("[^\n]+")
    local log = sh(("BURROW_LOVE_RESULT=%s timeout 60 xvfb-run -a -s '-screen 0 800x600x24' love %s %s %s")
      :format(q(out), q(repo .. "/examples/love"), q(dir), q("a*a*\\d")))
    local f = io.open(out)
    assert.truthy(f, "LÖVE wrote no result:\n" .. log)
    local text = f:read("*a")
    f:close()
    local why, frames, grep_frames, secs, worst = text:match(
      "^(%a+) frames=(%d+) grep_frames=(%d+) grep_secs=([%d.]+) worst_frame_ms=([%d.]+)")
    assert.equal("done", why, text .. log)
    frames, grep_frames, secs, worst = tonumber(frames), tonumber(grep_frames), tonumber(secs), tonumber(worst)
    print(("\n  LÖVE (xvfb, llvmpipe): grep %.2f s, %d frames during it, longest frame %.1f ms")
      :format(secs, grep_frames, worst))
    assert.matches("/project: 4 entries", text, 1, true)
    assert.matches('grep "a*a*\\d": 4 lines in 4 files (after ' .. grep_frames .. " frames)", text, 1, true)
    -- and on stdout, where a person who ran `love examples/love` sees it
    assert.matches("/project: 4 entries\n", log, 1, true)
    assert.matches('grep "a*a*\\d": 4 lines in 4 files (after ' .. grep_frames .. " frames)\n", log, 1, true)
    assert.is_true(secs > 0.3, "the grep was too short to show anything: " .. secs)
    -- frames kept coming: at least 60 a second of grep, and no frame took
    -- a quarter of the grep (a blocking call would stall one for all of it)
    assert.is_true(grep_frames >= 60 * secs, ("%d frames in %.2f s"):format(grep_frames, secs))
    assert.is_true(worst < 250 * secs, ("a frame took %.1f ms of a %.2f s grep"):format(worst, secs))
  end)
end)
