-- Shared helpers for the busted specs: temp workspaces, file fixtures,
-- shell and process helpers, and burrow.open with the backend under test.
--
--   local H = require "helpers"
--   local dir = H.tmpdir()            -- removed by H.cleanup()
--   H.write(dir, "a/b.txt", "hi\n")   -- parents created
--   local ws = H.open(dir)            -- resolver = $BURROW_RESOLVER; closed by H.cleanup()
--   after_each(H.cleanup)
--
-- The test driver runs the suite twice, with BURROW_RESOLVER=openat2 and
-- BURROW_RESOLVER=walk; subprocesses (the CLI, the MCP server) inherit it.

local burrow = require "burrow"
local core = require "burrow.core"

local H = {}

-- The packs-reworded stage (test/run-all.sh) sets BURROW_TEST_REWORD=TEXT:
-- every native message a pack receives then starts with TEXT after its
-- code, so a pack that read the wording instead of codes and details
-- fails. The rewording is the suite's (spec/support/reword.lua); burrow
-- itself has no hook for it and reads no such variable.
do
  local reword = os.getenv("BURROW_TEST_REWORD")
  if reword and reword ~= "" then
    require("support.reword")(function(msg, code)
      local rest = tostring(msg or ""):gsub("^" .. tostring(code) .. ": ", "", 1)
      return ("%s: %s%s"):format(code, reword, rest)
    end)
  end
end

H.json = core.json
H.burrow = burrow
H.core = core

-- The backend under test (nil: burrow.open's default).
H.RESOLVER = os.getenv("BURROW_RESOLVER")
if H.RESOLVER == "" then H.RESOLVER = nil end
H.BACKEND = H.RESOLVER or "openat2"

-- Text for describe(): which backend a spec ran against.
function H.tag(title)
  return title .. " [resolver=" .. H.BACKEND .. "]"
end

---------------------------------------------------------------------------
-- shell

-- Quote a string for /bin/sh.
function H.q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Run a shell command: stdout, ok (exit 0), exit code.
function H.run(cmd)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local ok, how, code = p:close()
  if how == "signal" then code = 128 + code end
  return out, ok == true, code
end

-- Run a shell command that must succeed; its stdout.
function H.sh(cmd)
  local out, ok, code = H.run(cmd .. " 2>&1")
  if not ok then
    error(("command failed (exit %s): %s\n%s"):format(tostring(code), cmd, out), 2)
  end
  return out
end

H.REPO = (function()
  local p = assert(io.popen("pwd"))
  local d = p:read("l")
  p:close()
  return d
end)()

-- The CLI under test: $BURROW_BIN (test/run-all.sh exports it for other
-- build directories), else build/burrow.
H.BURROW = os.getenv("BURROW_BIN")
if not H.BURROW or H.BURROW == "" then H.BURROW = H.REPO .. "/build/burrow"
elseif H.BURROW:sub(1, 1) ~= "/" then H.BURROW = H.REPO .. "/" .. H.BURROW end

---------------------------------------------------------------------------
-- temp workspaces

local made = {}     -- directories H.tmpdir made
local opened = {}   -- workspaces H.open opened

-- Where H.tmpdir makes its directories: $TMPDIR as mktemp(1) reads it,
-- else /tmp. test/run-all.sh points it at a folder of its own and fails
-- a stage that leaves anything there.
H.TMPROOT = (os.getenv("TMPDIR") or ""):gsub("/+$", "")
if H.TMPROOT == "" then H.TMPROOT = "/tmp" end
local TMPNAME = "^" .. H.TMPROOT:gsub("%p", "%%%0") .. "/burrow%-spec%.[%w]+$"

-- A fresh empty directory (mktemp -d), removed by H.cleanup().
function H.tmpdir()
  local p = assert(io.popen("mktemp -d " .. H.q(H.TMPROOT .. "/burrow-spec.XXXXXXXX")))
  local d = p:read("l")
  p:close()
  assert(d and d:match(TMPNAME), "mktemp -d failed in " .. H.TMPROOT)
  made[#made + 1] = d
  return d
end

-- A temp file path (not created) inside a fresh temp directory.
function H.tmpfile(name)
  return H.tmpdir() .. "/" .. (name or "file")
end

-- Close every workspace H.open opened (closing twice is harmless), then
-- remove every directory H.tmpdir made: a spec's after_each.
function H.cleanup()
  for i = #opened, 1, -1 do
    opened[i]:close()
    opened[i] = nil
  end
  for i = #made, 1, -1 do
    local d = made[i]
    if d:match(TMPNAME) then
      os.execute("chmod -R u+rwx " .. H.q(d) .. " 2>/dev/null; rm -rf " .. H.q(d))
    end
    made[i] = nil
  end
end

---------------------------------------------------------------------------
-- files

local function parent(path)
  return path:match("^(.*)/[^/]*$")
end

function H.path(dir, rel)
  if rel == nil or rel == "" or rel == "." then return dir end
  return dir .. "/" .. rel
end

function H.mkdir(dir, rel)
  H.sh("mkdir -p " .. H.q(H.path(dir, rel)))
  return H.path(dir, rel)
end

-- Write bytes to dir/rel (binary-safe), creating parent directories.
function H.write(dir, rel, content)
  local p = H.path(dir, rel)
  local f = io.open(p, "wb") -- mkdir -p only when the folder is missing: a shell per write adds up
  if not f then
    local par = parent(p)
    if par and par ~= "" then os.execute("mkdir -p " .. H.q(par)) end
    f = assert(io.open(p, "wb"))
  end
  assert(f:write(content or ""))
  assert(f:close())
  return p
end

-- Write several files: {["a.txt"] = "x", ["sub/b"] = "y"}.
function H.write_all(dir, files)
  for rel, content in pairs(files or {}) do H.write(dir, rel, content) end
  return dir
end

-- The bytes of dir/rel, or nil if it cannot be opened.
function H.read(dir, rel)
  local f = io.open(H.path(dir, rel), "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

function H.exists(dir, rel)
  local _, ok = H.run("test -e " .. H.q(H.path(dir, rel)) .. " -o -L " .. H.q(H.path(dir, rel)))
  return ok
end

function H.symlink(target, dir, rel)
  H.sh("ln -s " .. H.q(target) .. " " .. H.q(H.path(dir, rel)))
end

function H.hardlink(dir, existing, rel)
  H.sh("ln " .. H.q(H.path(dir, existing)) .. " " .. H.q(H.path(dir, rel)))
end

function H.mkfifo(dir, rel)
  H.sh("mkfifo " .. H.q(H.path(dir, rel)))
end

function H.chmod(dir, rel, mode)
  H.sh("chmod " .. mode .. " " .. H.q(H.path(dir, rel)))
end

-- Octal permission bits as stat(1) prints them ("640", "4755").
function H.mode(dir, rel)
  return (H.sh("stat -c %a " .. H.q(H.path(dir, rel))):gsub("%s+$", ""))
end

function H.file_type(dir, rel)
  return (H.sh("stat -c %F " .. H.q(H.path(dir, rel))):gsub("%s+$", ""))
end

-- "sha256:<hex>" of a file, computed by sha256sum(1).
function H.sha256sum(dir, rel)
  local out = H.sh("sha256sum " .. H.q(H.path(dir, rel)))
  return "sha256:" .. out:match("^(%x+)")
end

-- "sha256:<hex>" of a string, through sha256sum(1).
function H.sha256_of(s)
  local f = H.tmpfile("hashme")
  H.write(parent(f), "hashme", s)
  return H.sha256sum(parent(f), "hashme")
end

-- Names in a directory, hidden ones included, sorted.
function H.ls(dir, rel)
  local out = H.sh("ls -A " .. H.q(H.path(dir, rel)))
  local names = {}
  for n in out:gmatch("[^\n]+") do names[#names + 1] = n end
  table.sort(names)
  return names
end

-- The process umask as a number (new files get 0666 & ~umask).
function H.umask()
  return tonumber(H.sh("umask"):match("(%d+)"), 8)
end

---------------------------------------------------------------------------
-- burrow

-- Open a workspace on the backend under test.
--   H.open(dir)                          one rw root
--   H.open{path = dir, mount = "/w"}     one root table
--   H.open{roots = {...}, caps = {...}}  burrow.open options
-- Raises if it cannot be opened (use burrow.open directly to test failures).
-- H.cleanup() closes it.
function H.open(root_opts, caps)
  local opts
  if type(root_opts) == "string" then
    opts = { roots = { { path = root_opts } } }
  elseif type(root_opts) == "table" and root_opts.path then
    opts = { roots = { root_opts } }
  else
    opts = {}
    for k, v in pairs(root_opts or {}) do opts[k] = v end
  end
  if caps then opts.caps = caps end
  if opts.resolver == nil then opts.resolver = H.RESOLVER end
  local ws, msg = burrow.open(opts)
  if not ws then error("burrow.open failed: " .. tostring(msg), 2) end
  opened[#opened + 1] = ws
  return ws
end

-- want == got, or a failure naming the first differing byte and what is
-- around it (replies too long to print whole)
function H.same_bytes(want, got, label)
  if want == got then return end
  got = got or "(nothing)"
  local i = 1
  while i <= #want and want:byte(i) == got:byte(i) do i = i + 1 end
  error(("%s: differs at byte %d of %d/%d\n want ...%s\n got  ...%s"):format(label, i, #want, #got,
    want:sub(math.max(1, i - 80), i + 80), got:sub(math.max(1, i - 80), i + 80)), 2)
end

-- A policy file and a config naming it (NAME.lua, NAME.lua.yaml), in a
-- temp dir; the policy file's path.
function H.policy_file(name, src)
  local cfg = H.tmpdir()
  local file = H.write(cfg, name .. ".lua", src)
  H.write(cfg, name .. ".lua.yaml", "policies: [" .. file .. "]\n")
  return file
end

-- A temp dir with files, and a workspace on it (both go at H.cleanup()).
function H.workspace(files, caps)
  local dir = H.tmpdir()
  H.write_all(dir, files)
  return H.open(dir, caps), dir
end

-- Split read_file content ("N\tline\n"...) into {n = N, text = line} rows.
function H.numbered(content)
  local rows = {}
  for line in content:gmatch("([^\n]*)\n") do
    local n, text = line:match("^(%d+)\t(.*)$")
    rows[#rows + 1] = { n = tonumber(n), text = text, raw = line }
  end
  return rows
end

---------------------------------------------------------------------------
-- the CLI

-- Run build/burrow with a shell-quoted argument list; stdin from a string.
-- Returns stdout, stderr, exit code.
function H.burrow_cmd(args, stdin)
  local dir = H.tmpdir()
  local parts = { H.q(H.BURROW) }
  for _, a in ipairs(args) do parts[#parts + 1] = H.q(a) end
  local cmd = table.concat(parts, " ")
  if stdin then
    H.write(dir, "stdin", stdin)
    cmd = cmd .. " < " .. H.q(dir .. "/stdin")
  else
    cmd = cmd .. " < /dev/null"
  end
  cmd = "timeout 60 " .. cmd .. " 2> " .. H.q(dir .. "/stderr")
  local out, _, code = H.run(cmd)
  return out, H.read(dir, "stderr") or "", code
end

-- One `burrow mcp --root DIR` process fed initialize and tools/call
-- requests ({name, arguments} each, ids 101...) on stdin: its raw reply
-- lines by id. opts.caps: --cap NAME=VALUE (sorted); opts.flags: more
-- arguments, already shell-quoted.
function H.mcp_calls(dir, calls, opts)
  opts = opts or {}
  local tmp = H.tmpdir()
  local msgs = {
    H.json.encode { jsonrpc = "2.0", id = 1, method = "initialize", params = { protocolVersion = "2025-06-18",
      capabilities = {}, clientInfo = { name = "busted", version = "1" } } },
    H.json.encode { jsonrpc = "2.0", method = "notifications/initialized" },
  }
  for i, c in ipairs(calls) do
    msgs[#msgs + 1] = H.json.encode { jsonrpc = "2.0", id = 100 + i, method = "tools/call",
      params = { name = c[1], arguments = c[2] } }
  end
  H.write(tmp, "in", table.concat(msgs, "\n") .. "\n")
  local caps = {}
  for k, v in pairs(opts.caps or {}) do caps[#caps + 1] = "--cap " .. H.q(k .. "=" .. v) end
  table.sort(caps)
  H.run(("timeout 60 %s mcp --root %s %s %s < %s > %s 2>/dev/null"):format(H.q(H.BURROW), H.q(dir),
    table.concat(caps, " "), opts.flags or "", H.q(tmp .. "/in"), H.q(tmp .. "/out")))
  local by_id = {}
  for line in (H.read(tmp, "out") or ""):gmatch("[^\n]+") do
    local id = tonumber(line:match('^{"id":(%d+),'))
    if id then by_id[id] = line end
  end
  return by_id
end

-- `burrow mcp --config FILE` fed messages (tables, jsonrpc added) on
-- stdin: the decoded replies by id, its stderr and exit status.
function H.mcp_config(config, messages)
  local tmp = H.tmpdir()
  local lines = {}
  for i, m in ipairs(messages) do
    m.jsonrpc = "2.0"
    lines[i] = H.json.encode(m)
  end
  H.write(tmp, "in", table.concat(lines, "\n") .. "\n")
  local _, _, code = H.run(("timeout 60 %s mcp --config %s < %s > %s 2> %s"):format(H.q(H.BURROW), H.q(config),
    H.q(tmp .. "/in"), H.q(tmp .. "/out"), H.q(tmp .. "/err")))
  local by_id = {}
  for line in (H.read(tmp, "out") or ""):gmatch("[^\n]+") do
    local m = H.json.decode(line)
    if type(m) == "table" and m.id ~= nil then by_id[m.id] = m end
  end
  return by_id, H.read(tmp, "err") or "", code
end

-- The _meta of a stateless request (MCP 2026-07-28), no capabilities.
H.META_2026 = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
  ["io.modelcontextprotocol/clientCapabilities"] = setmetatable({}, { __jsontype = "object" }) }

-- The same for a client that can answer forms (elicitation).
H.META_2026_ELICIT = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
  ["io.modelcontextprotocol/clientCapabilities"] = { elicitation = {} } }

-- An MCP Server on ws in this process (no stdio loop: one process, so the
-- states it signs open in it): request(method, params[, meta]) sends one
-- request (its _meta: META_2026_ELICIT unless given) and returns the
-- server's response to it. Returns request and the Server.
function H.inproc_mcp(ws)
  local mcp = require "burrow.mcp"
  local out, n = {}, 0
  local server = mcp.new(ws, { channel = mcp.channel(function(m) out[#out + 1] = m end) })
  return function(method, params, meta)
    n = n + 1
    params._meta = meta or H.META_2026_ELICIT
    server:handle { jsonrpc = "2.0", id = n, method = method, params = params }
    for _, m in ipairs(out) do if m.id == n then return m end end
  end, server
end

-- One case run in both eras of MCP (it: the spec's own busted `it`):
-- fn(req, pre) where req(id, method, params) builds a request of that era
-- and pre is what comes first (an initialize in a session, nothing
-- stateless).
function H.both_eras(it, name, fn)
  it(name .. " (a session)", function()
    fn(function(id, method, params) return { id = id, method = method, params = params } end,
      { { id = "init", method = "initialize", params = { protocolVersion = "2025-11-25", capabilities = {},
        clientInfo = { name = "busted", version = "1" } } } })
  end)
  it(name .. " (stateless 2026-07-28)", function()
    fn(function(id, method, params)
      params = params or {}
      params._meta = H.META_2026
      return { id = id, method = method, params = params }
    end, {})
  end)
end

-- Run Lua source in a child lua5.4 (this process's package paths, from the
-- repository) under `timeout -s KILL guard` and, unless AddressSanitizer is
-- preloaded (it reserves terabytes), a 2 GB address-space bound: for cases
-- that could hang or blow up the host. Returns its output and exit code.
function H.lua_child(src, guard)
  local dir = H.tmpdir()
  local script = H.write(dir, "child.lua", src)
  local asan = (os.getenv("LD_PRELOAD") or ""):find("asan", 1, true)
  local cmd = ("cd %s && %s LUA_PATH=%s LUA_CPATH=%s timeout -s KILL %d lua5.4 %s 2>&1"):format(
    H.q(H.REPO), asan and "" or "ulimit -v 2000000;", H.q(package.path), H.q(package.cpath), guard, H.q(script))
  local out, _, code = H.run(cmd)
  return out, code
end

---------------------------------------------------------------------------
-- a redis-server of the spec's own

-- Wait (at most 30 s) for cond() to hold: a state is waited for, never slept.
function H.eventually(cond)
  local t0 = core.now()
  while not cond() do
    if core.now() - t0 > 30 then return false end
    H.run("sleep 0.01")
  end
  return true
end

-- A redis-server of the spec's own (never the system service): a free
-- port, a temporary directory, no persistence. srv.missing when none is
-- installed (the spec then fails saying what to install: srv.need());
-- start(...) (extra server arguments) and stop() on the same port, each
-- waiting until the port answers or refuses; freeze() and thaw() (SIGSTOP,
-- SIGCONT: a server that holds its data and does not answer); flush().
function H.redis_server()
  local srv = { dir = H.tmpdir() }
  local out, ok = H.run("command -v redis-server")
  srv.missing = not ok or out == ""
  function srv.need()
    assert(not srv.missing, "redis-server is not installed: apt-get install redis-server (or make deps)")
  end
  if srv.missing then return srv end
  srv.port = tonumber(H.sh([[python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])']]))
  srv.url = ("redis://127.0.0.1:%d"):format(srv.port)
  local function pid() return H.sh("cat " .. H.q(srv.dir .. "/redis.pid")):match("%d+") end
  function srv.start(...)
    H.sh(("redis-server --port %d --bind 127.0.0.1 --save '' --appendonly no --dir %s --daemonize yes "
      .. "--pidfile %s/redis.pid --logfile redis.log %s"):format(srv.port, H.q(srv.dir), H.q(srv.dir),
      table.concat({ ... }, " ")))
    assert(H.eventually(function() -- it answers (NOAUTH is an answer)
      local st, msg = core.state_open { kind = "redis", url = srv.url }
      if st then st:close() end
      return st or msg:find("NOAUTH", 1, true)
    end), "redis-server did not come up: " .. srv.dir .. "/redis.log")
  end
  function srv.stop() -- and wait until its port refuses
    H.sh("kill " .. pid())
    assert(H.eventually(function()
      local _, msg = core.state_open { kind = "redis", url = srv.url }
      return msg and msg:find("Connection refused", 1, true)
    end))
  end
  function srv.freeze() H.sh("kill -STOP " .. pid()) end
  function srv.thaw() H.sh("kill -CONT " .. pid()) end
  function srv.flush() H.sh(("redis-cli -p %d flushall"):format(srv.port)) end
  return srv
end

return H
