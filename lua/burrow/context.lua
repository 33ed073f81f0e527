-- burrow.context: what a tool handler gets as ctx: the caps, path
-- resolution onto roots with agent-facing error messages, and the
-- helpers every tool shares.

local errors = require "burrow.errors"

local context = {}
local Ctx = {}
Ctx.__index = Ctx

function context.new(ws, tool, hooks, via)
  return setmetatable({
    ws = ws,
    roots = ws.roots,
    caps = ws.caps,
    tool = tool,
    hooks = hooks or {},
    via = via, -- the pack tool this native call runs for
  }, Ctx)
end

-- Run a native tool for a pack tool: res, or nil, "CODE: message", CODE.
-- It goes through the workspace like any call (schema, policies, caps).
function Ctx:call(name, args)
  return self.ws:call_native(name, args, self.hooks, self.via or self.tool.name)
end

-- nil, "CODE: message", CODE for the agent's path.
function Ctx:fail(code, path, detail)
  if code == "OUTSIDE_ROOT" and (detail == nil or detail == "") then
    local m = {}
    for _, r in ipairs(self.ws:mounts()) do m[#m + 1] = r.mount end
    detail = "allowed: " .. table.concat(m, ", ")
  end
  return nil, errors.message(code, path, detail), code
end

-- Map an agent path onto a root: index, relative path, root info.
function Ctx:resolve(path)
  local idx, rel, code = self.roots:map(path)
  if not idx then return self:fail(code, path, rel) end
  return idx, rel, self.roots:info(idx)
end

-- The same, for operations that change things: refuses read-only roots.
function Ctx:resolve_write(path)
  local idx, rel, info = self:resolve(path)
  if not idx then return nil, rel, info end
  if info.readonly then return self:fail("READ_ONLY_ROOT", path) end
  return idx, rel, info
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
  local info = select(3, self:resolve(path)) or { mount = "" }
  local function attr(s) return (tostring(s):gsub("[&\"<>]", { ["&"] = "&amp;", ['"'] = "&quot;", ["<"] = "&lt;", [">"] = "&gt;" })) end
  local body = text:gsub("</" .. TAG .. ">", "<\\/" .. TAG .. ">")
  return ('<%s untrusted="true" workspace="%s" op="%s" ref="%s">\n%s</%s>\n')
    :format(TAG, attr(opts.workspace or info.mount), attr(opts.op or self.tool.name), attr(path), body, TAG)
end

-- Report progress to a client that asked for it (MCP progressToken).
function Ctx:progress(done, total, message)
  if self.hooks.progress then self.hooks.progress(done, total, message) end
end

return context
