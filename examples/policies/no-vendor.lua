-- no-vendor: the agent may read vendor/ but not change it (docs/policies.md).
-- Options: dir (default "vendor").
local dir = (... or {}).dir or "vendor" -- the options are the file's `...`
local function inside(p) return p == dir or p:sub(1, #dir + 1) == dir .. "/" end
return { name = "no-vendor", check = function(req)
  if req.operation ~= "read" and req.operation ~= "list"
      and (inside(req.rel) or (req.resolved and inside(req.resolved))) then
    return "deny", dir .. "/ is managed by the package manager; change the manifest instead"
  end
  return "allow"
end }
