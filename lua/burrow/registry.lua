-- burrow.registry: loads tool files, checks their shape, validates a
-- call's arguments against the tool's schema before the handler runs, and
-- renders the tool list for MCP and the big model APIs.

local json = require("burrow.core").json
local schema = require "burrow.schema"

local registry = {}

local function readable(file)
  local f = io.open(file, "rb")
  if f then f:close() end
  return f ~= nil
end

-- The built-in tools: lua/tools beside lua/burrow (source tree, make
-- install), or burrow/tools inside the module (the rock: a Lua module tree
-- has no room for a top-level tools/). Found from this file's own path.
local function builtin_dir()
  local src = debug.getinfo(1, "S").source
  local here = src:match("^@(.*)/[^/]+$") or "lua/burrow"
  if readable(here .. "/tools/read_file.lua") then return here .. "/tools" end
  return (here:match("^(.*)/[^/]+$") or ".") .. "/tools"
end

registry.tools_dir = builtin_dir()

-- The native tool set, in the order tools/list shows it.
registry.native = { "read_file", "write_file", "edit_file", "insert_lines", "append_file", "list_dir", "stat",
  "grep", "glob", "mkdir", "remove", "move", "copy", "undo_edit" }

local function check_tool(t, file)
  if type(t) ~= "table" then return nil, file .. ": a tool file must return a table" end
  for _, k in ipairs { "name", "description" } do
    if type(t[k]) ~= "string" then return nil, ("%s: field '%s' must be a string"):format(file, k) end
  end
  if type(t.input_schema) ~= "table" then return nil, file .. ": input_schema must be a table" end
  if type(t.handler) ~= "function" then return nil, file .. ": handler must be a function" end
  return t
end

-- The file of the tool named `name`: the first dirs entry (the operator's
-- tool_path) that has NAME.lua, else the built-in directory.
function registry.find(name, dirs)
  for _, dir in ipairs(dirs or {}) do
    local file = ("%s/%s.lua"):format(dir, name)
    if readable(file) then return file end
  end
  return ("%s/%s.lua"):format(registry.tools_dir, name)
end

-- Load one tool by name (tool_path dirs, then the built-in directory) or by
-- file path.
function registry.load(spec, dirs)
  local file = spec:find("/", 1, true) and spec or registry.find(spec, dirs)
  local chunk, err = loadfile(file)
  if not chunk then return nil, err end
  local ok, t = pcall(chunk)
  if not ok then return nil, ("%s: %s"):format(file, t) end
  return check_tool(t, file)
end

-- Load a list of tool specs; returns the ordered list and a name index.
function registry.load_all(specs, dirs)
  local list, by_name = {}, {}
  for _, spec in ipairs(specs or registry.native) do
    local t, err = registry.load(spec, dirs)
    if not t then return nil, err end
    if by_name[t.name] then return nil, ("tool %q is defined twice"):format(t.name) end
    list[#list + 1] = t
    by_name[t.name] = t
  end
  return list, by_name
end

-- nil if args fit the tool's schema, else "field 'x': ..." text.
function registry.check_args(tool, args)
  if type(args) ~= "table" or getmetatable(args) == json.array_mt and next(args) ~= nil then
    return "arguments must be a JSON object"
  end
  local err = schema.validate(tool.input_schema, args)
  if err then return err end
  schema.normalize(tool.input_schema, args)
end

local formats = {}

function formats.mcp(t)
  return {
    name = t.name,
    title = t.title,
    description = t.description,
    inputSchema = t.input_schema,
    outputSchema = t.output_schema,
    annotations = t.annotations,
  }
end

function formats.openai(t)
  return {
    type = "function",
    ["function"] = { name = t.name, description = t.description, parameters = t.input_schema },
  }
end

function formats.anthropic(t)
  return { name = t.name, description = t.description, input_schema = t.input_schema }
end

function registry.format(list, format)
  local f = formats[format or "mcp"]
  if not f then
    return nil, ("unknown format %q (use mcp, openai or anthropic)"):format(tostring(format))
  end
  local out = json.array {}
  for i, t in ipairs(list) do out[i] = f(t) end
  return out
end

return registry
