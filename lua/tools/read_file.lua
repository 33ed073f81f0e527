-- read_file: a text file as numbered lines, paged with offset/limit and
-- capped at max_result_bytes on a whole line, with an exact resume hint.
-- A pack's call (ctx:call) gets the same page as data instead of text:
-- lines, an array of the lines' texts from start_line, no numbers, no
-- newlines, which the pack writes in its own dialect (docs/packs.md).

local notebook = require "burrow.toolkit.notebook"
local cost = require "burrow.toolkit.cost"
local printer = require "burrow.toolkit.printer"

local CACHE_MAX = 64

-- Hash, line count, newline style, BOM and binary test of an open file.
-- Computing them reads the whole file; for big files they are kept per
-- workspace, keyed by inode, size, mtime and ctime (to the nanosecond), so
-- paging through a big file costs only the page.
local function facts(ctx, f)
  local key = cost.scan_key(f)
  local cache = ctx.ws.scans
  if key and cache[key] then return cache[key] end
  local hash, err, code = f:hash()
  if not hash then return nil, err, code end
  local scan, serr, scode = f:scan()
  if not scan then return nil, serr, scode end
  scan.hash = hash
  -- the encoding (charset.c): a BOM, UTF-8 validity, then libuchardet
  local cs, bom, utf8 = f:charset(ctx.ws.charsets)
  if cs then scan.charset, scan.charset_bom, scan.utf8 = cs, bom, utf8 end
  if key then
    if cache.n >= CACHE_MAX then -- simple bound: start over
      for k in pairs(cache) do cache[k] = nil end
      cache.n = 0
    end
    cache[key], cache.n = scan, cache.n + 1
  end
  return scan
end

-- Image formats read_file returns as MCP image content, by magic bytes.
local IMAGES = {
  { "^\137PNG\r\n\26\n", "image/png" },
  { "^\255\216\255", "image/jpeg" },
  { "^GIF8[79]a", "image/gif" },
  { "^RIFF....WEBP", "image/webp" },
}

-- The base64 and MIME type of an image file (binary, not too large), or nil.
local function image_of(ctx, f)
  if f:size() > ctx.caps.max_image_bytes then return nil end
  local b64 = f:base64()
  local head = b64 and require("burrow.core").base64_decode(b64:sub(1, 16)) or ""
  for _, m in ipairs(IMAGES) do
    if head:find(m[1]) then return b64, m[2] end
  end
end

-- A notebook as cells (burrow.toolkit.notebook), within max_result_bytes (whole
-- cells; the rest named), its output images as MCP image content; nil
-- when the file is not a notebook (then it reads as text).
local function notebook_view(ctx, idx, rel, f)
  local text = ctx.roots:content(idx, rel, ctx.caps.max_file_size)
  local nb = text and notebook.parse(text)
  if not nb then return nil end
  local cap = ctx.caps.max_result_bytes
  -- a cell is decoded when it is rendered: one that is not JSON makes the
  -- file text, as one that does not scan does
  local ok, view, images = pcall(notebook.render, nb, { output_cap = math.max(1024, cap // 16),
    image_bytes = math.min(cap // 2, ctx.caps.max_image_bytes) })
  if not ok then return nil end
  f:close()
  local shown = #nb.cells
  if #view > cap then -- whole cells that fit
    local cut = view:sub(1, cap)
    local last = 0
    for k = 1, #nb.cells do
      local close = ('</cell id="%s">'):format(notebook.id_of(nb, k))
      local e = select(2, cut:find(close, 1, true))
      if not e then break end
      last, shown = e, k
    end
    view = view:sub(1, last) .. ("\n[%d of %d cells shown (max_result_bytes); read the rest with notebook=false, offset and limit]")
      :format(shown, #nb.cells)
  end
  if ctx.caps.untrusted_boundary then view = ctx:untrusted(view, rel) end
  return { encoding = "text", notebook = true, cells = #nb.cells, content = view,
    images = #images > 0 and images or nil, truncated = shown < #nb.cells }
end

-- A page of src (an open File, read for the last time, or a decoded
-- string) from line offset, or, for a pack's call (ctx.via), the same
-- page's lines as a table of strings for the pack to write in its dialect
-- (text.c: one paging, cut and cap for every form). Then info, or nil,
-- detail, code. A File's page is held (lpage.c: counted, not written)
-- and takes its form where the result leaves (burrow.toolkit.printer):
-- the MCP reply's text numbered and escaped in one C pass, a Lua string
-- for ws:call; with untrusted_boundary it is text now, to be tagged.
-- With at (a cursor's byte, on line offset) the page is text.c's
-- bw_lines_at: it ends with the first line it cuts, its rest next.
local function page(ctx, src, offset, limit, at)
  local max_line, max_bytes = ctx.caps.max_line_chars, ctx.caps.max_result_bytes
  if type(src) == "string" then
    local core = require "burrow.core"
    local fn = ctx.via and core.lines_table or core.number_lines
    return fn(src, offset, limit or 2000, max_line, max_bytes, at)
  end
  local fn = ctx.via and src.lines_table or ctx.caps.untrusted_boundary and src.lines or src.page
  return fn(src, offset, limit or 2000, max_line, max_bytes, true, at) -- last use: closes src, or the page holds it
end

-- A cursor, "line:byte": where the next page starts, exactly (a line's
-- start, or inside a line a page cut). line, byte; or nil.
local function parse_cursor(c)
  local line, byte = c:match("^(%d+):(%d+)$")
  line, byte = math.tointeger(tonumber(line)), math.tointeger(tonumber(byte))
  if line and byte and line >= 1 then return line, byte end
end

local function fmt_hint(r)
  if r.tail_lines then
    if not r.truncated then return "" end
    return ("[output capped at max_result_bytes: the last %d lines shown]"):format(r.tail_lines)
  end
  if r.total_lines == 0 then return "[empty file]" end
  if not r.start_line then
    return ("[offset %d is past the end: the file has %d lines]"):format(r.offset, r.total_lines)
  end
  if not r.cursor then return "" end
  local why = r.truncated and "output capped at max_result_bytes; " or ""
  if not r.next_offset then -- the page ended inside a cut line
    why = ("line %d cut at max_line_chars; "):format(r.end_line)
  end
  local how = r.next_offset and ('offset=%d (or cursor="%s")'):format(r.next_offset, r.cursor)
    or ('cursor="%s"'):format(r.cursor)
  return ("[%sshowing lines %d-%d of %d (~%d tokens; %d lines, ~%d tokens remain); call read_file with %s to continue]")
    :format(why, r.start_line, r.end_line, r.total_lines, r.page_tokens, r.remaining_lines,
      r.remaining_tokens, how)
end

return {
  name = "read_file",
  title = "Read file",
  description = [[Read a file inside the workspace. Text comes back as numbered lines, "N<TAB>line", starting at line `offset` (1-based, default 1) for at most `limit` lines (default 2000). Lines over 2000 characters are cut with a marker. If the output would pass the result cap, it stops on a whole line and ends with the exact offset to continue from, and a cursor ("line:byte") that resumes exactly, even inside a line cut at 2000 characters. The result gives the file's size, total_lines and tokens_estimate, and the page's page_tokens and remaining_tokens, to page or narrow before a client's limit. The result also gives total_lines, the file's content_hash (pass it to write_file's expected_hash to write only if nobody changed the file), its newline style and BOM, and its charset: a file in another encoding (UTF-16/32 with or without a BOM, Shift-JIS, Windows-1252, ... detected, or named with `charset`) comes back as UTF-8 text, and edit_file/write_file write it back in that encoding. A Jupyter notebook (.ipynb) is shown as its cells, <cell id="...">source</cell id="...">, with outputs as text and images (notebook=false: its JSON as lines); edit cells with notebook_edit. Images (PNG, JPEG, GIF, WebP) come back as images; other binary files are refused unless encoding is "base64".
Pass the content_hash of a read you still hold as `if_none_match`: if the file has not changed since, the answer is a short "not modified" note without the content.
With `tail` N it returns the last N lines as they are in the file, without line numbers, found by reading back from the end (fast on any size; no content_hash or total_lines, as the rest of the file is not read).
Examples: {"path": "src/main.c"}  {"path": "log.txt", "offset": 2001, "limit": 500}  {"path": "app.log", "tail": 100}  {"path": "logo.png", "encoding": "base64"}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "File to read: relative to the first root, or an absolute path under a root." },
      offset = { type = "integer", minimum = 1, description = "First line to return, 1-based (default 1)." },
      limit = { type = "integer", minimum = 1, description = "Maximum number of lines (default 2000)." },
      cursor = { type = "string", description = "Resume exactly where a page stopped: the cursor it returned (\"line:byte\"; \"1:0\" from the start). A page read this way ends at the first line cut by max_line_chars, and its cursor resumes inside it: the pages join into the file with no gap and no repeat (not with offset or tail)." },
      tail = { type = "integer", minimum = 1, description = "Return only the last N lines, unnumbered (not with offset, limit or encoding)." },
      encoding = { type = "string", enum = { "text", "base64" }, description = "text (default) or base64 for the raw bytes." },
      notebook = { type = "boolean", description = "A .ipynb file is shown as cells with their outputs (default true); false shows its JSON as lines." },
      charset = { type = "string", description = "The file's character encoding (\"shift_jis\", \"windows-1252\", \"utf-16le\", ...), over the one detected." },
      if_none_match = { type = "string", description = "The content_hash of an earlier read: if the file still has it, only a \"not modified\" note comes back (not with tail)." },
    },
    required = { "path" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      encoding = { type = "string" },
      size = { type = "integer" },
      content_hash = { type = "string" },
      total_lines = { type = "integer" },
      start_line = { type = "integer" },
      end_line = { type = "integer" },
      next_offset = { type = "integer" },
      cursor = { type = "string", description = "Where the next page starts, exactly: pass it back as cursor." },
      newline = { type = "string", enum = { "lf", "crlf", "mixed", "none" } },
      bom = { type = "boolean" },
      charset = { type = "string" },
      notebook = { type = "boolean" },
      cells = { type = "integer" },
      truncated = { type = "boolean" },
      mime_type = { type = "string" },
      tail_lines = { type = "integer" },
      cut_lines = { type = "integer" },
      not_modified = { type = "boolean" },
      tokens_estimate = { type = "integer", description = "The whole file's cost in tokens, estimated (text: bytes/4; binary or image: bytes/3, as base64)." },
      page_bytes = { type = "integer", description = "Bytes of this page's text, numbered as shown." },
      page_tokens = { type = "integer", description = "This page's estimated tokens." },
      remaining_lines = { type = "integer", description = "Lines from next_offset to the end." },
      remaining_bytes = { type = "integer", description = "The file's bytes from next_offset to the end." },
      remaining_tokens = { type = "integer", description = "Their estimated tokens (unnumbered)." },
    },
    required = { "path", "size" },
  },
  kind = "read", -- annotations, permissions and risk (burrow.toolkit.kinds)

  handler = function(ctx, a)
    if a.tail and (a.offset or a.limit or a.encoding or a.if_none_match or a.cursor) then
      return ctx:fail("INVALID_ARGUMENT", a.path, "tail cannot be combined with offset, limit, cursor, encoding or if_none_match")
    end
    local at_line, at
    if a.cursor then
      at_line, at = parse_cursor(a.cursor)
      if not at or a.offset or a.encoding == "base64" or ctx.via then
        return ctx:fail("INVALID_ARGUMENT", "cursor", (a.offset or a.encoding == "base64") and "cursor cannot be combined with offset or base64"
          or 'not a cursor read_file gave ("line:byte")', { argument = "cursor" })
      end
    end
    local idx, rel, code0 = ctx:resolve(a.path)
    if not idx then return nil, rel, code0 end
    local f, detail, code = ctx.roots:read(idx, rel, ctx.caps.max_file_size)
    if not f then
      local details
      if code == "TOO_LARGE" then
        detail = ("over max_file_size (%d bytes)"):format(ctx.caps.max_file_size)
        details = { limit = "max_file_size", max = ctx.caps.max_file_size }
      end
      return ctx:fail(code, a.path, detail, details)
    end
    if a.tail then -- from the end only: no hash, no scan of the whole file
      local size = f:size()
      local text, info, tcode = f:tail(a.tail, ctx.caps.max_line_chars, ctx.caps.max_result_bytes, true)
      if not text then return ctx:fail(tcode, a.path, info) end
      if text:find("\0", 1, true) then return ctx:fail("BINARY", a.path) end
      if ctx.caps.untrusted_boundary then text = ctx:untrusted(text, a.path) end
      return { path = a.path, size = size, encoding = "text", content = text, tail_lines = info.lines,
        total_lines = info.whole and info.lines or nil, truncated = info.truncated,
        cut_lines = info.cut_lines > 0 and info.cut_lines or nil, tokens_estimate = cost.tokens(size),
        page_bytes = #text, page_tokens = cost.tokens(#text) }
    end
    local scan, serr, scode = facts(ctx, f)
    if not scan then
      f:close()
      return ctx:fail(scode, a.path, serr)
    end
    -- the whole file's cost: text, or (NULs) binary read as base64 or an image
    local size = f:size()
    local res = { path = a.path, size = size, content_hash = scan.hash,
      tokens_estimate = cost.tokens(size, scan.binary and (not scan.charset or scan.utf8)) }
    -- the validator the agent holds is the file's hash still: no content
    -- (compared after the policies judged the read, so a denied file's
    -- hash is never told; anything else, malformed included, is stale)
    if a.if_none_match and a.if_none_match:lower() == scan.hash then
      f:close()
      res.not_modified = true
      return res
    end
    if a.encoding == "base64" then
      local b64, berr, bcode = f:base64()
      f:close()
      if not b64 then return ctx:fail(bcode, a.path, berr) end
      if #b64 > ctx.caps.max_result_bytes then
        return ctx:fail("TOO_LARGE", a.path, ("base64 is %d bytes, over max_result_bytes (%d)")
          :format(#b64, ctx.caps.max_result_bytes), { limit = "max_result_bytes", max = ctx.caps.max_result_bytes,
          size = #b64, encoding = "base64" })
      end
      res.encoding, res.content = "base64", b64
      return res
    end
    local cs, cs_bom, utf8 = scan.charset, scan.charset_bom or 0, scan.utf8
    if a.charset then -- the agent's word over detection; the BOM only if it is that encoding's
      cs, utf8 = a.charset:lower(), a.charset:lower():gsub("_", "-") == "utf-8"
      if scan.charset ~= cs then cs_bom = 0 end
    end
    -- NULs: an image before UTF-16/32 without a BOM (a BOM is never an image's magic)
    local image_b64, image_mime
    if scan.binary and cs and not utf8 and cs_bom == 0 and not a.charset then
      image_b64, image_mime = image_of(ctx, f)
      if image_b64 then cs, utf8 = nil, true end
    end
    if scan.binary and (not cs or utf8) then
      local b64, mime = image_b64, image_mime
      if not b64 then b64, mime = image_of(ctx, f) end
      f:close()
      if not b64 then return ctx:fail("BINARY", a.path) end
      res.encoding, res.mime_type, res.content = "image", mime, b64
      return res
    end
    if utf8 and not a.offset and not a.limit and not a.cursor and a.notebook ~= false and a.path:match("%.ipynb$") then
      local nb = notebook_view(ctx, idx, rel, f)
      if nb then
        for k, v in pairs(nb) do res[k] = v end
        res.charset = "utf-8"
        return res
      end
    end
    local offset = at_line or a.offset or 1
    local function past(len) -- a cursor beyond the text: not one read_file gave for it
      return ctx:fail("INVALID_ARGUMENT", "cursor", ("byte %d is past the end (%d bytes); the file changed?")
        :format(at, len), { argument = "cursor" })
    end
    local body, info, lcode -- the page (held, or text to tag), or a pack's lines
    if utf8 then
      if at and at > size then
        f:close()
        return past(size)
      end
      body, info, lcode = page(ctx, f, offset, a.limit, at)
      res.total_lines, res.newline, res.bom = scan.lines, scan.newline, scan.bom
    else -- another encoding: served as UTF-8, the numbers are the decoded text's
      local u, derr, dcode = f:decode(cs, cs_bom)
      f:close()
      if not u then return ctx:fail(dcode, a.path, derr) end
      if u:find("\0", 1, true) then return ctx:fail("BINARY", a.path, "NUL characters in the " .. cs .. " text") end
      if at and at > #u then return past(#u) end
      body, info, lcode = page(ctx, u, offset, a.limit, at)
      if body then res.total_lines, res.newline, res.bom = info.total, info.newline, cs_bom > 0 end
    end
    if not body then return ctx:fail(lcode, a.path, info) end
    res.encoding = "text"
    res.charset = utf8 and "utf-8" or cs
    if ctx.via then -- data: the pack tags what it shows of them (P.untrusted)
      res.lines, res.cut_lines = body, info.cut_lines
    else
      if ctx.caps.untrusted_boundary then body = ctx:untrusted(body, a.path) end
      res.content = body
    end
    res.truncated = info.truncated
    res.offset = offset
    res.tokens_estimate = cost.tokens(utf8 and size or info.text_bytes) -- text, as served
    -- what this page cost (its numbered text) and what the rest would
    res.page_bytes, res.page_tokens = info.bytes, cost.tokens(info.bytes)
    if info.first > 0 then res.start_line, res.end_line = info.first, info.last end
    if info.next > 0 then
      -- the cursor: exact; next_offset only where a whole line starts
      res.cursor = ("%d:%d"):format(info.next, info.next_byte)
      if not info.mid_line then res.next_offset = info.next end
      local rest = (utf8 and size or info.text_bytes) - info.next_byte
      res.remaining_lines = res.total_lines - info.next + 1
      res.remaining_bytes, res.remaining_tokens = rest, cost.tokens(rest)
    end
    return type(res.content) == "userdata" and printer.holding(res, "content") or res -- a held page (lpage.c)
  end,

  -- MCP: the text once, in content; the rest as structuredContent; the
  -- validator (the whole file's hash) in _meta.
  render = function(r)
    local s = {}
    -- a held page: its lines as the reply's escaped text (lpage.c)
    local content = type(r.content) == "userdata" and r.content:text() or r.content
    for k, v in pairs(r) do
      if k ~= "content" and k ~= "offset" then s[k] = v end
    end
    local meta = r.content_hash and { ["burrow/sha256"] = r.content_hash } or nil
    if r.not_modified then
      meta["burrow/not_modified"] = true
      return ("%s: not modified, the content is unchanged since %s (not sent again)"):format(r.path, r.content_hash), s, meta
    end
    if r.encoding == "base64" then return r.content, s, meta end
    if r.notebook then -- the cells, then their output images
      s.images = nil
      local blocks = { r.content }
      for _, im in ipairs(r.images or {}) do blocks[#blocks + 1] = im end
      return #blocks == 1 and r.content or blocks, s, meta
    end
    if r.encoding == "image" then -- MCP image content
      return { ("%s: %s, %d bytes, %s"):format(r.path, r.mime_type, r.size, r.content_hash),
        { type = "image", data = r.content, mimeType = r.mime_type } }, s, meta
    end
    local hint = fmt_hint(r)
    if hint == "" then return content, s, meta end
    -- a big text gets its hint as a second block rather than a copy of itself
    if #content > 1024 * 1024 then return { content, hint }, s, meta end
    return content .. hint, s, meta
  end,
}
