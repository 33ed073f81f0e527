-- quotas: per session, a budget of bytes written and of calls per minute.
--
-- options: max_bytes_written (a number or a size like "100MB", "64MiB")
--          max_calls_per_minute (a number)

local options = ... or {}

local max_bytes = options.max_bytes_written and size(options.max_bytes_written)
local max_calls = tonumber(options.max_calls_per_minute)
local sessions = {} -- session -> {bytes =, minute =, calls =}

return {
  name = "quotas",
  scope = "call", -- judges the call (operation, size, count), not each object
  options = { "max_bytes_written", "max_calls_per_minute" },
  check = function(req)
    local s = sessions[req.session or ""]
    if not s then
      s = { bytes = 0, minute = 0, calls = 0 }
      sessions[req.session or ""] = s
    end
    local minute = os.time() // 60
    if s.minute ~= minute then s.minute, s.calls = minute, 0 end
    -- a commit (req.commit) is the same call telling the size the core
    -- will write: its bytes count, not another call
    if max_calls and not req.commit and s.calls >= max_calls then
      return "deny", ("quota: %d calls per minute reached; wait and retry"):format(max_calls)
    end
    local n = req.operation == "write" and req.size or 0
    if max_bytes and s.bytes + n > max_bytes then
      return "deny", ("quota: writing %d bytes would pass the %d bytes this session may write (%d used)")
        :format(n, max_bytes, s.bytes)
    end
    s.calls, s.bytes = s.calls + (req.commit and 0 or 1), s.bytes + n
    return "allow"
  end,
}
