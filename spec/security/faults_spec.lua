-- Faults: every write tool run as the real `burrow call` (undo_edit: `burrow
-- mcp`) under host/test/faults.c, an LD_PRELOAD shim that fails write,
-- pwrite, fsync, fdatasync, renameat, renameat2, linkat and read with
-- ENOSPC, EDQUOT or EIO, or interrupts them once (EINTR) or makes them
-- short once. Each call a tool makes is failed in turn (a first run counts
-- them). The tool either completes with exactly the content asked for (an
-- EINTR or a short write must be retried, never reported), or fails with
-- EIO and leaves the directory as it was: every file byte for byte, no
-- temp file. The process never crashes. One exception, which the message
-- states: a move that replaced a file, then failed to fsync the
-- directories, cannot bring the replaced file back ("moved, but ...");
-- nor can a remove whose directory fsync failed ("removed, but ..."); a
-- folder removal that fails part-way says what it removed, and what is
-- left is what was there. mkdir and remove also have their mkdirat and
-- unlinkat calls failed.

local F = require "security.fixture"
local json = require("burrow.core").json

local CALLS = {"write", "pwrite", "fsync", "fdatasync", "renameat", "renameat2", "linkat", "read"}
local DIR_CALLS = {"fsync", "mkdirat", "unlinkat"} -- what mkdir and remove call
local ERRORS = {"ENOSPC", "EDQUOT", "EIO"}
local ONCE = {write = {"EINTR", "short"}, pwrite = {"EINTR", "short"}, read = {"EINTR", "short"}}
-- what an EIO says about them (a directory's fsync says that it failed)
local DETAIL = {ENOSPC = "no space left", EDQUOT = "quota"}

local OLD = "line 1\nold line 2\nline 3\n"
local SRC = string.rep("source bytes\n", 300)
local NEW = string.rep("new content, long enough for more than one short write\n", 200)

-- name, files before, tool, arguments, files after a success[, a failure
-- whose message says this has completed nonetheless]
local CASES = {
  {"write_file replaces", {["t.txt"] = OLD}, "write_file", {path = "t.txt", content = NEW}, {["t.txt"] = NEW}},
  {"write_file creates", {}, "write_file", {path = "n.txt", content = NEW}, {["n.txt"] = NEW}},
  {"write_file create-only", {}, "write_file", {path = "n.txt", content = NEW, expected_hash = "absent"}, {["n.txt"] = NEW}},
  -- linkat refused as without CAP_DAC_READ_SEARCH: named temp files
  {"write_file replaces, named temp", {["t.txt"] = OLD}, "write_file", {path = "t.txt", content = NEW}, {["t.txt"] = NEW},
    extra = "linkat:EPERM"},
  {"write_file create-only, named temp", {}, "write_file", {path = "n.txt", content = NEW, expected_hash = "absent"},
    {["n.txt"] = NEW}, extra = "linkat:EPERM"},
  {"edit_file", {["t.txt"] = OLD}, "edit_file", {path = "t.txt", old_text = "old line 2", new_text = "edited"},
    {["t.txt"] = "line 1\nedited\nline 3\n"}},
  {"insert_lines", {["t.txt"] = OLD}, "insert_lines", {path = "t.txt", line = 2, content = "inserted\n"},
    {["t.txt"] = "line 1\ninserted\nold line 2\nline 3\n"}},
  {"append_file to a file", {["t.txt"] = OLD}, "append_file", {path = "t.txt", content = NEW}, {["t.txt"] = OLD .. NEW}},
  {"append_file creates", {}, "append_file", {path = "n.txt", content = NEW}, {["n.txt"] = NEW}},
  {"copy to a new name", {["s.txt"] = SRC}, "copy", {source = "s.txt", destination = "n.txt"},
    {["s.txt"] = SRC, ["n.txt"] = SRC}},
  {"copy over a file", {["s.txt"] = SRC, ["t.txt"] = OLD}, "copy", {source = "s.txt", destination = "t.txt", overwrite = true},
    {["s.txt"] = SRC, ["t.txt"] = SRC}},
  {"move to a new name", {["s.txt"] = SRC}, "move", {source = "s.txt", destination = "n.txt"}, {["n.txt"] = SRC}},
  {"move over a file", {["s.txt"] = SRC, ["t.txt"] = OLD}, "move", {source = "s.txt", destination = "t.txt", overwrite = true},
    {["t.txt"] = SRC}, "moved, but the directory fsync failed"},
  -- all the files or none: a failure before the commit point changes
  -- nothing; one after it (a rename, a folder's fsync) leaves the intent
  -- record, and the next start (below: a list_dir) finishes the change
  {"edit_files (edit, replace, create, delete)", {["a.txt"] = OLD, ["b.txt"] = OLD, ["d.txt"] = SRC, ["s/"] = "",
    ["s/c.txt"] = OLD}, "edit_files",
    {files = {{path = "a.txt", old_text = "old line 2", new_text = "edited"}, {path = "b.txt", content = NEW},
      {path = "n.txt", content = NEW}, {path = "d.txt", delete = true}, {path = "s/c.txt", old_text = "line 3", new_text = "three"}}},
    {["a.txt"] = "line 1\nedited\nline 3\n", ["b.txt"] = NEW, ["n.txt"] = NEW, ["s/"] = "", ["s/c.txt"] = "line 1\nold line 2\nthree\n"},
    "will be finished at the next open"},
  {"mkdir", {["t.txt"] = OLD}, "mkdir", {path = "d", parents = false}, {["t.txt"] = OLD, ["d/"] = ""}, calls = DIR_CALLS},
  {"mkdir with parents", {["t.txt"] = OLD, ["a/"] = ""}, "mkdir", {path = "a/b/c/d"},
    {["t.txt"] = OLD, ["a/"] = "", ["a/b/"] = "", ["a/b/c/"] = "", ["a/b/c/d/"] = ""}, calls = DIR_CALLS},
  {"remove a file", {["t.txt"] = OLD, ["s.txt"] = SRC}, "remove", {path = "t.txt"}, {["s.txt"] = SRC},
    "removed, but the directory fsync failed", calls = DIR_CALLS},
  {"remove a file, compare-and-set", {["t.txt"] = OLD}, "remove",
    {path = "t.txt", expected_hash = require("burrow.core").sha256(OLD)}, {},
    "removed, but the directory fsync failed", calls = DIR_CALLS},
  {"remove a folder", {["d/"] = "", ["d/a.txt"] = OLD, ["d/e/"] = "", ["d/e/b.txt"] = SRC, ["k.txt"] = OLD}, "remove",
    {path = "d", recursive = true}, {["k.txt"] = OLD}, "removed, but the directory fsync failed", calls = DIR_CALLS,
    partial = "it stopped after removing"},
}

local BIN = os.getenv("BURROW_BIN")
if not BIN or BIN == "" then BIN = F.REPO .. "/build/burrow"
elseif BIN:sub(1, 1) ~= "/" then BIN = F.REPO .. "/" .. BIN end

-- The shim: beside the binary (make builds it), else compiled here.
local function shim(tmp)
  local built = BIN:match("^(.*)/[^/]*$") .. "/faults.so"
  if F.exists(built) then return built end
  local so = tmp .. "/faults.so"
  F.sh("cc -O2 -Wall -shared -fPIC -o " .. F.q(so) .. " " .. F.q(F.REPO .. "/host/test/faults.c") .. " -ldl")
  return so
end

-- Everything in dir: path -> bytes, and "sub/" -> "" for a directory.
-- One find lists the tree (its runs are a few thousand: a process per
-- entry added up to minutes); the bytes are read here.
local function state(dir)
  local s = {}
  local out = F.sh("find " .. F.q(dir) .. " -mindepth 1 -printf '%P\\0%y\\0'")
  for name, kind in out:gmatch("([^%z]*)%z([^%z]*)%z") do
    if kind == "d" then s[name .. "/"] = ""
    else s[name] = F.read_host(dir .. "/" .. name) or "<unreadable>" end
  end
  return s
end

-- Is every entry of a in b, the same? (what a part-way removal leaves)
local function within(a, b)
  for k, v in pairs(a) do if b[k] ~= v then return false end end
  return true
end

local function same(a, b)
  for k, v in pairs(a) do if b[k] ~= v then return false end end
  for k in pairs(b) do if a[k] == nil then return false end end
  return true
end

local function staged_names(s)
  for k in pairs(s) do if k:find("^%.burrow%-stage%.") then return true end end
  return false
end

local function names(s)
  local t = {}
  for k, v in pairs(s) do t[#t + 1] = ("%s (%d bytes)"):format(k, #v) end
  table.sort(t)
  return table.concat(t, ", ")
end

describe(F.tag("security: faults (ENOSPC, EDQUOT, EIO, EINTR, short writes)"), function()
  local tmp, so, dir, log

  lazy_setup(function()
    tmp = F.mktemp()
    so = shim(tmp)
    dir = tmp .. "/root"
    log = tmp .. "/faults.log"
  end)

  lazy_teardown(function()
    if tmp then F.rmtree(tmp) end
  end)

  local function reset(files)
    local cmd, names = { "rm -rf " .. F.q(dir) .. " && mkdir " .. F.q(dir) }, {}
    for name in pairs(files) do
      if name:sub(-1) == "/" then cmd[#cmd + 1] = "mkdir -p " .. F.q(dir .. "/" .. name)
      else names[#names + 1] = name end
    end
    F.sh(table.concat(cmd, " && ")) -- the folders, in one shell
    for _, name in ipairs(names) do F.write_host(dir .. "/" .. name, files[name]) end
  end

  -- Run `burrow ARGS...` under the shim with these rules; stdout, exit
  -- status, stderr, and the shim's log lines.
  local function run(args, rules, stdin)
    os.remove(log)
    local env = ("LD_PRELOAD=%s BURROW_FAULT=%s BURROW_FAULT_DIR=%s BURROW_FAULT_LOG=%s ASAN_OPTIONS=%s")
      :format(F.q(so), F.q(rules), F.q(dir), F.q(log), F.q((os.getenv("ASAN_OPTIONS") or "detect_leaks=0") .. ":verify_asan_link_order=0"))
    local parts = {}
    for i, a in ipairs(args) do parts[i] = F.q(a) end
    local cmd = ("cd %s && timeout 60 env %s %s %s --root %s < %s 2> %s"):format(F.q(tmp), env, F.q(BIN),
      table.concat(parts, " "), F.q(dir), stdin and F.q(stdin) or "/dev/null", F.q(tmp .. "/stderr"))
    local out, _, status = F.run(cmd)
    local lines = {}
    for l in (F.read_host(log) or ""):gmatch("[^\n]+") do lines[#lines + 1] = l end
    return out, status, F.read_host(tmp .. "/stderr") or "", lines
  end

  -- How many calls of each kind the tool makes into dir (no fault fires
  -- but extra's, which comes first: the calls it takes are not counted).
  local function count(args, stdin, extra, calls)
    local rules = {}
    for _, c in ipairs(calls or CALLS) do rules[#rules + 1] = c .. ":EIO:after=1000000000" end
    if extra then table.insert(rules, 1, extra) end
    local _, status, err, lines = run(args, table.concat(rules, ","), stdin)
    assert(status == 0, "the run without faults failed: " .. err)
    local n, skip = {}, extra and 1 or 0
    for _, l in ipairs(lines) do
      local call, k = l:match("^seen (%S+) (%d+)$")
      if call and skip > 0 then skip = skip - 1
      elseif call then n[call] = tonumber(k) end
    end
    return n
  end

  -- Every fault at every position among the calls the run makes (from
  -- t.base on: calls before it belong to an earlier request). t.files: the
  -- directory to start from; t.before, t.after: what it must hold after a
  -- failure, after a success (or a failure whose message has t.done);
  -- t.check(out): true, or false, code, message.
  local function matrix(label, t)
    reset(t.files)
    local n = count(t.args, t.stdin, t.extra, t.calls)
    local total, failed = 0, {}
    for _, call in ipairs(t.calls or CALLS) do
      for k = (t.base and t.base[call] or 0), (n[call] or 0) - 1 do
        local faults = {}
        for _, e in ipairs(ERRORS) do faults[#faults + 1] = e end
        for _, e in ipairs(ONCE[call] or {}) do faults[#faults + 1] = e end
        for _, e in ipairs(faults) do
          local rule = ("%s:%s:after=%d"):format(call, e, k)
          reset(t.files)
          local out, status, err, lines = run(t.args, (t.extra and t.extra .. "," or "") .. rule, t.stdin)
          total = total + 1
          local fired = false
          for _, l in ipairs(lines) do fired = fired or l == call .. ":" .. e end
          local now = state(dir)
          if staged_names(now) then
            -- what a staged operation left for recovery (its intent record, the
            -- journal, a stage): invisible to agents, settled by the next start
            local _, st = run({"call", "list_dir", '{"path":"."}'}, "write:EIO:after=1000000000")
            now = state(dir)
            if st ~= 0 or staged_names(now) then
              failed[#failed + 1] = ("%s, %s: the next start left %s"):format(label, rule, names(now))
            end
          end
          local ok, code, msg = t.check(out)
          local problem
          if status ~= 0 and status ~= 1 then
            problem = ("exit status %s: %s"):format(tostring(status), err)
          elseif err:find("internal error", 1, true) or err:find("traceback", 1, true) then
            problem = "an internal error: " .. err
          elseif not fired then
            problem = "the fault never fired"
          elseif ok then
            if not same(now, t.after) then problem = "completed, but the directory holds " .. names(now) end
          elseif e == "EINTR" or e == "short" then
            problem = ("not retried: %s"):format(tostring(msg))
          elseif code ~= "EIO" then
            problem = ("failed with %s, not EIO: %s"):format(tostring(code), tostring(msg))
          elseif DETAIL[e] and not (msg:find(DETAIL[e], 1, true) or msg:find("directory fsync failed", 1, true)) then
            problem = ("the message does not say %q: %s"):format(DETAIL[e], msg)
          elseif t.done and msg:find(t.done, 1, true) then
            if not same(now, t.after) then problem = ("%s, but the directory holds %s"):format(msg, names(now)) end
          elseif t.partial and msg:find(t.partial, 1, true) then
            if not within(now, t.before) then problem = ("%s, but the directory holds %s"):format(msg, names(now)) end
          elseif not same(now, t.before) then
            problem = ("failed (%s), but the directory now holds %s"):format(msg, names(now))
          end
          if problem then failed[#failed + 1] = ("%s, %s: %s"):format(label, rule, problem) end
        end
      end
    end
    assert(total > 0, label .. ": no call to fail")
    assert(#failed == 0, ("%d of %d runs went wrong:\n  %s"):format(#failed, total, table.concat(failed, "\n  ")))
  end

  local function from_call(out)
    local r = json.decode(out)
    if type(r) ~= "table" then return false, "NO_JSON", out end
    if r.error then return false, r.error.code, r.error.message end
    return true
  end

  for _, c in ipairs(CASES) do
    local label, before, tool, args, after, done = c[1], c[2], c[3], c[4], c[5], c[6]
    it(label, function()
      matrix(label, {files = before, before = before, after = after, done = done, extra = c.extra,
        calls = c.calls, partial = c.partial,
        args = {"call", tool, json.encode(args)}, check = from_call})
    end)
  end

  -- the MCP session of faults_undo: the change (tool, args) the shim leaves
  -- alone, then, with undo, undo_edit of path; what decides is undo's reply
  local function undo_session(tool, args, path, undo)
    local lines = {
      json.encode {jsonrpc = "2.0", id = 1, method = "initialize", params = {protocolVersion = "2025-06-18",
        capabilities = {}, clientInfo = {name = "faults", version = "1"}}},
      json.encode {jsonrpc = "2.0", method = "notifications/initialized"},
      json.encode {jsonrpc = "2.0", id = 2, method = "tools/call", params = {name = tool, arguments = args}},
    }
    if undo then
      lines[#lines + 1] = json.encode {jsonrpc = "2.0", id = 3, method = "tools/call",
        params = {name = "undo_edit", arguments = {path = path}}}
    end
    local file = tmp .. (undo and "/undo.in" or "/edit.in")
    F.write_host(file, table.concat(lines, "\n") .. "\n")
    return file
  end

  local function from_undo(out)
    local by_id = {}
    for l in out:gmatch("[^\n]+") do
      local m = json.decode(l)
      if type(m) == "table" and m.id then by_id[m.id] = m end
    end
    local edit, undo = by_id[2], by_id[3]
    if not (edit and edit.result and not edit.result.isError) then return false, "EDIT_FAILED", out end
    if not (undo and undo.result) then return false, "NO_REPLY", out end
    if not undo.result.isError then return true end
    return false, undo.result._meta and undo.result._meta["burrow/code"], undo.result.content[1].text
  end

  it("undo_edit of an edit_files change (over MCP): all the files back, or none", function()
    local before = {["a.txt"] = OLD, ["d.txt"] = SRC, ["s/"] = "", ["s/c.txt"] = OLD}
    local args = {files = {{path = "a.txt", old_text = "old line 2", new_text = "edited"}, {path = "n.txt", content = NEW},
      {path = "d.txt", delete = true}, {path = "s/c.txt", content = NEW}}}
    local changed = {["a.txt"] = "line 1\nedited\nline 3\n", ["n.txt"] = NEW, ["s/"] = "", ["s/c.txt"] = NEW}
    reset(before)
    local base = count({"mcp"}, undo_session("edit_files", args, "a.txt", false))
    matrix("undo_edit of edit_files", {files = before, before = changed, after = before, args = {"mcp"},
      stdin = undo_session("edit_files", args, "a.txt", true), check = from_undo, base = base,
      done = "will be finished at the next open"}) -- past the commit point: the next start finishes it
  end)

  it("undo_edit (over MCP, after an edit the shim leaves alone)", function()
    local function session(undo)
      local lines = {
        json.encode {jsonrpc = "2.0", id = 1, method = "initialize", params = {protocolVersion = "2025-06-18",
          capabilities = {}, clientInfo = {name = "faults", version = "1"}}},
        json.encode {jsonrpc = "2.0", method = "notifications/initialized"},
        json.encode {jsonrpc = "2.0", id = 2, method = "tools/call", params = {name = "edit_file",
          arguments = {path = "t.txt", old_text = "old line 2", new_text = "edited"}}},
      }
      if undo then
        lines[#lines + 1] = json.encode {jsonrpc = "2.0", id = 3, method = "tools/call",
          params = {name = "undo_edit", arguments = {path = "t.txt"}}}
      end
      local path = tmp .. (undo and "/undo.in" or "/edit.in")
      F.write_host(path, table.concat(lines, "\n") .. "\n")
      return path
    end
    -- the edit must succeed every time; undo's reply decides
    local function from_mcp(out)
      local by_id = {}
      for l in out:gmatch("[^\n]+") do
        local m = json.decode(l)
        if type(m) == "table" and m.id then by_id[m.id] = m end
      end
      local edit, undo = by_id[2], by_id[3]
      if not (edit and edit.result and not edit.result.isError) then return false, "EDIT_FAILED", out end
      if not (undo and undo.result) then return false, "NO_REPLY", out end
      if not undo.result.isError then return true end
      return false, undo.result._meta and undo.result._meta["burrow/code"], undo.result.content[1].text
    end
    reset({["t.txt"] = OLD})
    local base = count({"mcp"}, session(false)) -- the edit's own calls pass
    matrix("undo_edit", {files = {["t.txt"] = OLD}, before = {["t.txt"] = "line 1\nedited\nline 3\n"},
      after = {["t.txt"] = OLD}, args = {"mcp"}, stdin = session(true), check = from_mcp, base = base})
  end)
end)
