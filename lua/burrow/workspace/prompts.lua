-- burrow.workspace.prompts: the operator's MCP prompts, one Lua file each (the
-- config's `prompts:` list), served by prompts/list, prompts/get and
-- completion/complete in both eras of MCP (docs/prompts.md).
--
-- A prompt file returns
--
--   { name = "review", title = "...", description = "...",
--     arguments = { { name = "path", description = "...", required = true } },
--     get = function(args, ctx) return { messages = { ... } } end,
--     complete = function(argument, value, ctx) return { "a", "b" } end }  -- optional
--
-- get receives the arguments as strings (the required ones present) and a
-- ctx whose ctx:call(tool, args) runs a tool of the workspace under its
-- policies, as the client's own call would; it returns the messages (role
-- "user" or "assistant", content a text, image, audio, resource or
-- resource_link block), or nil and a message for the client.

local core = require "burrow.core"
local json = core.json
local scripted = require "burrow.workspace.scripted"

local prompts = {}

local NAME = "^[%w_./-]+$"

local function check(p, file)
  if type(p) ~= "table" then return nil, file .. ": a prompt file must return a table" end
  if type(p.name) ~= "string" or not p.name:match(NAME) or #p.name > 64 then
    return nil, ("%s: name must be 1 to 64 characters of A-Z a-z 0-9 _ . / -"):format(file)
  end
  for _, k in ipairs { "title", "description" } do
    if p[k] ~= nil and type(p[k]) ~= "string" then return nil, ("%s: %s must be a string"):format(file, k) end
  end
  if type(p.get) ~= "function" then return nil, file .. ": get must be a function(args, ctx)" end
  if p.complete ~= nil and type(p.complete) ~= "function" then
    return nil, file .. ": complete must be a function(argument, value, ctx)"
  end
  local args, seen = p.arguments or {}, {}
  if type(args) ~= "table" then return nil, file .. ": arguments must be a list" end
  for i, a in ipairs(args) do
    if type(a) ~= "table" or type(a.name) ~= "string" or a.name == "" then
      return nil, ("%s: arguments[%d] needs a name (a string)"):format(file, i)
    end
    if seen[a.name] then return nil, ("%s: argument %q is given twice"):format(file, a.name) end
    seen[a.name] = true
    if a.description ~= nil and type(a.description) ~= "string" then
      return nil, ("%s: arguments[%d].description must be a string"):format(file, i)
    end
  end
  p.arguments = args
  return p
end

--- Load the prompt files: the list in order and a name index, or nil and
-- what is wrong (the workspace does not open).
function prompts.load(files)
  return scripted.load(files, check, function(p) return p.name end, 'prompt "%s" is defined twice (%s)')
end

--- prompts/list's entries.
function prompts.describe(list)
  local out = json.array {}
  for _, p in ipairs(list or {}) do
    local args = json.array {}
    for _, a in ipairs(p.arguments) do
      args[#args + 1] = { name = a.name, description = a.description, required = a.required == true or nil }
    end
    out[#out + 1] = { name = p.name, title = p.title, description = p.description, arguments = args }
  end
  return out
end

local ROLES = { user = true, assistant = true }
local BLOCKS = { text = "text", image = "data", audio = "data", resource = "resource", resource_link = "uri" }

-- The messages a prompt's get returned, checked: nil and why when they are
-- not MCP's shape (the operator's mistake, said to the client plainly).
local function check_messages(res, name)
  if type(res) ~= "table" or type(res.messages) ~= "table" then
    return nil, ("prompt %s: get must return {messages = {...}}"):format(name)
  end
  local out = json.array {}
  for i, m in ipairs(res.messages) do
    local c = type(m) == "table" and m.content
    if not (type(m) == "table" and ROLES[m.role]) then
      return nil, ("prompt %s: messages[%d].role must be user or assistant"):format(name, i)
    end
    if type(c) ~= "table" or not BLOCKS[c.type] or c[BLOCKS[c.type]] == nil then
      return nil, ("prompt %s: messages[%d].content must be a text, image, audio, resource or resource_link block"):format(name, i)
    end
    out[i] = { role = m.role, content = c }
  end
  return { description = type(res.description) == "string" and res.description or nil, messages = out }
end

--- prompts/get: the result, or nil, a JSON-RPC code, a message (and data).
function prompts.get(ws, params, hooks)
  local p = ws.prompt_by_name and ws.prompt_by_name[params.name]
  if not p then
    return nil, -32602, ("Invalid params: no prompt named %s"):format(tostring(params.name)), { name = params.name }
  end
  local given = params.arguments
  if given == nil or given == json.null then given = {} end
  if type(given) ~= "table" or getmetatable(given) == json.array_mt then
    return nil, -32602, "Invalid params: arguments must be an object of strings"
  end
  local args, known = {}, {}
  for _, a in ipairs(p.arguments) do known[a.name] = true end
  for k, v in pairs(given) do
    if not known[k] then return nil, -32602, ("Invalid params: prompt %s has no argument %s"):format(p.name, tostring(k)) end
    if type(v) ~= "string" then return nil, -32602, ("Invalid params: argument %s must be a string"):format(k) end
    args[k] = v
  end
  for _, a in ipairs(p.arguments) do
    if a.required and args[a.name] == nil then
      return nil, -32602, ("Invalid params: prompt %s needs the argument %s"):format(p.name, a.name)
    end
  end
  local ok, res, why = pcall(p.get, args, scripted.ctx(ws, hooks))
  if not ok then
    io.stderr:write("burrow: prompt ", p.name, " failed: ", tostring(res), "\n")
    return nil, -32603, ("prompt %s failed; see the server log"):format(p.name)
  end
  if res == nil then return nil, -32602, ("prompt %s: %s"):format(p.name, tostring(why or "refused")) end
  local out, err = check_messages(res, p.name)
  if not out then
    io.stderr:write("burrow: ", err, "\n")
    return nil, -32603, err
  end
  return out
end

--- completion/complete for a prompt's argument: its complete function's
-- values (none without one).
function prompts.complete(ws, ref, argument, hooks)
  local p = ws.prompt_by_name and ws.prompt_by_name[ref.name]
  if not p then return nil, -32602, ("Invalid params: no prompt named %s"):format(tostring(ref.name)) end
  return scripted.complete(p.complete, argument, scripted.ctx(ws, hooks), "prompt " .. p.name)
end

return prompts
