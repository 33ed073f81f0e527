-- cost: what reading something costs an agent, in bytes, lines and an
-- estimate of tokens, so it can page or narrow before a client's wall
-- (Claude Code's Read fails above 25,000 tokens). One rule, used by stat,
-- read_file and every page (docs/tools.md, "Size, lines and tokens"):
--   text: bytes / 4, rounded up (English and code run 3.5 to 4.5 bytes a
--   token; the estimate is for deciding, not billing);
--   binary or image: what its base64 costs as text, 4 characters per 3
--   bytes at 4 characters a token: bytes / 3, rounded up (a model that
--   takes images natively counts their pixels instead).

local M = {}

-- Files from this size keep their facts (hash, lines, newline, charset)
-- cached per workspace (ws.scans) once read_file has read them whole.
M.BIG = 1024 * 1024

-- The key of a file's facts in ws.scans (an open File), or nil for a
-- file too small to be cached.
function M.scan_key(f)
  return f:size() >= M.BIG and f:identity() or nil
end

-- tokens(bytes [, binary]) -> the estimate for that many bytes.
function M.tokens(bytes, binary)
  if binary then return (bytes + 2) // 3 end
  return (bytes + 3) // 4
end

return M
