-- host/test/arrows.lua BUILD: the arrows between the layers of host/src
-- point down only (docs/architecture.md). The layers, lowest first: core,
-- lua, then server and api (siblings: neither may use the other), then
-- cli. An edge is a file's #include of a header in another layer, or an
-- object's undefined symbol that another layer's object defines (nm of
-- BUILD/obj/LAYER/*.o). Each edge up or sideways must be in
-- host/test/arrows.allow (today's, to be removed), and each line there must
-- still be an edge, so the list only shrinks. And docs/architecture.md, the
-- map, names every file of host/src (as `name.c`; a header with a .c of its
-- name goes with it), so a file cannot be added without its room, and in
-- the table of its own layer, the tables in layer order. Ends
-- "arrows: N passed, N failed".

local BUILD = arg[1] or "build"
local RANK = { core = 1, lua = 2, server = 3, api = 3, cli = 4 }

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

-- every file of host/src: "layer/name" -> layer
local files, where = {}, {}
for f in sh("cd host/src && ls */*.c */*.h 2>/dev/null"):gmatch("[^\n]+") do
  local layer, name = f:match("^([^/]+)/(.+)$")
  if RANK[layer] then
    files[#files + 1] = f
    where[name] = f
  end
end

local edges = {} -- "from -> to" -> how (an include or a symbol)

local function up(from, to)
  local a, b = from:match("^[^/]+"), to:match("^[^/]+")
  return a ~= b and RANK[b] >= RANK[a]
end

local function add(from, to, how)
  if up(from, to) then
    local k = from .. " -> " .. to
    edges[k] = edges[k] or how
  end
end

-- includes
for _, f in ipairs(files) do
  local fh = assert(io.open("host/src/" .. f))
  for line in fh:lines() do
    local h = line:match('^%s*#%s*include%s+"([^"]+)"')
    if h and where[h] then add(f, where[h], "#include \"" .. h .. "\"") end
  end
  fh:close()
end

-- symbols: who defines what, then who needs what
local defs, needs = {}, {}
for o in sh("cd " .. BUILD .. "/obj && ls */*.o 2>/dev/null"):gmatch("[^\n]+") do
  local src = o:gsub("%.o$", ".c")
  if where[src:match("[^/]+$")] then
    for l in sh("nm " .. BUILD .. "/obj/" .. o):gmatch("[^\n]+") do
      local t, sym = l:match("^%x*%s+(%a)%s+(%S+)$")
      if t == "U" then
        needs[#needs + 1] = { src, sym }
      elseif t and t:match("[TDBR]") then
        defs[sym] = src
      end
    end
  end
end
local nobj = 0
for _ in pairs(defs) do nobj = nobj + 1 end
local inside = {} -- calls between two files of one layer: file -> {file -> a symbol}
for _, n in ipairs(needs) do
  local to = defs[n[2]]
  if to and to ~= n[1] then
    add(n[1], to, n[2])
    if to:match("^[^/]+") == n[1]:match("^[^/]+") then
      inside[n[1]] = inside[n[1]] or {}
      inside[n[1]][to] = inside[n[1]][to] or n[2]
    end
  end
end

-- cycles inside a layer: files that call each other, however far round
-- (Tarjan's strongly connected components of the calls above). A cycle
-- is one concern split across files, or a knot to untie; each must be
-- listed in host/test/arrows.allow as "cycle FILE FILE..." (sorted), and
-- each listed one must still be a cycle, exactly those files.
local cycles = {}
do
  local index, low, on, stack, n = {}, {}, {}, {}, 0
  local function connect(v)
    n = n + 1
    index[v], low[v], on[v] = n, n, true
    stack[#stack + 1] = v
    local outs = {}
    for w in pairs(inside[v] or {}) do outs[#outs + 1] = w end
    table.sort(outs)
    for _, w in ipairs(outs) do
      if not index[w] then
        connect(w)
        low[v] = math.min(low[v], low[w])
      elseif on[w] then
        low[v] = math.min(low[v], index[w])
      end
    end
    if low[v] == index[v] then
      local c = {}
      repeat
        local w = table.remove(stack)
        on[w] = false
        c[#c + 1] = w
      until w == v
      if #c > 1 then
        table.sort(c)
        cycles[#cycles + 1] = c
      end
    end
  end
  local from = {}
  for v in pairs(inside) do from[#from + 1] = v end
  table.sort(from)
  for _, v in ipairs(from) do
    if not index[v] then connect(v) end
  end
end

-- the allowlist
local allowed, order = {}, {}
local fa = io.open("host/test/arrows.allow")
for line in (fa and fa:lines() or function() end) do
  local k = line:gsub("%s*#.*$", ""):gsub("^%s+", ""):gsub("%s+$", "")
  if k ~= "" then
    allowed[k] = true
    order[#order + 1] = k
  end
end
if fa then fa:close() end

local pass, fail = 0, 0
if nobj == 0 then
  print("FAIL no symbols read from " .. BUILD .. "/obj (run make first)")
  fail = fail + 1
end
local keys = {}
for k in pairs(edges) do keys[#keys + 1] = k end
table.sort(keys)
for _, k in ipairs(keys) do
  if allowed[k] then pass = pass + 1
  else
    print(("FAIL %s (%s): points up or sideways; move the code, or (for today) list it in host/test/arrows.allow"):format(k, edges[k]))
    fail = fail + 1
  end
end
local listed_cycles = {}
for _, c in ipairs(cycles) do
  local k = "cycle " .. table.concat(c, " ")
  listed_cycles[k] = true
  if allowed[k] then pass = pass + 1
  else
    local member, calls = {}, {}
    for _, f in ipairs(c) do member[f] = true end
    for _, f in ipairs(c) do
      local tos = {}
      for t, sym in pairs(inside[f]) do
        if member[t] then tos[#tos + 1] = ("%s (%s)"):format(t, sym) end
      end
      table.sort(tos)
      calls[#calls + 1] = f .. " -> " .. table.concat(tos, ", ")
    end
    print(("FAIL %s: these files of one layer call each other round (%s); move what they share below them, or (one concern in two files) list it in host/test/arrows.allow")
      :format(k, table.concat(calls, "; ")))
    fail = fail + 1
  end
end
for _, k in ipairs(order) do
  if k:match("^cycle ") then
    if not listed_cycles[k] then
      print(("FAIL %s is in host/test/arrows.allow but no longer a cycle: take it off the list"):format(k))
      fail = fail + 1
    end
  elseif not edges[k] then
    print(("FAIL %s is in host/test/arrows.allow but no longer an edge: take it off the list"):format(k))
    fail = fail + 1
  end
end
-- the map: every file of host/src named in docs/architecture.md (a
-- header with a .c of its name goes with it)
local fm = io.open("docs/architecture.md")
local map = fm and fm:read("a") or ""
if fm then fm:close() end
local unmapped, have = 0, {}
for _, f in ipairs(files) do have[f] = true end
for _, f in ipairs(files) do
  local name = f:match("[^/]+$")
  local paired = f:match("%.h$") and have[f:gsub("%.h$", ".c")]
  if not paired and not map:find("`" .. name .. "`", 1, true) then
    print(("FAIL %s is not on the map: name it in docs/architecture.md's table of its layer"):format(f))
    unmapped = unmapped + 1
  end
end
fail = fail + unmapped
if unmapped == 0 then pass = pass + 1 end
-- the map in layer order: "## The rooms of host/src" has a table a layer
-- ("### `core/`: ...", lowest first), and each row names files of its
-- own layer only
local misplaced, layer_at, seen, in_rooms = 0, nil, {}, false
for line in map:gmatch("[^\n]*") do
  if line:match("^## ") then in_rooms = line == "## The rooms of host/src" end
  local h = in_rooms and line:match("^### `(%w+)/`")
  if h then
    if RANK[h] == nil or (layer_at and RANK[h] < RANK[layer_at]) or seen[h] then
      print(("FAIL docs/architecture.md: the table of %s/ is out of layer order (core, lua, server, api, cli)"):format(h))
      misplaced = misplaced + 1
    end
    layer_at, seen[h] = h, true
  end
  local cell = in_rooms and line:match("^| (`[^|]*)|")
  if cell then
    for name in cell:gmatch("`([^`]+)`") do
      local f = where[name]
      local l = f and f:match("^[^/]+")
      if l and l ~= layer_at then
        print(("FAIL %s is in docs/architecture.md's table of %s/: move its row to the table of %s/")
          :format(f, tostring(layer_at), l))
        misplaced = misplaced + 1
      end
    end
  end
end
for l in pairs(RANK) do
  if not seen[l] then
    print(("FAIL docs/architecture.md has no table of %s/ under \"The rooms of host/src\""):format(l))
    misplaced = misplaced + 1
  end
end
fail = fail + misplaced
if misplaced == 0 then pass = pass + 1 end
print(("arrows: %d edges up or sideways, %d cycles inside a layer, %d lines on the allowlist; %d symbols defined in host/src's objects")
  :format(#keys, #cycles, #order, nobj))
print(("arrows: %d passed, %d failed"):format(pass + (fail == 0 and 1 or 0), fail))
os.exit(fail == 0 and 0 or 1)
