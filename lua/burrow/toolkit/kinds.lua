-- burrow.toolkit.kinds: what a tool's `kind` says about it, for native tools,
-- packs' tools and an operator's tools alike: its MCP annotations, its
-- permissions (the first is the operation its path arguments are judged
-- as, context.operation) and its risk. A tool declares `kind = "read"`
-- and any of the three it gives itself wins (registry.lua and pack.lua
-- fill in the rest). docs/tools.md lists the kinds.

local kinds = {}

-- MCP's tool annotations (openWorldHint always false: a workspace is closed).
function kinds.annotations(ro, destructive, idempotent)
  return { readOnlyHint = ro, destructiveHint = destructive, idempotentHint = idempotent, openWorldHint = false }
end
local A = kinds.annotations

-- kind = {annotations, permissions, risk}
kinds.of = {
  read = { A(true, false, true), { "fs.read" }, "low" },                 -- reads a file
  list = { A(true, false, true), { "fs.list" }, "low" },                 -- lists names
  write = { A(false, true, true), { "fs.write" }, "medium" },            -- replaces a whole file
  append = { A(false, false, false), { "fs.write" }, "medium" },         -- adds to a file, keeps what is there
  modify = { A(false, true, false), { "fs.write" }, "medium" },          -- changes part of a file in place
  edit = { A(false, true, false), { "fs.read", "fs.write" }, "medium" }, -- reads, then changes (packs' editors)
  copy = { A(false, true, false), { "fs.read", "fs.write" }, "medium" }, -- reads one path, writes another
  move = { A(false, true, false), { "fs.write", "fs.delete" }, "medium" }, -- writes one path, removes another
  create = { A(false, false, true), { "fs.write" }, "low" },             -- makes what is not there
  delete = { A(false, true, false), { "fs.delete" }, "high" },           -- removes
}

local names = {}
for k in pairs(kinds.of) do names[#names + 1] = k end
table.sort(names)
kinds.names = names

-- The kind's annotations, permissions and risk (copies: a tool may change
-- its own), or nil, message for a kind that is not one.
function kinds.get(kind)
  local k = kinds.of[kind]
  if not k then
    return nil, ("unknown kind %q (use %s)"):format(tostring(kind), table.concat(names, ", "))
  end
  local a, p = {}, {}
  for n, v in pairs(k[1]) do a[n] = v end
  for i, v in ipairs(k[2]) do p[i] = v end
  return a, p, k[3]
end

-- A tool table with a kind: its annotations, permissions and risk filled
-- in where it gives none itself. nil, message for an unknown kind.
function kinds.apply(t)
  if t.kind == nil then return t end
  local a, p, r = kinds.get(t.kind)
  if not a then return nil, p end
  if t.annotations == nil then t.annotations = a end
  if t.permissions == nil then t.permissions = p end
  if t.risk == nil then t.risk = r end
  return t
end

return kinds
