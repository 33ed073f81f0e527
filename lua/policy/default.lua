-- default: what burrow serves with no policy configured. The core already
-- holds every call to its roots, their modes (READ_ONLY_ROOT) and the caps
-- (TOO_LARGE); this policy allows what the core allows, and is the template
-- for your own: copy it, add a rule, list it under `policies:`.
--
-- options: max_file_size (bytes, or a size like "10MB") - refuse writes
-- larger than this, a tighter limit than the max_file_size cap.

local options = ... or {}
local max = options.max_file_size and size(options.max_file_size)

-- Without the option there is nothing to judge: no check() to run on
-- every call (an empty rule list keeps the file a valid policy).
return {
  name = "default",
  scope = "call", -- judges the call (operation, size, count), not each object
  options = { "max_file_size" },
  rules = {},
  check = max and function(req)
    if req.size and req.size > max then
      return "deny", ("%d bytes is over this policy's max_file_size (%d)"):format(req.size, max)
    end
    return "allow"
  end or nil,
}
