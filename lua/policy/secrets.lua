-- secrets: keeps credentials out of the agent's reach. Declared rules, so
-- the core applies them to every object a call touches: the path named
-- (as the resolver saw it, through links), each entry a grep, glob or
-- recursive listing would reveal (skipped in the walker threads, counted,
-- never named), each entry a folder move, copy or remove takes or creates.
-- Case is folded (".ENV" is ".env": file systems that fold case would
-- open the same file). The list is in docs/policies.md.
--
-- options: extra = {globs of in-root paths also secret, e.g. "config/prod/**"}
--          allow = {in-root paths (globs) let through, e.g. ".env.local"}

local options = ... or {}
local allow = options.allow or {}

-- .env files committed as templates
local TEMPLATES = { "**/.env.example", "**/.env.sample", "**/.env.template", "**/.env.dist" }
local function except(list)
  local out = {}
  for _, p in ipairs(list or {}) do out[#out + 1] = p end
  for _, p in ipairs(allow) do out[#out + 1] = p end
  return out
end

local rules = {}
local function deny(ops, reason, paths, exc)
  rules[#rules + 1] = { deny = ops, casefold = true, reason = reason, paths = paths, except = except(exc) }
end

-- names never read or written, wherever they are
for _, n in ipairs { ".env", ".git-credentials", ".netrc", ".npmrc", ".pypirc", ".pgpass", ".htpasswd",
  "credentials.json", "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "terraform.tfvars", ".terraformrc" } do
  deny("all", n, { "**/" .. n })
end
deny("all", ".env.*", { "**/.env.*" }, TEMPLATES)
-- key and certificate stores
for _, e in ipairs { "pem", "key", "p12", "pfx", "jks", "keystore", "kdbx" } do
  deny("all", "*." .. e, { "**/*." .. e })
end
-- folders whose whole content is secret
for _, d in ipairs { ".ssh", ".gnupg", ".azure", ".aws", ".config/gcloud" } do
  deny("all", d .. "/", { "**/" .. d, "**/" .. d .. "/**" })
end
-- credentials inside tool folders
for _, f in ipairs { ".git/config", ".kube/config", ".docker/config.json" } do
  deny("all", f, { "**/" .. f })
end
for _, g in ipairs(options.extra or {}) do deny("all", g, { g }) end
-- agent and tool configuration: readable, never changed (hooks run code)
for _, f in ipairs { ".claude/settings.json", ".claude/settings.local.json", ".mcp.json" } do
  deny("change", "agent or tool configuration (" .. f .. "): the secrets policy does not let it change", { "**/" .. f })
end
deny("change", "agent or tool configuration (.git/hooks): the secrets policy does not let it change",
  { "**/.git/hooks", "**/.git/hooks/**" })

return {
  name = "secrets",
  options = { "extra", "allow" },
  rules = rules,
}
