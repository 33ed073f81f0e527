-- burrow.transport.cli: the burrow command line. main(args) returns the exit status:
-- 0 ok, 1 tool error, 2 usage.

local burrow = require "burrow"
local files = require "burrow.base.files"
local core = require "burrow.core"
local json = core.json

local USAGE = [==[
usage:
  burrow mcp   [--config FILE] [--root DIR[:MOUNT][:ro]]... [--cap KEY=VALUE]... [--pack NAME] [--landlock]
               [--strict-start] [--http HOST:PORT]
  burrow call  TOOL [JSON-ARGS | -] [--config FILE] [--root ...] [--cap ...] [--pack NAME]
  burrow tools [NAME] [--format mcp|openai|anthropic] [--config FILE] [--root ...] [--pack NAME]
                                  a table of the tools, or NAME's description and
                                  arguments; --format: their (its) schemas as JSON
  burrow check [--config FILE] [--root ...] [--cap ...] [--sample OP:PATH]...
                                  what would be served; each policy's answers to
                                  sample requests (OP: read, write, delete, list)
  burrow token hash [TOKEN | -]   the sha256 a config's http.tokens stores
  burrow token new                a fresh random token and its sha256
  burrow version

  --config FILE            YAML configuration (docs/config.md); --root replaces
                           its roots, --cap overrides its caps
  --root DIR[:MOUNT][:ro]  serve DIR (default: the current directory); agents
                           address it as MOUNT (default: DIR's absolute path)
  --cap KEY=VALUE          e.g. --cap max_result_bytes=64MiB (keys: max_result_bytes,
                           max_entries, max_matches, max_file_size, max_line_chars,
                           max_request_bytes, max_search_ms, max_search_bytes, max_tree_ms,
                           untrusted_boundary=true|false)
  --pack NAME              serve a compatibility pack's tools instead of the native
                           set (docs/packs.md: native, mcp_filesystem, ...)
  --landlock               (mcp) confine the process to its roots with Landlock
  --http HOST:PORT         (mcp) serve MCP Streamable HTTP at http://HOST:PORT/mcp
                           instead of stdio (docs/config.md, http section)
  --strict-start           (mcp) exit when the configuration does not load, instead
                           of serving every tool call that error
  BURROW_RESOLVER=walk     use the fd-walk resolver instead of openat2
]==]

-- A usage error: one line, and where the options are (exit 2). Without a
-- message (-h, --help, help): the usage on stdout (exit 0).
local function usage(msg)
  if not msg then
    io.stdout:write(USAGE)
    return 0
  end
  io.stderr:write("burrow: ", msg, " (burrow --help lists the commands and options)\n")
  return 2
end

-- The requests burrow check puts to each policy: one per operation in
-- each root, as a tool would send it (and --sample OP:PATH's).
local SAMPLES = {
  read = { tool = "read_file", rel = "README.md", type = "file", exists = true },
  write = { tool = "write_file", rel = "burrow-check.txt", exists = false, size = 10 },
  delete = { tool = "remove", rel = "burrow-check.txt", type = "file", exists = true },
  list = { tool = "list_dir", rel = ".", type = "dir", exists = true },
}
local SAMPLE_ORDER = { "read", "write", "delete", "list" }

-- Options common to the commands; positional arguments in opts.args.
local function parse(args)
  local o = { roots = {}, caps = {}, args = {} }
  local i = 1
  while i <= #args do
    local a = args[i]
    local function value()
      i = i + 1
      if args[i] == nil then error({ usage = a .. " needs a value" }) end
      return args[i]
    end
    if a == "--root" then
      local spec = value()
      local r, err = burrow.parse_root(spec)
      if not r then error({ usage = err }) end
      r.where = "--root " .. spec -- a root that does not open is reported as given
      o.roots[#o.roots + 1] = r
    elseif a == "--cap" then
      local k, v = value():match("^([%w_]+)=(.+)$")
      if not k then error({ usage = "--cap needs KEY=VALUE" }) end
      o.caps[k] = tonumber(v) and math.tointeger(tonumber(v)) or v
    elseif a == "--format" then
      o.format = value()
    elseif a == "--pack" then
      o.pack = value()
      local registry = require "burrow.workspace.registry"
      if o.pack ~= "native" and not registry.pack_file(o.pack) then
        error({ usage = ("unknown pack %q (available: %s)"):format(o.pack, table.concat(registry.packs(), ", ")) })
      end
    elseif a == "--config" then
      o.config = value()
    elseif a == "--landlock" then
      o.landlock = true
    elseif a == "--http" then
      o.http = value()
    elseif a == "--strict-start" then
      o.strict_start = true
    elseif a == "--sample" then
      local spec = value()
      local op, path = spec:match("^(%a+):(.+)$")
      if not (op and SAMPLES[op]) then
        error({ usage = ("--sample %s: use OP:PATH, OP one of %s"):format(spec, table.concat(SAMPLE_ORDER, ", ")) })
      end
      o.samples = o.samples or {}
      o.samples[#o.samples + 1] = { op = op, path = path }
    elseif a == "-h" or a == "--help" then
      error({ usage = false })
    elseif a:sub(1, 2) == "--" then
      error({ usage = "unknown option " .. a })
    else
      o.args[#o.args + 1] = a
    end
    i = i + 1
  end
  if #o.roots == 0 then o.roots = nil end
  return o
end

-- The options for burrow.open: the config file's, then the command line's.
local options = require "burrow.transport.options"

-- An error of the config file's workspace, named after the file unless
-- it already names a place in it (a root: file:line:col).
local function in_file(file, err)
  return err:sub(1, #file + 1) == file .. ":" and err or file .. ": " .. err
end

local function open(o)
  local opts = options(o)
  if not opts.state_config then opts.state = o.state end
  local ws, err = burrow.open(opts)
  -- the file's fault, or the command line's (its roots replace the file's)
  if not ws then error((o.config and not o.roots) and { fail = in_file(o.config, err) } or { usage = err }) end
  return ws
end

-- main.c starts the collector stopped: what loads and opens before a
-- call or a server leaves little garbage. call restarts it once the
-- workspace is open, mcp over HTTP before it listens, over stdio once the
-- first message is handled (Server:run); every other command at once.
local function collect() collectgarbage("restart") end

local commands = {}

function commands.version()
  local resolver, err = burrow.set_resolver()
  if not resolver then error({ usage = err }) end
  print(("burrow %s (resolver: %s)"):format(core.version, resolver))
  return 0
end

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
local function landlock(ws, o, opts)
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

-- The config's http section, when there is a config.
-- The config's http section, or nil. A file with an http: section is a
-- network configuration: any error in it stops the start (exit 2), with or
-- without --http, and it needs http.listen unless --http gives the
-- address; a stdio server is never started from it by mistake.
local function http_config(o)
  if not o.config then return nil end
  local config = require "burrow.config"
  local opts, err = config.load(o.config)
  if not opts then
    if config.is_network(o.config) then
      error({ fail = err .. "\n(a configuration with an http: section must load: nothing was started)" })
    end
    return nil -- over stdio the client sees why on each call (or --strict-start exits)
  end
  local hc = opts.http
  if hc and not (hc.listen or o.http) then
    error({ fail = ("%s: http.listen is required to serve it (or pass --http HOST:PORT): a file with an http: section is a network configuration"):format(o.config) })
  end
  return hc
end

-- Words as a POSIX shell reads them back: any with a character outside
-- [%w@%%+=:,./_-] single-quoted.
local function shell_words(words)
  local out = {}
  for i, w in ipairs(words) do
    w = tostring(w)
    out[i] = (w ~= "" and not w:find("[^%w@%%+=:,./_-]")) and w or "'" .. w:gsub("'", "'\\''") .. "'"
  end
  return table.concat(out, " ")
end

function commands.mcp(o)
  if #o.args > 0 then error({ usage = "mcp takes no arguments" }) end
  local hc = http_config(o)
  if o.http or (hc and hc.listen) then
    if o.landlock then error({ usage = "--landlock is for stdio; confine the HTTP server with its service unit (docs/deploy.md)" }) end
    collect()
    local ok, err = require("burrow.transport.http").serve(o, hc, o.http)
    if not ok then error({ fail = err }) end
    return 0
  end
  -- the process's state store: budgets outlive a reload (SIGHUP)
  o.state = core.state()
  local ok, ws = pcall(open, o)
  local unavailable = false
  if not ok then
    -- fail closed but visible: the client connects and each call says why
    -- (not with --landlock: a reload must not serve roots unconfined)
    local e = ws
    if o.strict_start or o.landlock or type(e) ~= "table" or not (e.fail or e.usage) then error(e, 0) end
    local msg = e.fail or e.usage
    -- what fixes it: a flag needs a restart; the file, a SIGHUP
    local how = e.fail and "fix the file and send SIGHUP"
      or "fix the command line and restart (a SIGHUP reloads files, not flags)"
    io.stderr:write("burrow: ", msg, "\nburrow: the configuration did not load: serving no root; every tool call fails with this error (", how,
      ", or use --strict-start to exit instead)\n")
    ws = require("burrow.transport.unavailable").new(msg)
    unavailable = true
  elseif o.landlock then
    landlock(ws, o, options(o))
  end
  local mounts = {}
  for _, r in ipairs(ws:mounts()) do
    mounts[#mounts + 1] = r.mount .. (r.readonly and " (ro)" or " (rw)")
  end
  io.stderr:write(("burrow %s: MCP over stdio, serving %s with %d tools (resolver %s); Ctrl-D or close stdin to stop\n")
    :format(core.version, unavailable and "nothing (the configuration did not load)" or table.concat(mounts, ", "),
      ws.tool_count and ws:tool_count() or #ws:tools(), ws.resolver or burrow.set_resolver()),
    -- stdout is the MCP stream: what a person who started this by hand
    -- does next, ending with the command line that starts this server
    -- again under the MCP Inspector (-- keeps its options from the
    -- Inspector's own)
    "burrow: stdout is the MCP stream, for a client that starts this command itself (README.md, \"Use it from an MCP client\");",
    " to try the tools by hand, in the MCP Inspector:\n",
    "  npx @modelcontextprotocol/inspector -- ", shell_words(o.command_line or { "burrow", "mcp" }), "\n")
  if ws.state_down then
    io.stderr:write("burrow: warning: ", ws.state_down, "; serving all the same: calls that need the store ",
      "fail with STORE_UNAVAILABLE until it answers, the others are served\n")
  end
  -- SIGHUP: the same command line's workspace, built again from the files
  local function reopen()
    local ok, opts = pcall(options, o)
    if not ok then return nil, type(opts) == "table" and (opts.fail or opts.usage) or tostring(opts) end
    if not opts.state_config then opts.state = o.state end
    return burrow.open(opts)
  end
  local server = require("burrow.mcp").new(ws, { reopen = reopen })
  server:run(ws.caps.max_request_bytes, true) -- it restarts the collector (collect)
  server.ws:close()
  return 0
end

function commands.call(o)
  local tool, raw = o.args[1], o.args[2]
  if not tool or #o.args > 2 then error({ usage = "call needs TOOL and optional JSON arguments" }) end
  if raw == "-" then raw = io.read("a") end
  local args = {}
  if raw then
    local err
    args, err = json.decode(raw)
    if type(args) ~= "table" then error({ usage = "arguments must be a JSON object: " .. tostring(err or raw) }) end
  end
  local ws = open(o)
  collect()
  if not ws:tool(tool) then error({ usage = ("unknown tool %q (see burrow tools)"):format(tool) }) end
  -- the result is only encoded, never rendered: this edge prints it as
  -- JSON, a held set (grep's matches, glob's entries) as the core writes
  -- it (burrow.toolkit.printer)
  local res, msg, code, details = ws:run(tool, args)
  ws:close()
  if not res then
    io.stdout:write(json.encode { error = { code = code, message = msg, details = details } }, "\n")
    io.stderr:write("burrow: ", msg, "\n")
    return 1
  end
  local out
  out, msg, code = require("burrow.toolkit.printer").wire(res)
  if not out then -- a held page that could not be written (its file changed meanwhile)
    io.stdout:write(json.encode { error = { code = code, message = msg } }, "\n")
    io.stderr:write("burrow: ", msg, "\n")
    return 1
  end
  io.stdout:flush()
  json.write(out) -- big fragments from their own buffers
  return 0
end

-- tools, check and token: burrow.transport.cli_report, loaded only for them
local shared = { open = open, options = options, in_file = in_file, SAMPLES = SAMPLES, SAMPLE_ORDER = SAMPLE_ORDER }
function commands.tools(o) return require("burrow.transport.cli_report").tools(o, shared) end
function commands.check(o) return require("burrow.transport.cli_report").check(o, shared) end
function commands.token(o) return require("burrow.transport.cli_report").token(o) end

local function main(args)
  local cmd = table.remove(args, 1)
  if cmd ~= "call" and cmd ~= "mcp" then collect() end
  if cmd == nil or cmd == "help" or cmd == "-h" or cmd == "--help" then
    return usage(cmd == nil and "a command is required: mcp, call, tools, check, token or version" or nil)
  end
  if cmd == "--version" then cmd = "version" end
  local f = commands[cmd]
  if not f then return usage(("unknown command %q"):format(cmd)) end
  -- the command line as given (args[0]: the binary as run, main.c)
  local line = { args[0] or "burrow", cmd, table.unpack(args) }
  local ok, res = pcall(function()
    local o = parse(args)
    if o.samples and cmd ~= "check" then error({ usage = "--sample is check's" }) end
    o.command_line = line
    return f(o)
  end)
  if ok then return res end
  if type(res) == "table" and res.usage ~= nil then return usage(res.usage or nil) end
  if type(res) == "table" and res.fail then
    io.stderr:write("burrow: ", res.fail, "\n")
    return 2
  end
  error(res, 0)
end

return setmetatable({}, { __call = function(_, args) return main(args) end })
