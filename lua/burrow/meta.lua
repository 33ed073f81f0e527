---@meta burrow
-- Type stubs (LuaCATS, for lua-language-server) of the API every Lua shares:
-- require "burrow" from the rock for Lua 5.1-5.3 and LuaJIT (burrow.bridge
-- over burrow.native or burrow.ffi), and the subset of the Lua 5.4 binding
-- with the same names, and what only the 5.4 binding has (marked
-- ---@version 5.4). Declarations only: nothing here runs.
-- test/anylua/meta_spec.lua checks that these methods are the real ones.

---@class burrow
---@field json { encode: fun(v: any): string, decode: fun(s: string): any } the JSON the module uses
---@field backend string "burrow.ffi" or "burrow.native"
local burrow = {}

---@class burrow.OpenOptions
---@field lib? string path of libburrow.so (default: $BURROW_LIB, the rock's own copy, libburrow.so.0)
---@field approve? fun(req: burrow.AskRequest, reason: string): (boolean|"later"), string? a policy's "ask"
---@field approve_timeout_ms? integer how long a call waits for a "later" answer (default 300000)

---@class burrow.AskRequest
---@field id number the question's id, for ws:answer
---@field call number the id of the call that asks
---@field tool string
---@field operation string "read", "write", "delete", ...
---@field path string
---@field reason string

---@class burrow.Workspace
local Workspace = {}

---@class burrow.Call
---@field id number
local Call = {}

--- Open a workspace: config is the YAML configuration (docs/config.md) as
--- text, a table of the same keys, or nil for the current directory.
---@param config? string|table
---@param opts? burrow.OpenOptions
---@return burrow.Workspace|nil ws
---@return string? err
function burrow.open(config, opts) end

--- libburrow's version ("0.1.0"). (The Lua 5.4 binding's burrow.version
--- is that string itself.)
---@param opts? { lib?: string }
---@return string
function burrow.version(opts) end

--- Without cb: the result table, or nil, "CODE: message", CODE. With cb: a
--- handle at once (cb(res) or cb(nil, msg, code) runs inside ws:poll).
---@param tool string
---@param args? table
---@param cb? fun(res: table|nil, msg: string|nil, code: string|nil)
---@return table|burrow.Call|nil
---@return string? msg
---@return string? code
function Workspace:call(tool, args, cb) end

--- ws:call's call as an edge that prints the result itself makes it (the
--- MCP server, `burrow call`): the result as the tool gave it, with a held
--- set or page (grep's matches, glob's entries, read_file's page) where
--- the tool kept the core's, for burrow.toolkit.printer to print
--- (printer.wire, printer.tables; printer.done frees it). Lua code that
--- reads the result wants ws:call. The Lua 5.4 binding only.
---@version 5.4
---@param tool string
---@param args? table
---@param hooks? table
---@return table|nil
---@return string? msg
---@return string? code
---@return table? details
function Workspace:run(tool, args, hooks) end

--- The tool list: MCP-shaped, or {format = "openai"|"anthropic"}.
---@param opts? { format?: "mcp"|"openai"|"anthropic" }
---@return table[]|nil
---@return string? err
function Workspace:tools(opts) end

--- Queue a call; cb runs inside a later ws:poll(). Returns the call's id.
---@param tool string
---@param args table|nil
---@param cb fun(res: table|nil, msg: string|nil, code: string|nil)
---@return number|nil id
---@return string? msg
---@return string? code
function Workspace:submit(tool, args, cb) end

--- An eventfd, readable while a finished call waits for ws:poll().
---@return integer
function Workspace:fd() end

--- Run the callbacks of finished calls (and the ask hook); never blocks.
---@return integer n how many calls finished
function Workspace:poll() end

--- Stop a submitted call by id: true if it was still running.
---@param id number
---@return boolean
function Workspace:cancel(id) end

--- The hook of a policy's "ask" in calls with a callback (nil: asks denied).
---@param fn? fun(req: burrow.AskRequest, reason: string): (boolean|"later"), string?
---@param timeout_ms? integer
function Workspace:on_ask(fn, timeout_ms) end

--- Answer a question whose hook returned "later".
---@param id number the question's id (req.id)
---@param allowed boolean
---@param why? string
---@return boolean waited whether a call was waiting for it
function Workspace:answer(id, allowed, why) end

--- Close (waits for running calls to stop); again is a no-op.
function Workspace:close() end

--- Stop this call: true if it was still running.
---@return boolean
function Call:cancel() end

return burrow
