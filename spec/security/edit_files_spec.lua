-- edit_files: a change across files as one is no way around a refusal.
-- Each attack rides along with an honest edit of file.txt: the whole call
-- is refused, nothing in the root or outside it changes (snapshots of the
-- whole fixture, the root included), and the error names the bad file.
-- The paths a direct write or remove is denied (outside the root, through
-- links out, hard links, devices, protected files, staged names), the same
-- file twice by another spelling or a link, a directory, a read-only
-- root, a file another writer changes between the judgement and the
-- commit, and an undo of the change after one file became a link out.

local F = require "security.fixture"

local OUT = { "OUTSIDE_ROOT", "POLICY_DENIED", "ELOOP" }

describe(F.tag("security: edit_files"), function()
  local fx, ws

  lazy_setup(function()
    fx = F.build()
    F.sh("mkdir -p " .. F.q(fx.B .. "/ro"))
    F.write_host(fx.B .. "/ro/r.txt", "RO\n")
    ws = F.open({ { path = fx.ws, mode = "rw" }, { path = fx.B .. "/ro", mode = "ro" } },
      { policies = { "default", "secrets" } })
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    F.cleanup(fx)
  end)

  local HONEST = { path = "file.txt", old_text = "ROOTFILE", new_text = "CHANGED" }

  -- The call with the honest edit first and the attack second: refused
  -- with one of codes, the attack named, nothing anywhere changed.
  local function refused(label, codes, attack, extra, hooks)
    F.guarded(fx, label, function()
      local files = { HONEST, attack }
      for _, e in ipairs(extra or {}) do files[#files + 1] = e end
      local res, msg, code, details = ws:call("edit_files", { files = files }, hooks)
      F.refused(label, codes, res, msg, code)
      assert(type(details) == "table" and (details.file == 2 or details.file == nil),
        label .. ": details.file should name the attack, got " .. F.dump(details))
    end, { exclude = {} })
    assert.equal(F.ROOTFILE, F.read_host(fx.ws .. "/file.txt"), label)
  end

  describe("paths a direct change is denied", function()
    for _, p in ipairs { "../outside/secret.txt", "sub/../../outside/secret.txt", "/etc/passwd",
                         "esc_file", "esc_rel", "sub/esc2", "esc_lex", "esc_abs", "esc_dir/etc/passwd",
                         "esc_updir/secret.txt", "proc_link", "chain1/../../outside/secret.txt",
                         "dangling_out", "dangling_home", "dc_new", "goclaw_x", "to_rootb", "self", "hop1" } do
      it("edit of " .. p, function()
        refused("edit " .. p, OUT, { path = p, old_text = "a", new_text = "b" })
      end)
      it("content for " .. p, function()
        refused("write " .. p, OUT, { path = p, content = "PWNED\n" })
      end)
      it("delete of " .. p, function()
        refused("delete " .. p, OUT, { path = p, delete = true })
      end)
    end
    it("a hard link to a file outside (its other name is out of reach)", function()
      refused("write hl", { "POLICY_DENIED" }, { path = "hl", content = "PWNED\n" })
      refused("delete hl", { "POLICY_DENIED" }, { path = "hl", delete = true })
      assert.equal(F.HARD, F.read_host(fx.B .. "/outside/hard_target.txt"))
    end)
    it("a FIFO, a socket, a device", function()
      refused("write fifo", { "NOT_REGULAR", "POLICY_DENIED" }, { path = "fifo", content = "x" })
      refused("delete sock", { "NOT_REGULAR", "POLICY_DENIED" }, { path = "sock", delete = true })
      if fx.have.dev0 then refused("write dev0", { "NOT_REGULAR", "POLICY_DENIED" }, { path = "dev0", content = "x" }) end
    end)
    it("protected files (git config and hooks, shell start-up, agent settings)", function()
      for _, p in ipairs { ".git/config", ".git/hooks/pre-commit", ".bashrc", ".claude/settings.json", ".mcp.json",
                           "sub/.vscode/tasks.json" } do
        refused("write " .. p, { "POLICY_DENIED" }, { path = p, content = "PWNED\n" })
      end
    end)
    it("a secrets policy's file", function()
      refused("write .env", { "POLICY_DENIED" }, { path = ".env", content = "KEY=1\n" })
    end)
    it("a staged name (where a change keeps its new contents)", function()
      refused("write staged", { "OUTSIDE_ROOT", "POLICY_DENIED", "INVALID_ARGUMENT", "EACCES" },
        { path = ".burrow-stage.e.1.0000000000000000", content = "x" })
    end)
    it("a read-only root", function()
      refused("write ro", { "READ_ONLY_ROOT" }, { path = fx.B .. "/ro/r.txt", content = "x" })
      assert.equal("RO\n", F.read_host(fx.B .. "/ro/r.txt"))
    end)
    it("a directory", function()
      refused("edit sub", { "EISDIR" }, { path = "sub", old_text = "a", new_text = "b" })
      refused("delete sub", { "EISDIR" }, { path = "sub", delete = true })
    end)
  end)

  describe("one file twice", function()
    for _, p in ipairs { "file.txt", "./file.txt", "sub/../file.txt", "a/../file.txt", "sub/up_in", "abs_in",
                         "chain1", "hop1" } do
      it("file.txt and " .. p, function()
        -- abs_in: an absolute link, which the resolver takes as leaving the root
        refused("twice " .. p, { "INVALID_ARGUMENT", "POLICY_DENIED", "ELOOP", "OUTSIDE_ROOT" }, { path = p, content = "TWICE\n" })
      end)
    end
    it("a file and its in-root link, the link first", function()
      F.guarded(fx, "link first", function()
        local res, msg, code = ws:call("edit_files", { files = {
          { path = "link_in", content = "X\n" }, { path = "sub/file.txt", content = "Y\n" } } })
        F.refused("link first", { "INVALID_ARGUMENT", "POLICY_DENIED" }, res, msg, code)
      end, { exclude = {} })
    end)
  end)

  it("its diff shows what it edits, replaces or removes: a path whose read is denied is not touched", function()
    local pdir = F.mktemp()
    F.write_host(pdir .. "/noread.lua", [[return { name = "noread", rules = {
      { deny = "read", paths = { "private/**" }, reason = "private" } } }]])
    F.sh("mkdir -p " .. F.q(fx.ws .. "/private"))
    F.write_host(fx.ws .. "/private/plan.txt", "launch " .. F.SECRET .. "\n")
    local pws = F.open({ { path = fx.ws, mode = "rw" } }, { policies = { pdir .. "/noread.lua" } })
    for _, attack in ipairs { { path = "private/plan.txt", old_text = "launch zzz", new_text = "x" },
                              { path = "private/plan.txt", content = "x\n" },
                              { path = "private/plan.txt", delete = true } } do
      F.guarded(fx, "read denied", function()
        local res, msg, code = pws:call("edit_files", { files = { HONEST, attack } })
        F.refused("read denied", { "POLICY_DENIED" }, res, msg, code)
      end, { exclude = {} })
    end
    pws:close()
    F.rmtree(pdir)
    F.sh("rm -rf " .. F.q(fx.ws .. "/private"))
  end)

  it("a file another writer changes between the judgement and the commit", function()
    local calls = 0
    local hooks = { cancelled = function()
      calls = calls + 1
      if calls == 3 then F.write_host(fx.ws .. "/sub/file.txt", "RACED\n") end -- after both are judged
      return false
    end }
    local res, msg, code, details = ws:call("edit_files", { files = { HONEST,
      { path = "sub/file.txt", old_text = "SUBFILE", new_text = "PWNED" } } }, hooks)
    F.refused("raced", { "HASH_MISMATCH" }, res, msg, code)
    assert.equal(2, details.file)
    assert.equal(F.ROOTFILE, F.read_host(fx.ws .. "/file.txt"))
    assert.equal("RACED\n", F.read_host(fx.ws .. "/sub/file.txt"))
    F.write_host(fx.ws .. "/sub/file.txt", F.SUBFILE)
  end)

  it("an undo of the change after one of its files became a link out: refused, nothing outside touched", function()
    F.write_host(fx.ws .. "/u1.txt", "U1\n")
    F.write_host(fx.ws .. "/u2.txt", "U2\n")
    F.ok("change", ws:call("edit_files", { files = { { path = "u1.txt", content = "N1\n" }, { path = "u2.txt", content = "N2\n" } } }))
    F.sh("rm " .. F.q(fx.ws .. "/u2.txt") .. " && ln -s " .. F.q(fx.B .. "/outside/secret.txt") .. " " .. F.q(fx.ws .. "/u2.txt"))
    F.guarded(fx, "undo", function()
      local res, msg, code = ws:call("undo_edit", { path = "u1.txt" })
      F.refused("undo through a link", { "HASH_MISMATCH", "POLICY_DENIED", "OUTSIDE_ROOT" }, res, msg, code)
    end, { exclude = {} })
    assert.equal(F.SECRET, F.read_host(fx.B .. "/outside/secret.txt"))
    assert.equal("N1\n", F.read_host(fx.ws .. "/u1.txt"))
    F.sh("rm -f " .. F.q(fx.ws .. "/u1.txt") .. " " .. F.q(fx.ws .. "/u2.txt"))
  end)
end)
