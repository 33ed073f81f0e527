-- A LÖVE (love2d) project that lists and greps a folder without freezing
-- its frames: burrow runs on its own worker thread (burrow.ffi over
-- libburrow), and each love.update takes what finished.
--
--   love examples/love /path/to/folder [PATTERN]
--
-- burrow.ffi must be on package.path (the rock's share/lua/5.4 tree, or
-- lua/ of a burrow checkout: LUA_PATH="/path/to/burrow/lua/?.lua;;") and
-- libburrow.so.0 on the loader's path (make install), or BURROW_LIB=/abs/path.
-- The logic is app.lua, which the tests run under plain LuaJIT.

local app = require "app"
local state, err

function love.load(args)
  state, err = app.new(args[1] or ".", args[2] or "TODO")
end

function love.update(dt)
  if state then app.update(state, dt) end
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
