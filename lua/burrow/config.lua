-- burrow.config: the YAML configuration file (docs/config.md) read into the
-- options table of burrow.open. Every mistake is an error that names
-- file:line:column, never a silent default.
--
--   local opts, err = config.load("burrow.yaml")
--   local opts, err = config.parse(text, "burrow.yaml", "/etc/burrow")
--
-- Relative paths (roots, tool and policy files, the audit file) are taken
-- from the config file's directory. The seed "filesystem module" constraint
-- YAML (modules: - module: filesystem ...) is accepted and mapped onto roots,
-- tools and caps (config.seed_actions).

local core = require "burrow.core"
local caps_mod = require "burrow.base.caps"
local registry = require "burrow.workspace.registry"
local files = require "burrow.base.files"

local null, array_mt = core.json.null, core.json.array_mt

local config = {}

-- The seed module's actions and the native tools they stand for. Actions
-- that write make the roots of constraints.paths read-write; otherwise they
-- are read-only.
config.seed_actions = {
  read = "read_file", write = "write_file", edit = "edit_file", insert = "insert_lines",
  ls = "list_dir", grep = "grep", find = "glob", mv = "move", cp = "copy",
  rm = "remove", mkdir = "mkdir", file_stat = "stat",
}
config.seed_writes = { write = true, edit = true, insert = true, mv = true, cp = true, rm = true, mkdir = true }

-- The mount `{{workspace}}` gets in constraints.paths: the seed's agents
-- address files as /workspace/...
config.workspace_mount = "/workspace"

local TOP_KEYS = { roots = true, pack = true, packs = true, tools = true, policies = true, caps = true, audit = true, modules = true, http = true }

---------------------------------------------------------------------------
-- the state of one parse, and its errors

local P -- {name =, dir =, pos =}

local function at(mark)
  if not (mark and mark.line) then mark = { line = 1, col = 1 } end -- a top-level scalar
  return ("%s:%d:%d"):format(P.name, mark.line, mark.col)
end

local function fail(mark, fmt, ...)
  error({ config = at(mark) .. ": " .. fmt:format(...) }, 0)
end

local function info(t) return P.pos[t] or {} end
local function key_at(t, k) return (info(t).keys or {})[k] or info(t) end
local function value_at(t, k) return (info(t).values or {})[k] or info(t) end
local function item_at(t, i) return (info(t).items or {})[i] or info(t) end

local function is_list(v) return type(v) == "table" and getmetatable(v) == array_mt end
local function is_map(v) return type(v) == "table" and getmetatable(v) ~= array_mt end

local function kind(v)
  if v == null then return "nothing (null)" end
  if is_list(v) then return "a list" end
  if is_map(v) then return "a mapping" end
  if math.type(v) == "integer" then return "an integer" end
  if math.type(v) == "float" then return "a number" end
  if type(v) == "boolean" then return "a boolean" end
  local text = tostring(v)
  if #text > 60 then text = text:sub(1, 57) .. "..." end
  return ("%q"):format(text)
end

local function sorted_names(set)
  local out = {}
  for k in pairs(set) do out[#out + 1] = k end
  table.sort(out)
  return table.concat(out, ", ")
end

-- The keys of mapping t in the order the file has them.
local function ordered(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys, function(a, b)
    local ma, mb = key_at(t, a), key_at(t, b)
    if (ma.line or 0) ~= (mb.line or 0) then return (ma.line or 0) < (mb.line or 0) end
    if (ma.col or 0) ~= (mb.col or 0) then return (ma.col or 0) < (mb.col or 0) end
    return tostring(a) < tostring(b)
  end)
  return keys
end

-- Unknown keys of mapping t are errors at the first of them in the file.
-- Edit distance of a and b (a typo: one or two letters off).
local function distance(a, b)
  if math.abs(#a - #b) > 2 then return 3 end
  local prev = {}
  for j = 0, #b do prev[j] = j end
  for i = 1, #a do
    local cur = { [0] = i }
    for j = 1, #b do
      cur[j] = math.min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (a:byte(i) == b:byte(j) and 0 or 1))
    end
    prev = cur
  end
  return prev[#b]
end

-- The known key nearest to k, if it is one or two letters off.
local function nearest(k, known)
  local best, bd = nil, 3
  for name in pairs(known) do
    local d = distance(k:lower(), name)
    if d < bd or (d == bd and best and name < best) then best, bd = name, d end
  end
  return bd <= 2 and best or nil
end

local function check_keys(t, known, what)
  for _, k in ipairs(ordered(t)) do
    if not known[k] then
      local near = type(k) == "string" and nearest(k, known)
      if near then fail(key_at(t, k), "unknown key %q in %s: did you mean %q? (known: %s)", k, what, near, sorted_names(known)) end
      fail(key_at(t, k), "unknown key %q in %s (known: %s)", k, what, sorted_names(known))
    end
  end
end

local function want_map(v, mark, what)
  if not is_map(v) then fail(mark, "%s must be a mapping, not %s", what, kind(v)) end
  return v
end

local function want_list(v, mark, what)
  if not is_list(v) then fail(mark, "%s must be a list, not %s", what, kind(v)) end
  return v
end

local function want_string(v, mark, what)
  if type(v) ~= "string" or v == "" then fail(mark, "%s must be a non-empty string, not %s", what, kind(v)) end
  return v
end

-- A path from the file, taken from the config file's directory.
local function join(p)
  if p:sub(1, 1) == "/" then return p end
  while p:sub(1, 2) == "./" do p = p:sub(3) end
  local dir = P.dir
  if p == "" or p == "." then return dir end
  if dir:sub(-1) == "/" then return dir .. p end
  return dir .. "/" .. p
end

local is_file, readable = files.is_file, files.readable

---------------------------------------------------------------------------
-- keys

local function parse_roots(v, mark)
  want_list(v, mark, "roots")
  if #v == 0 then fail(mark, "roots: the list is empty (leave the key out to serve the current directory)") end
  local out = {}
  for i, r in ipairs(v) do
    local m = item_at(v, i)
    if type(r) == "string" then
      local parsed, err = require("burrow").parse_root(r)
      if not parsed then fail(m, "%s", err) end
      parsed.path = join(parsed.path)
      parsed.where = at(m) -- a root that does not open is reported here
      out[i] = parsed
    else
      want_map(r, m, "a root (a mapping {path, mount, mode} or \"DIR[:MOUNT][:ro]\")")
      check_keys(r, { path = true, mount = true, mode = true, inotify = true }, "a root")
      if r.path == nil then fail(m, "a root needs a path") end
      local root = { path = join(want_string(r.path, value_at(r, "path"), "path")), mode = "rw",
        where = at(value_at(r, "path")) }
      if r.mount ~= nil and r.mount ~= null then
        root.mount = want_string(r.mount, value_at(r, "mount"), "mount")
        if root.mount:sub(1, 1) ~= "/" then
          fail(value_at(r, "mount"), "mount %q must be an absolute path like /workspace", root.mount)
        end
      end
      if r.mode ~= nil and r.mode ~= null then
        if r.mode ~= "rw" and r.mode ~= "ro" then
          fail(value_at(r, "mode"), "mode must be rw or ro, not %s", kind(r.mode))
        end
        root.mode = r.mode
      end
      if r.inotify ~= nil and r.inotify ~= null then -- false: a network volume's (docs/deploy.md)
        if type(r.inotify) ~= "boolean" then
          fail(value_at(r, "inotify"), "inotify must be true or false, not %s", kind(r.inotify))
        end
        root.inotify = r.inotify
      end
      out[i] = root
    end
  end
  return out
end

local function available_tools()
  local out = {}
  for _, name in ipairs(registry.native) do
    if readable(("%s/%s.lua"):format(registry.tools_dir, name)) then out[#out + 1] = name end
  end
  return table.concat(out, ", ")
end

-- A tool by name (lua/tools/NAME.lua must exist) or by file; `why` words
-- the error for a seed action.
local function tool_spec(s, m, why)
  if is_file(s) then
    local file = join(s)
    if not readable(file) then fail(m, "tool file %s cannot be read", file) end
    return file
  end
  if not s:match("^[%w_%-]+$") then fail(m, "invalid tool name %q", s) end
  if not readable(("%s/%s.lua"):format(registry.tools_dir, s)) then
    if why then fail(m, "%s, which is not available yet (available: %s)", why, available_tools()) end
    fail(m, "unknown tool %q (available: %s)", s, available_tools())
  end
  return s
end

-- A pack's name: native or a file in lua/tools/packs.
local function pack_name(v, mark)
  local name = want_string(v, mark, "pack")
  if name ~= "native" and not registry.pack_file(name) then
    fail(mark, "unknown pack %q (available: %s)", name, table.concat(registry.packs(), ", "))
  end
  return name
end

-- packs: [a, {name: b, prefix: b_, ...options}]
local function parse_packs(v, mark)
  want_list(v, mark, "packs")
  if #v == 0 then fail(mark, "packs: the list is empty (leave the key out for the native set)") end
  local out = {}
  for i, p in ipairs(v) do
    local m = item_at(v, i)
    if is_map(p) then
      if p.name == nil then fail(m, "a packs entry needs a name (its other keys are prefix and the pack's options)") end
      local entry = {}
      for k, opt in pairs(p) do entry[k] = opt end
      entry.name = pack_name(p.name, value_at(p, "name"))
      if p.prefix ~= nil then
        local px = want_string(p.prefix, value_at(p, "prefix"), "prefix")
        if not px:match("^[%w_%-]+$") then fail(value_at(p, "prefix"), "prefix %q: use letters, digits, _ and -", px) end
      end
      out[i] = entry
    else
      out[i] = pack_name(p, m)
    end
  end
  return out
end

local function parse_tools(v, mark, pack)
  want_list(v, mark, "tools")
  if #v == 0 then fail(mark, "tools: the list is empty (leave the key out for the native set)") end
  if pack and pack ~= "native" then -- names pick the pack's tools; burrow.open checks them
    local out = {}
    for i, t in ipairs(v) do
      local s = want_string(t, item_at(v, i), "a tool")
      out[i] = is_file(s) and join(s) or s
    end
    return out
  end
  local out = {}
  for i, t in ipairs(v) do
    local m = item_at(v, i)
    if is_map(t) then -- {name: x} or {path: x}
      check_keys(t, { name = true, path = true }, "a tool entry (tools take no options)")
      if (t.name == nil) == (t.path == nil) then fail(m, "a tool entry needs exactly one of name or path") end
      if t.path ~= nil then
        local p = want_string(t.path, value_at(t, "path"), "path")
        local file = join(p)
        if not readable(file) then fail(value_at(t, "path"), "tool file %s cannot be read", file) end
        out[i] = file
      else
        out[i] = tool_spec(want_string(t.name, value_at(t, "name"), "name"), value_at(t, "name"))
      end
    else
      out[i] = tool_spec(want_string(t, m, "a tool"), m)
    end
  end
  return out
end

-- -> { {name =, path =, options = {...}} ... }
local function parse_policies(v, mark)
  want_list(v, mark, "policies")
  local out = {}
  for i, p in ipairs(v) do
    local m = item_at(v, i)
    local entry = { options = {} }
    if is_map(p) then
      if (p.name == nil) == (p.path == nil) then
        fail(m, "a policy entry needs exactly one of name or path (the other keys are its options)")
      end
      for k, opt in pairs(p) do
        if k ~= "name" and k ~= "path" then entry.options[k] = opt end
      end
      -- store: the host's file for the policy's shared counters, relative
      -- to this file like every other path in it
      if p.store ~= nil then entry.options.store = join(want_string(p.store, value_at(p, "store"), "store")) end
      if p.path ~= nil then
        entry.path = join(want_string(p.path, value_at(p, "path"), "path"))
      else
        entry.name = want_string(p.name, value_at(p, "name"), "name")
      end
    else
      local s = want_string(p, m, "a policy (a name, a .lua file or {name|path, ...options})")
      if is_file(s) then entry.path = join(s) else entry.name = s end
    end
    if entry.name and not entry.name:match("^[%w_%-]+$") then
      fail(m, "invalid policy name %q (a file path needs a / or a .lua ending)", entry.name)
    end
    out[i] = entry
  end
  return out
end

local function parse_caps(v, mark, out)
  want_map(v, mark, "caps")
  for _, k in ipairs(ordered(v)) do
    local s = v[k]
    if caps_mod.defaults[k] == nil then
      fail(key_at(v, k), "unknown cap %q (known: %s)", k, sorted_names(caps_mod.defaults))
    end
    local one, err = caps_mod.merge { [k] = s } -- sizes, numbers, flags: caps.lua decides
    if not one then fail(value_at(v, k), "%s", err) end
    out[k] = one[k]
  end
  return out
end

local function parse_audit(v, mark)
  if type(v) == "string" then return join(want_string(v, mark, "audit")) end
  if not is_map(v) then fail(mark, "audit must be a file name or {file, max_bytes}, not %s", kind(v)) end
  check_keys(v, { file = true, max_bytes = true }, "audit")
  if v.file == nil then fail(mark, "audit needs a file") end
  local out = { file = join(want_string(v.file, value_at(v, "file"), "file")) }
  if v.max_bytes ~= nil then
    local n, err = caps_mod.parse_size(v.max_bytes)
    if not n then fail(value_at(v, "max_bytes"), "max_bytes: %s", err) end
    out.max_bytes = n
  end
  return out
end

---------------------------------------------------------------------------
-- the seed's constraint YAML

local function seed_path(p, m, mode)
  local var, rest = p:match("^{{%s*([%w_]*)%s*}}(.*)$")
  if var then
    if var ~= "workspace" then fail(m, "unknown template variable {{%s}} (only {{workspace}} is known)", var) end
    if rest ~= "" and rest:sub(1, 1) ~= "/" then fail(m, "{{workspace}} must be followed by / or nothing") end
    -- the current directory, seen by the agent as /workspace
    return { path = "." .. rest, mount = config.workspace_mount .. rest, mode = mode }
  end
  if p:find("{{", 1, true) then fail(m, "{{workspace}} may only start a path") end
  return { path = join(p), mode = mode }
end

-- The name prefix the agent_module pack is served under, when the config
-- serves it (pack: agent_module, or packs: [..., agent_module]); then the
-- seed's actions are that pack's tools, by their own names.
local function module_pack_prefix(opts)
  if opts.pack == "agent_module" then return "" end
  for _, spec in ipairs(opts.packs or {}) do
    if spec == "agent_module" then return "" end
    if type(spec) == "table" and spec.name == "agent_module" then return spec.prefix or "" end
  end
end

local function parse_modules(v, mark, opts, top)
  want_list(v, mark, "modules")
  local seen
  for i, mod in ipairs(v) do
    local m = item_at(v, i)
    want_map(mod, m, "a module")
    check_keys(mod, { module = true, actions = true, constraints = true }, "a module")
    if mod.module == nil or mod.module == null then fail(m, "a module needs a name (module: filesystem)") end
    if mod.module ~= "filesystem" then
      fail(value_at(mod, "module"), "only the filesystem module is supported, not %s", kind(mod.module))
    end
    if seen then fail(m, "the filesystem module is listed twice") end
    seen = true

    local writes = true -- no actions: the native tool set, read-write
    if mod.actions ~= nil and mod.actions ~= null then
      local am = value_at(mod, "actions")
      if top.tools ~= nil then fail(am, "give either tools or the module's actions, not both") end
      want_list(mod.actions, am, "actions")
      if #mod.actions == 0 then fail(am, "actions: the list is empty") end
      local tools, have = {}, {}
      local prefix = module_pack_prefix(opts)
      writes = false
      for j, a in ipairs(mod.actions) do
        local jm = item_at(mod.actions, j)
        want_string(a, jm, "an action")
        local tool = config.seed_actions[a]
        if not tool then fail(jm, "unknown action %q (known: %s)", a, sorted_names(config.seed_actions)) end
        writes = writes or config.seed_writes[a] == true
        if prefix then
          if not have[a] then
            have[a] = true
            tools[#tools + 1] = prefix .. a
          end
        elseif not have[tool] then
          have[tool] = true
          tools[#tools + 1] = tool_spec(tool, jm, ("action %q needs the native tool %q"):format(a, tool))
        end
      end
      opts.tools = tools
    end

    local c = mod.constraints
    if c ~= nil and c ~= null then
      local cm = value_at(mod, "constraints")
      want_map(c, cm, "constraints")
      check_keys(c, { paths = true, max_file_size = true }, "constraints")
      if c.paths ~= nil and c.paths ~= null then
        local pm = value_at(c, "paths")
        if top.roots ~= nil then fail(pm, "give either roots or constraints.paths, not both") end
        want_list(c.paths, pm, "paths")
        if #c.paths == 0 then fail(pm, "paths: the list is empty") end
        local roots = {}
        for j, p in ipairs(c.paths) do
          local jm = item_at(c.paths, j)
          roots[j] = seed_path(want_string(p, jm, "a path"), jm, writes and "rw" or "ro")
          roots[j].where = at(jm)
        end
        opts.roots = roots
      end
      if c.max_file_size ~= nil and c.max_file_size ~= null then
        local sm = value_at(c, "max_file_size")
        if opts.caps.max_file_size then fail(sm, "max_file_size is also set in caps") end
        local n, err = caps_mod.parse_size(c.max_file_size)
        if not n then fail(sm, "max_file_size: %s", err) end
        opts.caps.max_file_size = n
      end
    end
  end
end

---------------------------------------------------------------------------
-- http: the listener of `burrow mcp --http` (burrow.transport.http), not the workspace

local HTTP_KEYS = { listen = true, workers = true, session_ttl = true, max_body = true, max_calls = true,
  max_sessions = true, replay = true, retry_ms = true, allowed_hosts = true, allowed_origins = true,
  tenants = true, tokens = true, max_queued = true, max_session_queued = true, max_tenant_queued = true,
  max_connections = true,
  max_connections_per_address = true, max_running = true, max_undo_bytes = true,
  max_unauthenticated = true, auth_timeout = true, max_kept_bytes = true, max_sessions_per_address = true,
  max_watches = true, access_log = true, approval_key_file = true, approval_ttl = true,
  approval_store = true, max_streams = true, max_listens = true, shutdown_grace = true, metrics = true, oauth = true }
local TOKEN_KEYS = { sha256 = true, tenant = true, max_calls = true, max_body = true, max_sessions = true }

local function want_count(v, mark, what, min)
  if math.type(v) ~= "integer" or v < (min or 1) then
    fail(mark, "%s must be an integer of at least %d, not %s", what, min or 1, kind(v))
  end
  return v
end

local function want_size(v, mark, what)
  local n, err = caps_mod.parse_size(v)
  if not n or n < 1 then fail(mark, "%s: %s", what, err or "must be at least 1 byte") end
  return n
end

-- state: {url: redis://[USER@]HOST:PORT/DB | rediss://..., password_file, ca_file, verify,
-- timeout, connect_timeout, pool, max_entries_per_tenant, max_bytes_per_tenant}
local function parse_state(v, mark)
  if v == "memory" then return nil end -- the embedded default, said out loud
  if not is_map(v) then fail(mark, "state must be memory or {url: redis://HOST:PORT/DB, ...}, not %s", kind(v)) end
  check_keys(v, { url = true, password_file = true, ca_file = true, verify = true, timeout = true,
    connect_timeout = true, pool = true, max_entries_per_tenant = true, max_bytes_per_tenant = true }, "state")
  if v.url == nil then fail(mark, "state needs a url (redis://HOST:PORT/DB, or rediss:// for TLS)") end
  local url = want_string(v.url, value_at(v, "url"), "state.url")
  if not url:match("^rediss?://[^/?#]") then
    fail(value_at(v, "url"), "state.url must be redis://HOST:PORT/DB or rediss://HOST:PORT/DB, not %q", url)
  end
  if url:match("^rediss?://[^/@]*:[^/@]*@") then
    fail(value_at(v, "url"), "state.url holds a password: put it in a file and name it as state.password_file")
  end
  local out = { url = url }
  if v.password_file ~= nil then
    out.password_file = join(want_string(v.password_file, value_at(v, "password_file"), "state.password_file"))
  end
  if v.ca_file ~= nil then out.ca_file = join(want_string(v.ca_file, value_at(v, "ca_file"), "state.ca_file")) end
  for _, k in ipairs { "timeout", "connect_timeout" } do
    if v[k] ~= nil then
      local ms, err = caps_mod.parse_ms(v[k])
      if not ms or ms < 1 then fail(value_at(v, k), "state.%s: %s", k, err or "must be more than 0") end
      out[k] = ms / 1000
    end
  end
  if v.verify ~= nil then
    if type(v.verify) ~= "boolean" then fail(value_at(v, "verify"), "state.verify must be true or false") end
    out.verify = v.verify
  end
  if v.pool ~= nil then out.pool = want_count(v.pool, value_at(v, "pool"), "state.pool") end
  if v.max_entries_per_tenant ~= nil then
    out.max_entries_per_tenant = want_count(v.max_entries_per_tenant, value_at(v, "max_entries_per_tenant"),
      "state.max_entries_per_tenant")
  end
  if v.max_bytes_per_tenant ~= nil then
    out.max_bytes_per_tenant = want_size(v.max_bytes_per_tenant, value_at(v, "max_bytes_per_tenant"),
      "state.max_bytes_per_tenant")
  end
  return out
end


local function want_strings(v, mark, what)
  want_list(v, mark, what)
  for i, s in ipairs(v) do want_string(s, item_at(v, i), ("%s[%d]"):format(what, i)) end
  return v
end

-- "500ms", "30s", "15m", "2h": a duration carries its unit (a bare number
-- could be seconds or milliseconds: keys ending in _ms are the caps'),
-- read by the caps' grammar (caps.parse_duration); in seconds, more than 0
local function want_seconds(v, mark, what)
  if (type(v) == "number" and v > 0) or tostring(v):match("^%d*[1-9]%d*%.?%d*$") then
    fail(mark, "%s: %s needs a unit: %ss, %sm or %sms (durations carry their unit)", what, tostring(v), tostring(v), tostring(v), tostring(v))
  end
  local ms, err, fault = caps_mod.parse_duration(type(v) == "string" and v or nil, false)
  if not ms or ms <= 0 then
    local why = ms and " (more than 0)"
      or type(v) == "string" and err and (" (%s)"):format(fault or err) or ""
    fail(mark, "%s must be a duration (500ms, 30s, 15m, 2h), not %s%s", what, kind(v), why)
  end
  return math.tointeger(ms / 1000) or ms / 1000
end

-- http.oauth: the listener as an OAuth resource server (docs/config.md#oauth)
local OAUTH_KEYS = { issuer = true, audience = true, jwks_uri = true, scopes = true, tenant_claim = true,
  tenants = true, default_tenant = true, jwks_ttl = true, refetch_interval = true, skew = true, timeout = true,
  introspection = true, max_calls = true, max_sessions = true }

local function want_url(v, mark, what)
  local s = want_string(v, mark, what)
  if not s:match("^https?://[^/?#]+") or s:find("[%s\"]") then
    fail(mark, "%s must be an absolute http(s) URL, not %q", what, s)
  end
  return s
end

local function parse_oauth(v, mark, names)
  want_map(v, mark, "http.oauth")
  check_keys(v, OAUTH_KEYS, "http.oauth")
  local function m(k) return value_at(v, k) end
  if v.issuer == nil or v.audience == nil then
    fail(mark, "http.oauth needs issuer (the authorization server's URL) and audience (this server's MCP URL)")
  end
  local out = { issuer = want_url(v.issuer, m("issuer"), "http.oauth.issuer"),
    audience = want_url(v.audience, m("audience"), "http.oauth.audience") }
  if v.jwks_uri ~= nil then out.jwks_uri = want_url(v.jwks_uri, m("jwks_uri"), "http.oauth.jwks_uri") end
  if v.scopes ~= nil then
    want_map(v.scopes, m("scopes"), "http.oauth.scopes")
    check_keys(v.scopes, { read = true, write = true }, "http.oauth.scopes")
    for _, k in ipairs { "read", "write" } do
      if v.scopes[k] ~= nil then
        local sc = want_string(v.scopes[k], value_at(v.scopes, k), "http.oauth.scopes." .. k)
        if sc == "" or sc:find('[%c%s"\\\128-\255]') then fail(value_at(v.scopes, k), "http.oauth.scopes.%s: %q is not one scope token", k, sc) end
        out[k .. "_scope"] = sc
      end
    end
  end
  if v.tenant_claim ~= nil then out.tenant_claim = want_string(v.tenant_claim, m("tenant_claim"), "http.oauth.tenant_claim") end
  out.tenants = {}
  if v.tenants ~= nil then
    if not out.tenant_claim then fail(m("tenants"), "http.oauth.tenants maps the values of http.oauth.tenant_claim: set it too") end
    want_map(v.tenants, m("tenants"), "http.oauth.tenants")
    for value, name in pairs(v.tenants) do
      name = want_string(name, value_at(v.tenants, value), "http.oauth.tenants." .. tostring(value))
      if not names[name] then fail(value_at(v.tenants, value), "http.oauth.tenants.%s: no tenant %q in http.tenants", tostring(value), name) end
      out.tenants[tostring(value)] = name
    end
  end
  -- without a tenant claim every principal is the default tenant's; with
  -- one, a value the map lacks is refused unless default_tenant says
  out.default_tenant = not out.tenant_claim and "default" or nil
  if v.default_tenant ~= nil then
    out.default_tenant = want_string(v.default_tenant, m("default_tenant"), "http.oauth.default_tenant")
    if not names[out.default_tenant] then fail(m("default_tenant"), "http.oauth.default_tenant: no tenant %q", out.default_tenant) end
  end
  for _, k in ipairs { "jwks_ttl", "refetch_interval", "skew", "timeout" } do
    if v[k] ~= nil then out[k] = want_seconds(v[k], m(k), "http.oauth." .. k) end
  end
  for _, k in ipairs { "max_calls", "max_sessions" } do
    if v[k] ~= nil then out[k] = want_count(v[k], m(k), "http.oauth." .. k) end
  end
  if v.introspection ~= nil then
    local iv = v.introspection
    want_map(iv, m("introspection"), "http.oauth.introspection")
    check_keys(iv, { endpoint = true, client_id = true, client_secret_file = true, max_concurrent = true }, "http.oauth.introspection")
    for _, k in ipairs { "endpoint", "client_id", "client_secret_file" } do
      if iv[k] == nil then fail(m("introspection"), "http.oauth.introspection needs endpoint, client_id and client_secret_file") end
    end
    local file = join(want_string(iv.client_secret_file, value_at(iv, "client_secret_file"), "http.oauth.introspection.client_secret_file"))
    local f = io.open(file, "rb")
    local secret = f and f:read(4096)
    if f then f:close() end
    secret = secret and secret:match("^%s*(.-)%s*$")
    if not secret or secret == "" then fail(value_at(iv, "client_secret_file"), "http.oauth.introspection.client_secret_file: cannot read a secret from %s", file) end
    out.introspection = { endpoint = want_url(iv.endpoint, value_at(iv, "endpoint"), "http.oauth.introspection.endpoint"),
      client_id = want_string(iv.client_id, value_at(iv, "client_id"), "http.oauth.introspection.client_id"),
      client_secret = secret,
      max_concurrent = iv.max_concurrent ~= nil and want_count(iv.max_concurrent, value_at(iv, "max_concurrent"), "http.oauth.introspection.max_concurrent") or nil }
  end
  return out
end

local function parse_http(v, mark)
  want_map(v, mark, "http")
  check_keys(v, HTTP_KEYS, "http")
  local out = {}
  local function m(k) return value_at(v, k) end
  if v.listen ~= nil then out.listen = want_string(v.listen, m("listen"), "http.listen") end
  if v.access_log ~= nil then -- stderr, off, or a file (relative to this config)
    local a = want_string(v.access_log, m("access_log"), "http.access_log")
    out.access_log = (a == "stderr" or a == "off") and a or join(a)
  end
  for _, k in ipairs { "workers", "max_calls", "max_sessions", "replay", "retry_ms", "max_connections",
    "max_connections_per_address", "max_running", "max_unauthenticated", "max_sessions_per_address",
    "max_watches", "max_streams", "max_listens" } do
    if v[k] ~= nil then out[k] = want_count(v[k], m(k), "http." .. k) end
  end
  if v.session_ttl ~= nil then out.session_ttl = want_seconds(v.session_ttl, m("session_ttl"), "http.session_ttl") end
  if v.approval_ttl ~= nil then out.approval_ttl = want_seconds(v.approval_ttl, m("approval_ttl"), "http.approval_ttl") end
  if v.shutdown_grace ~= nil then -- what a SIGTERM gives the calls in flight
    out.shutdown_grace = want_seconds(v.shutdown_grace, m("shutdown_grace"), "http.shutdown_grace")
  end
  if v.approval_key_file ~= nil then -- the key every instance signs approval states with
    out.approval_key_file = join(want_string(v.approval_key_file, m("approval_key_file"), "http.approval_key_file"))
  end
  if v.approval_store ~= nil then -- the file of used approval states every instance shares
    out.approval_store = join(want_string(v.approval_store, m("approval_store"), "http.approval_store"))
  end
  if v.auth_timeout ~= nil then
    out.auth_timeout = math.max(1, math.ceil(want_seconds(v.auth_timeout, m("auth_timeout"), "http.auth_timeout")))
  end
  for _, k in ipairs { "max_body", "max_queued", "max_session_queued", "max_tenant_queued", "max_undo_bytes",
    "max_kept_bytes" } do
    if v[k] ~= nil then out[k] = want_size(v[k], m(k), "http." .. k) end
  end
  for _, k in ipairs { "allowed_hosts", "allowed_origins" } do
    if v[k] ~= nil then out[k] = want_strings(v[k], m(k), "http." .. k) end
  end
  if v.metrics ~= nil then -- Prometheus's /metrics on a listener of its own
    local mm = m("metrics")
    want_map(v.metrics, mm, "http.metrics")
    check_keys(v.metrics, { listen = true, allow_remote = true }, "http.metrics")
    if v.metrics.listen == nil then fail(mm, "http.metrics needs a listen address (listen: 127.0.0.1:9464)") end
    local listen = want_string(v.metrics.listen, value_at(v.metrics, "listen"), "http.metrics.listen")
    if not listen:match("^%[.-%]:%d+$") and not listen:match("^[^%[%]]*:%d+$") then
      fail(value_at(v.metrics, "listen"), "http.metrics.listen must be HOST:PORT (127.0.0.1:9464), not %q", listen)
    end
    local remote = v.metrics.allow_remote
    if remote ~= nil and type(remote) ~= "boolean" then
      fail(value_at(v.metrics, "allow_remote"), "http.metrics.allow_remote must be true or false")
    end
    out.metrics = { listen = listen, allow_remote = remote == true }
  end
  local names = { default = true }
  out.tenants = {}
  if v.tenants ~= nil then
    want_map(v.tenants, m("tenants"), "http.tenants")
    for _, name in ipairs(ordered(v.tenants)) do
      local t, tm = v.tenants[name], value_at(v.tenants, name)
      if name == "default" then fail(key_at(v.tenants, name), "http.tenants: default is the main configuration's own") end
      want_map(t, tm, "http.tenants." .. name)
      check_keys(t, { config = true, max_calls = true, max_sessions = true, max_running = true,
        max_undo_bytes = true, max_kept_bytes = true, max_watches = true, max_queued = true,
        max_streams = true, max_listens = true }, "http.tenants." .. name)
      local file = join(want_string(t.config, value_at(t, "config"), "http.tenants." .. name .. ".config"))
      if not readable(file) then fail(value_at(t, "config"), "http.tenants.%s.config: cannot read %s", name, file) end
      local entry = { name = name, config = file }
      -- the tenant's own limits, beside its tokens' (the lower wins)
      for _, k in ipairs { "max_calls", "max_sessions", "max_running", "max_watches", "max_streams", "max_listens" } do
        if t[k] ~= nil then entry[k] = want_count(t[k], value_at(t, k), "http.tenants." .. name .. "." .. k) end
      end
      for _, k in ipairs { "max_undo_bytes", "max_kept_bytes", "max_queued" } do
        if t[k] ~= nil then entry[k] = want_size(t[k], value_at(t, k), "http.tenants." .. name .. "." .. k) end
      end
      out.tenants[#out.tenants + 1] = entry
      names[name] = true
    end
  end
  out.tokens = {}
  if v.tokens ~= nil then
    want_list(v.tokens, m("tokens"), "http.tokens")
    for i, t in ipairs(v.tokens) do
      local tm, what = item_at(v.tokens, i), ("http.tokens[%d]"):format(i)
      want_map(t, tm, what)
      check_keys(t, TOKEN_KEYS, what)
      local hex = want_string(t.sha256, value_at(t, "sha256"), what .. ".sha256"):lower()
      if not hex:match("^" .. ("%x"):rep(64) .. "$") then
        fail(value_at(t, "sha256"), "%s.sha256 must be 64 hex digits (burrow token hash TOKEN)", what)
      end
      local tok = { sha256 = hex, tenant = "default" }
      if t.tenant ~= nil then
        tok.tenant = want_string(t.tenant, value_at(t, "tenant"), what .. ".tenant")
        if not names[tok.tenant] then fail(value_at(t, "tenant"), "%s.tenant: no tenant %q in http.tenants", what, tok.tenant) end
      end
      for _, k in ipairs { "max_calls", "max_sessions" } do
        if t[k] ~= nil then tok[k] = want_count(t[k], value_at(t, k), what .. "." .. k) end
      end
      if t.max_body ~= nil then tok.max_body = want_size(t.max_body, value_at(t, "max_body"), what .. ".max_body") end
      out.tokens[i] = tok
    end
  end
  if v.oauth ~= nil then out.oauth = parse_oauth(v.oauth, m("oauth"), names) end
  return out
end

---------------------------------------------------------------------------

TOP_KEYS.roots_from_client = true -- MCP client roots narrow the roots (docs/resources.md)
TOP_KEYS.charsets = true -- the fallback charsets of text that is not UTF-8 (docs/config.md)
TOP_KEYS.prompts = true -- the operator's MCP prompts, one Lua file each (docs/prompts.md)
TOP_KEYS.resources = true -- the operator's MCP resources beside the roots (docs/resources.md)
TOP_KEYS.state = true -- the deployment's state store (docs/config.md)
TOP_KEYS.protect = true -- the protected policy: none, or {except: [names]} (docs/config.md)

-- A list of Lua files (prompts:, resources:), each readable.
local function parse_files(v, mark, key, what)
  want_list(v, mark, key)
  local out = {}
  for i, p in ipairs(v) do
    local file = join(want_string(p, item_at(v, i), ("a %s (a .lua file)"):format(what)))
    if not readable(file) then fail(item_at(v, i), "%s file %s cannot be read", what, file) end
    out[i] = file
  end
  return out
end

local function build(top)
  if top == null then return { caps = {} } end
  want_map(top, info(top), "the configuration")
  check_keys(top, TOP_KEYS, "the configuration")
  local set = {} -- keys with a value (key: ~ counts as absent)
  for k, v in pairs(top) do
    if v ~= null then set[k] = v end
  end
  local opts = { caps = {} }
  local function m(k) return value_at(top, k) end
  if set.roots then opts.roots = parse_roots(set.roots, m("roots")) end
  if set.pack and set.packs then fail(m("packs"), "give either pack or packs, not both") end
  if set.pack then opts.pack = pack_name(set.pack, m("pack")) end
  if set.packs then opts.packs = parse_packs(set.packs, m("packs")) end
  if set.tools then opts.tools = parse_tools(set.tools, m("tools"), opts.pack or opts.packs) end
  if set.policies then opts.policies = parse_policies(set.policies, m("policies")) end
  if set.prompts then opts.prompts = parse_files(set.prompts, m("prompts"), "prompts", "prompt") end
  if set.resources then opts.resources = parse_files(set.resources, m("resources"), "resources", "resource") end
  if set.caps then parse_caps(set.caps, m("caps"), opts.caps) end
  if set.audit then opts.audit = parse_audit(set.audit, m("audit")) end
  if set.state then opts.state_config = parse_state(set.state, m("state")) end
  if set.protect then
    local v, mark = set.protect, m("protect")
    if v == "none" then opts.protect = false
    elseif is_map(v) then
      check_keys(v, { except = true }, "protect")
      if v.except ~= nil and v.except ~= null then -- {}: every rule, as without the key
        want_strings(v.except, value_at(v, "except"), "protect.except")
        opts.protect = { except = v.except }
      end
    else fail(mark, "protect must be none or {except: [rule names]}, not %s", kind(v)) end
  end
  if set.charsets then
    want_strings(set.charsets, m("charsets"), "charsets")
    if #set.charsets == 0 then fail(m("charsets"), "charsets must list at least one charset, e.g. [utf-8, windows-1252]") end
    local _, err, i = require("burrow").charsets(set.charsets)
    if err then fail(i and item_at(set.charsets, i) or m("charsets"), "%s", err) end
    opts.charsets = set.charsets
  end
  if set.roots_from_client ~= nil then
    if type(set.roots_from_client) ~= "boolean" then
      fail(m("roots_from_client"), "roots_from_client must be true or false, not %s", kind(set.roots_from_client))
    end
    opts.roots_from_client = set.roots_from_client
  end
  if set.modules then parse_modules(set.modules, m("modules"), opts, set) end
  if set.http then opts.http = parse_http(set.http, m("http")) end
  return opts
end

--- Parse configuration text: the options for burrow.open, or nil, "name:line:col: message".
-- name names the file in messages; dir is where relative paths start (default ".").
function config.parse(text, name, dir)
  if type(text) ~= "string" then error("config.parse: text must be a string", 2) end
  name = name or "config"
  local value, pos = core.yaml_decode(text)
  if value == nil then
    local line, col, msg = pos:match("^line (%d+), column (%d+): (.*)$")
    if line then return nil, ("%s:%s:%s: %s"):format(name, line, col, msg) end
    return nil, ("%s: %s"):format(name, pos)
  end
  P = { name = name, dir = dir or ".", pos = pos }
  local ok, res = pcall(build, value)
  P = nil
  if ok then return res end
  if type(res) == "table" and res.config then return nil, res.config end
  error(res, 0)
end

--- Whether a configuration file is a network one: it has an http: section
-- (read even when the rest does not parse, so such a file that does not
-- load still stops `burrow mcp` instead of starting a stdio server).
function config.is_network(file)
  local text = files.read(file)
  if not text then return false end
  local value = core.yaml_decode(text)
  if type(value) == "table" then return value.http ~= nil end
  return text:find("^http%s*:") ~= nil or text:find("\nhttp%s*:") ~= nil
end

--- Read and parse a configuration file; relative paths in it start at its directory.
function config.load(file)
  if type(file) ~= "string" then error("config.load: file must be a string", 2) end
  local text, err = files.read(file)
  if not text then return nil, err end
  local dir = file:match("^(.*)/[^/]*$")
  if dir == "" then dir = "/" end
  return config.parse(text, file, dir or ".")
end

return config
