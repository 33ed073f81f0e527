-- burrow.bridge: the workspace object of every Lua that is not burrow's own
-- 5.4 (LuaJIT, Lua 5.1, 5.2, 5.3), over libburrow's C API (burrow.h). The
-- calls run in libburrow's own Lua 5.4 state; this side moves JSON text
-- across, so nothing raised inside libburrow reaches the host.
--
-- One class, two ways in: burrow.ffi (LuaJIT's FFI) and burrow.native (a
-- small C module, host/rock/native.c, for Lua 5.1 to 5.4). Each gives a
-- loader, load(path) -> lib | nil, err, whose lib has these functions:
--
--   open(config_text|nil) -> h | nil, err     close(h)
--   call(h, tool, json) -> rc, text            tools(h, format) -> text|nil
--   submit(h, tool, json) -> id (0: not queued)
--   take(h) -> id, rc, text | nil              fd(h) -> int
--   cancel(h, id) -> bool                      set_approver(h, timeout_ms)
--   take_ask(h) -> id, text | nil              answer(h, id, ok, why|nil) -> bool
--   version() -> string
--
-- Conventions (luv's): ws:call without a callback waits and returns the
-- result, or nil, message, code; with one it returns at once a handle whose
-- :cancel() stops the call, and the callback runs inside a later ws:poll().
-- Misuse (a closed workspace, a tool name that is not a string) raises.
-- Written for Lua 5.1: no goto, no integer division, no utf8 library.

local M = {}

-- JSON: vim.json (Neovim), cjson if installed, else burrow.jsonlite.
function M.pick_json()
  if type(vim) == "table" and type(vim.json) == "table" then
    return { encode = vim.json.encode, decode = function(s) return vim.json.decode(s, { luanil = { object = true, array = true } }) end }
  end
  local ok, cjson = pcall(require, "cjson.safe")
  if ok then return cjson end
  return require "burrow.jsonlite"
end

local Workspace = {}
Workspace.__index = Workspace

local Call = {}
Call.__index = Call

--- Stop the call (a partial result, or a CANCELLED error, reaches its
-- callback); true if it was still running.
function Call:cancel()
  return self.ws:cancel(self.id)
end

local function check_open(ws, level)
  if ws.h == nil then error("burrow: the workspace is closed", (level or 2) + 1) end
end

-- JSON text of a tool's result or error -> res | nil, message, code
local function answer(json, rc, text)
  local obj = text and json.decode(text)
  if rc == 0 and type(obj) == "table" then return obj end
  local e = type(obj) == "table" and type(obj.error) == "table" and obj.error or {}
  return nil, e.message or text or "burrow: no result", e.code or "EIO"
end

-- A tool name C would read short (up to a NUL) names another tool.
local function bad_name(tool)
  if tool:find("\0", 1, true) then
    return "INVALID_ARGUMENT: the tool name holds a NUL byte", "INVALID_ARGUMENT"
  end
end

local function encode_args(json, args)
  if args ~= nil and type(args) ~= "table" then error("burrow: tool arguments must be a table", 3) end
  return json.encode(args or {})
end

--- The module of one way in: load is its loader (see above), name what
-- errors call it ("burrow.ffi", "burrow.native"). A library is loaded once
-- per path ($BURROW_LIB when none is given) and kept.
function M.module(load_lib, name)
  local B = { json = M.pick_json(), backend = name }
  local libs = {}
  local function load(path)
    path = path or os.getenv("BURROW_LIB")
    local key = path or "default"
    if not libs[key] then
      local lib, err = load_lib(path)
      if not lib then return nil, err end
      libs[key] = lib
    end
    return libs[key]
  end

  --- burrow.open(config[, {lib = PATH, approve = fn, approve_timeout_ms = N}]):
  -- config is the YAML configuration (docs/config.md) as text, a table of
  -- the same keys, or nil for the current directory.
  function B.open(config, opts)
    opts = opts or {}
    if type(opts) ~= "table" then error(name .. ".open: options must be a table", 2) end
    local lib, lerr = load(opts.lib)
    if not lib then return nil, lerr end
    if type(config) == "table" then config = B.json.encode(config) end -- JSON is YAML
    if config ~= nil and type(config) ~= "string" then error(name .. ".open: config must be YAML text, a table or nil", 2) end
    -- C sees text up to a NUL: a config cut there would lose what follows
    -- (its policies, say) without a word
    if config and config:find("\0", 1, true) then return nil, "INVALID_ARGUMENT: the configuration holds a NUL byte" end
    local h, err = lib.open(config)
    if not h then return nil, err or "burrow_open failed" end
    local ws = setmetatable({ lib = lib, h = h, json = B.json, pending = {} }, Workspace)
    if opts.approve then ws:on_ask(opts.approve, opts.approve_timeout_ms) end
    return ws
  end

  function B.version(opts)
    local lib = assert(load(opts and opts.lib))
    return lib.version()
  end

  return B
end

--- ws:call(tool, args) -> res | nil, message, code;
--- ws:call(tool, args, function(res, message, code) end) -> a call handle
--- (:cancel()), or nil, message, code when it could not be queued.
function Workspace:call(tool, args, cb)
  check_open(self)
  if type(tool) ~= "string" then error("ws:call: tool name must be a string", 2) end
  if cb ~= nil then
    if type(cb) ~= "function" then error("ws:call: the third argument is a callback function", 2) end
    local id, msg, code = self:submit(tool, args, cb)
    if not id then return nil, msg, code end
    return setmetatable({ ws = self, id = id }, Call)
  end
  local bad, bcode = bad_name(tool)
  if bad then return nil, bad, bcode end
  local rc, text = self.lib.call(self.h, tool, encode_args(self.json, args))
  if rc == 2 then return nil, "INVALID_ARGUMENT: the host is busy or the call malformed", "INVALID_ARGUMENT" end
  return answer(self.json, rc, text)
end

function Workspace:tools(opts)
  check_open(self)
  local format = opts and opts.format or "mcp"
  local text = self.lib.tools(self.h, format)
  if not text then return nil, "unknown format " .. tostring(format) end
  return self.json.decode(text)
end

--- Queue a call; cb(res) or cb(nil, msg, code) runs inside a later poll().
-- Returns its id (for ws:cancel).
function Workspace:submit(tool, args, cb)
  check_open(self)
  if type(tool) ~= "string" then error("ws:submit: tool name must be a string", 2) end
  if type(cb) ~= "function" then error("ws:submit: a callback function is needed", 2) end
  local bad, bcode = bad_name(tool)
  if bad then return nil, bad, bcode end
  local id = self.lib.submit(self.h, tool, encode_args(self.json, args))
  if id == 0 then return nil, "EIO: the call could not be queued", "EIO" end
  self.pending[id] = cb
  return id
end

--- The eventfd that is readable while a completion waits.
function Workspace:fd()
  check_open(self)
  return self.lib.fd(self.h)
end

--- The approval hook of a policy's "ask" in a submitted call (burrow.h's
-- burrow_set_approver, pull form): fn(req, reason) runs inside ws:poll with
-- req = {id =, tool =, operation =, path =, reason =} and returns true,
-- false[, why], or "later" to answer with ws:answer(req.id, allowed[, why]).
-- The call waits at most timeout_ms (default 300000), then is denied. nil:
-- off (asks denied). A call without a callback cannot be asked: denied.
function Workspace:on_ask(fn, timeout_ms)
  check_open(self)
  if fn ~= nil and type(fn) ~= "function" then error("ws:on_ask: expected a function or nil", 2) end
  self.approve = fn
  self.lib.set_approver(self.h, fn and (timeout_ms or 300000) or 0)
end

--- Answer a question whose hook returned "later": true if the call waited for it.
function Workspace:answer(id, allowed, why)
  check_open(self)
  if type(id) ~= "number" or id < 1 then return false end
  return self.lib.answer(self.h, id, allowed and true or false, why ~= nil and tostring(why) or nil)
end

-- The questions waiting, each put to the hook here (see on_ask).
local function answer_asks(self)
  while true do
    local id, text = self.lib.take_ask(self.h)
    if not id then return end
    local req = self.json.decode(text)
    req.id = id
    local ok, granted, why = false, nil, nil
    if self.approve then ok, granted, why = pcall(self.approve, req, req.reason) end
    if not (ok and granted == "later") then
      if not ok and self.approve then io.stderr:write("burrow: the approval hook failed: ", tostring(granted), "\n") end
      if not ok then why = self.approve and "the approval hook failed" or "this client cannot be asked" end
      self.lib.answer(self.h, id, (ok and granted) and true or false, why ~= nil and tostring(why) or nil)
    end
  end
end

--- Run the callbacks of finished calls; returns how many. Never blocks.
function Workspace:poll()
  check_open(self)
  answer_asks(self)
  local n = 0
  while self.h ~= nil do -- a callback may close the workspace
    local id, rc, text = self.lib.take(self.h)
    if not id then break end
    local cb = self.pending[id]
    self.pending[id] = nil
    n = n + 1
    if cb then cb(answer(self.json, rc, text)) end
  end
  return n
end

--- Stop a submitted call by id: true if it was still running.
function Workspace:cancel(id)
  check_open(self)
  if type(id) ~= "number" then return false end
  return self.lib.cancel(self.h, id)
end

--- Close the workspace (waits for its running calls to stop); again is a no-op.
function Workspace:close()
  if self.h ~= nil then
    local h = self.h
    self.h = nil
    self.lib.close(h)
  end
  self.pending = {}
end

M.Workspace = Workspace
M.Call = Call
return M
