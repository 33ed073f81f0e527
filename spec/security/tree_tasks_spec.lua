-- Issue 42: copy, move and remove of a tree as MCP tasks (the
-- io.modelcontextprotocol/tasks extension at 2026-07-28), on the resolver
-- under test. An in-process server whose channel can "detach" (it says it
-- could not: the call runs on inside its request, answered at its end with
-- the finished task), the cap task_after_ms 0: a tree call becomes a task
-- at its first look (the core's staging calls back every 1024 entries).
-- At that moment (the channel's detach) a second server on the same
-- workspace — another worker or instance sharing the store — sends
-- tasks/cancel. The principal's own cancel stops the staging at its next
-- look and rolls it back (nothing lands, the source is put back, nothing
-- staged is left); another principal's is refused and changes nothing;
-- the count bound and the expiry hold for tree tasks as for any task.

local F = require "security.fixture"
local mcp = require "burrow.mcp"
local session = require "burrow.mcp.session"
local tasks = require "burrow.mcp.tasks"

local EXT = "io.modelcontextprotocol/tasks"
local function meta(ext)
  return { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
    ["io.modelcontextprotocol/clientCapabilities"] = { extensions = ext and { [EXT] = {} } or nil } }
end
local DIRS, PER = 40, 100 -- 4,000 files and 40 directories: four of the staging's looks

describe(F.tag("security: copy, move and remove as MCP tasks (issue 42)"), function()
  local w, ws, saved
  local n = 0

  -- A client of principal (tenant, token) on ws: request(method, params[,
  -- without]); progress: the entries its calls' progress notifications
  -- said were staged. at_task(task_id), if given, runs once, when its call
  -- becomes a task.
  local function client(tenant, token, at_task, progress)
    local out = {}
    local ch = mcp.channel(function(m)
      if m.method == "notifications/progress" then
        if progress then progress[#progress + 1] = m.params.progress end
      else
        out[#out + 1] = m
      end
    end)
    local told = false
    ch.detach = function(_, task_id)
      if at_task and not told then told = true; at_task(task_id) end
      return false
    end
    local s = mcp.new(ws, { channel = ch, session = session.new { tenant = tenant, token = token } })
    return function(method, params, without)
      n = n + 1
      local id = n
      params._meta = meta(not without)
      params._meta.progressToken = "p" .. id
      s:handle { jsonrpc = "2.0", id = id, method = method, params = params }
      for _, msg in ipairs(out) do if msg.id == id then return msg end end
    end
  end

  local function count(dir, kind)
    if not F.exists(dir) then return -1 end
    return tonumber((F.sh("find " .. F.q(dir) .. " -mindepth 1 -type " .. kind .. " | wc -l"):gsub("%s+", "")))
  end
  local function stages()
    return tonumber((F.sh("ls -A " .. F.q(w) .. " | grep -c '^.burrow-stage' || true"):gsub("%s+$", "")))
  end

  -- the tree, made once (a shell loop of 4,000 files); each case copies it
  local tpl
  lazy_setup(function()
    tpl = F.mktemp()
    F.sh(("cd %s && for d in $(seq 1 %d); do mkdir -p src/d$d; for i in $(seq 1 %d); do echo $d/$i > src/d$d/f$i; done; done")
      :format(F.q(tpl), DIRS, PER))
  end)

  lazy_teardown(function()
    if tpl then F.rmtree(tpl) end
  end)

  before_each(function()
    saved = { MAX = tasks.MAX, TTL = tasks.TTL, CHECK = tasks.CHECK }
    tasks.CHECK = 0 -- each look reads the record (200 ms apart otherwise)
    w = F.mktemp()
    F.sh(("cp -a %s/src %s/src"):format(F.q(tpl), F.q(w)))
    local caps = { task_after_ms = 0 }
    for k, v in pairs(F.CAPS) do caps[k] = v end
    ws = F.open({ { path = w, mode = "rw" } }, { caps = caps })
  end)

  after_each(function()
    tasks.MAX, tasks.TTL, tasks.CHECK = saved.MAX, saved.TTL, saved.CHECK
    ws:close()
    F.rmtree(w)
  end)

  local CALLS = {
    copy = { source = "src", destination = "dst", recursive = true },
    move = { source = "src", destination = "moved" },
    remove = { path = "src", recursive = true },
  }

  for _, tool in ipairs { "copy", "move", "remove" } do
    it(tool .. " of a tree, cancelled by its principal through another server, stops and is rolled back", function()
      local other, staged = client("default", "aaaa"), {}
      local mine = client("default", "aaaa", function(id)
        assert.equal("complete", other("tasks/cancel", { taskId = id }).result.resultType)
      end, staged)
      local t = mine("tools/call", { name = tool, arguments = CALLS[tool] }).result
      assert.equal("task", t.resultType, F.dump(t))
      local g = other("tasks/get", { taskId = t.taskId }).result
      assert.equal("cancelled", g.status)
      assert.matches("stopped at its next check", g.statusMessage)
      assert.is_nil(g.result)
      -- the C staging stopped at the look that saw the cancel (its first,
      -- at 1024 entries): it reported no entry past it
      assert.same({ 1024 }, staged)
      assert.equal(DIRS * PER, count(w .. "/src", "f"), "the source is whole")
      assert.equal(DIRS, count(w .. "/src", "d"))
      assert.is_false(F.exists(w .. "/dst"))
      assert.is_false(F.exists(w .. "/moved"))
      assert.equal(0, stages(), "nothing staged is left")
    end)
  end

  it("refuses another principal's get and cancel of a tree task: the copy completes untouched", function()
    local codes = {}
    local thieves = { client("default", "bbbb"), client("other", "aaaa") }
    local mine = client("default", "aaaa", function(id)
      for _, thief in ipairs(thieves) do
        codes[#codes + 1] = thief("tasks/cancel", { taskId = id }).error.code
        codes[#codes + 1] = thief("tasks/get", { taskId = id }).error.code
      end
    end)
    local t = mine("tools/call", { name = "copy", arguments = CALLS.copy }).result
    assert.equal("task", t.resultType)
    assert.same({ -32602, -32602, -32602, -32602 }, codes)
    local g = mine("tasks/get", { taskId = t.taskId }).result
    assert.equal("completed", g.status, F.dump(g))
    assert.equal(DIRS * PER, g.result.structuredContent.files)
    assert.equal(DIRS * PER, count(w .. "/dst", "f"))
    assert.equal(0, stages())
  end)

  it("bounds a principal's tree tasks by tasks.MAX: past them a tree copy is a plain call", function()
    tasks.MAX = 1
    local mine, other = client("default", "aaaa"), client("default", "bbbb")
    local t = mine("tools/call", { name = "copy", arguments = { source = "src", destination = "c1", recursive = true } }).result
    assert.equal("task", t.resultType)
    local r = mine("tools/call", { name = "copy", arguments = { source = "src", destination = "c2", recursive = true } }).result
    assert.equal("complete", r.resultType, "its one slot is taken: a plain call")
    assert.equal(DIRS * PER, r.structuredContent.files)
    assert.equal("task", other("tools/call", { name = "copy",
      arguments = { source = "src", destination = "c3", recursive = true } }).result.resultType, "another principal's own share")
  end)

  -- its record is its lease: a call whose record expired (tasks.TTL after
  -- its creation) finds no task at its next look and stops as cancelled
  it("cannot outlive its ttl: a tree copy whose record expired mid-way stops, rolled back, its slot free again", function()
    tasks.MAX, tasks.TTL = 1, 1
    local other = client("default", "aaaa")
    local expired = false
    local mine = client("default", "aaaa", function(id)
      for _ = 1, 100 do -- the copy waits here until its record is gone
        if other("tasks/get", { taskId = id }).error then expired = true; break end
        F.sleep(0.05)
      end
    end)
    local t = mine("tools/call", { name = "copy", arguments = CALLS.copy }).result
    assert.equal("task", t.resultType)
    assert.equal(1000, t.ttlMs)
    assert.is_true(expired, "expired within 5 s")
    assert.equal(-32602, mine("tasks/get", { taskId = t.taskId }).error.code)
    assert.is_false(F.exists(w .. "/dst"), "nothing landed")
    assert.equal(0, stages(), "nothing staged is left")
    local again = mine("tools/call", { name = "copy", arguments = { source = "src/d1", destination = "d1", recursive = true } }).result
    assert.equal("task", again.resultType, "its slot is free again: " .. F.dump(again))
  end)

  it("without the extension a tree copy is a plain call", function()
    local r = client("default", "aaaa")("tools/call", { name = "copy", arguments = CALLS.copy }, true).result
    assert.equal("complete", r.resultType)
    assert.is_nil(r.taskId)
    assert.equal(DIRS * PER, count(w .. "/dst", "f"))
  end)
end)
