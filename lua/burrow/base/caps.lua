-- burrow.base.caps: the result and size limits every tool applies, and the
-- parsers for sizes and durations written by people ("256KiB", "50MB",
-- "1000"; "30s", "500ms", "2h"): one LPeg grammar whose errors give the
-- column, for the caps and every duration of the config file alike.

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

local units = {
  [""] = 1, B = 1,
  KB = 1000, MB = 1000 ^ 2, GB = 1000 ^ 3,
  KiB = 1024, MiB = 1024 ^ 2, GiB = 1024 ^ 3,
}
local time_units = { ms = 1, s = 1000, m = 60000, h = 3600000 }
local bare_ms = setmetatable({ [""] = 1 }, { __index = time_units }) -- a bare number: ms

-- The grammar of a size or a duration: blanks, a number (digits, an
-- optional fraction), blanks, a unit (letters, possibly none), blanks. Each
-- part is captured with its position, so an error can say where it is.
require "burrow.core" -- first: it offers the LPeg it links as package.preload.lpeg
local lpeg = require "lpeg"
local P, R, S, C, Cp = lpeg.P, lpeg.R, lpeg.S, lpeg.C, lpeg.Cp
local blank = S " \t" ^ 0
local number = C(R "09" ^ 1 * (P "." * R "09" ^ 0) ^ -1)
local unit = C(R("az", "AZ") ^ 0)
local quantity = blank * Cp() * number ^ -1 * blank * Cp() * unit * blank * Cp()

-- text -> number, unit | nil, what is wrong, column (1-based)
local function parse_quantity(text, known)
  local at_num, num, at_unit, u, at_end = quantity:match(text)
  if type(num) ~= "string" then -- no number: the captures shifted left
    return nil, "expected a number", at_num
  end
  if at_end <= #text then
    return nil, ("unexpected %q"):format(text:sub(at_end, at_end)), at_end
  end
  if not known[u] then return nil, u == "" and "no unit" or ("unknown unit %q"):format(u), at_unit end
  return tonumber(num), u
end

local function quantity_error(kind, v, what, col, hint)
  return ("invalid %s %q: %s at column %d (%s)"):format(kind, v, what, col, hint)
end

local SIZE_HINT = "use a number with B, KB, MB, GB, KiB, MiB or GiB"
local TIME_HINT = "use a number of ms, or with ms, s, m or h"
local UNIT_HINT = "use a number with ms, s, m or h"

-- "64MiB" -> 67108864; nil, message for anything else (the message says
-- where: `invalid size "5XB": unknown unit "XB" at column 2 (...)`).
function caps.parse_size(v)
  if math.type(v) == "integer" then return v >= 0 and v or nil, "negative size" end
  if type(v) ~= "string" then return nil, "expected a size like 256KiB or 50MB" end
  local num, unit, col = parse_quantity(v, units)
  if not num then return nil, quantity_error("size", v, unit, col, SIZE_HINT) end
  return math.floor(num * units[unit])
end

-- "2h", "30s", "1.5s", "500ms" -> milliseconds (not rounded); with
-- bare, a bare number is milliseconds too ("1000"), else it needs its
-- unit. nil, message (saying where) for anything else.
function caps.parse_duration(v, bare)
  if math.type(v) == "integer" and bare then return v >= 0 and v or nil, "negative duration" end
  if type(v) ~= "string" then return nil, "expected a duration like 30s or 500ms" end
  local known = bare and bare_ms or time_units
  local num, unit, col = parse_quantity(v, known)
  -- third: the fault alone (`unknown unit "d" at column 2`), for a caller
  -- that words the message itself (config.lua)
  if not num then return nil, quantity_error("duration", v, unit, col, bare and TIME_HINT or UNIT_HINT), ("%s at column %d"):format(unit, col) end
  return num * known[unit]
end

-- "30s" -> 30000 (whole milliseconds; a bare number is milliseconds too).
function caps.parse_ms(v)
  local ms, err = caps.parse_duration(v, true)
  if not ms then return nil, err end
  return math.floor(ms)
end

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
