-- examples/love/ run by LÖVE itself, headless: Xvfb (xvfb-run) for the
-- display, Mesa's llvmpipe for OpenGL. The example's test mode
-- (BURROW_LOVE_RESULT, main.lua) greps four slow files, reports the frames
-- drawn and the longest frame while the grep ran, and quits. Skipped
-- (pending) where `love` or `xvfb-run` is missing. Run by test/run-all.sh's
-- luajit stage:
--   BURROW_LIB=$PWD/build/libburrow.so busted --lua=luajit test/luajit/

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
  local lib = os.getenv("BURROW_LIB")
  if not (lib and lib:sub(1, 1) == "/") then
    pending("BURROW_LIB=/abs/path/libburrow.so is needed")
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
    local cwd = sh("pwd"):match("[^\n]+")
    local log = sh(("BURROW_LOVE_RESULT=%s LUA_PATH=%s BURROW_LIB=%s timeout 60 xvfb-run -a -s '-screen 0 800x600x24' love %s %s %s")
      :format(q(out), q(cwd .. "/lua/?.lua;;"), q(lib), q(cwd .. "/examples/love"), q(dir), q("a*a*\\d")))
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
    assert.is_true(secs > 0.3, "the grep was too short to show anything: " .. secs)
    -- frames kept coming: at least 60 a second of grep, and no frame took
    -- a quarter of the grep (a blocking call would stall one for all of it)
    assert.is_true(grep_frames >= 60 * secs, ("%d frames in %.2f s"):format(grep_frames, secs))
    assert.is_true(worst < 250 * secs, ("a frame took %.1f ms of a %.2f s grep"):format(worst, secs))
  end)
end)
