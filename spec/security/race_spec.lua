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
local TIME_LIMIT = 20        -- seconds, per victim loop

describe(F.tag("security: races P0-11..P0-13"), function()
  local fx, ws, bin, tmp

  lazy_setup(function()
    fx = F.build()
    tmp = F.mktemp()          -- attacker reports: not under B (the side-effect check)
    bin = F.helper("race_swap")
    ws = F.open({{path = fx.ws, mode = "rw"}})
  end)

  lazy_teardown(function()
    if ws then ws:close() end
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

  it(("P0-11 swap race: %d reads of d/etc/passwd while d <-> d_link (-> /) are exchanged: 0 escapes"):format(READS), function()
    local passwd_line = fx.host_passwd_line1
    local stats = {inroot = 0, escape = 0, other = 0, calls = 0}
    local codes, unexpected = {}, {}
    local allowed = {OUTSIDE_ROOT = true, EAGAIN = true}
    local swaps, report
    F.guarded(fx, "P0-11", function()
      local stop = attack("exchange", fx.ws .. "/d", fx.ws .. "/d_link")
      local ok, err = pcall(function()
        local deadline = F.now() + TIME_LIMIT
        for i = 1, READS do
          local kind = i % 10
          local res, msg, code
          if kind == 0 then
            res, msg, code = ws:call("stat", {path = "d/etc/passwd"})
            if res then
              if res.size == 14 then stats.inroot = stats.inroot + 1
              else stats.escape = stats.escape + 1 end
            end
          elseif kind == 5 then
            res, msg, code = ws:call("list_dir", {path = "d/etc"})
            if res then
              if #res.entries == 1 and res.entries[1].name == "passwd" then stats.inroot = stats.inroot + 1
              else stats.escape = stats.escape + 1 end
            end
          else
            res, msg, code = ws:call("read_file", {path = "d/etc/passwd"})
            if res then
              local c = res.content or ""
              if c:find(passwd_line, 1, true) or c:find("root:x:0:0", 1, true) then
                stats.escape = stats.escape + 1
              elseif c:find("INROOT-PASSWD", 1, true) then
                stats.inroot = stats.inroot + 1
              else
                stats.other = stats.other + 1
              end
            end
          end
          stats.calls = i
          if not res then
            codes[tostring(code)] = (codes[tostring(code)] or 0) + 1
            if not allowed[code] then unexpected[#unexpected + 1] = tostring(msg) end
          end
          if i % 256 == 0 and F.now() > deadline then break end
        end
      end)
      swaps, report = stop()
      if not ok then error(err, 0) end
      assert.are.equal(0, stats.escape, "ESCAPES: " .. summary(stats) .. " codes: " .. summary(codes))
      assert.are.equal(0, stats.other, "results with neither content: " .. summary(stats))
      assert.are.equal(0, #unexpected, "unexpected error codes: " .. table.concat(unexpected, " | ", 1, math.min(5, #unexpected)))
      assert.is_true(swaps > 1000, "the attacker barely ran: " .. tostring(report))
      assert.is_true(stats.inroot > 0, "no in-root result at all: " .. summary(stats) .. " " .. summary(codes))
      assert.is_true((codes.OUTSIDE_ROOT or 0) > 0,
        "never saw d as the link: the race did not interleave: " .. summary(codes))
      assert.is_true(stats.calls >= 2000, "too few calls in the time limit: " .. stats.calls)
    end)
    print(("\n    P0-11 [%s]: %s codes: %s attacker: %s"):format(F.BACKEND, summary(stats), summary(codes),
      (report or ""):gsub("\n", "")))
  end)

  it(("P0-12 dot-dot race: %d reads of m/a/b/c/../../../x while m/a <-> B/out/mm/a: 0 escapes"):format(DOTDOT_READS), function()
    local stats = {inside = 0, escape = 0, other = 0, calls = 0}
    local codes, unexpected = {}, {}
    local allowed = {OUTSIDE_ROOT = true, EAGAIN = true, ENOENT = true}
    local swaps, report
    F.guarded(fx, "P0-12", function()
      local stop = attack("exchange", fx.ws .. "/m/a", fx.B .. "/out/mm/a")
      local ok, err = pcall(function()
        local deadline = F.now() + TIME_LIMIT
        for i = 1, DOTDOT_READS do
          local res, msg, code = ws:call("read_file", {path = "m/a/b/c/../../../x"})
          stats.calls = i
          if res then
            local c = res.content or ""
            if c:find("OUTSIDE-X", 1, true) then stats.escape = stats.escape + 1
            elseif c:find("INSIDE-X", 1, true) then stats.inside = stats.inside + 1
            else stats.other = stats.other + 1 end
          else
            codes[tostring(code)] = (codes[tostring(code)] or 0) + 1
            if not allowed[code] then unexpected[#unexpected + 1] = tostring(msg) end
          end
          if i % 256 == 0 and F.now() > deadline then break end
        end
      end)
      swaps, report = stop()
      if not ok then error(err, 0) end
      assert.are.equal(0, stats.escape, "ESCAPES: " .. summary(stats) .. " codes: " .. summary(codes))
      assert.are.equal(0, stats.other, "unexpected content: " .. summary(stats))
      assert.are.equal(0, #unexpected, "unexpected error codes: " .. table.concat(unexpected, " | ", 1, math.min(5, #unexpected)))
      assert.is_true(swaps > 1000, "the attacker barely ran: " .. tostring(report))
      assert.is_true(stats.inside > 0, "no successful read at all: " .. summary(codes))
      assert.is_true(stats.calls >= 2000, "too few calls in the time limit: " .. stats.calls)
    end, {exclude = {"ws", "out"}})
    print(("\n    P0-12 [%s]: %s codes: %s attacker: %s"):format(F.BACKEND, summary(stats), summary(codes),
      (report or ""):gsub("\n", "")))
  end)

  it(("P0-12 Go TestRootRaceRenameDir: %d reads of base/a/a/a/a/../../../../a/f while base/a/a is renamed: never the secret"):format(GO_READS), function()
    local stats = {public = 0, secret = 0, other = 0, calls = 0}
    local codes, unexpected = {}, {}
    local allowed = {ENOENT = true, EAGAIN = true}
    local swaps, report
    local path = "gorace/base/a/a/a/a/../../../../a/f"
    F.reads("before the race", "public", ws:call("read_file", {path = path}))
    F.guarded(fx, "Go race", function()
      local stop = attack("rename", fx.ws .. "/gorace/base/a/a", fx.ws .. "/gorace/base/b")
      local ok, err = pcall(function()
        local deadline = F.now() + TIME_LIMIT
        for i = 1, GO_READS do
          local res, msg, code = ws:call("read_file", {path = path})
          stats.calls = i
          if res then
            local c = res.content or ""
            if c:find("secret", 1, true) then stats.secret = stats.secret + 1
            elseif c:find("public", 1, true) then stats.public = stats.public + 1
            else stats.other = stats.other + 1 end
          else
            codes[tostring(code)] = (codes[tostring(code)] or 0) + 1
            if not allowed[code] then unexpected[#unexpected + 1] = tostring(msg) end
          end
          if i % 256 == 0 and F.now() > deadline then break end
        end
      end)
      swaps, report = stop()
      if not ok then error(err, 0) end
      assert.are.equal(0, stats.secret, "read the secret: " .. summary(stats) .. " codes: " .. summary(codes))
      assert.are.equal(0, stats.other, "unexpected content: " .. summary(stats))
      assert.are.equal(0, #unexpected, "unexpected error codes: " .. table.concat(unexpected, " | ", 1, math.min(5, #unexpected)))
      assert.is_true(swaps > 100, "the attacker barely ran: " .. tostring(report))
      assert.is_true(stats.public > 0, "never read the public file: " .. summary(codes))
    end)
    print(("\n    Go race [%s]: %s codes: %s attacker: %s"):format(F.BACKEND, summary(stats), summary(codes),
      (report or ""):gsub("\n", "")))
  end)

  it(("P0-13 write race: %d write_file into racedir/ while racedir <-> racelink (-> ../outside): nothing outside"):format(WRITES), function()
    local stats = {ok = 0, calls = 0}
    local codes, unexpected = {}, {}
    local allowed = {OUTSIDE_ROOT = true, EAGAIN = true, ENOENT = true}
    local swaps, report
    F.guarded(fx, "P0-13", function()
      local stop = attack("exchange", fx.ws .. "/racedir", fx.ws .. "/racelink")
      local ok, err = pcall(function()
        local deadline = F.now() + TIME_LIMIT
        for i = 1, WRITES do
          local p
          if i % 3 == 0 then p = ("racedir/n%d/w.txt"):format(i % 7)       -- create_dirs under the race
          else p = ("racedir/w%d.txt"):format(i % 50) end
          local res, msg, code = ws:call("write_file", {path = p, content = "RACE " .. i .. "\n"})
          stats.calls = i
          if res then
            stats.ok = stats.ok + 1
          else
            codes[tostring(code)] = (codes[tostring(code)] or 0) + 1
            if not allowed[code] then unexpected[#unexpected + 1] = tostring(msg) end
          end
          if i % 16 == 0 and F.now() > deadline then break end
        end
      end)
      swaps, report = stop()
      if not ok then error(err, 0) end
      for _, name in ipairs(F.ls(fx.B .. "/outside")) do
        assert.is_truthy(({["secret.txt"] = 1, ["hard_target.txt"] = 1})[name], "created outside: B/outside/" .. name)
      end
      assert.are.equal(0, #unexpected, "unexpected error codes: " .. table.concat(unexpected, " | ", 1, math.min(5, #unexpected)))
      assert.is_true(swaps > 100, "the attacker barely ran: " .. tostring(report))
      assert.is_true(stats.ok > 0, "no write succeeded: " .. summary(codes))
      assert.is_true((codes.OUTSIDE_ROOT or 0) > 0, "never saw racedir as the link: " .. summary(codes))
      assert.is_true(stats.calls >= 300, "too few writes in the time limit: " .. stats.calls)
    end)
    print(("\n    P0-13 [%s]: %s codes: %s attacker: %s"):format(F.BACKEND, summary(stats), summary(codes),
      (report or ""):gsub("\n", "")))
  end)
end)
