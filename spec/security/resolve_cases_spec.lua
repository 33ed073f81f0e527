-- Two external resolvers' case lists, cloned:
--   * Go's os.Root rootTestCases (golang/go src/os/root_test.go), as read_file
--     (TestRootOpen_File) and write_file (TestRootCreate), one fresh root per
--     case; burrow differs from Go only where docs/security.md says so: a write
--     through a final symlink is POLICY_DENIED, and write_file is called with
--     create_dirs=false to match Go's Create.
--   * libpathrs's create_basic_tree (cyphar/libpathrs src/tests/common/root.rs),
--     through read_file, list_dir, stat and write_file. Absolute links there
--     are root-relative for libpathrs; burrow refuses every absolute link.

local F = require "security.fixture"

local OUT, PD = "OUTSIDE_ROOT", "POLICY_DENIED"
local ANY = {OUT, PD, "ENOTDIR", "EISDIR", "INVALID_ARGUMENT", "ENOENT", "ELOOP"}

-- {name, fs, open, target, read = expected, write = expected}; expected is
-- "ok" or a code or a list of codes
local GO = {
  {"plain path", {}, "target", "target", read = "ok", write = "ok"},
  {"path in directory", {"a/b/c/"}, "a/b/c/target", "a/b/c/target", read = "ok", write = "ok"},
  {"symlink", {"link => target"}, "link", "target", read = "ok", write = PD},
  {"symlink dotdot slash", {"link => ../"}, "link", "", read = OUT, write = {PD, OUT}},
  {"symlink ending in slash", {"dir/", "link => dir/"}, "link/target", "dir/target", read = "ok", write = "ok"},
  {"slash after symlink to file", {"link => ../ROOT/target"}, "link/", "target", read = {OUT, "ENOTDIR"}, write = ANY},
  {"slash after symlink to dir", {"link => ../ROOT/target", "target/"}, "link/", "", read = OUT, write = ANY},
  {"symlink dotdot dotdot slash", {"dir/link => ../../"}, "dir/link", "", read = OUT, write = {PD, OUT}},
  {"symlink chain", {"link => a/b/c/target", "a/b => e", "a/e => ../f", "f => g/h/i", "g/h/i => ..", "g/c/"},
    "link", "g/c/target", read = "ok", write = PD},
  {"path with dot", {"a/b/"}, "./a/./b/./target", "a/b/target", read = "ok", write = "ok"},
  {"path with dotdot", {"a/b/"}, "a/../a/b/../../a/b/../b/target", "a/b/target", read = "ok", write = "ok"},
  {"path with dotdot slash", {}, "../", "", read = OUT, write = {OUT, "INVALID_ARGUMENT", "EISDIR"}},
  {"path with dotdot dotdot slash", {"a/"}, "a/../../", "", read = OUT, write = {OUT, "INVALID_ARGUMENT", "EISDIR"}},
  {"dotdot no symlink", {"a/"}, "a/../target", "target", read = "ok", write = "ok"},
  {"dotdot after symlink", {"a => b/c", "b/c/"}, "a/../target", "b/target", read = "ok", write = "ok"},
  {"dotdot before symlink", {"a => b/c", "b/c/"}, "b/../a/target", "b/c/target", read = "ok", write = "ok"},
  {"symlink ends in dot", {"a => b/.", "b/"}, "a/target", "b/target", read = "ok", write = "ok"},
  {"directory does not exist", {}, "a/file", "", read = "ENOENT", write = "ENOENT"},
  {"empty path", {}, "", "", read = "INVALID_ARGUMENT", write = "INVALID_ARGUMENT"},
  {"symlink cycle", {"a => a"}, "a", "", read = "ELOOP", write = {"ELOOP", PD}},
  {"path escapes", {}, "../ROOT/target", "target", read = OUT, write = OUT},
  {"long path escapes", {"a/"}, "a/../../ROOT/target", "target", read = OUT, write = OUT},
  {"absolute symlink", {"link => $ABS/target"}, "link", "target", read = OUT, write = {OUT, PD}},
  {"relative symlink", {"link => ../ROOT/target"}, "link", "target", read = OUT, write = {OUT, PD}},
  {"symlink chain escapes", {"link => a/b/c/target", "a/b => e", "a/e => ../../ROOT", "c/"},
    "link", "c/target", read = OUT, write = {OUT, PD}},
}

-- makefs from root_test.go: "d/" dir, "a => b" symlink, "f" file with content f
local function makefs(root, fs)
  F.sh("mkdir -p " .. F.q(root))
  for _, ent in ipairs(fs) do
    ent = ent:gsub("%$ABS", root)
    local base, link = ent:match("^(.-) => (.*)$")
    if base then
      local dir = base:match("^(.*)/[^/]*$")
      if dir then F.sh("mkdir -p " .. F.q(root .. "/" .. dir)) end
      F.sh("ln -s " .. F.q(link) .. " " .. F.q(root .. "/" .. base))
    elseif ent:sub(-1) == "/" then
      F.sh("mkdir -p " .. F.q(root .. "/" .. ent))
    else
      local dir = ent:match("^(.*)/[^/]*$")
      if dir then F.sh("mkdir -p " .. F.q(root .. "/" .. dir)) end
      F.write_host(root .. "/" .. ent, ent)
    end
  end
end

local function codes_of(e)
  return type(e) == "table" and e or {e}
end

describe(F.tag("security: Go os.Root cases and the libpathrs tree"), function()
  local fx

  lazy_setup(function() fx = F.build() end)
  lazy_teardown(function() F.cleanup(fx) end)

  for i, c in ipairs(GO) do
    local name, fs, open, target = c[1], c[2], c[3], c[4]

    it(("Go %q: read_file %q -> %s"):format(name, open, table.concat(codes_of(c.read), "|")), function()
      local rel = "go/read" .. i
      local root = fx.B .. "/" .. rel .. "/ROOT"
      makefs(root, fs)
      if target ~= "" then F.write_host(root .. "/" .. target, "target") end
      local h = F.open({{path = root, mode = "rw"}})
      F.guarded(fx, name, function()
        local res, msg, code = h:call("read_file", {path = open})
        if c.read == "ok" then
          F.reads("read " .. open, "target", res, msg, code)
        else
          F.refused("read " .. open, c.read, res, msg, code)
        end
      end, {exclude = {"ws", rel .. "/ROOT"}})
      h:close()
    end)

    it(("Go %q: write_file %q -> %s"):format(name, open, table.concat(codes_of(c.write), "|")), function()
      local rel = "go/write" .. i
      local root = fx.B .. "/" .. rel .. "/ROOT"
      makefs(root, fs)
      local h = F.open({{path = root, mode = "rw"}})
      F.guarded(fx, name, function()
        local res, msg, code = h:call("write_file", {path = open, content = "written", create_dirs = false})
        if c.write == "ok" then
          F.ok("write " .. open, res, msg, code)
          assert.are.equal("written", F.read_host(root .. "/" .. target), "the write did not land on " .. target)
        else
          F.refused("write " .. open, c.write, res, msg, code)
          if target ~= "" then
            assert.is_false(F.exists(root .. "/" .. target), "a refused write created " .. target)
          end
        end
      end, {exclude = {"ws", rel .. "/ROOT"}})
      h:close()
    end)
  end

  describe("libpathrs create_basic_tree", function()
    local root, h
    lazy_setup(function()
      root = fx.B .. "/pathrs"
      local T = {
        "a/", "b/c/d/e/f/", "b/c/file",
        "e => /b/c/d/e", "b-file => b/c/file",
        "root-link1 => /", "root-link2 => /..", "root-link3 => /../../../../..",
        "escape-link1 => ../../../../../../../../../../target",
        "escape-link2 => /../../../../../../../../../../target",
        "a-fake1 => a/fake", "a-fake2 => a/fake/foo/bar/..", "a-fake3 => a/fake/../../b",
        "c/a-fake1 => /a/fake",
        "target/", "link1/target_abs => /target", "link1/target_rel => ../target",
        "link2/link1_abs => /link1", "link2/link1_rel => ../link1",
        "link3/target_abs => /link2/link1_rel/target_rel",
        "link3/target_rel => ../link2/link1_rel/target_rel",
        "link3/deep_dangling1 => ../link2/link1_rel/target_rel/nonexist",
        "link3/deep_dangling2 => ../link2/link1_abs/target_abs/nonexist",
        "dangling/a => b/c", "dangling/b/c => ../c", "dangling/c => d/e", "dangling/d/e => ../e",
        "dangling/e => f/../g", "dangling/f/", "dangling/g => h/i/j/nonexistent", "dangling/h/i/j/",
        "dangling-file/a => b/c", "dangling-file/b/c => ../c", "dangling-file/c => d/e",
        "dangling-file/d/e => ../e", "dangling-file/e => f/../g", "dangling-file/f/",
        "dangling-file/g => h/i/j/file/foo", "dangling-file/h/i/j/file",
        "loop/basic-loop1 => basic-loop1", "loop/basic-loop2 => /loop/basic-loop2",
        "loop/basic-loop3 => ../loop/basic-loop3", "loop/a/link => ../b/link", "loop/b/link => /loop/c/link",
        "loop/c/link => /loop/d/link", "loop/d => e", "loop/e/link => ../a/link", "loop/link => a/link",
        "deep/a/b/c => /",
      }
      makefs(root, T)
      F.sh("mkfifo " .. F.q(root .. "/b/fifo"))
      h = F.open({{path = root, mode = "rw"}})
    end)
    lazy_teardown(function() if h then h:close() end end)

    local READS = {
      {"b-file", "ok"}, {"b/c/file", "ok"}, {"e/f", OUT}, {"e", OUT},
      {"root-link1/etc/passwd", OUT}, {"root-link2/etc/passwd", OUT}, {"root-link3/etc/passwd", OUT},
      {"escape-link1", OUT}, {"escape-link2", OUT}, {"b/fifo", "NOT_REGULAR"},
      {"a-fake1", "ENOENT"}, {"a-fake2", "ENOENT"}, {"a-fake3", "ENOENT"}, {"c/a-fake1", OUT},
      {"link1/target_abs", OUT}, {"link3/target_abs", OUT},
      {"link3/deep_dangling1", "ENOENT"}, {"link3/deep_dangling2", OUT},
      {"dangling/a", "ENOENT"}, {"dangling-file/a", "ENOTDIR"},
      {"loop/basic-loop1", "ELOOP"}, {"loop/basic-loop2", OUT}, {"loop/basic-loop3", "ELOOP"},
      {"loop/link", OUT}, {"deep/a/b/c/etc/passwd", OUT},
    }
    for _, r in ipairs(READS) do
      it(("read_file %s -> %s"):format(r[1], r[2]), function()
        F.guarded(fx, r[1], function()
          local res, msg, code = h:call("read_file", {path = r[1]})
          if r[2] == "ok" then F.reads("read " .. r[1], "b/c/file", res, msg, code)
          else F.refused("read " .. r[1], r[2], res, msg, code) end
        end, {exclude = {"ws", "pathrs"}})
      end)
    end

    it("list_dir through relative dir links works; through absolute ones -> OUTSIDE_ROOT", function()
      F.guarded(fx, "pathrs lists", function()
        for _, p in ipairs({"link1/target_rel", "link2/link1_rel/target_rel", "link3/target_rel"}) do
          F.ok("list " .. p, h:call("list_dir", {path = p}))
        end
        for _, p in ipairs({"link1/target_abs", "link2/link1_abs", "link3/target_abs", "root-link1", "e"}) do
          F.refused("list " .. p, OUT, h:call("list_dir", {path = p}))
        end
        local st = F.ok("stat link3/target_rel", h:call("stat", {path = "link3/target_rel"}))
        assert.are.equal("symlink", st.type)
      end, {exclude = {"ws", "pathrs"}})
    end)

    it("write_file through the tree: in-root dir links work, final links and absolute links are refused", function()
      F.guarded(fx, "pathrs writes", function()
        F.ok("write link3/target_rel/new.txt",
          h:call("write_file", {path = "link3/target_rel/new.txt", content = "NEW"}))
        assert.are.equal("NEW", F.read_host(root .. "/target/new.txt"))
        for _, p in ipairs({"a-fake1", "dangling/a", "b-file", "link3/deep_dangling1"}) do
          F.refused("write " .. p, PD, h:call("write_file", {path = p, content = "x"}))
        end
        -- a link through a file: the resolver says so, as it does for a read
        F.refused("write dangling-file/a", {PD, "ENOTDIR"}, h:call("write_file", {path = "dangling-file/a", content = "x"}))
        for _, p in ipairs({"e/new.txt", "link1/target_abs/new.txt", "c/a-fake1", "link3/deep_dangling2",
                            "root-link1/" .. fx.B:sub(2) .. "/outside/via_pathrs.txt"}) do
          F.refused("write " .. p, {OUT, PD}, h:call("write_file", {path = p, content = "x"}))
        end
        assert.is_false(F.exists(root .. "/a/fake"), "a write through a-fake1 created a/fake")
        assert.are.equal("b/c/file", F.read_host(root .. "/b/c/file"))
      end, {exclude = {"ws", "pathrs"}})
    end)
  end)
end)
