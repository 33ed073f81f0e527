-- burrow.mcp.client_roots: MCP roots from the client. When the client offers
-- the roots capability the server asks roots/list after initialization and
-- on notifications/roots/list_changed. With roots_from_client: true in the
-- config (off by default) the session then serves exactly the client's
-- folders within the configured roots (session.scope, the Server's own
-- record, handed to each call and checked in ctx:open on each resolved
-- object; other sessions of the tenant keep theirs); a client folder outside every configured root is
-- ignored with a log line. Without it, the answer is only logged.
--
-- The roots stay the configured ones: policies keep judging in-root paths
-- as they are written for them, so a client cannot re-anchor a rule such
-- as "private/**" by naming private/ as its root.

local resources = require "burrow.mcp.resources"

local client_roots = {}

local function note(self, level, msg, fields)
  io.stderr:write("burrow: ", msg, "\n")
  self:log(level, msg, fields)
end

-- The scope entries for one client folder: where it lies in a configured
-- root (resolved there: a link in its path is followed only within the
-- root), or the configured roots that lie inside it.
local function entries_for(ws, path)
  local idx, rel = ws.roots:map(path)
  if idx then
    local h, info = ws.roots:handle(idx, rel, false)
    if not h then return {} end
    h:close()
    if info.type ~= "dir" then return {} end
    local mount = ws.roots:info(info.root).mount
    return { { root = info.root, rel = info.rel,
      path = info.rel == "." and mount or (mount == "/" and "" or mount) .. "/" .. info.rel } }
  end
  local out, pre = {}, path:gsub("/+$", "") .. "/"
  for i, r in ipairs(ws:mounts()) do
    if r.mount:sub(1, #pre) == pre or (r.alias and r.alias:sub(1, #pre) == pre) then
      out[#out + 1] = { root = i, rel = ".", path = r.mount }
    end
  end
  return out
end

--- The scope of the client's roots list in ws (and log lines for the
-- ignored ones).
function client_roots.scope(self, ws, list)
  local scope = {}
  for _, r in ipairs(list) do
    local uri = type(r) == "table" and r.uri
    local path, why = resources.path(uri)
    if not path then
      note(self, "warning", ("client root %s ignored: %s"):format(tostring(uri), why))
    else
      local got = entries_for(ws, path)
      if #got == 0 then
        note(self, "warning", ("client root %s ignored: outside every configured root (or not a directory)"):format(uri))
      end
      for _, e in ipairs(got) do scope[#scope + 1] = e end
    end
  end
  return scope
end

--- Apply the roots the client last named to the current workspace.
function client_roots.apply(self)
  local list = self.session.client_root_list
  if not (list and self.ws.roots_from_client) then return end
  self.session.scope = client_roots.scope(self, self.ws, list)
  local names = {}
  for _, s in ipairs(self.session.scope) do names[#names + 1] = s.path end
  note(self, "info", ("serving the client's roots: %s"):format(#names > 0 and table.concat(names, ", ") or "none"))
  resources.resubscribe(self)
  self:notify("notifications/resources/list_changed")
end

--- The client's answer to roots/list (mcp.replies.roots).
function client_roots.on_list(self, msg)
  if type(msg.result) ~= "table" or type(msg.result.roots) ~= "table" then
    note(self, "warning", "roots/list failed: " .. tostring(type(msg.error) == "table" and msg.error.message or "no roots in the answer"))
    return
  end
  if not self.ws.roots_from_client then
    note(self, "info", ("the client offered %d root(s); roots_from_client is off: serving the configured roots")
      :format(#msg.result.roots))
    return
  end
  self.session.client_root_list = msg.result.roots
  client_roots.apply(self)
end

--- notifications/initialized, notifications/roots/list_changed: ask.
function client_roots.ask(self)
  if not (self.session.client_caps and self.session.client_caps.roots) then return end
  self:request("roots/list", {}, "roots")
end

return client_roots
