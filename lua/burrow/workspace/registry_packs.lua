-- burrow.workspace.registry_packs: the part of burrow.workspace.registry a
-- `burrow call` and a start that answers initialize do not use, loaded
-- with the first use of one of its names (registry.lua's LATER): the
-- compatibility packs (pack_file, packs, load_pack, load_packs,
-- pack_subset) and the tool-list formats (format). Installs them in
-- registry.

local core = require "burrow.core"
local json = core.json
local files = require "burrow.base.files"

return function(registry, check_tool)
  local readable = files.readable

  -- Compatibility packs: registry.packs_dir's NAME.lua or NAME/init.lua. A
  -- pack file returns {name, description, tools = {...}} or a function(options)
  -- returning one; its tools adapt the native tools (ctx:call) and are
  -- checked like any tool (check_tool, registry.lua's).

  function registry.pack_file(name)
    if type(name) ~= "string" or not name:match("^[%w_]+$") then return nil end
    for _, f in ipairs { "%s/%s.lua", "%s/%s/init.lua" } do
      local file = f:format(registry.packs_dir, name)
      if readable(file) then return file end
    end
  end

  -- The names of the packs this install has, sorted, native first.
  function registry.packs()
    local out, names = { "native" }, {}
    for _, line in ipairs(files.list(registry.packs_dir)) do
      local n = line:match("^([%w_]+)%.lua$") or line:match("^([%w_]+)$")
      if n and registry.pack_file(n) then names[#names + 1] = n end
    end
    table.sort(names)
    for _, n in ipairs(names) do out[#out + 1] = n end
    return out
  end

  -- Load a pack's tools: spec is a name or {name =, prefix =, ...options}.
  -- Tools get path_args = {} unless they name their own: the native tools
  -- they call ask the policies about each path, once.
  function registry.load_pack(spec)
    local name = type(spec) == "table" and spec.name or spec
    if name == "native" then return registry.load_all(nil) end
    local file = registry.pack_file(name)
    if not file then
      return nil, ("unknown pack %q (available: %s)"):format(tostring(name), table.concat(registry.packs(), ", "))
    end
    local chunk, err = core.loadfile(file) -- loadfile, opening the file once
    if not chunk then return nil, files.whole_name(err, file) end
    local ok, pack = pcall(chunk)
    if not ok then return nil, ("%s: %s"):format(file, files.whole_name(pack, file)) end
    local options = {}
    if type(spec) == "table" then
      for k, v in pairs(spec) do
        if k ~= "name" and k ~= "prefix" then options[k] = v end
      end
    end
    if type(pack) == "table" and type(pack.options) == "table" then
      local known = {}
      for _, k in ipairs(pack.options) do known[k] = true end
      for k in pairs(options) do
        if not known[k] then
          return nil, ("pack %s: unknown option %q (it takes: %s)"):format(name, tostring(k),
            #pack.options > 0 and table.concat(pack.options, ", ") or "no options")
        end
      end
    end
    if type(pack) == "table" and type(pack.build) == "function" then
      local bok, built = pcall(pack.build, options)
      if not bok then return nil, tostring(built) end
      pack = built
    end
    if type(pack) ~= "table" or type(pack.tools) ~= "table" then
      return nil, file .. ": a pack file must return {tools = {...}}"
    end
    local prefix = type(spec) == "table" and spec.prefix or ""
    local list, by_name = {}, {}
    for _, t in ipairs(pack.tools) do
      local tool, terr = check_tool(t, file)
      if not tool then return nil, terr end
      local copy = setmetatable({}, { __index = tool })
      copy.name = prefix .. tool.name
      copy.pack = name
      copy.path_args = tool.path_args or {}
      list[#list + 1] = copy
      by_name[copy.name] = copy
    end
    return list, by_name
  end

  -- The tools of several packs, in order; a name two packs share is an
  -- error unless one of them has a prefix.
  function registry.load_packs(specs)
    local list, by_name = {}, {}
    for _, spec in ipairs(specs) do
      local l, err = registry.load_pack(spec)
      if not l then return nil, err end
      local pname = type(spec) == "table" and spec.name or spec
      for _, t in ipairs(l) do
        if by_name[t.name] then
          return nil, ("tool %q is in two packs (%s and %s): give one of them a prefix, e.g. {name: %s, prefix: %s_}")
            :format(t.name, by_name[t.name].pack or "native", pname, pname, pname)
        end
        t.pack = t.pack or "native"
        list[#list + 1] = t
        by_name[t.name] = t
      end
    end
    return list, by_name
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

  -- burrow.open's tools with a pack: names pick the pack's tools (list),
  -- files add tools (dirs: the operator's tool_path). The list and a name
  -- index, or nil, message.
  function registry.pack_subset(list, specs, dirs)
    local have = {}
    for _, t in ipairs(list) do have[t.name] = t end
    local out, by_name = {}, {}
    for _, spec in ipairs(specs) do
      local t, err = have[spec], nil
      if not t then
        if not files.is_file(spec) then
          local names = {}
          for _, x in ipairs(list) do names[#names + 1] = x.name end
          return nil, ("tool %q is not in the pack (its tools: %s)"):format(spec, table.concat(names, ", "))
        end
        t, err = registry.load(spec, dirs)
        if not t then return nil, err end
      end
      if by_name[t.name] then return nil, ("tool %q is defined twice"):format(t.name) end
      out[#out + 1], by_name[t.name] = t, t
    end
    return out, by_name
  end
end
