-- burrow.core's groups a start does not use (lmodule.c's register_later:
-- yaml, sandbox, the walks, edits, stages, charset, lines, page, watch,
-- undo, store; docs/benchmarks.md, Start-up, sixth round) are registered
-- with the first lookup that misses core or the Roots or File method table,
-- or a pairs over one of them; core.rules and core.glob alone by their own
-- names (a call compiles its policies' rules, a start to initialize not). In a fresh process each time (this one's
-- core was loaded long ago): what a start and a call stat leave deferred,
-- then the first use of each way in, which must register them all and
-- answer as before.

local H = require "helpers"

local function child(body)
  local out, code = H.lua_child([[
    local core = require "burrow.core"
    local function later()
      return getmetatable(core) ~= nil and rawget(core, "undo_store") == nil
        and rawget(core, "yaml_decode") == nil and rawget(core, "sandbox") == nil
    end
  ]] .. body, 60)
  assert.equal(0, code, out)
  return out
end

describe("burrow.core: the groups a start does not use, registered with their first use", function()
  after_each(H.cleanup)

  it("a workspace\'s open and a stat call leave them deferred, and answer as before", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "a small file\n")
    -- no policy that runs: from the tree the standard policies run in a
    -- sandbox (core.sandbox registers the rest); installed, they are data
    local out = child(([[
      local dir = %q
      print("fresh", later(), rawget(core, "roots") ~= nil, rawget(core, "rules") == nil,
        rawget(core, "json") ~= nil, rawget(core, "state_open") ~= nil)
      local burrow = require "burrow"
      local ws = assert(burrow.open { roots = { dir }, policies = {}, protect = false })
      print("open", later())
      local res = assert(ws:call("stat", { path = "a.txt" }))
      print("stat", res.name, res.lines, res.size, later())
      ws:close()
    ]]):format(dir))
    assert.equal("fresh\ttrue\ttrue\ttrue\ttrue\ttrue\nopen\ttrue\nstat\ta.txt\t1\t13\ttrue\n", out)
  end)

  it("core.rules and core.glob register their group alone, and work", function()
    local out = child([[
      assert(later() and rawget(core, "rules") == nil and rawget(core, "glob") == nil)
      local r = assert(core.rules { { patterns = { "**/.env" }, ops = { "read" } } })
      print(type(r), type(rawget(core, "glob")), later(), getmetatable(core) ~= nil)
      print(type(core.glob), later())
    ]])
    assert.equal("userdata\tfunction\ttrue\ttrue\nfunction\ttrue\n", out)
  end)

  it("the first lookup on core registers them all, once; a nil field stays nil", function()
    local out = child([[
      assert(later())
      print(core.nope == nil, later(), getmetatable(core) == nil)
      print(type(rawget(core, "undo_store")), type(rawget(core, "watcher")), type(rawget(core, "charset_detect")),
        type(rawget(core, "rules")))
      local t = core.yaml_decode("a: 1\nb: [x, y]\n")
      print(t.a, t.b[2], core.nope == nil)
    ]])
    assert.equal("true\tfalse\ttrue\nfunction\tfunction\tfunction\tfunction\n1\ty\ttrue\n", out)
  end)

  it("the first Roots method of a deferred group registers them, and works", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "one\ntwo needle\n")
    local out = child(([[
      local r = assert(core.roots { { path = %q } })
      local m = getmetatable(r).__index
      print(later(), rawget(m, "grep") == nil, rawget(m, "stat") ~= nil)
      assert(r:stat(1, "a.txt"))
      print(later())
      print(type(r.grep), later(), getmetatable(m) == nil, type(rawget(m, "grep")))
      assert(r:mkdir(1, "sub", false))
      print(r:stat(1, "sub").type)
    ]]):format(dir))
    assert.equal("true\ttrue\ttrue\ntrue\nfunction\tfalse\ttrue\tfunction\ndir\n", out)
  end)

  it("the first File method of a deferred group registers them, and works", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "one\ntwo\nthree\n")
    local out = child(([[
      local r = assert(core.roots { { path = %q } })
      local f = assert(r:read(1, "a.txt", 1000000))
      local m = getmetatable(f).__index
      print(later(), rawget(m, "page") == nil, f:size())
      local t = f:lines_table(2, 1, 1000, 1000)
      print(later(), type(t), type(rawget(core, "lines_table")), type(rawget(m, "page")))
    ]]):format(dir))
    assert.equal("true\ttrue\t14\nfalse\ttable\tfunction\tfunction\n", out)
  end)

  it("pairs over core lists the deferred fields too", function()
    local out = child([[
      assert(later())
      local seen = {}
      for k in pairs(core) do seen[k] = true end
      print(seen.undo_store, seen.yaml_decode, seen.roots, seen.version, later())
    ]])
    assert.equal("true\ttrue\ttrue\ttrue\tfalse\n", out)
  end)
end)
