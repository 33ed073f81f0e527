-- burrow.ffi: burrow from LuaJIT (LÖVE, Neovim, OpenResty) through the FFI
-- over libburrow's C API (burrow.h): no compiled Lua 5.1 module. The calls
-- run in libburrow's own Lua 5.4 state; this side moves JSON across.
--
--   local burrow = require "burrow.ffi"
--   local ws = assert(burrow.open { roots = { { path = ".", mount = "/w" } } })
--   local res, msg, code = ws:call("read_file", { path = "/w/README.md" })
--   local id = ws:submit("grep", { pattern = "TODO" }, function(res, msg, code) end)
--   ws:poll()   -- once a frame, or when ws:fd() is readable: runs the callbacks
--   ws:on_ask(function(req, reason) return true end)  -- a policy's "ask" in a submitted call
--   ws:close()
--
-- burrow.open(config[, {lib = PATH, approve = fn, approve_timeout_ms = N}]): config is the YAML configuration
-- (docs/config.md) as text, as a table of the same keys, or nil for the
-- current directory; the library is PATH, $BURROW_LIB, else libburrow.so.0
-- from the loader's path (`make install` puts it in PREFIX/lib). JSON:
-- vim.json (Neovim), cjson if installed, else burrow.jsonlite.

local ffi = require "ffi"

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

local M = {}

local function pick_json()
  if type(vim) == "table" and type(vim.json) == "table" then
    return { encode = vim.json.encode, decode = function(s) return vim.json.decode(s, { luanil = { object = true, array = true } }) end }
  end
  local ok, cjson = pcall(require, "cjson.safe")
  if ok then return cjson end
  return require "burrow.jsonlite"
end
M.json = pick_json()

-- libburrow is opened with RTLD_DEEPBIND: a LuaJIT process exports lua_*
-- symbols of the 5.1 API, and without it libburrow's Lua 5.4 calls would
-- bind to those. With it, libburrow and its liblua5.4 look in their own
-- scope first. (ffi.load has no such flag, hence dlopen and dlsym here.)
local RTLD_NOW, RTLD_DEEPBIND = 2, 8
local libs = {}
local function load_lib(path)
  path = path or os.getenv("BURROW_LIB")
  local key = path or "default"
  if libs[key] then return libs[key] end
  local handle, tried = nil, {}
  for _, name in ipairs(path and { path } or { "libburrow.so.0", "libburrow.so" }) do
    handle = ffi.C.dlopen(name, RTLD_NOW + RTLD_DEEPBIND)
    if handle ~= nil then break end
    local e = ffi.C.dlerror() -- each attempt's own reason, read before the next
    tried[#tried + 1] = e ~= nil and ffi.string(e) or (name .. ": not found")
  end
  if handle == nil then
    return nil, "burrow.ffi: cannot load libburrow (" .. table.concat(tried, "; ")
      .. "); install it (make install) or set BURROW_LIB or {lib = PATH}"
  end
  local lib = { handle = handle } -- never dlclose'd: a host may outlive any one table
  for name, sig in pairs(SIGS) do
    local f = ffi.C.dlsym(handle, name)
    if f == nil then return nil, "burrow.ffi: libburrow lacks " .. name .. " (too old?)" end
    lib[name] = ffi.cast(sig, f)
  end
  libs[key] = lib
  return lib
end

-- A string burrow returned, copied and freed.
local function take_string(lib, p)
  if p == nil then return nil end
  local s = ffi.string(p)
  lib.burrow_free(p)
  return s
end

local Workspace = {}
Workspace.__index = Workspace

function M.open(config, opts)
  opts = opts or {}
  local lib, lerr = load_lib(opts.lib)
  if not lib then return nil, lerr end
  if type(config) == "table" then config = M.json.encode(config) end -- JSON is YAML
  if config ~= nil and type(config) ~= "string" then error("burrow.ffi.open: config must be YAML text, a table or nil", 2) end
  local err = ffi.new("char *[1]")
  local h = lib.burrow_open(config, err)
  if h == nil then return nil, take_string(lib, err[0]) or "burrow_open failed" end
  h = ffi.gc(h, lib.burrow_close)
  local ws = setmetatable({ lib = lib, h = h, pending = {}, out = ffi.new("char *[1]"),
    idp = ffi.new("unsigned long long[1]"), rcp = ffi.new("int[1]") }, Workspace)
  if opts.approve then ws:on_ask(opts.approve, opts.approve_timeout_ms) end
  return ws
end

function M.version(opts)
  local lib = assert(load_lib(opts and opts.lib))
  return ffi.string(lib.burrow_version())
end

local function check_open(ws)
  if ws.h == nil then error("burrow.ffi: the workspace is closed", 3) end
end

-- JSON text of a tool's result or error -> res | nil, message, code
local function answer(json, rc, text)
  local obj = text and json.decode(text)
  if rc == 0 and type(obj) == "table" then return obj end
  local e = type(obj) == "table" and type(obj.error) == "table" and obj.error or {}
  return nil, e.message or text or "burrow: no result", e.code or "EIO"
end

function Workspace:call(tool, args)
  check_open(self)
  if type(tool) ~= "string" then error("ws:call: tool name must be a string", 2) end
  local rc = self.lib.burrow_call(self.h, tool, M.json.encode(args or {}), self.out)
  if rc == 2 then return nil, "INVALID_ARGUMENT: the host is busy or the call malformed", "INVALID_ARGUMENT" end
  return answer(M.json, rc, take_string(self.lib, self.out[0]))
end

function Workspace:tools(opts)
  check_open(self)
  local text = take_string(self.lib, self.lib.burrow_tools(self.h, opts and opts.format or "mcp"))
  if not text then return nil, "unknown format " .. tostring(opts and opts.format) end
  return M.json.decode(text)
end

--- Queue a call; cb(res) or cb(nil, msg, code) runs inside a later poll().
function Workspace:submit(tool, args, cb)
  check_open(self)
  if type(tool) ~= "string" then error("ws:submit: tool name must be a string", 2) end
  if type(cb) ~= "function" then error("ws:submit: a callback function is needed", 2) end
  local id = self.lib.burrow_submit(self.h, tool, M.json.encode(args or {}), nil, nil)
  if id == 0 then return nil, "EIO: the call could not be queued", "EIO" end
  id = tonumber(id)
  self.pending[id] = cb
  return id
end

--- The eventfd that is readable while a completion waits.
function Workspace:fd()
  check_open(self)
  return self.lib.burrow_fd(self.h)
end

--- The approval hook of a policy's "ask" in a submitted call (burrow.h's
-- burrow_set_approver, pull form): fn(req, reason) runs inside ws:poll with
-- req = {id =, tool =, operation =, path =, reason =} and returns true,
-- false[, why], or "later" to answer with ws:answer(req.id, allowed[, why]).
-- The call waits at most timeout_ms (default 300000), then is denied. nil:
-- off (asks denied). ws:call cannot be asked here: its asks are denied.
function Workspace:on_ask(fn, timeout_ms)
  check_open(self)
  if fn ~= nil and type(fn) ~= "function" then error("ws:on_ask: expected a function or nil", 2) end
  self.approve = fn
  self.lib.burrow_set_approver(self.h, nil, nil, fn and (timeout_ms or 300000) or 0)
end

--- Answer a question whose hook returned "later": true if the call waited for it.
function Workspace:answer(id, allowed, why)
  check_open(self)
  if type(id) ~= "number" or id < 1 then return false end
  return self.lib.burrow_answer(self.h, id, allowed and 1 or 0, why ~= nil and tostring(why) or nil) == 1
end

-- The questions waiting, each put to the hook here (see on_ask).
local function answer_asks(self)
  while self.lib.burrow_take_ask(self.h, self.idp, self.out) == 1 do
    local id = tonumber(self.idp[0])
    local req = M.json.decode(take_string(self.lib, self.out[0]))
    req.id = id
    local ok, granted, why = false, nil, nil
    if self.approve then ok, granted, why = pcall(self.approve, req, req.reason) end
    if not (ok and granted == "later") then
      if not ok and self.approve then io.stderr:write("burrow: the approval hook failed: ", tostring(granted), "\n") end
      if not ok then why = self.approve and "the approval hook failed" or "this client cannot be asked" end
      self.lib.burrow_answer(self.h, id, ok and granted and 1 or 0, why ~= nil and tostring(why) or nil)
    end
  end
end

--- Run the callbacks of finished calls; returns how many. Never blocks.
function Workspace:poll()
  check_open(self)
  answer_asks(self)
  local n = 0
  while self.lib.burrow_take(self.h, self.idp, self.rcp, self.out) == 1 do
    local id, rc = tonumber(self.idp[0]), self.rcp[0]
    local text = take_string(self.lib, self.out[0])
    local cb = self.pending[id]
    self.pending[id] = nil
    n = n + 1
    if cb then cb(answer(M.json, rc, text)) end
  end
  return n
end

function Workspace:cancel(id)
  check_open(self)
  return self.lib.burrow_cancel(self.h, id) == 1
end

function Workspace:close()
  if self.h ~= nil then
    local h = ffi.gc(self.h, nil)
    self.h = nil
    self.lib.burrow_close(h)
  end
  self.pending = {}
end

return M
