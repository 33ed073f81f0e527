-- burrow.base.rootspec: a root as the command line and the config file
-- write it, "DIR[:MOUNT][:ro]" (burrow.parse_root). Apart from `burrow` so
-- that the command line parses its --root options without loading the
-- workspace's modules: `burrow mcp` answers initialize before it opens
-- its workspace (docs/benchmarks.md, Start-up).

local rootspec = {}

--- {path =, mount = (or nil), mode = "rw" | "ro"}, or nil, message.
function rootspec.parse(spec)
  local parts = {}
  for p in (spec .. ":"):gmatch("([^:]*):") do parts[#parts + 1] = p end
  local root = { path = parts[1], mode = "rw" }
  if parts[#parts] == "ro" or parts[#parts] == "rw" then
    root.mode = table.remove(parts)
  end
  if #parts > 2 or root.path == "" then return nil, ("invalid root %q (use DIR[:MOUNT][:ro])"):format(spec) end
  if parts[2] and parts[2] ~= "" then root.mount = parts[2] end
  return root
end

return rootspec
