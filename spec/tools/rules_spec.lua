-- Policy path rules in walks (issue 10): with a policy that declares rules
-- (compiled by the policy loader with core.rules), grep, glob and list_dir leave out what a
-- direct read would deny (.env, sub/.env, what is inside .ssh/), never
-- open it, prune denied directories, and say how many entries they hid
-- (skipped_policy, "[N entries hidden by policy]") without naming them.
-- Without rules nothing changes. Also core.rules itself: matching, errors,
-- and the Rules object's life while a walk reads it.

local H = require "helpers"
local core = H.core

local FILES = {
  [".env"] = "TOKEN=env\n",
  ["sub/.env"] = "TOKEN=sub\n",
  ["sub/ok.txt"] = "TOKEN ok\n",
  [".ssh/id_rsa"] = "TOKEN key\n",
  [".ssh/config"] = "TOKEN config\n",
  ["src/app.py"] = "TOKEN = read_env()\n",
  ["src/.env.example"] = "TOKEN=\n",
  ["private/notes.txt"] = "TOKEN private\n",
  ["notes.txt"] = "TOKEN notes\n",
}

local RULES = {
  { patterns = { "**/.env", "**/.env.*" }, except = { "**/.env.example" }, ops = { "read", "write" } },
  { patterns = { "**/.ssh/**" }, ops = { "read" } },
  { patterns = { "private" }, ops = { "read" } },
}

-- The same rules as a policy file declares them.
local POLICY = [[
return { name = "walkrules", rules = {
  { deny = { "read", "write" }, paths = { "**/.env", "**/.env.*" }, except = { "**/.env.example" } },
  { deny = "read", paths = { "**/.ssh/**" } },
  { deny = "read", paths = { "private" } },
} }
]]

local function open_with_rules(files)
  local dir = H.tmpdir()
  H.write_all(dir, files)
  local pdir = H.tmpdir()
  H.write(pdir, "walkrules.lua", POLICY)
  return H.open({ roots = { { path = dir } }, policies = { pdir .. "/walkrules.lua" } }), dir
end

local function paths(list, key)
  local out = {}
  for i, e in ipairs(list) do out[i] = key and e[key] or e end
  table.sort(out)
  return out
end

describe(H.tag("policy rules in walks"), function()
  local ws, dir

  before_each(function()
    ws, dir = open_with_rules(FILES)
  end)
  after_each(H.cleanup)

  describe("grep", function()
    it("does not search or show denied files, and counts them", function()
      local r = assert(ws:call("grep", { pattern = "TOKEN", include_hidden = true }))
      assert.same({ "notes.txt", "src/.env.example", "src/app.py", "sub/ok.txt" }, paths(r.files))
      -- .env, .ssh/config, .ssh/id_rsa, private, sub/.env
      assert.equal(5, r.skipped_policy)
      assert.equal(4, r.files_searched)
      local text = ws:render("grep", r)
      assert.matches("[5 entries hidden by policy]", text, 1, true)
      assert.not_matches("TOKEN=env", text, 1, true)
      assert.not_matches("id_rsa", text, 1, true)
      assert.not_matches("private", text, 1, true)
    end)

    it("counts only what the walk would have shown (hidden names stay out)", function()
      local r = assert(ws:call("grep", { pattern = "TOKEN" }))
      assert.same({ "notes.txt", "src/app.py", "sub/ok.txt" }, paths(r.files))
      assert.equal(1, r.skipped_policy) -- private/
    end)

    it("matches rules on the in-root path from a subdirectory and through a link", function()
      H.symlink("sub", dir, "alias")
      for _, p in ipairs { "sub", "./sub/", "alias", dir .. "/sub" } do
        local r = assert(ws:call("grep", { pattern = "TOKEN", path = p, include_hidden = true }))
        assert.equal(1, #r.files, p)
        assert.matches("ok.txt$", r.files[1])
        assert.equal(1, r.skipped_policy, p)
      end
    end)

    it("says so when everything that matched was hidden", function()
      local r = assert(ws:call("grep", { pattern = "TOKEN=sub", include_hidden = true }))
      assert.same({}, r.files)
      local text = ws:render("grep", r)
      assert.matches("No matches", text, 1, true)
      assert.matches("[5 entries hidden by policy]", text, 1, true)
    end)
  end)

  describe("glob", function()
    it("does not list denied entries", function()
      -- the count is of the walked tree (a dot-name pattern walks hidden
      -- names), whether or not a hidden entry would have matched
      local r = assert(ws:call("glob", { pattern = "**/.env" }))
      assert.same({}, r.entries)
      assert.equal(5, r.skipped_policy)
      assert.matches("[5 entries hidden by policy]", ws:render("glob", r), 1, true)
      r = assert(ws:call("glob", { pattern = "**/*", type = "any", include_hidden = true }))
      assert.same({ ".ssh", "notes.txt", "src", "src/.env.example", "src/app.py", "sub", "sub/ok.txt" },
        paths(r.entries, "path"))
      assert.equal(5, r.skipped_policy)
    end)

    it("hides what is inside a denied directory named in the pattern", function()
      local r = assert(ws:call("glob", { pattern = ".ssh/*" }))
      assert.same({}, r.entries)
      assert.equal(2, r.skipped_policy)
      r = assert(ws:call("glob", { pattern = "private/*.txt" }))
      assert.same({}, r.entries)
      assert.equal(1, r.skipped_policy)
    end)
  end)

  describe("list_dir", function()
    it("leaves denied entries out of a recursive listing and prunes denied directories", function()
      local r = assert(ws:call("list_dir", { recursive = true, include_hidden = true }))
      assert.same({ ".ssh", "notes.txt", "src", "src/.env.example", "src/app.py", "sub", "sub/ok.txt" },
        paths(r.entries, "path"))
      assert.equal(5, r.skipped_policy)
      assert.equal(0, r.omitted)
      assert.is_false(r.truncated)
      local text = ws:render("list_dir", r)
      assert.matches("[5 entries hidden by policy]", text, 1, true)
      assert.not_matches("id_rsa", text, 1, true)
    end)

    it("does not call a directory empty when it only hid entries", function()
      local r = assert(ws:call("list_dir", { path = ".ssh", include_hidden = true }))
      assert.same({}, r.entries)
      assert.equal(2, r.skipped_policy)
      local text = ws:render("list_dir", r)
      assert.not_matches("empty directory", text, 1, true)
      assert.matches("[2 entries hidden by policy]", text, 1, true)
      r = assert(ws:call("list_dir", { path = "sub", include_hidden = true }))
      assert.matches("[1 entry hidden by policy]", ws:render("list_dir", r), 1, true)
    end)
  end)

  describe("without rules", function()
    before_each(function() ws, dir = H.workspace(FILES) end)

    it("shows everything as before and says nothing of policy", function()
      local r = assert(ws:call("grep", { pattern = "TOKEN", include_hidden = true }))
      assert.equal(9, #r.files)
      assert.is_nil(r.skipped_policy)
      assert.not_matches("policy", ws:render("grep", r), 1, true)
      r = assert(ws:call("glob", { pattern = "**/.env" }))
      assert.equal(2, #r.entries)
      assert.is_nil(r.skipped_policy)
      r = assert(ws:call("list_dir", { recursive = true, include_hidden = true }))
      assert.equal(13, #r.entries)
      assert.is_nil(r.skipped_policy)
      assert.not_matches("policy", ws:render("list_dir", r), 1, true)
    end)
  end)
end)

describe(H.tag("core.rules"), function()
  after_each(H.cleanup)

  it("matches whole in-root paths: ** at the root and deep, excepts, case, ops", function()
    local rs = assert(core.rules {
      { patterns = { "**/.env" }, except = { "keep/**" }, ops = { "read" }, id = 7 },
      { patterns = { "**/*.pem", "**/id_{rsa,ed25519}" }, casefold = true },
      { patterns = { "**/.git/config" }, ops = "write" },
    })
    assert.equal(7, rs:match(".env"))
    assert.equal(7, rs:match("a/b/.env", "read"))
    assert.is_nil(rs:match("keep/.env"))
    assert.is_nil(rs:match(".env", "write"))
    assert.equal(2, rs:match("certs/A.PEM")) -- id defaults to the rule's position
    assert.equal(2, rs:match("home/id_ed25519"))
    assert.is_nil(rs:match(".git/config"))
    assert.equal(3, rs:match(".git/config", "write"))
    assert.has_error(function() rs:match(".env", "rename") end)
    assert.matches("3 rules", tostring(rs))
  end)

  it("names the rule and the pattern it refuses", function()
    local rs, msg, code = core.rules { { patterns = { "**/.env" } }, { patterns = { "ok", "a/../b" } } }
    assert.is_nil(rs)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches('rule 2: pattern "a/../b"', msg, 1, true)
    _, msg = core.rules { { patterns = { "x" }, except = { "y/../z" } } }
    assert.matches('rule 1: except "y/../z"', msg, 1, true)
    for _, bad in ipairs {
      { patterns = {} }, { pattern = { "x" } }, { patterns = { "x" }, ops = { "rename" } },
      { patterns = { "x" }, casefold = "yes" }, { patterns = { "x" }, id = -1 }, { patterns = { 1 } },
      { patterns = { "a\0b" } }, "x",
    } do
      local r, m, c = core.rules { bad }
      assert.is_nil(r)
      assert.equal("INVALID_ARGUMENT", c)
      assert.matches("^rule 1: ", m)
    end
  end)

  it("stays alive and open while a walk's workers read it", function()
    local ws, dir = H.workspace()
    H.sh("cd " .. H.q(dir) .. " && for d in $(seq 0 29); do mkdir d$d; done && "
      .. "for i in $(seq 1 3000); do echo hit > d$((i % 30))/f$i.txt; done")
    H.write(dir, "d1/.env", "hit\n")
    local refused, calls = nil, 0
    local rules = assert(core.rules { { patterns = { "**/.env" } } })
    local r = assert(ws.roots:grep(1, ".", {
      pattern = "hit", mode = "files", include_hidden = true, interval_ms = 1,
      rules = rules, max_results = 10000,
    }, function()
      calls = calls + 1
      collectgarbage()
      local ok, err = pcall(rules.close, rules)
      if not ok then refused = err end
    end))
    assert.equal(3000, #r.files)
    assert.equal(1, r.skipped_policy)
    if calls > 0 then assert.matches("in use", refused) end
    rules:close()
    rules:close() -- closing twice is harmless
    assert.has_error(function() rules:match(".env") end)
    assert.has_error(function() ws.roots:grep(1, ".", { pattern = "hit", rules = rules }) end)
    assert.has_error(function() ws.roots:list(1, ".", { rules = "nope" }) end)
  end)
end)
