-- The [root] cases of reference/security-cases.md for read/write/list/stat:
-- P0-9 procfs mounted inside a root, P0-10 bind mount and tmpfs inside a
-- root, P1-9 a casefold filesystem. The mounts are made in a private mount
-- namespace (`unshare -m --propagation private`) by a child shell, which then
-- runs the calls in a separate lua5.4 (probe_child.lua); nothing is mounted
-- in the test runner's namespace, and the mounts vanish with the child.
-- Without the privilege the cases report SKIP (pending), never PASS.

local F = require "security.fixture"

local OUT = "OUTSIDE_ROOT"

describe(F.tag("security: [root] mounts inside a root P0-9, P0-10, P1-9"), function()
  local fx

  lazy_setup(function() fx = F.build() end)
  lazy_teardown(function() F.cleanup(fx) end)

  local function need_ns()
    if not F.can_unshare() then
      pending("SKIP: needs root (CAP_SYS_ADMIN) for a private mount namespace: unshare -m")
      return false
    end
    return true
  end

  -- run calls after `setup` in a private namespace; returns results
  local function ns_probe(setup, calls, extra)
    local spec = {roots = {{path = fx.ws, mode = "rw"}}, calls = calls}
    for k, v in pairs(extra or {}) do spec[k] = v end
    local r, err = F.probe(spec, {ns_setup = setup, timeout = 30})
    assert.is_not_nil(r, "namespace probe failed: " .. tostring(err))
    assert.is_nil(r.open_error, "burrow.open failed in the namespace: " .. F.dump(r.open_error))
    return r
  end

  local function expect(r, i, codes, label)
    local allowed = {}
    for _, c in ipairs(type(codes) == "table" and codes or {codes}) do allowed[c] = true end
    local x = r[i]
    assert.is_false(x.ok, label .. ": succeeded (" .. F.dump(x.content or x.entries) .. ")")
    assert.is_true(allowed[x.code] == true, label .. ": expected " ..
      table.concat(type(codes) == "table" and codes or {codes}, " or ") .. ", got " ..
      tostring(x.code) .. " (" .. tostring(x.msg) .. ")")
    assert.is_nil((x.msg or ""):find(F.SECRET, 1, true), label .. ": message carries outside content")
  end

  it("P0-10 /etc bind-mounted at etcbind/: read, stat, list, write -> OUTSIDE_ROOT; walks stop there", function()
    if not need_ns() then return end
    F.guarded(fx, "etcbind", function()
      local r = ns_probe("mount --bind /etc " .. F.q(fx.ws .. "/etcbind"), {
        {"read_file", {path = "etcbind/passwd"}},
        {"stat", {path = "etcbind/passwd"}},
        {"list_dir", {path = "etcbind"}},
        {"write_file", {path = "etcbind/burrow-sec-probe.txt", content = "PWNED\n"}},
        {"read_file", {path = "etcbind/../file.txt"}},
        {"list_dir", {path = ".", recursive = true, max_depth = 4}},
        {"read_file", {path = "file.txt"}},                           -- control
      })
      expect(r, 1, OUT, "read etcbind/passwd")
      expect(r, 2, OUT, "stat etcbind/passwd")
      expect(r, 3, OUT, "list etcbind")
      expect(r, 4, OUT, "write etcbind/burrow-sec-probe.txt")
      expect(r, 5, OUT, "read etcbind/../file.txt")
      assert.is_true(r[6].ok, "recursive list . failed: " .. tostring(r[6].msg))
      for _, p in ipairs(r[6].entries) do
        assert.is_nil(("/" .. p):find("/etcbind/", 1, true), "walk descended into the bind mount: " .. p)
      end
      assert.is_true(r[7].ok and r[7].content:find("ROOTFILE", 1, true) ~= nil, "control read failed: " .. tostring(r[7].msg))
    end)
  end)

  it("P0-10 a tmpfs mounted inside the root is refused the same way", function()
    if not need_ns() then return end
    F.guarded(fx, "tmpfs", function()
      local mnt = fx.ws .. "/tmpmnt"
      local r = ns_probe("mount -t tmpfs tmpfs " .. F.q(mnt) .. " && echo TMPFSFILE > " .. F.q(mnt .. "/t.txt"), {
        {"read_file", {path = "tmpmnt/t.txt"}},
        {"write_file", {path = "tmpmnt/new.txt", content = "x"}},
        {"list_dir", {path = "tmpmnt"}},
        {"stat", {path = "tmpmnt/t.txt"}},
      })
      expect(r, 1, OUT, "read tmpmnt/t.txt")
      expect(r, 2, OUT, "write tmpmnt/new.txt")
      expect(r, 3, OUT, "list tmpmnt")
      expect(r, 4, OUT, "stat tmpmnt/t.txt")
    end)
  end)

  -- grep's and glob's walker opens each directory in one openat2 with
  -- RESOLVE_NO_XDEV (the O_PATH steps where openat2 is not used): a mount
  -- point inside the root, of another filesystem or a bind mount of this
  -- one, is listed and never entered, never searched
  it("P0-10 grep and glob walks stop at mount points: tmpfs, /etc bound, the root's own filesystem bound", function()
    if not need_ns() then return end
    F.guarded(fx, "walk mounts", function()
      local setup = "mount -t tmpfs tmpfs " .. F.q(fx.ws .. "/tmpmnt") .. " && echo TMPFSFILE > " ..
        F.q(fx.ws .. "/tmpmnt/t.txt") .. " && mount --bind /etc " .. F.q(fx.ws .. "/etcbind") ..
        " && mount --bind " .. F.q(fx.B .. "/outside") .. " " .. F.q(fx.ws .. "/procmnt")
      local r = ns_probe(setup, {
        {"glob", {pattern = "**", type = "any", include_hidden = true, respect_ignore = false}},
        {"grep", {pattern = "TMPFS[F]ILE|TOP[S]ECRET|root:[x]:0", include_hidden = true, respect_ignore = false}},
        {"grep", {pattern = "TOP[S]ECRET", path = "procmnt"}},
        {"glob", {pattern = "procmnt/**"}},
        {"grep", {pattern = "ROOT[F]ILE"}},                               -- control
      })
      assert.is_true(r[1].ok, "glob ** failed: " .. tostring(r[1].msg))
      local seen = {}
      for _, p in ipairs(r[1].entries) do
        seen[p] = true
        for _, m in ipairs({"tmpmnt/", "etcbind/", "procmnt/"}) do
          assert.is_nil(("/" .. p):find("/" .. m, 1, true), "glob entered the mount " .. m .. ": " .. p)
        end
      end
      assert.is_true(seen.tmpmnt and seen.etcbind and seen.procmnt, "the mount points are listed themselves")
      assert.is_true(r[2].ok, "grep failed: " .. tostring(r[2].msg))
      for _, p in ipairs(r[2].files) do
        for _, m in ipairs({"tmpmnt/", "etcbind/", "procmnt/"}) do
          assert.is_nil(("/" .. p):find("/" .. m, 1, true), "grep searched inside the mount " .. m .. ": " .. p)
        end
      end
      assert.is_true(r[3].code == OUT or (r[3].ok and #r[3].files == 0),
        "grep below the bound directory: " .. tostring(r[3].code) .. " " .. F.dump(r[3].files))
      assert.is_true(r[4].ok and #r[4].entries == 0, "glob below the bound directory: " .. F.dump(r[4].entries))
      assert.is_true(r[5].ok and #r[5].files > 0, "control grep found nothing: " .. tostring(r[5].msg))
    end)
  end)

  it("P0-9 procfs mounted at procmnt/: self/root, self/fd/N, self/cwd, 1/root, self/status -> OUTSIDE_ROOT or ELOOP", function()
    if not need_ns() then return end
    local codes = {OUT, "ELOOP"}
    F.guarded(fx, "procmnt", function()
      local r = ns_probe("mount -t proc proc " .. F.q(fx.ws .. "/procmnt"), {
        {"read_file", {path = "procmnt/self/root/etc/passwd"}},
        {"read_file", {path = "procmnt/self/fd/%FD%"}},
        {"read_file", {path = "procmnt/self/cwd/.busted"}},
        {"read_file", {path = "procmnt/1/root/etc/passwd"}},
        {"read_file", {path = "procmnt/self/status"}},
        {"list_dir", {path = "procmnt"}},
        {"stat", {path = "procmnt/self/fd/%FD%"}},
        {"write_file", {path = "procmnt/self/root/" .. fx.B:sub(2) .. "/outside/via_procmnt.txt", content = "x"}},
        {"write_file", {path = "procmnt/self/fd/%FD%", content = "PWNED\n"}},
      }, {outside_fd_of = fx.B .. "/outside/secret.txt"})
      assert.is_not_nil(r.fd, "the probe could not find its fd on the outside file")
      expect(r, 1, codes, "read procmnt/self/root/etc/passwd")
      expect(r, 2, codes, "read procmnt/self/fd/" .. r.fd)
      expect(r, 3, codes, "read procmnt/self/cwd/.busted")
      expect(r, 4, codes, "read procmnt/1/root/etc/passwd")
      expect(r, 5, codes, "read procmnt/self/status")
      expect(r, 6, codes, "list procmnt")
      expect(r, 7, codes, "stat procmnt/self/fd/" .. r.fd)
      expect(r, 8, codes, "write through procmnt/self/root")
      expect(r, 9, {OUT, "ELOOP", "POLICY_DENIED"}, "write procmnt/self/fd/" .. r.fd)
      assert.are.equal(F.SECRET, F.read_host(fx.B .. "/outside/secret.txt"))
    end)
  end)

  it("P1-9 [casefold] a differently-cased link name pointing outside -> OUTSIDE_ROOT (GHSA-4gxg-m5jx-9j57)", function()
    if not need_ns() then return end
    local _, ok = F.run("unshare -m --propagation private sh -c 'mount -t tmpfs -o casefold tmpfs /mnt' 2>/dev/null")
    if not ok then
      pending("SKIP: needs a casefold-capable filesystem (kernel CONFIG_UNICODE: tmpfs -o casefold)")
      return
    end
    local cf = fx.B .. "/cf"
    F.sh("mkdir " .. F.q(cf))
    F.guarded(fx, "casefold", function()
      local setup = "mount -t tmpfs -o casefold tmpfs " .. F.q(cf) .. " && mkdir " .. F.q(cf .. "/ws") ..
        " && (chattr +F " .. F.q(cf .. "/ws") .. " 2>/dev/null || true) && ln -s " ..
        F.q(fx.B .. "/outside") .. " " .. F.q(cf .. "/ws/Link") .. " && ln -s ../../outside " .. F.q(cf .. "/ws/Rel")
      local r, err = F.probe({roots = {{path = cf .. "/ws", mode = "rw"}}, calls = {
        {"write_file", {path = "link/new.txt", content = "PWNED\n"}},
        {"write_file", {path = "LINK/new.txt", content = "PWNED\n"}},
        {"read_file", {path = "link/secret.txt"}},
        {"write_file", {path = "rel/new.txt", content = "PWNED\n"}},
        {"read_file", {path = "REL/secret.txt"}},
      }}, {ns_setup = setup})
      assert.is_not_nil(r, "casefold probe failed: " .. tostring(err))
      for i = 1, 5 do expect(r, i, OUT, "casefold call " .. i) end
      assert.is_false(F.exists(fx.B .. "/outside/new.txt"), "created B/outside/new.txt")
    end, {exclude = {"ws", "cf"}})
  end)
end)
