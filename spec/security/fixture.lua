-- The security suite's fixture (reference/security-cases.md §4), its
-- side-effect check (snapshot/compare of everything outside the root) and the
-- small process helpers the race and crash specs need.
--
-- Every spec module builds its own fixture under a fresh base B
-- (`mktemp -d`), runs against both resolver backends (the runner sets
-- BURROW_RESOLVER) and removes B at the end. Every folder F.mktemp makes
-- ($TMPDIR/burrow-sec.*) is removed by F.rmtree or, for those a case left,
-- by F.cleanup_temps() in the spec's (lazy_)teardown.

local la = require "luassert"
local system = require "system"   -- luasystem, a busted dependency: wall clock and sleep

local F = {}

F.REPO = (function()
  local p = io.popen("pwd")
  local d = p:read("l")
  p:close()
  return d
end)()

-- The backend under test: nil lets burrow.open pick its default.
F.RESOLVER = os.getenv("BURROW_RESOLVER")
F.BACKEND = F.RESOLVER or "openat2"
-- Text for describe(): every spec names the backend it ran against.
function F.tag(title)
  return title .. " [resolver=" .. F.BACKEND .. "]"
end

-- Child lua5.4 processes (crash victim, isolated probes) run from the repo
-- root with the same module paths as this process (so a runner's --cpath,
-- e.g. a sanitizer build, reaches them too); defaults per .busted.
F.LUA_PATH = (package.path:find("lua/?/init.lua", 1, true) and package.path
              or (F.REPO .. "/lua/?.lua;" .. F.REPO .. "/lua/?/init.lua;" .. package.path))
F.LUA_CPATH = (package.cpath:find("/lua/?.so", 1, true) and package.cpath
               or (F.REPO .. "/build/lua/?.so;" .. package.cpath))

---------------------------------------------------------------------------
-- shell and process helpers

function F.q(s)
  return "'" .. tostring(s):gsub("'", "'\\''") .. "'"
end

-- Run a shell command; return its stdout and whether it exited 0.
function F.run(cmd)
  local p = assert(io.popen(cmd, "r"))
  local out = p:read("a")
  local ok, _, status = p:close()
  return out, ok == true, status
end

-- Run a shell command that must succeed (fixture construction).
function F.sh(cmd)
  local out, ok, status = F.run(cmd .. " 2>&1")
  if not ok then
    error("fixture command failed (" .. tostring(status) .. "): " .. cmd .. "\n" .. out, 2)
  end
  return out
end

function F.now() return system.gettime() end
function F.sleep(s) system.sleep(s) end

-- Start a background process in its own process group; returns a handle
-- {pid = ...}. We stay its parent (io.popen), so F.stop can reap it: this
-- machine's init does not reap orphans.
function F.spawn(cmd)
  local h = assert(io.popen("echo $$; exec setsid sh -c " .. F.q(cmd) .. " </dev/null >/dev/null 2>&1", "r"))
  local pid = tonumber(h:read("l"))
  assert(pid, "spawn: no pid for " .. cmd)
  return {pid = pid, h = h}
end

-- The release of FIFOs a broken call would block on: after `secs` (120)
-- a process leaves a mark, then opens each FIFO O_RDWR (that never
-- blocks, and wakes whoever waits on the FIFO). A call that returns while
-- the mark is absent returned before the release, so it did not block:
-- the witness is the order of two events, not a time, and a loaded
-- machine cannot fail it (F.unblocked). A call that did block returns
-- at the release, after the mark, and fails. F.stop ends it.
function F.fifo_release(paths, secs)
  if type(paths) == "string" then paths = {paths} end
  local dir = F.mktemp()
  local opens = {}
  for i, p in ipairs(paths) do opens[i] = "sleep 3600 <>" .. F.q(p) .. " &" end -- each held open
  local p = F.spawn(("sleep %d; : > %s; %s wait"):format(secs or 120, F.q(dir .. "/released"),
    table.concat(opens, " ")))
  p.dir = dir
  function p.released() return F.exists(dir .. "/released") end
  return p
end

-- label returned before the FIFOs' release (F.fifo_release): it did not block.
function F.unblocked(release, label)
  la.is_false(release.released(), label .. ": it blocked on a FIFO until the release")
end

-- Seconds that tell bounded work from unbounded (a followed link loop, a
-- quadratic blow-up): far above any bounded case on a loaded machine.
F.HANG = 30

-- Is the process still running (zombies count as gone)?
function F.alive(pid)
  local stat = F.read_host("/proc/" .. pid .. "/stat")
  if not stat then return false end
  local state = stat:match("^%d+ %b() (%a)")
  return state ~= nil and state ~= "Z" and state ~= "X"
end

-- Stop a process group we started (by its id), wait up to `wait` seconds, reap it.
function F.stop(p, sig, wait)
  if not p or not p.pid then return end
  if p.h then
    F.run("kill -" .. (sig or "TERM") .. " -" .. p.pid .. " 2>/dev/null")
    local deadline = F.now() + (wait or 5)
    while F.alive(p.pid) and F.now() < deadline do F.sleep(0.01) end
    if F.alive(p.pid) then F.run("kill -KILL -" .. p.pid .. " 2>/dev/null") end
    p.h:close()
    p.h = nil
  end
  if p.dir then F.rmtree(p.dir); p.dir = nil end
end

local temps = {} -- F.mktemp's folders not yet removed: F.cleanup_temps()

function F.mktemp()
  local d = F.sh("mktemp -d -t burrow-sec.XXXXXXXX"):gsub("%s+$", "")
  -- canonical spelling, so the "configured vs realpath" cases are explicit
  d = F.sh("realpath " .. F.q(d)):gsub("\n$", "")
  temps[d] = true
  return d
end

function F.rmtree(dir)
  -- only ever our own temp bases
  assert(dir:match("/burrow%-sec%.[%w]+$"), "refusing to remove " .. dir)
  for _ = 1, 3 do               -- a straggling writer may race the first attempt
    local _, ok = F.run("rm -rf " .. F.q(dir) .. " 2>/dev/null")
    if ok then temps[dir] = nil; return end
    F.sleep(0.2)
  end
end

-- Remove every folder F.mktemp made that is still there, and the compiled
-- helpers' (F.helper): a spec's lazy_teardown, so a folder a case made
-- and did not remove does not outlive the spec file. (Not an after_each:
-- the fixture a lazy_setup built lives across the cases.)
function F.cleanup_temps()
  for d in pairs(temps) do F.rmtree(d) end
  F.cleanup_helpers()
end

function F.read_host(path)
  local f = io.open(path, "rb")
  if not f then return nil end
  local s = f:read("a")
  f:close()
  return s
end

function F.write_host(path, content)
  local f = assert(io.open(path, "wb"))
  f:write(content)
  f:close()
end

-- lstat of a host path: nil if absent, else {type=..., size=..., ino=..., nlink=...}
function F.lstat(path)
  local out, ok = F.run("stat -c '%F|%s|%i|%h|%a' " .. F.q(path) .. " 2>/dev/null")
  if not ok then return nil end
  local t, s, i, n, m = out:match("^(.-)|(%d+)|(%d+)|(%d+)|(%d+)")
  return {type = t, size = tonumber(s), ino = tonumber(i), nlink = tonumber(n), mode = m}
end

function F.exists(path) return F.lstat(path) ~= nil end

-- Names in a host directory (sorted), for "no temp file left" checks.
function F.ls(dir)
  local out = F.sh("ls -A1 " .. F.q(dir))
  local t = {}
  for name in out:gmatch("[^\n]+") do t[#t + 1] = name end
  table.sort(t)
  return t
end

-- Compile a C helper from host/test (or use build/NAME when present).
local compiled = {}
function F.helper(name)
  if compiled[name] then return compiled[name] end
  local prebuilt = F.REPO .. "/build/" .. name
  if F.exists(prebuilt) then compiled[name] = prebuilt; return prebuilt end
  local dir = F.sh("mktemp -d -t burrow-sec.XXXXXXXX"):gsub("%s+$", "")
  local bin = dir .. "/" .. name
  F.sh("cc -O2 -Wall -o " .. F.q(bin) .. " " .. F.q(F.REPO .. "/host/test/" .. name .. ".c"))
  compiled[name] = bin
  F._helper_dirs = F._helper_dirs or {}
  F._helper_dirs[#F._helper_dirs + 1] = dir
  return bin
end

---------------------------------------------------------------------------
-- the fixture (§4)

F.SECRET = "TOPSECRET"
F.HARD = "HARD"
F.ROOTFILE = "ROOTFILE\n"
F.SUBFILE = "SUBFILE\n"
F.BCFILE = "BCFILE\n"
F.SIBLINGS = {"ws_evil", "ws2", "ws.bak", "ws-old", 'ws"', "ws'", "ws ", "ws\t"}
F.NAME255 = string.rep("n", 255)

local function mkfile(path, content)
  F.write_host(path, content)
end

local function mksock(path)
  local _, ok = F.run("python3 -c " .. F.q(
    "import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])") ..
    " " .. F.q(path) .. " 2>/dev/null")
  if ok then return true end
  -- no python3: a three-line C helper
  local dir = F.sh("mktemp -d -t burrow-sec.XXXXXXXX"):gsub("%s+$", "")
  F.write_host(dir .. "/mksock.c", [[
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
int main(int c, char **v) { struct sockaddr_un a; memset(&a, 0, sizeof a);
  a.sun_family = AF_UNIX; strncpy(a.sun_path, v[1], sizeof a.sun_path - 1);
  int s = socket(AF_UNIX, SOCK_STREAM, 0); return bind(s, (void *)&a, sizeof a) != 0; }
]])
  F.sh("cc -o " .. F.q(dir .. "/mksock") .. " " .. F.q(dir .. "/mksock.c") ..
       " && " .. F.q(dir .. "/mksock") .. " " .. F.q(path))
  F.rmtree(dir)
  return true
end

-- Build the fixture under a fresh base. Returns fx:
--   fx.B, fx.ws (host path of the root), fx.have.{dev0,...}, fx.host_passwd ...
function F.build()
  local B = F.mktemp()
  local ws = B .. "/ws"
  local fx = {B = B, ws = ws, have = {}}
  local function L(target, name) -- symlink name -> target (name relative to B)
    F.sh("ln -s " .. F.q(target) .. " " .. F.q(B .. "/" .. name))
  end
  local function D(name) F.sh("mkdir -p " .. F.q(B .. "/" .. name)) end

  -- outside the root
  D("outside"); mkfile(B .. "/outside/secret.txt", F.SECRET)
  mkfile(B .. "/outside/hard_target.txt", F.HARD)
  D("ws_secret"); mkfile(B .. "/ws_secret/secret.txt", "WS_SECRET")
  for _, s in ipairs(F.SIBLINGS) do
    D(s); mkfile(B .. "/" .. s .. "/x", "SIBLING")
  end
  D("home"); mkfile(B .. "/home/.bashrc", "BASHRC")
  D("etc_cron_d")                                       -- stands in for /etc/cron.d
  D("rootb"); mkfile(B .. "/rootb/b.txt", "ROOTB")      -- a second root (P0-18)
  L("../ws/file.txt", "rootb/to_ws")
  D("out/mm/a/b/c"); mkfile(B .. "/out/mm/x", "OUTSIDE-X")   -- P0-12
  L(ws, "wslink")                                       -- P0-2 symlinked root path

  -- the root
  D("ws/sub/deeper"); D("ws/a"); D("ws/b/c/d/e/f")
  mkfile(ws .. "/file.txt", F.ROOTFILE)
  mkfile(ws .. "/sub/file.txt", F.SUBFILE)
  mkfile(ws .. "/b/c/file", F.BCFILE)
  L("sub/file.txt", "ws/link_in")
  L("chain2", "ws/chain1"); L("sub/deeper/../file.txt", "ws/chain2")
  L("../file.txt", "ws/sub/up_in")
  L(ws .. "/file.txt", "ws/abs_in")
  L("/etc/passwd", "ws/esc_abs")
  L(B .. "/outside/secret.txt", "ws/esc_file")
  L("../ws_secret/secret.txt", "ws/esc_rel")
  L("../../outside/secret.txt", "ws/sub/esc2")
  L("sub/../../outside/secret.txt", "ws/esc_lex")       -- P0-5 "a link sub/../../outside/secret.txt"
  L("/", "ws/esc_dir"); L("../outside", "ws/esc_updir")
  L("/proc/self/root", "ws/proc_link")
  L("/", "ws/root_link1"); L("/..", "ws/root_link2"); L("/../../../../..", "ws/root_link3")
  L("../../../../../../../../../../target", "ws/escape_link1")
  L("../outside/new.txt", "ws/dangling_out")
  L(B .. "/home/.bashrc.new", "ws/dangling_home")
  L("../outside/newdir", "ws/dangling_dir")
  L(B .. "/home/.bashrc", "ws/goclaw_x")                -- GoClaw #1201, target present
  L(B .. "/etc_cron_d/x", "ws/dc_new")                  -- DesktopCommanderMCP #420
  L("/dev/zero", "ws/devzero")
  L("self", "ws/self"); L("loop2", "ws/loop1"); L("loop1", "ws/loop2")
  for i = 1, 40 do L("hop" .. (i + 1), "ws/hop" .. i) end
  L("file.txt", "ws/hop41")
  L("sub", "ws/link_sub")                               -- in-root directory link
  L("../rootb/b.txt", "ws/to_rootb"); L("../rootb", "ws/to_rootb_dir")
  L(B .. "/rootb/b.txt", "ws/to_rootb_abs")
  -- Go os.Root "symlink chain": link resolves to g/c/target
  D("ws/gochain/a"); D("ws/gochain/g/h"); D("ws/gochain/g/c")
  L("a/b/c/target", "ws/gochain/link"); L("e", "ws/gochain/a/b")
  L("../f", "ws/gochain/a/e"); L("g/h/i", "ws/gochain/f"); L("..", "ws/gochain/g/h/i")
  mkfile(ws .. "/gochain/g/c/target", "GOTARGET\n")
  -- libpathrs loops (relative spelling: burrow refuses absolute links outright)
  D("ws/loop/a"); D("ws/loop/b"); D("ws/loop/c"); D("ws/loop/e")
  L("basic-loop1", "ws/loop/basic-loop1"); L("../loop/basic-loop3", "ws/loop/basic-loop3")
  L("../b/link", "ws/loop/a/link"); L("../c/link", "ws/loop/b/link")
  L("../d/link", "ws/loop/c/link"); L("e", "ws/loop/d"); L("../a/link", "ws/loop/e/link")
  L("a/link", "ws/loop/link")
  F.sh("mkfifo " .. F.q(ws .. "/fifo"))
  mksock(ws .. "/sock")
  F.sh("ln " .. F.q(B .. "/outside/hard_target.txt") .. " " .. F.q(ws .. "/hl"))
  mkfile(ws .. "/" .. F.NAME255, "LONGNAME\n")
  mkfile(ws .. "/caf\xC3\xA9.txt", "NFC\n")             -- NFC spelling only
  -- race material (P0-11, P0-12, P0-13, Go TestRootRaceRenameDir)
  D("ws/d/etc"); mkfile(ws .. "/d/etc/passwd", "INROOT-PASSWD\n"); L("/", "ws/d_link")
  D("ws/m/a/b/c"); mkfile(ws .. "/m/x", "INSIDE-X\n")
  D("ws/racedir"); L("../outside", "ws/racelink")
  D("ws/gorace/base/a/a/a/a"); D("ws/gorace/a")
  mkfile(ws .. "/gorace/base/a/f", "public\n")
  mkfile(ws .. "/gorace/f", "secret\n"); mkfile(ws .. "/gorace/a/f", "secret\n")
  mkfile(ws .. "/gorace/base/f", "secret\n")
  -- [root] mount points; the mounts themselves happen in a private namespace
  D("ws/etcbind"); D("ws/procmnt"); D("ws/tmpmnt")
  local uid = F.sh("id -u"):gsub("%s", "")
  if uid == "0" then
    local _, ok = F.run("mknod " .. F.q(ws .. "/dev0") .. " c 1 5 2>/dev/null")
    fx.have.dev0 = ok
  end

  fx.host_passwd = F.read_host("/etc/passwd") or ""
  fx.host_passwd_line1 = fx.host_passwd:match("^[^\n]+") or "root:x:0:0:"
  -- host paths the escapes below aim at, outside B: must stay as they are
  fx.extra = {"/etc/passwd", "/target", "/etc/cron.d/x", "/etc/burrow-sec-probe.txt"}
  fx.extra_absent = {}
  for _, p in ipairs(fx.extra) do
    if not F.exists(p) then fx.extra_absent[#fx.extra_absent + 1] = p end
  end
  return fx
end

function F.cleanup(fx)
  if not fx then return end
  -- an escape a buggy build made outside B: undo only what we can prove is ours
  for _, p in ipairs(fx.extra_absent or {}) do
    if F.exists(p) and p ~= "/etc/passwd" then F.run("rm -f " .. F.q(p)) end
  end
  F.rmtree(fx.B)
end

---------------------------------------------------------------------------
-- side-effect check: snapshot everything outside the roots

local FIELDS = {"type", "size", "mode", "mtime_ns", "ctime_ns", "ino", "nlink", "uid", "gid", "hash"}
local FMT = "'%P\\0%y\\0%s\\0%m\\0%T@\\0%C@\\0%i\\0%n\\0%U\\0%G\\0%l\\0'"
local FMT_ABS = FMT:gsub("%%P", "%%p")

local SMALL = 64 * 1024 -- a file up to this size is kept whole in a snapshot

local function ns(t) -- "1700000000.123456789x" -> "1700000000123456789"
  local s, frac = t:match("^(%d+)%.?(%d*)")
  return (s or t) .. (frac .. "000000000"):sub(1, 9)
end

local function parse_find(out, snap, prefix)
  local fields = {}
  for f in out:gmatch("([^%z]*)%z") do fields[#fields + 1] = f end
  for i = 1, #fields - 10, 11 do
    local path, y, s, m, mt, ct, ino, nl, u, g, l =
      table.unpack(fields, i, i + 10)
    snap[prefix .. path] = {
      type = y, size = s, mode = m, mtime_ns = ns(mt), ctime_ns = ns(ct),
      ino = ino, nlink = nl, uid = u, gid = g,
      hash = (y == "l") and ("link:" .. l) or nil,
    }
  end
end

-- snapshot(B [, opts]) -> {[relpath] = {type, size, mode, mtime_ns, ...}}
--   opts.exclude: names under B to leave out (default {"ws"}: the root)
--   opts.extra:   absolute host paths to record as well (keys "@/abs/path")
function F.snapshot(B, opts)
  opts = opts or {}
  local exclude = opts.exclude or {"ws"}
  local prune = {}
  for _, e in ipairs(exclude) do prune[#prune + 1] = "-path " .. F.q(B .. "/" .. e) end
  local sel = #prune > 0 and ("\\( " .. table.concat(prune, " -o ") .. " \\) -prune -o ") or ""
  local snap = {}
  local out, ok = F.run("find " .. F.q(B) .. " " .. sel .. "-printf " .. FMT)
  assert(ok, "snapshot: find failed on " .. B)
  parse_find(out, snap, "")
  -- a regular file's content: read here when small (most are: no process
  -- to start, and a snapshot is taken around every cell), hashed by
  -- sha256sum when large or unreadable here
  local big = {}
  for rel, e in pairs(snap) do
    if e.type == "f" then
      local path = rel == "" and B or B .. "/" .. rel
      local size = tonumber(e.size) or math.huge
      local f = size <= SMALL and io.open(path, "rb")
      local content = f and (f:read(SMALL + 1) or "")
      if f then f:close() end
      if content and #content == size then e.hash = "bytes:" .. content
      else big[#big + 1] = F.q(path) end
    end
  end
  for i = 1, #big, 100 do
    local hashes = F.run("sha256sum -z " .. table.concat(big, " ", i, math.min(i + 99, #big)) .. " 2>/dev/null")
    for h, p in hashes:gmatch("(%x+) [ *]([^%z]*)%z") do
      local rel = p:sub(#B + 2)
      if p == B then rel = "" end
      if snap[rel] then snap[rel].hash = h end
    end
  end
  for _, p in ipairs(opts.extra or {}) do
    local o = F.run("find " .. F.q(p) .. " -maxdepth 0 -printf " .. FMT_ABS .. " 2>/dev/null")
    parse_find(o, snap, "@")
    if snap["@" .. p] and snap["@" .. p].type == "f" then
      local h = F.run("sha256sum " .. F.q(p) .. " 2>/dev/null"):match("^(%x+)")
      snap["@" .. p].hash = h
    end
  end
  return snap
end

-- a snapshot's value for a message: a small file's bytes cut short
local function brief(v)
  v = tostring(v)
  if #v > 80 then return ("%q... (%d bytes)"):format(v:sub(1, 60), #v - 6) end
  return v
end

-- compare(before, after) -> list of human-readable differences (empty: none)
function F.compare(before, after)
  local diffs = {}
  local function show(p) return p == "" and "<B>" or ("%q"):format(p) end
  for p, a in pairs(before) do
    local b = after[p]
    if not b then
      diffs[#diffs + 1] = "deleted or renamed: " .. show(p)
    else
      for _, k in ipairs(FIELDS) do
        if a[k] ~= b[k] then
          diffs[#diffs + 1] = ("changed: %s %s %s -> %s"):format(show(p), k, brief(a[k]), brief(b[k]))
        end
      end
    end
  end
  for p, b in pairs(after) do
    if not before[p] then
      diffs[#diffs + 1] = ("created: %s (type %s, size %s)"):format(show(p), b.type, b.size)
    end
  end
  table.sort(diffs)
  return diffs
end

---------------------------------------------------------------------------
-- the burrow API and assertions

F.CAPS = {max_result_bytes = 262144, max_entries = 1000, max_file_size = 52428800}

function F.burrow()
  return require "burrow"
end

-- open(roots [, extra]) with the backend under test; raises on failure.
function F.open(roots, extra)
  local burrow = F.burrow()
  local cfg = {roots = roots, caps = F.CAPS, resolver = F.RESOLVER}
  for k, v in pairs(extra or {}) do cfg[k] = v end
  local ws, err, code = burrow.open(cfg)
  la(ws ~= nil, "burrow.open failed: " .. tostring(err) .. " (" .. tostring(code) .. ")")
  return ws
end

-- A short, readable rendering of a result (no huge contents).
function F.dump(v, depth)
  depth = depth or 0
  if type(v) == "string" then
    if #v > 160 then return ("%q"):format(v:sub(1, 160)) .. "..(" .. #v .. " bytes)" end
    return ("%q"):format(v)
  elseif type(v) ~= "table" then
    return tostring(v)
  elseif depth > 2 then
    return "{...}"
  end
  local parts, n = {}, 0
  for k, x in pairs(v) do
    n = n + 1
    if n > 12 then parts[#parts + 1] = "..."; break end
    parts[#parts + 1] = tostring(k) .. "=" .. F.dump(x, depth + 1)
  end
  return "{" .. table.concat(parts, ", ") .. "}"
end

-- Every string anywhere in a result, concatenated (for leak checks).
function F.strings(v, skip, acc)
  acc = acc or {}
  if type(v) == "string" then
    acc[#acc + 1] = v
  elseif type(v) == "table" then
    for k, x in pairs(v) do
      if not (skip and skip[k]) then F.strings(x, skip, acc) end
    end
  end
  return acc
end

local function set(list)
  if type(list) == "string" then return {[list] = true}, list end
  local s = {}
  for _, c in ipairs(list) do s[c] = true end
  return s, table.concat(list, " or ")
end

-- The call must be refused with one of `codes` (a code or a list).
function F.refused(label, codes, res, msg, code)
  local allowed, txt = set(codes)
  la(res == nil, label .. ": expected R/" .. txt .. ", but the call succeeded: " .. F.dump(res))
  la(allowed[code], label .. ": expected R/" .. txt .. ", got " .. tostring(code) ..
     " (" .. tostring(msg) .. ")")
  la(type(msg) == "string" and msg:sub(1, #code + 1) == code .. ":",
     label .. ": message should read \"" .. tostring(code) .. ": ...\", got " .. F.dump(msg))
  la(not msg:find(F.SECRET, 1, true), label .. ": error message carries outside content")
end

-- The call must succeed; returns the result.
function F.ok(label, res, msg, code)
  la(res ~= nil, label .. ": expected success, got " .. tostring(code) .. " (" .. tostring(msg) .. ")")
  la(type(res) == "table", label .. ": result is not a table: " .. F.dump(res))
  return res
end

-- The call must succeed and read_file content must contain `needle`.
function F.reads(label, needle, res, msg, code)
  F.ok(label, res, msg, code)
  la(type(res.content) == "string" and res.content:find(needle, 1, true),
     label .. ": content should contain " .. ("%q"):format(needle) .. ", got " .. F.dump(res.content))
  return res
end

-- Run fn between two snapshots of B; fail if anything outside changed.
-- opts: as for snapshot (exclude, extra); default extra = fx.extra.
function F.guarded(fx, label, fn, opts)
  opts = opts or {}
  local sopts = {exclude = opts.exclude, extra = opts.extra or fx.extra}
  local before = F.snapshot(fx.B, sopts)
  local ok, err = pcall(fn)
  local after = F.snapshot(fx.B, sopts)
  local diffs = F.compare(before, after)
  if #diffs > 0 then
    local head = label .. ": side effects outside the root:\n    " ..
      table.concat(diffs, "\n    ", 1, math.min(#diffs, 20))
    if not ok then head = head .. "\n  and: " .. tostring(err) end
    la(false, head)
  end
  if not ok then error(err, 0) end
end

-- Wall-clock a call: returns elapsed seconds, then the call's results.
function F.timed(fn, ...)
  local t0 = F.now()
  local r1, r2, r3 = fn(...)
  return F.now() - t0, r1, r2, r3
end

-- Every helper directory we compiled into goes away at exit of the module.
function F.cleanup_helpers()
  for _, d in ipairs(F._helper_dirs or {}) do F.rmtree(d) end
  F._helper_dirs = {}
  compiled = {}
end

---------------------------------------------------------------------------
-- isolated calls: a separate lua5.4 (probe_child.lua), optionally inside a
-- private mount namespace, with a memory and time bound

function F.ser(v)
  local t = type(v)
  if t == "string" then return ("%q"):format(v)
  elseif t == "table" then
    local parts = {}
    for k, x in pairs(v) do parts[#parts + 1] = "[" .. F.ser(k) .. "]=" .. F.ser(x) end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return tostring(v)
end

-- probe(spec [, opts]) -> results (see probe_child.lua) or nil, error text.
--   opts.ns_setup: shell commands run first in `unshare -m` (private mounts)
function F.probe(spec, opts)
  opts = opts or {}
  local dir = F.sh("mktemp -d -t burrow-sec.XXXXXXXX"):gsub("%s+$", "")
  local script = dir .. "/probe.lua"
  spec.resolver = spec.resolver or F.RESOLVER
  spec.caps = spec.caps or F.CAPS
  F.write_host(script, "return " .. F.ser(spec))
  -- the memory bound stands in for "no unbounded read"; AddressSanitizer
  -- reserves terabytes of address space, so under `make sanitize` it bounds
  -- nothing and would only stop the probe from starting
  local asan = (os.getenv("LD_PRELOAD") or ""):find("asan", 1, true)
  local inner = (asan and "" or "ulimit -v 4000000; ") .. "cd " .. F.q(F.REPO) ..
    " && LUA_PATH=" .. F.q(F.LUA_PATH) .. " LUA_CPATH=" .. F.q(F.LUA_CPATH) ..
    " exec timeout -s KILL " .. (opts.timeout or 30) .. " lua5.4 spec/security/probe_child.lua " .. F.q(script)
  local cmd
  if opts.ns_setup then
    cmd = "unshare -m --propagation private sh -c " .. F.q("set -e; " .. opts.ns_setup .. "; " .. inner)
  else
    cmd = "sh -c " .. F.q(inner)
  end
  local out, ok, status = F.run(cmd .. " 2>" .. F.q(dir .. "/err"))
  local errtxt = F.read_host(dir .. "/err") or ""
  F.rmtree(dir)
  if not ok then
    return nil, "probe exited with " .. tostring(status) .. ": " .. errtxt .. out:sub(1, 500)
  end
  local chunk, lerr = load(out, "probe", "t", {})
  if not chunk then return nil, "probe output unreadable: " .. tostring(lerr) .. "\n" .. out:sub(1, 500) end
  return chunk()
end

-- Can this process make a private mount namespace and mount in it?
function F.can_unshare()
  if F._can_unshare == nil then
    local _, ok = F.run("unshare -m --propagation private sh -c 'mount -t tmpfs none /mnt' 2>/dev/null")
    F._can_unshare = ok
  end
  return F._can_unshare
end

return F
