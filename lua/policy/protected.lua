-- protected: files that run code or steer an agent later, never changed by
-- one: git hooks and config, shell start-up files, the configuration of
-- agents (MCP servers, hooks, commands) and editors (tasks, run settings).
-- On out of the box: burrow adds it to every workspace's policies unless
-- the configuration says `protect: none`; `protect: {except: [NAME]}` lets
-- the named rules go. Declared rules, so the core applies them to every
-- object a call touches: the path named (as the resolver saw it, through
-- links), and each entry a folder move, copy or remove takes or creates
-- (so renaming or removing an ancestor, or moving a folder prepared
-- elsewhere into .git, is refused too). Reads are not refused. Case is
-- folded. The list is in docs/policies.md.
--
-- options: except = {rule names let go, e.g. "vscode"}

local options = ... or {}

-- name, what it is (the agent is told), globs (each also as a folder's
-- entries where it names one)
local RULES = {
  { "git-hooks", "git hooks run code at git commands", { ".git/hooks", ".husky" } },
  { "git-config", "git configuration can run code (core.hooksPath, aliases, filters)", { ".git/config", ".gitmodules" } },
  { "shell-startup", "shell start-up files run at each shell", { ".bashrc", ".bash_profile", ".bash_login", ".bash_logout",
    ".profile", ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".cshrc", ".tcshrc", ".kshrc",
    ".config/fish", ".envrc" } },
  { "mcp-config", "MCP server lists start programs", { ".mcp.json", ".cursor/mcp.json", ".vscode/mcp.json" } },
  { "claude", "Claude Code settings, hooks, commands and agents", { ".claude/settings.json", ".claude/settings.local.json",
    ".claude/commands", ".claude/agents", ".claude/hooks" } },
  { "agents", "other agents' settings, hooks and commands", { ".codex", ".gemini", ".cursor/hooks.json", ".cursor/rules",
    ".windsurf", ".continue", ".aider.conf.yml" } },
  { "vscode", "editor tasks and settings run commands", { ".vscode" } },
  { "idea", "JetBrains run configurations run commands", { ".idea" } },
  { "devcontainer", "dev container commands run at build and start", { ".devcontainer" } },
  { "ripgreprc", "ripgrep's config can name a preprocessor to run", { ".ripgreprc" } },
}

local off = {}
local names = {}
for _, r in ipairs(RULES) do names[#names + 1] = r[1] end
for _, n in ipairs(options.except or {}) do
  local known = false
  for _, r in ipairs(RULES) do known = known or r[1] == n end
  if not known then
    error(("protect.except: no rule named %q (the rules: %s)"):format(tostring(n), table.concat(names, ", ")), 0)
  end
  off[n] = true
end

local rules = {}
for _, r in ipairs(RULES) do
  if not off[r[1]] then
    local paths = {}
    for _, g in ipairs(r[3]) do
      paths[#paths + 1] = "**/" .. g
      paths[#paths + 1] = "**/" .. g .. "/**"
    end
    rules[#rules + 1] = { deny = "change", casefold = true, paths = paths,
      reason = ("%s: %s; the operator can let it go with protect: {except: [%s]}"):format(r[1], r[2], r[1]) }
  end
end

return {
  name = "protected",
  options = { "except" },
  rules = rules,
}
