-- burrow.adapters: a workspace's calls with a callback (ws:call(tool, args,
-- cb)) inside a host's event loop. Plain Lua 5.1, for every Lua's burrow
-- (docs/embedding.md, "Any Lua"):
--
--   luv / Neovim's vim.loop:  local poller = adapters.luv(ws, vim.loop)
--       the callbacks run on the loop when ws:fd() is readable;
--       poller:close() detaches (before ws:close()).
--   a game engine's frame:    call ws:poll() once a frame (it never blocks).
--   nginx-lua, or any host whose request code may sleep without blocking
--   the others (ngx.sleep, copas.sleep):
--       local res, msg, code = adapters.wait(ws, "grep", args, ngx.sleep)
--       other requests run while this one sleeps between polls; a fifth
--       argument, started(call), gets the call's handle (call:cancel()).

local M = {}

--- Run ws's callbacks on a luv loop (luv, vim.loop): a poll handle on ws:fd().
function M.luv(ws, uv)
  if type(uv) ~= "table" or type(uv.new_poll) ~= "function" then
    error("burrow.adapters.luv: pass luv (require \"luv\" or vim.loop)", 2)
  end
  local poller = assert(uv.new_poll(ws:fd()))
  poller:start("r", function() ws:poll() end)
  return poller
end

--- ws:call(tool, args) for a host that sleeps without blocking: the call
-- runs on burrow's worker; sleep(seconds) yields between polls (1 ms at
-- first, growing to 20 ms). Returns what ws:call returns. started(call),
-- if given, runs once the call is queued, with its handle.
function M.wait(ws, tool, args, sleep, started)
  if type(sleep) ~= "function" then error("burrow.adapters.wait: pass a sleep function (ngx.sleep)", 2) end
  local res, msg, code, done
  local call, err, ecode = ws:call(tool, args, function(r, m, c) res, msg, code, done = r, m, c, true end)
  if not call then return nil, err, ecode end
  if started then started(call) end
  local step = 0.001
  while not done do
    sleep(step)
    ws:poll()
    if step < 0.02 then step = step * 2 end
  end
  return res, msg, code
end

return M
