-- P0-1 .. P0-7 and the unprivileged part of P0-9 (reference/security-cases.md)
-- for read_file, write_file, list_dir and stat. Each case runs between two
-- snapshots of everything outside the root (the side-effect check).

local F = require "security.fixture"

local OUT = "OUTSIDE_ROOT"

describe(F.tag("security: containment P0-1..P0-7, P0-9"), function()
  local fx, ws, wsv

  lazy_setup(function()
    fx = F.build()
    ws = F.open({{path = fx.ws, mode = "rw"}})                          -- mount = host path
    wsv = F.open({{path = fx.ws, mount = "/workspace", mode = "rw"}})   -- virtual mount
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    if wsv then wsv:close() end
    F.cleanup(fx)
  end)

  -- All four tools on one path must be refused with `code`.
  local function refuse_all(h, path, code, tools)
    tools = tools or {"read_file", "stat", "list_dir", "write_file"}
    for _, tool in ipairs(tools) do
      local args = {path = path}
      if tool == "write_file" then args.content = "PWNED\n" end
      local res, msg, c = h:call(tool, args)
      F.refused(tool .. " " .. ("%q"):format(path), code, res, msg, c)
    end
  end

  describe("P0-1 dot-dot escapes", function()
    local inputs = {         -- the doc's inputs
      "../outside/secret.txt",
      "sub/../../outside/secret.txt",
      "a/b/../../../outside/x",
      "sub//..//..//outside/secret.txt",
    }
    for _, p in ipairs(inputs) do
      it("read/stat/list/write " .. ("%q"):format(p) .. " -> OUTSIDE_ROOT", function()
        F.guarded(fx, p, function() refuse_all(ws, p, OUT) end)
      end)
    end
    -- more spellings of the same escape; a write may also stop at the final
    -- name check ("..", trailing slash) before resolution
    for _, p in ipairs({"../outside", "..", "../", "sub/../..", "./../outside/new.txt",
                        "../ws_secret/secret.txt", "b/c/d/e/f/../../../../../../outside/new.txt"}) do
      it("read/stat/list " .. ("%q"):format(p) .. " -> OUTSIDE_ROOT, write refused", function()
        F.guarded(fx, p, function()
          refuse_all(ws, p, OUT, {"read_file", "stat", "list_dir"})
          refuse_all(ws, p, {OUT, "INVALID_ARGUMENT", "EISDIR"}, {"write_file"})
        end)
      end)
    end

    it("absolute {mount}/../outside/secret.txt -> OUTSIDE_ROOT (host-path and /workspace mounts)", function()
      F.guarded(fx, "{mount}/..", function()
        refuse_all(ws, fx.ws .. "/../outside/secret.txt", OUT)
        refuse_all(ws, fx.ws .. "/sub/../../outside/new.txt", OUT)
        refuse_all(wsv, "/workspace/../outside/secret.txt", OUT)
        refuse_all(wsv, "/workspace/sub/../../outside/new.txt", OUT)
      end)
    end)

    it("control: sub/../file.txt and b/c/d/../../c/file succeed", function()
      F.guarded(fx, "control", function()
        F.reads("read sub/../file.txt", "ROOTFILE", ws:call("read_file", {path = "sub/../file.txt"}))
        F.reads("read b/c/d/../../c/file", "BCFILE", ws:call("read_file", {path = "b/c/d/../../c/file"}))
        F.reads("read sub//./file.txt", "SUBFILE", ws:call("read_file", {path = "sub//./file.txt"}))
        local st = F.ok("stat b/c/d/../../c/file", ws:call("stat", {path = "b/c/d/../../c/file"}))
        assert.are.equal("file", st.type)
        local l = F.ok("list sub/..", ws:call("list_dir", {path = "sub/.."}))
        local names = {}
        for _, e in ipairs(l.entries) do names[e.name] = true end
        assert.is_true(names["file.txt"] and names["sub"], "list sub/.. should list the root")
        F.ok("write sub/../ctl_new.txt", ws:call("write_file", {path = "sub/../ctl_new.txt", content = "CTL\n"}))
        assert.are.equal("CTL\n", F.read_host(fx.ws .. "/ctl_new.txt"))
      end)
    end)
  end)

  describe("P0-2 absolute paths", function()
    it("/etc/passwd and other host paths -> OUTSIDE_ROOT", function()
      F.guarded(fx, "host paths", function()
        for _, h in ipairs({ws, wsv}) do
          refuse_all(h, "/etc/passwd", OUT, {"read_file", "stat"})
          refuse_all(h, "/etc", OUT, {"list_dir", "stat"})
          refuse_all(h, "/", OUT, {"list_dir"})
          refuse_all(h, fx.B .. "/outside/secret.txt", OUT)
          refuse_all(h, fx.B .. "/outside/abs_new.txt", OUT, {"write_file"})
          refuse_all(h, "/etc/burrow-sec-probe.txt", OUT, {"write_file"})
        end
      end)
    end)

    it("{mount}/file.txt succeeds, matched component-wise", function()
      F.guarded(fx, "mount paths", function()
        F.reads("read {hostmount}/file.txt", "ROOTFILE", ws:call("read_file", {path = fx.ws .. "/file.txt"}))
        F.reads("read /workspace/file.txt", "ROOTFILE", wsv:call("read_file", {path = "/workspace/file.txt"}))
        F.reads("read /workspace/sub/../file.txt", "ROOTFILE",
          wsv:call("read_file", {path = "/workspace/sub/../file.txt"}))
        F.reads("read /workspace/./sub/file.txt", "SUBFILE",
          wsv:call("read_file", {path = "/workspace/./sub/file.txt"}))
        local st = F.ok("stat /workspace", wsv:call("stat", {path = "/workspace"}))
        assert.are.equal("dir", st.type)
        local l = F.ok("list /workspace", wsv:call("list_dir", {path = "/workspace"}))
        assert.is_true(#l.entries > 10, "list /workspace should list the root")
        F.ok("write /workspace/abs_created.txt",
          wsv:call("write_file", {path = "/workspace/abs_created.txt", content = "ABS\n"}))
        assert.are.equal("ABS\n", F.read_host(fx.ws .. "/abs_created.txt"))
        F.ok("write {hostmount}/abs_created2.txt",
          ws:call("write_file", {path = fx.ws .. "/abs_created2.txt", content = "ABS2\n"}))
        assert.are.equal("ABS2\n", F.read_host(fx.ws .. "/abs_created2.txt"))
      end)
    end)

    it("with mount /workspace the host path of the root is not an alias -> OUTSIDE_ROOT", function()
      F.guarded(fx, "host alias", function()
        refuse_all(wsv, fx.ws .. "/file.txt", OUT, {"read_file", "stat", "write_file"})
        refuse_all(wsv, fx.ws, OUT, {"list_dir", "stat"})
        refuse_all(wsv, fx.ws .. "/hostalias.txt", OUT, {"write_file"})
        assert.is_false(F.exists(fx.ws .. "/hostalias.txt"), "write through the host alias created a file")
        assert.are.equal(F.ROOTFILE, F.read_host(fx.ws .. "/file.txt"))
      end)
    end)

    it("mount-name prefixes are not the mount: /workspacex, /workspace_evil -> OUTSIDE_ROOT", function()
      F.guarded(fx, "virtual prefix", function()
        for _, p in ipairs({"/workspacex/file.txt", "/workspace_evil/x", "/workspace2/x",
                            '/workspace"/x', "/workspace /x", "/workspace\t/x", "/work"}) do
          refuse_all(wsv, p, OUT)
        end
      end)
    end)

    it("a root configured through a symlink (B/wslink -> B/ws) accepts both spellings", function()
      local h = F.open({{path = fx.B .. "/wslink", mode = "rw"}})
      F.guarded(fx, "wslink", function()
        F.reads("read wslink/file.txt", "ROOTFILE", h:call("read_file", {path = fx.B .. "/wslink/file.txt"}))
        F.reads("read canonical ws/file.txt", "ROOTFILE", h:call("read_file", {path = fx.ws .. "/file.txt"}))
        F.reads("read relative file.txt", "ROOTFILE", h:call("read_file", {path = "file.txt"}))
        refuse_all(h, fx.B .. "/wslink/../outside/secret.txt", OUT)
        refuse_all(h, fx.B .. "/outside/secret.txt", OUT)
        refuse_all(h, fx.B .. "/wslinkx/x", OUT, {"read_file", "write_file"})
      end)
      h:close()
    end)
  end)

  describe("P0-3 prefix confusion (CVE-2025-53110, d00c60df, GHSA-7rgq, PicoClaw #222)", function()
    local function siblings()
      local B = fx.B
      return {
        B .. "/ws_secret/secret.txt", B .. "/ws_evil/x", B .. "/ws2/x", B .. "/ws.bak/x",
        B .. "/ws-old/x", B .. "/wsanything", B .. '/ws"/x', B .. "/ws'/x", B .. "/ws /x",
        B .. "/ws\t/x", B .. "/ws_backup/x", B .. "/wsile/x", B .. "/wsdef/secret",
      }
    end
    it("sibling files: read, stat, write -> OUTSIDE_ROOT; nothing created", function()
      F.guarded(fx, "siblings", function()
        for _, p in ipairs(siblings()) do
          refuse_all(ws, p, OUT, {"read_file", "stat", "write_file"})
        end
      end)
    end)
    it("sibling directories: list -> OUTSIDE_ROOT", function()
      F.guarded(fx, "sibling dirs", function()
        for _, s in ipairs(F.SIBLINGS) do refuse_all(ws, fx.B .. "/" .. s, OUT, {"list_dir"}) end
        refuse_all(ws, fx.B .. "/ws_secret", OUT, {"list_dir"})
        refuse_all(ws, fx.B .. "/wsanything", OUT, {"list_dir"})
        refuse_all(ws, fx.B, OUT, {"list_dir"})
      end)
    end)
    it("quotes and spaces stay literal: 'file.txt ', '\"file.txt\"' -> ENOENT, never file.txt", function()
      F.guarded(fx, "literal names", function()
        for _, p in ipairs({"file.txt ", '"file.txt"', "'file.txt'", " file.txt", "file.txt\t"}) do
          refuse_all(ws, p, "ENOENT", {"read_file", "stat"})
        end
      end)
    end)
  end)

  describe("P0-4 symlink to an outside file (CVE-2025-53109)", function()
    for _, link in ipairs({"esc_abs", "esc_file"}) do
      it(link .. ": read, write, truncate -> OUTSIDE_ROOT; target unchanged", function()
        F.guarded(fx, link, function()
          refuse_all(ws, link, OUT, {"read_file"})
          F.refused("write " .. link, OUT, ws:call("write_file", {path = link, content = "PWNED\n"}))
          F.refused("truncate " .. link, OUT, ws:call("write_file", {path = link, content = ""}))
          F.refused("write " .. link .. " create_dirs=false", OUT,
            ws:call("write_file", {path = link, content = "PWNED\n", create_dirs = false}))
          F.refused("read /workspace/" .. link, OUT, wsv:call("read_file", {path = "/workspace/" .. link}))
          assert.are.equal("link", (F.lstat(fx.ws .. "/" .. link).type:match("link")),
            link .. " must still be a symlink")
        end)
      end)
      it(link .. ": stat has lstat semantics and carries nothing of the target", function()
        F.guarded(fx, "stat " .. link, function()
          local st = F.ok("stat " .. link, ws:call("stat", {path = link}))
          local host = F.lstat(fx.ws .. "/" .. link)
          assert.are.equal("symlink", st.type)
          assert.is_true(st.is_symlink)
          local want = F.sh("readlink " .. F.q(fx.ws .. "/" .. link)):gsub("\n$", "")
          assert.are.equal(want, st.target)
          assert.are.equal(host.size, st.size, "stat size must be the link's own lstat size")
          for _, s in ipairs(F.strings(st)) do
            assert.is_nil(s:find(F.SECRET, 1, true), "stat result carries outside content")
          end
        end)
      end)
    end
    it("list_dir reports links with lstat data (MCP list_directory_with_sizes leak)", function()
      F.guarded(fx, "list sizes", function()
        local l = F.ok("list .", ws:call("list_dir", {path = "."}))
        local seen = {}
        for _, e in ipairs(l.entries) do seen[e.name] = e end
        for _, name in ipairs({"esc_abs", "esc_file", "esc_dir", "esc_updir", "hl"}) do
          assert.is_not_nil(seen[name], "list . misses " .. name)
        end
        for _, name in ipairs({"esc_abs", "esc_file", "esc_dir", "esc_updir"}) do
          local e = seen[name]
          assert.are.equal("symlink", e.type, name .. " should be listed as a symlink")
          if e.size ~= nil then
            assert.are.equal(F.lstat(fx.ws .. "/" .. name).size, e.size, name .. ": size must come from lstat")
          end
        end
      end)
    end)
  end)

  describe("P0-5 relative escape links", function()
    for _, link in ipairs({"esc_rel", "sub/esc2", "esc_lex"}) do
      it(link .. ": read and write -> OUTSIDE_ROOT", function()
        F.guarded(fx, link, function()
          refuse_all(ws, link, OUT, {"read_file", "write_file"})
          F.refused("truncate " .. link, OUT, ws:call("write_file", {path = link, content = ""}))
          refuse_all(ws, link .. "/", {OUT, "ENOTDIR"}, {"read_file", "stat", "list_dir"})
        end)
      end)
    end
    it("escape_link1 (../../../../../../../../../../target) -> OUTSIDE_ROOT, /target not created", function()
      F.guarded(fx, "escape_link1", function()
        refuse_all(ws, "escape_link1", OUT, {"read_file", "list_dir"})
        refuse_all(ws, "escape_link1/x", OUT, {"read_file", "stat", "write_file"})
        F.refused("write escape_link1", {OUT, "POLICY_DENIED"},
          ws:call("write_file", {path = "escape_link1", content = "PWNED\n"}))
      end)
    end)
  end)

  describe("P0-6 directory link as an intermediate component", function()
    local reads = {"esc_dir/etc/passwd", "root_link1/etc/passwd", "root_link2/etc/passwd",
                   "root_link3/etc/passwd", "esc_updir/secret.txt", "d_link/etc/passwd",
                   "esc_updir/hard_target.txt"}
    it("read and stat through outside dir links -> OUTSIDE_ROOT", function()
      F.guarded(fx, "reads", function()
        for _, p in ipairs(reads) do refuse_all(ws, p, OUT, {"read_file", "stat"}) end
      end)
    end)
    it("list esc_updir, esc_dir, root_link1..3 -> OUTSIDE_ROOT", function()
      F.guarded(fx, "lists", function()
        for _, p in ipairs({"esc_updir", "esc_updir/", "esc_dir", "root_link1", "root_link2",
                            "root_link3", "esc_updir/.", "esc_dir/etc"}) do
          refuse_all(ws, p, OUT, {"list_dir"})
        end
        refuse_all(ws, "esc_updir/", OUT, {"stat"})
      end)
    end)
    it("write esc_updir/new.txt and friends -> OUTSIDE_ROOT; nothing created", function()
      local Brel = fx.B:sub(2)
      F.guarded(fx, "writes", function()
        for _, p in ipairs({"esc_updir/new.txt", "esc_updir/secret.txt", "esc_updir/d/new.txt",
                            "esc_dir/" .. Brel .. "/outside/via_esc_dir.txt",
                            "root_link1/" .. Brel .. "/outside/via_root_link1.txt",
                            "root_link3/" .. Brel .. "/outside/via_root_link3.txt",
                            "d_link/" .. Brel .. "/outside/via_d_link.txt"}) do
          refuse_all(ws, p, OUT, {"write_file"})
        end
        F.refused("write esc_updir/newdir2/x.txt create_dirs=false", {OUT},
          ws:call("write_file", {path = "esc_updir/newdir2/x.txt", content = "x", create_dirs = false}))
      end)
    end)
  end)

  describe("P0-7 in-root links keep working", function()
    it("link_in, chain1, sub/up_in, b/c/../c/file, link_sub/file.txt read the right content", function()
      F.guarded(fx, "in-root", function()
        F.reads("link_in", "SUBFILE", ws:call("read_file", {path = "link_in"}))
        F.reads("chain1", "SUBFILE", ws:call("read_file", {path = "chain1"}))
        F.reads("sub/up_in", "ROOTFILE", ws:call("read_file", {path = "sub/up_in"}))
        F.reads("b/c/../c/file", "BCFILE", ws:call("read_file", {path = "b/c/../c/file"}))
        F.reads("link_sub/file.txt", "SUBFILE", ws:call("read_file", {path = "link_sub/file.txt"}))
        F.reads("/workspace/chain1", "SUBFILE", wsv:call("read_file", {path = "/workspace/chain1"}))
        local l = F.ok("list link_sub", ws:call("list_dir", {path = "link_sub"}))
        local names = {}
        for _, e in ipairs(l.entries) do names[e.name] = true end
        assert.is_true(names["file.txt"] == true, "list link_sub should list sub/")
        local st = F.ok("stat link_in", ws:call("stat", {path = "link_in"}))
        assert.are.equal("symlink", st.type)
        assert.are.equal("sub/file.txt", st.target)
      end)
    end)
    it("Go's symlink chain (link => a/b/c/target ...) resolves to g/c/target", function()
      F.guarded(fx, "gochain", function()
        F.reads("gochain/link", "GOTARGET", ws:call("read_file", {path = "gochain/link"}))
      end)
    end)
    it("abs_in (absolute link pointing inside) -> OUTSIDE_ROOT in both backends", function()
      F.guarded(fx, "abs_in", function()
        refuse_all(ws, "abs_in", OUT, {"read_file"})
        refuse_all(wsv, "/workspace/abs_in", OUT, {"read_file"})
        F.refused("write abs_in", {OUT, "POLICY_DENIED"},
          ws:call("write_file", {path = "abs_in", content = "PWNED\n"}))
        assert.are.equal(F.ROOTFILE, F.read_host(fx.ws .. "/file.txt"))
      end)
    end)
  end)

  describe("P0-9 magic links (unprivileged part)", function()
    it("/proc/self/root/etc/passwd and proc_link/etc/passwd -> OUTSIDE_ROOT", function()
      F.guarded(fx, "proc", function()
        refuse_all(ws, "/proc/self/root/etc/passwd", OUT, {"read_file", "stat"})
        refuse_all(wsv, "/proc/self/root/etc/passwd", OUT, {"read_file", "stat"})
        refuse_all(ws, "proc_link/etc/passwd", OUT, {"read_file", "stat"})
        refuse_all(ws, "proc_link", OUT, {"read_file", "list_dir"})
        refuse_all(ws, "proc_link/", OUT, {"list_dir"})
        refuse_all(ws, "proc_link/" .. fx.B:sub(2) .. "/outside/via_proc.txt", OUT, {"write_file"})
      end)
    end)
  end)
end)
