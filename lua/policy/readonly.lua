-- readonly: reads and listings only; every write and delete is denied,
-- whatever the roots' modes say.

return {
  name = "readonly",
  scope = "call", -- judges the call (operation, size, count), not each object
  options = {},
  check = function(req)
    if req.operation == "write" or req.operation == "delete" then
      return "deny", "the readonly policy allows no changes"
    end
    return "allow"
  end,
}
