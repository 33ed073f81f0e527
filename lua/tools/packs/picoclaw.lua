-- picoclaw: PicoClaw's filesystem tools (read_file, write_file, list_dir,
-- edit_file, append_file) with its texts, its three read_file shapes
-- (plain, byte mode, `N|line` line mode) and its error strings, over the
-- native tools. Deviations (no allowPatterns, no restrict=false, new files
-- get the umask's mode) are in docs/packs.md.

local core = require "burrow.core"
local P = require "burrow.pack"

local BUDGET = 64 * 1024 -- MaxReadFileSize
local ESCAPES = "Standard JSON escaping applies: \\n for newline and \\\\n for literal backslash-n."

local function basename(p) return p:match("([^/]*)/*$") ~= "" and p:match("([^/]*)/*$") or p end

-- PicoClaw's words for burrow's failures (prefix: "failed to read file: "...).
-- An escape through a relative path with no ".." is a symlink's doing.
local SYMLINK = "access denied: symlink resolves outside workspace"
local EXISTS = "file: %s already exists. Set overwrite=true to replace."
local function words(prefix, more)
  local w = {
    OUTSIDE_ROOT = function(path)
      if path and not ("/" .. path .. "/"):find("/%.%./") and not path:find("^/") then return SYMLINK end
      return "access denied: path is outside the workspace"
    end,
    ELOOP = SYMLINK, ENOENT = prefix .. "file not found", EACCES = prefix .. "access denied",
  }
  for k, v in pairs(more or {}) do w[k] = v end
  return P.words(w, P.prefixed(prefix))
end
local read_failed = words("failed to read file: ")

local function guard(ctx, path, text)
  if ctx.caps.untrusted_boundary then return ctx:untrusted(text, path) end
  return text
end

-- The raw bytes of a file (bounded by burrow's caps).
local function bytes_of(ctx, path)
  local r, msg, code = ctx:call("read_file", { path = path, encoding = "base64" })
  if not r then return read_failed(msg, code, nil, nil, ctx, { path = path }) end
  return core.base64_decode(r.content)
end

local function byte_mode(ctx, a, data)
  local total, off = #data, a.offset or 0
  local len = a.length or BUDGET
  if off < 0 or len < 0 then return nil, "offset and length must be non-negative", "INVALID_ARGUMENT" end
  len = math.min(len, BUDGET)
  if off >= total then return "[END OF FILE - no content at this offset]" end
  local chunk = data:sub(off + 1, off + len)
  local next_off = off + #chunk
  local head = ("[file: %s | total: %d bytes | read: bytes %d-%d]"):format(basename(a.path), total, off, next_off - 1)
  local mark = next_off < total
    and ("[TRUNCATED - file has more content. Call read_file again with offset=%d to continue.]"):format(next_off)
    or "[END OF FILE - no further content.]"
  return head .. "\n" .. mark .. "\n\n" .. guard(ctx, a.path, chunk)
end

local function line_mode(ctx, a, data)
  local probe, pmsg, pcode = ctx:call("read_file", { path = a.path, limit = 1 })
  if not probe then
    if pcode == "BINARY" then
      return nil, "file appears to be binary; switch read_file mode to 'bytes' for byte-based inspection", pcode
    end
    return read_failed(pmsg, pcode, nil, a, ctx, a)
  end
  if probe.encoding == "image" then
    return nil, "file appears to be binary; switch read_file mode to 'bytes' for byte-based inspection", "BINARY"
  end
  local lines, pos = {}, 1
  while pos <= #data do
    local nl = data:find("\n", pos, true) or #data + 1
    lines[#lines + 1], pos = data:sub(pos, nl - 1), nl + 1
  end
  local start = a.start_line or 1
  if start < 1 then return nil, "start_line must be >= 1", "INVALID_ARGUMENT" end
  if a.max_lines and a.max_lines < 1 then return nil, "max_lines must be >= 1", "INVALID_ARGUMENT" end
  if start > #lines then return ("[END OF FILE - no content at or after start_line=%d]"):format(start) end
  local last = a.max_lines and math.min(#lines, start + a.max_lines - 1) or #lines
  local out, used, mark, shown_to = {}, 0, nil, start - 1
  for n = start, last do
    local row = ("%d|%s\n"):format(n, lines[n])
    if used + #row > BUDGET then
      if n == start then
        out[1] = row:sub(1, BUDGET)
        used, shown_to = BUDGET, n
        mark = ("[TRUNCATED - line %d exceeded the %d byte read budget and was cut mid-line.]"):format(n, BUDGET)
      else
        local rest = a.max_lines and (a.max_lines - (n - start)) or (#lines - n + 1)
        mark = ("[TRUNCATED - byte budget reached. Call read_file again with start_line=%d and max_lines=%d to continue at the next line.]")
          :format(n, rest)
      end
      break
    end
    out[#out + 1], used, shown_to = row, used + #row, n
  end
  if not mark then
    mark = last < #lines
      and ("[PARTIAL - more content remains. Call read_file again with start_line=%d and max_lines=%d to continue.]")
        :format(last + 1, a.max_lines)
      or "[END OF FILE - no further content.]"
  end
  local head = ("[file: %s | read: lines %d-%d (1-indexed) | file_bytes: %d | output_bytes: %d]")
    :format(basename(a.path), start, shown_to, #data, used)
  return head .. "\n" .. mark .. "\n\n" .. guard(ctx, a.path, table.concat(out))
end

local function read_file(ctx, a)
  local lines = a.start_line ~= nil or a.max_lines ~= nil
  if lines and a.offset ~= nil then
    return nil, "offset is not supported in line mode; use start_line", "INVALID_ARGUMENT"
  end
  local data, msg, code = bytes_of(ctx, a.path)
  if not data then return nil, msg, code end
  if lines then data, msg, code = line_mode(ctx, a, data)
  elseif a.offset ~= nil or a.length ~= nil or #data > BUDGET then data, msg, code = byte_mode(ctx, a, data)
  else data = guard(ctx, a.path, data) end
  return data, msg, code
end

local S = P.string
local function ESC(d) return S(d .. " " .. ESCAPES) end

local function build(o)
  local require_overwrite = o.require_overwrite == true or nil
  local tools = {
    { name = "read_file", handler = read_file, required = { "path" },
      description = "Read the contents of a file. Path can be absolute or relative to the workspace. "
        .. "Files up to 64 KiB come back whole; pass offset/length for bytes, or start_line/max_lines for `N|line` rows.",
      schema = {
        path = S("Path to the file to read. Can be absolute or relative to the workspace."),
        offset = P.integer("Byte mode: first byte, 0-based (default 0)."),
        length = P.integer("Byte mode: bytes to read (default and maximum 65536)."),
        start_line = P.integer("Line mode: first line, 1-based (default 1)."),
        max_lines = P.integer("Line mode: at most this many lines."),
      } },
    { name = "write_file", kind = "write", native = "write_file", required = { "path", "content" },
      description = "Write content to a file, creating parent directories if needed. " .. ESCAPES,
      schema = P.object {
        path = S("Path to the file to write. Will be created if it doesn't exist."),
        content = ESC("Content to write to the file."),
        overwrite = require_overwrite and P.boolean("Replace an existing file (default false)."),
      },
      args = function(a)
        return { path = a.path, content = a.content, expected_hash = require_overwrite and not a.overwrite and "absent" or nil }
      end,
      errors = words("failed to write file: ", { EEXIST = EXISTS, HASH_MISMATCH = EXISTS }),
      result = function(_, a) return P.text("File written: " .. a.path) end },
    { name = "list_dir", native = "list_dir",
      description = "List files and directories in a specified path. Directories show as `DIR:  name`, files as `FILE: name`.",
      schema = { path = S("Path to the directory to list. Defaults to current directory if empty.") },
      args = function(a) return { path = (a.path == nil or a.path == "") and "." or a.path, include_hidden = true } end,
      errors = words("failed to read directory: "),
      result = function(r)
        table.sort(r.entries, function(x, y) return x.name < y.name end)
        local out = {}
        for i, e in ipairs(r.entries) do out[i] = (e.type == "dir" and "DIR:  " or "FILE: ") .. e.name .. "\n" end
        if r.truncated then out[#out + 1] = ("[%d more entries not shown: max_entries reached]\n"):format(r.omitted) end
        return P.text(table.concat(out))
      end },
    { name = "edit_file", kind = "edit", native = "edit_file", required = { "path", "old_text", "new_text" },
      description = "Edit a file by replacing old text with new text. The old text must match exactly and appear exactly once. " .. ESCAPES,
      schema = {
        path = S("The file path to edit."),
        old_text = S("The exact text to find and replace. Must appear exactly once in the file."),
        new_text = S("The text to replace with."),
      },
      errors = words("failed to read file: ", {
        NOT_FOUND_TEXT = "old_text not found in file. Make sure it matches exactly",
        AMBIGUOUS_TEXT = function(_, _, _, det)
          return ("old_text appears %d times. Please provide more context to make it unique"):format(det and det.matches or 2)
        end,
      }),
      result = function(_, a) return P.text("File edited: " .. a.path) end },
    { name = "append_file", native = "append_file", required = { "path", "content" },
      description = "Append content to the end of a file; the file is created if it doesn't exist. No newline is added. " .. ESCAPES,
      schema = {
        path = S("The file path to append to. Will be created if it doesn't exist."),
        content = S("The content to append."),
      },
      annotations = P.annotations(false, false, false), permissions = { "fs.write" }, risk = "medium",
      errors = words("failed to append to file: "),
      result = function(_, a) return P.text("Appended to " .. a.path) end },
  }
  return P.tools({ need = "%s is required", output_schema = P.TEXT_SCHEMA, output = P.text_output }, tools)
end

return P.pack({ name = "picoclaw", path_style = "relative", options = { "require_overwrite" },
  description = "PicoClaw's filesystem tools (read_file with N|line rows, DIR:/FILE: listings, append_file)" }, build)
