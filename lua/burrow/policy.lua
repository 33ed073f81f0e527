-- burrow.policy: loads operator policies into the sandbox (core.sandbox)
-- and asks them about each call. A policy file returns
--   { name = "...", check = function(req) return "allow" | "deny", why | "ask", why end,
--     after = function(req, outcome) return record end  -- optional }
-- The first deny wins; asks are collected and go to the approval hook; a
-- policy that errors, loops or runs out of memory denies (fail closed).

local core = require "burrow.core"

local files = require "burrow.base.files"

local policy = {}

-- What a policy that runs needs (the sandbox made, the policy loaded into
-- it, its fields read, check_paths compiled, check() asked):
-- burrow.workspace.policy_sandbox, required with the first such policy,
-- so a start with the standard policies, which are data (data_of), loads
-- none of it (docs/benchmarks.md, Start-up)
local sandbox_part
local function sandboxed()
  sandbox_part = sandbox_part or require "burrow.workspace.policy_sandbox"
  return sandbox_part
end

-- The standard policies: lua/policy (source tree, make install) or
-- burrow/policy (the rock).
policy.dir = files.builtin_dir("policy", "default.lua")
policy.defaults = { "default" }

-- Sandbox limits for policy code (docs/policies.md#limits): memory for
-- all policies together; instruction units per call of check or after
-- (library work charged too); seconds of wall clock per call, the last guard.
policy.limits = { memory = 16 * 1024 * 1024, instructions = 1000000, time = 2 }

-- The file of the policy named `name`: the first dirs entry (the
-- operator's policy_path) that has NAME.lua, else the standard directory.
function policy.find(name, dirs)
  return files.find(name, dirs, policy.dir)
end

-- A spec is a name ("secrets"), a file ("./mine.lua", anything with "/" or
-- ending in .lua), or a table {name = | path = , ...options}.
local function normalize(spec, base_dir, dirs)
  local t = type(spec) == "table" and spec or { [files.is_file(spec) and "path" or "name"] = spec }
  local options = {}
  for k, v in pairs(t.options or t) do
    if k ~= "name" and k ~= "path" and k ~= "options" then options[k] = v end
  end
  local file, label, standard = t.path, t.name, false
  if file then
    if base_dir and file:sub(1, 1) ~= "/" then file = base_dir .. "/" .. file end
    label = label or file:match("([^/]+)%.lua$") or file
  elseif type(label) == "string" and label:match("^[%w_%-]+$") then
    file = policy.find(label, dirs)
    standard = file == policy.dir .. "/" .. label .. ".lua"
  else
    return nil, ("invalid policy %s: give a standard name or a .lua file"):format(tostring(label))
  end
  return { label = label, file = file, options = options, standard = standard }
end

-- What `make install` wrote beside a standard policy (file: its text src,
-- then bytecode): that bytecode when the text there is src byte for byte,
-- else nil (an edited policy runs as edited). Never for any other policy.
local function compiled_beside(p, src, file)
  if not p.standard then return nil end
  local both = files.read(file)
  if type(both) == "string" and #both > #src and both:byte(#src + 1) == 27 and both:sub(1, #src) == src then
    return both:sub(#src + 1)
  end
end

-- What policy.load uses of a loaded policy's table (sandbox sb, key):
-- plain data, and whether it has a check() and an after().
function policy.fields(sb, key)
  return sandboxed().fields(sb, key)
end

-- The fields of one of burrow's own standard policies named with no
-- options, as `make install` found them running its text once (NAME.luad:
-- the text, then the bytecode of a chunk returning policy.fields' table;
-- host/policydata.lua), when the text there is src byte for byte and the
-- policy has neither check() nor after(): then its top level is all it
-- does, a function of its options, and a start neither makes a sandbox
-- nor runs it (docs/policies.md, "Limits"). Else nil.
local function data_of(p, src)
  if not p.standard or next(p.options) ~= nil then return nil end
  local code = compiled_beside(p, src, p.file:sub(1, -5) .. ".luad") -- standard: DIR/NAME.lua
  if not code then return nil end
  local chunk = load(code, "=" .. p.label, "b", {})
  local ok, f = pcall(chunk or error)
  if not ok or type(f) ~= "table" or f.check ~= false or f.after ~= false then return nil end
  return f
end

-- A policy may list the options it takes (`options = {"a", "b"}`); then
-- any other key is a mistake worth saying, not a silent default.
local function unknown_options(known, p)
  if type(known) ~= "table" then return nil end
  local set = {}
  for _, k in ipairs(known) do set[k] = true end
  for k in pairs(p.options) do
    if not set[k] then
      table.sort(known)
      return ("policy %s: unknown option %q (it takes: %s)"):format(p.label, tostring(k),
        #known > 0 and table.concat(known, ", ") or "no options")
    end
  end
end

-- `audit: FILE` without the audit policy would record nothing: the audit
-- setting turns the policy on (after the others, as if listed last).
function policy.with_audit(specs, audit)
  specs = specs or policy.defaults
  if not audit then return specs end
  for _, s in ipairs(specs) do
    if s == "audit" or (type(s) == "table" and s.name == "audit") then return specs end
  end
  local out = table.move(specs, 1, #specs, 1, {})
  out[#out + 1] = "audit"
  return out
end

--- The protected policy (files that run code or steer an agent later) goes
-- first, out of the box: protect is the configuration's word (nil: all
-- its rules; false: none; {except = {names}}: the others). A list that
-- names it itself keeps its own.
function policy.with_protected(specs, protect)
  specs = specs or policy.defaults
  if protect == false then return specs end
  for _, s in ipairs(specs) do
    if s == "protected" or (type(s) == "table" and s.name == "protected") then return specs end
  end
  local out = { protect and protect.except and { name = "protected", except = protect.except } or "protected" }
  return table.move(specs, 1, #specs, 2, out)
end

local Engine = {}
Engine.__index = Engine

-- An engine whose policies are all standard policies' installed data
-- (data_of) compiles their rules with the first use of engine.rules, not
-- as it loads: `make install` ran those policies, and a start to the
-- initialize answer judges no path (docs/benchmarks.md, Start-up). Its
-- metatable until then; Engine's after.
local Lazy = { __index = function(e, k)
  if k ~= "rules" then return Engine[k] end
  local compiled, err = core.rules(e.rule_specs)
  if not compiled then error("the standard policies' rules: " .. tostring(err), 0) end
  setmetatable(e, Engine)
  e.rules = compiled
  return compiled
end }

--- Load policies; nil, message on the first that does not load.
-- opts.base_dir: where relative policy files start; opts.path: the
-- operator's policy directories, searched for names before the standard one;
-- opts.state: the state store every policy's state.* uses (a store of its
-- own when none is given), unless the policy names a store file.
function policy.load(specs, opts)
  opts = opts or {}
  -- the sandbox, made with the first policy that runs at start: none
  -- does when every one is a standard policy's data (data_of)
  local held
  local list, rules, ids, asks = {}, {}, {}, {}
  local all_data = true -- every policy a standard one's installed data
  for i, spec in ipairs(specs or policy.defaults) do
    local p, err = normalize(spec, opts.base_dir, opts.path)
    if not p then return nil, err end
    local src, rerr = files.read(p.file)
    if not src then
      return nil, ("policy %s: cannot read %s (%s)"):format(p.label, p.file, rerr)
    end
    p.key = i .. ":" .. tostring(p.label)
    -- errors and tracebacks name the file as the operator wrote it
    p.source = p.file
    if p.source:find("./", 1, true) then p.source = p.source:gsub("/%./", "/"):gsub("^%./", "") end
    local f = data_of(p, src)
    all_data = all_data and f ~= nil
    if not f then -- a policy that runs: in the sandbox (made with the first)
      held = held or { limits = opts.limits or policy.limits, state = opts.state, base_dir = opts.base_dir }
      local lerr
      f, lerr = sandboxed().load(held, p, src, compiled_beside)
      if not f then return nil, lerr end
    end
    local uerr = unknown_options(f.options, p)
    if uerr then return nil, uerr end
    p.has_check, p.has_after = f.check, f.after
    -- scope "call": check() judges the call (sizes, counts, operations),
    -- not each object, so entries of walks and subtrees are not asked
    p.scope = f.scope == "call" and "call" or "object"
    local rerr = policy.add_rules(rules, ids, p, f.rules)
    if rerr then return nil, rerr end
    local cerr = policy.check_paths(p, f.check_paths, asks, f.check_casefold)
    if cerr then return nil, cerr end
    list[#list + 1] = p
  end
  local compiled
  if #rules > 0 and not all_data then
    local cerr, ccode
    compiled, cerr, ccode = core.rules(rules)
    if not compiled then return nil, cerr, ccode end
  end
  -- asked: when every policy whose check() judges objects declares the
  -- paths it is about (check_paths), their union: a walk holds back the
  -- entries it matches and asks check() about those only (ctx:walk_judge)
  local asked
  for _, p in ipairs(list) do
    if p.has_check and p.scope == "object" and not p.ask_rules then asks = nil break end
  end
  if asks and #asks > 0 then asked = core.rules(asks) end
  -- hides: some declared rule denies a read or a list, so a walk (which
  -- reads and lists) must carry the rules; rules that only deny changes
  -- (the protected policy's) judge writes, deletes and subtree entries,
  -- never a walk's
  local hides = false
  for _, r in ipairs(rules) do
    for _, op in ipairs(r.ops) do hides = hides or op == "read" or op == "list" end
  end
  -- rule_specs: the declared rules as core.rules takes them, for a walk
  -- that adds its own (ctx:walk_opts, the entries check() denies)
  return setmetatable({ sandbox = held and held.sb, list = list, rules = compiled, rule_of = ids, rule_specs = rules,
    asked = asked, hides = hides and #rules > 0 }, #rules > 0 and all_data and Lazy or Engine)
end

--- A policy's check_paths: the globs of the in-root paths its check() is
-- about (the declared part of a dynamic rule). check() is asked about
-- those objects only, and a walk looks for them in its walker threads
-- rather than asking about every entry. casefold (check_casefold) folds
-- ASCII case, as a rule's casefold. Compiled into p.ask_rules, and added
-- to asks (core.rules' shape); nil, or a message.
function policy.check_paths(p, paths, asks, casefold)
  if paths == nil then return nil end
  return sandboxed().check_paths(p, paths, asks, casefold)
end

local OPNAMES = { read = true, list = true, write = true, delete = true }
local DENY = { all = { "read", "list", "write", "delete" }, change = { "write", "delete" } }

-- A policy's declared rules: {{deny = "all" | "change" | {ops}, paths =
-- {globs}, except = {globs}, casefold = bool, reason = "..."}...} appended
-- to rules (core.rules' shape) with ids[id] = {policy, reason}.
function policy.add_rules(rules, ids, p, declared)
  if declared == nil then return nil end
  if type(declared) ~= "table" then return ("policy %s: rules must be a list"):format(p.label) end
  -- "policy NAME: rule I: what": worded only for a rule that is wrong (a
  -- start checks every standard rule; docs/benchmarks.md, Start-up)
  local function bad(i, what, ...) return ("policy %s: rule %d: " .. what):format(p.label, i, ...) end
  for i, r in ipairs(declared) do
    if type(r) ~= "table" then return bad(i, "expected a table") end
    for k in pairs(r) do
      if k ~= "deny" and k ~= "paths" and k ~= "except" and k ~= "casefold" and k ~= "reason" then
        return bad(i, "unknown field %q (a rule has deny, paths, except, casefold, reason)", tostring(k))
      end
    end
    local ops = DENY[r.deny] or r.deny
    if type(ops) == "string" then ops = { ops } end
    if type(ops) ~= "table" or #ops == 0 then return bad(i, 'deny must be "all", "change" or a list of operations') end
    for _, op in ipairs(ops) do
      if not OPNAMES[op] then return bad(i, "unknown operation %q (read, list, write, delete)", tostring(op)) end
    end
    local paths = type(r.paths) == "string" and { r.paths } or r.paths
    if type(paths) ~= "table" or #paths == 0 then return bad(i, "paths must be a list of globs") end
    local id = #rules
    rules[#rules + 1] = { patterns = paths, except = r.except or {}, ops = ops, casefold = r.casefold == true, id = id }
    ids[id] = { policy = p.label, reason = type(r.reason) == "string" and r.reason or nil }
  end
end

function Engine:names()
  local out = {}
  for i, p in ipairs(self.list) do out[i] = p.label end
  return out
end

--- The declared rule that denies op on the in-root path, or nil.
function Engine:rule(path, op)
  local id = self.rules and path and self.rules:match(path, op)
  return id and self.rule_of[id]
end

--- True when some policy has an after(): its records go to the
-- workspace's audit sink.
function Engine:records()
  for _, p in ipairs(self.list) do
    if p.has_after then return true end
  end
  return false
end

--- True when some policy's check() judges each object (walks then ask it
-- about each entry they reveal).
function Engine:judges_objects()
  for _, p in ipairs(self.list) do
    if p.has_check and p.scope == "object" then return true end
  end
  return false
end

--- "allow" | "deny", reason, policy[, detail, own, code] | "ask", reason,
-- policy (the first that asks). detail: a policy's error, for the
-- operator only; code: the refusal's when not POLICY_DENIED (Engine:answer). The declared rules first, on
-- the in-root path the resolver saw and on the path as mapped; then each
-- policy's check() (for an entry of a walk or a subtree, req.member, only
-- those that judge objects).
function Engine:check(req)
  local r = self:rule(req.resolved, req.operation) or (req.rel ~= req.resolved and self:rule(req.rel, req.operation))
  if r then
    return "deny", ("%s matches the %s policy%s"):format(req.path, r.policy, r.reason and " (" .. r.reason .. ")" or ""), r.policy
  end
  local asks, asker = {}, nil
  for _, p in ipairs(self.list) do
    if self:asks(p, req) then
      local answer, reason, detail, own, code = self:answer(p, req)
      if answer == "deny" then return "deny", reason, p.label, detail, own, code end
      if answer == "ask" then
        asks[#asks + 1] = reason
        asker = asker or p.label
      end
    end
  end
  if #asks > 0 then return "ask", table.concat(asks, "; "), asker end
  return "allow"
end

--- Whether policy p's check() is asked about req: it has one, it judges
-- objects when req is an entry of a walk (req.member), and req is among
-- its check_paths when it declares them.
function Engine:asks(p, req)
  if not p.has_check or (req.member and p.scope == "call") then return false end
  if p.ask_rules and req.resolved and not p.ask_rules:match(req.resolved)
    and not (req.rel and p.ask_rules:match(req.rel)) then return false end
  return true
end

--- Policy p's check() on req: "allow" | "deny", reason[, detail, own,
-- code] | "ask", reason. A policy's own error text is for the operator
-- (detail: stderr, audit), never the agent; own: the reason is burrow's
-- own words, "denied by policy NAME ...", which the message uses whole;
-- code: "STORE_UNAVAILABLE" when the check met a state store that did not
-- answer and then refused or failed (it fails closed: the refusal is the
-- outage's, to retry, not the policy's judgement).
function Engine:answer(p, req)
  return sandboxed().answer(self, p, req)
end

--- Records the policies' after() hooks return (for the audit log).
function Engine:after(req, outcome)
  local records = {}
  for _, p in ipairs(self.list) do
    if not p.has_after then goto next end
    local ok, rec = self.sandbox:call(p.key, "after", req, outcome)
    if ok and type(rec) == "table" then records[#records + 1] = rec end
    if not ok and rec then io.stderr:write("burrow: policy ", p.label, " after(): ", tostring(rec), "\n") end
    ::next::
  end
  return records
end

function Engine:close()
  setmetatable(self, Engine) -- rules never compiled stay so
  if self.rules then self.rules:close() end
  self.rules = nil
  if self.asked then self.asked:close() end
  self.asked = nil
  for _, p in ipairs(self.list or {}) do
    if p.ask_rules then p.ask_rules:close() end
    p.ask_rules = nil
  end
  if self.sandbox then self.sandbox:close() end
  self.sandbox = nil
end

-- Bytes a call will write: content (base64 measured by the core's strict
-- decoder, so the size is the one written), or the new text of edits.
-- Malformed base64: nil, message.
local function content_size(args)
  local c = args.content
  if type(c) ~= "string" then
    local n = type(args.new_text) == "string" and #args.new_text or nil
    for _, e in ipairs(type(args.edits) == "table" and args.edits or {}) do
      if type(e) == "table" and type(e.new_text) == "string" then n = (n or 0) + #e.new_text end
    end
    return n
  end
  if args.encoding ~= "base64" then return #c end
  local n, err = core.base64_size(c)
  if not n then return nil, "field 'content': " .. err end
  return n
end

--- The sizes policies see, by path argument: {path = n, destination = n}.
function policy.sizes(args)
  local n, err = content_size(args)
  if err then return nil, err end
  return { path = n, destination = n }
end

return policy
