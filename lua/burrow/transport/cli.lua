-- burrow.transport.cli: the burrow command line. main(args) returns the exit status:
-- 0 ok, 1 tool error, 2 usage; and true after a call that closed its workspace
-- (main.c then skips lua_close).

-- `burrow`, the workspace's modules, with its first use: `burrow mcp`
-- answers initialize before it opens its workspace (cli_serve.lua)
local function burrow() return require "burrow" end
local core = require "burrow.core"
local rootspec = require "burrow.base.rootspec"
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
      local r, err = rootspec.parse(spec)
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

local function open(o, opts)
  opts = opts or options(o) -- opts: options(o), made already
  if not opts.state_config then opts.state = o.state end
  local ws, err = burrow().open(opts)
  -- the file's fault, or the command line's (its roots replace the file's)
  if not ws then error((o.config and not o.roots) and { fail = in_file(o.config, err) } or { usage = err }) end
  return ws
end

-- main.c starts the collector stopped: what loads and opens before a
-- call or a server leaves little garbage. call restarts it once the
-- workspace is open, mcp over HTTP before it listens, over stdio once the
-- first message is handled (Server:run); every other command at once.
-- Restarted as if a cycle had just ended: the first one begins when the
-- heap has doubled (the default pause, 200%), not at once over the whole
-- start-up heap, which a one-shot call rarely needs (step with a negative
-- size sets the collector's debt: Lua 5.4's lua_gc, LUA_GCSTEP;
-- docs/benchmarks.md, Start-up).
local function collect()
  collectgarbage("restart")
  collectgarbage("step", -math.floor(collectgarbage("count")))
end

local commands = {}

-- what the commands loaded apart (burrow.transport.cli_serve, cli_report) use of this file
local shared = { open = open, options = options, in_file = in_file, collect = collect, SAMPLES = SAMPLES,
  SAMPLE_ORDER = SAMPLE_ORDER }

function commands.version()
  local resolver, err = burrow().set_resolver()
  if not resolver then error({ usage = err }) end
  print(("burrow %s (resolver: %s)"):format(core.version, resolver))
  return 0
end

-- mcp: burrow.transport.cli_serve, loaded only for it (a `burrow call`
-- does not load the server's start: docs/benchmarks.md, Start-up)
function commands.mcp(o) return require("burrow.transport.cli_serve").mcp(o, shared) end

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
  -- the second result, true: the workspace is closed and the reply out, so
  -- the process may end without closing the Lua state (main.c)
  if not res then
    io.stdout:write(json.encode { error = { code = code, message = msg, details = details } }, "\n")
    io.stderr:write("burrow: ", msg, "\n")
    return 1, true
  end
  -- only a result with a metatable can hold a set (printer.holding):
  -- any other is printed as it is, without loading the printer
  local out = res
  if getmetatable(res) ~= nil then out, msg, code = require("burrow.toolkit.printer").wire(res) end
  if not out then -- a held page that could not be written (its file changed meanwhile)
    io.stdout:write(json.encode { error = { code = code, message = msg } }, "\n")
    io.stderr:write("burrow: ", msg, "\n")
    return 1, true
  end
  io.stdout:flush()
  json.write(out) -- big fragments from their own buffers
  return 0, true
end

-- tools, check and token: burrow.transport.cli_report, loaded only for them
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
  local ok, res, ended = pcall(function()
    local o = parse(args)
    if o.samples and cmd ~= "check" then error({ usage = "--sample is check's" }) end
    o.command_line = line
    return f(o)
  end)
  if ok then return res, ended end
  if type(res) == "table" and res.usage ~= nil then return usage(res.usage or nil) end
  if type(res) == "table" and res.fail then
    io.stderr:write("burrow: ", res.fail, "\n")
    return 2
  end
  error(res, 0)
end

-- collect: for spec/cli_gc_spec.lua
return setmetatable({ collect = collect }, { __call = function(_, args) return main(args) end })
