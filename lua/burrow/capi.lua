-- burrow.capi: the Lua half of the C embedding API (host/src/api.c).
-- Strings in, strings out: JSON arguments and results.

local burrow = require "burrow"
local json = require("burrow.core").json

local capi = {}

-- config: NULL/"" = the current directory; otherwise a root path for now.
function capi.open(config)
  local roots
  if config and config ~= "" then roots = { config } end -- DIR[:MOUNT][:ro]
  return burrow.open { roots = roots }
end

-- -> 0, result JSON | 1, {"error":{...}} JSON
function capi.call(ws, tool, args_json)
  local args, err = json.decode(args_json)
  if type(args) ~= "table" then
    return 1, json.encode { error = { code = "INVALID_ARGUMENT", message = "INVALID_ARGUMENT: arguments must be a JSON object: " .. tostring(err) } }
  end
  local res, msg, code = ws:call(tool, args)
  if not res then return 1, json.encode { error = { code = code, message = msg } } end
  return 0, json.encode(res)
end

function capi.tools(ws, format)
  local list, err = ws:tools { format = format }
  if not list then return 1, err end
  return 0, json.encode(list)
end

return capi
