-- A LÖVE (love2d) project that lists and greps a folder without freezing
-- its frames: burrow runs on its own worker thread (burrow.ffi over
-- libburrow), and each love.update takes what finished.
--
--   love examples/love /path/to/folder [PATTERN]
--
-- burrow.ffi must be on package.path: the rock for Lua 5.1 (`luarocks
-- --lua-version=5.1 make`, then `eval "$(luarocks --lua-version=5.1 path)"`,
-- which also finds the rock's libburrow), or lua/ of a burrow checkout
-- (LUA_PATH="/path/to/burrow/lua/?.lua;;") with libburrow.so.0 on the
-- loader's path (make install) or BURROW_LIB=/abs/path.
-- The logic is app.lua, which the tests run under plain LuaJIT.
--
-- Once the listing and the grep are both in, what the window shows is
-- printed to stdout too (once), so a terminal or a log sees the result.
--
-- Test mode (test/luajit/love_run_spec.lua, under xvfb-run): with
-- BURROW_LOVE_RESULT=FILE set, the project writes what it drew, the frames
-- and the longest frame during the grep to FILE once the grep is done (or
-- after 30 s), then quits.

local app = require "app"
local state, err
local result_file = os.getenv("BURROW_LOVE_RESULT")
local grep_started, worst_dt = nil, 0
local printed = false

-- The result on stdout, once it is all there.
local function print_result()
  if printed or not (state and state.grep and state.listing) then return end
  printed = true
  io.write(table.concat(app.lines(state), "\n"), "\n")
  io.flush()
end

-- Test mode: the report, then quit.
local function report(why)
  local f = assert(io.open(result_file, "w"))
  if state then
    f:write(("%s frames=%d grep_frames=%s grep_secs=%.3f worst_frame_ms=%.1f\n"):format(why, state.frames,
      tostring(state.grep_frames), love.timer.getTime() - grep_started, worst_dt * 1000))
    f:write(table.concat(app.lines(state), "\n"), "\n")
  else
    f:write("error ", tostring(err), "\n")
  end
  f:close()
  love.event.quit()
end

function love.load(args)
  state, err = app.new(args[1] or ".", args[2] or "TODO")
  grep_started = love.timer.getTime()
  if not state then io.stderr:write("burrow: ", tostring(err), "\n") end
  if result_file and not state then report("error") end
end

function love.update(dt)
  if state then app.update(state, dt) end
  print_result()
  if result_file and state then
    if not state.grep then worst_dt = math.max(worst_dt, dt) end
    if state.grep and state.listing then report("done")
    elseif love.timer.getTime() - grep_started > 30 then report("timeout") end
  end
end

function love.keypressed(key)
  if key == "c" and state then app.cancel(state) end
end

function love.draw()
  if not state then
    love.graphics.print("burrow: " .. tostring(err), 10, 10)
    return
  end
  for i, line in ipairs(app.lines(state)) do love.graphics.print(line, 10, 10 + 18 * (i - 1)) end
end

function love.quit()
  if state then app.close(state) end
end
