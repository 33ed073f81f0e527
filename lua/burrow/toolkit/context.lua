-- burrow.toolkit.context: what a tool handler gets as ctx. Each path is resolved
-- once into a handle and judged by the policies (ctx:open); the tool gets
-- that same handle (ctx:resolve, ctx:resolve_write) and the core acts on
-- it, so what was judged is what is used. Also: the entries of walks and
-- subtrees judged, the size a write commits, agent-facing errors, and the
-- helpers every tool shares.

local core = require "burrow.core"
local errors = require "burrow.base.errors"

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

--- The milliseconds left of a budget cap (a caps key such as max_tree_ms)
-- counted from the call's start: 0 when the cap is 0 (no budget), else at
-- least 1, for the core's max_ms options.
function Ctx:ms_left(cap)
  local ms = self.caps[cap] or 0
  if ms == 0 then return 0 end
  return math.max(1, math.floor(ms - (core.now() - self.started) * 1000))
end

--- True once the call is past the budget cap (never when it is 0).
function Ctx:over(cap)
  local ms = self.caps[cap] or 0
  return ms > 0 and (core.now() - self.started) * 1000 >= ms
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

-- Run a native tool for a pack tool: res, or nil, "CODE: message", CODE.
-- It goes through the workspace like any call (schema, policies, caps).
function Ctx:call(name, args)
  return self.ws:call_native(name, args, self.hooks, self.via or self.tool.name)
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
  local msg = errors.message(code, path, detail)
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

-- The same, for operations that change things: the name itself (no final
-- link followed); refuses read-only roots (the innermost root's mode).
function Ctx:resolve_write(path)
  local h, rel, info = self:open(path, "write", true)
  if not h then return nil, rel, info end
  if info.readonly then return self:fail("READ_ONLY_ROOT", path) end
  if self.tool.reads then
    -- an edit reads the file and shows parts of it (its diff, the nearest
    -- line of a miss): what a read of it would be denied is not edited
    local r, rmsg, rcode = self:open(path, "read", true)
    if not r then return nil, rmsg, rcode end
  end
  if info.dangling then
    return self:fail("POLICY_DENIED", path, "a symlink on the way leads to nothing; creating through links is refused")
  end
  if self.tool.records_undo then
    -- a change undo_edit could not take back is not made: a shared undo
    -- store (the deployment's state store) must answer first
    local ok, umsg, ucode = require("burrow.toolkit.undo").ready(self, h, rel)
    if not ok then
      return self:fail(ucode, path, ("the shared undo store (the deployment's state store) does not answer (%s); "
        .. "nothing was changed, so undo_edit can still take back your earlier changes; retry"):format(umsg))
    end
  end
  return h, rel, info
end

--- The size the core will write, once it knows it (an edit's placed text,
-- each replacement counted; the content undo_edit restores): the policies
-- are asked again about the object of arg, op write, with commit = true and
-- that size. true, or nil, message, code (nothing is written then).
function Ctx:commit(arg, bytes, charged, at)
  -- at: the path itself, for a tool whose paths are not top-level
  -- arguments (edit_files' files[i].path)
  local path = at or self.args[arg or "path"]
  local j = type(path) == "string" and self.judged[path .. "\0n"]
  if not (j and j.h) then
    return nil, errors.message("EIO", tostring(path), "commit of an object the call did not open"), "EIO"
  end
  local req = self:request(path, "write", j.info, arg or "path")
  req.size, req.commit, req.charged = bytes, true, charged
  return decide(self, req)
end

--- The bytes a write makes when they are not the size the call was judged
-- with (a charset's encoding of the content): the policies are asked again,
-- as a commit with that size and `charged`, the size judged at the call
-- (quotas charge the difference). true when nothing differs, or the
-- commit's answer.
function Ctx:recount(arg, bytes)
  local judged = self.sizes and self.sizes[arg or "path"]
  if judged == bytes then return true end
  return self:commit(arg, bytes, judged)
end

-- Where a path leads, for bookkeeping only (a pack's read-before-edit
-- record, a root's mode): info as ctx:open gives it, or nil, message,
-- code. Nothing is judged and no handle is kept: use ctx:resolve to act.
function Ctx:locate(path, nofollow)
  local idx, rel, code = self.roots:map(path)
  if not idx then return self:fail(code, path, rel) end
  local h, info, hcode = self.roots:handle(idx, rel, nofollow)
  if not h then return self:fail(hcode, path, info) end
  h:close()
  local ri = self.roots:info(info.root)
  info.mount, info.lexical = ri.mount, rel
  return info
end

--- The connection's own table for a pack or a tool (key: its name): what
-- it keeps between calls (claude_code's read-before-write record). One
-- per session, so no session sees another's.
function Ctx:state(key)
  local packs = self.session.packs
  if not packs then packs = {}; self.session.packs = packs end
  local t = packs[key]
  if not t then t = {}; packs[key] = t end
  return t
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
local function tree(names)
  return function(t, k)
    if not names[k] then return nil end
    setmetatable(Ctx, nil)
    setmetatable(context, nil)
    require("burrow.toolkit.context_tree")(context, Ctx, decide)
    return rawget(t, k)
  end
end
setmetatable(Ctx, { __index = tree(context.TREE.Ctx) })
setmetatable(context, { __index = tree(context.TREE.context) })

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

-- True once the client cancelled the call in flight.
function Ctx:cancelled()
  return self.hooks.cancelled and self.hooks.cancelled() or false
end

-- Wrap file text in the untrusted-content boundary (cap untrusted_boundary):
-- the model is told to treat what is inside as data, and a closing tag in
-- the file itself is escaped so the content cannot end the block early.
-- opts.workspace and opts.op replace the mount and the tool's name (helix
-- names its workspace and says op="read_file" under its prefixed names).
local TAG = "workspace_tool_result"
function Ctx:untrusted(text, path, opts)
  opts = opts or {}
  return context.untrusted(self.roots, text, path, opts.op or self.tool.name, opts.workspace)
end

--- The same without a call's ctx (resources/read, a render): roots the
-- path maps into (for the workspace attribute), op the operation named.
function context.untrusted(roots, text, path, op, workspace)
  local idx = roots:map(path)
  local info = idx and roots:info(idx) or { mount = "" }
  local function attr(s) return (tostring(s):gsub("[&\"<>]", { ["&"] = "&amp;", ['"'] = "&quot;", ["<"] = "&lt;", [">"] = "&gt;" })) end
  local body = text:gsub("</" .. TAG .. ">", "<\\/" .. TAG .. ">")
  return ('<%s untrusted="true" workspace="%s" op="%s" ref="%s">\n%s</%s>\n')
    :format(TAG, attr(workspace or info.mount), attr(op), attr(path), body, TAG)
end

-- A staged subtree's progress (roots:stage_*'s progress option, called
-- every 1024 entries): "VERB N entries" to a client that asked for
-- progress, and a look at the call's cancel (ctx:cancelled, as grep's walk
-- looks: where a call long enough becomes a task, and where a task
-- cancelled through the store, on any instance, stops the staging).
function Ctx:tree_progress(verb)
  return function(n)
    if self.hooks.progress then self:progress(n, nil, ("%s %d entries"):format(verb, n)) end
    return self:cancelled()
  end
end

-- Report progress to a client that asked for it (MCP progressToken).
function Ctx:progress(done, total, message)
  if self.hooks.progress then self.hooks.progress(done, total, message) end
end

-- MCP tasks (2026-07-28, a client that declared the extension, a tool
-- whose table says task = "optional" or "required"): the call goes on as a
-- task, its client answered now with the task and given the result when
-- it asks (burrow.mcp.tasks). True once it is a task; false when it cannot be
-- one (the call runs on as a plain call).
function Ctx:task()
  return self.hooks.task and self.hooks.task() or false
end

-- Wait seconds (a tool waiting on something outside), looking at the
-- call's cancel every 50 ms: true when the time passed, false when the
-- call was cancelled.
function Ctx:wait(seconds)
  local until_t = core.now() + seconds
  while true do
    if self:cancelled() then return false end
    local left = until_t - core.now()
    if left <= 0 then return true end
    core.sleep(math.min(left, 0.05))
  end
end

-- Ask the MCP client: method "elicitation/create" (a form for its user),
-- "sampling/createMessage" (its model) or "roots/list", with MCP's params
-- for it. In a session, a request to the client, waited for; in MCP
-- 2026-07-28, nil and "input_required" the first time (return at once: the
-- call's answer asks the client, and the call runs again with the answer),
-- the answer when it runs again. key names the question within the call
-- (the same key, the same question). nil and why when the client cannot be
-- asked (it declared no such capability; outside MCP).
function Ctx:ask(key, method, params)
  if not self.hooks.ask then return nil, "this caller cannot be asked (outside MCP)" end
  return self.hooks.ask(key, method, params)
end

-- A log line for the client (MCP notifications/message, logger "burrow",
-- at or above the level it asked for; nothing when it asked for none, or
-- outside MCP). level: debug, info, notice, warning, error, critical,
-- alert, emergency; fields: more facts in its data.
function Ctx:log(level, message, fields)
  if self.hooks.log then self.hooks.log(level, message, fields) end
end

return context
