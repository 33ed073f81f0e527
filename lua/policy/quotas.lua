-- quotas: a budget of bytes written and of calls per minute for each
-- principal (the request's tenant and token: every session and every
-- stateless request of one token share it; over stdio, the process), in
-- the deployment's state store (state.*: burrow mcp's one for the
-- process, shared by its HTTP workers), or with a store, in a file every
-- burrow process using it shares.
--
-- options: max_bytes_written (a number or a size like "100MB", "64MiB")
--          max_calls_per_minute (a number)
--          store (a file: the counters live there, under a lock the host
--                 takes; docs/policies.md#quotas)

local options = ... or {}

local max_bytes = options.max_bytes_written and size(options.max_bytes_written)
local max_calls = tonumber(options.max_calls_per_minute)
local shared = options.store ~= nil
local LIFETIME = 366 * 86400 -- a byte budget lasts as long as the store keeps it
local MINUTE = 120 -- a minute's count, kept a little past its minute

local function calls_msg() return ("quota: %d calls per minute reached; wait and retry"):format(max_calls) end
local function bytes_msg(n, used)
  return ("quota: writing %d bytes would pass the %d bytes this client may write%s (%d used)")
    :format(n, max_bytes, shared and " in the shared store" or "", used)
end
-- the store could not answer: deny (never allow what was not counted)
local function failed(why) return "deny", "quota: the state store did not answer (" .. tostring(why) .. "); try again later" end

return {
  name = "quotas",
  scope = "call", -- judges the call (operation, size, count), not each object
  options = { "max_bytes_written", "max_calls_per_minute", "store" },
  check = function(req)
    -- the principal: the tenant is the store's (its share), the token the key's
    local tenant, who = req.tenant or "default", req.token or "-"
    local n = req.operation == "write" and req.size or 0
    -- a commit that corrects the size judged at the call (a charset's
    -- bytes: ctx:recount) charges what the call did not
    if req.commit and req.charged then n = math.max(0, n - req.charged) end
    -- a commit (req.commit) is the same call telling the size the core
    -- will write: its bytes count, not another call
    local calls_key = max_calls and not req.commit and ("quotas/calls/%s/%d"):format(who, os.time() // 60)
    if calls_key then
      local ok, why = state.add(tenant, calls_key, 1, max_calls, MINUTE)
      if ok == nil then return failed(why) end
      if not ok then return "deny", calls_msg() end
    end
    if max_bytes and n > 0 then
      local ok, used = state.add(tenant, "quotas/bytes/" .. who, n, max_bytes, LIFETIME)
      if not ok then
        if calls_key then state.add(tenant, calls_key, -1, -1, MINUTE) end -- not made
        if ok == nil then return failed(used) end
        return "deny", bytes_msg(n, used)
      end
    end
    return "allow"
  end,
}
