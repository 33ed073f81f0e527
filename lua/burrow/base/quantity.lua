-- burrow.base.quantity: sizes and durations written by people ("256KiB",
-- "50MB", "1000"; "30s", "500ms", "2h") read by one LPeg grammar whose
-- errors give the column: caps.parse_size, caps.parse_duration and
-- caps.parse_ms, installed in burrow.base.caps with the first use of one
-- of them (caps.lua's LATER), for the caps and every duration of the
-- config file alike.

require "burrow.core" -- first: it offers the LPeg it links as package.preload.lpeg
local lpeg = require "lpeg"

return function(caps)
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
end
