-- burrow.toolkit.context_rest: the part of ctx a call on one path that
-- only reads it (stat) does not use, loaded with the first of the names
-- context.REST lists (context.lua): a write's resolve and commit
-- (resolve_write, commit, recount), the call's budgets (ms_left, over),
-- what it hears from and says to its client (cancelled, progress,
-- tree_progress, task, wait, ask, log), what a pack's tool uses (call,
-- state, locate) and the untrusted-content boundary (untrusted). Installs
-- them in context and Ctx; decide is context.lua's (the policies asked
-- about one request, kept for the audit).

local core = require "burrow.core"

return function(context, Ctx, decide)
  local function errors() return require "burrow.base.errors" end

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

  -- Run a native tool for a pack tool: res, or nil, "CODE: message", CODE.
  -- It goes through the workspace like any call (schema, policies, caps).
  function Ctx:call(name, args)
    return self.ws:call_native(name, args, self.hooks, self.via or self.tool.name)
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
      return nil, errors().message("EIO", tostring(path), "commit of an object the call did not open"), "EIO"
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
end
