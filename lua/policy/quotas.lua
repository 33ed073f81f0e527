-- quotas: a budget of bytes written and of calls per minute, per session;
-- or, with a store, one budget every session of every burrow process
-- using that store file shares.
--
-- options: max_bytes_written (a number or a size like "100MB", "64MiB")
--          max_calls_per_minute (a number)
--          store (a file: the counters live there, under a lock the host
--                 takes; the host opens it and gives this policy
--                 shared_add; docs/policies.md#quotas)

local options = ... or {}

local max_bytes = options.max_bytes_written and size(options.max_bytes_written)
local max_calls = tonumber(options.max_calls_per_minute)
local sessions = {} -- session -> {bytes =, minute =, calls =}

local function calls_msg() return ("quota: %d calls per minute reached; wait and retry"):format(max_calls) end
local function bytes_msg(n, used)
  return ("quota: writing %d bytes would pass the %d bytes this session may write (%d used)"):format(n, max_bytes, used)
end

-- The shared budget: each counter checked and added in one step under
-- the store's lock, so two processes cannot both take the last bytes.
local function check_shared(req, minute, n)
  if max_calls and not req.commit then
    local ok = shared_add("calls", 1, max_calls, minute)
    if not ok then return "deny", calls_msg() end
  end
  if max_bytes and n > 0 then
    local ok, used = shared_add("bytes", n, max_bytes)
    if not ok then
      if max_calls and not req.commit then shared_add("calls", -1, -1, minute) end -- not made
      return "deny", (bytes_msg(n, used):gsub("this session", "the shared store"))
    end
  end
  return "allow"
end

return {
  name = "quotas",
  scope = "call", -- judges the call (operation, size, count), not each object
  options = { "max_bytes_written", "max_calls_per_minute", "store" },
  check = function(req)
    local minute = os.time() // 60
    local n = req.operation == "write" and req.size or 0
    -- a commit that corrects the size judged at the call (a charset's
    -- bytes: ctx:recount) charges what the call did not
    if req.commit and req.charged then n = math.max(0, n - req.charged) end
    -- a commit (req.commit) is the same call telling the size the core
    -- will write: its bytes count, not another call
    if shared_add then return check_shared(req, minute, n) end
    local s = sessions[req.session or ""]
    if not s then
      s = { bytes = 0, minute = 0, calls = 0 }
      sessions[req.session or ""] = s
    end
    if s.minute ~= minute then s.minute, s.calls = minute, 0 end
    if max_calls and not req.commit and s.calls >= max_calls then
      return "deny", calls_msg()
    end
    if max_bytes and s.bytes + n > max_bytes then
      return "deny", bytes_msg(n, s.bytes)
    end
    s.calls, s.bytes = s.calls + (req.commit and 0 or 1), s.bytes + n
    return "allow"
  end,
}
