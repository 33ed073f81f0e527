-- burrow.workspace.audit: where the audit policy's records go: one JSON line each,
-- appended to a file that is rotated once (file.1) when it passes its cap,
-- or to stderr when no file is configured.

local json = require("burrow.core").json

local audit = {}

local Sink = {}
Sink.__index = Sink

audit.max_bytes = 64 * 1024 * 1024

--- opts: nil | "FILE" | {file = , max_bytes = }
function audit.open(opts)
  if type(opts) == "string" then opts = { file = opts } end
  opts = opts or {}
  local sink = setmetatable({ file = opts.file, max = opts.max_bytes or audit.max_bytes }, Sink)
  if sink.file then
    local f, err = io.open(sink.file, "ab")
    if not f then return nil, ("audit file: %s"):format(err) end
    sink.fh = f
    sink.size = f:seek("end") or 0
  end
  return sink
end

function Sink:write(rec)
  local line = json.encode(rec) .. "\n"
  if not self.fh then
    io.stderr:write("burrow audit: ", line)
    return
  end
  if self.size + #line > self.max then -- keep one old file, start a new one
    self.fh:close()
    os.rename(self.file, self.file .. ".1")
    self.fh = io.open(self.file, "ab")
    self.size = 0
    if not self.fh then return end
  end
  self.fh:write(line)
  self.fh:flush()
  self.size = self.size + #line
end

function Sink:close()
  if self.fh then self.fh:close() end
  self.fh = nil
end

return audit
