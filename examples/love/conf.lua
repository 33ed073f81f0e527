-- LÖVE's configuration: the example draws text only, so no audio (no sound
-- device is needed, e.g. under xvfb-run in the tests).
function love.conf(t)
  t.identity = "burrow-love-example"
  t.window.title = "burrow: list and grep without freezing"
  t.modules.audio = false
  t.modules.sound = false
  t.modules.joystick = false
  t.modules.physics = false
end
