-- stat: what a path is, without following a final symlink (lstat).

local context = require "burrow.toolkit.context"
local cost = require "burrow.toolkit.cost"

-- A file's lines and whether it is binary, where they cost little: from
-- the facts read_file keeps for big files (ws.scans), or counted on a file
-- under cost.BIG. nil for a big file read_file has not read whole.
local function known_lines(ctx, idx, rel)
  local f = ctx.roots:read(idx, rel, ctx.caps.max_file_size)
  if not f then return nil end
  local key = cost.scan_key(f)
  local scan = key and ctx.ws.scans[key]
  if not scan and not key then scan = f:scan() end
  f:close()
  return scan
end

-- A file's content_hash: read_file's kept one (ws.scans) when the file is
-- unchanged since, else its bytes hashed (at most max_file_size).
local function file_hash(ctx, idx, rel)
  local f, err, code = ctx.roots:read(idx, rel, ctx.caps.max_file_size)
  if not f then return nil, err, code end
  local key = cost.scan_key(f)
  local scan = key and ctx.ws.scans[key]
  local hash, herr, hcode
  if scan and scan.hash then hash = scan.hash else hash, herr, hcode = f:hash() end
  f:close()
  return hash, herr, hcode
end

return {
  name = "stat",
  title = "File information",
  description = [[Describe a path without reading it: type (file, dir, symlink, other), size in bytes, modification time (UTC, ISO 8601), permission bits, hard-link count. A file also gets its line count where it is cheap to know (lines_exact says so) and tokens_estimate, what reading it whole would cost (text: bytes/4). A symlink is described itself (its target text is given), not followed.
Example: {"path": "src"}]],
  input_schema = {
    type = "object",
    properties = {
      path = { type = "string", description = "Path to describe: relative to the first root, or an absolute path under a root." },
      content_hash = { type = "boolean", description = "Files: also their content_hash, as read_file gives it (reads the file once; over max_file_size: TOO_LARGE)." },
    },
    required = { "path" },
    additionalProperties = false,
  },
  output_schema = {
    type = "object",
    properties = {
      path = { type = "string" },
      name = { type = "string" },
      type = { type = "string", enum = { "file", "dir", "symlink", "other" } },
      size = { type = "integer" },
      mtime = { type = "string" },
      mode = { type = "string" },
      nlink = { type = "integer" },
      is_symlink = { type = "boolean" },
      target = { type = "string" },
      lines = { type = "integer", description = "A text file's line count, when known (lines_exact)." },
      lines_exact = { type = "boolean", description = "Files: true when the lines were counted (or the file is binary); false for a big file not read whole yet: read_file it once to know." },
      binary = { type = "boolean", description = "true for a file with NUL bytes (an image, an archive...): no line count." },
      tokens_estimate = { type = "integer", description = "Files: the estimated tokens of reading it whole (text: bytes/4 rounded up; binary: bytes/3, as base64)." },
      content_hash = { type = "string", description = "With content_hash: a file's, \"sha256:<hex>\" of its bytes (read_file's)." },
    },
    required = { "path", "name", "type", "size", "mtime", "mode", "nlink", "is_symlink" },
  },
  kind = "read", -- annotations, permissions and risk (burrow.toolkit.kinds)
  nofollow = true, -- lstat semantics: a link is described, not followed

  handler = function(ctx, a)
    local idx, rel, code = ctx:resolve(a.path)
    if not idx then return nil, rel, code end
    local st, detail, scode = ctx.roots:stat(idx, rel)
    if not st then return ctx:fail(scode, a.path, detail) end
    local name = rel:gsub("/+$", ""):match("([^/]*)$")
    if name == "." or name == "" then name = context.join(a.path, ""):gsub("/+$", ""):match("([^/]*)$") end
    local lines, exact, tokens, hash_of
    if st.type == "file" then
      local scan = known_lines(ctx, idx, rel)
      exact = scan ~= nil
      local binary = scan and scan.binary and (not scan.charset or scan.utf8)
      if scan and not binary then lines = scan.lines end
      tokens = cost.tokens(st.size, binary)
      if a.content_hash then
        local hash, herr, hcode = file_hash(ctx, idx, rel)
        if not hash then return ctx:fail(hcode, a.path, herr) end
        hash_of = hash
      end
    end
    return {
      path = a.path,
      lines = lines,
      lines_exact = exact,
      binary = exact and lines == nil or nil,
      tokens_estimate = tokens,
      name = name,
      type = st.type,
      size = st.size,
      mtime = st.mtime,
      mode = ("%04o"):format(st.mode),
      nlink = st.nlink,
      is_symlink = st.type == "symlink",
      target = st.target,
      content_hash = hash_of,
    }
  end,

  render = function(r)
    local lines = {}
    for _, k in ipairs { "path", "type", "size", "lines", "tokens_estimate", "mtime", "mode", "nlink", "target" } do
      if r[k] ~= nil then lines[#lines + 1] = ("%s: %s"):format(k, tostring(r[k])) end
    end
    return table.concat(lines, "\n"), r
  end,
}
