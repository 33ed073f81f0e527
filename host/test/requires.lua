-- host/test/requires.lua: the require graph of lua/ has no cycle, and its
-- arrows point down the layers of lua/burrow (docs/architecture.md, "The
-- rooms of lua/burrow"). Every require of a burrow module is an edge, also
-- the lazy ones inside functions (require "x" / require("x") anywhere in
-- the file, comments left out).
--
-- The layers are read from the map: its line "The layers, lowest first:
-- `a` < `b`, `c` < ..." (names of one rank are siblings: neither may
-- require the other), then one table a layer ("### `NAME/`: ...", in that
-- order) naming the files of lua/burrow/NAME/ (bare names), and the table
-- of the top level ("### Top level: ...") naming each public module file
-- of lua/burrow/ with its layer. The layers `tools` and `policy` are
-- lua/tools/ and lua/policy/, whose files the folders' tables need not
-- name. A module may require only modules of its own layer or lower ones;
-- every folder of lua/burrow is a layer, every file is named in its
-- layer's table, once, and a row names no file that is not there. And a
-- require (in lua/, spec/, host/, test/, bench/, examples/) of a burrow
-- name that is no module, Lua or C, fails: a name from before a move.
-- Prints each failure and ends "requires: N passed, N failed".

local MAP = arg[1] or "docs/architecture.md"
local ROOT = arg[2] or "lua"

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

-- module name -> file
local files = {}
for f in sh("cd " .. ROOT .. " && find burrow tools policy -name '*.lua' | LC_ALL=C sort"):gmatch("[^\n]+") do
  local name = f:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
  files[name] = ROOT .. "/" .. f
end

local edges, nedges = {}, 0
for name, file in pairs(files) do
  local src = assert(io.open(file)):read("a")
  src = src:gsub("%-%-%[(=*)%[.-%]%1%]", ""):gsub("%-%-[^\n]*", "") -- comments out
  edges[name] = {}
  for dep in src:gmatch("require%s*%(?%s*[\"']([%w_%.]+)[\"']") do
    if files[dep] and dep ~= name then
      edges[name][dep] = true
      nedges = nedges + 1
    end
  end
end

local names = {}
for n in pairs(files) do names[#names + 1] = n end
table.sort(names)

local fails = {}
local function fail(fmt, ...) fails[#fails + 1] = fmt:format(...) end

-- A require of a burrow module that is neither one of these files nor one
-- of the C modules fails only when it runs (a lazy one: late, or never in
-- a test): a name left from before a move, or a branch merged across one.
-- Looked for in lua/ and in everything else that requires them.
local C_MODULES = { ["burrow.core"] = true, ["burrow.server"] = true, ["burrow.host"] = true,
  ["burrow.native"] = true, ["burrow.pattern_test"] = true }
local stale = 0
for f in sh("find " .. ROOT .. " spec host test bench examples -name '*.lua' -not -path '*/node_modules/*' 2>/dev/null | LC_ALL=C sort"):gmatch("[^\n]+") do
  local src = assert(io.open(f)):read("a")
  src = src:gsub("%-%-%[(=*)%[.-%]%1%]", ""):gsub("%-%-[^\n]*", "")
  for dep in src:gmatch("require%s*%(?%s*[\"'](burrow[%w_%.]*)[\"']") do
    if (dep == "burrow" or dep:match("^burrow%.")) and not files[dep] and not C_MODULES[dep] then
      fail("%s requires %s, which is no module of lua/burrow (moved? see docs/architecture.md, \"The rooms of lua/burrow\")", f, dep)
      stale = stale + 1
    end
  end
end

-- depth-first search for cycles
local state, stack, ncycles = {}, {}, 0
local function visit(n)
  state[n] = "open"
  stack[#stack + 1] = n
  local deps = {}
  for d in pairs(edges[n]) do deps[#deps + 1] = d end
  table.sort(deps)
  for _, d in ipairs(deps) do
    if state[d] == "open" then
      local cyc = {}
      for i = #stack, 1, -1 do
        table.insert(cyc, 1, stack[i])
        if stack[i] == d then break end
      end
      cyc[#cyc + 1] = d
      fail("require cycle: %s", table.concat(cyc, " -> "))
      ncycles = ncycles + 1
    elseif not state[d] then
      visit(d)
    end
  end
  stack[#stack] = nil
  state[n] = "done"
end
for _, n in ipairs(names) do if not state[n] then visit(n) end end

-- the layers, from the map
local fm = io.open(MAP)
local map = fm and fm:read("a") or ""
if fm then fm:close() end
local section = map:match("\n## The rooms of lua/burrow\n(.-)\n## ") or map:match("\n## The rooms of lua/burrow\n(.*)$")
local RANK, order = {}, {}
if not section then
  fail("%s has no section \"## The rooms of lua/burrow\"", MAP)
  section = ""
end
local line = section:match("The%s+layers,%s+lowest%s+first:[ \t]*([^\n]*)")
if not line then
  fail("%s: no line \"The layers, lowest first: `a` < `b` ...\" in \"The rooms of lua/burrow\"", MAP)
else
  local r = 0
  for group in (line .. "<"):gmatch("([^<]*)<") do
    local any = false
    for layer in group:gmatch("`([%w_]+)`") do
      if not any then r = r + 1 end
      any = true
      if RANK[layer] then fail("%s: layer %s named twice in the order", MAP, layer) end
      RANK[layer] = r
      order[#order + 1] = layer
    end
  end
end

-- each module's layer, from its file: lua/tools/ and lua/policy/ theirs,
-- lua/burrow/NAME/ its folder's, a top-level file the one its row gives
local layer_of, named = {}, {}
for _, n in ipairs(names) do
  local rel = files[n]:sub(#ROOT + 2)
  local top, folder = rel:match("^([%w_]+)/([%w_]+)/")
  if rel:match("^tools/") or rel:match("^policy/") then
    layer_of[n] = rel:match("^(%w+)/")
  elseif top == "burrow" then
    layer_of[n] = folder
    if RANK[folder] == nil then
      fail("%s is in lua/burrow/%s/, which is not a layer of the order in %s: add it there, with its table", files[n], folder, MAP)
      RANK[folder] = false
    end
  end
end

local at, seen_heading, rows = nil, {}, 0
local last_rank = 0
for l in section:gmatch("[^\n]*") do
  local h = l:match("^### `([%w_]+)/`")
  if h then
    if not RANK[h] then
      fail("%s: a table of %s/, which is not in the layer order", MAP, h)
    elseif RANK[h] < last_rank then
      fail("%s: the table of %s/ is out of layer order (%s)", MAP, h, table.concat(order, ", "))
    end
    if seen_heading[h] then fail("%s: two tables of %s/", MAP, h) end
    seen_heading[h] = true
    last_rank = RANK[h] or last_rank
    at = h
  elseif l:match("^### Top level") then
    at = "top"
  elseif l:match("^###") then
    at = nil
  end
  local cell, rest = l:match("^| (`[^|]*)|(.*)$")
  if at and cell then
    for file in cell:gmatch("`([%w_]+)%.lua`") do
      rows = rows + 1
      if at == "top" then
        local layer = rest:match("^%s*`([%w_]+)`")
        local n = file == "init" and "burrow" or "burrow." .. file
        if not files[n] or files[n] ~= ROOT .. "/burrow/" .. file .. ".lua" then
          fail("%s: the top-level table names %s.lua, which is not a file of lua/burrow/", MAP, file)
        elseif not layer or RANK[layer] == nil then
          fail("%s: the top-level row of %s.lua gives no layer of the order (its second cell: `LAYER`)", MAP, file)
        elseif named[n] then
          fail("%s: %s.lua named twice", MAP, file)
        else
          layer_of[n], named[n] = layer, true
        end
      else
        local n = file == "init" and "burrow." .. at or "burrow." .. at .. "." .. file
        if not files[n] or files[n] ~= ("%s/burrow/%s/%s.lua"):format(ROOT, at, file) then
          fail("%s: the table of %s/ names %s.lua, which is not a file of lua/burrow/%s/", MAP, at, file, at)
        elseif named[n] then
          fail("%s: %s named twice", MAP, files[n])
        else
          named[n] = true
        end
      end
    end
  end
end
for _, l in ipairs(order) do
  if l ~= "tools" and l ~= "policy" and not seen_heading[l] then
    fail("%s: no table of %s/ under \"The rooms of lua/burrow\"", MAP, l)
  end
end
for _, n in ipairs(names) do
  if n:match("^burrow") and not named[n] then
    if layer_of[n] then
      fail("%s is not on the map: name it in the table of %s/ in %s", files[n], layer_of[n], MAP)
    else
      fail("%s is not on the map: a public module stays at the top level, in the table \"### Top level\" with its layer; any other goes in the folder of its concern", files[n])
    end
  end
end

-- the arrows: down or across one layer, never up, never to a sibling
local up = 0
for _, n in ipairs(names) do
  local deps = {}
  for d in pairs(edges[n]) do deps[#deps + 1] = d end
  table.sort(deps)
  for _, d in ipairs(deps) do
    local a, b = layer_of[n], layer_of[d]
    local ra, rb = a and RANK[a], b and RANK[b] -- false: a folder not in the order, failed above
    if ra and rb and (rb > ra or (rb == ra and a ~= b)) then
      fail("%s (%s) requires %s (%s), %s: move the code down, or the module to the layer it belongs to",
        n, a, d, b, rb > ra and "a higher layer" or "a sibling layer")
      up = up + 1
    end
  end
end

for _, f in ipairs(fails) do print("FAIL " .. f) end
print(("requires: %d modules, %d edges, %d cycles, %d up or sideways, %d of no module; %d layers (%s), %d rows on the map")
  :format(#names, nedges, ncycles, up, stale, #order, line or "none", rows))
print(("requires: %d passed, %d failed"):format(#fails == 0 and 1 or 0, #fails))
os.exit(#fails == 0 and 0 or 1)
