-- A Neovim plugin's use of burrow (test/anylua/hosts_spec.lua runs it as
-- `nvim --headless -u NONE -c "luafile THIS"`; Neovim 0.7: vim.loop, no
-- vim.uv, no nvim -l). burrow comes from a Lua 5.1 rocks tree, as
-- lazy.nvim or rocks.nvim would install it; under Neovim's LuaJIT
-- require "burrow" is burrow.ffi. Writes "key=value" lines to $BURROW_NVIM_OUT
-- and quits.
--   BURROW_ANY_TREE51  the tree; BURROW_NVIM_DIR  the folder (20k files)
local tree, dir, out_path = os.getenv("BURROW_ANY_TREE51"), os.getenv("BURROW_NVIM_DIR"), os.getenv("BURROW_NVIM_OUT")
package.path = tree .. "/share/lua/5.1/?.lua;" .. tree .. "/share/lua/5.1/?/init.lua;" .. package.path
package.cpath = tree .. "/lib/lua/5.1/?.so;" .. package.cpath

local report = {}
local function finish(err)
  if err then report[#report + 1] = "error=" .. tostring(err):gsub("\n", " ") end
  local f = assert(io.open(out_path, "w"))
  f:write(table.concat(report, "\n"), "\n")
  f:close()
  vim.cmd("qall!")
end
local function put(k, v) report[#report + 1] = k .. "=" .. tostring(v) end

local ok, err = pcall(function()
  local uv = vim.loop
  local burrow = require "burrow"
  local adapters = require "burrow.adapters"
  put("backend", burrow.backend)
  put("json", burrow.json == require("burrow.jsonlite") and "jsonlite" or "vim.json")
  local ws = assert(burrow.open { roots = { { path = dir, mount = "/w" } }, caps = { max_entries = 10000 } })
  local ticks = 0
  local timer = uv.new_timer()
  timer:start(10, 10, function() ticks = ticks + 1 end)
  local poller = adapters.luv(ws, uv)
  local t0 = uv.hrtime()
  ws:call("grep", { pattern = "needle", path = "/w", output_mode = "count" }, vim.schedule_wrap(function(res, msg)
   local ok, err = pcall(function()
    put("async_ms", math.floor((uv.hrtime() - t0) / 1e6))
    put("ticks_during_async", ticks)
    if not res then return finish("grep failed: " .. tostring(msg)) end
    local n = 0
    for _, c in ipairs(res.counts) do n = n + c.count end
    put("async_files", #res.counts)
    put("async_total_exact", res.total_exact)
    put("async_matches", n)
    -- a blocking call: the loop cannot run, so the timer cannot fire
    local before = ticks
    local t1 = uv.hrtime()
    local sync = ws:call("grep", { pattern = "needle", path = "/w", output_mode = "count" })
    put("sync_ms", math.floor((uv.hrtime() - t1) / 1e6))
    put("sync_ok", sync ~= nil)
    put("ticks_during_sync", ticks - before)
    -- then edit a file and read it back
    assert(ws:call("edit_file", { path = "/w/d0/f0.txt", old_text = "needle 0", new_text = "thread 0" }))
    local back = assert(ws:call("read_file", { path = "/w/d0/f0.txt" }))
    put("read_back", (back.content:gsub("\n", "|")))
    timer:stop()
    timer:close()
    poller:stop()
    poller:close()
    ws:close()
   end)
   finish(not ok and err or nil)
  end))
end)
if not ok then finish(err) end
