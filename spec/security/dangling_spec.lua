-- P0-8: a dangling link pointing outside, then create (GoClaw #1201,
-- DesktopCommanderMCP #420, CVE-2025-53109), for write_file, read_file and stat.

local F = require "security.fixture"

local OUT = "OUTSIDE_ROOT"
local REFUSED = {"OUTSIDE_ROOT", "POLICY_DENIED"}   -- final-component link: either

describe(F.tag("security: dangling links P0-8"), function()
  local fx, ws

  lazy_setup(function()
    fx = F.build()
    ws = F.open({{path = fx.ws, mode = "rw"}})
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    F.cleanup(fx)
  end)

  local function absent(rel)
    assert.is_false(F.exists(fx.B .. "/" .. rel), "B/" .. rel .. " was created outside the root")
  end

  local cases = {
    {"dangling_out", "outside/new.txt"},
    {"dangling_home", "home/.bashrc.new"},
    {"dc_new", "etc_cron_d/x"},               -- ws/new -> /etc/cron.d/x, under B
  }
  for _, c in ipairs(cases) do
    local link, target = c[1], c[2]
    it("write_file " .. link .. " is refused; B/" .. target .. " is not created", function()
      F.guarded(fx, link, function()
        F.refused("write " .. link, REFUSED, ws:call("write_file", {path = link, content = "PWNED\n"}))
        F.refused("write " .. link .. " create_dirs=false", REFUSED,
          ws:call("write_file", {path = link, content = "PWNED\n", create_dirs = false}))
        F.refused("write " .. link .. " expected_hash=absent",
          {"OUTSIDE_ROOT", "POLICY_DENIED", "EEXIST", "HASH_MISMATCH"},
          ws:call("write_file", {path = link, content = "PWNED\n", expected_hash = "absent"}))
        F.refused("write " .. link .. " empty", REFUSED, ws:call("write_file", {path = link, content = ""}))
        absent(target)
        assert.is_truthy(F.lstat(fx.ws .. "/" .. link).type:find("link"), link .. " must still be a link")
      end)
    end)
    it("read_file " .. link .. " -> OUTSIDE_ROOT; stat reports the link itself", function()
      F.guarded(fx, link, function()
        F.refused("read " .. link, OUT, ws:call("read_file", {path = link}))
        local st = F.ok("stat " .. link, ws:call("stat", {path = link}))
        assert.are.equal("symlink", st.type)
        absent(target)
      end)
    end)
  end

  it("write_file dangling_dir/x (create_dirs through a dangling dir link) -> OUTSIDE_ROOT; no B/outside/newdir", function()
    F.guarded(fx, "dangling_dir", function()
      F.refused("write dangling_dir/x", OUT, ws:call("write_file", {path = "dangling_dir/x", content = "PWNED\n"}))
      F.refused("write dangling_dir/y/z", OUT,
        ws:call("write_file", {path = "dangling_dir/y/z", content = "PWNED\n", create_dirs = true}))
      F.refused("write dangling_dir/x create_dirs=false", OUT,
        ws:call("write_file", {path = "dangling_dir/x", content = "PWNED\n", create_dirs = false}))
      F.refused("list dangling_dir", OUT, ws:call("list_dir", {path = "dangling_dir"}))
      absent("outside/newdir")
    end)
  end)

  it("GoClaw #1201: x -> B/home/.bashrc (target present): write refused, .bashrc unchanged", function()
    F.guarded(fx, "goclaw_x", function()
      F.refused("write goclaw_x", OUT, ws:call("write_file", {path = "goclaw_x", content = "PWNED\n"}))
      F.refused("read goclaw_x", OUT, ws:call("read_file", {path = "goclaw_x"}))
      assert.are.equal("BASHRC", F.read_host(fx.B .. "/home/.bashrc"))
    end)
  end)

  it("a dangling link planted after open is refused the same way", function()
    F.sh("ln -s ../outside/late.txt " .. F.q(fx.ws .. "/late_link"))
    F.guarded(fx, "late_link", function()
      F.refused("write late_link", REFUSED, ws:call("write_file", {path = "late_link", content = "PWNED\n"}))
      absent("outside/late.txt")
    end)
  end)
end)
