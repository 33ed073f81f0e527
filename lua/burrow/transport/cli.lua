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

local function sample_req(op, r, rel)
  local s = SAMPLES[op]
  local base = r.mount == "/" and "" or r.mount
  return { tool = s.tool, operation = op, arg = "path", path = rel == "." and r.mount or base .. "/" .. rel,
    root = r.mount, readonly = r.readonly, rel = rel, resolved = rel, exists = s.exists,
    type = s.type, nlink = 1, size = s.size, session = "check" }
end

-- The root of an agent's path (relative: the first root's; absolute: the
-- mount it falls under, component-wise) and the path in it, or nil.
local function in_root(mounts, path)
  if path:sub(1, 1) ~= "/" then return 1, (path:gsub("^%./", "")) end
  local best, rel
  for i, r in ipairs(mounts) do
    local m = r.mount == "/" and "" or r.mount
    if path == r.mount then
      best, rel = i, "."
    elseif path:sub(1, #m + 1) == m .. "/" and not (best and #mounts[best].mount > #r.mount) then
      best, rel = i, path:sub(#m + 2)
    end
  end
  return best, rel
end

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
  server:run(ws.caps.max_request_bytes)
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
  if not ws:tool(tool) then error({ usage = ("unknown tool %q (see burrow tools)"):format(tool) }) end
  -- the result is only encoded, never rendered: a tool may put parts of
  -- it as json.fragment (grep's matches, written by the core)
  local res, msg, code, details = ws:call(tool, args, { wire_json = true })
  ws:close()
  if not res then
    io.stdout:write(json.encode { error = { code = code, message = msg, details = details } }, "\n")
    io.stderr:write("burrow: ", msg, "\n")
    return 1
  end
  io.stdout:flush()
  json.write(res) -- big fragments from their own buffers
  return 0
end

-- A tool's description, its first sentence, cut to fit a line.
local function summary(desc, width)
  local first = tostring(desc or ""):gsub("%s+", " "):match("^(.-[%.!?])%s") or tostring(desc or "")
  if #first > width then first = first:sub(1, width - 3):gsub("[\128-\191]*$", ""):gsub("[\192-\255]$", "") .. "..." end
  return first
end

-- A schema's arguments for people, one a line: name (type, required):
-- description; an object's or a list of objects' own, indented below.
local function argument_lines(out, schema, indent)
  local props = type(schema) == "table" and schema.properties
  if type(props) ~= "table" then return end
  local required, names = {}, {}
  for i, n in ipairs(schema.required or {}) do required[n] = i end
  for n in pairs(props) do names[#names + 1] = n end
  table.sort(names, function(a, b) -- the required ones first, in their order
    if (required[a] ~= nil) ~= (required[b] ~= nil) then return required[a] ~= nil end
    if required[a] then return required[a] < required[b] end
    return a < b
  end)
  for _, n in ipairs(names) do
    local p = props[n]
    local t = type(p.type) == "table" and table.concat(p.type, "|") or tostring(p.type or "any")
    local items = type(p.items) == "table" and p.items
    if items then t = t .. " of " .. tostring(items.type or "any") end
    if type(p.enum) == "table" then
      local e = {}
      for i, v in ipairs(p.enum) do e[i] = json.encode(v) end
      t = t .. ": " .. table.concat(e, "|")
    end
    if p.default ~= nil then t = t .. ", default " .. json.encode(p.default) end
    if required[n] then t = t .. ", required" end
    out[#out + 1] = ("%s%s (%s)%s"):format(indent, n, t,
      p.description and (": " .. tostring(p.description):gsub("%s+", " ")) or "")
    argument_lines(out, p, indent .. "  ")
    if items then argument_lines(out, items, indent .. "  ") end
  end
end

local function tool_name(t) return t.name or (t["function"] and t["function"].name) end

-- burrow tools NAME: that tool's description and arguments (its JSON in
-- the client's shape with --format).
local function one_tool(o, list, name)
  local tool
  for _, t in ipairs(list) do
    if tool_name(t) == name then tool = t end
  end
  if not tool then
    local names = {}
    for i, t in ipairs(list) do names[i] = tool_name(t) end
    error({ usage = ("unknown tool %q (the tools served: %s)"):format(name, table.concat(names, ", ")) })
  end
  if o.format then
    io.stdout:write(json.encode(tool), "\n")
    return 0
  end
  local ro = tool.annotations and tool.annotations.readOnlyHint
  local out = { ("%s (%s)"):format(tool.name, ro and "read-only" or "writes"), "", tostring(tool.description or ""), "", "arguments:" }
  local n = #out
  argument_lines(out, tool.inputSchema, "  ")
  if #out == n then out[#out + 1] = "  none" end
  out[#out + 1] = ""
  out[#out + 1] = ("burrow tools %s --format mcp|openai|anthropic prints its schema as JSON"):format(tool.name)
  io.stdout:write(table.concat(out, "\n"), "\n")
  return 0
end

-- burrow tools: a table for people (name, read-only or not, what it
-- does); --format mcp|openai|anthropic: the JSON a client gets. With a
-- NAME: that tool only.
function commands.tools(o)
  if #o.args > 1 then error({ usage = "tools takes one tool name at most" }) end
  local ws = open(o)
  local list, err = ws:tools { format = o.format or "mcp" }
  ws:close()
  if not list then error({ usage = err }) end
  if o.args[1] then return one_tool(o, list, o.args[1]) end
  if o.format then
    io.stdout:write(json.encode(list), "\n")
    return 0
  end
  local w = 4
  for _, t in ipairs(list) do w = math.max(w, #t.name) end
  local out = { ("%-" .. w .. "s  %-5s  %s"):format("TOOL", "MODE", "WHAT IT DOES") }
  for _, t in ipairs(list) do
    local ro = t.annotations and t.annotations.readOnlyHint
    out[#out + 1] = ("%-" .. w .. "s  %-5s  %s"):format(t.name, ro and "read" or "write", summary(t.description, 100 - w))
  end
  out[#out + 1] = ("%d tools; burrow tools NAME describes one; --format mcp|openai|anthropic prints their schemas as JSON"):format(#list)
  io.stdout:write(table.concat(out, "\n"), "\n")
  return 0
end

-- Sizes as people write them: 262144 -> "256 KiB".
local function size_text(n)
  for _, u in ipairs { { 2 ^ 30, "GiB" }, { 2 ^ 20, "MiB" }, { 2 ^ 10, "KiB" } } do
    if n >= u[1] and n % u[1] == 0 then return ("%d %s"):format(n // u[1], u[2]) end
  end
  if n >= 10 ^ 6 and n % 10 ^ 6 == 0 then return ("%d MB"):format(n // 10 ^ 6) end
  return tostring(n)
end

-- Validate config, tools and policies by opening the workspace; print what
-- would be served.
function commands.check(o)
  if #o.args > 0 then error({ usage = "check takes no arguments" }) end
  local opts = options(o)
  local ws, err = burrow.open(opts)
  if not ws then error({ fail = o.config and in_file(o.config, err) or err }) end
  for _, sp in ipairs(o.samples or {}) do
    if not in_root(ws:mounts(), sp.path) then
      ws:close()
      error({ usage = ("--sample %s:%s: the path is under no root"):format(sp.op, sp.path) })
    end
  end
  local out = {}
  local function say(...) out[#out + 1] = table.concat({ ... }) end
  say("config: ", o.config or "none (defaults)")
  say("roots:")
  local hosts = opts.roots or { { path = "." } }
  for i, r in ipairs(ws:mounts()) do
    local host = hosts[i]
    host = type(host) == "table" and host.path or tostring(host)
    say("  ", r.mount, " (", r.readonly and "ro" or "rw", ")", host ~= r.mount and ("  <- " .. host) or "")
  end
  if ws.roots_from_client then say("roots_from_client: true (MCP: the client's roots within these)") end
  local names = {}
  for i, t in ipairs(ws:tools()) do names[i] = t.name end
  say(("tools (%d): "):format(#names), table.concat(names, ", "))
  local cap_names = {}
  for k in pairs(ws.caps) do cap_names[#cap_names + 1] = k end
  table.sort(cap_names)
  say("caps:")
  for _, k in ipairs(cap_names) do
    local v = ws.caps[k]
    say(("  %-18s %s"):format(k, (k:match("bytes$") or k:match("size$")) and size_text(v) or tostring(v)))
  end
  if ws.policies and ws.policies.names then
    local labels = ws.policies:names()
    for i, label in ipairs(labels) do -- each with its options (the engine's own list: protected comes first)
      local p = ws.policies.list[i]
      if p and type(p.options) == "table" and next(p.options) then
        labels[i] = label .. " " .. json.encode(p.options)
      end
    end
    say("policies: ", #labels > 0 and table.concat(labels, ", ") or "none")
    -- what the protected policy keeps agents from changing, rule by rule
    local prot = {}
    for _, spec in ipairs(ws.policies.rule_specs or {}) do
      local who = ws.policies.rule_of[spec.id]
      if who and who.policy == "protected" then
        local seen, globs = {}, {}
        for _, g in ipairs(spec.patterns) do
          local short = g:gsub("^%*%*/", ""):gsub("/%*%*$", "")
          if not seen[short] then seen[short], globs[#globs + 1] = true, short end
        end
        prot[#prot + 1] = ("  %-14s %s"):format((who.reason or ""):match("^([%w%-]+):") or "?", table.concat(globs, " "))
      end
    end
    if #prot > 0 then
      say("protected (agents may read these, never change them; protect: {except: [NAME]} lets a rule go):")
      for _, line in ipairs(prot) do say(line) end
    end
  end
  if opts.audit then
    say("audit: ", type(opts.audit) == "table" and opts.audit.file or opts.audit)
  end
  say("charsets: ", (ws.charsets or "utf-8,windows-1252"):gsub(",", ", "),
    ws.charsets and "" or " (the default)", " (text that is not UTF-8 and whose guess is not trusted)")
  say("resolver: ", ws.resolver or burrow.set_resolver())
  local problems = {}
  -- each policy's check() on sample requests (a read, a write, a delete, a
  -- listing in each root, and the --sample ones): one that raises or
  -- answers nonsense is named here, not at a client's first call; what
  -- each answered is printed
  local function try_policies(w, label, indent)
    if not (w.policies and w.policies.list) then return end
    local mounts = w:mounts()
    local reqs = {} -- {root index, req, shown}
    for i, r in ipairs(mounts) do
      for _, op in ipairs(SAMPLE_ORDER) do
        local rel = SAMPLES[op].rel
        reqs[#reqs + 1] = { i, sample_req(op, r, rel), op }
      end
    end
    for _, sp in ipairs(o.samples or {}) do
      local i, rel = in_root(mounts, sp.path)
      if i then reqs[#reqs + 1] = { i, sample_req(sp.op, mounts[i], rel), sp.op .. " " .. sp.path } end
    end
    for _, p in ipairs(w.policies.list) do
      for i, r in ipairs(mounts) do
        local answers = {}
        for _, q in ipairs(reqs) do
          if q[1] == i then
            local req, answer, detail = q[2], "allow", nil
            local rule = w.policies:rule(req.resolved, req.operation)
            if rule and rule.policy == p.label then
              answer = "deny (rule)"
            elseif not p.has_check then
              answer = "allow"
            elseif not w.policies:asks(p, req) then
              answer = "not asked (check_paths)"
            else
              answer, _, detail = w.policies:answer(p, req)
              if detail then
                answer = "FAILED"
                problems[#problems + 1] = ("%s%s (on a sample %s of %s)"):format(label, detail, req.operation, req.path)
              end
            end
            answers[#answers + 1] = q[3] .. " " .. answer
          end
        end
        say(indent, p.label, " on ", r.mount, ": ", table.concat(answers, ", "))
      end
    end
  end
  if ws.policies and ws.policies.list and #ws.policies.list > 0 then
    say("policy samples (each policy's check(); --sample OP:PATH asks about more):")
    try_policies(ws, "", "  ")
  end
  ws:close()
  -- the listener, its tenants and tokens: what burrow mcp would serve
  local hc = o.config and (require("burrow.config").load(o.config) or {}).http
  if hc then
    say("http: listen ", o.http or hc.listen or "(none: give --http HOST:PORT)", ", ", hc.workers or 2, " workers",
      hc.max_running and (", " .. hc.max_running .. " running per tenant") or "",
      ", access log ", hc.access_log or "stderr")
    if hc.metrics then
      say("  metrics: http://", hc.metrics.listen, "/metrics (Prometheus)", hc.metrics.allow_remote and ", allow_remote" or "")
    end
    local per = { default = 0 }
    for _, t in ipairs(hc.tokens or {}) do per[t.tenant or "default"] = (per[t.tenant or "default"] or 0) + 1 end
    say("  tenant default: this file's workspace, ", per.default, " token(s)")
    for _, t in ipairs(hc.tenants or {}) do
      local topts, terr = require("burrow.config").load(t.config)
      if topts and topts.http then
        terr = t.config .. " has an http: section of its own; a tenant's file holds its workspace only"
      end
      local tws
      if topts and not terr then
        topts.http = nil
        tws, terr = burrow.open(topts)
      end
      if not tws then
        problems[#problems + 1] = ("http.tenants.%s: %s"):format(t.name, terr)
      else
        local m = {}
        for _, r in ipairs(tws:mounts()) do m[#m + 1] = r.mount .. (r.readonly and " (ro)" or " (rw)") end
        say("  tenant ", t.name, ": ", t.config, ", roots ", table.concat(m, ", "), ", ", #tws:tools(), " tools, ",
          per[t.name] or 0, " token(s)")
        try_policies(tws, "tenant " .. t.name .. ": ", "    ")
        tws:close()
      end
    end
    local oc = hc.oauth
    if oc then -- the resource server: what clients are told, and what they need
      local _, meta = require("burrow.transport.oauth").metadata_location(oc.audience)
      say("  oauth: access tokens of ", oc.issuer, " for ", oc.audience, " (metadata at ", meta, ")",
        oc.read_scope and (", scopes read " .. oc.read_scope) or "", oc.write_scope and (", write " .. oc.write_scope) or "",
        oc.tenant_claim and (", tenant from claim " .. oc.tenant_claim) or "",
        oc.introspection and ", opaque tokens introspected" or "")
    elseif #(hc.tokens or {}) == 0 then
      say("  no tokens: loopback only, no authentication")
    end
  end
  io.stdout:write(table.concat(out, "\n"), "\n")
  if #problems > 0 then
    for _, p in ipairs(problems) do io.stderr:write("burrow: ", p, "\n") end
    return 2
  end
  io.stdout:write("ok\n")
  return 0
end

-- burrow token hash|new: what http.tokens stores is the sha256 of a token.
function commands.token(o)
  local sub, text = o.args[1], o.args[2]
  if sub == "new" and #o.args == 1 then
    local f = assert(io.open("/dev/urandom", "rb"))
    local raw = f:read(32)
    f:close()
    local token = raw:gsub(".", function(c) return ("%02x"):format(c:byte()) end)
    print("token:  " .. token)
    print("sha256: " .. require("burrow.server").token_hash(token))
    return 0
  end
  if sub ~= "hash" or #o.args > 2 then error({ usage = "token takes hash [TOKEN | -] or new" }) end
  if text == nil or text == "-" then text = (io.read("l") or "") end
  print(require("burrow.server").token_hash(text))
  return 0
end

local function main(args)
  local cmd = table.remove(args, 1)
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
