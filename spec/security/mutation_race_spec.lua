-- P0-13 for the new mutations and P0-15's racing remove (Rust
-- CVE-2022-21658), through the Lua API. The attacker is
-- host/test/race_swap.c exchanging names with renameat2(RENAME_EXCHANGE);
-- every loop is bounded in count and time, and the side-effect check
-- compares everything outside the root before and after.

local F = require "security.fixture"

local CALLS = 3000      -- P0-13: rotated over edit, insert, append, mkdir, move-destination, copy-destination
-- seconds for the whole rotation, and for P0-15's removes; make soak: 600
local TIME_LIMIT = tonumber(os.getenv("BURROW_MUTATION_SECONDS")) or 25
-- P0-15: recursive removes under one attacker, bounded by TIME_LIMIT;
-- BURROW_MUTATION_REMOVES sets them (make soak runs 2,000)
local REMOVES = tonumber(os.getenv("BURROW_MUTATION_REMOVES")) or 200

describe(F.tag("security: mutation races P0-13, P0-15"), function()
  local fx, ws, bin, tmp

  lazy_setup(function()
    fx = F.build()
    tmp = F.mktemp()          -- attacker reports: not under B
    bin = F.helper("race_swap")
    ws = F.open({ { path = fx.ws, mode = "rw" } })
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    F.cleanup(fx)
    if tmp then F.rmtree(tmp) end
    F.cleanup_helpers()
  end)

  local function attack(a, b)
    local report = tmp .. "/report." .. tostring(math.random(1e9))
    local p = F.spawn("exec " .. F.q(bin) .. " exchange " .. F.q(a) .. " " .. F.q(b) .. " 60 " .. F.q(report))
    F.sleep(0.05)
    return function()
      F.stop(p)
      local txt = F.read_host(report) or ""
      os.remove(report)
      return tonumber(txt:match("swaps=(%d+)")) or 0, txt
    end, p
  end

  local function summary(t)
    local parts = {}
    for k, v in pairs(t) do parts[#parts + 1] = k .. "=" .. v end
    table.sort(parts)
    return table.concat(parts, " ")
  end

  it(("P0-13: %d edits, inserts, appends, mkdirs, move and copy destinations in racedir/ while racedir <-> racelink (-> ../outside): nothing outside"):format(CALLS), function()
    F.write_host(fx.ws .. "/racedir/e.txt", "line\n")
    local ops = {
      function(i)
        local up = (i // 6) % 2 == 0 -- toggles from one edit call to the next
        return "edit_file", { path = "racedir/e.txt", old_text = up and "line" or "LINE", new_text = up and "LINE" or "line", replace_all = true }
      end,
      function() return "insert_lines", { path = "racedir/e.txt", line = 1, content = "x" } end,
      function(i) return "append_file", { path = ("racedir/a%d.log"):format(i % 5), content = "RACE\n" } end,
      function(i) return "mkdir", { path = ("racedir/m%d/deeper"):format(i % 7) } end,
      function(i)
        F.write_host(fx.ws .. "/mvsrc.txt", "MOVE " .. i .. "\n")
        return "move", { source = "mvsrc.txt", destination = ("racedir/mv%d.txt"):format(i % 5), overwrite = true }
      end,
      function(i) return "copy", { source = "file.txt", destination = ("racedir/cp%d.txt"):format(i % 5), overwrite = true } end,
    }
    local names = { "edit_file", "insert_lines", "append_file", "mkdir", "move", "copy" }
    local ok_by, codes, unexpected = {}, {}, {}
    local allowed = { OUTSIDE_ROOT = true, EAGAIN = true, ENOENT = true, NOT_FOUND_TEXT = true }
    local calls, swaps, report = 0, 0, nil
    F.guarded(fx, "P0-13 mutations", function()
      for _, op in ipairs(ops) do -- control: every operation works before the race
        local tool, args = op(0)
        F.ok("control " .. tool, ws:call(tool, args))
      end
      local stop = attack(fx.ws .. "/racedir", fx.ws .. "/racelink")
      local ok, err = pcall(function()
        local deadline = F.now() + TIME_LIMIT
        for i = 1, CALLS do
          local tool, args = ops[(i - 1) % #ops + 1](i)
          local res, msg, code = ws:call(tool, args)
          calls = i
          if res then ok_by[tool] = (ok_by[tool] or 0) + 1
          else
            codes[tostring(code)] = (codes[tostring(code)] or 0) + 1
            if not allowed[code] then unexpected[#unexpected + 1] = tool .. ": " .. tostring(msg) end
          end
          if i % 32 == 0 and F.now() > deadline then break end
        end
      end)
      swaps, report = stop()
      if not ok then error(err, 0) end
      for _, name in ipairs(F.ls(fx.B .. "/outside")) do
        assert.is_truthy(({ ["secret.txt"] = 1, ["hard_target.txt"] = 1 })[name], "created outside: B/outside/" .. name)
      end
      assert.are.equal(0, #unexpected, "unexpected error codes: " .. table.concat(unexpected, " | ", 1, math.min(5, #unexpected)))
      assert.is_true(swaps > 100, "the attacker barely ran: " .. tostring(report))
      assert.is_true((codes.OUTSIDE_ROOT or 0) > 0, "never saw racedir as the link: " .. summary(codes))
      assert.is_true(calls >= 300, "too few calls in the time limit: " .. calls)
      -- a tool that resolves several times (mkdir -p) may lose every race:
      -- some must win overall, none is required to
      local won = 0
      for _, n in ipairs(names) do won = won + (ok_by[n] or 0) end
      assert.is_true(won > 0, "no call succeeded during the race: " .. summary(codes))
    end)
    print(("\n    P0-13 mutations [%s]: calls=%d ok: %s codes: %s attacker: %s"):format(F.BACKEND, calls,
      summary(ok_by), summary(codes), (report or ""):gsub("\n", "")))
  end)

  it(("P0-15: up to %d recursive removes of a directory while it is exchanged with a link to outside: nothing outside deleted"):format(REMOVES), function()
    local victim = fx.B .. "/outside/rmvictim"
    F.sh("mkdir -p " .. F.q(victim .. "/sub") .. " && for i in $(seq 1 20); do echo KEEP > " .. F.q(victim) ..
      "/f$i; echo KEEP > " .. F.q(victim) .. "/sub/g$i; done")
    local t = fx.ws .. "/rr/a/b"
    -- d (a small tree) and dl (-> outside) are exchanged all along; each
    -- round removes d, then pauses the attacker to put both back
    local rebuild = "cd " .. F.q(t) .. " && rm -rf d dl && mkdir -p d/x && echo t > d/f && echo t > d/x/g && " ..
      "ln -s ../../../../outside/rmvictim dl"
    F.sh("mkdir -p " .. F.q(t) .. " && " .. rebuild)
    local codes, removed, rounds, swaps, report = {}, 0, 0, 0, nil
    F.guarded(fx, "P0-15 remove race", function()
      local stop, p = attack(t .. "/d", t .. "/dl")
      local ok, err = pcall(function()
        local deadline = F.now() + TIME_LIMIT
        for round = 1, REMOVES do
          rounds = round
          local res, _, code = ws:call("remove", { path = "rr/a/b/d", recursive = true })
          if res then removed = removed + 1 else codes[tostring(code)] = (codes[tostring(code)] or 0) + 1 end
          assert.is_true(F.exists(victim .. "/f1") and F.exists(victim .. "/sub/g20"),
            "round " .. round .. ": the outside directory lost files")
          F.sh(("kill -STOP -%d && until grep -q ') T' /proc/%d/stat; do :; done && %s && kill -CONT -%d")
            :format(p.pid, p.pid, rebuild, p.pid))
          if F.now() > deadline then break end
        end
      end)
      swaps, report = stop()
      if not ok then error(err, 0) end
    end)
    assert.is_true(swaps > rounds, "the attacker barely ran: " .. tostring(report))
    assert.is_true(removed > 0, "no remove succeeded: " .. summary(codes))
    print(("\n    P0-15 remove race [%s]: rounds=%d removed=%d codes: %s attacker: %s"):format(F.BACKEND, rounds,
      removed, summary(codes), (report or ""):gsub("\n", "")))
  end)
end)
