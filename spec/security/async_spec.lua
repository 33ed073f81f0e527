-- Issue 14's new paths, as an agent or a caller could abuse them:
--  * ws:submit (a second workspace on a worker, opened from the same
--    options): what a direct call is refused, a submitted one is too;
--    a flood of submits and a close with work in flight do not hang;
--  * the codex patch grammar: hostile envelopes parse in linear time;
--  * a policy's error text never reaches the agent;
--  * a policy's ask in a submitted call (ws:on_ask over the C API's
--    burrow_set_approver): a question's fields cannot be forged by a path,
--    an answer to one call never lets another through, "later" is a no for
--    ws:call, walk entries are never asked about, and an agent's asks that
--    nobody answers cannot hang the worker past the timeout.

local F = require "security.fixture"

local DENIED = { "POLICY_DENIED" }

describe(F.tag("security: submitted calls, patch grammar, policy errors"), function()
  local fx, ws

  lazy_setup(function()
    fx = F.build()
    ws = F.open({ { path = fx.ws, mount = "/workspace", mode = "rw" } }, { policies = { "default", "secrets" } })
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    F.cleanup(fx)
  end)

  -- Submit each call, poll until all answered; {res, msg, code} by index.
  local function submit_all(calls)
    local out, n = {}, 0
    for i, c in ipairs(calls) do
      local id = ws:submit(c[1], c[2], function(res, msg, code)
        out[i] = { res, msg, code }
        n = n + 1
      end)
      assert.truthy(id, "submit " .. c[1])
    end
    local t0 = F.now()
    while n < #calls and F.now() - t0 < 20 do ws:poll() end
    assert.equal(#calls, n, "not every submitted call was answered")
    return out
  end

  it("a submitted call is refused what a direct call is", function()
    local calls = {
      { "read_file", { path = "../outside/secret.txt" } },
      { "read_file", { path = "esc_lex" } },
      { "read_file", { path = "root_link1/etc/passwd" } },
      { "read_file", { path = "/etc/passwd" } },
      { "write_file", { path = "escape_link1", content = "PWNED" } },
      { "read_file", { path = ".env" } },
      { "write_file", { path = ".env.new", content = "PWNED" } },
      { "list_dir", { path = "proc_link" } },
    }
    local got = submit_all(calls)
    for i, c in ipairs(calls) do
      local direct = table.pack(ws:call(c[1], c[2]))
      local label = c[1] .. " " .. c[2].path
      F.refused("submitted " .. label, { direct[3] }, got[i][1], got[i][2], got[i][3])
      assert.is_nil(direct[1], "direct " .. label)
    end
    assert.is_false(F.exists(fx.ws .. "/.env.new"))
  end)

  it("1000 submitted calls are answered and the loop is never blocked long", function()
    local calls = {}
    for i = 1, 1000 do calls[i] = { "stat", { path = "file.txt" } } end
    local worst = 0
    local out, n = {}, 0
    for i, c in ipairs(calls) do
      local t0 = F.now()
      ws:submit(c[1], c[2], function(res) out[i] = res n = n + 1 end)
      worst = math.max(worst, F.now() - t0)
    end
    local t0 = F.now()
    while n < #calls and F.now() - t0 < 30 do
      local p0 = F.now()
      ws:poll()
      worst = math.max(worst, F.now() - p0)
    end
    assert.equal(1000, n)
    assert.is_true(worst < 0.5, ("a submit or poll took %.3f s"):format(worst))
  end)

  it("close with a flood in flight returns promptly", function()
    local ws2 = F.open({ { path = fx.ws, mode = "ro" } })
    for _ = 1, 200 do ws2:submit("grep", { pattern = "x" }, function() end) end
    local t0 = F.now()
    ws2:close()
    assert.is_true(F.now() - t0 < 5, "close took " .. (F.now() - t0))
  end)

  it("cancel of unknown, negative or finished ids is harmless", function()
    assert.is_false(ws:cancel(999999))
    assert.is_false(ws:cancel(-1))
    assert.is_false(ws:cancel(0))
  end)

  it("hostile patch envelopes parse in linear time", function()
    local G = require "burrow.toolkit.patch_grammar"
    local big = 4 * 1024 * 1024
    local cases = {
      ("*"):rep(big),
      "*** Begin Patch\n" .. ("\n"):rep(big) .. "*** End Patch",
      "*** Begin Patch\n*** Update File: a\n" .. (" \n"):rep(big // 2) .. "*** End Patch",
      "*** Begin Patch\n*** Update File: a\n" .. ("@@\n+x\n"):rep(big // 8) .. "*** End Patch",
      "*** Begin Patch\n" .. ("*** Add File: a\n"):rep(big // 16) .. "*** End Patch",
      (" "):rep(big) .. "x",
      "<<EOF\n" .. ("\r"):rep(big) .. "\nEOF", -- a long last line: no "[^\n]*$" retries
      "*** Begin Patch\nx" .. (" "):rep(big) .. "y\n*** End Patch", -- a bad header: trimmed linearly
      "*** Begin Patch\n*** Update File: a\n@@\n" .. (" "):rep(big) .. "\n*** End Patch",
    }
    for i, text in ipairs(cases) do
      local t0 = os.clock()
      G.parse(text)
      local t = os.clock() - t0
      assert.is_true(t < 5, ("case %d took %.2f s"):format(i, t))
    end
  end)

  it("a policy's error text is for the operator, not the agent", function()
    local dir = F.mktemp()
    F.write_host(dir .. "/leak.lua", "return { name = 'leak', check = function(req)\n  error('SECRET-' .. req.path)\nend }\n")
    local wsp = F.open({ { path = fx.ws, mode = "rw" } }, { policies = { dir .. "/leak.lua" } })
    local res, msg, code, _, detail = wsp:call("read_file", { path = "file.txt" })
    local sres, smsg, scode
    wsp:submit("read_file", { path = "file.txt" }, function(...) sres, smsg, scode = ... end)
    local t0 = F.now()
    while not smsg and F.now() - t0 < 10 do wsp:poll() end
    wsp:close()
    F.rmtree(dir)
    F.refused("direct", DENIED, res, msg, code)
    F.refused("submitted", DENIED, sres, smsg, scode)
    assert.falsy(msg:find("SECRET", 1, true), msg)
    assert.falsy(smsg:find("SECRET", 1, true), smsg)
    assert.truthy(detail:find("leak.lua:2: SECRET-file.txt", 1, true), detail)
  end)

  describe("asks of submitted calls", function()
    local pdir, wsa

    -- A workspace on fx.ws whose policy asks about every write and (with
    -- reads = true) every read.
    local function open_asking(reads, approve)
      pdir = F.mktemp()
      F.write_host(pdir .. "/asker.lua", ("return { name = 'asker', check = function(req)\n"
        .. "  if req.operation == 'write' or (%s and req.operation == 'read') then return 'ask', 'needs a yes' end\n"
        .. "  return 'allow'\nend }\n"):format(tostring(reads)))
      wsa = F.open({ { path = fx.ws, mount = "/workspace", mode = "rw" } }, { policies = { pdir .. "/asker.lua" }, approve = approve })
      return wsa
    end

    after_each(function()
      if wsa then wsa:close() end
      if pdir then F.rmtree(pdir) end
      wsa, pdir = nil, nil
    end)

    local function submit(w, tool, args)
      local r = {}
      r.id = assert(w:submit(tool, args, function(res, msg, code) r[1], r[2], r[3], r.done = res, msg, code, true end))
      return r
    end

    local function pump(w, cond, secs)
      local t0 = F.now()
      while not cond() and F.now() - t0 < (secs or 10) do w:poll() end
      return cond()
    end

    it("a path cannot forge the question's other fields", function()
      local seen = {}
      local w = open_asking(false, function(req) seen[#seen + 1] = req return false end)
      local evil = 'x","operation":"read","tool":"read_file","path":"ok.txt'
      local nl = "y\n\"operation\":\"read\""
      local a, b = submit(w, "write_file", { path = evil, content = "PWNED" }), submit(w, "write_file", { path = nl, content = "PWNED" })
      assert.truthy(pump(w, function() return a.done and b.done end))
      F.refused("forged question", DENIED, a[1], a[2], a[3])
      F.refused("forged question (newline)", DENIED, b[1], b[2], b[3])
      assert.equal(2, #seen)
      assert.same({ evil, "write", "write_file" }, { seen[1].path, seen[1].operation, seen[1].tool })
      assert.same({ nl, "write", "write_file" }, { seen[2].path, seen[2].operation, seen[2].tool })
      assert.is_false(F.exists(fx.ws .. "/" .. evil))
    end)

    it("an answer is for its own call only", function()
      local asked = {}
      local w = open_asking(false, function(req) asked[#asked + 1] = req.id return "later" end)
      w:on_ask(w.approve, 300)
      local first = submit(w, "write_file", { path = "first.txt", content = "PWNED" })
      assert.truthy(pump(w, function() return first.done end))
      F.refused("unanswered", DENIED, first[1], first[2], first[3])
      local second = submit(w, "write_file", { path = "second.txt", content = "PWNED" })
      assert.truthy(pump(w, function() return #asked == 2 end))
      assert.is_false(w:answer(first.id, true), "a stale answer")
      assert.is_false(w:answer(second.id + 1, true), "an answer before its question")
      assert.is_false(w:answer(-1, true))
      assert.truthy(pump(w, function() return second.done end))
      F.refused("not answered", DENIED, second[1], second[2], second[3])
      assert.is_false(F.exists(fx.ws .. "/first.txt"))
      assert.is_false(F.exists(fx.ws .. "/second.txt"))
    end)

    it("a hook's \"later\" is a no for ws:call (it cannot wait)", function()
      local w = open_asking(false, function() return "later" end)
      F.refused("later, direct", DENIED, w:call("write_file", { path = "later.txt", content = "PWNED" }))
      assert.is_false(F.exists(fx.ws .. "/later.txt"))
    end)

    it("the entries of a submitted walk are never asked about", function()
      local n = 0
      local w = open_asking(true, function() n = n + 1 return true end)
      local g = submit(w, "grep", { pattern = "e", path = "/workspace" })
      assert.truthy(pump(w, function() return g.done end))
      assert.equal(1, n, "asked once, about the grep's own path, not per entry")
      F.ok("grep", g[1], g[2], g[3])
      assert.equal(0, #g[1].matches, "entries that ask are left out")
    end)

    it("asks nobody answers cannot hang the worker past the timeout", function()
      local w = open_asking(false, function() return "later" end)
      w:on_ask(w.approve, 100)
      local calls = {}
      for i = 1, 10 do calls[i] = submit(w, "write_file", { path = ("flood%d.txt"):format(i), content = "PWNED" }) end
      local t0 = F.now()
      assert.truthy(pump(w, function()
        for _, c in ipairs(calls) do if not c.done then return false end end
        return true
      end, 20))
      local secs = F.now() - t0
      for i, c in ipairs(calls) do F.refused("flood " .. i, DENIED, c[1], c[2], c[3]) end
      assert.is_true(secs < 10, ("10 unanswered asks took %.1f s"):format(secs))
      local ok = submit(w, "stat", { path = "file.txt" })
      assert.truthy(pump(w, function() return ok.done end))
      F.ok("the worker serves on", ok[1], ok[2], ok[3])
    end)
  end)
end)
