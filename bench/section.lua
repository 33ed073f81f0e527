-- bench/section.lua: put a bench's text between its markers in a report
-- (<!-- NAME --> ... <!-- /NAME -->), or at its end the first time; the
-- Lua benches' twin of bench/section.mjs.
--
--   require("section")(report_path, "policy bench", text)

return function(report, name, text)
  local fh = io.open(report)
  local doc = fh and fh:read("a") or ""
  if fh then fh:close() end
  local open, close = "<!-- " .. name .. " -->", "<!-- /" .. name .. " -->"
  local s = doc:find(open, 1, true)
  local _, e = doc:find(close, 1, true)
  local block = open .. "\n" .. text .. close
  if s and e and e > s then doc = doc:sub(1, s - 1) .. block .. doc:sub(e + 1)
  else doc = doc .. "\n" .. block .. "\n" end
  fh = assert(io.open(report, "w"))
  fh:write(doc)
  fh:close()
end
