-- notebook_edit: replace, insert or delete one cell of a Jupyter notebook
-- (.ipynb). The cell logic is burrow.toolkit.notebook's: the notebook's JSON text
-- is spliced at the cell, so every byte outside it stays as it was; the
-- write is compare-and-set against the bytes read, as edit_file's. Its
-- undo record is the splice (the cell's old bytes), not the whole file.

local core = require "burrow.core"
local notebook = require "burrow.toolkit.notebook"
local undo = require "burrow.toolkit.undo"

return {
  name = "notebook_edit",
  title = "Edit notebook cell",
  description = [[Edit one cell of a Jupyter notebook (.ipynb): replace its source (and, with cell_type, its type), insert a new cell, or delete one. Address the cell by cell_id (its id, or "cell-N" for the N-th, 0-based, as read_file's notebook view shows) or by index (0-based). Insert puts the new cell after the addressed one, or first when neither is given. Everything else in the file (other cells, outputs, metadata, layout) stays byte for byte. Pass expected_hash (read_file's content_hash) to edit only an unchanged file.
Examples: {"path": "a.ipynb", "cell_id": "cell-2", "new_source": "print(1)"}  {"path": "a.ipynb", "edit_mode": "insert", "cell_type": "markdown", "new_source": "# Notes"}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "The notebook: relative to the first root, or an absolute path under a root." },
      cell_id = { type = "string", description = "The cell: its id, or \"cell-N\" (0-based)." },
      index = { type = "integer", minimum = 0, description = "The cell by position, 0-based (instead of cell_id)." },
      new_source = { type = "string", description = "The cell's new source (replace, insert)." },
      cell_type = { type = "string", enum = { "code", "markdown", "raw" }, description = "The cell's type: required to insert; on replace, changes it." },
      edit_mode = { type = "string", enum = { "replace", "insert", "delete" }, description = "replace (default), insert or delete." },
      expected_hash = { type = "string", description = "Edit only if the file's content_hash is still this." },
    },
    required = { "path" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      edit_mode = { type = "string" },
      cell_id = { type = "string" },
      cells = { type = "integer" },
      content_hash = { type = "string" },
      previous_content_hash = { type = "string" },
    },
    required = { "path", "edit_mode", "content_hash" },
  },
  kind = "modify", -- annotations, permissions and risk (burrow.toolkit.kinds)
  records_undo = true, -- undo_edit takes it back (ctx:resolve_write asks a shared undo store first)
  commit_size = true, -- policies see the notebook's bytes the edit writes (ctx:commit)
  reads = true,

  handler = function(ctx, a)
    local mode = a.edit_mode or "replace"
    if mode ~= "delete" and a.new_source == nil then
      return ctx:fail("INVALID_ARGUMENT", a.path, "new_source is required to " .. mode)
    end
    if mode == "insert" and not a.cell_type then
      return ctx:fail("INVALID_ARGUMENT", a.path, "cell_type is required to insert")
    end
    local idx, rel, code0 = ctx:resolve_write(a.path)
    if not idx then return nil, rel, code0 end
    local text, hash, rcode = ctx.roots:content(idx, rel, ctx.caps.max_file_size) -- bytes and their hash
    if not text then return ctx:fail(rcode, a.path, hash) end
    local h = a.expected_hash and a.expected_hash:lower()
    if h and h ~= hash then
      return ctx:fail("HASH_MISMATCH", a.path, ("expected %s, current %s; read it again before editing"):format(a.expected_hash, hash))
    end
    local nb, why = notebook.parse(text)
    if not nb then return ctx:fail("INVALID_ARGUMENT", a.path, why) end
    local at
    if a.index ~= nil and a.cell_id == nil and a.index >= #nb.cells then
      return ctx:fail("INVALID_ARGUMENT", a.path, ("index %d is out of range: the notebook has %d cells"):format(a.index, #nb.cells))
    end
    if a.cell_id ~= nil or a.index ~= nil then
      local err
      at, err = notebook.find(nb, a.cell_id ~= nil and a.cell_id or a.index)
      if not at then return ctx:fail("NOT_FOUND_TEXT", a.path, err) end
    elseif mode == "insert" then
      at = 0
    else
      return ctx:fail("INVALID_ARGUMENT", a.path, "cell_id (or index) is required to " .. mode)
    end
    local id = at > 0 and notebook.id_of(nb, at) or nil
    local ch, new_id = notebook.edit(nb, { mode = mode, at = at, source = a.new_source, cell_type = a.cell_type })
    if not ch then return ctx:fail("INVALID_ARGUMENT", a.path, new_id) end
    local cells = #nb.cells
    nb = nil
    -- The new text without holding the old one, both halves and the new
    -- one at once: the halves cut, the old text let go (hashed already;
    -- the undo record keeps the bytes the change replaced, not a copy of
    -- the file), then joined. A full collection each time, so only where
    -- it frees megabytes (a big notebook's scan pieces go with the first).
    local big = #text > 4 * 1024 * 1024
    local head, old, tail = text:sub(1, ch.s - 1), text:sub(ch.s, ch.e - 1), text:sub(ch.e)
    text = nil
    if big then collectgarbage() end
    local out = head .. ch.with .. tail
    head, tail = nil, nil
    if big then collectgarbage() end -- before the check builds its tree
    if not core.json.valid(out) then -- never write a broken notebook (checked in C: no Lua copy of it)
      -- a cell that is not JSON was there before: say so
      local _, why = core.json.valid(notebook.apply(out, { s = ch.s, e = ch.s + #ch.with, with = old }))
      if why then return ctx:fail("INVALID_ARGUMENT", a.path, "not a notebook: " .. why) end
      return ctx:fail("EIO", a.path, "the edited notebook would not be valid JSON; nothing written")
    end
    local ok, cmsg, ccode, cdetails = ctx:commit("path", #out)
    if not ok then return nil, cmsg, ccode, cdetails end
    local res, detail, wcode, current = ctx.roots:write(idx, rel, out, {
      expected_hash = hash, max_compare = ctx.caps.max_file_size,
    })
    if not res then
      if wcode == "HASH_MISMATCH" then
        detail = ("the file changed while it was edited (now %s); read it again"):format(current)
      end
      return ctx:fail(wcode, a.path, detail)
    end
    -- what the write replaced (it compared the hash): the file as it is
    -- now with the old bytes back in place of the new
    undo.record(ctx, idx, rel, { kind = "splice", before = old, size = ch.s - 1, cut = #ch.with }, res.content_hash)
    local n = cells + (mode == "insert" and 1 or mode == "delete" and -1 or 0)
    return {
      path = a.path, edit_mode = mode,
      cell_id = mode == "insert" and (new_id or ("cell-%d"):format(at)) or id,
      cells = n, content_hash = res.content_hash, previous_content_hash = hash,
    }
  end,

  render = function(r)
    local what = r.edit_mode == "insert" and "Inserted cell" or r.edit_mode == "delete" and "Deleted cell" or "Updated cell"
    return ("%s %s in %s (%d cells, %s)"):format(what, r.cell_id, r.path, r.cells, r.content_hash), r
  end,
}
