-- probe_child.lua SCRIPT: run burrow calls in a separate lua5.4 process.
--
-- The security suite uses it for calls that must not run inside the busted
-- process: reads of devices (a broken build could read /dev/zero without
-- bound) and the [root] cases that need a private mount namespace
-- (`unshare -m`). SCRIPT is a Lua chunk returning
--   {roots = ..., caps = ..., resolver = ..., outside_fd_of = "/host/path",
--    calls = {{tool, args}, ...}}
-- The results are printed as a Lua chunk on stdout for the parent to load.
-- "%FD%" in a call's path is replaced by the number of an fd this process
-- holds open on `outside_fd_of` (procfs magic-link cases).

local spec = assert(dofile(arg[1]))
local burrow = require "burrow"

local function ser(v)
  local t = type(v)
  if t == "string" then return ("%q"):format(v)
  elseif t == "number" or t == "boolean" or t == "nil" then return tostring(v)
  elseif t == "table" then
    local parts = {}
    for k, x in pairs(v) do
      if type(x) ~= "function" and type(x) ~= "userdata" then
        parts[#parts + 1] = "[" .. ser(k) .. "]=" .. ser(x)
      end
    end
    return "{" .. table.concat(parts, ",") .. "}"
  end
  return ("%q"):format(tostring(v))
end

local fdnum, keep
if spec.outside_fd_of then
  keep = assert(io.open(spec.outside_fd_of, "rb"))
  -- $PPID of the popen shell is this process
  local p = io.popen("for f in /proc/$PPID/fd/*; do printf '%s %s\\n' \"${f##*/}\" \"$(readlink \"$f\")\"; done")
  for line in p:lines() do
    local n, target = line:match("^(%d+) (.*)$")
    if target == spec.outside_fd_of then fdnum = n end
  end
  p:close()
end

local out = {fd = fdnum}
local ws, err, code = burrow.open{roots = spec.roots, caps = spec.caps, resolver = spec.resolver}
if not ws then
  out.open_error = {msg = err, code = code}
else
  for i, c in ipairs(spec.calls) do
    local args = {}
    for k, v in pairs(c[2]) do
      if type(v) == "string" and fdnum then v = v:gsub("%%FD%%", fdnum) end
      args[k] = v
    end
    local res, msg, ecode = ws:call(c[1], args)
    local r = {ok = res ~= nil, code = ecode, msg = msg}
    if type(res) == "table" then
      r.content = type(res.content) == "string" and res.content:sub(1, 4096) or nil
      r.content_len = type(res.content) == "string" and #res.content or nil
      r.type = res.type
      r.truncated = res.truncated
      local names = {}
      for _, e in ipairs(type(res.entries) == "table" and res.entries or {}) do
        names[#names + 1] = tostring(e.path or e.name)
      end
      r.entries = names
      local files = {} -- grep's: the paths of the files that matched
      for _, f in ipairs(type(res.files) == "table" and res.files or {}) do
        files[#files + 1] = tostring(type(f) == "table" and f.path or f)
      end
      r.files = files
    end
    out[i] = r
  end
  ws:close()
end
if keep then keep:close() end
io.write("return ", ser(out), "\n")
