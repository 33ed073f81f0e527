-- P0-11 swap race, P0-12 dot-dot race (and Go's TestRootRaceRenameDir),
-- P0-13 write-side race, through the Lua API. The attacker is
-- host/test/race_swap.c, a separate process that exchanges names with
-- renameat2(RENAME_EXCHANGE) (or renames back and forth) until stopped or
-- until its own deadline. Every loop here is bounded in count and time.

local F = require "security.fixture"

local READS = 20000          -- P0-11 victim reads (the doc measured 200,000)
local DOTDOT_READS = 20000   -- P0-12
local GO_READS = 5000        -- Go's TestRootRaceRenameDir shape
local WRITES = 3000          -- P0-13
local POLICY_READS = 20000   -- issue 10: a name swapped between an allowed and a denied object
local TIME_LIMIT = 20        -- seconds, per victim loop

describe(F.tag("security: races P0-11..P0-13"), function()
  local fx, ws, wss, bin, tmp
  local SECRET = "SECRET-ENV-d41d8cd9"

  lazy_setup(function()
    fx = F.build()
    tmp = F.mktemp()          -- attacker reports: not under B (the side-effect check)
    bin = F.helper("race_swap")
    ws = F.open({{path = fx.ws, mode = "rw"}})
    -- issue 10: the policy judges one object and the core uses it
    local w = fx.ws
    F.write_host(w .. "/.env", "TOKEN=" .. SECRET .. "\n")
    F.write_host(w .. "/pick", "ALLOWED pick\n")
    F.sh("ln -s .env " .. F.q(w .. "/pick_alt"))
    F.sh("mkdir -p " .. F.q(w .. "/.ssh") .. " " .. F.q(w .. "/pdir"))
    F.write_host(w .. "/.ssh/key", "KEY " .. SECRET .. "\n")
    F.write_host(w .. "/pdir/key", "ALLOWED key\n")
    F.sh("ln -s .ssh " .. F.q(w .. "/pdir_alt"))
    wss = F.open({{path = fx.ws, mode = "rw"}}, {policies = {"secrets"}})
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    if wss then wss:close() end
    F.cleanup(fx)
    if tmp then F.rmtree(tmp) end
    F.cleanup_helpers()
  end)

  -- Start the attacker; returns a stop() that ends it and returns its swap count.
  local function attack(mode, a, b)
    local report = tmp .. "/report." .. mode .. tostring(math.random(1e9))
    local p = F.spawn("exec " .. F.q(bin) .. " " .. mode .. " " .. F.q(a) .. " " .. F.q(b) .. " 60 " .. F.q(report))
    F.sleep(0.05)
    return function()
      F.stop(p)
      local txt = F.read_host(report) or ""
      os.remove(report)
      return tonumber(txt:match("swaps=(%d+)")) or 0, txt
    end
  end

  local function summary(t)
    local parts = {}
    for k, v in pairs(t) do parts[#parts + 1] = k .. "=" .. v end
    table.sort(parts)
    return table.concat(parts, " ")
  end

  -- read_file content -> the count it goes under: the key of the first marker
  -- it contains ({{"text", "key"}, ...}), else "other".
  local function by_marker(res, markers)
    local c = res.content or ""
    for _, m in ipairs(markers) do
      if c:find(m[1], 1, true) then return m[2] end
    end
    return "other"
  end

  -- One race; every case below is this loop. Inside F.guarded (label `name`,
  -- snapshot options `guard`): start the attacker, attack = {mode, a, b};
  -- make up to `calls` victim calls, call(i) -> res, msg, code, until
  -- TIME_LIMIT (looked at every `every` calls, default 256); count each result
  -- under classify(res, i), one of `counts`, and each error under its code.
  -- Then stop the attacker and assert, in this order: check() (when given);
  -- the `escape` count is 0, and "other" when counted; every error code is in
  -- `allowed`; the attacker made more than `min_swaps` swaps; the `want`
  -- count is above 0; the code `interleaved` (the victim saw the attacker's
  -- side) came up; at least `min_calls` calls were made. Prints a summary.
  local function race(r)
    local stats, codes, unexpected = {calls = 0}, {}, {}
    for _, k in ipairs(r.counts) do stats[k] = 0 end
    local swaps, report
    F.guarded(fx, r.name, function()
      local stop = attack(r.attack[1], r.attack[2], r.attack[3])
      local ok, err = pcall(function()
        local deadline = F.now() + TIME_LIMIT
        for i = 1, r.calls do
          local res, msg, code = r.call(i)
          stats.calls = i
          if res then
            local k = r.classify(res, i)
            stats[k] = assert(stats[k], "classify: not one of counts: " .. tostring(k)) + 1
          else
            codes[tostring(code)] = (codes[tostring(code)] or 0) + 1
            if not r.allowed[code] then unexpected[#unexpected + 1] = tostring(msg) end
          end
          if i % (r.every or 256) == 0 and F.now() > deadline then break end
        end
      end)
      swaps, report = stop()
      if not ok then error(err, 0) end
      if r.check then r.check() end
      if r.escape then
        assert.are.equal(0, stats[r.escape], "ESCAPES: " .. summary(stats) .. " codes: " .. summary(codes))
      end
      if stats.other then
        assert.are.equal(0, stats.other, "unexpected content: " .. summary(stats))
      end
      assert.are.equal(0, #unexpected, "unexpected error codes: " .. table.concat(unexpected, " | ", 1, math.min(5, #unexpected)))
      assert.is_true(swaps > r.min_swaps, "the attacker barely ran: " .. tostring(report))
      assert.is_true(stats[r.want] > 0, "no " .. r.want .. " result at all: " .. summary(stats) .. " codes: " .. summary(codes))
      if r.interleaved then
        assert.is_true((codes[r.interleaved] or 0) > 0,
          "never saw " .. r.interleaved .. ": the race did not interleave: " .. summary(codes))
      end
      if r.min_calls then
        assert.is_true(stats.calls >= r.min_calls, "too few calls in the time limit: " .. stats.calls)
      end
    end, r.guard)
    print(("\n    %s [%s]: %s codes: %s attacker: %s"):format(r.name, F.BACKEND, summary(stats), summary(codes),
      (report or ""):gsub("\n", "")))
  end

  it(("P0-11 swap race: %d reads of d/etc/passwd while d <-> d_link (-> /) are exchanged: 0 escapes"):format(READS), function()
    local markers = {{fx.host_passwd_line1, "escape"}, {"root:x:0:0", "escape"}, {"INROOT-PASSWD", "inroot"}}
    race {
      name = "P0-11",
      attack = {"exchange", fx.ws .. "/d", fx.ws .. "/d_link"},
      calls = READS,
      -- every 10th call a stat, every 10th a list_dir, the rest read_file
      call = function(i)
        if i % 10 == 0 then return ws:call("stat", {path = "d/etc/passwd"})
        elseif i % 10 == 5 then return ws:call("list_dir", {path = "d/etc"})
        else return ws:call("read_file", {path = "d/etc/passwd"}) end
      end,
      classify = function(res, i)
        if i % 10 == 0 then return res.size == 14 and "inroot" or "escape"
        elseif i % 10 == 5 then
          return (#res.entries == 1 and res.entries[1].name == "passwd") and "inroot" or "escape"
        else return by_marker(res, markers) end
      end,
      counts = {"inroot", "escape", "other"},
      allowed = {OUTSIDE_ROOT = true, EAGAIN = true},
      escape = "escape", want = "inroot",
      interleaved = "OUTSIDE_ROOT",   -- d seen as the link
      min_swaps = 1000, min_calls = 2000,
    }
  end)

  it(("P0-12 dot-dot race: %d reads of m/a/b/c/../../../x while m/a <-> B/out/mm/a: 0 escapes"):format(DOTDOT_READS), function()
    race {
      name = "P0-12", guard = {exclude = {"ws", "out"}},
      attack = {"exchange", fx.ws .. "/m/a", fx.B .. "/out/mm/a"},
      calls = DOTDOT_READS,
      call = function() return ws:call("read_file", {path = "m/a/b/c/../../../x"}) end,
      classify = function(res) return by_marker(res, {{"OUTSIDE-X", "escape"}, {"INSIDE-X", "inside"}}) end,
      counts = {"inside", "escape", "other"},
      allowed = {OUTSIDE_ROOT = true, EAGAIN = true, ENOENT = true},
      escape = "escape", want = "inside",
      min_swaps = 1000, min_calls = 2000,
    }
  end)

  it(("P0-12 Go TestRootRaceRenameDir: %d reads of base/a/a/a/a/../../../../a/f while base/a/a is renamed: never the secret"):format(GO_READS), function()
    local path = "gorace/base/a/a/a/a/../../../../a/f"
    F.reads("before the race", "public", ws:call("read_file", {path = path}))
    race {
      name = "Go race",
      attack = {"rename", fx.ws .. "/gorace/base/a/a", fx.ws .. "/gorace/base/b"},
      calls = GO_READS,
      call = function() return ws:call("read_file", {path = path}) end,
      classify = function(res) return by_marker(res, {{"secret", "secret"}, {"public", "public"}}) end,
      counts = {"public", "secret", "other"},
      allowed = {ENOENT = true, EAGAIN = true},
      escape = "secret", want = "public",
      min_swaps = 100,
    }
  end)

  it(("P0-13 write race: %d write_file into racedir/ while racedir <-> racelink (-> ../outside): nothing outside"):format(WRITES), function()
    race {
      name = "P0-13",
      attack = {"exchange", fx.ws .. "/racedir", fx.ws .. "/racelink"},
      calls = WRITES, every = 16,
      call = function(i)
        local p
        if i % 3 == 0 then p = ("racedir/n%d/w.txt"):format(i % 7)       -- create_dirs under the race
        else p = ("racedir/w%d.txt"):format(i % 50) end
        return ws:call("write_file", {path = p, content = "RACE " .. i .. "\n"})
      end,
      classify = function() return "ok" end,
      counts = {"ok"},
      allowed = {OUTSIDE_ROOT = true, EAGAIN = true, ENOENT = true},
      check = function()
        for _, name in ipairs(F.ls(fx.B .. "/outside")) do
          assert.is_truthy(({["secret.txt"] = 1, ["hard_target.txt"] = 1})[name], "created outside: B/outside/" .. name)
        end
      end,
      want = "ok",
      interleaved = "OUTSIDE_ROOT",   -- racedir seen as the link
      min_swaps = 100, min_calls = 300,
    }
  end)

  it(("issue 10 policy swap race: %d reads of a name exchanged between an allowed file and a link to .env (secrets): 0 denied bytes"):format(POLICY_READS), function()
    race {
      name = "policy-swap",
      attack = {"exchange", fx.ws .. "/pick", fx.ws .. "/pick_alt"},
      calls = POLICY_READS,
      -- every 10th call a stat, every 10th a grep of the name, the rest read_file
      call = function(i)
        if i % 10 == 0 then return wss:call("stat", {path = "pick"})
        elseif i % 10 == 5 then return wss:call("grep", {pattern = "TOKEN|ALLOWED", path = "pick"})
        else return wss:call("read_file", {path = "pick"}) end
      end,
      classify = function(res)
        local text = require("burrow.core").json.encode(res)
        if text:find(SECRET, 1, true) then return "escape" end -- (grep's result echoes its pattern)
        return "allowed"
      end,
      counts = {"allowed", "escape"},
      -- a grep that starts on a file the swap turned into a link: ENOTDIR
      allowed = {POLICY_DENIED = true, EAGAIN = true, ENOTDIR = true},
      escape = "escape", want = "allowed",
      interleaved = "POLICY_DENIED",   -- pick seen as the link to .env
      min_swaps = 1000, min_calls = 2000,
    }
  end)

  it(("issue 10 policy swap race: %d reads and greps in a folder exchanged with a link to .ssh (secrets): 0 denied bytes"):format(POLICY_READS // 4), function()
    race {
      name = "policy-dir-swap",
      attack = {"exchange", fx.ws .. "/pdir", fx.ws .. "/pdir_alt"},
      calls = POLICY_READS // 4,
      call = function(i)
        if i % 4 == 0 then return wss:call("grep", {pattern = "KEY|ALLOWED", path = "pdir"})
        elseif i % 4 == 1 then return wss:call("list_dir", {path = "pdir"})
        else return wss:call("read_file", {path = "pdir/key"}) end
      end,
      classify = function(res)
        local text = require("burrow.core").json.encode(res)
        if text:find(SECRET, 1, true) then return "escape" end
        return "allowed"
      end,
      counts = {"allowed", "escape"},
      allowed = {POLICY_DENIED = true, EAGAIN = true},
      escape = "escape", want = "allowed",
      interleaved = "POLICY_DENIED",
      min_swaps = 1000, min_calls = 1000,
    }
  end)
end)
