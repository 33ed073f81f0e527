-- secrets: keeps credentials out of the agent's reach. A path is checked
-- both as the agent wrote it and as it resolves (through symlinks), and
-- paths that do not exist yet are checked too (so a protected file cannot
-- be created). The list is in docs/policies.md.
--
-- options: extra = {lua patterns matched against the in-root path}
--          allow = {exact in-root paths to let through}

local options = ... or {}

-- file names never read or written
local NAMES = {
  [".git-credentials"] = true, [".netrc"] = true, [".npmrc"] = true, [".pypirc"] = true,
  [".pgpass"] = true, [".htpasswd"] = true, ["credentials.json"] = true,
  ["id_rsa"] = true, ["id_dsa"] = true, ["id_ecdsa"] = true, ["id_ed25519"] = true,
  ["terraform.tfvars"] = true, [".terraformrc"] = true,
}
-- .env files, except the committed templates
local ENV_TEMPLATES = { [".env.example"] = true, [".env.sample"] = true, [".env.template"] = true, [".env.dist"] = true }
-- extensions of key and certificate stores
local EXTS = { pem = true, key = true, p12 = true, pfx = true, jks = true, keystore = true, kdbx = true }
-- directories whose whole content is secret
local DIRS = { [".ssh"] = true, [".gnupg"] = true, [".azure"] = true }
-- in-root path suffixes (after a / or at the start)
local SUFFIXES = { ".git/config", ".aws/credentials", ".aws/config", ".kube/config",
  ".docker/config.json", ".config/gcloud" }
-- agent and tool configuration: readable, never written (hooks run code)
local PROTECTED = { ".claude/settings.json", ".claude/settings.local.json", ".mcp.json", ".git/hooks" }

local function ends_with(path, suffix)
  return path == suffix or path:sub(-#suffix - 1) == "/" .. suffix
end

local function under(path, dir)
  return ends_with(path, dir) or path:find("/" .. dir .. "/", 1, true) ~= nil
    or path:sub(1, #dir + 1) == dir .. "/"
end

local function secret(path)
  if options.allow then
    for _, p in ipairs(options.allow) do if p == path then return nil end end
  end
  local name = path:match("([^/]+)$") or path
  if NAMES[name] then return name end
  if (name == ".env" or name:sub(1, 5) == ".env.") and not ENV_TEMPLATES[name] then return name end
  local ext = name:match("%.([%w]+)$")
  if ext and EXTS[ext:lower()] then return "*." .. ext end
  for dir in path:gmatch("([^/]+)/") do
    if DIRS[dir] then return dir .. "/" end
  end
  if DIRS[name] then return name .. "/" end
  for _, s in ipairs(SUFFIXES) do
    if ends_with(path, s) or under(path, s) then return s end
  end
  for _, pat in ipairs(options.extra or {}) do
    if path:find(pat) then return pat end
  end
end

local function protected(path)
  for _, p in ipairs(PROTECTED) do
    if ends_with(path, p) or under(path, p) then return p end
  end
end

return {
  name = "secrets",
  options = { "extra", "allow" },
  check = function(req)
    for _, path in ipairs { req.path, req.rel, req.resolved } do
      local hit = secret(path)
      if hit then
        return "deny", ("%s matches the secrets policy (%s)"):format(req.path, hit)
      end
      if req.operation == "write" or req.operation == "delete" then
        hit = protected(path)
        if hit then
          return "deny", ("%s is agent or tool configuration (%s): the secrets policy does not let it change"):format(req.path, hit)
        end
      end
    end
    return "allow"
  end,
}
