-- burrow.workspace.operator_resources: the operator's MCP resources beside the file
-- roots, one Lua file each (the config's `resources:` list), served by
-- resources/list, resources/templates/list, resources/read and
-- completion/complete in both eras of MCP (docs/resources.md "Operator
-- resources").
--
-- A file returns a fixed resource (uri) or a template (uri_template, with
-- {name} for one URI segment and {+name} for the rest of it):
--
--   { uri = "notes://todo", name = "todo", title = "...", description = "...",
--     mime_type = "text/plain",
--     read = function(vars, ctx) return { text = "..." } end }       -- or { blob = BASE64 }
--   { uri_template = "ticket://{id}", name = "ticket", mime_type = "application/json",
--     read = function(vars, ctx) return { text = ... } end,          -- vars.id
--     complete = function(var, value, ctx) return { "1", "2" } end } -- optional
--
-- read gets the template's variables (none for a fixed resource) and a
-- ctx whose ctx:call(tool, args) runs a tool under the workspace's rules;
-- it returns the contents, or nil and a message (-32602 to the client).
-- file:// is the roots': an operator resource may not use it.
--
-- watch (optional): the file or folder under the roots the resource is
-- made from ("notes/todo.md", "/workspace/tickets/{id}.json": a template's
-- {name}s filled in); resources/subscribe watches it, judged as a read as
-- any file subscription is, and a change is reported as the resource's.
-- Without it a subscription is taken and never reported.

local core = require "burrow.core"
local json = core.json
local scripted = require "burrow.workspace.scripted"

local M = {}

M.MAX = 1000 -- operator resources and templates in all

local function escape(s) return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")) end

-- A template's Lua pattern and its variables' names, in order.
local function compile(t, file)
  local pat, names, pos = "^", {}, 1
  for s, plus, name, e in t:gmatch("(){(%+?)([%w_]+)}()") do
    pat = pat .. escape(t:sub(pos, s - 1)) .. (plus == "+" and "(.+)" or "([^/]+)")
    names[#names + 1] = name
    pos = e
  end
  local rest = t:sub(pos)
  if rest:find("[{}]") then return nil, ("%s: uri_template %q: only {name} and {+name} are understood"):format(file, t) end
  if #names == 0 then return nil, ("%s: uri_template %q has no {variable}; give a fixed uri instead"):format(file, t) end
  return pat .. escape(rest) .. "$", names
end

local function check(r, file)
  if type(r) ~= "table" then return nil, file .. ": a resource file must return a table" end
  if (r.uri == nil) == (r.uri_template == nil) then
    return nil, file .. ": give exactly one of uri (a fixed resource) or uri_template"
  end
  local u = r.uri or r.uri_template
  if type(u) ~= "string" or not u:match("^%a[%w+.-]*:") then
    return nil, ("%s: %s must be a URI with a scheme (notes://todo)"):format(file, r.uri and "uri" or "uri_template")
  end
  if u:lower():match("^file:") then return nil, file .. ": file:// URIs are the roots' (serve files by adding a root)" end
  if type(r.name) ~= "string" or r.name == "" then return nil, file .. ": name must be a string" end
  for _, k in ipairs { "title", "description", "mime_type" } do
    if r[k] ~= nil and type(r[k]) ~= "string" then return nil, ("%s: %s must be a string"):format(file, k) end
  end
  if type(r.read) ~= "function" then return nil, file .. ": read must be a function(vars, ctx)" end
  if r.watch ~= nil and (type(r.watch) ~= "string" or r.watch == "" or r.watch:find("\0", 1, true)) then
    return nil, file .. ": watch must be the path of a file or folder under the roots"
  end
  if r.complete ~= nil and (type(r.complete) ~= "function" or r.uri) then
    return nil, file .. ": complete is a template's function(variable, value, ctx)"
  end
  if r.uri_template then
    local pat, names = compile(r.uri_template, file)
    if not pat then return nil, names end
    r.pattern, r.vars = pat, names
  end
  return r
end

--- Load the files: { fixed = {...}, templates = {...}, by_uri = {} }, or
-- nil and what is wrong (the workspace does not open).
function M.load(files)
  local list, by_uri = scripted.load(files, check, function(r) return r.uri or r.uri_template end,
    "resource %s is defined twice (%s)")
  if not list then return nil, by_uri end
  if #list > M.MAX then return nil, ("more than %d operator resources"):format(M.MAX) end
  local set = { fixed = {}, templates = {}, by_uri = by_uri }
  for _, r in ipairs(list) do
    local kind = r.uri and set.fixed or set.templates
    kind[#kind + 1] = r
  end
  return set
end

--- resources/list's entries of the fixed resources.
function M.list(set)
  local out = {}
  for i, r in ipairs(set and set.fixed or {}) do
    out[i] = { uri = r.uri, name = r.name, title = r.title, description = r.description, mimeType = r.mime_type }
  end
  return out
end

--- resources/templates/list's entries.
function M.templates(set)
  local out = {}
  for i, r in ipairs(set and set.templates or {}) do
    out[i] = { uriTemplate = r.uri_template, name = r.name, title = r.title, description = r.description,
      mimeType = r.mime_type }
  end
  return out
end

-- The resource a URI names, and its variables; nil when none does.
local function find(set, uri)
  if not set then return nil end
  local r = set.by_uri[uri]
  if r and r.uri then return r, {} end
  for _, t in ipairs(set.templates) do
    local caps = { uri:match(t.pattern) }
    if caps[1] then
      local vars = {}
      for i, name in ipairs(t.vars) do vars[name] = caps[i] end
      return t, vars
    end
  end
end

--- The path an operator resource's subscription watches: the resource's
-- watch with a template's variables filled in; false when no operator
-- resource has this URI, nil when it watches nothing.
function M.watch(ws, uri)
  local r, vars = find(ws.operator_resources, uri)
  if not r then return false end
  if not r.watch then return nil end
  return (r.watch:gsub("{%+?([%w_]+)}", function(name) return vars[name] or "" end))
end

--- resources/read of an operator resource: the result; false when no
-- operator resource has this URI (the caller tries the files); or nil, a
-- code, a message (and data).
function M.read(ws, uri, hooks)
  local r, vars = find(ws.operator_resources, uri)
  if not r then return false end
  local ok, res, why = pcall(r.read, vars, scripted.ctx(ws, hooks))
  if not ok then
    io.stderr:write("burrow: resource ", uri, " failed: ", tostring(res), "\n")
    return nil, -32603, ("resource %s failed; see the server log"):format(uri)
  end
  if res == nil then return nil, -32602, ("resource %s: %s"):format(uri, tostring(why or "refused")), { uri = uri } end
  local text, blob = res.text, res.blob
  if (type(text) == "string") == (type(blob) == "string") then
    io.stderr:write("burrow: resource ", uri, ": read must return {text = ...} or {blob = BASE64}\n")
    return nil, -32603, ("resource %s: read must return {text = ...} or {blob = BASE64}"):format(uri)
  end
  if blob and not core.base64_size(blob) then
    io.stderr:write("burrow: resource ", uri, ": blob is not base64\n")
    return nil, -32603, ("resource %s: blob is not base64"):format(uri)
  end
  return { contents = json.array { { uri = uri, mimeType = res.mime_type or r.mime_type or (blob and "application/octet-stream" or "text/plain"),
    text = text, blob = blob } } }
end

--- completion/complete for a variable of an operator template: its
-- complete function's values; false when the URI is no operator template.
function M.complete(ws, uri, argument, hooks)
  local set = ws.operator_resources
  local t = set and set.by_uri[uri]
  if not (t and t.uri_template) then return false end
  return scripted.complete(t.complete, argument, scripted.ctx(ws, hooks), "resource template " .. uri)
end

return M
