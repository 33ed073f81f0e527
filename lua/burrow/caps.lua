-- burrow.caps: the result and size limits every tool applies, and the
-- parsers for sizes and durations written by people ("256KiB", "50MB",
-- "1000"; "30s", "500ms").

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
  max_watches = 256,             -- file watches at once (ws:watch, resources/subscribe)
  watch_interval_ms = 100,       -- a watch is reported at most once per interval
  untrusted_boundary = false,    -- wrap read_file text in helix's untrusted-content tags
}

local units = {
  [""] = 1, B = 1,
  KB = 1000, MB = 1000 ^ 2, GB = 1000 ^ 3,
  KiB = 1024, MiB = 1024 ^ 2, GiB = 1024 ^ 3,
}

-- "64MiB" -> 67108864; nil, message for anything else.
function caps.parse_size(v)
  if math.type(v) == "integer" then return v >= 0 and v or nil, "negative size" end
  if type(v) ~= "string" then return nil, "expected a size like 256KiB or 50MB" end
  local num, unit = v:match("^%s*(%d+%.?%d*)%s*(%a*)%s*$")
  local mult = unit and units[unit]
  if not num or not mult then
    return nil, ("invalid size %q (use a number with B, KB, MB, GB, KiB, MiB or GiB)"):format(v)
  end
  return math.floor(tonumber(num) * mult)
end

local time_units = { [""] = 1, ms = 1, s = 1000, m = 60000 }

-- "30s" -> 30000 (milliseconds; a bare number is milliseconds too).
function caps.parse_ms(v)
  if math.type(v) == "integer" then return v >= 0 and v or nil, "negative duration" end
  if type(v) ~= "string" then return nil, "expected a duration like 30s or 500ms" end
  local num, unit = v:match("^%s*(%d+%.?%d*)%s*(%a*)%s*$")
  local mult = unit and time_units[unit]
  if not num or not mult then
    return nil, ("invalid duration %q (use a number of ms, or with ms, s or m)"):format(v)
  end
  return math.floor(tonumber(num) * mult)
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
