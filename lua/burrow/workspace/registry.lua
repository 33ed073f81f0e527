-- burrow.workspace.registry: loads tool files, checks their shape, validates a
-- call's arguments against the tool's schema before the handler runs, and
-- renders the tool list for MCP and the big model APIs.

local core = require "burrow.core"
local json = core.json
-- burrow.toolkit.schema: required with the first call's arguments (a start
-- that answers initialize needs none; docs/benchmarks.md, Start-up)
local function schema() return require "burrow.toolkit.schema" end

local files = require "burrow.base.files"

local registry = {}

-- The built-in tools: lua/tools (source tree, make install) or burrow/tools
-- (the rock).
registry.tools_dir = files.builtin_dir("tools", "read_file.lua")

-- The native tool set, in the order tools/list shows it.
registry.native = { "read_file", "write_file", "edit_file", "edit_files", "insert_lines", "append_file", "list_dir", "stat",
  "grep", "glob", "mkdir", "remove", "move", "copy", "undo_edit", "notebook_edit" }

local function check_tool(t, file)
  if type(t) ~= "table" then return nil, file .. ": a tool file must return a table" end
  for _, k in ipairs { "name", "description" } do
    if type(t[k]) ~= "string" then return nil, ("%s: field '%s' must be a string"):format(file, k) end
  end
  if type(t.input_schema) ~= "table" then return nil, file .. ": input_schema must be a table" end
  if type(t.handler) ~= "function" then return nil, file .. ": handler must be a function" end
  -- kind: annotations, permissions and risk it does not give itself
  -- (burrow.toolkit.kinds, required with the first tool loaded: a start
  -- to the initialize answer loads none)
  local ok, err = require("burrow.toolkit.kinds").apply(t)
  if not ok then return nil, ("%s: %s"):format(file, err) end
  return t
end

-- The file of the tool named `name`: the first dirs entry (the operator's
-- tool_path) that has NAME.lua, else the built-in directory.
function registry.find(name, dirs)
  return files.find(name, dirs, registry.tools_dir)
end

-- Load one tool by name (tool_path dirs, then the built-in directory) or by
-- file path.
function registry.load(spec, dirs)
  local file = files.is_file(spec) and spec or registry.find(spec, dirs)
  local chunk, err = core.loadfile(file) -- loadfile, opening the file once
  if not chunk then return nil, files.whole_name(err, file) end
  local ok, t = pcall(chunk)
  if not ok then return nil, ("%s: %s"):format(file, files.whole_name(t, file)) end
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

-- The native tools, each loaded when it is first named (a start that
-- answers initialize, or one `burrow call`, loads one tool or none): a name
-- index that loads from the built-in directory, and list(by_name) for the
-- whole set in registry.native's order. Only for the built-in set (no
-- tool_path, no tools list): an operator's files are still checked when
-- the workspace opens. A built-in file that does not load is a broken
-- install: the error is raised where the tool is named.
function registry.lazy_natives()
  local known = {}
  for _, n in ipairs(registry.native) do known[n] = true end
  return setmetatable({}, { __index = function(by_name, name)
    if not known[name] then return nil end
    local t, err = registry.load(name)
    if t and t.name ~= name then t, err = nil, ("%s: declares the name %q"):format(registry.find(name), t.name) end
    if not t then error(err, 2) end
    rawset(by_name, name, t)
    return t
  end })
end

function registry.list(by_name)
  local list = {}
  for i, n in ipairs(registry.native) do list[i] = by_name[n] end
  return list
end

-- A native tool for packs to call (ctx:call), from the built-in directory.
function registry.native_tool(name)
  return registry.load(("%s/%s.lua"):format(registry.tools_dir, name))
end

-- nil if args fit the tool's schema, else "field 'x': ..." text and x.
function registry.check_args(tool, args)
  if type(args) ~= "table" or getmetatable(args) == json.array_mt and next(args) ~= nil then
    return "arguments must be a JSON object"
  end
  local sch = schema()
  if sch.fits(tool.input_schema, args) then return end -- the usual case: nothing to word or convert
  local err, field = sch.validate(tool.input_schema, args)
  if err then return err, field end
  sch.normalize(tool.input_schema, args)
end

-- Compatibility packs: lua/tools/packs/NAME.lua or NAME/init.lua.
registry.packs_dir = registry.tools_dir .. "/packs"

-- The packs and the tool-list formats (pack_file, packs, load_pack,
-- load_packs, pack_subset, format): burrow.workspace.registry_packs, loaded with the
-- first use of one of those names (a `burrow call` and a start that
-- answers initialize use none: docs/benchmarks.md, Start-up).
local LATER = { pack_file = true, packs = true, load_pack = true, load_packs = true, pack_subset = true, format = true }
setmetatable(registry, { __index = function(r, k)
  if not LATER[k] then return nil end
  require("burrow.workspace.registry_packs")(r, check_tool)
  return rawget(r, k)
end })

return registry
