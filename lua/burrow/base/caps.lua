-- burrow.base.caps: the result and size limits every tool applies, and the
-- parsers for sizes and durations written by people ("256KiB", "50MB",
-- "1000"; "30s", "500ms", "2h"): one LPeg grammar whose errors give the
-- column, for the caps and every duration of the config file alike
-- (burrow.base.quantity, loaded with the first use of caps.parse_size,
-- parse_duration or parse_ms: a start whose caps are all defaults parses
-- none; docs/benchmarks.md, Start-up).

local caps = {}

caps.defaults = {
  max_result_bytes = 256 * 1024, -- text handed to a model per call
  max_entries = 1000,            -- list_dir entries
  max_matches = 1000,            -- grep matches
  max_file_size = 64 * 1024 * 1024, -- largest file read or written
  max_line_chars = 2000,         -- longer lines are cut in read_file
  max_request_bytes = 64 * 1024 * 1024, -- largest MCP message accepted
  max_undo_bytes = 64 * 1024 * 1024, -- previous contents undo_edit keeps per session
  max_image_bytes = 10 * 1024 * 1024, -- largest image read_file returns as image content
  max_search_ms = 30000,         -- wall time of one grep or glob (ms; 0: none), then partial results
  max_search_bytes = 4 * 1024 * 1024 * 1024, -- bytes one grep reads (0: none), then partial results
  max_tree_ms = 60000,           -- wall time of one folder copy, move or remove, its entries' policy checks included (ms; 0: none)
  max_edit_ms = 30000,           -- wall time to match one edit_file call's edits (ms; 0: none), then nothing is written
  max_edit_files = 64,           -- files one edit_files call (or a pack's multi-file patch) changes as one
  max_edit_files_bytes = 64 * 1024 * 1024, -- new contents one such change stages, all files together
  max_watches = 256,             -- file watches at once (ws:watch, resources/subscribe)
  watch_interval_ms = 100,       -- a watch is reported at most once per interval
  task_after_ms = 500,           -- a call of a tool that supports MCP tasks, still running this long, becomes one (burrow.mcp.tasks)
  untrusted_boundary = false,    -- wrap read_file text in helix's untrusted-content tags
}

-- caps.parse_size, caps.parse_duration, caps.parse_ms: burrow.base.quantity
-- installs them with the first use of one
local LATER = { parse_size = true, parse_duration = true, parse_ms = true }
setmetatable(caps, { __index = function(c, k)
  if not LATER[k] then return nil end
  setmetatable(c, nil)
  require("burrow.base.quantity")(c)
  return rawget(c, k)
end })

-- Defaults overridden by t; unknown keys and bad values are errors.
function caps.merge(t)
  local out = {}
  for k, v in pairs(caps.defaults) do out[k] = v end
  for k, v in pairs(t or {}) do
    if caps.defaults[k] == nil then
      local names = {}
      for name in pairs(caps.defaults) do names[#names + 1] = name end
      table.sort(names)
      return nil, ("unknown cap %q (known: %s)"):format(k, table.concat(names, ", "))
    end
    if type(caps.defaults[k]) == "boolean" then
      if v == "true" or v == true then out[k] = true
      elseif v == "false" or v == false then out[k] = false
      else return nil, ("cap %s: expected true or false"):format(k) end
    else
      local n, err = (k:match("_ms$") and caps.parse_ms or caps.parse_size)(v)
      if not n then return nil, ("cap %s: %s"):format(k, err) end
      out[k] = n
    end
  end
  return out
end

return caps
