-- P0-6, P0-16, P1-1, P1-6, P1-13 for grep and glob: walks never go
-- through a link (in or out of the root), starting paths outside the root
-- are refused, no outside content or host path reaches a result, FIFOs
-- never block, loops never hang, NUL and ".." in patterns are refused.
-- Every case runs between two snapshots of everything outside the root.

local F = require "security.fixture"

local LINKS = {"esc_dir", "esc_updir", "proc_link", "root_link1", "root_link2", "root_link3",
               "d_link", "link_sub", "to_rootb_dir", "dangling_dir", "self", "loop1", "loop/d",
               "gochain/a/b", "gochain/f", "gochain/g/h/i", "racelink"}

local function under(path, link)
  return ("/" .. path):find("/" .. link .. "/", 1, true) ~= nil
end

local function no_link_paths(label, list)
  for _, p in ipairs(list) do
    for _, link in ipairs(LINKS) do
      assert.is_false(under(p, link), label .. " went through link " .. link .. ": " .. p)
    end
  end
end

local function no_outside(label, fx, res)
  for _, s in ipairs(F.strings(res, {pattern = true})) do
    assert.is_nil(s:find(F.SECRET, 1, true), label .. ": outside content in the result")
    assert.is_nil(s:find("WS_SECRET", 1, true), label .. ": sibling content in the result")
    assert.is_nil(s:find("ROOTB", 1, true), label .. ": another root's content in the result")
    if #fx.host_passwd_line1 > 8 then
      assert.is_nil(s:find(fx.host_passwd_line1, 1, true), label .. ": /etc/passwd in the result")
    end
  end
end

-- grep in files mode, literal, hidden names included: answered before the
-- FIFOs' release (a FIFO opened would block) and with nothing from
-- outside; the result.
local function grep_files(fx, ws, path, pat, release)
  local label = "grep " .. path .. " " .. pat
  local res, msg, code = ws:call("grep",
    {path = path, pattern = pat, literal = true, include_hidden = true, output_mode = "files"})
  F.ok(label, res, msg, code)
  F.unblocked(release, label)
  no_outside(label, fx, res)
  return res
end

describe(F.tag("security: grep and glob walks"), function()
  local fx, ws, fifo_pid

  lazy_setup(function()
    fx = F.build()
    ws = F.open({{path = fx.ws, mode = "rw"}})
  end)

  lazy_teardown(function()
    F.stop(fifo_pid)
    if ws then ws:close() end
    F.cleanup(fx)
  end)

  it("grep over the whole root follows no link, reads no FIFO, shows nothing from outside", function()
    -- a broken walk that opened the FIFO would block: the release opens it later
    fifo_pid = F.fifo_release(fx.ws .. "/fifo")
    F.guarded(fx, "grep .", function()
      for _, pat in ipairs({"TOPSECRET", "root:", "ROOTB", "WS_SECRET", "."}) do
        local t, res, msg, code = F.timed(ws.call, ws, "grep",
          {path = ".", pattern = pat, literal = pat ~= ".", include_hidden = true, respect_ignore = false})
        F.ok("grep " .. pat, res, msg, code)
        F.unblocked(fifo_pid, "grep " .. pat)
        assert.is_true(t < F.HANG, ("grep took %.2f s (loop followed?)"):format(t))
        no_link_paths("grep " .. pat, res.files)
        no_outside("grep " .. pat, fx, res)
      end
      local res = F.ok("grep files", ws:call("grep", {path = ".", pattern = "FILE", include_hidden = true}))
      local files = {}
      for _, f in ipairs(res.files) do files[f] = true end
      assert.is_true(files["file.txt"] and files["sub/file.txt"] and files["b/c/file"],
        "in-root files are searched: " .. F.dump(res.files))
    end)
    F.stop(fifo_pid); fifo_pid = nil
  end)

  it("grep starting at a link that leaves the root is refused (P0-6)", function()
    F.guarded(fx, "grep outside starts", function()
      for _, p in ipairs({"esc_updir", "esc_dir", "proc_link", "root_link1", "root_link3", "d_link",
                          "esc_updir/..", "../outside", "sub/../../outside", fx.B .. "/outside",
                          "/proc/self/root/etc", "esc_file", "esc_abs"}) do
        F.refused("grep " .. p, "OUTSIDE_ROOT", ws:call("grep", {path = p, pattern = "TOPSECRET"}))
      end
      F.refused("grep self", "ELOOP", ws:call("grep", {path = "self", pattern = "x"}))
    end)
  end)

  it("grep on a FIFO, a socket or a link loop answers at once", function()
    local release = F.fifo_release(fx.ws .. "/fifo")
    F.guarded(fx, "grep nonregular", function()
      F.refused("grep fifo", "NOT_REGULAR", ws:call("grep", {path = "fifo", pattern = "x"}))
      F.unblocked(release, "grep fifo")
      local t, res, msg, code
      F.refused("grep sock", "NOT_REGULAR", ws:call("grep", {path = "sock", pattern = "x"}))
      F.refused("grep loop1", "ELOOP", ws:call("grep", {path = "loop1", pattern = "x"}))
      t, res, msg, code = F.timed(ws.call, ws, "grep", {path = "loop", pattern = "x"})
      F.ok("grep loop/", res, msg, code)
      assert.is_true(t < F.HANG, "grep over loop/ took too long")
    end)
    F.stop(release)
  end)

  it("a large file (mapped, searched in chunks) follows the same rules: no link out, no FIFO", function()
    -- 20 MiB: over the 16 MiB map threshold, two 8 MiB chunks
    local big = fx.B .. "/outside/big_secret.txt"
    F.sh("yes " .. F.q("line " .. F.SECRET) .. " | head -c 20971520 > " .. F.q(big))
    F.sh("mkdir -p " .. F.q(fx.ws .. "/bigdir") .. " && ln -sfn " .. F.q(big) .. " " .. F.q(fx.ws .. "/bigdir/esc_big")
      .. " && yes 'plain line text' | head -c 20971520 > " .. F.q(fx.ws .. "/bigdir/inside_big.txt")
      .. " && echo 'needle at the end' >> " .. F.q(fx.ws .. "/bigdir/inside_big.txt")
      .. " && mkfifo " .. F.q(fx.ws .. "/bigdir/fifo_big"))
    local pid = F.fifo_release(fx.ws .. "/bigdir/fifo_big")
    F.guarded(fx, "grep big", function()
      local res, msg, code = ws:call("grep", {path = "bigdir", pattern = F.SECRET, literal = true})
      F.ok("grep big secret", res, msg, code)
      F.unblocked(pid, "grep big secret")
      no_outside("grep big", fx, res)
      assert.equal(0, res.total)
      res, msg, code = ws:call("grep", {path = "bigdir", pattern = "needle"})
      F.ok("grep big needle", res, msg, code)
      assert.equal(1, res.total)
      assert.equal(1310721, res.matches[1].line)
      F.refused("grep esc_big", {"OUTSIDE_ROOT", "ELOOP"}, ws:call("grep", {path = "bigdir/esc_big", pattern = "x"}))
    end)
    F.stop(pid)
    F.sh("rm -rf " .. F.q(fx.ws .. "/bigdir") .. " " .. F.q(big))
  end)

  it("one directory shared between the workers follows the same rules: no link out, no FIFO, no denied file", function()
    -- 400 entries in one directory: the worker that reads it hands parts of
    -- it to the workers that wait (walk.c), each part through the same checks
    local flat = fx.ws .. "/flat"
    F.sh("mkdir -p " .. F.q(flat) .. " && cd " .. F.q(flat) .. " && for i in $(seq 100 499); do case $((i % 10)) in "
      .. "3) ln -s ../../outside/secret.txt l$i.txt ;; 7) mkfifo p$i.txt ;; 5) printf 'needle KEY=%s\\n' $i > .env.$i ;; "
      .. "*) printf 'needle %s\\n' $i > f$i.txt ;; esac; done")
    local fifos = {}
    for i = 107, 497, 10 do fifos[#fifos + 1] = ("%s/p%d.txt"):format(flat, i) end
    local release = F.fifo_release(fifos)
    local wsp = F.open({{path = fx.ws, mode = "rw"}}, {policies = {"default", "secrets"}})
    F.guarded(fx, "grep flat", function()
      for _, pat in ipairs({"needle", F.SECRET, "KEY="}) do
        local res = grep_files(fx, wsp, "flat", pat, release)
        for _, f in ipairs(res.files) do
          assert.truthy(f:match("^flat/f%d+%.txt$"), "grep flat " .. pat .. " reached " .. f)
        end
        assert.equal(pat == "needle" and 280 or 0, #res.files)
      end
      local res = F.ok("glob flat", wsp:call("glob", {pattern = "flat/**", include_hidden = true}))
      local n = 0
      for _, e in ipairs(res.entries or {}) do
        local p = type(e) == "table" and e.path or e
        assert.is_nil(p:find(".env", 1, true), "glob listed a denied file: " .. p)
        n = n + 1
      end
      assert.equal(280, n) -- the regular files (glob's default type)
      F.unblocked(release, "glob flat")
    end)
    F.stop(release)
    wsp:close()
    F.sh("rm -rf " .. F.q(flat))
  end)

  it("files mode answering a big file from its head follows the same rules: no link out, no FIFO, no denied file", function()
    -- 2 MiB each: over files mode's 1 MiB map threshold, so each file's
    -- first 64 KiB are read first and a whole line there answers (grep.c
    -- files_head), on the fd the walk opened and checked
    local out = fx.B .. "/outside/head_secret.txt"
    local dir = fx.ws .. "/headdir"
    F.sh("{ echo " .. F.q("needle " .. F.SECRET) .. "; yes 'plain line text' | head -c 2097152; } > " .. F.q(out))
    F.sh("mkdir -p " .. F.q(dir) .. " && cd " .. F.q(dir)
      .. " && ln -sfn " .. F.q(out) .. " esc_head.txt"
      .. " && { echo needle inside; yes 'plain line text' | head -c 2097152; } > a.txt"
      .. " && { echo needle KEY=1; yes 'plain line text' | head -c 2097152; } > .env.big"
      .. " && { printf 'needle\\0bin\\n'; yes 'plain line text' | head -c 2097152; } > bin.dat"
      .. " && mkfifo fifo_head.txt")
    local pid = F.fifo_release(dir .. "/fifo_head.txt")
    local wsp = F.open({{path = fx.ws, mode = "rw"}}, {policies = {"default", "secrets"}})
    F.guarded(fx, "grep head", function()
      for _, pat in ipairs({"needle", F.SECRET, "KEY="}) do
        local res = grep_files(fx, wsp, "headdir", pat, pid)
        assert.same(pat == "needle" and {"headdir/a.txt"} or {}, res.files)
        if pat == "needle" then assert.same({"headdir/bin.dat"}, res.skipped_binary) end
      end
    end)
    wsp:close()
    F.stop(pid)
    F.sh("rm -rf " .. F.q(dir) .. " " .. F.q(out))
  end)

  it("grep below an in-root directory link searches its target, not links inside it", function()
    F.guarded(fx, "grep link_sub", function()
      local res = F.ok("grep link_sub", ws:call("grep", {path = "link_sub", pattern = "SUBFILE"}))
      assert.same({"link_sub/file.txt"}, res.files)
      res = F.ok("grep link_sub all", ws:call("grep", {path = "link_sub", pattern = "."}))
      no_outside("grep link_sub", fx, res)
    end)
  end)

  it("glob over the whole root follows no link and lists links as symlinks", function()
    F.guarded(fx, "glob **", function()
      local t, res, msg, code = F.timed(ws.call, ws, "glob",
        {pattern = "**", type = "any", include_hidden = true, respect_ignore = false})
      F.ok("glob **", res, msg, code)
      assert.is_true(t < F.HANG, "glob took too long")
      local paths, types = {}, {}
      for i, e in ipairs(res.entries) do paths[i] = e.path; types[e.path] = e.type end
      no_link_paths("glob **", paths)
      for _, link in ipairs(LINKS) do
        assert.are.equal("symlink", types[link], link .. " should be listed as a symlink")
      end
      for _, p in ipairs(paths) do
        assert.is_nil(p:find("secret.txt", 1, true), "glob listed an outside file: " .. p)
      end
    end)
  end)

  it("glob patterns cannot climb out or through links", function()
    F.guarded(fx, "glob patterns", function()
      for _, pat in ipairs({"../outside/*", "sub/../../outside/*", "..", "a/../../x", "**/../*"}) do
        F.refused("glob " .. pat, "INVALID_ARGUMENT", ws:call("glob", {pattern = pat}))
      end
      for _, pat in ipairs({"esc_updir/*", "esc_dir/etc/*", "proc_link/**", "root_link1/etc/passwd",
                            "link_sub/*", "esc_updir/secret.txt"}) do
        local res = F.ok("glob " .. pat, ws:call("glob", {pattern = pat, type = "any"}))
        assert.same({}, res.entries, "glob " .. pat .. " went through a link")
      end
      F.refused("glob path esc_updir", "OUTSIDE_ROOT", ws:call("glob", {pattern = "*", path = "esc_updir"}))
      F.refused("glob abs outside", "OUTSIDE_ROOT", ws:call("glob", {pattern = fx.B .. "/outside/*"}))
    end)
  end)

  it("glob over the wire (entries written as JSON by the core) lists what the tables list: no link out, no denied file", function()
    -- the agent's own call over MCP or `burrow call` takes globwire.c's
    -- path: the same walk, its entries written in C; decoded, they must
    -- be the table path's, for whole-root walks and patterns aimed at links
    local json = require("burrow.core").json
    local wsp = F.open({{path = fx.ws, mode = "rw"}}, {policies = {"default", "secrets"}})
    F.guarded(fx, "glob wire", function()
      local calls = {{pattern = "**", type = "any", include_hidden = true, respect_ignore = false},
        {pattern = "**/*", include_hidden = true}, {pattern = "**/.env*", include_hidden = true}}
      for _, pat in ipairs({"esc_updir/*", "esc_dir/etc/*", "proc_link/**", "root_link1/etc/passwd",
                            "link_sub/*", "esc_updir/secret.txt"}) do
        calls[#calls + 1] = {pattern = pat, type = "any"}
      end
      for _, w in ipairs({ws, wsp}) do
        for _, a in ipairs(calls) do
          local label = "glob wire " .. json.encode(a)
          local res = F.ok(label, w:call("glob", a, {wire = true}))
          assert.equal("userdata", type(res.entries), label .. " took the table path")
          local got = json.decode(json.encode(res))
          local want = json.decode(json.encode(F.ok(label, w:call("glob", a))))
          assert.same(want, got, label)
          local paths = {}
          for i, e in ipairs(got.entries) do
            paths[i] = e.path
            assert.is_nil(e.path:find("secret.txt", 1, true), label .. " listed an outside file: " .. e.path)
            if w == wsp then assert.is_nil(e.path:find(".env", 1, true), label .. " listed a denied file: " .. e.path) end
          end
          no_link_paths(label, paths)
        end
      end
    end)
    wsp:close()
  end)

  it("a NUL byte in a pattern or glob is INVALID_ARGUMENT (P1-6)", function()
    F.guarded(fx, "NUL", function()
      F.refused("grep NUL", "INVALID_ARGUMENT", ws:call("grep", {pattern = "FILE\0../../outside"}))
      F.refused("grep literal NUL", "INVALID_ARGUMENT", ws:call("grep", {pattern = "a\0b", literal = true}))
      F.refused("grep include NUL", "INVALID_ARGUMENT", ws:call("grep", {pattern = "x", include = {"*.c\0/../x"}}))
      F.refused("glob NUL", "INVALID_ARGUMENT", ws:call("glob", {pattern = "*.txt\0/../../outside/*"}))
      F.refused("grep path NUL", "INVALID_ARGUMENT", ws:call("grep", {pattern = "x", path = "sub\0/../.."}))
    end)
  end)

  it("names no host path with a virtual mount (P0-20)", function()
    local wv = F.open({{path = fx.ws, mount = "/workspace"}})
    F.guarded(fx, "mount", function()
      local res = F.ok("grep /workspace", wv:call("grep", {path = "/workspace", pattern = "ROOTFILE"}))
      assert.same({"/workspace/file.txt"}, res.files)
      local g = F.ok("glob /workspace", wv:call("glob", {pattern = "/workspace/sub/*"}))
      assert.same("/workspace/sub/file.txt", g.entries[1] and g.entries[1].path)
      for _, r in ipairs({res, g, select(2, wv:call("grep", {path = "nope", pattern = "x"}))}) do
        for _, s in ipairs(F.strings(r)) do
          assert.is_nil(s:find(fx.B, 1, true), "host path in a result: " .. s)
        end
      end
    end)
    wv:close()
  end)

  describe("a tree 1,000 levels deep and 20,000 files (P1-13)", function()
    local big, wb
    lazy_setup(function()
      big = F.mktemp()
      F.sh("cd " .. F.q(big) .. " && mkdir -p many && cd many && seq 1 20000 | sed 's/$/.txt/' | xargs touch")
      F.sh("cd " .. F.q(big) .. " && p=deep && for i in $(seq 1 1000); do p=$p/d; done && mkdir -p $p && echo bottom > $p/end.txt")
      wb = F.open({{path = big, mode = "ro"}})
    end)
    lazy_teardown(function()
      if wb then wb:close() end
      if big then F.rmtree(big) end
    end)

    it("grep reaches the bottom without running out of stack or fds", function()
      local res = F.ok("grep deep", wb:call("grep", {pattern = "bottom"}))
      assert.are.equal(1, #res.files)
      assert.is_true(#res.files[1] > 2000)
    end)

    it("glob stops at max_entries and says so", function()
      local res = F.ok("glob many", wb:call("glob", {pattern = "many/*.txt"}))
      assert.are.equal(1000, #res.entries)
      assert.is_true(res.truncated)
    end)
  end)
end)
