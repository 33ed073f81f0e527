-- Installing burrow the way its users do, into temporary places, and using
-- it from there only (never from the build tree):
--   * make install PREFIX=... (and DESTDIR=...: nothing outside the prefix,
--     make uninstall removes it all);
--   * the installed binary finds its Lua files under the prefix;
--   * a stock lua5.4 requires burrow, burrow.server and burrow.host from
--     the prefix: one core.so in the process, wherever the prefix is moved;
--   * pkg-config --cflags --libs burrow compiles and links (shared, static);
--   * examples/embed built against the installed burrow.pc and run;
--   * luarocks make into a temporary tree, offline (no rock server), then
--     require "burrow" from a stock lua5.4 and examples/agent.lua run;
--   * make src-rock (luarocks pack of the source rockspec), its rock
--     installed offline into a clean tree; LPeg found inside burrow.core
--     with no lpeg.so on the cpath;
--   * luarocks lint of the rockspec passes (MIT, LICENSE installed with the docs).
-- A tool the machine lacks (luarocks, pkg-config) makes its tests pending
-- with a SKIP reason, never a pass.

local H = require "helpers"

local REPO = H.REPO

local function have(cmd)
  local _, ok = H.run("command -v " .. cmd .. " >/dev/null 2>&1")
  return ok
end

-- Commands run with a clean environment for Lua and burrow lookups: no
-- BURROW_LUA_DIR, no LUA_PATH from the caller, no sanitizer preload (a
-- `make sanitize` run preloads ASan for core.so; the installed copy is a
-- plain build).
local CLEAN = "env -u BURROW_LUA_DIR -u LD_PRELOAD -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 "

local function sh(cmd)
  return H.sh(CLEAN .. "sh -c " .. H.q(cmd))
end

local function run(cmd)
  return H.run(CLEAN .. "sh -c " .. H.q(cmd .. " 2>&1"))
end

-- Every file (and symlink) under dir, as paths relative to it, sorted.
local function files_under(dir)
  local out = sh("cd " .. H.q(dir) .. " && find . \\( -type f -o -type l \\) | LC_ALL=C sort")
  local list = {}
  for line in out:gmatch("[^\n]+") do list[#list + 1] = line:gsub("^%./", "") end
  return list
end

local function set(list)
  local s = {}
  for _, v in ipairs(list) do s[v] = true end
  return s
end

-- The Lua files of the source tree (what make install and the rock carry).
local function lua_files()
  local list = {}
  for _, f in ipairs(files_under(REPO .. "/lua")) do
    if f:match("%.lua$") then list[#list + 1] = f end
  end
  return list
end

local function native_tools()
  return require("burrow.workspace.registry").native
end

describe(H.tag("installed burrow"), function()
  local tmp, prefix, jobs

  lazy_setup(function()
    tmp = H.sh("mktemp -d /tmp/burrow-install.XXXXXXXX"):gsub("%s+$", "")
    prefix = tmp .. "/prefix"
    jobs = H.sh("nproc 2>/dev/null || echo 2"):gsub("%s+$", "")
    -- a build directory of its own: the working tree's build/ is untouched
    sh(("make -C %s -j%s -s install B=%s PREFIX=%s"):format(H.q(REPO), jobs, H.q(tmp .. "/build"), H.q(prefix)))
  end)

  lazy_teardown(function()
    if tmp and tmp:match("^/tmp/burrow%-install%.") then os.execute("rm -rf " .. H.q(tmp)) end
  end)

  it("installs everything under DESTDIR/PREFIX and nothing outside; uninstall removes it", function()
    local stage = tmp .. "/stage"
    sh(("make -C %s -s install B=%s PREFIX=/opt/burrow-test DESTDIR=%s"):format(H.q(REPO), H.q(tmp .. "/build"), H.q(stage)))
    local got = files_under(stage)
    local want = {
      "opt/burrow-test/bin/burrow",
      "opt/burrow-test/include/burrow.h",
      "opt/burrow-test/lib/burrow/lua/burrow/core.so",
      "opt/burrow-test/lib/burrow/lua/burrow/host.so",
      "opt/burrow-test/lib/burrow/lua/burrow/server.so",
      "opt/burrow-test/lib/libburrow.a",
      "opt/burrow-test/lib/libburrow.so",
      "opt/burrow-test/lib/libburrow.so.0",
      "opt/burrow-test/lib/libburrow.so." .. H.burrow.version,
      "opt/burrow-test/lib/pkgconfig/burrow.pc",
      "opt/burrow-test/share/man/man1/burrow.1",
      "opt/burrow-test/share/doc/burrow/LICENSE",
    }
    for _, f in ipairs(lua_files()) do
      want[#want + 1] = "opt/burrow-test/share/burrow/lua/" .. f
      -- a standard policy's text and bytecode (host/luac.lua --text)
      if f:match("^policy/") then want[#want + 1] = "opt/burrow-test/share/burrow/lua/" .. f .. "c" end
      -- and, for one without check() or after(), its data (host/policydata.lua)
      local data = { ["policy/default.lua"] = true, ["policy/protected.lua"] = true, ["policy/secrets.lua"] = true }
      if data[f] then want[#want + 1] = "opt/burrow-test/share/burrow/lua/" .. f:gsub("%.lua$", ".luad") end
    end
    table.sort(want)
    assert.same(want, got)
    -- the pkg-config file names the final prefix, not the staging directory
    local pc = H.read(stage, "opt/burrow-test/lib/pkgconfig/burrow.pc")
    assert.matches("prefix=/opt/burrow-test\n", pc, 1, true)
    assert.not_matches(stage, pc, 1, true)
    assert.equal("libburrow.so.0", (sh("readlink " .. H.q(stage .. "/opt/burrow-test/lib/libburrow.so"))):gsub("%s+$", ""))
    assert.matches("SONAME%s+libburrow%.so%.0", sh("objdump -p " .. H.q(stage .. "/opt/burrow-test/lib/libburrow.so.0")))

    sh(("make -C %s -s uninstall PREFIX=/opt/burrow-test DESTDIR=%s"):format(H.q(REPO), H.q(stage)))
    assert.same({}, files_under(stage))
  end)

  it("runs the installed binary from anywhere, with its Lua files from the prefix", function()
    local ws = tmp .. "/ws"
    H.write(ws, "hello.txt", "hi there\n")
    local out = sh("cd / && " .. H.q(prefix .. "/bin/burrow") .. " version")
    assert.matches("^burrow " .. H.burrow.version:gsub("%.", "%%.") .. " ", out)
    local list = H.json.decode(sh("cd / && " .. H.q(prefix .. "/bin/burrow") .. " tools --format openai"))
    assert.equal(#native_tools(), #list)
    out = sh("cd " .. H.q(ws) .. " && " .. H.q(prefix .. "/bin/burrow") .. [[ call read_file '{"path":"hello.txt"}']])
    assert.equal("1\thi there\n", H.json.decode(out).content)
    -- the prefix's Lua files, not the source tree's: a policy put there is
    -- found; without them the binary runs from its built-in copy, which
    -- has no such policy
    H.write(prefix .. "/share/burrow/lua/policy", "marker.lua", 'return { name = "marker", check = function() return "allow" end }\n')
    H.write(ws, "m.yaml", "roots: [.]\npolicies: [marker]\n")
    local check_cmd = "cd " .. H.q(ws) .. " && " .. H.q(prefix .. "/bin/burrow") .. " check --config m.yaml 2>&1"
    local msg, ok = run(check_cmd)
    assert.is_true(ok, msg)
    sh("mv " .. H.q(prefix .. "/share/burrow/lua") .. " " .. H.q(prefix .. "/share/burrow/lua.off"))
    local v, vok = run("cd / && " .. H.q(prefix .. "/bin/burrow") .. " version")
    msg, ok = run(check_cmd)
    sh("mv " .. H.q(prefix .. "/share/burrow/lua.off") .. " " .. H.q(prefix .. "/share/burrow/lua"))
    os.remove(prefix .. "/share/burrow/lua/policy/marker.lua")
    assert.is_true(vok, v)
    assert.is_false(ok, msg)
    assert.matches("marker", msg, 1, true)
  end)

  it("the standard policies load from their bytecode; an edited one from its text", function()
    local ws = tmp .. "/ws2"
    H.write(ws, "a.txt", "a\n")
    local pol = prefix .. "/share/burrow/lua/policy/"
    for _, name in ipairs { "default", "protected", "secrets", "readonly", "quotas", "audit" } do
      local text, both = H.read(pol, name .. ".lua"), H.read(pol, name .. ".luac")
      assert.equal(text, both:sub(1, #text), name)
      assert.equal("\27Lua", both:sub(#text + 1, #text + 4), name)
    end
    for _, name in ipairs { "default", "protected", "secrets" } do
      local text, both = H.read(pol, name .. ".lua"), H.read(pol, name .. ".luad")
      assert.equal(text, both:sub(1, #text), name)
      assert.equal("\27Lua", both:sub(#text + 1, #text + 4), name)
    end
    local call = "cd " .. H.q(ws) .. " && " .. H.q(prefix .. "/bin/burrow")
      .. [[ call write_file '{"path":".vscode/tasks.json","content":"{}"}' --root . 2>&1]]
    local out, ok = run(call)
    assert.is_false(ok, out)
    assert.matches("vscode: editor tasks", out, 1, true)
    -- protected.lua edited in place (its vscode rule gone): the text runs
    local text = H.read(pol, "protected.lua")
    local edited = text:gsub('\n  { "vscode",[^\n]*\n', "\n")
    assert.is_true(#edited < #text)
    H.write(pol, "protected.lua", edited)
    out, ok = run(call)
    H.write(pol, "protected.lua", text)
    assert.is_true(ok, out)
    assert.equal("{}", H.read(ws, ".vscode/tasks.json"))
  end)

  -- The Lua modules of a plain Lua 5.4 from the prefix: burrow/init.lua
  -- offers burrow.server and burrow.host from beside the core.so it found,
  -- and they share that core.so (their DT_NEEDED is $ORIGIN/core.so), in
  -- the prefix where make put them and in a copy of it elsewhere.
  it("a stock lua5.4 requires burrow, burrow.server and burrow.host from the prefix: one core.so", function()
    local ws = tmp .. "/plainws"
    H.write(ws, "a.txt", "alpha\n")
    local prog = H.write(tmp, "plain_prog.lua", ([[
      local burrow = require "burrow"
      local server, host = require "burrow.server", require "burrow.host"
      print(type(server.stdio), type(host.host))
      local ws = assert(burrow.open { roots = { { path = %q } } })
      local got
      assert(ws:submit("read_file", { path = "a.txt" }, function(r, msg) got = r and r.content or msg end))
      local t0 = os.time()
      while got == nil and os.time() - t0 < 30 do ws:poll() end
      print((tostring(got):gsub("\n$", "")))
      ws:close()
      local seen, paths = {}, {}
      for line in io.lines("/proc/self/maps") do
        local path = line:match("(/%%S+/burrow/[a-z]+%%.so)$")
        if path and not seen[path] then seen[path] = true; paths[#paths + 1] = path end
      end
      table.sort(paths)
      print(table.concat(paths, "\n"))
    ]]):format(ws))
    local function lua_from(pfx)
      local out = sh(("cd / && LUA_PATH=%s LUA_CPATH=%s lua5.4 %s"):format(
        H.q(pfx .. "/share/burrow/lua/?.lua;" .. pfx .. "/share/burrow/lua/?/init.lua"),
        H.q(pfx .. "/lib/burrow/lua/?.so"), H.q(prog)))
      local mods = pfx .. "/lib/burrow/lua/burrow/"
      assert.equal(("function\tfunction\n1\talpha\n%score.so\n%shost.so\n%sserver.so\n"):format(mods, mods, mods), out)
    end
    lua_from(prefix)
    -- relocated: a copy of the prefix elsewhere uses its own files only
    local moved = tmp .. "/moved-prefix"
    sh("cp -a " .. H.q(prefix) .. " " .. H.q(moved))
    lua_from(moved)
    sh("rm -rf " .. H.q(moved))
  end)

  it("burrow.ffi works under LuaJIT from the installed copy (source text, not 5.4 bytecode)", function()
    if (H.run("command -v luajit || true")) == "" then return pending("SKIP: luajit not installed") end
    local ws = tmp .. "/ffiws"
    H.write(ws, "hello.txt", "from the prefix\n")
    local prog = ([[
      package.path = %q .. "/share/burrow/lua/?.lua;" .. package.path
      local burrow = require "burrow.ffi"
      local ws = assert(burrow.open({ roots = { { path = %q } } }, { lib = %q .. "/lib/libburrow.so" }))
      local res, msg = ws:call("read_file", { path = "hello.txt" })
      io.write(res and res.content or ("failed: " .. tostring(msg)))
      ws:close()
    ]]):format(prefix, ws, prefix)
    H.write(tmp, "ffi_prog.lua", prog)
    local out, ok = run("cd / && luajit " .. H.q(tmp .. "/ffi_prog.lua"))
    assert.is_true(ok, out)
    assert.equal("1\tfrom the prefix\n", out)
  end)

  it("checks the sample configurations of examples/ with the installed binary", function()
    local ex = tmp .. "/examples"
    sh("cp -r " .. H.q(REPO .. "/examples") .. " " .. H.q(ex))
    for _, name in ipairs { "burrow", "review", "operator" } do
      local out = sh("cd / && " .. H.q(prefix .. "/bin/burrow") .. " check --config " .. H.q(ex .. "/" .. name .. ".yaml"))
      assert.matches("\nok\n$", out)
    end
    local out = sh("cd / && " .. H.q(prefix .. "/bin/burrow") .. [[ call line_count '{"path":"examples/agent.lua"}' --config ]]
      .. H.q(ex .. "/operator.yaml"))
    local lines = H.sh("wc -l < " .. H.q(ex .. "/agent.lua")):gsub("%s+", "")
    assert.equal(tonumber(lines), H.json.decode(out).lines)
  end)

  it("installs the man page burrow(1) with every option of burrow --help", function()
    local page = H.read(prefix, "share/man/man1/burrow.1")
    assert.matches(".TH BURROW 1", page, 1, true)
    local help = run(H.q(prefix .. "/bin/burrow") .. " --help")
    local n = 0
    for opt in help:gmatch("%-%-([%a][%w-]*)") do
      n = n + 1
      assert.truthy(page:find("\\-\\-" .. opt:gsub("%-", "\\-"), 1, true), "burrow(1) lacks --" .. opt)
    end
    for cmd in help:gmatch("\n  burrow (%a+)") do
      n = n + 1
      assert.truthy(page:find(".B burrow " .. cmd, 1, true), "burrow(1) lacks the command " .. cmd)
    end
    assert.is_true(n >= 10)
  end)

  describe("C, through pkg-config", function()
    local pc_env

    lazy_setup(function()
      pc_env = "export PKG_CONFIG_PATH=" .. H.q(prefix .. "/lib/pkgconfig") .. "; "
    end)

    it("compiles and links a program with pkg-config --cflags --libs burrow (shared and static)", function()
      if not have("pkg-config") then return pending("SKIP: pkg-config not installed (apt-get install pkg-config)") end
      assert.equal(H.burrow.version, (sh(pc_env .. "pkg-config --modversion burrow")):gsub("%s+$", ""))
      H.write(tmp, "c/ex.c", [[
#include <burrow.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv) {
  char *err = NULL, *res = NULL;
  burrow_host *h = burrow_open(argc > 1 ? argv[1] : NULL, &err);
  if (!h) { printf("open: %s\n", err); return 1; }
  int rc = burrow_call(h, "stat", "{\"path\":\".\"}", &res);
  printf("%s %d %s\n", burrow_version(), rc, res);
  burrow_free(res);
  burrow_close(h);
  return strcmp(burrow_version(), BURROW_VERSION_STRING) != 0 || rc != BURROW_OK;
}
]])
      local c = H.q(tmp .. "/c")
      sh(pc_env .. "cd " .. c .. ' && cc ex.c $(pkg-config --cflags --libs burrow) -Wl,-rpath,"$(pkg-config --variable=libdir burrow)" -o ex-shared')
      sh(pc_env .. "cd " .. c .. " && cc ex.c $(pkg-config --cflags burrow) -Wl,-Bstatic -lburrow -Wl,-Bdynamic"
        .. " $(pkg-config --static --libs burrow | sed 's/-lburrow//') -o ex-static")
      assert.matches("libburrow%.so%.0 => " .. (prefix .. "/lib/"):gsub("%p", "%%%0"), sh("ldd " .. c .. "/ex-shared"))
      assert.not_matches("libburrow", sh("ldd " .. c .. "/ex-static"))
      for _, bin in ipairs { "ex-shared", "ex-static" } do
        local out = sh("cd / && " .. c .. "/" .. bin .. " " .. H.q(tmp))
        assert.matches('^' .. H.burrow.version:gsub("%.", "%%.") .. ' 0 {.*"type":"dir"', out)
      end
      -- the installed Lua dir, for Lua users of a make-installed copy
      local luadir = sh(pc_env .. "pkg-config --variable=luadir burrow"):gsub("%s+$", "")
      assert.equal(prefix .. "/share/burrow/lua", luadir)
    end)

    it("builds examples/embed against the installed burrow.pc and runs its frames", function()
      if not have("pkg-config") then return pending("SKIP: pkg-config not installed (apt-get install pkg-config)") end
      local ex = tmp .. "/embed"
      sh("cp -r " .. H.q(REPO .. "/examples/embed") .. " " .. H.q(ex) .. " && rm -f " .. H.q(ex) .. "/embed " .. H.q(ex) .. "/embed-static")
      sh(pc_env .. "make -s -C " .. H.q(ex) .. " embed embed-static")
      local tools = set(native_tools())
      for _, mode in ipairs { "", "--own-state ", "static" } do
        local game = tmp .. "/game-" .. (mode:match("%a+") or "engine")
        H.mkdir(game)
        local bin = mode == "static" and "embed-static" or "embed"
        local out = sh("cd / && " .. H.q(ex .. "/" .. bin) .. " " .. (mode == "static" and "" or mode) .. H.q(game))
        assert.matches("tools %(" .. #native_tools() .. "%): read_file", out)
        assert.matches("frame 2: write_file ok", out, 1, true)
        assert.matches('frame 3: read_file ok {"bom":false,"charset":"utf-8","content":"1\\tlevel: 3\\n2\\thealth: 70', out, 1, true)
        if tools.edit_file then
          assert.matches("frame 4: edit_file ok", out, 1, true)
          assert.matches('frame 6: read_file ok {"bom":false,"charset":"utf-8","content":"2\\thealth: 100\\n"', out, 1, true)
        end
        if tools.grep then assert.matches('frame 5: grep ok .*"text":"health: ', out) end
        assert.matches("frame 7: read_file error ENOENT", out, 1, true)
        assert.matches("frame 8: read_file error OUTSIDE_ROOT", out, 1, true)
        assert.matches("frame 9: write_file error POLICY_DENIED", out, 1, true)
        assert.matches("engine: package.loaded.burrow is nil", out, 1, true)
        assert.equal("level: 3\nhealth: " .. (tools.edit_file and "100" or "70") .. "\nweapon: sword\n",
          H.read(game, "saves/slot1.txt"))
      end
    end)
  end)

  describe("Lua, through the rock", function()
    local rocks, lua_env, env, offline

    lazy_setup(function()
      if not have("luarocks") then return end
      -- the rock builds from the sources alone: a copy of them, not this tree
      local src = tmp .. "/src"
      H.mkdir(src)
      sh(("cd %s && cp -r Makefile host lua rockspec %s"):format(H.q(REPO), H.q(src)))
      rocks = tmp .. "/rocks"
      -- No LuaRocks config: the rock needs no other rock (LPeg is linked
      -- into burrow.core, like PCRE2). HOME inside tmp, so nothing lands
      -- elsewhere.
      H.write(tmp, "luarocks-config.lua", "\n")
      env = ("export HOME=%s LUAROCKS_CONFIG=%s; "):format(H.q(tmp .. "/home"), H.q(tmp .. "/luarocks-config.lua"))
      -- offline: the only rock server an empty local one (a config's
      -- rocks_servers = {} is merged with LuaRocks' defaults, not instead)
      H.mkdir(tmp .. "/norocks")
      sh(env .. "luarocks-admin --lua-version=5.4 make-manifest " .. H.q(tmp .. "/norocks") .. " 2>&1")
      offline = " --only-server=" .. H.q(tmp .. "/norocks")
      sh(env .. "cd " .. H.q(src) .. " && luarocks --lua-version=5.4" .. offline .. " --tree=" .. H.q(rocks) .. " make 2>&1")
      lua_env = ('eval "$(%sluarocks --lua-version=5.4 --tree=%s path)" && '):format(env, H.q(rocks))
    end)

    it("luarocks make installs burrow.core, the modules, the tools and the policies into the tree", function()
      if not rocks then return pending("SKIP: luarocks not installed (apt-get install luarocks)") end
      local got = set(files_under(rocks))
      for _, so in ipairs { "core.so", "server.so", "host.so" } do
        assert.truthy(got["lib/lua/5.4/burrow/" .. so], "the rock lacks " .. so)
      end
      for _, f in ipairs(lua_files()) do
        local dest = f:match("^burrow/") and f or "burrow/" .. f
        assert.truthy(got["share/lua/5.4/" .. dest], "the rock lacks " .. dest)
      end
      for f in pairs(got) do -- nothing but the tree's own places
        assert.truthy(f:match("^share/lua/5%.4/burrow/") or f:match("^lib/lua/5%.4/burrow/")
          or f:match("^lib/luarocks/rocks%-5%.4/"), "unexpected file in the tree: " .. f)
      end
    end)

    it("require \"burrow\" from a stock lua5.4 finds its tools and policies in the tree", function()
      if not rocks then return pending("SKIP: luarocks not installed (apt-get install luarocks)") end
      local ws = tmp .. "/luaws"
      H.write(ws, "a.txt", "alpha\n")
      local out = sh(lua_env .. "cd / && lua5.4 -e " .. H.q([[
        local burrow = require "burrow"
        local ws = assert(burrow.open { roots = { { path = ]] .. ("%q"):format(ws) .. [[ } }, policies = { "default", "secrets" } })
        print(package.searchpath("burrow", package.path))
        print(package.searchpath("burrow.core", package.cpath))
        print(require("burrow.workspace.registry").tools_dir)
        print(require("burrow.policy").dir)
        print(#ws:tools(), #ws:tools { format = "anthropic" })
        print(ws:call("read_file", { path = "a.txt" }).content)
        print((select(3, ws:call("write_file", { path = ".env", content = "x" }))))
        local registry = require "burrow.workspace.registry"
        print(registry.packs and table.concat(registry.packs(), ",") or "")
        print(type(require("burrow.server").stdio), type(require("burrow.host").host))
        ws:close()
      ]]))
      local lines = {}
      for l in out:gmatch("[^\n]*") do lines[#lines + 1] = l end
      local lua_dir = rocks .. "/share/lua/5.4/burrow"
      assert.equal(lua_dir .. "/init.lua", lines[1])
      assert.equal(rocks .. "/lib/lua/5.4/burrow/core.so", lines[2])
      assert.equal(lua_dir .. "/tools", lines[3])
      assert.equal(lua_dir .. "/policy", lines[4])
      assert.equal(#native_tools() .. "\t" .. #native_tools(), lines[5])
      assert.equal("1\talpha", lines[6])
      assert.equal("POLICY_DENIED", lines[8])
      -- the compatibility packs travel with the tools (burrow/tools/packs)
      local registry = require "burrow.workspace.registry"
      assert.equal(registry.packs and table.concat(registry.packs(), ",") or "", lines[9])
      -- burrow.server and burrow.host from beside the tree's core.so
      assert.equal("function\tfunction", lines[10])
    end)

    it("luarocks pack of the installed rock, installed offline into another tree, works", function()
      if not rocks then return pending("SKIP: luarocks not installed (apt-get install luarocks)") end
      local packdir = tmp .. "/pack"
      H.mkdir(packdir)
      sh(env .. "cd " .. H.q(packdir) .. " && luarocks --lua-version=5.4 --tree=" .. H.q(rocks) .. " pack burrow 2>&1")
      local rock = H.run("ls " .. H.q(packdir) .. "/burrow-scm-1.*.rock"):match("[^\n]+")
      assert.truthy(rock, "no packed rock")
      local tree2 = tmp .. "/rocks2"
      sh(env .. "luarocks --lua-version=5.4" .. offline .. " --tree=" .. H.q(tree2) .. " install " .. H.q(rock) .. " 2>&1")
      local env2 = ('eval "$(%sluarocks --lua-version=5.4 --tree=%s path)" && '):format(env, H.q(tree2))
      local out = sh(env2 .. "cd / && lua5.4 -e " .. H.q([[
        local burrow = require "burrow"
        print(package.searchpath("burrow.core", package.cpath))
        local ws = assert(burrow.open { roots = { { path = "/" } } })
        print(#ws:tools() > 0)
        ws:close()
      ]]))
      assert.equal(tree2 .. "/lib/lua/5.4/burrow/core.so\ntrue\n", out)
    end)

    it("make src-rock packs the source rockspec offline; its rock installs offline into a clean tree", function()
      if not rocks then return pending("SKIP: luarocks not installed (apt-get install luarocks)") end
      if not have("git") or not H.run("git -C " .. H.q(REPO) .. " rev-parse --git-dir >/dev/null 2>&1 && echo y"):match("y") then
        return pending("SKIP: not a git checkout (make src-rock archives it with git)")
      end
      local srcdir = tmp .. "/srcrock"
      sh(env .. ("make -C %s -s src-rock SRC_ROCK_DIR=%s 2>&1"):format(H.q(REPO), H.q(srcdir)))
      local rock = srcdir .. "/burrow-scm-1.src.rock"
      assert.truthy(H.exists(srcdir, "burrow-scm-1.src.rock"), "no source rock")
      local listing = H.run("unzip -Z1 " .. H.q(rock))
      assert.equal("burrow-scm-1.rockspec\nburrow-scm.tar.gz\n", listing)
      -- the rock carries its source: the archive beside it is not needed
      os.remove(srcdir .. "/burrow-scm.tar.gz")
      local tree3, other = tmp .. "/rocks3", tmp .. "/elsewhere"
      H.mkdir(other)
      local log = sh(env .. "cd " .. H.q(other) .. " && luarocks --lua-version=5.4" .. offline .. " --tree=" .. H.q(tree3)
        .. " install " .. H.q(rock) .. " 2>&1")
      assert.matches("burrow scm-1 is now installed", log, 1, true)
      local env3 = ('eval "$(%sluarocks --lua-version=5.4 --tree=%s path)" && '):format(env, H.q(tree3))
      local out = sh(env3 .. "cd / && lua5.4 -e " .. H.q([[
        local burrow = require "burrow"
        print(package.searchpath("burrow.core", package.cpath))
        -- "1MiB" is read by the caps' LPeg grammar (burrow.base.quantity,
        -- loaded with the first cap given as text): burrow.core's own LPeg
        local ws = assert(burrow.open { roots = { { path = "/" } }, caps = { max_file_size = "1MiB" } })
        print(package.loaded.lpeg ~= nil and package.preload.lpeg ~= nil)
        print(#ws:tools() > 0, ws.caps.max_file_size)
        ws:close()
      ]]))
      assert.equal(tree3 .. "/lib/lua/5.4/burrow/core.so\ntrue\ntrue\t1048576\n", out)
    end)

    it("LPeg travels inside burrow.core: with no lpeg.so on the cpath the rock still loads it", function()
      if not rocks then return pending("SKIP: luarocks not installed (apt-get install luarocks)") end
      -- only the rock's tree on the cpath: Debian's lpeg.so is out of reach
      local out = sh(lua_env .. "cd / && LUA_CPATH=" .. H.q(rocks .. "/lib/lua/5.4/?.so") .. " lua5.4 -e " .. H.q([[
        print(package.searchpath("lpeg", package.cpath) == nil)
        local burrow = require "burrow"
        local ws = assert(burrow.open { roots = { { path = "/" } }, caps = { max_file_size = "2MiB" } })
        print(ws.caps.max_file_size, type(package.loaded.lpeg), package.preload.lpeg ~= nil)
        ws:close()
      ]]))
      local lines = {}
      for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
      assert.equal("true", lines[1]) -- searchpath finds no lpeg.so
      assert.equal("2097152\ttable\ttrue", lines[2])
    end)

    it("luarocks lint passes: the rockspec names its license (MIT)", function()
      if not rocks then return pending("SKIP: luarocks not installed (apt-get install luarocks)") end
      local out = sh(env .. "luarocks --lua-version=5.4 lint " .. H.q(REPO .. "/rockspec/burrow-scm-1.rockspec") .. " 2>&1; echo rc=$?")
      assert.matches("rc=0%s*$", out)
      assert.matches('license = "MIT"', H.read(REPO, "rockspec/burrow-scm-1.rockspec"), 1, true)
      assert.matches("^MIT License\n", H.read(REPO, "LICENSE"))
    end)

    it("ws:submit from the rock: examples/luv_grep.lua greps on the worker while luv runs", function()
      if not rocks then return pending("SKIP: luarocks not installed (apt-get install luarocks)") end
      local ws = tmp .. "/luvws"
      H.write(ws, "a.txt", "TODO one\nnothing\n")
      H.write(ws, "b/c.txt", "TODO two\n")
      local out = sh(lua_env .. "cd / && lua5.4 " .. H.q(REPO .. "/examples/luv_grep.lua") .. " " .. H.q(ws) .. " TODO")
      assert.matches("grep done in [%d.]+ s: 2 matching lines in 2 files", out)
    end)

    it("runs examples/agent.lua: OpenAI and Anthropic tool lists, a scripted tool-call loop", function()
      if not rocks then return pending("SKIP: luarocks not installed (apt-get install luarocks)") end
      sh("cp " .. H.q(REPO .. "/examples/agent.lua") .. " " .. H.q(tmp .. "/agent.lua"))
      local ws = tmp .. "/agentws"
      local out = sh(lua_env .. "cd / && lua5.4 " .. H.q(tmp .. "/agent.lua") .. " " .. H.q(ws))
      local tools = set(native_tools())
      for _, api in ipairs { "openai", "anthropic" } do
        assert.matches("[" .. api .. "] " .. #native_tools() .. " tools offered", out, 1, true)
        assert.matches("[" .. api .. "] finished after 6 turns", out, 1, true)
        local plan = H.read(ws, api .. "/notes/plan.md")
        assert.equal("# Plan\n- read the code\n- fix the bug" .. (tools.edit_file and " (done)" or "") .. "\n", plan)
      end
      assert.matches("read_file -> error OUTSIDE_ROOT", out, 1, true)
      if tools.grep then assert.matches("grep -> ok: /work/notes/plan.md:3:- fix the bug", out, 1, true) end
    end)
  end)
end)
