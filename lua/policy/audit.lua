-- audit: one record per call, written by the host as a JSON line to the
-- audit file (config key `audit`, size-capped and rotated once), or to
-- stderr when no file is set. The policy itself touches no file.

return {
  name = "audit",
  scope = "call", -- judges the call (operation, size, count), not each object
  options = {},
  check = function() return "allow" end,
  after = function(req, outcome)
    return {
      time = os.date("!%Y-%m-%dT%H:%M:%SZ"),
      tool = req.tool,
      via = req.via, -- the pack tool that called it
      operation = req.operation,
      path = req.path,
      root = req.root,
      decision = outcome.decision,
      reason = outcome.reason,
      code = outcome.code,
      bytes = outcome.bytes,
      duration_ms = outcome.duration_ms,
      session = req.session,
      tenant = req.tenant, -- over HTTP: the tenant whose session made the call
      approved_by = req.approved_by, -- a policy asked, and this approved it
    }
  end,
}
