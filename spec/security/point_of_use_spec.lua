-- Issue 10, "operator rules hold at the point of use": one case per way
-- around the rules that the issue reproduced against the old main, each
-- run between snapshots of everything outside the root, on the backend
-- under test. (The full tool x object x way matrix is
-- bypass_matrix_spec.lua; the swap races are in race_spec.lua.)

local F = require "security.fixture"

local SECRET = "SECRET-d1e8c0a7"

describe(F.tag("security: rules at the point of use (issue 10)"), function()
  local fx, ws, w

  local function put(rel, text)
    F.sh("mkdir -p " .. F.q((w .. "/" .. rel):match("^(.*)/[^/]*$")))
    F.write_host(w .. "/" .. rel, text)
  end
  local function has(rel) return F.exists(w .. "/" .. rel) end
  local function text_of(res) return require("burrow.core").json.encode(res) end

  lazy_setup(function()
    fx = F.build()
    w = fx.ws
    F.sh("mkdir -p " .. F.q(w .. "/.git") .. " " .. F.q(w .. "/.aws") .. " " .. F.q(w .. "/vendor") ..
      " " .. F.q(w .. "/proj/.git"))
    put(".git/config", "[remote] url = https://" .. SECRET .. "@example\n")
    put(".aws/credentials", "aws_secret_access_key = " .. SECRET .. "\n")
    put(".env", "TOKEN=" .. SECRET .. "\n")
    put("vendor/lib.txt", "vendored\n")
    ws = F.open({ { path = w, mode = "rw" } }, { policies = { "default", "secrets" } })
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    F.cleanup(fx)
    F.cleanup_temps() -- the cases' policy folders and audit log
  end)

  it("1. search and listings never show what a direct read denies", function()
    F.guarded(fx, "walks", function()
      F.refused("read .env", { "POLICY_DENIED" }, ws:call("read_file", { path = ".env" }))
      -- (a result echoes its pattern: search for the secret's surroundings)
      local g = F.ok("grep", ws:call("grep", { pattern = "TOKEN|aws_secret|remote", include_hidden = true }))
      assert.is_nil(text_of(g):find(SECRET, 1, true), "grep showed a secret: " .. text_of(g))
      assert.is_true((g.skipped_policy or 0) >= 2, "skipped_policy: " .. tostring(g.skipped_policy))
      local l = F.ok("list_dir -r", ws:call("list_dir", { path = ".", recursive = true, include_hidden = true }))
      for _, e in ipairs(l.entries) do
        assert.is_falsy(e.path:find("credentials", 1, true) or e.path == ".env" or e.path == ".git/config",
          "list_dir showed " .. e.path)
      end
      local gl = F.ok("glob", ws:call("glob", { pattern = "**/*", include_hidden = true }))
      assert.is_nil(text_of(gl):find("credentials", 1, true), "glob named a secret")
      for _, pack in ipairs { { "codex", "grep_files", { pattern = "TOKEN|aws_secret", path = w } },
        { "mcp_filesystem", "search_files", { path = w, pattern = "**/*credentials*" } },
        { "claude_code", "Grep", { pattern = "TOKEN|aws_secret", path = w, output_mode = "content" } } } do
        local pws = F.open({ { path = w, mode = "rw" } }, { policies = { "secrets" }, pack = pack[1] })
        local r = pws:call(pack[2], pack[3])
        pws:close()
        assert.is_nil(r and text_of(r):find(SECRET, 1, true), pack[1] .. " " .. pack[2] .. " showed a secret")
        assert.is_nil(r and text_of(r):find("credentials", 1, true), pack[1] .. " " .. pack[2] .. " named a secret")
      end
    end)
  end)

  it("2. a folder move, copy or remove cannot carry denied or protected paths", function()
    F.guarded(fx, "subtrees", function()
      F.refused("move .git g", { "POLICY_DENIED" }, ws:call("move", { source = ".git", destination = "g" }))
      F.refused("copy .aws x", { "POLICY_DENIED" }, ws:call("copy", { source = ".aws", destination = "x", recursive = true }))
      assert.is_false(has("x/credentials"))
      -- a prepared folder moved onto a protected place, never naming it
      put("d/settings.json", '{"hooks": {"PreToolUse": "curl evil"}}\n')
      F.refused("move d .claude", { "POLICY_DENIED" }, ws:call("move", { source = "d", destination = ".claude" }))
      assert.is_false(has(".claude/settings.json"))
      put("h/hooks/pre-commit", "#!/bin/sh\ncurl evil\n")
      F.refused("move h/hooks .git/hooks", { "POLICY_DENIED" },
        ws:call("move", { source = "h/hooks", destination = ".git/hooks" }))
      F.refused("copy h proj/.git", { "POLICY_DENIED" },
        ws:call("copy", { source = "h/hooks", destination = "proj/.git/hooks", recursive = true }))
      assert.is_false(has(".git/hooks/pre-commit"))
      -- a remove of a folder holding a protected file
      put("p/.claude/settings.json", "{}\n")
      F.refused("remove -r p", { "POLICY_DENIED" }, ws:call("remove", { path = "p", recursive = true }))
      assert.is_true(has("p/.claude/settings.json"))
      -- a refusal counts, never names
      local _, msg = ws:call("copy", { source = ".aws", destination = "y", recursive = true })
      assert.is_nil(msg:find("credentials", 1, true), msg)
    end)
  end)

  it("an edit shows parts of the file it reads: a path whose read is denied is not edited", function()
    local pdir = F.mktemp()
    F.write_host(pdir .. "/noread.lua", [[return { name = "noread", rules = {
      { deny = "read", paths = { "private/**" }, reason = "private" } } }]])
    put("private/plan.txt", "launch " .. SECRET .. "\n")
    local pws = F.open({ { path = w, mode = "rw" } }, { policies = { pdir .. "/noread.lua" } })
    F.guarded(fx, "edit reads", function()
      -- a miss would name the nearest line; a hit would show the diff
      F.refused("edit_file miss", { "POLICY_DENIED" },
        pws:call("edit_file", { path = "private/plan.txt", old_text = "launch zzz", new_text = "x" }))
      F.refused("insert_lines", { "POLICY_DENIED" },
        pws:call("insert_lines", { path = "private/plan.txt", line = 1, content = "x\n" }))
      F.ok("a write is still allowed", pws:call("write_file", { path = "private/new.txt", content = "n\n" }))
    end)
    pws:close()
    assert.are.equal("launch " .. SECRET .. "\n", F.read_host(w .. "/private/plan.txt"))
  end)

  it("6. judged absent, then a link appears before the use: never read (deterministic, via the approval hook)", function()
    local pdir = F.mktemp()
    F.write_host(pdir .. "/ask.lua", [[return { name = "ask", check = function(r)
      if r.path:find("gone/x", 1, true) then return "ask", "t" end return "allow" end }]])
    F.sh("mkdir -p " .. F.q(w .. "/gone"))
    local aws = F.open({ { path = w, mode = "rw" } }, { policies = { "secrets", pdir .. "/ask.lua" } })
    -- the hook runs between the judgement and the use: the window, held open
    local hooks = { approve = function()
      F.sh("ln -sfn ../.env " .. F.q(w .. "/gone/x"))
      return true
    end }
    F.guarded(fx, "appearing link", function()
      for _, c in ipairs {
        { "read_file", { path = "gone/x" } }, { "grep", { pattern = "TOKEN", path = "gone/x" } },
        { "stat", { path = "gone/x" } }, { "copy", { source = "gone/x", destination = "stolen" } },
      } do
        F.sh("rm -f " .. F.q(w .. "/gone/x"))
        local res, msg, code = aws:call(c[1], c[2], hooks)
        assert.is_nil(res and text_of(res):find(SECRET, 1, true), c[1] .. " read the secret")
        assert.is_truthy(res == nil or c[1] == "stat", c[1] .. ": " .. tostring(res and text_of(res)))
        if res == nil then assert.is_truthy(code == "EAGAIN" or code == "POLICY_DENIED", c[1] .. ": " .. tostring(msg)) end
      end
    end)
    aws:close()
    assert.is_false(has("stolen"))
  end)

  it("a read-only call whose object is replaced after its judgement is judged again and answered", function()
    local pdir = F.mktemp()
    F.write_host(pdir .. "/ask.lua", [[return { name = "ask", check = function(r)
      if r.path:find("swap/f", 1, true) then return "ask", "t" end return "allow" end }]])
    F.sh("mkdir -p " .. F.q(w .. "/swap"))
    local aws = F.open({ { path = w, mode = "rw" } }, { policies = { "secrets", pdir .. "/ask.lua" } })
    local asked = 0
    -- the first judgement's window: another process replaces the file (a new inode)
    local hooks = { approve = function()
      asked = asked + 1
      if asked == 1 then
        F.write_host(w .. "/swap/f.new", "second\n")
        F.sh("mv " .. F.q(w .. "/swap/f.new") .. " " .. F.q(w .. "/swap/f"))
      end
      return true
    end }
    F.write_host(w .. "/swap/f", "first\n")
    local res, msg = aws:call("read_file", { path = "swap/f" }, hooks)
    assert.is_not_nil(res, msg)
    assert.matches("second", res.content)
    assert.are.equal(2, asked, "judged again")
    for _, c in ipairs { { "grep", { pattern = "second|first", path = "swap/f" } }, { "stat", { path = "swap/f" } } } do
      asked = 0
      F.write_host(w .. "/swap/f", "first\n")
      local r, m = aws:call(c[1], c[2], hooks)
      assert.is_not_nil(r, c[1] .. ": " .. tostring(m))
      assert.are.equal(2, asked, c[1] .. " judged again")
    end
    aws:close()
  end)

  it("3. a read-only root nested in a read-write root is read-only through either mount", function()
    local nws = F.open({ { path = w, mount = "/workspace", mode = "rw" }, { path = w .. "/vendor", mount = "/vendor", mode = "ro" } })
    F.guarded(fx, "nested ro", function()
      F.refused("write /workspace/vendor/x", { "READ_ONLY_ROOT" },
        nws:call("write_file", { path = "/workspace/vendor/x", content = "x" }))
      F.refused("edit /workspace/vendor/lib.txt", { "READ_ONLY_ROOT" },
        nws:call("edit_file", { path = "/workspace/vendor/lib.txt", old_text = "vendored", new_text = "patched" }))
      F.refused("remove /workspace/vendor", { "INVALID_ARGUMENT", "READ_ONLY_ROOT", "EACCES" },
        nws:call("remove", { path = "/workspace/vendor", recursive = true }))
      F.refused("move /workspace/vendor", { "INVALID_ARGUMENT", "READ_ONLY_ROOT", "EACCES" },
        nws:call("move", { source = "/workspace/vendor", destination = "/workspace/v2" }))
      F.refused("write /vendor/x", { "READ_ONLY_ROOT" }, nws:call("write_file", { path = "/vendor/x", content = "x" }))
      F.ok("read through the outer mount", nws:call("read_file", { path = "/workspace/vendor/lib.txt" }))
      F.ok("write beside it", nws:call("write_file", { path = "/workspace/beside.txt", content = "ok" }))
    end)
    nws:close()
    assert.are.equal("vendored\n", F.read_host(w .. "/vendor/lib.txt"))
    assert.is_false(has("vendor/x"))
    -- one directory served twice would have two modes: refused
    local burrow = F.burrow()
    local bad, msg, code = burrow.open({ roots = { { path = w }, { path = w .. "/./", mount = "/again", mode = "ro" } } })
    assert.is_nil(bad)
    assert.are.equal("INVALID_ARGUMENT", code)
    assert.truthy(msg:find("same directory", 1, true), msg)
  end)

  it("7. case, long paths, the audit of refusals, and the resolver per workspace", function()
    F.guarded(fx, "smaller", function()
      put(".ENV", "TOKEN=" .. SECRET .. "\n")
      F.refused("read .ENV", { "POLICY_DENIED" }, ws:call("read_file", { path = ".ENV" }))
      put("Sub/.Aws/Credentials", SECRET .. "\n")
      F.refused("read Sub/.Aws/Credentials", { "POLICY_DENIED" }, ws:call("read_file", { path = "Sub/.Aws/Credentials" }))
      -- a path the core would not open is refused before any policy; never allowed unresolved
      local long = ("a/"):rep(2100) .. ".env"
      F.refused("long path", { "INVALID_ARGUMENT", "ENOENT" }, ws:call("read_file", { path = long }))
    end)
    -- the audit line of a call the core refused says deny, with the code
    local log = F.mktemp() .. "/audit.jsonl"
    local aws = F.open({ { path = w, mode = "rw" } }, { policies = { "default", "audit" }, audit = log })
    aws:call("read_file", { path = "../outside/secret.txt" })
    aws:call("read_file", { path = "vendor/lib.txt" })
    aws:close()
    local lines = {}
    for l in (F.read_host(log) or ""):gmatch("[^\n]+") do lines[#lines + 1] = require("burrow.core").json.decode(l) end
    assert.are.equal(2, #lines)
    assert.are.equal("deny", lines[1].decision)
    assert.are.equal("OUTSIDE_ROOT", lines[1].code)
    assert.are.equal("allow", lines[2].decision)
    -- the resolver is the workspace's own: a later one does not switch it
    local burrow = F.burrow()
    local a = assert(burrow.open({ roots = { { path = w } }, resolver = "walk" }))
    local b = assert(burrow.open({ roots = { { path = w } }, resolver = "openat2" }))
    assert.are.equal("walk", a:mounts()[1].resolver)
    assert.are.equal("openat2", b:mounts()[1].resolver)
    assert.are.equal("walk", a:mounts()[1].resolver, "opening another workspace switched the first one's resolver")
    a:close()
    b:close()
  end)
end)
