-- The apply_patch envelope as an LPeg grammar (lua/burrow/toolkit/patch_grammar.lua):
-- malformed envelopes give Codex's message and the line and column of the
-- fault; random patches parse exactly as the hand-written parser it
-- replaced (kept as the reference, test-only: spec/support/patch_reference.lua).

local G = require "burrow.toolkit.patch_grammar"

local function fault(text)
  local hunks, msg, code, at = G.parse(text)
  assert.is_nil(hunks, "parsed: " .. text)
  return msg, at.line, at.column, code
end

describe("patch grammar: errors say where", function()
  it("names the line and column of malformed envelopes", function()
    local cases = {
      { "", "The first line of the patch must be '*** Begin Patch'", 1, 1 },
      { "*** Update File: a\n*** End Patch", "The first line of the patch must be '*** Begin Patch'", 1, 1 },
      { "\n\n  *** Begin Patch\n*** Add File: x\n+x\n", "The last line of the patch must be '*** End Patch'", 5, 1 },
      { "*** Begin Patch\nbogus\n*** End Patch", "'bogus' is not a valid hunk header", 2, 1 },
      { "*** Begin Patch\n*** Add File: a\n+x\n  junk\n*** End Patch", "'junk' is not a valid hunk header", 4, 1 },
      { "*** Begin Patch\n*** Update File: a.txt\n*** End Patch", "Update file hunk for path 'a.txt' is empty", 2, 1 },
      { "*** Begin Patch\n*** Update File: a\n@@\n-one\nx\n*** End Patch", "Expected update hunk to start with a @@ context marker, got: 'x'", 5, 1 },
      { "*** Begin Patch\n*** Update File: a\n@@ ctx\nx\n*** End Patch", "Unexpected line found in update hunk: 'x'", 4, 1 },
      { "*** Begin Patch\n*** Update File: a\n@@\n*** End of File\n*** End Patch", "Update hunk does not contain any lines", 4, 1 },
      { "*** Begin Patch\r\n*** Update File: a\r\n@@\r\n+ok\r\n?\r\n*** End Patch\r\n", "Expected update hunk to start with a @@ context marker, got: '?'", 5, 1 },
      { "<<'EOF'\n*** Begin Patch\n*** Delete File: d\nwhat\n*** End Patch\nEOF", "'what' is not a valid hunk header", 4, 1 },
    }
    for _, c in ipairs(cases) do
      local msg, line, col = fault(c[1])
      assert.truthy(msg:find(c[2], 1, true), ("%q: %s"):format(c[1], msg))
      assert.equal(c[3], line, ("%q: line"):format(c[1]))
      assert.equal(c[4], col, ("%q: column"):format(c[1]))
    end
  end)

  it("keeps Codex's line numbers in the message, and its quirk", function()
    -- Codex reports an unexpected first line of an update without @@ one
    -- line late; the message keeps that, the position is the true one
    local msg, line = fault("*** Begin Patch\n*** Update File: a\nx\n*** End Patch")
    assert.equal("invalid hunk at line 4, Unexpected line found in update hunk: 'x'. Every line should start with ' ' (context line), '+' (added line), or '-' (removed line)", msg)
    assert.equal(3, line)
  end)

  it("a chunk past the line cap is INVALID_ARGUMENT, other faults have no code", function()
    local big = { "*** Begin Patch", "*** Update File: a", "@@" }
    for i = 1, G.MAX_CHUNK_LINES + 1 do big[#big + 1] = "+" .. i end
    big[#big + 1] = "*** End Patch"
    local msg, _, _, code = fault(table.concat(big, "\n"))
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("more than 10000 lines", msg, 1, true)
    assert.is_nil(select(4, fault("*** Begin Patch\nbogus\n*** End Patch")))
  end)

  it("parses hunks: add, delete, update with move, contexts, end of file", function()
    local hunks = assert(G.parse(table.concat({
      "*** Begin Patch", "*** Add File: n.txt", "+one", "+two", "*** Delete File: old.txt",
      "*** Update File: a.txt", "*** Move to: b.txt", "@@ def f", " keep", "-x", "+y", "", "@@", "+tail",
      "*** End of File", "*** End Patch" }, "\n")))
    assert.same({ kind = "add", path = "n.txt", content = "one\ntwo\n" }, hunks[1])
    assert.same({ kind = "delete", path = "old.txt" }, hunks[2])
    assert.same({ kind = "update", path = "a.txt", move_to = "b.txt", chunks = {
      { context = "def f", old = { "keep", "x", "" }, new = { "keep", "y", "" }, eof = false },
      { old = {}, new = { "tail" }, eof = true } } }, hunks[3])
  end)

  it("is linear: a patch of 20000 chunks parses in well under a second", function()
    local parts = { "*** Begin Patch", "*** Update File: a" }
    for i = 1, 20000 do parts[#parts + 1] = "@@ c" .. i; parts[#parts + 1] = "-" .. i; parts[#parts + 1] = "+" .. i end
    parts[#parts + 1] = "*** End Patch"
    local t0 = os.clock()
    local hunks = assert(G.parse(table.concat(parts, "\n")))
    assert.equal(20000, #hunks[1].chunks)
    assert.is_true(os.clock() - t0 < 1, os.clock() - t0)
  end)
end)

describe("patch grammar against the hand-written parser", function()
  it("the reference has the grammar's chunk cap", function()
    assert.equal(G.MAX_CHUNK_LINES, require("support.patch_reference").MAX_CHUNK_LINES)
  end)

  local reference = require("support.patch_reference").parse

  -- random patches from lines that exercise every rule and fault
  local VOCAB = { "*** Add File: a.txt", "*** Delete File: b.txt", "*** Update File: c.txt", "*** Move to: d.txt",
    "@@", "@@ def f():", "@@x", " context", "-old", "+new", "", "   ", "*** End of File", "bogus", "*** Add File:",
    "  *** Update File: e.txt  ", "+", "-", " ", "*", "\t", "x" }
  local BODY = { " context", "-old", "+new", "", "  " }
  local function random_patch(rng)
    local lines = {}
    if rng(20) > 1 then lines[1] = "*** Begin Patch" end
    for _ = 1, rng(4) do -- mostly well-formed hunks...
      local kind = rng(3)
      if kind == 1 then
        lines[#lines + 1] = "*** Add File: n" .. rng(9) .. ".txt"
        for _ = 1, rng(4) - 1 do lines[#lines + 1] = "+line" end
      elseif kind == 2 then
        lines[#lines + 1] = "*** Delete File: d.txt"
      else
        lines[#lines + 1] = "*** Update File: u.txt"
        if rng(4) == 1 then lines[#lines + 1] = "*** Move to: m.txt" end
        for c = 1, rng(3) do
          if c > 1 or rng(3) > 1 then lines[#lines + 1] = rng(2) == 1 and "@@" or "@@ def f():" end
          for _ = 1, rng(5) do lines[#lines + 1] = BODY[rng(#BODY)] end
          if rng(6) == 1 then lines[#lines + 1] = "*** End of File" end
        end
      end
    end
    if rng(20) > 1 then lines[#lines + 1] = "*** End Patch" end
    for _ = 1, rng(3) - 1 do -- ...with a line or two of anything, anywhere
      if rng(2) == 1 then table.insert(lines, rng(#lines + 1), VOCAB[rng(#VOCAB)]) end
    end
    local text = table.concat(lines, rng(4) == 1 and "\r\n" or "\n")
    if rng(8) == 1 then text = "<<'EOF'\n" .. text .. "\nEOF" end
    if rng(6) == 1 then text = "\n  " .. text .. " \n" end
    return text
  end

  it("gives the same hunks or the same message on 5000 random patches", function()
    local seed = 14
    local function rng(n) -- a small LCG: the same patches every run
      seed = (seed * 1103515245 + 12345) % 2147483648
      return seed % n + 1
    end
    local ok_count, err_count = 0, 0
    for _ = 1, 5000 do
      local text = random_patch(rng)
      local a, amsg, acode = reference(text)
      local b, bmsg, bcode = G.parse(text)
      assert.same(a, b, ("%q"):format(text))
      assert.equal(amsg, bmsg, ("%q"):format(text))
      assert.equal(acode, bcode, ("%q"):format(text))
      if a then ok_count = ok_count + 1 else err_count = err_count + 1 end
    end
    -- both outcomes are exercised, not only one
    print(("\n  %d parsed, %d refused, the same on both"):format(ok_count, err_count))
    assert.is_true(ok_count > 1000 and err_count > 1000, ok_count .. " parsed, " .. err_count .. " refused")
  end)
end)
