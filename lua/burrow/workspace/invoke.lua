-- burrow.workspace.invoke: one call of a tool on a workspace, as
-- ws:run, ws:call and a pack's ctx:call make it: the arguments checked,
-- each path resolved and judged once (ws:decide: the policies, an ask
-- put to the approval hook), the tool run, burrow's own changes told, the
-- audit written, the metrics counted; a read-only call that met EAGAIN
-- run again. burrow.open (init.lua) requires it with the first call: a
-- start that answers initialize makes none (docs/benchmarks.md, Start-up).

local core = require "burrow.core"
local context = require "burrow.toolkit.context"
local registry = require "burrow.workspace.registry"
local policy = require "burrow.policy"

local invoke = {}

-- burrow.base.errors: the words of a refusal, required with the first
-- (a call that is allowed words nothing)
local function errors() return require "burrow.base.errors" end

local function fail(code, msg)
  return nil, code .. ": " .. msg, code
end

--- Ask the policies about one request: nil if allowed, else message, code.
-- "ask" goes to the approval hook (MCP: elicitation). Sets req.decision
-- and req.reason for the audit.
function invoke.decide(self, req, hooks)
  -- a read-only principal (an OAuth token of the read scope: burrow.mcp.session)
  -- reads and lists only, whichever tool, pack or prompt asks; before the
  -- policies, which cannot turn it into an allow
  local session = hooks and hooks.session
  if session and session.read_only and req.operation ~= "read" and req.operation ~= "list" then
    req.decision, req.reason = "deny", "the token's OAuth scope allows reading only"
    return errors().message("POLICY_DENIED", req.path, req.reason), "POLICY_DENIED",
      { path = req.path, operation = req.operation, scope = "read" }
  end
  local decision, reason, by, detail, own_words, outage = self.policies:check(req)
  if detail then -- a policy's error: the operator reads it, the agent does not
    io.stderr:write("burrow: ", detail, "\n")
    if self.audit and self.audit.fh then
      self.audit:write { time = os.date("!%Y-%m-%dT%H:%M:%SZ"), event = "policy_error", policy = by,
        tool = req.tool, operation = req.operation, path = req.path, error = detail }
    end
  end
  req.policy_error = detail
  -- which policy denied (a subtree's refusal names it, not the entry); an
  -- ask that ends in a refusal is worded as the approval's
  req.policy = decision ~= "ask" and by or nil
  local approval -- how an "ask" ended, for the details and the audit
  if decision == "ask" then
    local approve = hooks and hooks.approve or self.approve
    if req.member then
      reason, decision = "approval needed (" .. reason .. "); entries of a walk are not asked about", "deny"
      approval = "not_asked"
    elseif not approve then
      reason = "approval needed (" .. reason .. ") but this client cannot be asked"
      decision, approval = "deny", "unavailable"
    else
      local ok, granted, why = pcall(approve, req, reason)
      if ok and granted == "later" then -- only a submitted call can wait (ws:submit)
        ok, granted, why = true, false, "an answer later is for submitted calls only"
      end
      if not (ok and granted) then
        reason = ("not approved (%s)%s"):format(reason, ok and why and ": " .. tostring(why) or "")
        decision, approval = "deny", "denied"
      else -- the audit says who approved it, and how
        approval = "approved"
        req.approved_by = hooks and hooks.approve and (hooks.approved_by or "the call's approver")
          or "the workspace's approve hook (burrow.open / ws:on_ask)"
      end
    end
  end
  req.decision, req.reason = decision == "deny" and "deny" or "allow", reason
  req.approval = approval -- how an ask ended (the metrics count it)
  if decision == "deny" then
    -- details: facts a program decides from (docs/tools.md "Errors"); the
    -- policy's own error text stays out of them, as out of the message
    -- "x: denied by policy mine", not "x: denied by policy: denied by policy mine"
    -- a policy that met a state store not answering and refused: the
    -- outage's code (retry later), the policy's reason still said
    local code = outage or "POLICY_DENIED"
    local msg = own_words and errors().said(code, req.path, reason)
      or errors().message(code, req.path, reason)
    return msg, code,
      { path = req.path, operation = req.operation, policy = by, approval = approval,
        policy_error = detail and true or nil }
  end
end

local function run_tool(self, ctx, tool, args)
  local ok, res, msg, code, details = xpcall(tool.handler, debug.traceback, ctx, args)
  if not ok then
    io.stderr:write(("burrow: tool %s failed: %s\n"):format(tool.name, res))
    if ctx.hooks then ctx.hooks.internal_error = true end -- not the tool's answer: burrow's failure (a task fails)
    return fail("EIO", ("internal error in tool %s; see the server log"):format(tool.name))
  end
  -- a failure passed on as nil, msg, code: its details from ctx:fail
  if res == nil and details == nil and ctx.failed and ctx.failed.msg == msg then details = ctx.failed.details end
  return res, msg, code, details
end

-- What a walk left out, counted in the result: summed into the hooks
-- for the MCP server (_meta burrow/skipped_policy, its log).
local SKIP_COUNTS = { "skipped_policy", "skipped_binary_count", "skipped_size_count", "unreadable" }

-- burrow's own changes told to every instance sharing the state store
-- (changes.c), from the one place every call's judged objects are known:
-- each (mount, in-root path) the call wrote or removed, once. Watches hear
-- them as they hear inotify (burrow.workspace.watch follows the store). A change
-- that cannot be told is not the call's failure: it happened.
local function tell_changes(self, ctx, args)
  if args.dry_run == true then return end
  local told = {}
  for _, req in ipairs(ctx.reqs) do
    local op = req.operation
    if (op == "write" or op == "delete") and not req.member and not req.unmapped and req.decision ~= "deny"
        and req.root and req.resolved then
      local k = op .. "\0" .. req.root .. "\0" .. req.resolved
      if not told[k] then
        told[k] = true
        self.state:change(ctx.session.tenant or "", req.root, req.resolved, op == "delete")
      end
    end
  end
end

-- Codes with which the core or the sandbox refused a call: audited as deny.
local REFUSALS = { OUTSIDE_ROOT = true, READ_ONLY_ROOT = true, POLICY_DENIED = true, EACCES = true }

-- The metrics (ws.metrics: a sink burrow.transport.http's workers set, httpmetrics.c)
-- of one call, from what its audit lines say: each policy's denial and
-- each ask's end, and the agent's call itself (not the native calls a
-- pack tool makes for it) by tool, outcome and code, and its seconds.
local function observe(m, tool, via, reqs, code, started)
  for _, req in ipairs(reqs) do
    if req.decision == "deny" and req.policy then m:denial(req.policy) end
    if req.approval then m:approval(req.approval) end
  end
  if via then return end
  local outcome = code == "OK" and "ok" or (REFUSALS[code] and "denied" or "error")
  m:call(tool.name, outcome, code, core.now() - started)
end

-- Validate, resolve and judge each path once, run, audit: one call of a
-- tool table. via: the pack tool a native call runs for (ctx:call).
local function invoke_once(self, tool, args, hooks, via)
  args = args or {}
  local started = core.now()
  local err, field = registry.check_args(tool, args)
  if err then
    local _, msg, code = fail("INVALID_ARGUMENT", err)
    if self.metrics and not (hooks and hooks.unaudited) then observe(self.metrics, tool, via, {}, code, started) end
    return nil, msg, code, { argument = field }
  end
  local ctx = context.new(self, tool, hooks, via, args)
  local sizes, serr = policy.sizes(args)
  if not sizes then return fail("INVALID_ARGUMENT", serr) end
  -- a tool whose size only the core knows asks again with it (ctx:commit)
  ctx.sizes = not tool.commit_size and sizes or {}
  local res, msg, code, details
  -- {from =, to =, ops =}: a directory taken whole is staged and each of
  -- its entries judged by the tool (ctx:settle); a single file's size is
  -- known here, and a copy writes it
  local sub = tool.subtree
  for _, spec in ipairs(context.path_specs(tool, args)) do
    if sub and sub.to and spec.arg == sub.to and sub.ops[1] == "read" then
      local j = ctx.by_arg[sub.from]
      if j and j.info and j.info.type == "file" then ctx.sizes[sub.to] = j.info.size end
    end
    local h, m, c, d = ctx:open(spec.path, spec.op, spec.nofollow, spec.arg)
    if not h and c == "POLICY_DENIED" then
      res, msg, code, details = nil, m, c, d
      break
    end -- other failures: the tool words them when it opens the path
  end
  if not msg then res, msg, code, details = run_tool(self, ctx, tool, args)
  elseif details == nil and ctx.failed and ctx.failed.msg == msg then details = ctx.failed.details end
  ctx:close()
  if res and hooks then -- for the envelope (MCP _meta) and the client's log
    for _, k in ipairs(SKIP_COUNTS) do
      if type(res[k]) == "number" then hooks[k] = (hooks[k] or 0) + res[k] end
    end
  end
  local outcome = {
    code = res and "OK" or code,
    bytes = res and (res.bytes or res.size) or nil,
    duration_ms = math.floor((core.now() - started) * 1e6) / 1e3,
  }
  -- one line per agent call: none for a read burrow makes for itself (an
  -- approval's content hash, hooks.unaudited), nor for a call stopped at
  -- a question for its client (MCP 2026-07-28's input_required), whose
  -- retry is the same call and writes its line
  local quiet = hooks ~= nil and hooks.unaudited == true
  for _, req in ipairs(ctx.reqs) do quiet = quiet or req.input_required == true end
  if res and self.tells then tell_changes(self, ctx, args) end
  for _, req in ipairs(quiet and {} or ctx.reqs) do
    if not req.member or req.decision == "deny" then
      outcome.decision, outcome.reason = req.decision or "allow", req.reason
      if outcome.decision == "allow" and REFUSALS[outcome.code] then
        outcome.decision, outcome.reason = "deny", msg
      end
      for _, rec in ipairs(self.policies:after(req, outcome)) do self.audit:write(rec) end
    end
  end
  if self.metrics and not quiet then observe(self.metrics, tool, via, ctx.reqs, outcome.code, started) end
  if res == nil then
    -- a policy's own error text: for the embedder and the operator (a fifth
    -- value), never in the message or the details the agent sees
    for _, req in ipairs(ctx.reqs) do
      if req.policy_error then return nil, msg, code, details, req.policy_error end
    end
    if details == nil then return nil, msg, code end -- three values, as before details existed
    return nil, msg, code, details
  end
  return res
end

-- EAGAIN: the object changed between its judgement and its use (say, a
-- file another process replaced meanwhile). A read-only call runs again,
-- resolved and judged again from the start, at most twice more; a call
-- that writes is left to the agent, which sees EAGAIN.
local EAGAIN_TRIES = 3
local attempt
-- (the results pass through as they are, as many as invoke gave, with no
-- table made for them)
local function settle(self, tool, args, hooks, via, try, ...)
  if select(3, ...) == "EAGAIN" and try < EAGAIN_TRIES and tool.annotations ~= nil
      and tool.annotations.readOnlyHint == true then
    return attempt(self, tool, args, hooks, via, try + 1)
  end
  return ...
end
function attempt(self, tool, args, hooks, via, try)
  return settle(self, tool, args, hooks, via, try, invoke_once(self, tool, args, hooks, via))
end
function invoke.run(self, tool, args, hooks, via)
  return attempt(self, tool, args, hooks, via, 1)
end

-- A result leaving for Lua code: held sets made tables (burrow.toolkit.printer),
-- the other values passed on as they came.
function invoke.tables(res, ...)
  -- a result without a metatable holds no set (printer.holding): as it is,
  -- without loading the printer
  if res == nil or getmetatable(res) == nil then return res, ... end
  local t, msg, code = require("burrow.toolkit.printer").tables(res)
  if t == nil then return nil, msg, code end -- a held page that could not be written
  return t, ...
end

return invoke
