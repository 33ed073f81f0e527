-- host/test/requires.lua: the require graph of lua/ has no cycle. Every
-- require of a burrow module is an edge, also the lazy ones inside
-- functions (require "x" / require("x") anywhere in the file, comments
-- left out). Prints each cycle found and ends "requires: N passed, N failed".

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

-- module name -> file
local files = {}
for f in sh("cd lua && find burrow tools policy -name '*.lua' | LC_ALL=C sort"):gmatch("[^\n]+") do
  local name = f:gsub("%.lua$", ""):gsub("/init$", ""):gsub("/", ".")
  files[name] = "lua/" .. f
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

-- depth-first search for cycles
local state, stack, cycles = {}, {}, {}
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
      cycles[#cycles + 1] = table.concat(cyc, " -> ")
    elseif not state[d] then
      visit(d)
    end
  end
  stack[#stack] = nil
  state[n] = "done"
end
local names = {}
for n in pairs(files) do names[#names + 1] = n end
table.sort(names)
for _, n in ipairs(names) do if not state[n] then visit(n) end end

for _, c in ipairs(cycles) do print("FAIL require cycle: " .. c) end
print(("requires: %d modules, %d edges"):format(#names, nedges))
print(("requires: %d passed, %d failed"):format(#cycles == 0 and 1 or 0, #cycles))
os.exit(#cycles == 0 and 0 or 1)
