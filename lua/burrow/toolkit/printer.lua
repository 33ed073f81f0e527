-- burrow.toolkit.printer: a result takes its form where it leaves burrow, as
-- ripgrep's printer is chosen by its caller, never from below. A tool
-- returns data; where nothing in Lua needs tables (no policy judging each
-- object, no boundary to tag), its heavy part stays the C object the core
-- made (lheld.c: grep's match set, glob's entry set; lpage.c: read_file's
-- page of numbered lines, counted and not yet written), and the edge asks
-- it for the form it sends:
--   the MCP channel (stdio, HTTP): printer.wire, JSON fragments, and the
--     tool's render asks the set for its text (set:text());
--   `burrow call`: printer.wire;
--   ws:call (the Lua API), a pack's ctx:call, the C API: printer.tables,
--     the tables roots:grep and roots:glob give, byte for byte the same
--     when encoded (spec/tools/grep_wire_spec.lua, glob_wire_spec.lua);
--     a page's numbered text as a string (read_file_wire_spec.lua).
-- A result holds its sets in fields its tool names (printer.holding(res,
-- "matches"); grep's files and counts lists beside: "matches", "files",
-- "counts"): the edges look at those fields alone, and every other result
-- passes each edge with one getmetatable, not a walk over its fields. A
-- result without a metatable holds nothing: an edge may pass it on as it
-- is without loading this module (`burrow call`, ws:call do: a one-shot
-- call that prints plain data never loads it; docs/benchmarks.md, Start-up).

local printer = {}

-- field names -> the metatable that marks a result holding sets there,
-- and back (a few lists: grep's matches, files and counts, glob's entries,
-- read_file's content)
local MARK, FIELDS = {}, {}

--- Marks res, a tool's result table, as holding a set in res[field] (and
-- in each further field named); returns it.
function printer.holding(res, field, ...)
  local key = select("#", ...) == 0 and field or table.concat({ field, ... }, ",")
  local mt = MARK[key]
  if not mt then
    mt = { __name = "burrow.printer.holding" }
    MARK[key], FIELDS[mt] = mt, { field, ... }
  end
  return setmetatable(res, mt)
end

-- The fields res names as holding sets, or nil. (Only a tool marks a
-- result; a named field holds a set when it is a userdata.)
local function held_fields(res)
  local mt = getmetatable(res)
  return mt ~= nil and FIELDS[mt] or nil
end

--- Whether res holds a set (printer.holding).
function printer.holds(res)
  for _, k in ipairs(held_fields(res) or {}) do
    if type(res[k]) == "userdata" then return true end
  end
  return false
end

--- What a held page raises when it cannot be written as it was counted
-- (lpage.c: {code =, message =}: its file changed or was cut meanwhile)
-- as a tool's failure: nil, "CODE: message", CODE. Any other error is
-- raised again.
function printer.failed(err)
  if type(err) ~= "table" or type(err.code) ~= "string" then error(err, 0) end
  return nil, ("%s: %s"):format(err.code, tostring(err.message)), err.code
end

--- Marks a tool's result whose text is file text, to be tagged as data
-- where it is printed (the untrusted-content boundary): record (what the
-- tag needs: {roots =, path =}) rides on the result itself, in its
-- metatable, so it crosses every edge with it and is never encoded (a
-- policy that makes a new result drops it, as it would the text). A
-- tagged result holds nothing: what needs tagging is made text in Lua.
-- Returns res.
function printer.tag(res, record)
  assert(getmetatable(res) == nil, "printer.tag: a result that holds a set or has a metatable")
  return setmetatable(res, { __name = "burrow.printer.tagged", tag = record })
end

--- The record printer.tag gave res, or nil.
function printer.tag_of(res)
  local mt = getmetatable(res)
  return type(mt) == "table" and mt.__name == "burrow.printer.tagged" and mt.tag or nil
end

--- Whether v is a held set (set:json(), set:text(), set:tables()).
function printer.held(v)
  if type(v) ~= "userdata" then return false end
  local mt = getmetatable(v)
  return type(mt) == "table" and mt.__held == true
end

--- res with its held fields made tables, in place (the result is the
-- caller's); res itself, or anything that is not a table, returned; or
-- nil, message, code (printer.failed).
function printer.tables(res)
  local fields = held_fields(res)
  if not fields then return res end
  setmetatable(res, nil) -- plain data from here
  local failed
  for _, k in ipairs(fields) do
    local v = res[k]
    if type(v) == "userdata" then
      local ok, t = pcall(v.tables, v)
      v:close() -- the core's result freed now, not when Lua collects the set
      if ok then res[k] = t else failed = failed or t end
    end
  end
  if failed then return printer.failed(failed) end
  return res
end

--- The held sets of a result printed by now closed: the core's results
-- freed (Lua does not see their size), the fragments written kept.
function printer.done(res)
  for _, k in ipairs(held_fields(res) or {}) do
    local v = res[k]
    if type(v) == "userdata" then v:close() end
  end
end

--- A result to encode: res, or a shallow copy with each held field as its
-- JSON fragment (the set keeps the fragment alive for a spliced write);
-- or nil, message, code (printer.failed).
function printer.wire(res)
  local fields = held_fields(res)
  if not fields then return res end
  local out
  for _, k in ipairs(fields) do
    local v = res[k]
    if type(v) == "userdata" then
      local ok, frag = pcall(v.json, v)
      if not ok then return printer.failed(frag) end
      if not out then
        out = {}
        for k2, v2 in pairs(res) do out[k2] = v2 end
      end
      out[k] = frag
    end
  end
  return out or res
end

return printer
