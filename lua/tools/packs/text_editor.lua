-- text_editor: Anthropic's text editor tool, str_replace_based_edit_tool
-- (20250728: view, create, str_replace, insert; max_characters) or the
-- 20250124 str_replace_editor with undo_edit, with the reference
-- implementation's texts and error strings, over the native tools.
-- Deviations (atomic writes, no tab expansion on write, the bounded undo
-- store) are in docs/packs.md.

local core = require "burrow.core"
local P = require "burrow.pack"

local MAX_RESPONSE_LEN = 16000
local SNIPPET_LINES = 4
local CLIPPED = "<response clipped><NOTE>To save on context only part of this file has been shown to you. You should retry this tool after you have searched inside the file with `grep -n` in order to find the line numbers of what you are looking for.</NOTE>"

local function split(s)
  local out = {}
  for l in (s .. "\n"):gmatch("([^\n]*)\n") do out[#out + 1] = l end
  return out
end

local function expandtabs(s)
  return (s:gsub("[^\n]*", function(line)
    if not line:find("\t", 1, true) then return line end
    local out, col = {}, 0
    for ch in line:gmatch(utf8.charpattern) do
      if ch == "\t" then
        local n = 8 - col % 8
        out[#out + 1] = (" "):rep(n)
        col = col + n
      else
        out[#out + 1] = ch
        col = col + 1
      end
    end
    return table.concat(out)
  end))
end

-- Cut to max characters (UTF-8 code points), with the clipped marker.
local function maybe_truncate(s, max)
  local n = utf8.len(s) or #s
  if n <= max then return s end
  local cut = utf8.offset(s, max + 1) or (max + 1)
  return s:sub(1, cut - 1) .. CLIPPED
end

-- make_output of the reference.
local function make_output(content, descriptor, init, max)
  content = expandtabs(maybe_truncate(content, max))
  local out = {}
  for i, l in ipairs(split(content)) do out[i] = ("%6d\t%s"):format(i + init - 1, l) end
  return ("Here's the result of running `cat -n` on %s:\n%s\n"):format(descriptor, table.concat(out, "\n"))
end

local pylist = P.pylist

local err = P.invalid

-- The whole file as text (raw bytes, invalid UTF-8 made U+FFFD).
local function read_all(ctx, path)
  local r, msg, code = ctx:call("read_file", { path = path, encoding = "base64" })
  if not r then return nil, msg, code end
  return P.utf8_clean(core.base64_decode(r.content)), r.content_hash
end

local MISSING = "The path %s does not exist. Please provide a valid path."
local failed = P.words({ ENOENT = MISSING }, P.prefixed(""))

local function snippet(ctx, path, first0, extra, max)
  local text = read_all(ctx, path) or ""
  local lines = split(text)
  local s = math.max(0, first0 - SNIPPET_LINES)
  local e = first0 + SNIPPET_LINES + extra
  local part = {}
  for i = s + 1, math.min(e + 1, #lines) do part[#part + 1] = lines[i] end
  return table.concat(part, "\n"), s + 1
end

local function view(ctx, a, st, max)
  if st.type == "dir" then
    if a.view_range then return err("The `view_range` parameter is not allowed when `path` points to a directory.") end
    local r, msg, code = ctx:call("list_dir", { path = a.path, recursive = true, max_depth = 2 })
    if not r then return failed(msg, code, nil, a, ctx, a) end
    local out = { a.path }
    for _, e in ipairs(r.entries) do out[#out + 1] = e.path end
    if r.truncated then out[#out + 1] = ("[%d more entries not shown: max_entries reached]"):format(r.omitted) end
    return ("Here's the files and directories up to 2 levels deep in %s, excluding hidden items:\n%s\n")
      :format(a.path, table.concat(out, "\n"))
  end
  local text, msg, code = read_all(ctx, a.path)
  if not text then return failed(msg, code, nil, a, ctx, a) end
  local init = 1
  if a.view_range then
    local vr = a.view_range
    if #vr ~= 2 or math.type(vr[1]) ~= "integer" or math.type(vr[2]) ~= "integer" then
      return err("Invalid `view_range`. It should be a list of two integers.")
    end
    local lines = split(text)
    local n, lo, hi = #lines, vr[1], vr[2]
    if lo < 1 or lo > n then
      return err(("Invalid `view_range`: %s. Its first element `%d` should be within the range of lines of the file: [1, %d]"):format(pylist(vr), lo, n))
    end
    if hi > n then
      return err(("Invalid `view_range`: %s. Its second element `%d` should be smaller than the number of lines in the file: `%d`"):format(pylist(vr), hi, n))
    end
    if hi ~= -1 and hi < lo then
      return err(("Invalid `view_range`: %s. Its second element `%d` should be larger or equal than its first `%d`"):format(pylist(vr), hi, lo))
    end
    local part = {}
    for i = lo, hi == -1 and n or hi do part[#part + 1] = lines[i] end
    text, init = table.concat(part, "\n"), lo
  end
  return make_output(text, a.path, init, max)
end

local function str_replace(ctx, a, max)
  if a.old_str == nil then return err("Parameter `old_str` is required for command: str_replace") end
  local new = a.new_str or ""
  local r, msg, code, det = ctx:call("edit_file", { path = a.path, old_text = a.old_str, new_text = new })
  if not r then
    if code == "NOT_FOUND_TEXT" or (code == "INVALID_ARGUMENT" and a.old_str == "") then
      return err(("No replacement was performed, old_str `%s` did not appear verbatim in %s."):format(a.old_str, a.path), "NOT_FOUND_TEXT")
    elseif code == "AMBIGUOUS_TEXT" then
      local lines = det and det.lines or {}
      return err(("No replacement was performed. Multiple occurrences of old_str `%s` in lines %s. Please ensure it is unique")
        :format(a.old_str, pylist(lines)), code)
    elseif code == "INVALID_ARGUMENT" and a.old_str == new then
      return ("The file %s has been edited. "):format(a.path) -- nothing to change
    end
    return failed(msg, code, nil, a, ctx, a)
  end
  local _, nl = new:gsub("\n", "")
  local part, first = snippet(ctx, a.path, (r.edits[1].line or 1) - 1, nl, max)
  return ("The file %s has been edited. %sReview the changes and make sure they are as expected. Edit the file again if necessary.")
    :format(a.path, make_output(part, "a snippet of " .. a.path, first, max))
end

local function insert(ctx, a, max)
  local text = a.new_str
  if a.insert_text ~= nil then
    if text ~= nil and text ~= a.insert_text then
      return err("Parameters `new_str` and `insert_text` differ; send one of them for command: insert")
    end
    text = a.insert_text
  end
  if a.insert_line == nil then return err("Parameter `insert_line` is required for command: insert") end
  if text == nil then return err("Parameter `new_str` is required for command: insert") end
  local file, msg, code = read_all(ctx, a.path)
  if not file then return failed(msg, code, nil, a, ctx, a) end
  local lines = split(file)
  local n = a.insert_line
  if n < 0 or n > #lines then
    return err(("Invalid `insert_line` parameter: %d. It should be within the range of lines of the file: [0, %d]"):format(n, #lines))
  end
  -- native insert_lines inserts whole lines before line n+1
  local total = file == "" and 0 or #lines - (file:sub(-1) == "\n" and 1 or 0)
  local content = text:sub(-1) == "\n" and text or text .. "\n"
  local r, imsg, icode = ctx:call("insert_lines", { path = a.path, line = math.min(n, total) + 1, content = content })
  if not r then return failed(imsg, icode, nil, a, ctx, a) end
  local _, nl = text:gsub("\n", "")
  local part, first = snippet(ctx, a.path, n, nl + 1 - 1, max)
  return ("The file %s has been edited. %sReview the changes and make sure they are as expected (correct indentation, no duplicate lines, etc). Edit the file again if necessary.")
    :format(a.path, make_output(part, "a snippet of the edited file", first, max))
end

local function build(o)
  local version = o.version or "20250728"
  if version ~= "20250728" and version ~= "20250124" then
    error("text_editor: version must be 20250728 or 20250124")
  end
  local undo = version == "20250124"
  local name = undo and "str_replace_editor" or "str_replace_based_edit_tool"
  local commands = { "view", "create", "str_replace", "insert" }
  if undo then commands[#commands + 1] = "undo_edit" end
  local max = math.min(o.max_characters or MAX_RESPONSE_LEN, MAX_RESPONSE_LEN)
  if undo then max = MAX_RESPONSE_LEN end -- max_characters is a 20250728 parameter

  local function handler(ctx, a)
    local cmd = a.command
    local known = false
    for _, c in ipairs(commands) do known = known or c == cmd end
    if not known then
      local quoted = {}
      for i, c in ipairs(commands) do quoted[i] = c end
      return err(("Unrecognized command %s. The allowed commands for the %s tool are: %s")
        :format(tostring(cmd), name, table.concat(quoted, ", ")))
    end
    local path = a.path
    if path:sub(1, 1) ~= "/" then
      local m = P.mounts(ctx)[1]
      return err(("The path %s is not an absolute path, it should start with `/`. Maybe you meant %s/%s?")
        :format(path, m == "/" and "" or m, path))
    end
    local st, smsg, scode = ctx:call("stat", { path = path })
    if not st and scode ~= "ENOENT" then return failed(smsg, scode, nil, a, ctx, a) end
    if not st and cmd ~= "create" then
      return err(MISSING:format(path), "ENOENT")
    end
    if st and cmd == "create" then
      return err(("File already exists at: %s. Cannot overwrite files using command `create`."):format(path), "EEXIST")
    end
    if st and st.type == "dir" and cmd ~= "view" then
      return err(("The path %s is a directory and only the `view` command can be used on directories"):format(path), "EISDIR")
    end
    if cmd == "view" then return view(ctx, a, st, max) end
    if cmd == "create" then
      if a.file_text == nil then return err("Parameter `file_text` is required for command: create") end
      local r, msg, code = ctx:call("write_file", { path = path, content = a.file_text, expected_hash = "absent" })
      if not r then return failed(msg, code, nil, a, ctx, a) end
      return "File created successfully at: " .. path
    end
    if cmd == "str_replace" then return str_replace(ctx, a, max) end
    if cmd == "insert" then return insert(ctx, a, max) end
    -- undo_edit: the native bounded, conflict-aware undo store
    local r, msg, code, det = ctx:call("undo_edit", { path = path })
    if not r then
      if code == "ENOENT" or det and det.nothing_to_undo then
        return err(("No edit history found for %s."):format(path), code)
      end
      return failed(msg, code, nil, a, ctx, a)
    end
    local text = read_all(ctx, path) or ""
    return ("Last edit to %s undone successfully. %s"):format(path, make_output(text, path, 1, max))
  end

  local S = P.string
  local schema = P.object({
    -- no enum: an unknown command gets the reference's own words (handler)
    command = S("The command to run: " .. table.concat(commands, ", ") .. "."),
    path = S("Absolute path to file or directory, e.g. `/repo/file.py` or `/repo`."),
    file_text = S("Required for `create`: the content of the file to be created."),
    view_range = P.array({ type = "integer" }, "Optional for `view` on a file: [start, end], 1-based and inclusive; end -1 means to the end of the file."),
    old_str = S("Required for `str_replace`: the exact text to replace; it must appear exactly once."),
    new_str = S("For `str_replace`: the replacement (omit to delete old_str). For `insert`: the text to insert."),
    insert_line = P.integer("Required for `insert`: insert after this line (0 = at the beginning)."),
    insert_text = S("For `insert`: the text to insert (same as new_str)."),
  }, { "command", "path" })

  return P.tools({ output_schema = P.TEXT_SCHEMA, output = P.text_output }, {
    { name = name, title = "Text editor", kind = "edit", schema = schema, handler = handler,
      anthropic_type = undo and "text_editor_20250124" or "text_editor_20250728",
      description = [[Custom editing tool for viewing, creating and editing files
* State is persistent across command calls and discussions with the user
* If `path` is a file, `view` displays the result of applying `cat -n`. If `path` is a directory, `view` lists non-hidden files and directories up to 2 levels deep
* The `create` command cannot be used if the specified `path` already exists as a file
* If a `command` generates a long output, it will be truncated and marked with `<response clipped>`]] ..
        (undo and "\n* The `undo_edit` command will revert the last edit made to the file at `path`" or "") .. [[

Notes for using the `str_replace` command:
* The `old_str` parameter should match EXACTLY one or more consecutive lines from the original file. Be mindful of whitespaces!
* If the `old_str` parameter is not unique in the file, the replacement will not be performed. Make sure to include enough context in `old_str` to make it unique
* The `new_str` parameter should contain the edited lines that should replace the `old_str`]] },
  })
end

return P.pack({ name = "text_editor", path_style = "absolute", options = { "version", "max_characters" },
  description = "Anthropic's text editor tool (str_replace_based_edit_tool, or str_replace_editor with undo_edit)" }, build)
