-- The logic of the LÖVE example (main.lua), kept apart from LÖVE so plain
-- LuaJIT can run it in the tests (test/luajit/love_app_spec.lua): a folder
-- listed and grepped on burrow's worker thread while frames keep coming.

local burrow = require "burrow.ffi"

local app = {}

--- dir: the folder; pattern: what to grep; opts: burrow.ffi.open's ({lib =}).
function app.new(dir, pattern, opts)
  local ws, err = burrow.open({ roots = { { path = dir, mount = "/project", mode = "ro" } } }, opts)
  if not ws then return nil, err end
  local s = { ws = ws, pattern = pattern, frames = 0, started = nil }
  ws:submit("list_dir", { path = "/project" }, function(res, msg)
    s.listing = res and res.entries or { { name = "(list_dir failed: " .. msg .. ")" } }
  end)
  s.grep_id = ws:submit("grep", { pattern = pattern, path = "/project", output_mode = "count" },
    function(res, msg)
      s.grep = res or { error = msg }
      s.grep_frames = s.frames
    end)
  return s
end

--- Once a frame: count it and take what burrow finished (never blocks).
function app.update(s, dt)
  s.frames = s.frames + 1
  s.ws:poll()
end

--- The lines to draw this frame.
function app.lines(s)
  local out = { ("frame %d"):format(s.frames) }
  if not s.listing then
    out[#out + 1] = "listing /project ..."
  else
    out[#out + 1] = ("/project: %d entries"):format(#s.listing)
    for i = 1, math.min(#s.listing, 10) do out[#out + 1] = "  " .. s.listing[i].name end
  end
  if not s.grep then
    out[#out + 1] = ("grep \"%s\" ... (press c to cancel)"):format(s.pattern)
  elseif s.grep.error then
    out[#out + 1] = "grep failed: " .. s.grep.error
  else
    local n = 0
    for _, c in ipairs(s.grep.counts) do n = n + c.count end
    local least = s.grep.total_exact == false and "at least " or "" -- capped: a lower bound
    out[#out + 1] = ("grep \"%s\": %s%d lines in %s%d files%s (after %d frames)"):format(s.pattern, least, n,
      least, #s.grep.counts, s.grep.cancelled and ", cancelled" or "", s.grep_frames)
  end
  return out
end

function app.cancel(s)
  if s.grep_id and not s.grep then s.ws:cancel(s.grep_id) end
end

function app.close(s)
  s.ws:close()
end

return app
