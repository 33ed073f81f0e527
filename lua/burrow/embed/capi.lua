-- burrow.embed.capi: the Lua half of the C embedding API (host/src/api/api.c).
-- Strings in, strings out: JSON arguments and results.

local burrow = require "burrow"
local config = require "burrow.config"
local core = require "burrow.core"
local json = core.json

local capi = {}

-- config: NULL/"" = the current directory; YAML configuration text
-- (docs/config.md; relative paths from the current directory); a text that
-- is one plain string is a root, DIR[:MOUNT][:ro], as before YAML arrived.
function capi.open(text)
  if not text or text == "" then return burrow.open {} end
  local plain = core.yaml_decode(text)
  if type(plain) == "string" then return burrow.open { roots = { plain } } end
  local opts, err = config.parse(text, "config", ".")
  if not opts then return nil, err end
  return burrow.open(opts)
end

-- A YAML configuration file; relative paths in it start at its directory.
function capi.open_file(path)
  local opts, err = config.load(path)
  if not opts then return nil, err end
  return burrow.open(opts)
end

-- burrow.open's options as JSON (burrow.host, for ws:submit: the same
-- workspace, opened again on a worker's state).
function capi.open_json(text)
  local opts, err = json.decode(text)
  if type(opts) ~= "table" then return nil, "INVALID_ARGUMENT: options: " .. tostring(err) end
  return burrow.open(opts)
end

-- -> 0, result JSON | 1, {"error":{code, message, details}} JSON. hooks (a
-- submitted call's, api.c): cancelled() and progress(done, total, message).
function capi.call(ws, tool, args_json, hooks)
  local args, err = json.decode(args_json)
  if type(args) ~= "table" then
    return 1, json.encode { error = { code = "INVALID_ARGUMENT", message = "INVALID_ARGUMENT: arguments must be a JSON object: " .. tostring(err) } }
  end
  local res, msg, code, details = ws:call(tool, args, hooks)
  if not res then return 1, json.encode { error = { code = code, message = msg, details = details } } end
  return 0, json.encode(res)
end

function capi.tools(ws, format)
  local list, err = ws:tools { format = format }
  if not list then return 1, err end
  return 0, json.encode(list)
end

return capi
