-- check_paths: the declared part of a dynamic rule (issue 28). A policy
-- whose check() is about some paths only says which (globs of in-root
-- paths); check() is then asked about those objects only, and grep and
-- glob ask it inside their one walk (the walker holds those entries back
-- until it is asked) instead of asking about every entry first.

local H = require "helpers"

-- A check() that raises for any object outside private/: asked about
-- anything else, it would deny the call (a policy error denies).
local STRICT = [[return { name = "private", %s
  check = function(req)
    if not (req.resolved == "private" or req.resolved:match("^private/")) then
      error("asked about " .. tostring(req.resolved))
    end
    return "deny", "private"
  end }]]

describe(H.tag("policies: check_paths"), function()
  local root, pdir

  before_each(function()
    root, pdir = H.tmpdir(), H.tmpdir()
    H.write(root, "pub.txt", "TOKEN=public\n")
    H.write(root, "src/app.txt", "TOKEN=app\n")
    H.write(root, "private/key.txt", "TOKEN=private\n")
  end)
  after_each(H.cleanup)

  local function open(decl)
    H.write(pdir, "p.lua", STRICT:format(decl))
    return H.open { roots = { { path = root } }, policies = { pdir .. "/p.lua" } }
  end

  it("check() is asked about the declared paths only, by a call and by a walk", function()
    local ws = open([[check_paths = { "private", "private/**" },]])
    assert(ws:call("read_file", { path = "pub.txt" }))
    local _, _, code = ws:call("read_file", { path = "private/key.txt" })
    assert.equal("POLICY_DENIED", code)
    local l = assert(ws:call("list_dir", { path = ".", recursive = true }))
    for _, e in ipairs(l.entries) do assert.is_nil(e.path:find("private", 1, true), e.path) end
    assert.equal(1, l.skipped_policy) -- private/ (never entered)
    local g = assert(ws:call("grep", { pattern = "TOKEN", path = "." }))
    local paths = {}
    for _, m in ipairs(g.matches) do paths[#paths + 1] = m.path end
    table.sort(paths)
    assert.same({ "pub.txt", "src/app.txt" }, paths)
    assert.equal(1, g.skipped_policy)
    local gl = assert(ws:call("glob", { pattern = "**/*.txt" }))
    assert.equal(2, #gl.entries)
    local l = assert(ws:call("list_dir", { path = ".", recursive = true }))
    for _, e in ipairs(l.entries) do assert.is_nil(e.path:find("private", 1, true), e.path) end
    -- a copy of a tree holding the declared paths asks about them
    _, _, code = ws:call("copy", { source = ".", destination = "src/all", recursive = true })
    assert.truthy(code)
    ws:close()
  end)

  it("check_casefold: the declared paths match in any ASCII case", function()
    H.write(pdir, "p.lua", [[return { name = "cf", check_paths = { "private/**" }, check_casefold = true,
      check = function() return "deny", "private" end }]])
    local ws = H.open { roots = { { path = root } }, policies = { pdir .. "/p.lua" } }
    H.write(root, "PRIVATE/k.txt", "x\n")
    local _, _, code = ws:call("read_file", { path = "PRIVATE/k.txt" })
    assert.equal("POLICY_DENIED", code)
    assert(ws:call("read_file", { path = "pub.txt" }))
    ws:close()
  end)

  it("without check_paths the same check() is asked about everything (the control)", function()
    local ws = open("")
    local _, msg, code = ws:call("read_file", { path = "pub.txt" })
    assert.equal("POLICY_DENIED", code, msg)
    ws:close()
  end)

  it("a policy's check_paths that cannot be used is refused when the policies load", function()
    for decl, want in pairs {
      ["check_paths = {},"] = "check_paths must be a list of globs",
      ["check_paths = 5,"] = "check_paths must be a list of globs",
      ["check_paths = { 7 },"] = "check_paths[1] must be a glob",
      ["check_paths = { \"a/../b\" },"] = "check_paths: ",
    } do
      H.write(pdir, "p.lua", STRICT:format(decl))
      local ws, msg, code = require("burrow").open { roots = { { path = root } }, policies = { pdir .. "/p.lua" } }
      if ws then ws:close() end
      assert.is_nil(ws, decl)
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches(want, msg, 1, true)
    end
    H.write(pdir, "q.lua", [[return { name = "q", check_paths = { "x" },
      rules = { { deny = "all", paths = { "y" } } } }]])
    local ws, msg = require("burrow").open { roots = { { path = root } }, policies = { pdir .. "/q.lua" } }
    assert.is_nil(ws)
    assert.matches("check_paths without a check()", msg, 1, true)
  end)

  -- The walker holds the declared entries back and the calling thread asks
  -- about them; with no worker thread to be had (every pthread_create
  -- failing: the fault shim) the calling thread walks and asks in turn,
  -- and the answers are the same bytes.
  it("a walk with no worker threads asks in turn and answers the same", function()
    local ws = open([[check_paths = { "private", "private/**" },]])
    H.write(root, "private/deep/more.txt", "TOKEN=deeper\n")
    H.write(root, "src/private/x.txt", "TOKEN=nested name\n")
    local calls = { { "grep", { pattern = "TOKEN" } }, { "grep", { pattern = "TOKEN", output_mode = "count" } },
      { "glob", { pattern = "**/*", type = "any" } } }
    local want = {}
    for i, c in ipairs(calls) do
      local res = assert(ws:call(c[1], c[2]))
      want[i] = H.json.encode(res)
      assert.is_nil(want[i]:find("TOKEN=private", 1, true))
      assert.equal(1, res.skipped_policy, c[1]) -- private/ (never entered)
    end
    ws:close()
    local shim = H.REPO .. "/" .. (os.getenv("BURROW_BUILD") or "build") .. "/faults.so"
    local script = H.write(H.tmpdir(), "child.lua", ([[
      local burrow, json = require "burrow", require("burrow.core").json
      local ws = assert(burrow.open { roots = { { path = %q } }, policies = { %q } })
      for _, c in ipairs(json.decode(%q)) do io.write(json.encode(assert(ws:call(c[1], c[2]))), "\n") end
    ]]):format(root, pdir .. "/p.lua", H.json.encode(calls)))
    local out = H.run(("cd %s && LD_PRELOAD=%s BURROW_FAULT=pthread_create:EAGAIN BURROW_FAULT_LOG=%s LUA_PATH=%s LUA_CPATH=%s timeout -s KILL 60 lua5.4 %s 2>&1")
      :format(H.q(H.REPO), H.q(shim), H.q(pdir .. "/faults.log"), H.q(package.path), H.q(package.cpath), H.q(script)))
    local got = {}
    for line in out:gmatch("[^\n]+") do got[#got + 1] = line end
    assert.same(want, got)
    local log = assert(io.open(pdir .. "/faults.log")):read("a")
    assert.matches("pthread_create:EAGAIN", log, 1, true) -- the walks had no threads
  end)

  -- The judge is the core's callback into Lua (lsearch.c): a judge that
  -- raises, or answers neither a list nor a code, stops the walk with EIO
  -- (never a partial answer with the held-back entries taken as allowed),
  -- and a code it answers is the walk's result.
  it("a walk's judge that fails stops the walk: EIO, or the code it answers", function()
    local core = require "burrow.core"
    local ws = H.open { roots = { { path = root } } }
    local defer = assert(core.rules { { patterns = { "private", "private/**" }, except = {}, ops = { "read", "list" },
      casefold = false, id = 0 } })
    local function walk(kind, judge)
      if kind == "grep" then return ws.roots:grep(1, ".", { pattern = "TOKEN", defer = defer, judge = judge }) end
      if kind == "glob" then return ws.roots:glob(1, ".", "**", { type = "any", defer = defer, judge = judge }) end
      return ws.roots:list(1, ".", { max_depth = 8, defer = defer, judge = judge })
    end
    for _, kind in ipairs { "grep", "glob", "list" } do
      local seen = {}
      local res = walk(kind, function(items)
        local allow = {}
        for i, e in ipairs(items) do seen[#seen + 1] = e.path .. ":" .. e.type; allow[i] = false end
        return allow
      end)
      assert.is_truthy(res, kind)
      assert.same({ "private:dir" }, seen, kind) -- the folder refused: nothing below it asked or opened
      for _, judge in ipairs { function() error("boom") end, function() return 42 end, function() return nil, "NOPE" end } do
        local r, detail, code = walk(kind, judge)
        assert.is_nil(r, kind)
        assert.equal("EIO", code, kind .. ": " .. tostring(detail))
      end
      local r, detail, code = walk(kind, function() return nil, "TOO_LARGE" end)
      assert.is_nil(r, kind)
      assert.equal("TOO_LARGE", code, kind)
      assert.matches("narrow the path", detail, 1, true)
    end
    ws:close()
  end)
end)
