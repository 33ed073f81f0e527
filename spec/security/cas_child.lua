-- cas_child.lua MODE ROOT NAME TAG N GO LOG ME OTHER: one of the two
-- writers of cas_race_spec.lua, a burrow process of its own (its own
-- burrow.open). Writes READY to LOG, waits for the file GO, then does N
-- rounds of one edit_file call on ROOT/NAME. Round i starts when both
-- writers are there: it writes i to the file ME and waits until OTHER
-- holds i or more, so the two calls of a round run at the same time. One
-- log line per call:
--   MODE cas:    the file is one line "v=<n> <tag>"; each call reads it and
--                edits v=n to v=n+1 with expected_hash = the hash read.
--                "W n" won from version n, "L n CODE" lost (HASH_MISMATCH).
--   MODE append: each call puts "<tag>-<i>" before the line "#end" with no
--                expected_hash. "OK i", or "FAIL i CODE".
--   MODE files:  NAME is a list of files joined by ","; each call reads them
--                all and moves every one from v=n to v=n+1 in one
--                edit_files call with the hashes read (A lists the files
--                in order, B reversed). "W n", or "L n CODE"; a read that
--                finds the files at different versions logs "MIXED".
-- EAGAIN (a lock held too long) is retried and counted ("EAGAIN k"); the
-- log ends with "DONE".

local mode, root, name, tag, n, go, logpath, me, other =
  arg[1], arg[2], arg[3], arg[4], tonumber(arg[5]), arg[6], arg[7], arg[8], arg[9]
local burrow = require "burrow"
local system = require "system"

local ws = assert(burrow.open{roots = {{path = root, mode = "rw"}}, resolver = os.getenv("BURROW_RESOLVER")})
local log = assert(io.open(logpath, "w"))
log:write("READY\n")
log:flush()

local deadline = system.gettime() + 30
while not io.open(go, "r") do
  if system.gettime() > deadline then os.exit(2) end
  system.sleep(0.001)
end

-- ws:call, again while EAGAIN (a writer held the lock past the wait).
local eagain = 0
local function call(tool, args)
  for _ = 1, 20 do
    local res, msg, code = ws:call(tool, args)
    if res or code ~= "EAGAIN" then return res, msg, code end
    eagain = eagain + 1
  end
  return nil, "EAGAIN 20 times", "EAGAIN"
end

-- The start of round i: both writers there (the other may be one ahead).
local function barrier(i)
  local f = assert(io.open(me, "w"))
  f:write(i)
  f:close()
  local limit = system.gettime() + 30
  while true do
    f = io.open(other, "r")
    local at = f and tonumber(f:read("a"))
    if f then f:close() end
    if at and at >= i then return end
    if system.gettime() > limit then io.stderr:write("barrier: the other writer is gone\n"); os.exit(4) end
    system.sleep(0.0001)
  end
end

local out = {}
if mode == "cas" then
  for i = 1, n do
    barrier(i)
    local r, msg, code = call("read_file", {path = name})
    if not r then io.stderr:write("read_file: ", tostring(msg), "\n"); os.exit(3) end
    local v = tonumber(r.content:match("v=(%d+)"))
    local line = r.content:match("\t([^\n]*)")
    local res
    res, msg, code = call("edit_file", {path = name, old_text = line, new_text = ("v=%d %s"):format(v + 1, tag),
                                        expected_hash = r.content_hash})
    if res then out[#out + 1] = "W " .. v
    else out[#out + 1] = ("L %d %s"):format(v, tostring(code)) end
  end
elseif mode == "files" then
  local names = {}
  for f in name:gmatch("[^,]+") do table.insert(names, tag == "A" and #names + 1 or 1, f) end
  for i = 1, n do
    barrier(i)
    local files, v, mixed = {}, nil, false
    for k, f in ipairs(names) do
      local r, msg = call("read_file", {path = f})
      if not r then io.stderr:write("read_file: ", tostring(msg), "\n"); os.exit(3) end
      local fv = tonumber(r.content:match("v=(%d+)"))
      mixed = mixed or (v ~= nil and fv ~= v)
      v = v or fv
      files[k] = {path = f, content = ("v=%d %s\n"):format(fv + 1, tag), expected_hash = r.content_hash}
    end
    if mixed then out[#out + 1] = "MIXED" end
    local res, _, code = call("edit_files", {files = files})
    if res then out[#out + 1] = "W " .. v
    else out[#out + 1] = ("L %d %s"):format(v, tostring(code)) end
  end
else
  for i = 1, n do
    barrier(i)
    local res, _, code = call("edit_file", {path = name, old_text = "#end\n", new_text = ("%s-%d\n#end\n"):format(tag, i)})
    out[#out + 1] = res and ("OK " .. i) or ("FAIL %d %s"):format(i, tostring(code))
  end
end
ws:close()
out[#out + 1] = "EAGAIN " .. eagain
out[#out + 1] = "DONE"
log:write(table.concat(out, "\n"), "\n")
log:close()
