-- Issue 28: a check() policy's hidden file is no search oracle. A walk asks
-- the policies before it opens anything (ctx:walk_opts), so a grep or a
-- glob answers the same bytes whether a hidden file matches or not, and
-- whether a hidden name exists or not (the pattern aside): counts, bytes
-- and files searched, skipped_policy, truncation. On the resolver under
-- test. At b663a06 the walk searched the file, then asked, and counted it
-- only when it matched: grep '^API_TOKEN=s', '=s3', ... read it out.

local F = require "security.fixture"
local json = require("burrow.core").json

-- The same policy twice: asked about every object, and with the paths its
-- check() is about declared (check_paths: a walk asks about the entries
-- those globs match only, found in its walker threads).
local HIDE = {
  ["check()"] = [[return { name = "hide", check = function(r)
      if r.path:find("secret", 1, true) then return "deny", "hidden" end
      return "allow" end }]],
  ["check() with check_paths"] = [[return { name = "hide",
    check_paths = { "**/*secret*", "**/*secret*/**" },
    check = function(r)
      if r.path:find("secret", 1, true) then return "deny", "hidden" end
      return "allow" end }]],
}

for kind, policy_text in pairs(HIDE) do
describe(F.tag("security: no oracle in a " .. kind .. " policy's hidden files (issue 28)"), function()
  local w, pdir, ws

  before_each(function()
    w = F.mktemp()
    pdir = F.mktemp()
    F.write_host(pdir .. "/hide.lua", policy_text)
    F.sh("mkdir -p " .. F.q(w .. "/app/conf") .. " " .. F.q(w .. "/app/secretdir"))
    F.write_host(w .. "/app/pub.txt", "API_TOKEN=public\nhello\n")
    F.write_host(w .. "/app/conf/secret.env", "API_TOKEN=s3cr3t\n")
    F.write_host(w .. "/app/secretdir/notes.txt", "API_TOKEN=s3other\n")
    ws = F.open({ { path = w, mode = "rw" } }, { policies = { pdir .. "/hide.lua" } })
  end)

  after_each(function()
    ws:close()
    F.rmtree(w)
    F.rmtree(pdir)
  end)

  -- the whole result as JSON, the pattern (the one thing that differs) aside
  local function answer(tool, args)
    local res, msg = ws:call(tool, args)
    assert.is_not_nil(res, msg)
    res.pattern = nil
    return json.encode(res)
  end

  it("grep: the same answer whether the hidden file matches or not", function()
    for _, mode in ipairs { "content", "files", "count" } do
      local hit = answer("grep", { pattern = "^API_TOKEN=s3", path = "app", output_mode = mode })
      local miss = answer("grep", { pattern = "^API_TOKEN=zz", path = "app", output_mode = mode })
      assert.are.equal(miss, hit, mode)
      assert.is_nil(hit:find("s3cr3t", 1, true))
    end
  end)

  it("glob: the same answer whether a hidden name exists or not", function()
    assert.are.equal(answer("glob", { pattern = "**/nothere*", path = "app" }),
      answer("glob", { pattern = "**/secret*", path = "app" }))
    assert.are.equal(answer("glob", { pattern = "**/nothere*", path = "app", type = "any" }),
      answer("glob", { pattern = "**/secret*", path = "app", type = "any" }))
  end)

  it("a hidden file is never opened: bytes searched count only what is shown", function()
    local res = assert(ws:call("grep", { pattern = "API_TOKEN", path = "app" }))
    assert.are.equal(1, res.files_searched)
    assert.are.same({ "app/pub.txt" }, res.files)
    assert.are.equal(2, res.skipped_policy) -- conf/secret.env and secretdir (never entered): counted, never named
  end)

  it("recursive list_dir hides the same entries", function()
    local res = assert(ws:call("list_dir", { path = "app", recursive = true }))
    for _, e in ipairs(res.entries) do assert.is_nil(e.path:find("secret", 1, true), e.path) end
  end)
end)

describe(F.tag("security: no existence oracle inside denied folders (issue 28)"), function()
  it("a path under a denied folder answers the same whether its parts exist or not", function()
    local w = F.mktemp()
    F.sh("mkdir -p " .. F.q(w .. "/.ssh") .. " " .. F.q(w .. "/.aws") .. " && echo k > " .. F.q(w .. "/.ssh/id_rsa") ..
      " && echo c > " .. F.q(w .. "/.aws/credentials"))
    local ws = F.open({ { path = w, mode = "rw" } }, { policies = { "default", "secrets" } })
    local function refusal(tool, args, p)
      local res, msg, code = ws:call(tool, args)
      assert.is_nil(res)
      return code .. " " .. msg:gsub(p:gsub("%p", "%%%0"), "PATH", 1):gsub(p:gsub("%p", "%%%0"), "PATH")
    end
    for _, pair in ipairs { { ".ssh/id_rsa/x", ".ssh/nope/x" }, { ".aws/credentials/x", ".aws/nope/x" },
        { ".ssh/id_rsa/a/b", ".ssh/nope/a/b" } } do
      for _, t in ipairs { { "read_file", "path" }, { "stat", "path" }, { "write_file", "path" } } do
        local function args(p) return t[1] == "write_file" and { path = p, content = "x" } or { [t[2]] = p } end
        local there = refusal(t[1], args(pair[1]), pair[1])
        local absent = refusal(t[1], args(pair[2]), pair[2])
        assert.are.equal(absent, there, t[1] .. " " .. pair[1])
        assert.matches("^POLICY_DENIED", there)
      end
    end
    ws:close()
    F.rmtree(w)
  end)
end)

describe(F.tag("security: a rule denying only list holds in walks (issue 28)"), function()
  it("recursive list_dir, glob and grep show no name a list rule denies; a direct read stays allowed", function()
    local w, pdir = F.mktemp(), F.mktemp()
    F.write_host(pdir .. "/nolist.lua", [[return { name = "nolist", rules = {
      { deny = { "list" }, paths = { "private/**" }, reason = "unlisted" } } }]])
    F.sh("mkdir -p " .. F.q(w .. "/private/sub") .. " && echo hidden > " .. F.q(w .. "/private/plan.txt") ..
      " && echo deep > " .. F.q(w .. "/private/sub/deep.txt") .. " && echo pub > " .. F.q(w .. "/pub.txt"))
    local ws = F.open({ { path = w, mode = "rw" } }, { policies = { pdir .. "/nolist.lua" } })
    local function names(v) return table.concat(F.strings(v), "\n") end
    local l = assert(ws:call("list_dir", { path = ".", recursive = true }))
    assert.is_nil(names(l):find("plan.txt", 1, true), "list_dir showed a name the rule hides")
    local g = assert(ws:call("glob", { pattern = "**/*" }))
    assert.is_nil(names(g):find("plan.txt", 1, true), "glob showed a name the rule hides")
    local r = assert(ws:call("grep", { pattern = "hidden|deep|pub" }))
    assert.are.same({ "pub.txt" }, r.files)
    local d = assert(ws:call("list_dir", { path = "private" }))
    assert.are.equal(0, #d.entries, "listing the folder itself shows none of its names")
    assert(ws:call("read_file", { path = "private/plan.txt" }), "reading is not listing")
    ws:close()
    F.rmtree(w)
    F.rmtree(pdir)
  end)
end)
end

describe(F.tag("security: a folder a check() refuses is not entered through a glob's literal prefix (issue 28)"), function()
  it("glob through the folder's name: nothing below it shown, the folder counted, as a walk from above", function()
    local w, pdir = F.mktemp(), F.mktemp()
    -- the folder declared and refused, what is under it declared and not
    -- (so a direct read of it is asked and allowed): a walk prunes at the
    -- folder, whichever way it gets there
    F.write_host(pdir .. "/nodir.lua", [[return { name = "nodir",
      check_paths = { "app/secretdir", "app/secretdir/**" },
      check = function(r) if r.resolved == "app/secretdir" then return "deny", "hidden folder" end end }]])
    F.sh("mkdir -p " .. F.q(w .. "/app/secretdir/sub") .. " && echo x > " .. F.q(w .. "/app/secretdir/notes.txt") ..
      " && echo y > " .. F.q(w .. "/app/secretdir/sub/deep.txt") .. " && echo z > " .. F.q(w .. "/app/pub.txt"))
    local ws = F.open({ { path = w, mode = "rw" } }, { policies = { pdir .. "/nodir.lua" } })
    for _, call in ipairs { { pattern = "app/secretdir/*" }, { pattern = "app/secretdir/**" },
        { pattern = "secretdir/*", path = "app" }, { pattern = "secretdir/sub/*", path = "app" }, { pattern = "**/*" } } do
      local g = assert(ws:call("glob", call))
      local names = table.concat(F.strings(g.entries), " ")
      assert.is_nil(names:find("secretdir/", 1, true), call.pattern .. ": " .. names)
      assert.are.equal(1, g.skipped_policy, call.pattern)
    end
    local r = assert(ws:call("grep", { pattern = "x|y|z" }))
    assert.are.same({ "app/pub.txt" }, r.files)
    ws:close()
    F.rmtree(w)
    F.rmtree(pdir)
  end)
end)
