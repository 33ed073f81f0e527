-- burrow inside the hosts its other-Lua side is for, loaded from a Lua 5.1
-- rocks tree the way their package managers install it (test/anylua/run.sh
-- builds the tree and runs this under lua5.4 with BURROW_ANY_TREE51 set):
--   * Neovim 0.7 (LuaJIT): test/anylua/nvim_plugin.lua greps a 20k-file
--     tree on Neovim's loop (vim.loop, burrow.adapters.luv) while a 10 ms
--     timer keeps firing, then a blocking call (no tick can land), then an
--     edit read back;
--   * nginx with its Lua module (one worker, master_process off): while one
--     request's grep runs through burrow (burrow.adapters.wait, ngx.sleep
--     between polls), a second request to the same worker is answered;
--     then the grep is cancelled from a third.
--   * docs/embedding.md's Neovim and nginx snippets, taken from the doc as
--     printed and run with only its placeholders filled in (the tree, the
--     folder, the port): Neovim with no LUA_PATH (the snippet's own paths
--     find the tree, as ~/.luarocks), nginx with the snippet's http block.
-- Each waits for a state (a file written, an answer given), never a time.

local TREE = assert(os.getenv("BURROW_ANY_TREE51"), "BURROW_ANY_TREE51: a Lua 5.1 rocks tree with burrow")
local REPO = assert(os.getenv("BURROW_REPO"), "BURROW_REPO: the checkout (for test/anylua/)")

local function q(s) return "'" .. tostring(s):gsub("'", "'\\''") .. "'" end
local function sh(cmd)
  local p = assert(io.popen(cmd .. " 2>&1"))
  local out = p:read("*a")
  local ok = p:close()
  return out, ok
end
local function have(cmd) return select(2, sh("command -v " .. cmd)) end
local function write(path, text)
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end
local function read(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end
-- until cond() holds or `secs` seconds pass (a bound for a broken build,
-- not a wait: each try is a state check)
local function until_(cond, secs)
  local deadline = os.time() + secs
  repeat
    local v = cond()
    if v then return v end
    sh("sleep 0.05")
  until os.time() > deadline
  return cond()
end

local tmp
setup(function()
  tmp = sh("mktemp -d /tmp/burrow-hosts.XXXXXX"):gsub("%s+$", "")
end)
teardown(function()
  if tmp and tmp:match("^/tmp/burrow%-hosts%.") then os.execute("rm -rf " .. q(tmp)) end
end)

describe("Neovim (" .. (sh("nvim --version 2>/dev/null | head -1"):gsub("%s+$", "")) .. ")", function()
  it("a plugin greps 20k files on vim.loop while a 10 ms timer fires, then edits and reads back", function()
    if not have("nvim") then return pending("SKIP: nvim not installed (make deps)") end
    local dir = tmp .. "/nvim"
    -- 100 folders of 200 files, every fourth holding the needle
    assert(sh(("mkdir -p %s && cd %s && for d in $(seq 0 99); do mkdir d$d; done"):format(q(dir), q(dir))))
    for d = 0, 99 do
      for f = 0, 199 do
        write(("%s/d%d/f%d.txt"):format(dir, d, f), (f % 4 == 0 and "needle " or "hay ") .. f .. "\nline two\n")
      end
    end
    local out = tmp .. "/nvim.out"
    local log, ok = sh(("cd %s && BURROW_ANY_TREE51=%s BURROW_NVIM_DIR=%s BURROW_NVIM_OUT=%s timeout 120 nvim --headless -u NONE -i NONE -c %s")
      :format(q(tmp), q(TREE), q(dir), q(out), q("luafile " .. REPO .. "/test/anylua/nvim_plugin.lua")))
    local text = read(out)
    assert.truthy(text, "nvim wrote no report: " .. log)
    local r = {}
    for k, v in text:gmatch("([%w_]+)=([^\n]*)") do r[k] = v end
    assert.is_nil(r.error, r.error)
    assert.is_true(ok, log)
    assert.equal("burrow.ffi", r.backend)
    assert.equal("vim.json", r.json)
    assert.equal("5000", r.async_files)
    assert.equal("5000", r.async_matches)
    assert.equal("true", r.async_total_exact)
    assert.is_true(tonumber(r.ticks_during_async) >= 1, "the timer never fired during the grep: " .. text)
    assert.equal("true", r.sync_ok)
    assert.equal("0", r.ticks_during_sync, "a tick landed inside a blocking call: " .. text)
    assert.equal("1\tthread 0|2\tline two|", r.read_back)
    print(("\n  nvim: async grep %s ms with %s ticks; blocking grep %s ms"):format(r.async_ms, r.ticks_during_async, r.sync_ms))
  end)
end)

describe("nginx with its Lua module", function()
  local prefix, sock, pid_file

  local function get(path)
    return (sh(("curl -s --max-time 60 --unix-socket %s http://burrow%s"):format(q(sock), path)))
  end

  lazy_setup(function()
    if not have("nginx") or not io.open("/usr/lib/nginx/modules/ngx_http_lua_module.so") then return end
    prefix = tmp .. "/nginx"
    sock, pid_file = prefix .. "/nginx.sock", prefix .. "/nginx.pid"
    local data = prefix .. "/data"
    assert(sh(("mkdir -p %s/slow %s/logs"):format(q(data), q(prefix))))
    local line = ("a"):rep(200) .. ".\n"
    for i = 1, 3 do write(("%s/slow/s%d.txt"):format(data, i), line:rep(320)) end
    write(data .. "/note.txt", "first draft\n")
    write(prefix .. "/burrow_nginx_test.lua", ([[
local burrow = require "burrow"
local adapters = require "burrow.adapters"
local M = { state = "idle" }
local ws
local function open()
  ws = ws or assert(burrow.open { roots = { { path = %q, mount = "/w" } } })
  return ws
end
function M.grep()
  local res, msg = adapters.wait(open(), "grep", { pattern = "a*a*a*\\d", path = "/w/slow" }, ngx.sleep,
    function(call) M.call, M.state = call, "running" end)
  M.state = "done"
  return res, msg
end
function M.edit()
  local w = open()
  assert(adapters.wait(w, "edit_file", { path = "/w/note.txt", old_text = "first", new_text = "second" }, ngx.sleep))
  return assert(adapters.wait(w, "read_file", { path = "/w/note.txt" }, ngx.sleep)).content
end
return M
]]):format(data))
    write(prefix .. "/nginx.conf", ([[
daemon off;
master_process off;
worker_processes 1;
pid %s;
error_log %s/logs/error.log info;
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
events { worker_connections 64; }
http {
  access_log off;
  client_body_temp_path %s/tmp-body;
  proxy_temp_path %s/tmp-proxy;
  fastcgi_temp_path %s/tmp-fcgi;
  uwsgi_temp_path %s/tmp-uwsgi;
  scgi_temp_path %s/tmp-scgi;
  lua_package_path "%s/?.lua;%s/share/lua/5.1/?.lua;%s/share/lua/5.1/?/init.lua;;";
  lua_package_cpath "%s/lib/lua/5.1/?.so;;";
  server {
    listen unix:%s;
    location /ping { content_by_lua_block { ngx.say("pong") } }
    location /status { content_by_lua_block { ngx.say(require("burrow_nginx_test").state) } }
    location /grep { content_by_lua_block {
      local res, msg = require("burrow_nginx_test").grep()
      ngx.say(res and ("cancelled=" .. tostring(res.cancelled)) or ("error=" .. tostring(msg)))
    } }
    location /cancel { content_by_lua_block {
      local t = require("burrow_nginx_test")
      ngx.say("cancel=" .. tostring(t.call and t.call:cancel()))
    } }
    location /edit { content_by_lua_block { ngx.print(require("burrow_nginx_test").edit()) } }
  }
}
]]):format(pid_file, prefix, prefix, prefix, prefix, prefix, prefix, prefix, TREE, TREE, TREE, sock))
    os.execute(("cd %s && nginx -p %s -c %s -e %s >%s 2>&1 &"):format(q(prefix), q(prefix), q(prefix .. "/nginx.conf"),
      q(prefix .. "/logs/startup.log"), q(prefix .. "/logs/stdout.log")))
    until_(function() return get("/ping") == "pong\n" end, 60)
  end)

  lazy_teardown(function()
    local pid = pid_file and read(pid_file)
    if pid and pid:match("^%d+") then os.execute("kill " .. pid:match("^%d+") .. " 2>/dev/null") end
  end)

  it("answers a second request while the first one's grep runs through burrow", function()
    if not prefix then return pending("SKIP: nginx or its Lua module not installed (make deps)") end
    assert.equal("pong\n", get("/ping"), "nginx did not start: " .. tostring(read(prefix .. "/logs/error.log")))
    local grep_out = prefix .. "/grep.out"
    os.execute(("curl -s --max-time 120 --unix-socket %s http://burrow/grep >%s 2>&1 &"):format(q(sock), q(grep_out)))
    assert.truthy(until_(function() return get("/status") == "running\n" end, 60),
      "the grep never started: " .. tostring(read(prefix .. "/logs/error.log")))
    -- the same (only) worker answers while the grep is outstanding
    assert.equal("pong\n", get("/ping"))
    assert.equal("running\n", get("/status"), "the grep ended before the second request was answered")
    assert.equal("", read(grep_out) or "")
    assert.equal("cancel=true\n", get("/cancel"))
    assert.truthy(until_(function() return (read(grep_out) or "") ~= "" end, 60))
    assert.equal("cancelled=true\n", read(grep_out))
    assert.equal("done\n", get("/status"))
  end)

  it("edits a file and reads it back from a request", function()
    if not prefix then return pending("SKIP: nginx or its Lua module not installed (make deps)") end
    assert.equal("1\tsecond draft\n", get("/edit"))
  end)
end)

-- A fenced block of docs/embedding.md by its language and a line of it.
local function doc_block(lang, needle)
  local text = assert(read(REPO .. "/docs/embedding.md"))
  for l, body in text:gmatch("\n```(%w*)\n(.-)\n```") do
    if l == lang and body:find(needle, 1, true) then return body .. "\n" end
  end
  error(("docs/embedding.md has no %s block with %q"):format(lang, needle))
end

-- text with each placeholder replaced (plain text), each one required to
-- be there: a snippet that changes shape fails here, not silently
local function fill(text, subs)
  for _, s in ipairs(subs) do
    local pat = s[1]:gsub("%p", "%%%0")
    local n
    text, n = text:gsub(pat, (s[2]:gsub("%%", "%%%%")))
    assert(n > 0, "the snippet no longer holds " .. s[1])
  end
  return text
end

describe("docs/embedding.md's snippets, as printed", function()
  local proj
  setup(function()
    proj = tmp .. "/doc-project"
    assert(sh(("mkdir -p %s/sub"):format(q(proj))))
    write(proj .. "/a.c", "int a;\n// TODO one\n")
    write(proj .. "/sub/b.txt", "TODO two\n")
    write(proj .. "/c.txt", "nothing\n")
  end)

  it("Neovim: the plugin finds burrow in ~/.luarocks and fills the quickfix list with files it can open", function()
    if not have("nvim") then return pending("SKIP: nvim not installed (make deps)") end
    local home = tmp .. "/doc-home"
    assert(sh(("mkdir -p %s && ln -s %s %s/.luarocks"):format(q(home), q(TREE), q(home))))
    write(tmp .. "/doc-nvim.lua", doc_block("lua", "vim.fn.setqflist"))
    -- the snippet's vim.notify says when the grep's answer has arrived
    write(tmp .. "/doc-nvim-run.lua", [[
local said
vim.notify = function(m) said = m end
local ok, err = pcall(dofile, os.getenv("BURROW_SNIPPET"))
if ok then vim.wait(60000, function() return said ~= nil end, 10) end
local f = assert(io.open(os.getenv("BURROW_NVIM_OUT"), "w"))
f:write(ok and ("notify=" .. tostring(said)) or ("error=" .. tostring(err)), "\n")
for _, it in ipairs(vim.fn.getqflist()) do
  f:write(vim.fn.fnamemodify(vim.fn.bufname(it.bufnr), ":p"), "\t", it.lnum, "\t", it.text, "\n")
end
f:close()
vim.cmd("qa!")
]])
    local out = tmp .. "/doc-nvim.out"
    local log = sh(("cd %s && env -u LUA_PATH -u LUA_CPATH -u BURROW_LIB HOME=%s BURROW_SNIPPET=%s BURROW_NVIM_OUT=%s "
      .. "timeout 120 nvim --headless -u NONE -i NONE -c %s"):format(q(proj), q(home), q(tmp .. "/doc-nvim.lua"), q(out),
      q("luafile " .. tmp .. "/doc-nvim-run.lua")))
    local text = read(out)
    assert.truthy(text, "nvim wrote no report: " .. log)
    local lines = {}
    for line in text:gmatch("[^\n]+") do lines[#lines + 1] = line end
    table.sort(lines)
    assert.same({ proj .. "/a.c\t2\t// TODO one", proj .. "/sub/b.txt\t1\tTODO two", "notify=2 matches" }, lines)
  end)

  it("nginx: the http block's myapp and /grep answer with the count of files that match", function()
    if not have("nginx") or not io.open("/usr/lib/nginx/modules/ngx_http_lua_module.so") then
      return pending("SKIP: nginx or its Lua module not installed (make deps)")
    end
    local prefix = tmp .. "/doc-nginx"
    local sock, pid_file = prefix .. "/nginx.sock", prefix .. "/nginx.pid"
    assert(sh(("mkdir -p %s/logs"):format(q(prefix))))
    local http = fill(doc_block("nginx", "myapp"), {
      { "/home/me/.luarocks", TREE }, { "/srv/project", proj }, { "listen 8080;", "listen unix:" .. sock .. ";" },
      -- the paths a test's nginx writes to: its own
      { "http {\n", ("http {\n  access_log off;\n  client_body_temp_path %s/b;\n  proxy_temp_path %s/p;\n"
        .. "  fastcgi_temp_path %s/f;\n  uwsgi_temp_path %s/u;\n  scgi_temp_path %s/s;\n")
        :format(prefix, prefix, prefix, prefix, prefix) },
    })
    write(prefix .. "/nginx.conf", ([[
daemon off;
master_process off;
worker_processes 1;
pid %s;
error_log %s/logs/error.log info;
load_module /usr/lib/nginx/modules/ndk_http_module.so;
load_module /usr/lib/nginx/modules/ngx_http_lua_module.so;
events { worker_connections 64; }
]]):format(pid_file, prefix) .. http)
    os.execute(("cd %s && nginx -p %s -c %s -e %s >%s 2>&1 &"):format(q(prefix), q(prefix), q(prefix .. "/nginx.conf"),
      q(prefix .. "/logs/startup.log"), q(prefix .. "/logs/stdout.log")))
    local function grep(q_)
      return (sh(("curl -s --max-time 60 --unix-socket %s 'http://burrow/grep?q=%s'"):format(q(sock), q_)))
    end
    local answer = until_(function() local a = grep("TODO") return a ~= "" and a end, 60)
    local pid = read(pid_file)
    if pid and pid:match("^%d+") then os.execute("kill " .. pid:match("^%d+") .. " 2>/dev/null") end
    assert.equal("2\n", answer, "nginx: " .. tostring(read(prefix .. "/logs/error.log")))
  end)
end)
