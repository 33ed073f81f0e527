-- The README's fenced blocks, taken from README.md as printed and run, so
-- the README cannot drift from what works. Each block is found by its
-- language and a line of it; a block that disappears or changes shape fails
-- here until this spec follows it.

local H = require "helpers"
local json = H.json

local CLEAN = "env -u BURROW_LUA_DIR -u LD_PRELOAD -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u LUA_PATH -u LUA_CPATH -u LUA_PATH_5_4 -u LUA_CPATH_5_4 "

-- Every fenced block of README.md: {lang =, text =}.
local function blocks()
  local out, cur = {}, nil
  for line in (H.read(H.REPO, "README.md") .. "\n"):gmatch("([^\n]*)\n") do
    local fence = line:match("^```(%w*)%s*$")
    if fence and not cur then
      cur = { lang = fence, lines = {} }
    elseif line:match("^```%s*$") and cur then
      cur.text = table.concat(cur.lines, "\n") .. "\n"
      out[#out + 1] = cur
      cur = nil
    elseif cur then
      cur.lines[#cur.lines + 1] = line
    end
  end
  return out
end

local function block(lang, needle)
  for _, b in ipairs(blocks()) do
    if b.lang == lang and b.text:find(needle, 1, true) then return b.text end
  end
  error(("README.md has no %s block with %q"):format(lang, needle), 2)
end

describe(H.tag("README snippets"), function()
  local dir

  before_each(function() dir = H.tmpdir() end)
  after_each(H.cleanup)

  it("every fenced block is one this spec runs", function()
    local known = { sh = 2, text = 1, json = 1, yaml = 1, lua = 1, c = 1 }
    local seen = {}
    for _, b in ipairs(blocks()) do seen[b.lang] = (seen[b.lang] or 0) + 1 end
    assert.same(known, seen)
  end)

  it("the configuration example passes burrow check, audit included", function()
    H.write(dir, "burrow.yaml", block("yaml", "policies:"))
    H.write(dir, "policies/no-vendor.lua", H.read(H.REPO, "examples/policies/no-vendor.lua"))
    local out, err, code = H.burrow_cmd { "check", "--config", dir .. "/burrow.yaml" }
    assert.equal(0, code, err)
    assert.matches("policies: protected, default, secrets, no-vendor, quotas {\"max_bytes_written\":\"100MB\"}, audit\n", out, 1, true)
    assert.matches("/usr/share/doc (ro)", out, 1, true)
  end)

  it("the MCP client entry starts a server (its placeholder paths filled in)", function()
    local cfg = json.decode(block("json", "mcpServers")).mcpServers.burrow
    assert.equal("/path/to/burrow/build/burrow", cfg.command)
    local args = {}
    for i, a in ipairs(cfg.args) do args[i] = a == "/home/me/project" and dir or a end
    local init = json.encode { jsonrpc = "2.0", id = 1, method = "initialize",
      params = { protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "t", version = "1" } } }
    local out, err, code = H.burrow_cmd(args, init .. "\n")
    assert.equal(0, code, err)
    assert.equal("burrow", json.decode(out:match("[^\n]+")).result.serverInfo.name)
  end)

  it("the make targets of the first sh block exist", function()
    local text = block("sh", "make run")
    for target in text:gmatch("make (%w+)") do
      local _, ok = H.run("cd " .. H.q(H.REPO) .. " && make -n -q " .. target .. " >/dev/null 2>&1; test $? -ne 2")
      assert.is_true(ok, "make " .. target)
    end
  end)

  -- make's dry run on a build dir that does not exist yet: every command
  -- a fresh clone's `make run` would run, none of them run
  local function dry_run(target, build)
    return H.sh(CLEAN .. "make -n --no-print-directory -C " .. H.q(H.REPO) .. " B=" .. H.q(build) .. " " .. target)
  end

  it("make run builds the command only, then starts it by its absolute path", function()
    local build = dir .. "/b"
    local out = dry_run("run", build)
    assert.matches("-o " .. build .. "/burrow ", out, 1, true)
    assert.not_matches("test_", out, 1, true) -- no C test compiled
    assert.not_matches("faults", out, 1, true) -- nor the fault shim
    assert.not_matches("%.so[ \n]", out) -- nor the Lua modules: the command carries its own
    local last = out:match("([^\n]+)\n$")
    assert.equal(build .. "/burrow mcp --root \"" .. H.REPO .. "\"", last)
    -- `make` still builds everything
    local all = dry_run("all", build)
    assert.matches("-o " .. build .. "/test_core ", all, 1, true)
    assert.matches("-o " .. build .. "/faults.so ", all, 1, true)
    assert.matches("-o " .. build .. "/lua/burrow/core.so ", all, 1, true)
  end)

  it("burrow mcp's banner (stderr) ends with the MCP Inspector command that starts the same server", function()
    local root = dir .. "/my project"
    H.sh("mkdir -p " .. H.q(root))
    local out, err, code = H.burrow_cmd({ "mcp", "--root", root }, "")
    assert.equal(0, code, err)
    assert.equal("", out) -- stdout is the MCP stream only
    assert.matches("README.md, \"Use it from an MCP client\"", err, 1, true)
    local last = err:match("([^\n]+)\n$")
    assert.equal("  npx @modelcontextprotocol/inspector -- " .. H.BURROW .. " mcp --root '" .. root .. "'", last)
  end)

  it("make run's messages, as printed, are burrow mcp's (its paths, version and resolver filled in)", function()
    local shown = block("text", "npx @modelcontextprotocol/inspector")
    local root = dir .. "/burrow"
    H.sh("mkdir -p " .. H.q(root))
    local _, err, code = H.burrow_cmd({ "mcp", "--root", root }, "")
    assert.equal(0, code, err)
    local version, resolver = err:match("^burrow (%S+): .*%(resolver (%w+)%)")
    local function plain(s) return (s:gsub("%%", "%%%%")) end
    shown = shown:gsub("/home/me/burrow/build/burrow", plain(H.BURROW)):gsub("/home/me/burrow", plain(root))
      :gsub("burrow 0%.1%.0", "burrow " .. plain(version)):gsub("resolver openat2", "resolver " .. resolver)
    assert.equal(shown, err)
  end)

  it("the C snippet compiles against burrow.h and reads a file", function()
    local snippet = block("c", "burrow_open(")
    H.write(dir, "level1.txt", "dragons\n")
    H.write(dir, "app.c", table.concat({
      "#include <stdio.h>", "#include <string.h>", "#include \"burrow.h\"",
      "int main(void) {", "  char *err = NULL, *json = NULL;",
      snippet,
      '  printf("%d %s\\n", rc, json ? json : err);',
      "  burrow_free(json); burrow_close(h);", "  return rc;", "}" }, "\n"))
    H.sh(("cc -std=c11 -Wall -Werror -I%s/host/include -o %s/app %s/app.c %s/build/libburrow.a $(pkg-config --libs libcrypto jansson libpcre2-8 yaml-0.1 lua5.4) -pthread -lm -ldl")
      :format(H.q(H.REPO), H.q(dir), H.q(dir), H.q(H.REPO)))
    local out = H.sh("cd " .. H.q(dir) .. " && BURROW_LUA_DIR=" .. H.q(H.REPO .. "/lua") .. " ./app")
    assert.matches('^0 {.*"content":"1\\tdragons\\n"', out)
  end)

  describe("install, then the Lua example, as printed", function()
    local home, ok_rocks
    lazy_setup(function()
      if not H.run("command -v luarocks >/dev/null")then return end
      home = H.tmpdir()
      -- no LuaRocks config: the rock needs no other rock (LPeg is linked
      -- into burrow.core), so the printed commands work offline as they are
      local src = home .. "/src"
      H.sh(("mkdir -p %s && cd %s && cp -r Makefile host lua rockspec README.md %s"):format(H.q(src), H.q(H.REPO), H.q(src)))
      ok_rocks = true
    end)

    it("luarocks --local make, the luarocks path step, then the Lua block", function()
      if not ok_rocks then return pending("SKIP: luarocks not installed") end
      local lines = {}
      for line in block("sh", "luarocks"):gmatch("[^\n]+") do
        if not line:match("^sudo make install") then lines[#lines + 1] = line end -- installs system-wide: install_spec covers it under DESTDIR
      end
      assert.equal(2, #lines)
      H.write(home, "example.lua", block("lua", "require \"burrow\""))
      local script = table.concat({
        "set -e", "cd " .. H.q(home .. "/src"),
        lines[1], -- as printed (its comment included)
        lines[2],
        "cd " .. H.q(home .. "/src"),
        "lua5.4 " .. H.q(home .. "/example.lua") }, "\n")
      local out = H.sh(CLEAN .. "-u LUAROCKS_CONFIG HOME=" .. H.q(home) .. " bash -c " .. H.q(script))
      assert.matches("\n1\t# burrow\n2\t", out, 1, true)
      assert.truthy(H.exists(home, ".luarocks/lib/lua/5.4/burrow/core.so"))
    end)
  end)
end)
