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
-- An escape through a path with no ".." is a symlink's doing.
local function fail(msg, code, prefix, path, det)
  if code == "OUTSIDE_ROOT" then
    local lexical = path and not ("/" .. path .. "/"):find("/%.%./") and (det and det.path or path) == path
    if lexical and not path:find("^/") then
      return nil, "access denied: symlink resolves outside workspace", code
    end
    return nil, "access denied: path is outside the workspace", code
  end
  if code == "ELOOP" then return nil, "access denied: symlink resolves outside workspace", code end
  if code == "ENOENT" then return nil, prefix .. "file not found", code end
  if code == "EACCES" then return nil, prefix .. "access denied", code end
  return nil, prefix .. P.detail(msg), code
end

local NEED = "%s is required"
local text_result = P.text

local function guard(ctx, path, text)
  if ctx.caps.untrusted_boundary then return ctx:untrusted(text, path) end
  return text
end

-- The raw bytes of a file (bounded by burrow's caps).
local function bytes_of(ctx, path)
  local r, msg, code = ctx:call("read_file", { path = path, encoding = "base64" })
  if not r then return fail(msg, code, "failed to read file: ", path) end
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
    return fail(pmsg, pcode, "failed to read file: ", a.path)
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
  local ok, e, c = P.need(a, { "path" }, NEED)
  if not ok then return nil, e, c end
  local lines = a.start_line ~= nil or a.max_lines ~= nil
  if lines and a.offset ~= nil then
    return nil, "offset is not supported in line mode; use start_line", "INVALID_ARGUMENT"
  end
  local data, msg, code = bytes_of(ctx, a.path)
  if not data then return nil, msg, code end
  if lines then return line_mode(ctx, a, data) end
  if a.offset == nil and a.length == nil and #data <= BUDGET then return guard(ctx, a.path, data) end
  return byte_mode(ctx, a, data)
end

local function build(o)
  local require_overwrite = o.require_overwrite == true
  local write_props = {
    path = { type = "string", description = "Path to the file to write. Will be created if it doesn't exist." },
    content = { type = "string", description = "Content to write to the file. " .. ESCAPES },
  }
  if require_overwrite then
    write_props.overwrite = { type = "boolean", description = "Replace an existing file (default false)." }
  end

  local tools = {
    {
      name = "read_file",
      description = "Read the contents of a file. Path can be absolute or relative to the workspace. "
        .. "Files up to 64 KiB come back whole; pass offset/length for bytes, or start_line/max_lines for `N|line` rows.",
      schema = {
        path = { type = "string", description = "Path to the file to read. Can be absolute or relative to the workspace." },
        offset = { type = "integer", description = "Byte mode: first byte, 0-based (default 0)." },
        length = { type = "integer", description = "Byte mode: bytes to read (default and maximum 65536)." },
        start_line = { type = "integer", description = "Line mode: first line, 1-based (default 1)." },
        max_lines = { type = "integer", description = "Line mode: at most this many lines." },
      },
      handler = function(ctx, a)
        local t, msg, code = read_file(ctx, a)
        if not t then return nil, msg, code end
        return text_result(t)
      end,
    },
    {
      name = "write_file",
      description = "Write content to a file, creating parent directories if needed. " .. ESCAPES,
      schema = { type = "object", properties = write_props },
      kind = "write",
      required = { "path", "content" },
      handler = function(ctx, a)
        local args = { path = a.path, content = a.content }
        if require_overwrite and not a.overwrite then args.expected_hash = "absent" end
        local r, msg, code = ctx:call("write_file", args)
        if not r then
          if code == "EEXIST" or (code == "HASH_MISMATCH" and args.expected_hash == "absent") then
            return nil, ("file: %s already exists. Set overwrite=true to replace."):format(a.path), code
          end
          return fail(msg, code, "failed to write file: ", a.path)
        end
        return text_result("File written: " .. a.path)
      end,
    },
    {
      name = "list_dir",
      description = "List files and directories in a specified path. Directories show as `DIR:  name`, files as `FILE: name`.",
      schema = { path = { type = "string", description = "Path to the directory to list. Defaults to current directory if empty." } },
      handler = function(ctx, a)
        local path = (a.path == nil or a.path == "") and "." or a.path
        local r, msg, code = ctx:call("list_dir", { path = path, include_hidden = true })
        if not r then return fail(msg, code, "failed to read directory: ", path) end
        table.sort(r.entries, function(x, y) return x.name < y.name end)
        local out = {}
        for _, e in ipairs(r.entries) do
          out[#out + 1] = (e.type == "dir" and "DIR:  " or "FILE: ") .. e.name .. "\n"
        end
        if r.truncated then out[#out + 1] = ("[%d more entries not shown: max_entries reached]\n"):format(r.omitted) end
        return text_result(table.concat(out))
      end,
    },
    {
      name = "edit_file",
      description = "Edit a file by replacing old text with new text. The old text must match exactly and appear exactly once. " .. ESCAPES,
      schema = {
        path = { type = "string", description = "The file path to edit." },
        old_text = { type = "string", description = "The exact text to find and replace. Must appear exactly once in the file." },
        new_text = { type = "string", description = "The text to replace with." },
      },
      kind = "edit",
      required = { "path", "old_text", "new_text" },
      handler = function(ctx, a)
        local r, msg, code, det = ctx:call("edit_file", { path = a.path, old_text = a.old_text, new_text = a.new_text })
        if not r then
          if code == "NOT_FOUND_TEXT" then
            return nil, "old_text not found in file. Make sure it matches exactly", code
          elseif code == "AMBIGUOUS_TEXT" then
            local n = det and det.matches or 2
            return nil, ("old_text appears %d times. Please provide more context to make it unique"):format(n), code
          end
          return fail(msg, code, "failed to read file: ", a.path)
        end
        return text_result("File edited: " .. a.path)
      end,
    },
    {
      name = "append_file",
      description = "Append content to the end of a file; the file is created if it doesn't exist. No newline is added. " .. ESCAPES,
      schema = {
        path = { type = "string", description = "The file path to append to. Will be created if it doesn't exist." },
        content = { type = "string", description = "The content to append." },
      },
      annotations = P.annotations(false, false, false), permissions = { "fs.write" }, risk = "medium",
      required = { "path", "content" },
      handler = function(ctx, a)
        local r, msg, code = ctx:call("append_file", { path = a.path, content = a.content })
        if not r then return fail(msg, code, "failed to append to file: ", a.path) end
        return text_result("Appended to " .. a.path)
      end,
    },
  }
  return { name = "picoclaw", path_style = "relative",
    tools = P.tools({ need = NEED, output_schema = P.TEXT_SCHEMA, output = P.text_output }, tools) }
end

return {
  name = "picoclaw",
  description = "PicoClaw's filesystem tools (read_file with N|line rows, DIR:/FILE: listings, append_file)",
  path_style = "relative",
  options = { "require_overwrite" },
  build = build,
}
