-- burrow.base.files: the operator-side file helpers the loaders share (tools,
-- policies, config): these read trusted files named by the operator or
-- shipped with burrow, never an agent's path (those go through the
-- resolver in burrow.core).

local core = require "burrow.core"

local files = {}

-- A path under core.builtin_dir ("[burrow]/lua") names a Lua file built
-- into the burrow binary (a copied binary runs from them): answered from
-- the binary, never looked for on disk.
local function builtin(file)
  local dir = core.builtin_dir
  return dir ~= "" and file:sub(1, #dir + 1) == dir .. "/"
end

function files.readable(file)
  if builtin(file) then return core.builtin(file) ~= nil end
  local f = io.open(file, "rb")
  if f then f:close() end
  return f ~= nil
end

-- The whole file, or nil, message.
function files.read(file)
  if builtin(file) then return core.builtin(file) end
  local f, err = io.open(file, "rb")
  if not f then return nil, err end
  local s, rerr = f:read("a")
  f:close()
  if not s then return nil, rerr end
  return s
end

-- The rule for tools and policies entries (docs/config.md): a file if it
-- has a "/" or ends in .lua, else a name.
function files.is_file(spec)
  return spec:find("/", 1, true) ~= nil or spec:sub(-4) == ".lua" -- plain compares: no pattern matched at start
end

-- A built-in directory (tools, policy): beside lua/burrow in the source
-- tree and `make install`, or inside the module in the rock (a Lua module
-- tree has no room for top-level dirs). probe names a file it must hold.
-- here is the directory of burrow/base/files.lua's burrow, up its parent.
-- A chunk named as this file is installed ("@DIR/burrow/base/files.lua")
-- is cut by length: each pattern below backtracks over the whole path,
-- ~4-8 k instructions a start (docs/benchmarks.md, Start-up); any other
-- name by the patterns, with the same answer.
local here, up
do
  local source, tail = debug.getinfo(1, "S").source, "/burrow/base/files.lua"
  if source:sub(1, 1) == "@" and #source > #tail + 1 and source:sub(-#tail) == tail then
    here, up = source:sub(2, -#"/base/files.lua" - 1), source:sub(2, -#tail - 1)
  else
    here = source:match("^@(.*)/[^/]+/[^/]+$") or "lua/burrow"
  end
end

function files.builtin_dir(sub, probe)
  if files.readable(("%s/%s/%s"):format(here, sub, probe)) then return here .. "/" .. sub end
  up = up or here:match("^(.*)/[^/]+$") or "."
  return up .. "/" .. sub
end

-- The names in a directory of burrow's own (built-in, or on disk), sorted
-- or not; none when it cannot be listed.
function files.list(dir)
  if builtin(dir .. "/") then return core.builtin_list(dir) end
  local out, p = {}, io.popen(("ls -1 %q 2>/dev/null"):format(dir))
  if p then
    for line in p:lines() do out[#out + 1] = line end
    p:close()
  end
  return out
end

-- NAME.lua in the first of dirs (the operator's own) that has it, else in
-- the built-in directory.
function files.find(name, dirs, builtin)
  for _, dir in ipairs(dirs or {}) do
    local file = tostring(dir) .. "/" .. name .. ".lua"
    if files.readable(file) then return file end
  end
  return builtin .. "/" .. name .. ".lua"
end

-- Lua names a chunk in its positions ("FILE:LINE:") by at most 59 bytes
-- of its file name: a longer one is cut to "..." and its end, which
-- leaves an operator with a deep config path guessing which file it was.
-- text (a load or runtime error of the chunk "@" .. file, a traceback)
-- with that cut form, as Lua itself gives it, put back to the whole name
-- before each ":" it stands at. Nothing in text is read but that name.
function files.whole_name(text, file)
  if type(text) ~= "string" then return text end
  local _, probe = pcall(load("error('')", "@" .. file))
  local cut = type(probe) == "string" and probe:sub(1, -5) -- Lua's id, without ":1: "
  if not cut or cut == file or cut == "" then return text end
  local out, at = {}, 1
  while true do
    local i, j = text:find(cut .. ":", at, true)
    if not i then break end
    out[#out + 1], out[#out + 2], at = text:sub(at, i - 1), file .. ":", j + 1
  end
  out[#out + 1] = text:sub(at)
  return table.concat(out)
end

return files
