-- burrow.base.errors: the stable error codes and the words that go with them.
-- Messages name the path as the agent wrote it, never a host path.

local errors = {}

local words = {
  ENOENT = "%s does not exist",
  EEXIST = "%s already exists",
  ENOTDIR = "%s: a component of the path is not a directory",
  EISDIR = "%s is a directory",
  ELOOP = "%s: too many levels of symbolic links, or a link loop",
  EACCES = "%s: permission denied by the host",
  EAGAIN = "%s: busy, or changed during the call; retry",
  EIO = "%s: I/O error",
  OUTSIDE_ROOT = "%s is outside the allowed roots",
  READ_ONLY_ROOT = "%s is in a read-only root",
  POLICY_DENIED = "%s: denied by policy",
  TOO_LARGE = "%s is too large",
  BINARY = "%s looks binary (it has NUL bytes); read it with encoding = \"base64\"",
  INVALID_ARGUMENT = "%s: invalid argument",
  NOT_REGULAR = "%s is not a regular file (a FIFO, socket or device)",
  HASH_MISMATCH = "%s has changed since it was read",
  NOT_FOUND_TEXT = "%s: the text to replace was not found",
  AMBIGUOUS_TEXT = "%s: the edit is ambiguous (more than one place, or more than one way to place it)",
  OVERLAPPING_EDITS = "%s: two edits overlap",
  STORE_UNAVAILABLE = "%s: refused: the shared state store (Redis/Valkey) is unavailable; retry",
}

errors.codes = {}
for code in pairs(words) do errors.codes[code] = code end

-- A path as the agent wrote it: bare when it reads unambiguously, quoted
-- (control characters escaped) when it has odd spaces or bytes.
local function show(path)
  if path == nil then return "the path" end
  if path ~= "" and not path:find("[%c\"]") and not path:find("^%s") and not path:find("%s$") then
    return path
  end
  return (("%q"):format(path):gsub("\\\n", "\\n"))
end

-- "CODE: <path> <words>[: detail]"
--- "CODE: path: text": the text says it all (no word of the code's).
function errors.said(code, path, text)
  return code .. ": " .. show(path) .. ": " .. text
end

function errors.message(code, path, detail)
  local w = words[code] or "%s: failed"
  local shown = show(path)
  local msg = w:format(shown)
  if detail and detail ~= "" then msg = msg .. ": " .. detail end
  return code .. ": " .. msg
end

return errors
