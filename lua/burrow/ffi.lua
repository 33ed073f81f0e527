-- burrow.ffi: burrow from LuaJIT (LÖVE, Neovim, OpenResty) through the FFI
-- over libburrow's C API (burrow.h): no compiled Lua module. The calls run
-- in libburrow's own Lua 5.4 state; burrow.bridge (the workspace object,
-- shared with burrow.native) moves JSON across.
--
--   local burrow = require "burrow.ffi"   -- or require "burrow" from the rock
--   local ws = assert(burrow.open { roots = { { path = ".", mount = "/w" } } })
--   local res, msg, code = ws:call("read_file", { path = "/w/README.md" })
--   local c = ws:call("grep", { pattern = "TODO" }, function(res, msg, code) end)
--   ws:poll()   -- once a frame, or when ws:fd() is readable: runs the callbacks
--   c:cancel()  -- stops the grep if it still runs
--   ws:on_ask(function(req, reason) return true end)  -- a policy's "ask" in a call with a callback
--   ws:close()
--
-- burrow.open(config[, {lib = PATH, approve = fn, approve_timeout_ms = N}]):
-- the library is PATH, $BURROW_LIB, the rock's own copy (burrow/libburrow.so
-- on package.cpath), else libburrow.so.0 from the loader's path (`make
-- install` puts it in PREFIX/lib). JSON: vim.json (Neovim), cjson if
-- installed, else burrow.jsonlite.

local ffi = require "ffi"
local bridge = require "burrow.bridge"

ffi.cdef [[
typedef struct burrow_host burrow_host;
void *dlopen(const char *file, int mode);
void *dlsym(void *handle, const char *name);
char *dlerror(void);
]]

-- The functions of burrow.h used here, as function pointer types.
local SIGS = {
  burrow_open = "burrow_host *(*)(const char *, char **)",
  burrow_call = "int (*)(burrow_host *, const char *, const char *, char **)",
  burrow_tools = "char *(*)(burrow_host *, const char *)",
  burrow_version = "const char *(*)(void)",
  burrow_free = "void (*)(void *)",
  burrow_close = "void (*)(burrow_host *)",
  burrow_submit = "unsigned long long (*)(burrow_host *, const char *, const char *, void *, void *)",
  burrow_fd = "int (*)(burrow_host *)",
  burrow_take = "int (*)(burrow_host *, unsigned long long *, int *, char **)",
  burrow_cancel = "int (*)(burrow_host *, unsigned long long)",
  burrow_set_approver = "void (*)(burrow_host *, void *, void *, int)",
  burrow_take_ask = "int (*)(burrow_host *, unsigned long long *, char **)",
  burrow_answer = "int (*)(burrow_host *, unsigned long long, int, const char *)",
}

-- A string burrow returned, copied and freed.
local function take_string(C, p)
  if p == nil then return nil end
  local s = ffi.string(p)
  C.burrow_free(p)
  return s
end

-- The bridge's functions over the C ones (see burrow.bridge).
local function wrap(C)
  local out = ffi.new("char *[1]")
  local idp, rcp = ffi.new("unsigned long long[1]"), ffi.new("int[1]")
  local lib = { C = C }
  function lib.open(config)
    local err = ffi.new("char *[1]")
    local h = C.burrow_open(config, err)
    if h == nil then return nil, take_string(C, err[0]) end
    return ffi.gc(h, C.burrow_close)
  end
  function lib.close(h) C.burrow_close(ffi.gc(h, nil)) end
  function lib.call(h, tool, json)
    local rc = C.burrow_call(h, tool, json, out)
    return rc, take_string(C, out[0])
  end
  function lib.tools(h, format) return take_string(C, C.burrow_tools(h, format)) end
  function lib.submit(h, tool, json) return tonumber(C.burrow_submit(h, tool, json, nil, nil)) end
  function lib.fd(h) return C.burrow_fd(h) end
  function lib.take(h)
    if C.burrow_take(h, idp, rcp, out) ~= 1 then return nil end
    return tonumber(idp[0]), rcp[0], take_string(C, out[0])
  end
  function lib.cancel(h, id) return C.burrow_cancel(h, id) == 1 end
  function lib.set_approver(h, timeout_ms) C.burrow_set_approver(h, nil, nil, timeout_ms) end
  function lib.take_ask(h)
    if C.burrow_take_ask(h, idp, out) ~= 1 then return nil end
    return tonumber(idp[0]), take_string(C, out[0])
  end
  function lib.answer(h, id, ok, why) return C.burrow_answer(h, id, ok and 1 or 0, why) == 1 end
  function lib.version() return ffi.string(C.burrow_version()) end
  return lib
end

-- libburrow is opened with RTLD_DEEPBIND: a LuaJIT process exports lua_*
-- symbols of the 5.1 API, and without it libburrow's Lua 5.4 calls would
-- bind to those. With it, libburrow and its liblua5.4 look in their own
-- scope first. (ffi.load has no such flag, hence dlopen and dlsym here.)
local RTLD_NOW, RTLD_DEEPBIND = 2, 8
local function load(path) -- bridge.module keeps what it returns, per path
  local names = { path }
  if not path then
    local own = package.searchpath and package.searchpath("burrow.libburrow", package.cpath)
    names = { own, "libburrow.so.0", "libburrow.so" }
  end
  local handle, tried = nil, {}
  for i = 1, 3 do
    local name = names[i]
    if name then
      handle = ffi.C.dlopen(name, RTLD_NOW + RTLD_DEEPBIND)
      if handle ~= nil then break end
      local e = ffi.C.dlerror() -- each attempt's own reason, read before the next
      tried[#tried + 1] = e ~= nil and ffi.string(e) or (name .. ": not found")
    end
  end
  if handle == nil then
    return nil, "burrow.ffi: cannot load libburrow (" .. table.concat(tried, "; ")
      .. "); install it (make install, or the rock) or set BURROW_LIB or {lib = PATH}"
  end
  local C = { handle = handle } -- never dlclose'd: a host may outlive any one table
  for name, sig in pairs(SIGS) do
    local f = ffi.C.dlsym(handle, name)
    if f == nil then return nil, "burrow.ffi: libburrow lacks " .. name .. " (too old?)" end
    C[name] = ffi.cast(sig, f)
  end
  return wrap(C)
end

return bridge.module(load, "burrow.ffi")
