-- P1-1 FIFOs, P1-2 sockets and devices, P1-3 files that lie about their size.
-- Device reads run in a separate, memory- and time-bounded lua5.4 process
-- (probe_child.lua): a broken build reading /dev/zero must not take the
-- test runner down with it.

local F = require "security.fixture"

local NR = "NOT_REGULAR"

describe(F.tag("security: non-regular files P1-1..P1-3"), function()
  local fx, ws, fifo_pid

  lazy_setup(function()
    fx = F.build()
    F.sh("ln -s fifo " .. F.q(fx.ws .. "/fifo_link"))
    ws = F.open({{path = fx.ws, mode = "rw"}})
  end)

  lazy_teardown(function()
    F.stop(fifo_pid)
    if ws then ws:close() end
    F.cleanup(fx)
  end)

  local function still_fifo()
    assert.is_truthy(F.lstat(fx.ws .. "/fifo").type:find("fifo"), "fifo was replaced")
  end

  describe("P1-1 FIFOs", function()
    before_each(function()
      -- a blocking open would hang forever: the release opens the FIFO
      -- later, so the case fails instead (F.unblocked: it returned first)
      fifo_pid = F.fifo_release(fx.ws .. "/fifo")
    end)
    after_each(function() F.stop(fifo_pid); fifo_pid = nil end)

    it("read_file fifo -> NOT_REGULAR without blocking", function()
      F.guarded(fx, "read fifo", function()
        F.refused("read fifo", NR, ws:call("read_file", {path = "fifo"}))
        F.unblocked(fifo_pid, "read fifo")
        F.refused("read fifo_link", NR, ws:call("read_file", {path = "fifo_link"}))
        F.unblocked(fifo_pid, "read fifo_link")
        F.refused("read fifo base64", NR, ws:call("read_file", {path = "fifo", encoding = "base64"}))
        F.unblocked(fifo_pid, "read fifo (base64)")
      end)
    end)

    it("write_file fifo -> NOT_REGULAR, promptly; the FIFO stays", function()
      F.guarded(fx, "write fifo", function()
        for _, extra in ipairs({{}, {create_dirs = false}, {content = ""}}) do
          local args = {path = "fifo", content = "PWNED\n"}
          for k, v in pairs(extra) do args[k] = v end
          F.refused("write fifo " .. F.dump(extra), NR, ws:call("write_file", args))
          F.unblocked(fifo_pid, "write fifo " .. F.dump(extra))
        end
        still_fifo()
      end)
    end)

    it("stat and list_dir around a FIFO never block", function()
      F.guarded(fx, "stat/list fifo", function()
        local st = F.ok("stat fifo", ws:call("stat", {path = "fifo"}))
        assert.are.equal("other", st.type)
        F.unblocked(fifo_pid, "stat fifo")
        F.ok("list .", ws:call("list_dir", {path = "."}))
        F.unblocked(fifo_pid, "list .")
        F.refused("list fifo", "ENOTDIR", ws:call("list_dir", {path = "fifo"}))
      end)
    end)
  end)

  describe("P1-2 sockets and devices", function()
    it("sock: read and write -> NOT_REGULAR; stat says other", function()
      F.guarded(fx, "sock", function()
        F.refused("read sock", NR, ws:call("read_file", {path = "sock"}))
        F.refused("write sock", NR, ws:call("write_file", {path = "sock", content = "x"}))
        local st = F.ok("stat sock", ws:call("stat", {path = "sock"}))
        assert.are.equal("other", st.type)
        assert.is_truthy(F.lstat(fx.ws .. "/sock").type:find("socket"), "sock was replaced")
      end)
    end)

    it("/dev/zero, /dev/full, /dev/urandom, /dev/null through a ro root on /dev -> NOT_REGULAR", function()
      local paths = {"/dev/zero", "/dev/full", "/dev/urandom", "/dev/null"}
      local calls = {}
      for _, p in ipairs(paths) do calls[#calls + 1] = {"read_file", {path = p}} end
      calls[#calls + 1] = {"read_file", {path = "devzero"}}       -- ws/devzero -> /dev/zero
      calls[#calls + 1] = {"read_file", {path = "/dev/zero", encoding = "base64"}}
      F.guarded(fx, "devices", function()
        local t0 = F.now()
        local r, err = F.probe({roots = {{path = fx.ws, mode = "rw"}, {path = "/dev", mode = "ro"}}, calls = calls},
          {timeout = 20})
        assert.is_not_nil(r, "device probe died (unbounded read? hang?): " .. tostring(err))
        assert.is_nil(r.open_error, "open failed: " .. F.dump(r.open_error))
        for i, p in ipairs(paths) do
          assert.is_false(r[i].ok, "read " .. p .. " succeeded (" .. tostring(r[i].content_len) .. " bytes)")
          assert.are.equal(NR, r[i].code, "read " .. p .. ": " .. tostring(r[i].msg))
        end
        local dz = r[#paths + 1]
        assert.are.equal("OUTSIDE_ROOT", dz.code, "read devzero (link to /dev/zero): " .. tostring(dz.msg))
        assert.are.equal(NR, r[#paths + 2].code, "read /dev/zero base64: " .. tostring(r[#paths + 2].msg))
        assert.is_true(F.now() - t0 < 10, "device probe took too long")
      end)
    end)

    it("[root] dev0 (mknod c 1 5) -> NOT_REGULAR", function()
      if not fx.have.dev0 then
        pending("SKIP: needs root (mknod c 1 5 in the workspace)")
        return
      end
      F.guarded(fx, "dev0", function()
        local r, err = F.probe({roots = {{path = fx.ws, mode = "rw"}}, calls = {
          {"read_file", {path = "dev0"}}, {"write_file", {path = "dev0", content = "x"}},
          {"read_file", {path = "dev0", encoding = "base64"}}, {"stat", {path = "dev0"}}}}, {timeout = 20})
        assert.is_not_nil(r, "dev0 probe died: " .. tostring(err))
        assert.are.equal(NR, r[1].code, "read dev0: " .. tostring(r[1].msg))
        assert.are.equal(NR, r[2].code, "write dev0: " .. tostring(r[2].msg))
        assert.are.equal(NR, r[3].code, "read dev0 base64: " .. tostring(r[3].msg))
        assert.is_true(r[4].ok, "stat dev0: " .. tostring(r[4].msg))
        assert.are.equal("other", r[4].type)
        assert.is_truthy(F.lstat(fx.ws .. "/dev0").type:find("character"), "dev0 was replaced")
      end)
    end)
  end)

  describe("P1-3 files that lie about their size", function()
    it("/proc/self/status (st_size 0) through a ro root on /proc reads its real content", function()
      local h = F.open({{path = fx.ws, mode = "rw"}, {path = "/proc", mode = "ro"}})
      local res = F.reads("read /proc/self/status", "Name:", h:call("read_file", {path = "/proc/self/status"}))
      assert.is_truthy(res.content:find("Pid:", 1, true), "status should be read to its end")
      assert.is_truthy(res.content:find("VmRSS", 1, true) or res.content:find("voluntary_ctxt_switches", 1, true),
        "status should be read to its end")
      h:close()
    end)

    it("a file appended to without end during the read is capped at max_result_bytes", function()
      local cap = 65536
      local h = F.open({{path = fx.ws, mode = "rw"}},
        {caps = {max_result_bytes = cap, max_entries = 1000, max_file_size = 52428800}})
      local h2 = F.open({{path = fx.ws, mode = "rw"}},
        {caps = {max_result_bytes = cap, max_entries = 1000, max_file_size = 1048576}})
      local f = fx.ws .. "/growing.log"
      F.write_host(f, "")
      -- bounded appender: at most ~20 MiB over a few seconds; it runs in the
      -- process group F.stop ends (no `timeout`: that would leave the group)
      local pid = F.spawn("for i in $(seq 1 300); do yes 'appended line of text' | head -c 65536 >> " ..
        F.q(f) .. "; sleep 0.01; done")
      local ok, err = pcall(function()
        F.sleep(0.2)
        local seen_big = false
        for i = 1, 20 do
          local which = (i % 2 == 0) and h2 or h
          local res, msg, code = which:call("read_file", {path = "growing.log", limit = 1000000})
          if res then
            assert.is_true(#res.content <= cap + 1024,
              ("read %d returned %d bytes of content, cap %d"):format(i, #res.content, cap))
            if res.size and res.size > cap then
              seen_big = true
              assert.is_true(res.truncated == true, "a capped result must say truncated")
            end
          else
            assert.are.equal("TOO_LARGE", code, "read growing.log: " .. tostring(msg))
            assert.are.equal(h2, which, "TOO_LARGE below max_file_size: " .. tostring(msg))
            seen_big = true
          end
          F.sleep(0.05)
        end
        assert.is_true(seen_big, "the appender never outgrew the cap: the case did not test anything")
      end)
      F.stop(pid)
      h:close(); h2:close()
      os.remove(f)
      if not ok then error(err, 0) end
    end)
  end)
end)
