-- What the crash specs share (staged_crash_spec, edit_files_crash_spec):
-- the real `burrow call` run under host/test/faults.c, whose
-- `any:KILL:after=N` makes the process kill itself (SIGKILL) before the
-- Nth call that changes the filesystem under a folder, so a kill lands at
-- a step of the operation, never after a guessed delay; a folder's state
-- as one string to compare before and after; the stage names a crash may
-- leave; and the restart, a new workspace listing folders as the agent
-- sees them.

local F = require "security.fixture"
local json = require("burrow.core").json

local K = {}

K.BIN = os.getenv("BURROW_BIN")
if not K.BIN or K.BIN == "" then K.BIN = F.REPO .. "/build/burrow"
elseif K.BIN:sub(1, 1) ~= "/" then K.BIN = F.REPO .. "/" .. K.BIN end

-- The fault shim: the one built beside the binary, else built into tmp.
function K.shim(tmp)
  local built = K.BIN:match("^(.*)/[^/]*$") .. "/faults.so"
  if F.exists(built) then return built end
  local so = tmp .. "/faults.so"
  F.sh("cc -O2 -Wall -shared -fPIC -o " .. F.q(so) .. " " .. F.q(F.REPO .. "/host/test/faults.c") .. " -ldl")
  return so
end

-- A folder's state as one string (nil when it does not exist): every
-- entry's path, type and mode, a link's target, a file's SHA-256.
function K.state(dir)
  if not F.exists(dir) then return nil end
  local out = F.sh("cd " .. F.q(dir) .. " && find . -mindepth 1 -printf '%P %y %m %l\\n' | LC_ALL=C sort")
  local sums = F.sh("cd " .. F.q(dir) .. " && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum")
  return out .. sums
end

-- The staging names left on disk under root, one a line ("" when none).
function K.stage_names(root)
  return F.sh("find " .. F.q(root) .. " -name '.burrow-stage*' -printf '%P\\n'")
end

-- `burrow call TOOL ARGS ROOTS` under the shim, killed before the kill-th
-- change under dir (kill nil: never, the steps counted into log). Its
-- exit status: 137 when killed.
function K.call(so, dir, kill, tool, args, roots, log)
  local env = ("BURROW_FAULT=any:KILL:after=%d BURROW_FAULT_DIR=%s LD_PRELOAD=%s"):format(
    kill or 1000000000, F.q(dir), F.q(so))
  if log then env = env .. " BURROW_FAULT_LOG=" .. F.q(log) end
  local cmd = ("%s %s call %s %s %s >/dev/null 2>&1; echo $?"):format(env, F.q(K.BIN), tool,
    F.q(json.encode(args)), roots)
  return tonumber((F.sh(cmd):match("(%d+)%s*$")))
end

-- The steps a counting run (K.call with kill nil) saw.
function K.steps(log)
  return tonumber(F.read_host(log):match("seen any (%d+)"))
end

-- The restart: a new workspace on root listing dirs as the agent sees
-- them ("dir/name" each, hidden names included).
function K.restart(root, dirs)
  local seen = {}
  for _, dir in ipairs(dirs) do
    local out = F.sh(("%s call list_dir %s --root %s"):format(F.q(K.BIN),
      F.q(json.encode({path = dir, include_hidden = true})), F.q(root)))
    for name in out:gmatch('"name":"([^"]*)"') do seen[#seen + 1] = dir .. "/" .. name end
  end
  return seen
end

return K
