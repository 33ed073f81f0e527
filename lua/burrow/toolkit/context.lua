-- burrow.toolkit.context: what a tool handler gets as ctx. Each path is resolved
-- once into a handle and judged by the policies (ctx:open); the tool gets
-- that same handle (ctx:resolve, ctx:resolve_write) and the core acts on
-- it, so what was judged is what is used. Also: the entries of walks and
-- subtrees judged, the size a write commits, agent-facing errors, and the
-- helpers every tool shares.

local core = require "burrow.core"
-- burrow.base.errors, required with the first failure (a call that
-- succeeds words none: docs/benchmarks.md, Start-up)
local function errors() return require "burrow.base.errors" end

local context = {}
local Ctx = {}
Ctx.__index = Ctx

function context.new(ws, tool, hooks, via, args)
  hooks = hooks or {}
  return setmetatable({
    ws = ws,
    -- the connection's record ({id =, scope =, undo =, packs =}): it comes
    -- with the call (hooks.session: an MCP session, an HTTP session), never
    -- from the workspace, which every session of a tenant shares
    session = hooks.session or ws.session,
    roots = ws.roots,
    caps = ws.caps,
    tool = tool,
    hooks = hooks,
    via = via, -- the pack tool this native call runs for
    args = args or {},
    judged = {}, -- path .. "\0" .. f|n -> {h =, info =, ops = {op = true}} or {msg =, code =}
    by_arg = {}, -- path argument -> its judged entry
    reqs = {}, -- every policy request of the call, for the audit
    started = core.now(), -- the call's budgets count from here
  }, Ctx)
end

local OPS = { ["fs.read"] = "read", ["fs.write"] = "write", ["fs.delete"] = "delete", ["fs.list"] = "list" }

--- The operation a tool's calls make: read, list, write or delete.
function context.operation(tool)
  return OPS[(tool.permissions or {})[1]] or "read"
end

--- The path arguments of a call: {arg =, path =, op =, nofollow =}.
-- tool.path_args: {"path"} by default; an entry may be {arg, operation},
-- e.g. move's {"source", "delete"}, {"destination", "write"}. Writes and
-- deletes act on a name itself (a final link is not followed); reads follow
-- links unless the tool says nofollow (stat).
function context.path_specs(tool, args)
  local op = context.operation(tool)
  local out = {}
  for _, entry in ipairs(tool.path_args or { "path" }) do
    local key, eop = entry, op
    if type(entry) == "table" then key, eop = entry[1], entry[2] end
    local p = args[key]
    if key == "path" and p == nil and op == "list" then p = "." end
    if type(p) == "string" then
      out[#out + 1] = { arg = key, path = p, op = eop,
        nofollow = eop == "write" or eop == "delete" or tool.nofollow == true }
    end
  end
  return out
end

-- nil, "CODE: message", CODE, details for the agent's path. details: the
-- machine-readable facts (a table; path added), for programs and packs to
-- word their own message from (docs/tools.md "Errors"). The last failure
-- is kept so a tool that passes on only nil, message, code loses nothing.
function Ctx:fail(code, path, detail, details)
  local m
  if code == "OUTSIDE_ROOT" and (detail == nil or detail == "") then
    m = {}
    if self.session.scope then
      for _, s in ipairs(self.session.scope) do m[#m + 1] = s.path end
    else
      for _, r in ipairs(self.ws:mounts()) do m[#m + 1] = r.mount end
    end
    detail = "allowed: " .. (#m > 0 and table.concat(m, ", ") or "nothing (the client named no root this server may serve)")
  end
  details = details or {}
  -- the path the failure is about (not when it is about an argument)
  if details.path == nil and details.argument == nil and type(path) == "string" then details.path = path end
  if m and details.allowed == nil then details.allowed = m end
  local msg = errors().message(code, path, detail)
  self.failed = { msg = msg, details = details }
  return nil, msg, code, details
end

-- The policy request about one object, built from its handle's info.
function Ctx:request(path, op, info, arg)
  return {
    tool = self.tool.name,
    via = self.via,
    operation = op,
    path = path,
    arg = arg,
    root = info.mount,
    readonly = info.readonly,
    rel = info.lexical,
    resolved = info.rel,
    exists = info.exists,
    type = info.type,
    nlink = info.nlink,
    size = op == "write" and self.sizes and self.sizes[arg or "path"] or nil,
    session = self.session.id,
    -- the principal: budgets key on it (burrow.mcp.session)
    tenant = self.session.tenant,
    token = self.session.token,
  }
end

-- The policies asked about req (kept for the audit): true, or nil,
-- message, code, details.
local function decide(self, req)
  self.reqs[#self.reqs + 1] = req
  local msg, code, details = self.ws:decide(req, self.hooks)
  if msg then
    self.failed = { msg = msg, details = details }
    return nil, msg, code, details
  end
  return true
end

-- Ask the policies about an object for op: true, or nil, message, code.
function Ctx:judge(path, op, info, arg)
  return decide(self, self:request(path, op, info, arg))
end

--- Whether a resolved object (its innermost root and in-root path, as
-- roots:handle gives them) lies in the client's folders (session.scope, MCP
-- client roots: client_roots.lua); true without a scope. Decided on the
-- resolution, so a link inside a folder that leads out of it is out.
function context.in_scope(scope, info)
  if not scope then return true end
  for _, s in ipairs(scope) do
    if s.root == info.root and (s.rel == "." or info.rel == s.rel or info.rel:sub(1, #s.rel + 1) == s.rel .. "/") then
      return true
    end
  end
  return false
end

-- A root's mount, looked up once per workspace (roots:info builds a table).
local mounts = setmetatable({}, { __mode = "k" })
local function mount_of(roots, i)
  local m = mounts[roots]
  if not m then
    m = {}
    mounts[roots] = m
  end
  local v = m[i]
  if not v then
    v = roots:info(i).mount
    m[i] = v
  end
  return v
end

--- Resolve an agent path once into a handle and ask the policies about the
-- object it found, for op. The same (path, nofollow) gives the same handle
-- for the rest of the call, so what was judged is what the core uses.
-- Returns handle, nil, info (root = innermost root's index, rel = in-root
-- path there, mount, readonly, exists, stat fields) or nil, message, code.
function Ctx:open(path, op, nofollow, arg)
  local key = path .. (nofollow and "\0n" or "\0f")
  local j = self.judged[key]
  if not j then
    j = { ops = {} }
    self.judged[key] = j
    local idx, rel, code = self.roots:map(path)
    local h, info, hcode
    if idx then h, info, hcode = self.roots:handle(idx, rel, nofollow) end
    if not h then
      code = code or hcode
      local _, msg = self:fail(code, path, idx and info or rel)
      -- a path a declared rule denies is denied however it fails to
      -- resolve: ".ssh/id_rsa/x" (ENOTDIR) must not say id_rsa is a file
      -- where ".ssh/nope/x" says POLICY_DENIED
      local rule = idx and self.ws.policies:rule(rel, op)
      if rule then
        code = "POLICY_DENIED"
        _, msg = self:fail(code, path, ("%s matches the %s policy%s"):format(path, rule.policy,
          rule.reason and " (" .. rule.reason .. ")" or ""), { operation = op, policy = rule.policy })
      end
      j.msg, j.code = msg, code
      self.reqs[#self.reqs + 1] = { tool = self.tool.name, via = self.via, operation = op, path = path,
        arg = arg, session = self.session.id, unmapped = code, decision = "deny", reason = msg }
    elseif not context.in_scope(self.session.scope, info) then
      h:close()
      local _, msg = self:fail("OUTSIDE_ROOT", path)
      j.msg, j.code = msg, "OUTSIDE_ROOT"
      self.reqs[#self.reqs + 1] = { tool = self.tool.name, via = self.via, operation = op, path = path,
        arg = arg, session = self.session.id, unmapped = "OUTSIDE_ROOT", decision = "deny", reason = msg }
    else
      info.mount, info.lexical = mount_of(self.roots, info.root), rel
      j.h, j.info = h, info
    end
  end
  if arg then self.by_arg[arg] = j end
  if not j.h then return nil, j.msg, j.code end
  if op == "write" and j.ops.delete then op = "delete" end -- move's source: judged as taken away
  if j.ops[op] == nil then
    local ok, msg, code, details = self:judge(path, op, j.info, arg)
    j.ops[op] = ok or false
    if not ok then j.msg, j.code, j.details = msg, code, details end
  end
  if not j.ops[op] then
    if j.details then self.failed = { msg = j.msg, details = j.details } end
    return nil, j.msg, j.code, j.details
  end
  if nofollow and j.info.type == "symlink" and op ~= "delete" and not j.through then
    -- a link is judged with what it leads to: a stat shows where it
    -- points, and a write through it (which the core refuses) says why
    -- (a policy, outside the root, a loop). A move or copy onto a link
    -- replaces the link itself.
    j.through = true
    local t, msg, code, details = self:open(path, op, false, arg)
    if not t and (code == "POLICY_DENIED" or (op == "write" and arg ~= "destination")) then
      j.ops[op], j.msg, j.code, j.details = false, msg, code, details
      return nil, msg, code, details
    end
  end
  return j.h, j.info.rel, j.info
end

-- Resolve and judge an agent path for the tool's own operation: the
-- handle (pass it where the core takes a root index and a path: the path
-- that follows is then ignored), its in-root path, info.
function Ctx:resolve(path)
  return self:open(path, context.operation(self.tool), self.tool.nofollow == true)
end

-- Entries a staged subtree holds at most: past that the call is refused
-- (TOO_LARGE) rather than moved, copied or removed unchecked.
context.SUBTREE_MAX = 100000
Ctx.SUBTREE_MAX = context.SUBTREE_MAX
-- Entries a walk asks the check() policies about before it starts, at
-- most: past that the call is refused (TOO_LARGE), never run unjudged.
context.ASK_MAX = 200000

-- The walk's and the subtree's part of ctx and of this module, by name:
-- burrow.toolkit.context_tree, loaded with the first of them asked for; a
-- call on one path (stat, read_file, write_file) needs none of it
-- (docs/benchmarks.md, Start-up). Other names a lookup misses (a ctx
-- field that is nil) stay nil. spec/context_tree_spec.lua checks that
-- these are the names the file adds.
context.TREE = {
  Ctx = { judge_entries = true, root_dirs = true, refused_inside = true, judge_side = true, judge_stage = true,
    settle = true, member = true, asked_rules = true, walk_judge = true, walk_opts = true, reveal = true },
  context = { hidden_note = true },
}
-- The same for burrow.toolkit.context_rest: what a call on one path that
-- only reads it (stat) does not use: a write's resolve and commit, the
-- budgets, the client's hooks, a pack's helpers, the untrusted-content
-- boundary (spec/context_tree_spec.lua checks these too).
context.REST = {
  Ctx = { ms_left = true, over = true, call = true, resolve_write = true, commit = true, recount = true,
    locate = true, state = true, cancelled = true, untrusted = true, tree_progress = true, progress = true,
    task = true, wait = true, ask = true, log = true },
  context = { untrusted = true },
}
local PARTS = {
  { names = context.TREE, install = function() return require("burrow.toolkit.context_tree") end },
  { names = context.REST, install = function() return require("burrow.toolkit.context_rest") end },
}
local function later(which)
  return function(t, k)
    for _, part in ipairs(PARTS) do
      if part.names[which][k] and not part.done then
        part.done = true
        part.install()(context, Ctx, decide)
        if PARTS[1].done and PARTS[2].done then -- all in: a nil field is a plain miss again
          setmetatable(Ctx, nil)
          setmetatable(context, nil)
        end
        return rawget(t, k)
      end
    end
    return nil
  end
end
setmetatable(Ctx, { __index = later("Ctx") })
setmetatable(context, { __index = later("context") })

-- Close the call's handles.
function Ctx:close()
  for _, j in pairs(self.judged) do
    if j.h then j.h:close() end
  end
end

-- Join the agent's path with a sub path for results ("." + "a" = "a").
function context.join(path, sub)
  if sub == "" then return path end
  if path == "." or path == "./" then return sub end
  return (path:gsub("/+$", "")) .. "/" .. sub
end

return context
