-- fuzz_patch.lua: the checks fuzz_patch.c runs on each input (raises when
-- one fails). Called with the directory of a small tree.
local dir = ...
local burrow = require "burrow"
local parse = require("burrow.toolkit.patch_grammar").parse -- what apply_patch parses with
local ws = assert(burrow.open { roots = { { path = dir, mode = "ro" } }, pack = "codex" })

local function same(a, b)
  if type(a) ~= "table" or type(b) ~= "table" then return a == b end
  for k, x in pairs(a) do
    if not same(x, b[k]) then return false end
  end
  for k in pairs(b) do
    if a[k] == nil then return false end
  end
  return true
end

local function check_hunks(hunks)
  for _, h in ipairs(hunks) do
    assert(type(h.path) == "string" and h.path ~= "", "a hunk without a path")
    if h.kind == "add" then
      assert(type(h.content) == "string", "an add without content")
    elseif h.kind == "update" then
      assert(#h.chunks >= 1, "an update without chunks")
      for _, c in ipairs(h.chunks) do
        assert(#c.old + #c.new >= 1, "an empty chunk")
      end
    else
      assert(h.kind == "delete", "a hunk of kind " .. tostring(h.kind))
    end
  end
end

-- Hunks as patch text again: a chunk's old lines as "-", its new as "+".
-- The parser reads lines as Rust's str::lines does (one "\r" before each
-- "\n" dropped), so a line whose text ends in "\r" is written with one
-- more: "x\r\r" reads back as "x\r" (found by the fuzzer: 53 bytes whose
-- context line ended in two CRs).
local function render(hunks)
  local out = { "*** Begin Patch" }
  local function put(s) out[#out + 1] = s:sub(-1) == "\r" and s .. "\r" or s end
  for _, h in ipairs(hunks) do
    if h.kind == "add" then
      put("*** Add File: " .. h.path)
      for line in h.content:gmatch("([^\n]*)\n") do put("+" .. line) end
    elseif h.kind == "delete" then
      put("*** Delete File: " .. h.path)
    else
      put("*** Update File: " .. h.path)
      if h.move_to then put("*** Move to: " .. h.move_to) end
      for _, c in ipairs(h.chunks) do
        put(c.context and "@@ " .. c.context or "@@")
        for _, l in ipairs(c.old) do put("-" .. l) end
        for _, l in ipairs(c.new) do put("+" .. l) end
        if c.eof then put("*** End of File") end
      end
    end
  end
  put("*** End Patch")
  return table.concat(out, "\n")
end

return function(s)
  local ok, hunks, err = pcall(parse, s)
  assert(ok, "the parser raised: " .. tostring(hunks))
  if hunks then
    check_hunks(hunks)
    local text = render(hunks)
    local again, err2 = parse(text)
    assert(again, "the hunks written back do not parse: " .. tostring(err2) .. "\n" .. text)
    assert(same(hunks, again), "the hunks written back parse differently:\n" .. text)
  else
    assert(type(err) == "string", "a refusal without a message")
  end
  local ok, res, msg, code = pcall(ws.call, ws, "apply_patch", { input = s })
  assert(ok, "apply_patch raised: " .. tostring(res))
  if res == nil then
    assert(type(msg) == "string" and type(code) == "string", "a failure without message and code")
  end
end
