-- burrow.resources: MCP's resources over the workspace's files, and
-- subscriptions to them. Nothing here reaches a file by itself: listing is
-- the glob tool (the policies' rules in the walker, check() per entry:
-- what a read would be denied is not listed), reading is the read_file
-- tool, and a subscription is a watch judged as a read (burrow.watch). A
-- URI only becomes the absolute path those tools take.
--
--   file:///abs/path   an absolute path under a root's mount, each byte
--                      outside [A-Za-z0-9-._~/] percent-encoded

local core = require "burrow.core"
local json = core.json
-- the operator's resources (burrow.operator_resources), required with the
-- first use (a start that answers initialize needs none)
local function operator() return require "burrow.operator_resources" end

local resources = {}

resources.PAGE = 100 -- resources per resources/list page

-- MIME types by extension; text/plain or application/octet-stream else.
local MIME = {
  md = "text/markdown", txt = "text/plain", c = "text/x-c", h = "text/x-c", lua = "text/x-lua",
  py = "text/x-python", js = "text/javascript", mjs = "text/javascript", ts = "text/x-typescript",
  json = "application/json", yaml = "application/yaml", yml = "application/yaml", toml = "application/toml",
  html = "text/html", css = "text/css", xml = "application/xml", csv = "text/csv", sh = "text/x-shellscript",
  png = "image/png", jpg = "image/jpeg", jpeg = "image/jpeg", gif = "image/gif", webp = "image/webp",
  svg = "image/svg+xml", pdf = "application/pdf", zip = "application/zip", gz = "application/gzip",
  ipynb = "application/x-ipynb+json", bin = "application/octet-stream",
}

function resources.mime(path, binary)
  local ext = path:match("%.([%w]+)$")
  return MIME[ext and ext:lower() or ""] or (binary and "application/octet-stream" or "text/plain")
end

function resources.uri(path)
  return "file://" .. path:gsub("[^%w%-%._~/]", function(c) return ("%%%02X"):format(c:byte()) end)
end

--- The absolute path a file:// URI names, or nil, why. Strict: the
-- scheme, an empty or "localhost" authority, an absolute path, no query
-- or fragment, every "%" followed by two hex digits, no NUL.
function resources.path(uri)
  if type(uri) ~= "string" then return nil, "uri must be a string" end
  local auth, p = uri:match("^file://([^/]*)(/.*)$")
  if not p then return nil, "not a file:// URI with an absolute path" end
  if auth ~= "" and auth:lower() ~= "localhost" then return nil, "a file:// URI names no other host" end
  if p:find("[?#]") then return nil, "a file:// URI here has no query or fragment" end
  for at in p:gmatch("()%%") do
    if not p:sub(at + 1, at + 2):match("^%x%x$") then return nil, "malformed percent-encoding" end
  end
  local path = p:gsub("%%(%x%x)", function(h) return string.char(tonumber(h, 16)) end)
  if path:find("\0", 1, true) then return nil, "a NUL byte in the path" end
  return path
end

-- The error answer of a refused URI: read_file's message and its code
-- (-32002 "resource not found" for a missing file, as MCP suggests).
local function refusal(msg, code, uri)
  return nil, code == "ENOENT" and -32002 or -32602, msg, { code = code, uri = uri }
end

-- The folders served to the session of Server self: the roots, or the
-- client's roots within them.
local function mounts(self)
  local out, scope = {}, self.session and self.session.scope
  if scope then
    for i, s in ipairs(scope) do out[i] = s.path end
    return out
  end
  for i, r in ipairs(self.ws:mounts()) do out[i] = r.mount end
  return out
end

-- The hooks of a call the resources methods make: the session's.
local function hooks_of(self)
  return { session = self.session }
end

-- "i:n": the n-th file (0-based) of root i.
local function cursor_of(s)
  if s == nil then return 1, 0 end
  if type(s) ~= "string" then return nil end
  local i, n = s:match("^(%d+):(%d+)$")
  i, n = tonumber(i), tonumber(n)
  if not i or i < 1 then return nil end
  return i, n
end

--- resources/list: the regular files of each root in path order, a page
-- at a time; each root lists at most max_entries (the glob tool's cap).
function resources.list(self, params)
  local ws = self.ws
  local ri, skip = cursor_of(params.cursor)
  local roots = mounts(self)
  if not ri or ri > #roots + 1 then return nil, -32602, "invalid cursor" end
  local page = json.array {}
  -- the operator's resources first, on the first page (at most operator.MAX)
  if params.cursor == nil then
    for _, r in ipairs(operator().list(ws.operator_resources)) do page[#page + 1] = r end
  end
  while ri <= #roots and #page < resources.PAGE do
    local want = math.min(skip + resources.PAGE - #page + 1, ws.caps.max_entries)
    local res = ws:call("glob", { pattern = "**", path = roots[ri], max_results = want }, hooks_of(self))
    local entries = res and res.entries or {}
    local i = skip + 1
    while entries[i] and #page < resources.PAGE do
      local e = entries[i]
      page[#page + 1] = { uri = resources.uri(e.path), name = e.path:sub(#roots[ri] + 2),
        mimeType = resources.mime(e.path), size = e.size }
      i = i + 1
    end
    if entries[i] and i <= want then
      return { resources = page, nextCursor = ("%d:%d"):format(ri, i - 1) }
    end
    ri, skip = ri + 1, 0
  end
  local out = { resources = page }
  if ri <= #roots then out.nextCursor = ("%d:0"):format(ri) end
  return out
end

function resources.templates(self)
  local list = json.array {}
  for _, t in ipairs(operator().templates(self.ws.operator_resources)) do list[#list + 1] = t end
  for _, m in ipairs(mounts(self)) do
    list[#list + 1] = { uriTemplate = resources.uri(m == "/" and "" or m) .. "/{+path}",
      name = m, title = "Files under " .. m, description = "A file under the workspace root " .. m }
  end
  return { resourceTemplates = list }
end

--- completion/complete for the path under a file template
-- (file:///MOUNT/{+path}): the entries of the folder the value names so
-- far whose names start with its last part, folders ending in "/", as
-- list_dir gives them (its caps, the policies, the session's scope).
function resources.complete(self, ref, argument)
  local values = require("burrow.scripted").values
  local res, code, msg = operator().complete(self.ws, ref.uri, argument, hooks_of(self))
  if res ~= false then return res, code, msg end
  local mount
  for _, m in ipairs(mounts(self)) do
    if resources.uri(m == "/" and "" or m) .. "/{+path}" == ref.uri then mount = m end
  end
  if not mount then return nil, -32602, ("Invalid params: no resource template %s"):format(tostring(ref.uri)) end
  if argument.name ~= "path" then return values {} end
  local dir, part = argument.value:match("^(.*)/([^/]*)$")
  if not dir then dir, part = "", argument.value end
  local base = mount == "/" and "" or mount
  local res = self.ws:call("list_dir", { path = dir == "" and (base == "" and "/" or base) or (base .. "/" .. dir) },
    hooks_of(self))
  local out = {}
  for _, e in ipairs(res and res.entries or {}) do
    if e.name:sub(1, #part) == part then
      out[#out + 1] = (dir == "" and "" or dir .. "/") .. e.name .. (e.type == "dir" and "/" or "")
    end
  end
  table.sort(out)
  return values(out)
end

-- The params._meta key a client presents the version it holds under.
local IF_NONE_MATCH = "burrow/if_none_match"
-- The key of a resource's version in the contents' _meta (the resource
-- operations strawman's, provisional; burrow.resource_ops).
resources.VERSION_KEY = "io.modelcontextprotocol/resource-version"

local function tag(mime) return core.sha256(mime):sub(8, 23) end

--- The version of the file at path whose bytes hash to hash (read_file's
-- content_hash): the hash, a dot, and the first 16 hex digits of the
-- SHA-256 of the mimeType the path's name gives (resources.mime(path)).
function resources.version(path, hash)
  return hash .. "." .. tag(resources.mime(path))
end

--- The content hash a version of ours names for a file at path, or nil
-- (another type's, malformed, not a string).
function resources.hash_of(path, version)
  if type(version) ~= "string" then return nil end
  local h, t = version:lower():match("^(sha256:%x+)%.(%x+)$")
  if h and #h == 71 and t == tag(resources.mime(path)) then return h end
  return nil
end

--- resources/read: read_file, raw bytes (base64); text when they are
-- UTF-8 without NUL in the first 8 KiB (read_file's binary test), a blob
-- otherwise. The contents' _meta.version is read_file's content_hash (the
-- bytes' sha256; mimeType follows from the URI and the bytes); a version
-- presented in params._meta["burrow/if_none_match"] that is still the
-- file's gets no contents, only _meta "burrow/not_modified" (read_file's
-- if_none_match: compared after the policies judged the read). ask: the
-- hook an operator resource's ctx:ask goes to.
function resources.read(self, params, ask)
  if type(params.uri) == "string" then -- the operator's (which may ask the client), else a file
    local hooks = hooks_of(self)
    hooks.ask = ask
    local res, code, msg, data = operator().read(self.ws, params.uri, hooks)
    if res ~= false then return res, code, msg, data end
  end
  local path, why = resources.path(params.uri)
  if not path then
    return nil, -32602, "Invalid params: " .. why, { uri = type(params.uri) == "string" and params.uri or nil }
  end
  local held = type(params._meta) == "table" and params._meta[IF_NONE_MATCH] or nil
  -- the content hash, or a resource version (which names one)
  held = type(held) == "string" and (resources.hash_of(path, held) or held) or nil
  local res, msg, code = self.ws:call("read_file", { path = path, encoding = "base64",
    if_none_match = held }, hooks_of(self))
  if not res then return refusal(msg, code, params.uri) end
  local version = resources.version(path, res.content_hash)
  if res.not_modified then
    return { contents = json.array {}, _meta = { ["burrow/not_modified"] = true, version = res.content_hash,
      [resources.VERSION_KEY] = version } }
  end
  local bytes = core.base64_decode(res.content)
  local binary = bytes:sub(1, 8192):find("\0", 1, true) or not utf8.len(bytes)
  local item = { uri = params.uri, mimeType = resources.mime(path, binary),
    _meta = { version = res.content_hash, [resources.VERSION_KEY] = version } }
  if binary then item.blob = res.content
  elseif self.ws.caps.untrusted_boundary then -- file text reaching the model: tagged as data
    item.text = require("burrow.context").untrusted(self.ws.roots, bytes, path, "resources/read")
  else item.text = bytes end
  return { contents = json.array { item } }
end

-- What changed, sent as the client asked: updated for the watched URI,
-- list_changed when a subscribed folder gained or lost entries (a file://
-- folder's: an operator resource's list does not change with its files).
local function notifier(self, uri)
  local files = resources.path(uri) ~= nil
  return function(ev)
    if ev.changed or ev.gone then self:notify("notifications/resources/updated", { uri = uri }) end
    if ev.list then
      self:notify("notifications/resources/updated", { uri = uri })
      if files then self:notify("notifications/resources/list_changed") end
    end
  end
end

-- The path a subscription to uri watches: a file:// URI's, or what an
-- operator resource is made from (its watch); nil, why for neither, and
-- true as a third value for an operator resource that watches nothing (a
-- subscription to it is taken and never reported: quiet).
local function watch_path(self, uri)
  local path, why = resources.path(uri)
  if path then return path end
  local op = type(uri) == "string" and operator().watch(self.ws, uri)
  if op then return op end
  if op == nil then return nil, "the operator resource watches nothing", true end
  return nil, why
end
resources.watch_path = watch_path

--- The session's watches in this Lua state, from another state's: the
-- published watcher wid and the subscriptions (uri -> watch id) it holds.
function resources.adopt(self, wid, subs)
  local w = core.watcher_find(wid)
  if not w then return end -- ended meanwhile: no subscription is left
  self.watches = require("burrow.watch").adopt(w)
  for uri, id in pairs(type(subs) == "table" and subs or {}) do
    local path = watch_path(self, uri)
    if path then
      self.watches:track(id, path, notifier(self, uri), self.ws, self.session)
      self.subs[uri] = id
    end
  end
end

--- The Server's file watches (made at the first subscription or listen):
-- its transport polls their fd (channel:watch) and calls resources.pump.
function resources.watcher(self)
  if not self.watches then
    self.watches = require("burrow.watch").new {
      max = self.ws.caps.max_watches, interval_ms = self.ws.caps.watch_interval_ms,
      budget = self.session and self.session.watch_budget,
      -- burrow's writes through every instance sharing the store (changes.c)
      follow = self.ws.changes and { state = self.ws.state, tenant = self.session and self.session.tenant or "" }
        or nil }
    self.channel:watch(self.watches:fd())
  end
  return self.watches
end

function resources.subscribe(self, params)
  local path, why = resources.path(params.uri)
  if not path then -- an operator resource: what it is made from, if it says
    local op = type(params.uri) == "string" and operator().watch(self.ws, params.uri)
    if op == false then return nil, -32602, "Invalid params: " .. why .. " nor an operator resource" end
    if op == nil then -- taken; nothing to watch, so never reported changed
      self.quiet_subs = self.quiet_subs or {}
      self.quiet_subs[params.uri] = true
      return {}
    end
    path = op
  end
  if self.subs[params.uri] then return {} end
  local id, msg, code = resources.watcher(self):add(self.ws, path, notifier(self, params.uri), self.session)
  if not id then return refusal(msg, code) end
  self.subs[params.uri] = id
  return {}
end

function resources.unsubscribe(self, params)
  if type(params.uri) ~= "string" then return nil, -32602, "Invalid params: uri must be a string" end
  if self.quiet_subs then self.quiet_subs[params.uri] = nil end
  local id = self.subs[params.uri]
  if id then
    self.watches:remove(id)
    self.subs[params.uri] = nil
  end
  return {}
end

--- The workspace changed (SIGHUP, client roots): every subscription is
-- judged again against it; those it refuses end, with a log line.
function resources.resubscribe(self)
  if not self.watches then return end
  for uri, id in pairs(self.subs) do
    self.watches:remove(id)
    self.subs[uri] = nil
    local path, why = watch_path(self, uri)
    local nid, msg = nil, why
    if path then nid, msg = self.watches:add(self.ws, path, notifier(self, uri), self.session) end
    if nid then self.subs[uri] = nid
    else self:log("warning", "subscription ended: " .. tostring(msg), { uri = uri }) end
  end
end

--- Deliver what the watches have due; the seconds until a held change is
-- due (nil: none waits).
function resources.pump(self)
  if not self.watches then return nil end
  local _, next_s = self.watches:poll()
  return next_s
end

return resources
