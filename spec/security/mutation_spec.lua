-- The mutation cases of reference/security-cases.md for edit_file,
-- insert_lines, append_file, mkdir, remove, move, copy and undo_edit:
-- P0-1, P0-4..P0-6, P0-8, P0-14, P0-15, P0-17, P0-20, P1-1, P1-2, P1-7,
-- P1-10..P1-12, P1-16, P2-2, P2-9, and the [root] mount cases of remove,
-- copy and move. Every case runs between two snapshots of everything
-- outside the root (the side-effect check), on the resolver under test.

local F = require "security.fixture"

local OUT = "OUTSIDE_ROOT"
local LINKY = { "OUTSIDE_ROOT", "POLICY_DENIED" } -- final-component link: either

describe(F.tag("security: mutations"), function()
  local fx, ws, wsv

  lazy_setup(function()
    fx = F.build()
    ws = F.open({ { path = fx.ws, mode = "rw" } })
    wsv = F.open({ { path = fx.ws, mount = "/workspace", mode = "rw" } })
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    if wsv then wsv:close() end
    F.cleanup(fx)
  end)

  -- A scratch file inside the root, made fresh for a case.
  local function scratch(name, content)
    F.write_host(fx.ws .. "/" .. name, content or "SCRATCH\n")
    return name
  end

  local function refused(label, codes, tool, args, h)
    F.refused(label, codes, (h or ws):call(tool, args))
  end

  -- Every mutation aimed at path p must be refused with one of codes.
  local function refuse_mutations(p, codes)
    local src = scratch("mut_src.txt")
    refused("edit " .. p, codes, "edit_file", { path = p, old_text = "TOP", new_text = "PWN" })
    refused("insert " .. p, codes, "insert_lines", { path = p, line = 1, content = "PWN" })
    refused("append " .. p, codes, "append_file", { path = p, content = "PWN" })
    refused("remove " .. p, codes, "remove", { path = p })
    refused("remove -r " .. p, codes, "remove", { path = p, recursive = true })
    refused("move from " .. p, codes, "move", { source = p, destination = "stolen.txt" })
    refused("move to " .. p, codes, "move", { source = src, destination = p })
    refused("move to " .. p .. " overwrite", codes, "move", { source = src, destination = p, overwrite = true })
    refused("copy from " .. p, codes, "copy", { source = p, destination = "stolen.txt" })
    refused("copy to " .. p, codes, "copy", { source = src, destination = p })
    refused("copy to " .. p .. " overwrite", codes, "copy", { source = src, destination = p, overwrite = true })
    refused("undo " .. p, codes, "undo_edit", { path = p })
    assert.is_false(F.exists(fx.ws .. "/stolen.txt"), "stolen.txt was created from " .. p)
    assert.is_true(F.exists(fx.ws .. "/" .. src), "the move source left the root for " .. p)
  end

  describe("P0-1 dot-dot escapes", function()
    for _, p in ipairs { "../outside/secret.txt", "sub/../../outside/secret.txt", "a/b/../../../outside/x",
                         "sub//..//..//outside/secret.txt" } do
      it("every mutation of " .. ("%q"):format(p) .. " -> OUTSIDE_ROOT", function()
        F.guarded(fx, p, function()
          refuse_mutations(p, OUT)
          refused("mkdir " .. p, OUT, "mkdir", { path = p })
          refused("mkdir -p " .. p .. "/d", OUT, "mkdir", { path = p .. "/d" })
        end)
      end)
    end

    it("absolute {mount}/../outside/secret.txt -> OUTSIDE_ROOT", function()
      F.guarded(fx, "{mount}/..", function()
        refuse_mutations(fx.ws .. "/../outside/secret.txt", OUT)
        refused("edit /workspace/..", OUT, "edit_file",
          { path = "/workspace/../outside/secret.txt", old_text = "TOP", new_text = "PWN" }, wsv)
      end)
    end)

    it("control: sub/../x and b/c/d/../../c/file work", function()
      F.guarded(fx, "control", function()
        scratch("ctl.txt", "one\n")
        F.ok("edit sub/../ctl.txt", ws:call("edit_file", { path = "sub/../ctl.txt", old_text = "one", new_text = "two" }))
        F.ok("append", ws:call("append_file", { path = "b/c/d/../../c/ctl2.txt", content = "x" }))
        F.ok("remove", ws:call("remove", { path = "b/c/d/../../c/ctl2.txt" }))
        assert.are.equal("two\n", F.read_host(fx.ws .. "/ctl.txt"))
      end)
    end)
  end)

  describe("P0-4, P0-5 symlinks to outside files", function()
    for _, p in ipairs { "esc_abs", "esc_file", "esc_rel", "sub/esc2", "escape_link1", "esc_lex" } do
      it("edit, insert, append and copy from " .. p .. " -> OUTSIDE_ROOT; the target unchanged", function()
        F.guarded(fx, p, function()
          refused("edit " .. p, OUT, "edit_file", { path = p, old_text = "TOP", new_text = "PWN" })
          refused("edit dry " .. p, OUT, "edit_file", { path = p, old_text = "TOP", new_text = "PWN", dry_run = true })
          refused("insert " .. p, OUT, "insert_lines", { path = p, line = 1, content = "PWN" })
          refused("append " .. p, OUT, "append_file", { path = p, content = "PWN" })
          refused("copy from " .. p, OUT, "copy", { source = p, destination = "stolen.txt" })
          refused("copy onto " .. p, LINKY, "copy", { source = scratch("s.txt"), destination = p, overwrite = true })
          refused("move onto " .. p, LINKY, "move", { source = scratch("s.txt"), destination = p, overwrite = true })
          assert.is_false(F.exists(fx.ws .. "/stolen.txt"))
        end)
      end)
    end
  end)

  describe("P0-6 directory links as an intermediate component", function()
    it("mkdir, append, move, copy, remove and edit through esc_updir, esc_dir, root_link1 -> OUTSIDE_ROOT", function()
      F.guarded(fx, "P0-6", function()
        refused("mkdir esc_updir/d", OUT, "mkdir", { path = "esc_updir/d" })
        refused("mkdir -p esc_updir/d/e", OUT, "mkdir", { path = "esc_updir/d/e", parents = true })
        refused("append esc_updir/new.txt", OUT, "append_file", { path = "esc_updir/new.txt", content = "x" })
        refused("move into esc_updir", OUT, "move", { source = scratch("m.txt"), destination = "esc_updir/x" })
        refused("copy into esc_updir", OUT, "copy", { source = "file.txt", destination = "esc_updir/x" })
        refused("copy tree into esc_updir", OUT, "copy", { source = "sub", destination = "esc_updir/t", recursive = true })
        refused("remove esc_updir/secret.txt", OUT, "remove", { path = "esc_updir/secret.txt" })
        refused("remove esc_dir/etc/passwd", OUT, "remove", { path = "esc_dir/etc/passwd" })
        refused("edit root_link1/etc/passwd", OUT, "edit_file", { path = "root_link1/etc/passwd", old_text = "root", new_text = "toor" })
        refused("move out of esc_updir (GHSA-7m4x)", OUT, "move", { source = "esc_updir/secret.txt", destination = "stolen.txt" })
        refused("copy a tree through esc_updir", OUT, "copy", { source = "esc_updir", destination = "stolen", recursive = true })
        assert.is_false(F.exists(fx.ws .. "/stolen.txt"))
        assert.is_false(F.exists(fx.ws .. "/stolen"))
      end)
    end)
  end)

  describe("P0-8 dangling links to the outside, then create", function()
    it("append, copy, move (also with overwrite), mkdir, edit, insert: refused; nothing created outside", function()
      F.guarded(fx, "P0-8", function()
        for _, link in ipairs { "dangling_out", "dangling_home", "dc_new" } do
          refused("append " .. link, LINKY, "append_file", { path = link, content = "PWNED\n" })
          refused("copy onto " .. link, { "OUTSIDE_ROOT", "POLICY_DENIED", "EEXIST" }, "copy",
            { source = "file.txt", destination = link })
          refused("copy onto " .. link .. " overwrite", LINKY, "copy", { source = "file.txt", destination = link, overwrite = true })
          refused("move onto " .. link, { "EEXIST", "OUTSIDE_ROOT", "POLICY_DENIED" }, "move",
            { source = scratch("m.txt"), destination = link })
          refused("move onto " .. link .. " overwrite", LINKY, "move",
            { source = scratch("m.txt"), destination = link, overwrite = true })
          refused("edit " .. link, { "OUTSIDE_ROOT", "ENOENT" }, "edit_file", { path = link, old_text = "a", new_text = "b" })
          refused("insert " .. link, { "OUTSIDE_ROOT", "ENOENT" }, "insert_lines", { path = link, line = 1, content = "x" })
        end
        refused("mkdir dangling_dir/x", OUT, "mkdir", { path = "dangling_dir/x" })
        refused("mkdir dangling_dir", { "OUTSIDE_ROOT", "EEXIST" }, "mkdir", { path = "dangling_dir" })
        refused("mkdir dangling_dir (no parents)", { "OUTSIDE_ROOT", "EEXIST" }, "mkdir", { path = "dangling_dir", parents = false })
        for _, rel in ipairs { "outside/new.txt", "outside/newdir", "home/.bashrc.new", "etc_cron_d/x" } do
          assert.is_false(F.exists(fx.B .. "/" .. rel), "B/" .. rel .. " was created")
        end
        assert.is_truthy(F.lstat(fx.ws .. "/dangling_out").type:find("link"), "dangling_out must still be a link")
      end)
    end)
  end)

  describe("P0-14 rename, move and copy", function()
    it("moves out of and into the root are OUTSIDE_ROOT; the outside file stays", function()
      F.guarded(fx, "P0-14", function()
        refused("move to ../outside/x", OUT, "move", { source = scratch("m.txt"), destination = "../outside/x" })
        refused("move ../outside/secret.txt in", OUT, "move", { source = "../outside/secret.txt", destination = "stolen.txt" })
        refused("move to esc_updir/x", OUT, "move", { source = scratch("m.txt"), destination = "esc_updir/x" })
        refused("move esc_updir/secret.txt in", OUT, "move", { source = "esc_updir/secret.txt", destination = "stolen.txt" })
        assert.are.equal(F.SECRET, F.read_host(fx.B .. "/outside/secret.txt"))
      end)
    end)

    it("without overwrite: onto a file or a dangling link is EEXIST", function()
      F.guarded(fx, "noreplace", function()
        refused("move onto file.txt", "EEXIST", "move", { source = scratch("m.txt"), destination = "file.txt" })
        refused("move onto dangling_out", "EEXIST", "move", { source = scratch("m.txt"), destination = "dangling_out" })
        assert.are.equal(F.ROOTFILE, F.read_host(fx.ws .. "/file.txt"))
      end)
    end)

    it("moving a symlink moves the link, not its target", function()
      F.guarded(fx, "move link", function()
        F.sh("ln -sfn ../outside/secret.txt " .. F.q(fx.ws .. "/mv_link"))
        F.ok("move mv_link", ws:call("move", { source = "mv_link", destination = "sub/mv_link2" }))
        assert.is_truthy(F.lstat(fx.ws .. "/sub/mv_link2").type:find("link"))
        F.ok("remove the moved link", ws:call("remove", { path = "sub/mv_link2" }))
      end)
    end)

    it("a recursive copy copies links as links and never an outside target's content", function()
      F.guarded(fx, "copy tree", function()
        F.sh("mkdir -p " .. F.q(fx.ws .. "/ctree/in") .. " && ln -sfn ../../outside " .. F.q(fx.ws .. "/ctree/in/up") ..
          " && ln -sfn /etc/passwd " .. F.q(fx.ws .. "/ctree/pw") .. " && ln -sfn ../outside/secret.txt " ..
          F.q(fx.ws .. "/ctree/sec") .. " && echo inside > " .. F.q(fx.ws .. "/ctree/in/f"))
        local r = F.ok("copy ctree", ws:call("copy", { source = "ctree", destination = "ctree2", recursive = true }))
        assert.are.equal(3, r.links)
        local found = F.run("grep -rs TOPSECRET " .. F.q(fx.ws .. "/ctree2") .. " ; grep -rs root:x: " .. F.q(fx.ws .. "/ctree2"))
        assert.are.equal("", found)
        for _, l in ipairs { "in/up", "pw", "sec" } do
          assert.is_truthy(F.lstat(fx.ws .. "/ctree2/" .. l).type:find("link"), l .. " should be a link")
        end
        F.ok("clean up", ws:call("remove", { path = "ctree2", recursive = true }))
      end)
    end)
  end)

  describe("P0-15 remove", function()
    it("removing a link to an outside file removes only the link", function()
      F.guarded(fx, "remove link", function()
        F.sh("ln -sfn /etc/passwd " .. F.q(fx.ws .. "/rm_abs") .. " && ln -sfn " .. F.q(fx.B .. "/outside/secret.txt") ..
          " " .. F.q(fx.ws .. "/rm_file") .. " && ln -sfn ../outside " .. F.q(fx.ws .. "/rm_dir"))
        F.ok("remove rm_abs", ws:call("remove", { path = "rm_abs" }))
        F.ok("remove rm_file", ws:call("remove", { path = "rm_file" }))
        F.ok("remove rm_dir -r", ws:call("remove", { path = "rm_dir", recursive = true }))
        for _, n in ipairs { "rm_abs", "rm_file", "rm_dir" } do assert.is_false(F.exists(fx.ws .. "/" .. n)) end
      end)
    end)

    it("remove esc_dir/etc/passwd -> OUTSIDE_ROOT", function()
      F.guarded(fx, "esc_dir", function()
        refused("remove esc_dir/etc/passwd", OUT, "remove", { path = "esc_dir/etc/passwd" })
        -- "link/" names the directory the link leads to, which is outside
        refused("remove -r esc_updir/", { "ENOTDIR", "OUTSIDE_ROOT" }, "remove", { path = "esc_updir/", recursive = true })
      end)
    end)

    it("a recursive remove of a tree holding esc_dir, esc_updir and proc_link removes the links, not their targets", function()
      F.guarded(fx, "remove tree", function()
        F.sh("mkdir -p " .. F.q(fx.ws .. "/rtree/a/b") .. " && ln -sfn / " .. F.q(fx.ws .. "/rtree/esc_dir") ..
          " && ln -sfn ../../outside " .. F.q(fx.ws .. "/rtree/a/esc_updir") .. " && ln -sfn /proc/self/root " ..
          F.q(fx.ws .. "/rtree/a/b/proc_link") .. " && ln " .. F.q(fx.ws .. "/file.txt") .. " " ..
          F.q(fx.ws .. "/rtree/hard") .. " && mkfifo " .. F.q(fx.ws .. "/rtree/a/fifo"))
        local r = F.ok("remove rtree", ws:call("remove", { path = "rtree", recursive = true }))
        assert.are.equal(3, r.dirs)
        assert.are.equal(5, r.files)
        assert.is_false(F.exists(fx.ws .. "/rtree"))
        assert.are.equal(F.ROOTFILE, F.read_host(fx.ws .. "/file.txt"))
      end)
    end)

    it("remove of \"\", \".\", \"sub/..\", the mount (both spellings) -> INVALID_ARGUMENT; \"/\" is refused", function()
      F.guarded(fx, "remove root", function()
        for _, p in ipairs { "", ".", "./", "sub/..", fx.ws, fx.ws .. "/" } do
          refused("remove " .. ("%q"):format(p), "INVALID_ARGUMENT", "remove", { path = p, recursive = true })
        end
        refused("remove /workspace", "INVALID_ARGUMENT", "remove", { path = "/workspace", recursive = true }, wsv)
        refused("remove /", { "INVALID_ARGUMENT", "OUTSIDE_ROOT" }, "remove", { path = "/", recursive = true })
        refused("remove / (workspace)", { "INVALID_ARGUMENT", "OUTSIDE_ROOT" }, "remove", { path = "/", recursive = true }, wsv)
        assert.is_true(F.exists(fx.ws .. "/file.txt"))
      end)
    end)
  end)

  describe("P0-17 read-only roots", function()
    local ro, rw, base

    lazy_setup(function()
      base = F.mktemp()
      F.sh("mkdir -p " .. F.q(base .. "/ro/d") .. " " .. F.q(base .. "/rw") .. " && echo RO > " .. F.q(base .. "/ro/f.txt"))
      ro = F.open({ { path = base .. "/ro", mount = "/ro", mode = "ro" }, { path = base .. "/rw", mount = "/rw", mode = "rw" } })
      rw = ro
    end)

    lazy_teardown(function()
      if ro then ro:close() end
      F.rmtree(base)
    end)

    it("every mutation in a ro root -> READ_ONLY_ROOT; reads work", function()
      local before = F.snapshot(base, { exclude = { "rw" } })
      local R = "READ_ONLY_ROOT"
      refused("edit", R, "edit_file", { path = "/ro/f.txt", old_text = "RO", new_text = "RW" }, ro)
      refused("insert", R, "insert_lines", { path = "/ro/f.txt", line = 1, content = "x" }, ro)
      refused("append", R, "append_file", { path = "/ro/f.txt", content = "x" }, ro)
      refused("append new", R, "append_file", { path = "/ro/new.txt", content = "x" }, ro)
      refused("mkdir", R, "mkdir", { path = "/ro/nd" }, ro)
      refused("remove", R, "remove", { path = "/ro/f.txt" }, ro)
      refused("remove -r", R, "remove", { path = "/ro/d", recursive = true }, ro)
      refused("move in ro", R, "move", { source = "/ro/f.txt", destination = "/ro/g.txt" }, ro)
      refused("move ro -> rw", R, "move", { source = "/ro/f.txt", destination = "/rw/f.txt" }, ro)
      refused("copy into ro", R, "copy", { source = "/ro/f.txt", destination = "/ro/g.txt" }, ro)
      refused("undo in ro", R, "undo_edit", { path = "/ro/f.txt" }, ro)
      F.ok("copy ro -> rw", rw:call("copy", { source = "/ro/f.txt", destination = "/rw/f.txt" }))
      F.reads("read ro", "RO", ro:call("read_file", { path = "/ro/f.txt" }))
      F.ok("dry-run edit in ro", ro:call("edit_file", { path = "/ro/f.txt", old_text = "RO", new_text = "X", dry_run = true }))
      local diffs = F.compare(before, F.snapshot(base, { exclude = { "rw" } }))
      assert.are.equal(0, #diffs, table.concat(diffs, "\n"))
    end)
  end)

  describe("P1-1, P1-2 FIFOs, sockets, devices", function()
    it("edit, insert, append and copy of fifo and sock -> NOT_REGULAR, without blocking", function()
      local release = F.fifo_release(fx.ws .. "/fifo")
      F.guarded(fx, "fifo", function()
        for _, p in ipairs { "fifo", "sock" } do
          F.timed(function()
            refused("edit " .. p, "NOT_REGULAR", "edit_file", { path = p, old_text = "a", new_text = "b" })
            refused("insert " .. p, "NOT_REGULAR", "insert_lines", { path = p, line = 1, content = "x" })
            refused("append " .. p, "NOT_REGULAR", "append_file", { path = p, content = "x" })
            refused("copy " .. p, "NOT_REGULAR", "copy", { source = p, destination = "c" })
          end)
          F.unblocked(release, p)
        end
        refused("append devzero", OUT, "append_file", { path = "devzero", content = "x" })
        refused("edit devzero", OUT, "edit_file", { path = "devzero", old_text = "a", new_text = "b" })
      end)
      F.stop(release)
    end)
  end)

  describe("P1-7 trailing slashes", function()
    it("mkdir newdir/ works; move(file, new/) and edit file/ -> ENOTDIR; append file/ refused", function()
      F.guarded(fx, "trailing", function()
        F.ok("mkdir tsdir/", ws:call("mkdir", { path = "tsdir/" }))
        refused("move file.txt new/", "ENOTDIR", "move", { source = scratch("m.txt"), destination = "new/" })
        refused("edit file.txt/", "ENOTDIR", "edit_file", { path = "file.txt/", old_text = "R", new_text = "x" })
        refused("append file.txt/", "ENOTDIR", "append_file", { path = "file.txt/", content = "x" })
        refused("remove file.txt/", "ENOTDIR", "remove", { path = "file.txt/" })
        refused("copy to new/", "ENOTDIR", "copy", { source = "file.txt", destination = "newc/" })
        assert.are.equal(F.ROOTFILE, F.read_host(fx.ws .. "/file.txt"))
      end)
    end)
  end)

  describe("P1-10, P1-11 hard links and in-root symlinks", function()
    it("edit, insert, append, copy and move onto hl -> POLICY_DENIED; the outside inode unchanged", function()
      F.guarded(fx, "hl", function()
        refused("edit hl", "POLICY_DENIED", "edit_file", { path = "hl", old_text = "HARD", new_text = "PWN" })
        refused("insert hl", "POLICY_DENIED", "insert_lines", { path = "hl", line = 1, content = "PWN" })
        refused("append hl", "POLICY_DENIED", "append_file", { path = "hl", content = "PWN" })
        refused("copy onto hl", "POLICY_DENIED", "copy", { source = "file.txt", destination = "hl", overwrite = true })
        refused("move onto hl", "POLICY_DENIED", "move", { source = scratch("m.txt"), destination = "hl", overwrite = true })
        assert.are.equal(F.HARD, F.read_host(fx.B .. "/outside/hard_target.txt"))
      end)
    end)

    it("edit, insert, append of link_in -> POLICY_DENIED; sub/file.txt unchanged", function()
      F.guarded(fx, "link_in", function()
        refused("edit link_in", "POLICY_DENIED", "edit_file", { path = "link_in", old_text = "SUB", new_text = "x" })
        refused("insert link_in", "POLICY_DENIED", "insert_lines", { path = "link_in", line = 1, content = "x" })
        refused("append link_in", "POLICY_DENIED", "append_file", { path = "link_in", content = "x" })
        assert.are.equal(F.SUBFILE, F.read_host(fx.ws .. "/sub/file.txt"))
      end)
    end)
  end)

  describe("P1-12, P1-16 the root and final names", function()
    it("move of the mount -> INVALID_ARGUMENT; mkdir of it is an existing directory", function()
      F.guarded(fx, "root", function()
        refused("move mount", "INVALID_ARGUMENT", "move", { source = fx.ws, destination = "x" })
        refused("move /workspace", "INVALID_ARGUMENT", "move", { source = "/workspace", destination = "x" }, wsv)
        refused("move . ", "INVALID_ARGUMENT", "move", { source = ".", destination = "x" })
        refused("move onto .", "INVALID_ARGUMENT", "move", { source = scratch("m.txt"), destination = "." })
        local r = F.ok("mkdir mount", ws:call("mkdir", { path = fx.ws }))
        assert.is_false(r.created)
      end)
    end)

    it("final names ., .., NUL -> INVALID_ARGUMENT", function()
      F.guarded(fx, "names", function()
        for _, p in ipairs { "sub/.", "sub/..", "a/b/.." } do
          refused("remove " .. p, "INVALID_ARGUMENT", "remove", { path = p, recursive = true })
          refused("move " .. p, "INVALID_ARGUMENT", "move", { source = p, destination = "x" })
          refused("move to " .. p, "INVALID_ARGUMENT", "move", { source = scratch("m.txt"), destination = p })
        end
        for _, p in ipairs { "a\0/../../outside/secret.txt", "file.txt\0.png" } do
          refused("edit NUL", "INVALID_ARGUMENT", "edit_file", { path = p, old_text = "a", new_text = "b" })
          refused("append NUL", "INVALID_ARGUMENT", "append_file", { path = p, content = "x" })
          refused("mkdir NUL", "INVALID_ARGUMENT", "mkdir", { path = p })
          refused("remove NUL", "INVALID_ARGUMENT", "remove", { path = p })
        end
      end)
    end)
  end)

  describe("P0-20 no host paths in edit failures", function()
    it("not found, ambiguous, hash mismatch, overlap through /workspace name no host path", function()
      F.guarded(fx, "P0-20", function()
        F.write_host(fx.ws .. "/p20.txt", "x = 1\nx = 1\n")
        local calls = {
          { "edit_file", { path = "/workspace/p20.txt", old_text = "y = 2", new_text = "z" } },
          { "edit_file", { path = "/workspace/p20.txt", old_text = "x = 1", new_text = "z" } },
          { "edit_file", { path = "/workspace/p20.txt", old_text = "x", new_text = "z", expected_hash = "sha256:00" } },
          { "edit_file", { path = "/workspace/p20.txt", edits = { { old_text = "x = 1\nx", new_text = "a" }, { old_text = "1\nx = 1", new_text = "b" } } } },
          { "move", { source = "/workspace/p20.txt", destination = "/workspace/esc_updir/x" } },
          { "copy", { source = "/workspace/esc_file", destination = "/workspace/c.txt" } },
          { "undo_edit", { path = "/workspace/p20.txt" } },
          { "remove", { path = "/workspace/nope" } },
        }
        for _, c in ipairs(calls) do
          local res, msg = wsv:call(c[1], c[2])
          assert.is_nil(res, c[1] .. " succeeded")
          assert.is_nil(msg:find(fx.B, 1, true), c[1] .. " leaks a host path: " .. msg)
          assert.is_nil(msg:find(F.REPO, 1, true), c[1] .. " leaks the working directory: " .. msg)
        end
      end)
    end)
  end)

  describe("P2-2, P2-9 metadata and content fidelity", function()
    it("edit and insert keep mode 0640 and owner 1234:5678 [root]", function()
      local uid = F.sh("id -u"):gsub("%s", "")
      F.write_host(fx.ws .. "/meta.txt", "one\n")
      F.sh("chmod 0640 " .. F.q(fx.ws .. "/meta.txt"))
      if uid == "0" then F.sh("chown 1234:5678 " .. F.q(fx.ws .. "/meta.txt")) end
      F.ok("edit", ws:call("edit_file", { path = "meta.txt", old_text = "one", new_text = "two" }))
      F.ok("insert", ws:call("insert_lines", { path = "meta.txt", line = 1, content = "zero" }))
      local st = F.sh("stat -c '%a %u:%g' " .. F.q(fx.ws .. "/meta.txt")):gsub("%s+$", "")
      if uid == "0" then assert.are.equal("640 1234:5678", st)
      else assert.are.equal("640", st:match("^%d+")) end
    end)

    it("a failed edit leaves the file byte-identical with the same inode", function()
      F.write_host(fx.ws .. "/same.txt", "a\r\nb\nc\r\n")
      local ino = F.lstat(fx.ws .. "/same.txt").ino
      refused("not found", "NOT_FOUND_TEXT", "edit_file", { path = "same.txt", edits = { { old_text = "a", new_text = "A" }, { old_text = "zz", new_text = "Z" } } })
      refused("ambiguous", "AMBIGUOUS_TEXT", "edit_file", { path = "same.txt", old_text = "\n", new_text = "" })
      assert.are.equal("a\r\nb\nc\r\n", F.read_host(fx.ws .. "/same.txt"))
      assert.are.equal(ino, F.lstat(fx.ws .. "/same.txt").ino)
    end)
  end)

  describe("[root] mounts inside a tree", function()
    local function need_ns()
      if not F.can_unshare() then
        pending("SKIP: needs root (CAP_SYS_ADMIN) for a private mount namespace: unshare -m")
        return false
      end
      return true
    end

    it("remove, copy and move stop at a bind mount of an outside directory", function()
      if not need_ns() then return end
      F.sh("mkdir -p " .. F.q(fx.B .. "/outside/bindsrc/deep") .. " && echo BOUND > " .. F.q(fx.B .. "/outside/bindsrc/deep/b.txt"))
      F.sh("mkdir -p " .. F.q(fx.ws .. "/mtree/mnt") .. " && echo T > " .. F.q(fx.ws .. "/mtree/t.txt"))
      F.guarded(fx, "mounts", function()
        local r, err = F.probe({ roots = { { path = fx.ws, mode = "rw" } }, calls = {
          { "remove", { path = "mtree/mnt", recursive = true } },
          { "move", { source = "mtree/mnt", destination = "moved" } },
          { "copy", { source = "mtree", destination = "mcopy", recursive = true } },
          { "remove", { path = "mtree", recursive = true } },
        } }, { ns_setup = "mount --bind " .. F.q(fx.B .. "/outside/bindsrc") .. " " .. F.q(fx.ws .. "/mtree/mnt"), timeout = 30 })
        assert.is_not_nil(r, "probe failed: " .. tostring(err))
        assert.is_false(r[1].ok, "removed a mount point")
        -- the resolver refuses to cross into the mount before the core is asked
        assert.is_truthy(r[1].code == "INVALID_ARGUMENT" or r[1].code == "OUTSIDE_ROOT", r[1].code)
        assert.is_false(r[2].ok, "moved a mount point")
        assert.is_true(r[3].ok, "copy: " .. tostring(r[3].msg))
        assert.is_false(r[4].ok, "a tree holding a mount was reported removed")
        assert.are.equal("INVALID_ARGUMENT", r[4].code)
      end)
      assert.are.equal("BOUND\n", F.read_host(fx.B .. "/outside/bindsrc/deep/b.txt"))
      assert.is_false(F.exists(fx.ws .. "/mcopy/mnt/deep"), "the copy entered the mount")
    end)
  end)
end)
