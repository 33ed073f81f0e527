-- P0-17 read-only roots, P0-18 several roots (configured roots only; the MCP
-- roots/list part belongs to the MCP suite), P0-20 no host paths in results.

local F = require "security.fixture"

local OUT, RO = "OUTSIDE_ROOT", "READ_ONLY_ROOT"

describe(F.tag("security: roots P0-17, P0-18, P0-20"), function()
  local fx

  lazy_setup(function() fx = F.build() end)
  lazy_teardown(function() F.cleanup(fx) end)

  describe("P0-17 read-only roots", function()
    local ro
    lazy_setup(function() ro = F.open({{path = fx.ws, mode = "ro"}}) end)
    lazy_teardown(function() if ro then ro:close() end end)

    it("every write into a ro root -> READ_ONLY_ROOT; nothing anywhere under B changes", function()
      -- exclude nothing: the ro root itself must stay as it was
      F.guarded(fx, "ro writes", function()
        for _, p in ipairs({"file.txt", "new.txt", "sub/file.txt", "sub/new/x.txt", fx.ws .. "/new2.txt"}) do
          F.refused("write " .. p, RO, ro:call("write_file", {path = p, content = "PWNED\n"}))
        end
        F.refused("truncate file.txt", RO, ro:call("write_file", {path = "file.txt", content = ""}))
        F.refused("create-only new.txt", RO,
          ro:call("write_file", {path = "new.txt", content = "x", expected_hash = "absent"}))
        -- refusals for other reasons are fine too, but never a write
        F.refused("write ../outside/x", {RO, OUT}, ro:call("write_file", {path = "../outside/x", content = "x"}))
        F.refused("write esc_updir/x", {RO, OUT}, ro:call("write_file", {path = "esc_updir/x", content = "x"}))
        F.refused("write link_in", {RO, "POLICY_DENIED"}, ro:call("write_file", {path = "link_in", content = "x"}))
        F.refused("write hl", {RO, "POLICY_DENIED"}, ro:call("write_file", {path = "hl", content = "x"}))
        F.refused("write .", {RO, "EISDIR"}, ro:call("write_file", {path = ".", content = "x"}))
      end, {exclude = {}})
    end)

    it("reads, listings and stat succeed in a ro root", function()
      F.guarded(fx, "ro reads", function()
        F.reads("read file.txt", "ROOTFILE", ro:call("read_file", {path = "file.txt"}))
        F.reads("read chain1", "SUBFILE", ro:call("read_file", {path = "chain1"}))
        local l = F.ok("list .", ro:call("list_dir", {path = "."}))
        assert.is_true(#l.entries > 10)
        local st = F.ok("stat sub", ro:call("stat", {path = "sub"}))
        assert.are.equal("dir", st.type)
        F.refused("read esc_file", OUT, ro:call("read_file", {path = "esc_file"}))
      end, {exclude = {}})
    end)

    it("a ro first root and a rw second root: only the rw root takes writes", function()
      local h = F.open({{path = fx.ws, mount = "/workspace", mode = "ro"},
                        {path = fx.B .. "/rootb", mount = "/rw", mode = "rw"}})
      F.guarded(fx, "mixed roots", function()
        F.refused("write new.txt (first root, ro)", RO, h:call("write_file", {path = "new.txt", content = "x"}))
        F.refused("write /workspace/new.txt", RO, h:call("write_file", {path = "/workspace/new.txt", content = "x"}))
        F.ok("write /rw/new.txt", h:call("write_file", {path = "/rw/new.txt", content = "RW\n"}))
        assert.are.equal("RW\n", F.read_host(fx.B .. "/rootb/new.txt"))
        F.reads("read /rw/b.txt", "ROOTB", h:call("read_file", {path = "/rw/b.txt"}))
      end, {exclude = {"rootb"}})
      h:close()
      os.remove(fx.B .. "/rootb/new.txt")
    end)
  end)

  describe("P0-18 several roots", function()
    local h, hv
    lazy_setup(function()
      h = F.open({{path = fx.ws, mode = "rw"}, {path = fx.B .. "/rootb", mode = "rw"}})
      hv = F.open({{path = fx.ws, mount = "/a", mode = "rw"}, {path = fx.B .. "/rootb", mount = "/b", mode = "rw"}})
    end)
    lazy_teardown(function()
      if h then h:close() end
      if hv then hv:close() end
    end)

    it("a link in root A into root B is not followed -> OUTSIDE_ROOT; root B unchanged", function()
      F.guarded(fx, "cross-root links", function()
        for _, p in ipairs({"to_rootb", "to_rootb_abs", "to_rootb_dir/b.txt"}) do
          F.refused("read " .. p, OUT, h:call("read_file", {path = p}))
          F.refused("read /a/" .. p, OUT, hv:call("read_file", {path = "/a/" .. p}))
        end
        F.refused("stat to_rootb_dir/b.txt", OUT, h:call("stat", {path = "to_rootb_dir/b.txt"}))
        F.refused("list to_rootb_dir", OUT, h:call("list_dir", {path = "to_rootb_dir"}))
        F.refused("write to_rootb", {OUT, "POLICY_DENIED"}, h:call("write_file", {path = "to_rootb", content = "x"}))
        F.refused("write to_rootb_abs", {OUT, "POLICY_DENIED"},
          h:call("write_file", {path = "to_rootb_abs", content = "x"}))
        F.refused("write to_rootb_dir/new.txt", OUT,
          h:call("write_file", {path = "to_rootb_dir/new.txt", content = "x"}))
        F.refused("read ../rootb/b.txt", OUT, h:call("read_file", {path = "../rootb/b.txt"}))
        -- and the other way round
        F.refused("read rootb/to_ws", OUT, h:call("read_file", {path = fx.B .. "/rootb/to_ws"}))
        F.refused("read /b/to_ws", OUT, hv:call("read_file", {path = "/b/to_ws"}))
      end)
    end)

    it("each root is reachable through its own mount", function()
      F.guarded(fx, "direct", function()
        F.reads("read rootb/b.txt", "ROOTB", h:call("read_file", {path = fx.B .. "/rootb/b.txt"}))
        F.reads("read /b/b.txt", "ROOTB", hv:call("read_file", {path = "/b/b.txt"}))
        F.reads("read /a/file.txt", "ROOTFILE", hv:call("read_file", {path = "/a/file.txt"}))
        F.reads("read file.txt", "ROOTFILE", hv:call("read_file", {path = "file.txt"}))
        F.refused("read /bb/b.txt", OUT, hv:call("read_file", {path = "/bb/b.txt"}))
      end)
    end)
  end)

  describe("P0-20 no host paths in results (mount /workspace)", function()
    local h, fifo_pid
    lazy_setup(function() h = F.open({{path = fx.ws, mount = "/workspace", mode = "rw"}}) end)
    lazy_teardown(function()
      F.stop(fifo_pid)
      if h then h:close() end
    end)

    local function clean(label, res, msg)
      local forbidden = {fx.B, F.REPO, "/tmp/burrow-sec"}
      -- link texts are in-root data the agent planted; every other string is checked
      for _, s in ipairs(F.strings({res, msg}, {target = true})) do
        for _, bad in ipairs(forbidden) do
          assert.is_nil(s:find(bad, 1, true), label .. ": result leaks host path " .. bad .. " in " .. F.dump(s))
        end
      end
    end

    it("errors name paths as addressed, never a host path", function()
      fifo_pid = F.fifo_release(fx.ws .. "/fifo")
      local calls = {
        {"read_file", {path = "missing.txt"}, "ENOENT"},
        {"read_file", {path = "/workspace/missing.txt"}, "ENOENT"},
        {"read_file", {path = "sub/missing/x"}, "ENOENT"},
        {"stat", {path = "missing.txt"}, "ENOENT"},
        {"read_file", {path = "../outside/secret.txt"}, OUT},
        {"read_file", {path = "esc_file"}, OUT},
        {"read_file", {path = "esc_updir/secret.txt"}, OUT},
        {"read_file", {path = "abs_in"}, OUT},
        {"read_file", {path = "/etc/passwd"}, OUT},
        {"read_file", {path = "loop1"}, "ELOOP"},
        {"read_file", {path = "fifo"}, "NOT_REGULAR"},
        {"read_file", {path = "sub"}, "EISDIR"},
        {"read_file", {path = "file.txt/x"}, "ENOTDIR"},
        {"list_dir", {path = "file.txt"}, "ENOTDIR"},
        {"list_dir", {path = "esc_updir"}, OUT},
        {"write_file", {path = "sub", content = "x"}, "EISDIR"},
        {"write_file", {path = "hl", content = "x"}, "POLICY_DENIED"},
        {"write_file", {path = "link_in", content = "x"}, "POLICY_DENIED"},
        {"write_file", {path = "fifo", content = "x"}, "NOT_REGULAR"},
        {"write_file", {path = "dangling_out", content = "x"}, {OUT, "POLICY_DENIED"}},
        {"write_file", {path = "file.txt", content = "x", expected_hash = "sha256:" .. string.rep("0", 64)},
          "HASH_MISMATCH"},
      }
      F.guarded(fx, "P0-20 errors", function()
        for _, c in ipairs(calls) do
          local label = c[1] .. " " .. c[2].path
          local res, msg, code = h:call(c[1], c[2])
          F.refused(label, c[3], res, msg, code)
          clean(label, res, msg)
        end
        F.unblocked(fifo_pid, "P0-20 errors")
        local _, msg = h:call("read_file", {path = "missing.txt"})
        assert.is_truthy(msg:find("missing.txt", 1, true), "ENOENT message should name missing.txt: " .. msg)
        assert.are.equal(F.ROOTFILE, F.read_host(fx.ws .. "/file.txt"))
      end)
      F.stop(fifo_pid); fifo_pid = nil
    end)

    it("successful results carry no host path either", function()
      F.guarded(fx, "P0-20 results", function()
        local list = {
          {"read_file", {path = "file.txt"}},
          {"read_file", {path = "/workspace/chain1"}},
          {"stat", {path = "sub/file.txt"}},
          {"stat", {path = "/workspace"}},
          {"list_dir", {path = "sub"}},
          {"list_dir", {}},
          {"list_dir", {path = "/workspace/b", recursive = true}},
          {"write_file", {path = "p020_new.txt", content = "NEW\n"}},
        }
        for _, c in ipairs(list) do
          local label = c[1] .. " " .. tostring(c[2].path)
          local res, msg, code = h:call(c[1], c[2])
          F.ok(label, res, msg, code)
          clean(label, res, msg)
        end
      end)
    end)
  end)
end)
