-- Jupyter notebooks (.ipynb) as cells: read them (cells, outputs as text,
-- images as MCP image content) and edit one cell (replace, insert,
-- delete) by splicing the notebook's JSON text, so every byte outside the
-- changed cell stays as it was (nbformat's indent-1, sorted-key layout,
-- key order, the final newline, other cells' outputs and metadata). The
-- JSON is scanned here only for the spans of the cells; values are read
-- with core.json.

local core = require "burrow.core"

local M = {}

---------------------------------------------------------------------------
-- scanning: byte spans of JSON values

local function ws(t, i) return t:find("[^ \t\r\n]", i) or #t + 1 end

-- The next backslash at or after j in t (nil: none): one plain search
-- (memchr) serves every string after it, where a pattern search for
-- ["\\] ran the pattern matcher over each byte of every string (a 50 MB
-- notebook's outputs: about a second). Reset by release().
local bs = { t = nil, from = 0, at = 0 }
local function backslash(t, j)
  if bs.t ~= t or j < bs.from or (bs.at ~= 0 and bs.at < j) then
    bs.t, bs.from, bs.at = t, j, t:find("\\", j, true) or 0
  end
  return bs.at ~= 0 and bs.at or nil
end
local function release() bs.t = nil end

local function skip_string(t, i)
  local j = i + 1
  while true do
    local q = t:find('"', j, true)
    if not q then return nil end
    local b = backslash(t, j)
    if b and b < q then j = b + 2 else return q + 1 end
  end
end

-- The end (exclusive) of the value starting at i, or nil.
local function skip_value(t, i)
  local c = t:sub(i, i)
  if c == '"' then return skip_string(t, i) end
  if c == "{" or c == "[" then
    local depth, j = 0, i
    while true do
      local k = t:find('[][{}"]', j)
      if not k then return nil end
      local ch = t:sub(k, k)
      if ch == '"' then
        j = skip_string(t, k)
        if not j then return nil end
      else
        depth = depth + ((ch == "{" or ch == "[") and 1 or -1)
        j = k + 1
        if depth == 0 then return j end
      end
    end
  end
  local k = t:find("[,%]}%s]", i)
  return k or #t + 1
end

-- An object's members: {key, ks (key start), vs, ve (value span)}.
local function members(t, i)
  local out = {}
  local j = ws(t, i + 1)
  if t:sub(j, j) == "}" then return out end
  while true do
    if t:sub(j, j) ~= '"' then return nil end
    local ke = skip_string(t, j)
    if not ke then return nil end
    local key = core.json.decode(t:sub(j, ke - 1))
    local c = ws(t, ke)
    if t:sub(c, c) ~= ":" then return nil end
    local vs = ws(t, c + 1)
    local ve = skip_value(t, vs)
    if not ve then return nil end
    out[#out + 1] = { key = key, ks = j, vs = vs, ve = ve }
    j = ws(t, ve)
    local ch = t:sub(j, j)
    if ch == "}" then return out end
    if ch ~= "," then return nil end
    j = ws(t, j + 1)
  end
end

-- An array's elements: {s, e}; and the index of its "]".
local function elements(t, i)
  local out = {}
  local j = ws(t, i + 1)
  if t:sub(j, j) == "]" then return out, j end
  while true do
    local e = skip_value(t, j)
    if not e then return nil end
    out[#out + 1] = { s = j, e = e }
    j = ws(t, e)
    local ch = t:sub(j, j)
    if ch == "]" then return out, j end
    if ch ~= "," then return nil end
    j = ws(t, j + 1)
  end
end

local function member(ms, key)
  for _, m in ipairs(ms) do if m.key == key then return m end end
end

-- The indentation of the line holding byte i: its start found by plain
-- searches in 64 kB pieces before i (a one-line notebook's cell far along
-- took a step a byte before).
local function indent_at(t, i)
  local ls, hi = 1, i - 1
  while hi >= 1 do
    local lo = math.max(1, hi - 65535)
    local piece, last = t:sub(lo, hi), nil
    local k = piece:find("\n", 1, true)
    while k do
      last = k
      k = piece:find("\n", k + 1, true)
    end
    if last then
      ls = lo + last
      break
    end
    hi = lo - 1
  end
  return t:match("^[ \t]*", ls)
end

-- A member's value when it is not an object or an array (nil for none).
local function scalar(t, m)
  if not m then return nil end
  local c = t:sub(m.vs, m.vs)
  if c == "{" or c == "[" then return nil end
  local v = core.json.decode(t:sub(m.vs, m.ve - 1))
  if v == core.json.null then return nil end
  return v
end

-- A cell's .cell: the decoded object, at the first use (a cell that does
-- not decode is an error then, as read_file's notebook view reports it).
local LAZY = {
  __index = function(c, k)
    if k ~= "cell" then return nil end
    local cell = core.json.decode(c.text:sub(c.s, c.e - 1))
    if type(cell) ~= "table" then error(("not a notebook: cell %d is not an object"):format(c.n - 1), 0) end
    rawset(c, "cell", cell)
    return cell
  end,
}

-- The notebook's shape: {text, cells = {{s, e, cell}}, close = index of
-- the cells array's "]", open = its "[", nbformat, minor}; or nil, why.
local function parse(text)
  local top = ws(text, 1)
  if text:sub(top, top) ~= "{" then return nil, "not a notebook: no JSON object" end
  local ms = members(text, top)
  if not ms then return nil, "not a notebook: the JSON does not parse" end
  local cm = member(ms, "cells")
  if not cm or text:sub(cm.vs, cm.vs) ~= "[" then return nil, "not a notebook: no \"cells\" array" end
  local els, close = elements(text, cm.vs)
  if not els then return nil, "not a notebook: the cells do not parse" end
  local nb = { text = text, cells = {}, open = cm.vs, close = close, key_at = cm.ks }
  for k, el in ipairs(els) do
    local ms = text:sub(el.s, el.s) == "{" and members(text, el.s)
    if not ms then return nil, ("not a notebook: cell %d is not an object"):format(k - 1) end
    -- what finding and editing a cell needs, read from its members alone;
    -- the whole cell (its outputs: most of a big notebook) only when asked
    nb.cells[k] = setmetatable({ s = el.s, e = el.e, n = k, text = text,
      id = scalar(text, member(ms, "id")), cell_type = scalar(text, member(ms, "cell_type")) }, LAZY)
  end
  local fm, mm = member(ms, "nbformat"), member(ms, "nbformat_minor")
  nb.nbformat = fm and tonumber(text:sub(fm.vs, fm.ve - 1))
  nb.minor = mm and tonumber(text:sub(mm.vs, mm.ve - 1))
  return nb
end

---------------------------------------------------------------------------
-- reading

local function joined(v)
  if type(v) == "table" then return table.concat(v) end
  return type(v) == "string" and v or ""
end

-- A cell's id as agents address it: its own, else "cell-N" (0-based).
function M.id_of(nb, k)
  local id = nb.cells[k].id
  return type(id) == "string" and id or ("cell-%d"):format(k - 1)
end

-- The index (1-based) of a cell by id, "cell-N" or a number; nil, why.
function M.find(nb, id)
  if id == nil then return nil, "cell_id is required" end
  for k = 1, #nb.cells do
    if nb.cells[k].id == id then return k end
  end
  local n = tonumber(type(id) == "string" and id:match("^cell%-(%d+)$") or id)
  if n and n % 1 == 0 and n >= 0 and n < #nb.cells then return math.tointeger(n) + 1 end
  return nil, ("cell %s not found (the notebook has %d cells)"):format(tostring(id), #nb.cells)
end

local IMAGE = { "image/png", "image/jpeg", "image/gif", "image/webp" }

-- A cell's outputs as text (capped at cap bytes) and images (while
-- their base64 fits budget.left bytes).
local function outputs_of(cell, cap, images, budget)
  local parts = {}
  for _, o in ipairs(type(cell.outputs) == "table" and cell.outputs or {}) do
    if o.output_type == "stream" then
      parts[#parts + 1] = (joined(o.text):gsub("\n$", ""))
    elseif o.output_type == "error" then
      parts[#parts + 1] = ("%s: %s"):format(tostring(o.ename), tostring(o.evalue))
    elseif type(o.data) == "table" then
      local shown = false
      for _, mime in ipairs(IMAGE) do
        if type(o.data[mime]) == "string" or type(o.data[mime]) == "table" then
          local data = joined(o.data[mime]):gsub("%s", "")
          if #data <= budget.left then
            budget.left = budget.left - #data
            images[#images + 1] = { type = "image", data = data, mimeType = mime }
            parts[#parts + 1] = ("[image %d: %s]"):format(#images, mime)
          else
            parts[#parts + 1] = ("[%s image not shown: %d bytes of base64, over what is left of the result cap]"):format(mime, #data)
          end
          shown = true
          break
        end
      end
      if not shown and o.data["text/plain"] then parts[#parts + 1] = (joined(o.data["text/plain"]):gsub("\n$", "")) end
    end
  end
  local s = table.concat(parts, "\n")
  if #s > cap then
    local cut = cap
    while cut > 0 and (s:byte(cut + 1) or 0) & 0xC0 == 0x80 do cut = cut - 1 end
    s = s:sub(1, cut) .. ("\n[output cut: %d bytes, %d shown]"):format(#s, cut)
  end
  return s
end

-- The cells as text for a model, and the images of their outputs:
-- <cell id="..."><cell_type>markdown</cell_type>source</cell id="...">
-- (code cells carry no cell_type tag), outputs after the source.
-- o: output_cap (bytes of text per cell), image_bytes (base64 of all images).
function M.render(nb, o)
  o = o or {}
  local cap, images, budget = o.output_cap or 10000, {}, { left = o.image_bytes or 0 }
  local out = {}
  for k, c in ipairs(nb.cells) do
    local id, cell = M.id_of(nb, k), c.cell
    local body = joined(cell.source)
    local head = ('<cell id="%s">'):format(id)
    if cell.cell_type ~= "code" then
      head = head .. ("<cell_type>%s</cell_type>"):format(tostring(cell.cell_type))
    end
    local outs = cell.cell_type == "code" and outputs_of(cell, cap, images, budget) or ""
    if outs ~= "" then body = body .. "\n<outputs>\n" .. outs .. "\n</outputs>" end
    out[#out + 1] = head .. body .. ('</cell id="%s">'):format(id)
  end
  return table.concat(out, "\n"), images
end

---------------------------------------------------------------------------
-- writing: nbformat's own layout (json.dumps(indent=1, sort_keys=True,
-- ensure_ascii=False))

local ESC = { ['"'] = '\\"', ["\\"] = "\\\\", ["\n"] = "\\n", ["\r"] = "\\r", ["\t"] = "\\t",
  ["\b"] = "\\b", ["\f"] = "\\f" }

local function jstr(s)
  return '"' .. s:gsub('[%z\1-\31"\\]', function(c) return ESC[c] or ("\\u%04x"):format(c:byte()) end) .. '"'
end

-- Source text as nbformat stores it: lines that keep their "\n".
local function source_lines(src)
  local lines = {}
  for l in src:gmatch("[^\n]*\n") do lines[#lines + 1] = l end
  local rest = src:match("[^\n]*$")
  if rest ~= "" then lines[#lines + 1] = rest end
  return lines
end

-- A source value at indentation ind (the key's line), unit per level.
local function source_json(src, ind, unit, as_string)
  if as_string then return jstr(src) end
  local lines = source_lines(src)
  if #lines == 0 then return "[]" end
  if not unit then -- a compact file stays compact
    local items = {}
    for i, l in ipairs(lines) do items[i] = jstr(l) end
    return "[" .. table.concat(items, ", ") .. "]"
  end
  local items = {}
  for i, l in ipairs(lines) do items[i] = ind .. unit .. jstr(l) end
  return "[\n" .. table.concat(items, ",\n") .. "\n" .. ind .. "]"
end

-- A new cell's text; the cell's "{" at indentation ind.
local function cell_json(kind, id, src, ind, unit)
  local keys = { "cell_type", "execution_count", "id", "metadata", "outputs", "source" }
  local vals = { cell_type = jstr(kind), execution_count = "null", id = id and jstr(id),
    metadata = "{}", outputs = "[]" }
  if kind ~= "code" then vals.execution_count, vals.outputs = nil, nil end
  local inner = ind .. (unit or "")
  vals.source = source_json(src, inner, unit)
  local items = {}
  for _, k in ipairs(keys) do
    if vals[k] then items[#items + 1] = (unit and inner or "") .. jstr(k) .. ": " .. vals[k] end
  end
  if not unit then return "{" .. table.concat(items, ", ") .. "}" end
  return "{\n" .. table.concat(items, ",\n") .. "\n" .. ind .. "}"
end

-- The layout the notebook uses: the indentation of its cells and the
-- unit per level, or nil for a one-line (compact) file.
local function layout(nb)
  local t = nb.text
  if not t:find("\n", nb.open, true) or t:find("\n", nb.open, true) > nb.close then
    if #nb.cells > 0 or not t:sub(1, nb.open):find("\n") then return nil end
  end
  local key_ind = indent_at(t, nb.key_at)
  local cell_ind = #nb.cells > 0 and indent_at(t, nb.cells[1].s) or nil
  local unit = cell_ind and #cell_ind > #key_ind and cell_ind:sub(#key_ind + 1) or (key_ind ~= "" and key_ind or " ")
  return cell_ind or (key_ind .. unit), unit, key_ind
end

local function new_id(nb)
  local used = {}
  for _, c in ipairs(nb.cells) do used[tostring(c.id)] = true end
  while true do
    local id = ("%08x"):format(math.random(0, 0x7fffffff))
    if not used[id] then return id end
  end
end

-- The change that replaces [s, e) of t with `with`: {s, e, with}, the new
-- text's line breaks in the file's style (a notebook saved with CRLF
-- keeps them). M.apply makes the new text.
local function splice(t, s, e, with)
  if t:find("\r\n", 1, true) then with = with:gsub("\r?\n", "\r\n") end
  return { s = s, e = e, with = with }
end

-- The change one edit makes to the notebook's text (splice): {mode =
-- "replace"|"insert"|"delete", at = cell index (1-based; insert: after
-- it, 0 = at the start), source, cell_type}; nil, why on a request that
-- does not fit.
local function edit(nb, a)
  local t, mode = nb.text, a.mode or "replace"
  local cell_ind, unit, key_ind = layout(nb)
  if mode == "delete" then
    local c = nb.cells[a.at]
    if not c then return nil, "no such cell" end
    local nxt, prev = nb.cells[a.at + 1], nb.cells[a.at - 1]
    if nxt then return splice(t, c.s, nxt.s, "") end
    if prev then return splice(t, prev.e, c.e, "") end
    return splice(t, nb.open + 1, nb.close, "")
  elseif mode == "insert" then
    local kind = a.cell_type or "code"
    local ids = (nb.nbformat or 4) > 4 or ((nb.nbformat or 4) == 4 and (nb.minor or 0) >= 5)
    local id = ids and new_id(nb) or nil
    local body = cell_json(kind, id, a.source or "", cell_ind or "", unit)
    local sep = unit and (",\n" .. cell_ind) or ", "
    if #nb.cells == 0 then
      if unit then return splice(t, nb.open + 1, nb.close, "\n" .. cell_ind .. body .. "\n" .. key_ind), id end
      return splice(t, nb.open + 1, nb.close, body), id
    end
    if a.at == 0 then return splice(t, nb.cells[1].s, nb.cells[1].s, body .. sep), id end
    local c = nb.cells[a.at]
    if not c then return nil, "no such cell" end
    return splice(t, c.e, c.e, sep .. body), id
  elseif mode == "replace" then
    local c = nb.cells[a.at]
    if not c then return nil, "no such cell" end
    local ms = members(t, c.s)
    local sm = ms and member(ms, "source")
    if not sm then return nil, "the cell has no source" end
    local kind = a.cell_type or c.cell_type
    if kind ~= c.cell_type then -- another type: the cell rebuilt, its id and metadata kept
      local id = c.id
      local body = cell_json(kind, type(id) == "string" and id or nil, a.source or "", indent_at(t, c.s), unit)
      local mm = member(ms, "metadata")
      if mm then
        local meta = t:sub(mm.vs, mm.ve - 1)
        body = body:gsub('("metadata": ){}', function(k) return k .. meta end, 1)
      end
      return splice(t, c.s, c.e, body)
    end
    local multi = t:sub(sm.vs, sm.ve - 1):find("\n", 1, true) ~= nil or (unit ~= nil and t:sub(sm.vs, sm.vs) == "[")
    local src = source_json(a.source or "", indent_at(t, sm.ks), multi and unit or nil, t:sub(sm.vs, sm.vs) == '"')
    return splice(t, sm.vs, sm.ve, src)
  end
  return nil, "edit_mode must be replace, insert or delete"
end

-- (the scan's backslash cache lets go of the text when they return)
function M.parse(text)
  local nb, why = parse(text)
  release()
  return nb, why
end

function M.edit(nb, a)
  local ch, extra = edit(nb, a)
  release()
  return ch, extra
end

--- text with the change ch (M.edit's) made.
function M.apply(text, ch)
  return text:sub(1, ch.s - 1) .. ch.with .. text:sub(ch.e)
end

return M
