-- Nested roots in walks and subtree copies (issue 28): with roots
-- /workspace and, inside it at lib/vendor, /vendor, a rule or a check()
-- about /vendor's paths holds whichever mount a walk starts from. A walk
-- that meets another root's directory (by dev/ino) judges everything under
-- it as that root's: its in-root paths and req.root. Before, grep, glob,
-- list_dir and resources/list from /workspace showed /vendor/conf/prod.txt
-- (judged as lib/vendor/conf/prod.txt of /workspace), and copy of
-- /workspace/lib carried it out to where it was readable. Both resolvers.

local F = require "security.fixture"
local json = require("burrow.core").json

local MARK = "nested-mark-5d1e"

-- The policies under test, as policy files: a declared rule, a check() on
-- the in-root path, and a check() on the root of the object.
local POLICIES = {
  rules = [[return { name = "noconf", rules = { { deny = { "read", "list" }, paths = { "conf", "conf/**" },
    reason = "conf is private" } } }]],
  check = [[return { name = "noconf", check = function(req)
    if req.root == "/vendor" and (req.resolved == "conf" or req.resolved:match("^conf/")) then
      return "deny", "conf is private"
    end
  end }]],
  root = [[return { name = "novendor", check = function(req)
    if req.root == "/vendor" and req.resolved ~= "." and req.resolved ~= "pub.txt" then
      return "deny", "vendor is private"
    end
  end }]],
  -- the same two check()s declaring their paths: grep and glob then ask
  -- about the entries those match as the walker meets them (it holds them
  -- back until asked), in the innermost root the walker is in
  check_paths = [[return { name = "noconf", check_paths = { "conf", "conf/**" }, check = function(req)
    if req.root == "/vendor" and (req.resolved == "conf" or req.resolved:match("^conf/")) then
      return "deny", "conf is private"
    end
  end }]],
  root_paths = [[return { name = "novendor", check_paths = { "**" }, check = function(req)
    if req.root == "/vendor" and req.resolved ~= "." and req.resolved ~= "pub.txt" then
      return "deny", "vendor is private"
    end
  end }]],
}

-- the answer's strings that name the hidden file or hold its content
-- (the pattern the agent sent aside)
local function leaks(v)
  local pattern = v.pattern
  v.pattern = nil
  local s = json.encode(v)
  v.pattern = pattern
  return s:find(MARK, 1, true) or s:find("prod.txt", 1, true)
end

describe(F.tag("security: nested roots in walks and copies"), function()
  local W

  before_each(function()
    W = F.mktemp()
    F.sh(("mkdir -p %s/ws/lib/vendor/conf %s/ws/conf"):format(F.q(W), F.q(W)))
    F.write_host(W .. "/ws/lib/vendor/conf/prod.txt", "TOKEN=" .. MARK .. "\n")
    F.write_host(W .. "/ws/lib/vendor/pub.txt", "public vendored\n")
    F.write_host(W .. "/ws/lib/a.txt", "outer file\n")
  end)
  after_each(function() F.rmtree(W) end)

  local function open(kind)
    F.write_host(W .. "/p.lua", POLICIES[kind])
    return F.open({ { path = W .. "/ws", mount = "/workspace", mode = "rw" },
      { path = W .. "/ws/lib/vendor", mount = "/vendor", mode = "ro" } },
      { policies = { "default", W .. "/p.lua" } })
  end

  for _, kind in ipairs { "rules", "check", "root", "check_paths", "root_paths" } do
    it(kind .. ": the file denied by its name stays hidden from walks of the outer root", function()
      local ws = open(kind)
      for _, path in ipairs { "/vendor/conf/prod.txt", "/workspace/lib/vendor/conf/prod.txt" } do
        local _, _, code = ws:call("read_file", { path = path })
        assert.equal("POLICY_DENIED", code, path)
      end
      for _, start in ipairs { "/workspace", "/workspace/lib" } do
        local g = F.ok("grep " .. start, ws:call("grep", { pattern = MARK, path = start }))
        assert.equal(0, #g.matches, start)
        assert.falsy(leaks(g), start)
        -- the answer is the same whether the hidden file matches or not
        local none = F.ok("grep none", ws:call("grep", { pattern = "zz-no-such-zz", path = start }))
        g.pattern, none.pattern = nil, nil
        assert.equal(json.encode(none), json.encode(g), start)
        for _, mode in ipairs { "files", "count" } do
          local r = F.ok("grep " .. mode, ws:call("grep", { pattern = "TOKEN", path = start, output_mode = mode }))
          assert.falsy(leaks(r), mode)
        end
        local gl = F.ok("glob", ws:call("glob", { pattern = "**/*.txt", path = start }))
        assert.falsy(leaks(gl), start)
        local names = {}
        for _, e in ipairs(gl.entries) do names[#names + 1] = e.path end
        assert.truthy(table.concat(names, " "):find("lib/a.txt", 1, true), "the outer file is listed")
        -- a literal prefix through the nested root's directory
        local lp = F.ok("glob prefix", ws:call("glob", { pattern = "**/conf/*", path = start }))
        assert.falsy(leaks(lp), start)
        local l = F.ok("list_dir", ws:call("list_dir", { path = start, recursive = true, max_depth = 10 }))
        assert.falsy(leaks(l), start)
      end
      local lp = F.ok("glob lib/vendor/conf/*", ws:call("glob", { pattern = "lib/vendor/conf/*", path = "/workspace" }))
      assert.equal(0, #lp.entries)
      ws:close()
    end)

    it(kind .. ": copying a tree that holds the nested root refuses what the root's policy hides", function()
      local ws = open(kind)
      local _, _, code = ws:call("copy", { source = "/workspace/lib", destination = "/workspace/lib2", recursive = true })
      assert.equal("POLICY_DENIED", code)
      assert.falsy(F.exists(W .. "/ws/lib2"), "nothing of the copy landed")
      ws:close()
    end)
  end

  for _, kind in ipairs { "check", "check_paths" } do
  it(kind .. ": what the nested root's policy allows is still found from the outer root (nothing else is hidden)", function()
    local ws = open(kind)
    local g = F.ok("grep", ws:call("grep", { pattern = "public vendored|outer file", path = "/workspace" }))
    local paths = {}
    for _, m in ipairs(g.matches) do paths[#paths + 1] = m.path end
    table.sort(paths)
    assert.same({ "/workspace/lib/a.txt", "/workspace/lib/vendor/pub.txt" }, paths)
    -- an outer conf/ of the same in-root name as the nested one: the check
    -- asks about /vendor only, so the outer one is shown
    F.write_host(W .. "/ws/conf/outer.txt", "outer conf\n")
    g = F.ok("grep outer conf", ws:call("grep", { pattern = "outer conf", path = "/workspace" }))
    assert.equal(1, #g.matches)
    ws:close()
  end)
  end
end)
