-- burrow: the public Lua API.
--
--   local burrow = require "burrow"
--   local ws = assert(burrow.open{ roots = {{path = "."}} })
--   local res, msg, code = ws:call("read_file", {path = "README.md"})
--   ws:close()
--
-- Expected failures return nil, "CODE: message", "CODE"; misuse raises.

local core = require "burrow.core"

-- The layers above the binding have Lua modules of their own:
-- burrow.server (the transports) and burrow.host (the embedding API's
-- host, for ws:submit). The binary and libburrow offer them from C
-- (package.preload). For a plain Lua that loaded core.so from
-- package.cpath they are server.so and host.so beside that core.so: each
-- is linked against the core.so of its own directory, so from there it
-- shares the one already loaded (one copy of burrow's state in the
-- process), while one found elsewhere on the path (another install) would
-- bring a second core.so. Offered here from that directory only, opened
-- when first required; missing there, require fails rather than look on.
if package.preload["burrow.core"] == nil then
  local file = package.searchpath("burrow.core", package.cpath)
  local dir = file and file:match("^(.*)/")
  for _, name in ipairs { "burrow.server", "burrow.host" } do
    if dir and package.preload[name] == nil and package.loaded[name] == nil then
      local so = dir .. "/" .. name:match("[^.]*$") .. ".so"
      package.preload[name] = function(...)
        local open, err = package.loadlib(so, "luaopen_" .. (name:gsub("%.", "_")))
        if not open then error(("module '%s' not found beside %s: %s"):format(name, file, err), 2) end
        return open(...)
      end
    end
  end
end

local caps_mod = require "burrow.base.caps"
local registry = require "burrow.workspace.registry"
local policy = require "burrow.policy"

local burrow = { core = core, version = core.version }
-- burrow.errors (burrow.base.errors): loaded when first asked for, so a
-- call that fails nothing, or a start to the initialize answer, words
-- nothing and loads none of it (docs/benchmarks.md, Start-up)
setmetatable(burrow, { __index = function(t, k)
  if k ~= "errors" then return nil end
  local errors = require "burrow.base.errors"
  rawset(t, "errors", errors)
  return errors
end })

local MAX_CHARSETS = 8 -- the fallback list's length (burrow.charsets)

local Workspace = {}
Workspace.__index = Workspace
Workspace.__name = "burrow.Workspace"

local function check_open(ws)
  if getmetatable(ws) ~= Workspace then error("expected a workspace (use ws:call, not ws.call)", 3) end
  if not ws.roots then error("attempt to use a closed workspace", 3) end
end

local function fail(code, msg)
  return nil, code .. ": " .. msg, code
end

-- Parse "DIR[:MOUNT][:ro]" as the CLI and config accept it.
burrow.parse_root = require("burrow.base.rootspec").parse

--- The resolver of the workspaces this Lua state opens without one of
-- their own (a root's resolver is fixed when it opens; the core has no
-- process setting a root defers to): name, else $BURROW_RESOLVER, else the
-- last one chosen, else openat2. Returns the one in effect: "walk" when
-- the kernel lacks openat2, whatever was asked.
local chosen_resolver
function burrow.set_resolver(name)
  name = name or os.getenv("BURROW_RESOLVER")
  if name and name ~= "" then
    if name ~= "openat2" and name ~= "walk" then
      return nil, ("resolver %q: use openat2 or walk"):format(name)
    end
    chosen_resolver = name
  end
  if chosen_resolver == "walk" then return "walk" end
  return core.backend()
end

-- tool_path / policy_path: a directory or a list of them.
local function dir_list(v, key)
  if v == nil then return {} end
  if type(v) == "string" then return { v } end
  if type(v) ~= "table" then return nil, key .. " must be a directory or a list of directories" end
  for i, d in ipairs(v) do
    if type(d) ~= "string" then return nil, ("%s[%d] must be a directory (a string)"):format(key, i) end
  end
  return v
end

--- Open a workspace.
-- opts.roots: {{path=, mount=, mode="rw"|"ro"}...} (default: the current dir);
--   a root's where (optional: "burrow.yaml:3:11", "--root DIR") starts the
--   error when it cannot be opened
-- opts.caps: overrides of burrow.base.caps.defaults ("64MiB" or numbers)
-- opts.resolver: "openat2" | "walk" (default $BURROW_RESOLVER, else openat2)
-- opts.tools: tool names or files (default: the native set, or the pack's)
-- opts.pack: a compatibility pack's name (docs/packs.md; default "native")
-- opts.packs: several packs, each a name or {name =, prefix =, ...options}
-- opts.tool_path: the operator's tool directories, searched for names first
-- opts.policies: policy names, files or {name|path, ...options} (default {"default"})
-- opts.protect: the protected policy, on unless false; {except = {names}}
--   lets the named rules go (docs/policies.md#protected)
-- opts.policy_path: the operator's policy directories, searched for names first
-- opts.audit: file for the audit policy's records (default: stderr)
-- opts.approve: function(req, reason) -> true | false, why, for "ask" answers
-- opts.roots_from_client: MCP may narrow the roots to the client's (docs/config.md)
-- opts.prompts: the operator's MCP prompt files (docs/prompts.md)
-- opts.resources: the operator's MCP resource files (docs/resources.md)
-- opts.charsets: the fallback charsets for text that is not UTF-8 (docs/config.md)
-- opts.state: the state store policies keep their counters in (state.*):
--   a core.state_open or core.state() object; default: the one
--   opts.state_config names (the config's state: {url = redis://...}),
--   else one of this workspace's own. burrow mcp gives every workspace the
--   process's when none is configured, so its HTTP workers and a reload
--   count against the same budgets.
function burrow.open(opts)
  opts = opts or {}
  if type(opts) ~= "table" then error("burrow.open: expected a table of options", 2) end
  -- The resolver is the roots' own (libpathrs keeps it in its Root): a
  -- workspace opened with resolver = "walk" keeps the walk whatever a later
  -- one asks. Without one, the process default ($BURROW_RESOLVER) as it is
  -- now, fixed for these roots: a later burrow.set_resolver changes
  -- workspaces opened after it, never this one.
  local resolver = opts.resolver
  if resolver ~= nil and resolver ~= "openat2" and resolver ~= "walk" then
    return fail("INVALID_ARGUMENT", ("resolver %q: use openat2 or walk"):format(tostring(resolver)))
  end
  if resolver == nil then
    local name, rerr = burrow.set_resolver()
    if not name then return fail("INVALID_ARGUMENT", rerr) end
    resolver = name
  end
  local caps, cerr = caps_mod.merge(opts.caps)
  if not caps then return fail("INVALID_ARGUMENT", cerr) end
  local charsets, cserr = burrow.charsets(opts.charsets)
  if cserr then return fail("INVALID_ARGUMENT", cserr) end
  local specs, wheres, inotify_off = {}, {}, {}
  local roots_in = opts.roots or { { path = "." } }
  if type(roots_in) ~= "table" or #roots_in == 0 then
    return fail("INVALID_ARGUMENT", "at least one root is needed: roots = {{path = \"DIR\"}}")
  end
  for i, r in ipairs(roots_in) do
    if type(r) == "string" then
      local parsed, perr = burrow.parse_root(r)
      if not parsed then return fail("INVALID_ARGUMENT", perr) end
      r = parsed
    end
    if type(r) ~= "table" or type(r.path) ~= "string" then
      return fail("INVALID_ARGUMENT", ("root %d: needs a path"):format(i))
    end
    if r.mode and r.mode ~= "rw" and r.mode ~= "ro" then
      return fail("INVALID_ARGUMENT", ("root %d: mode must be rw or ro"):format(i))
    end
    if r.inotify ~= nil and type(r.inotify) ~= "boolean" then
      return fail("INVALID_ARGUMENT", ("root %d: inotify must be true or false"):format(i))
    end
    -- inotify false: a network volume's (NFS: inotify sees this machine's
    -- changes only); its watches hear burrow's writes through the store
    inotify_off[i] = r.inotify == false or nil
    specs[i] = { path = r.path, mount = r.mount, readonly = r.mode == "ro", resolver = resolver }
    wheres[i] = type(r.where) == "string" and r.where or nil
  end
  local roots, detail, code, why = core.roots(specs)
  if not roots then -- why: {on = "root", index = i}, the root the core refused
    local spec = why and specs[why.index]
    local msg = ("cannot open root %s: %s"):format(spec and spec.path or "?",
      detail ~= "" and detail or require("burrow.base.errors").message(code, spec and spec.path):gsub("^%u+: ", ""))
    local where = why and wheres[why.index]
    if where then return nil, ("%s: %s: %s"):format(where, code, msg), code end
    return fail(code, msg)
  end
  local tool_path, terr = dir_list(opts.tool_path, "tool_path")
  local policy_path, pperr = dir_list(opts.policy_path, "policy_path")
  if not (tool_path and policy_path) then
    roots:close()
    return fail("INVALID_ARGUMENT", terr or pperr)
  end
  local list, by_name
  local packs = opts.packs or (opts.pack and opts.pack ~= "native" and { opts.pack })
  if packs then
    list, by_name = registry.load_packs(packs)
    if list and opts.tools then list, by_name = registry.pack_subset(list, opts.tools, tool_path) end
  elseif opts.tools == nil and #tool_path == 0 then
    list, by_name = false, registry.lazy_natives() -- each tool loaded when first named
  else
    list, by_name = registry.load_all(opts.tools, tool_path)
  end
  if list == nil then
    roots:close()
    return fail("INVALID_ARGUMENT", by_name)
  end
  -- the deployment's state store: the policies' state.*, used approvals
  local state, serr, state_down = opts.state, nil, nil
  if not state and opts.state_config then
    local c = opts.state_config
    -- a server that does not answer now is an outage, not a configuration
    -- error: the workspace opens, what needs the store fails closed
    -- (STORE_UNAVAILABLE) until it answers; a bad URL or password file
    -- still fails here
    local spec = { kind = "redis", outage_ok = true }
    for k, v in pairs(c) do spec[k] = v end
    local ok, st, why = pcall(core.state_open, spec)
    state, serr = ok and st or nil, ok and why or st
    if state and why then state_down = ("state (%s): %s"):format(c.url, tostring(why)) end
    if not state then
      roots:close()
      return fail("INVALID_ARGUMENT", ("state (%s): %s"):format(c.url, tostring(serr)))
    end
  end
  state = state or core.state_open { kind = "memory" }
  -- burrow's own writes told through the store (changes.c): where it is
  -- shared (Redis), or where a root's watches have nothing else to hear
  local kind = state:kind()
  if next(inotify_off) and kind == "file" then
    roots:close()
    return fail("INVALID_ARGUMENT", "a root with inotify: false hears changes through the state store, "
      .. "and the file store has no publish/subscribe: use the embedded store (the default) or Redis/Valkey")
  end
  local changes = kind == "redis" or (next(inotify_off) ~= nil and kind ~= "file")
  -- and told by every workspace whose store can: another in this process
  -- (an HTTP worker's, a reload's) may watch a root with inotify off
  local policies, perr = policy.load(policy.with_protected(policy.with_audit(opts.policies, opts.audit), opts.protect),
    { base_dir = opts.base_dir, path = policy_path, state = state })
  if not policies then
    roots:close()
    return fail("INVALID_ARGUMENT", perr)
  end
  -- without files their modules are not loaded (a start-up's cost,
  -- docs/benchmarks.md): the same empty sets they would give
  local function none(files) return files == nil or (type(files) == "table" and files[1] == nil) end
  local prompt_list, prompt_by_name, operator_resources, rerr = {}, {}, { fixed = {}, templates = {}, by_uri = {} }, nil
  if not none(opts.prompts) then prompt_list, prompt_by_name = require("burrow.workspace.prompts").load(opts.prompts) end
  if not none(opts.resources) then operator_resources, rerr = require("burrow.workspace.operator_resources").load(opts.resources) end
  if not (prompt_list and operator_resources) then
    roots:close()
    policies:close()
    return fail("INVALID_ARGUMENT", prompt_list and rerr or prompt_by_name)
  end
  -- the audit sink (burrow.workspace.audit: the audit file, else stderr),
  -- opened when something may write to it: an audit setting, or a policy
  -- with an after(), whose records it takes; else none (ws.audit nil), and
  -- the module is not loaded (docs/benchmarks.md, Start-up)
  local sink, aerr
  if opts.audit ~= nil or policies:records() then
    sink, aerr = require("burrow.workspace.audit").open(opts.audit)
    if not sink then
      roots:close()
      policies:close()
      return fail("INVALID_ARGUMENT", aerr)
    end
  end
  local ws = setmetatable({
    roots = roots,
    caps = caps,
    tool_list = list,
    tool_by_name = by_name,
    session = opts.session or { id = "lua" },
    scans = { n = 0 }, -- hash and line facts of big files, by identity
    charsets = charsets, -- the fallback list, "a,b" (nil: the core's default)
    resolver = resolver, -- its roots' (async.lua opens it again with the same)
    natives = {}, -- native tools packs call, loaded on first use
    policies = policies,
    state = state,
    state_down = state_down, -- why the store did not answer at the open (nil: it did)
    changes = changes, -- watches follow the store (burrow.workspace.watch)
    tells = kind ~= "file", -- writes published on it (tell_changes)
    inotify_off = inotify_off, -- root index -> true: watches there hear only the store
    prompt_list = prompt_list, prompt_by_name = prompt_by_name, -- MCP prompts (burrow.workspace.prompts)
    operator_resources = operator_resources, -- MCP resources beside the roots (burrow.workspace.operator_resources)
    audit = sink,
    approve = opts.approve, -- function(req, reason) -> true | false, why
    -- MCP: serve the folders the client names as its roots, within these
    roots_from_client = opts.roots_from_client == true,
    -- (the client's folders are the session's: session.scope, context.lua)
    opts = opts, -- for ws:submit's host (burrow.workspace.async)
  }, Workspace)
  return ws
end

--- The fallback charsets of burrow.open's opts.charsets as the core takes
-- them ("windows-1252,iso-8859-15"; nil for nil), or nil, message, i.
function burrow.charsets(list)
  if list == nil then return nil end -- the usual case: the rest with its first list (burrow.workspace.later)
  return require("burrow.workspace.later").charsets(list, MAX_CHARSETS)
end

-- A call's machinery (burrow.workspace.invoke: the arguments checked, each
-- path judged, the tool run, audited): required with the first call, so
-- a start that answers initialize loads none of it (docs/benchmarks.md,
-- Start-up).
local invoke
local function calls()
  invoke = invoke or require "burrow.workspace.invoke"
  return invoke
end

--- Ask the policies about one request: nil if allowed, else message, code,
-- details. "ask" goes to the approval hook (MCP: elicitation). Sets
-- req.decision and req.reason for the audit.
function Workspace:decide(req, hooks)
  return calls().decide(self, req, hooks)
end

--- ws:call's call, its result as the tool gave it: a held set where the
-- tool kept the core's (grep's matches, glob's entries; burrow.toolkit.printer),
-- for an edge that prints it itself (the MCP server: printer.wire and the
-- tool's render; `burrow call`). Lua code gets ws:call's tables.
function Workspace:run(name, args, hooks)
  check_open(self)
  local tool = self.tool_by_name[name]
  if not tool then return fail("INVALID_ARGUMENT", ("unknown tool %q"):format(name)) end
  return calls().run(self, tool, args, hooks)
end

function Workspace:tool(name)
  check_open(self)
  return self.tool_by_name[name]
end

--- How many tools (without loading the ones not named yet).
function Workspace:tool_count()
  check_open(self)
  return self.tool_list and #self.tool_list or #registry.native
end

function Workspace:mounts()
  check_open(self)
  local out = {}
  for i = 1, self.roots:count() do out[i] = self.roots:info(i) end
  return out
end

-- The methods a `burrow call` and a start to the initialize answer do not
-- run (ws:call, ws:call_native, ws:render, ws:tools, the calls that do not
-- block, the approval hook, the watches) are in burrow.workspace.later:
-- each name a stand-in that loads that file with its first call, puts the
-- file's definitions in place of the stand-ins still there (a method a
-- program wrapped meanwhile keeps its wrapper, whose inner call is the
-- stand-in) and calls the definition (a tail call: an error of the method
-- names the same caller). docs/benchmarks.md, Start-up.
local stand_ins, later_methods = {}, nil
for _, name in ipairs { "call", "call_native", "render", "tools", "submit", "fd", "poll", "cancel", "on_ask", "answer",
  "watch", "poll_watch", "watch_fd" } do
  stand_ins[name] = function(...)
    if not later_methods then
      local defs = {}
      require("burrow.workspace.later").install(defs, check_open)
      for k, f in pairs(defs) do
        if rawget(Workspace, k) == stand_ins[k] then Workspace[k] = f end
      end
      later_methods = defs
    end
    local method = later_methods[name]
    if not method then error(("burrow: the file of Workspace:%s does not define it"):format(name)) end
    return method(...)
  end
  Workspace[name] = stand_ins[name]
end

function Workspace:close()
  if self.host then require("burrow.workspace.async").close(self) end
  if self.watches then
    self.watches:close()
    self.watches = nil
  end
  if self.roots then
    self.roots:close()
    self.policies:close()
    if self.audit then self.audit:close() end
    self.roots = nil
  end
end

Workspace.__close = Workspace.close
Workspace.__gc = Workspace.close

return burrow
