-- burrow.workspace.later: the Workspace's methods that neither a `burrow
-- call` nor a start to the initialize answer runs: ws:call (the tables of
-- ws:run's result), ws:call_native (a pack's ctx:call), ws:render,
-- ws:tools, the calls that do not block (ws:submit, fd, poll, cancel,
-- answer, on_ask) and the watches. burrow.open's file (burrow/init.lua)
-- puts a stand-in under each of these names that requires this file and
-- installs them with its first call (docs/benchmarks.md, Start-up):
-- later.install(Workspace, check_open). And burrow.charsets's check of a
-- list (later.charsets(list, max)): burrow.open without opts.charsets
-- runs none of it.

local core = require "burrow.core"
local registry = require "burrow.workspace.registry"

local later = {}

function later.install(Workspace, check_open)

  local function calls() return require "burrow.workspace.invoke" end

  --- Call a tool: the result table, or nil, "CODE: message", CODE, details
  -- (a table of machine-readable facts, or nil: docs/tools.md "Errors")[,
  -- policy_error] (a policy's own error, when one failed: the agent is told
  -- only "denied by policy NAME (policy error)").
  -- With a callback instead of hooks (luv's convention, as every Lua's
  -- burrow has it: lua/burrow/bridge.lua), the call is submitted: a handle
  -- returns at once (handle.id, handle:cancel()) and cb(res, msg, code)
  -- runs inside a later ws:poll().
  function Workspace:call(name, args, hooks)
    check_open(self)
    if type(name) ~= "string" then error("ws:call: tool name must be a string", 2) end
    if type(hooks) == "function" then
      local id, msg, code = self:submit(name, args, hooks)
      if not id then return nil, msg, code end
      return setmetatable({ ws = self, id = id }, require("burrow.bridge").Call)
    end
    if hooks ~= nil and type(hooks) ~= "table" then
      error("ws:call: the third argument is hooks (a table) or a callback function", 2)
    end
    return calls().tables(self:run(name, args, hooks))
  end

  --- A native tool called for a pack tool (ctx:call): the same schema check,
  -- policies, caps and audit as a direct call; the policy request names the
  -- native tool and carries via = the pack tool.
  function Workspace:call_native(name, args, hooks, via)
    check_open(self)
    local natives = self.natives
    if not natives[name] then
      local t, err = registry.native_tool(name)
      if not t then error(("pack tool %s: native tool %s: %s"):format(tostring(via), name, err), 2) end
      natives[name] = t
    end
    local inv = calls()
    return inv.tables(inv.run(self, natives[name], args, hooks, via)) -- the pack's Lua reads them
  end

  --- Text and structured parts of a result, as MCP shows them, and the
  -- result's _meta when the tool gives one (read_file: its validator).
  function Workspace:render(name, res)
    local tool = self.tool_by_name[name]
    if tool and tool.render then return tool.render(res) end
    return core.json.encode(require("burrow.toolkit.printer").wire(res)), res
  end

  --- The tool list: MCP-shaped by default; {format = "openai"|"anthropic"}.
  function Workspace:tools(opts)
    check_open(self)
    if not self.tool_list then self.tool_list = registry.list(self.tool_by_name) end
    return registry.format(self.tool_list, opts and opts.format)
  end

  --- Calls that do not block (lua/burrow/workspace/async.lua, docs/embedding.md):
  -- submit(tool, args, function(res, msg, code) end) -> id; fd() -> an
  -- eventfd for the caller's loop; poll() runs the callbacks; cancel(id).
  function Workspace:submit(tool, args, cb)
    check_open(self)
    return require("burrow.workspace.async").submit(self, tool, args, cb)
  end

  function Workspace:fd()
    check_open(self)
    return require("burrow.workspace.async").fd(self)
  end

  function Workspace:poll()
    check_open(self)
    return require("burrow.workspace.async").poll(self)
  end

  function Workspace:cancel(id)
    check_open(self)
    return require("burrow.workspace.async").cancel(self, id)
  end

  --- The approval hook of a policy's "ask", for ws:call and ws:submit alike
  -- (burrow.open's `approve`): fn(req, reason) -> true | false[, why]; nil
  -- removes it (asks denied). For a submitted call it runs inside ws:poll,
  -- req = {id =, tool =, operation =, path =, reason =}, and may return
  -- "later" to answer with ws:answer(req.id, allowed[, why]); the call waits
  -- at most timeout_ms (default 300000), then is denied.
  function Workspace:on_ask(fn, timeout_ms)
    check_open(self)
    if fn ~= nil and type(fn) ~= "function" then error("ws:on_ask: expected a function or nil", 2) end
    if timeout_ms ~= nil and math.type(timeout_ms) ~= "integer" then error("ws:on_ask: timeout_ms must be an integer", 2) end
    self.approve, self.approve_timeout_ms = fn, timeout_ms
    require("burrow.workspace.async").set_approver(self)
  end

  --- Answer a submitted call's question later (its hook returned "later"):
  -- true if the call was waiting for it.
  function Workspace:answer(id, allowed, why)
    check_open(self)
    return require("burrow.workspace.async").answer(self, id, allowed, why)
  end

  --- Watch a file or a directory (judged as a read by the policies):
  -- fn({path =, changed =, list =, gone =}) runs from ws:poll_watch, at
  -- most once per watch_interval_ms (cap) whatever the number of changes.
  -- Returns a watch with :close(), or nil, "CODE: message", CODE.
  local WatchHandle = { __name = "burrow.Watch" }
  WatchHandle.__index = WatchHandle
  function WatchHandle:close()
    if self.set and self.id then self.set:remove(self.id) end
    self.id = nil
  end
  WatchHandle.__close = WatchHandle.close

  function Workspace:watch(path, fn)
    check_open(self)
    if not self.watches then
      self.watches = require("burrow.workspace.watch").new {
        max = self.caps.max_watches, interval_ms = self.caps.watch_interval_ms,
        follow = self.changes and { state = self.state, tenant = self.session.tenant or "" } or nil }
    end
    local id, msg, code = self.watches:add(self, path, fn, self.session)
    if not id then return nil, msg, code end
    return setmetatable({ set = self.watches, id = id, path = path }, WatchHandle)
  end

  --- Run the callbacks of the watches whose changes are due; returns how
  -- many ran and the seconds until a coalesced change is due (nil if none).
  function Workspace:poll_watch()
    check_open(self)
    if not self.watches then return 0, nil end
    return self.watches:poll()
  end

  --- The fd that turns readable when a watch has events (for an engine's
  -- poll loop; call ws:poll_watch then). nil before the first ws:watch.
  function Workspace:watch_fd()
    check_open(self)
    return self.watches and self.watches:fd() or nil
  end
end

-- burrow.charsets(list) for a list (nil is answered there)
function later.charsets(list, max)
  if type(list) ~= "table" or #list == 0 then
    return nil, "charsets must list at least one charset, e.g. {\"utf-8\", \"windows-1252\"}"
  end
  if #list > max then return nil, ("charsets lists %d charsets; at most %d"):format(#list, max) end
  local names = {}
  for i, name in ipairs(list) do
    if type(name) ~= "string" or not name:match("^[%w][%w_.:%-]*$") or #name > 40 then
      return nil, ("charsets[%d] must be a charset's name, not %s"):format(i, type(name) == "string" and ("%q"):format(name) or type(name)), i
    end
    name = name:lower()
    if not core.charset_fallback_ok(name) then
      local known = core.charset_decode(name, "") ~= nil
      return nil, known and ("charsets[%d]: %s cannot be a fallback: it does not read ASCII as ASCII (UTF-16 and UTF-32 are told by their BOM or NULs)"):format(i, name)
        or ("charsets[%d]: %s is not a charset this system knows (iconv -l lists them: windows-1252, iso-8859-15, shift_jis, ...)"):format(i, name), i
    end
    names[i] = name
  end
  return table.concat(names, ",")
end

return later
