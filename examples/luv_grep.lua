-- A grep that does not stop a luv event loop: the call runs on burrow's
-- worker thread, its completion wakes the loop through ws:fd(), and a 10 ms
-- timer keeps ticking meanwhile (docs/embedding.md, "Lua: submit, fd, poll").
--
--   lua5.4 examples/luv_grep.lua [DIR] [PATTERN]
--
-- Needs the rock (or LUA_PATH/LUA_CPATH at lua/ and build/lua/) and luv
-- (Debian: lua-luv).

local uv = require "luv"
local burrow = require "burrow"

local dir, pattern = arg[1] or ".", arg[2] or "TODO"
local ws = assert(burrow.open { roots = { { path = dir } } })

local ticks = 0
local timer = uv.new_timer()
timer:start(10, 10, function() ticks = ticks + 1 end)

local started = uv.hrtime()
local watcher = uv.new_poll(ws:fd())
watcher:start("r", function() ws:poll() end) -- callbacks run here, on the loop

ws:submit("grep", { pattern = pattern, output_mode = "count" }, function(res, msg)
  local secs = (uv.hrtime() - started) / 1e9
  if res then
    local n = 0
    for _, c in ipairs(res.counts) do n = n + c.count end
    -- capped at max_results (or cut short): the counts are a lower bound
    local least = res.total_exact == false and "at least " or ""
    print(("grep done in %.2f s: %s%d matching lines in %s%d files; the timer ticked %d times meanwhile")
      :format(secs, least, n, least, #res.counts, ticks))
  else
    print("grep failed: " .. msg)
  end
  timer:stop()
  watcher:stop()
end)

uv.run()
ws:close()
