-- quotas: per session, a budget of bytes written and of calls per minute.
--
-- options: max_bytes_written (a number or a size like "100MB", "64MiB")
--          max_calls_per_minute (a number)

local options = ... or {}

local UNITS = { [""] = 1, B = 1, KB = 1e3, MB = 1e6, GB = 1e9, KiB = 1024, MiB = 1024 ^ 2, GiB = 1024 ^ 3 }

local function size(v)
  if v == nil or type(v) == "number" then return v end
  local n, u = tostring(v):match("^%s*(%d+%.?%d*)%s*(%a*)%s*$")
  assert(n and UNITS[u], "quotas: invalid size " .. tostring(v))
  return math.floor(tonumber(n) * UNITS[u])
end

local max_bytes = size(options.max_bytes_written)
local max_calls = tonumber(options.max_calls_per_minute)
local sessions = {} -- session -> {bytes =, minute =, calls =}

return {
  name = "quotas",
  check = function(req)
    local s = sessions[req.session or ""]
    if not s then
      s = { bytes = 0, minute = 0, calls = 0 }
      sessions[req.session or ""] = s
    end
    local minute = os.time() // 60
    if s.minute ~= minute then s.minute, s.calls = minute, 0 end
    if max_calls and s.calls >= max_calls then
      return "deny", ("quota: %d calls per minute reached; wait and retry"):format(max_calls)
    end
    local n = req.operation == "write" and req.size or 0
    if max_bytes and s.bytes + n > max_bytes then
      return "deny", ("quota: writing %d bytes would pass the %d bytes this session may write (%d used)")
        :format(n, max_bytes, s.bytes)
    end
    s.calls, s.bytes = s.calls + 1, s.bytes + n
    return "allow"
  end,
}
