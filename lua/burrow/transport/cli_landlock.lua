-- burrow.transport.cli_landlock: `burrow mcp --landlock`, required by
-- burrow.transport.cli_serve only when the flag is given (a start without
-- it does not load this: docs/benchmarks.md, Start-up). Called as
-- landlock(ws, o, opts) after the workspace opened, before the first
-- message is read.

local files = require "burrow.base.files"
local core = require "burrow.core"

-- Directory part of a path ("." for a bare name).
local function dirname(path)
  return path:match("^(.*)/[^/]*$") or "."
end

-- --landlock: the process keeps its roots (by mode); reads the files of
-- burrow's own Lua directories, the config file and the tool and policy
-- files it names (each file itself: SIGHUP reloads read them again), and the
-- operator's tool_path and policy_path directories; creates, writes and
-- renames files in the audit log's directory (rotation makes file.1).
-- Nothing else: no listing, no sibling of the config.
return function(ws, o, opts)
  local registry, policy = require "burrow.workspace.registry", require "burrow.policy"
  -- the binary's built-in Lua files are in its memory: no path to allow
  local builtin = core.builtin_dir ~= "" and core.builtin_dir .. "/"
  local function on_disk(file) return not (builtin and file:sub(1, #builtin) == builtin) end
  local reads = {}
  local function add(file) if type(file) == "string" and on_disk(file) then reads[#reads + 1] = file end end
  add(package.searchpath("burrow", package.path) and dirname(package.searchpath("burrow", package.path)))
  add(registry.tools_dir)
  add(policy.dir)
  add(o.config)
  for _, t in ipairs(opts.tools or {}) do
    if type(t) == "string" and files.is_file(t) then add(t) end
  end
  for _, p in ipairs(opts.policies or {}) do
    add(type(p) == "table" and p.path or (type(p) == "string" and files.is_file(p) and p))
  end
  for _, dirs in ipairs { opts.tool_path, opts.policy_path } do
    for _, d in ipairs(type(dirs) == "table" and dirs or { dirs }) do add(d) end
  end
  local logs = {}
  if opts.audit then logs[1] = dirname(type(opts.audit) == "table" and opts.audit.file or opts.audit) end
  -- a policy's counter store (quotas store:): opened again on a reload
  for _, p in ipairs(opts.policies or {}) do
    local store = type(p) == "table" and (p.options or p).store
    if type(store) == "string" then logs[#logs + 1] = dirname(store) end
  end
  local abi, err = ws.roots:landlock(reads, logs)
  if not abi then error({ fail = "--landlock failed: " .. tostring(err) }) end
  if abi == 0 then
    io.stderr:write("burrow: --landlock: this kernel has no Landlock; running without it\n")
  else
    io.stderr:write(("burrow: Landlock ABI %d: the process is restricted to its roots\n"):format(abi))
  end
end
