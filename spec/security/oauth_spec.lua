-- An OAuth principal of the read-only scope (http.oauth.scopes.read;
-- session.read_only, set only by the listener from a checked token) as
-- an attacker: every way to change a file (each writing native tool, the
-- packs' writing tools, undo_edit, a recursive move/copy/remove) is
-- refused before the policies, even when the operator's own policy allows
-- everything, and nothing on disk changes; reads and listings still work.
-- And http.oauth's config: what it refuses at load. On the resolver under
-- test (the runner sets BURROW_RESOLVER).

local F = require "spec.security.fixture"
local burrow = require "burrow"

local RO = { session = { id = "http:ro", tenant = "default", token = "0123456789abcdef", read_only = true } }
local RW = { session = { id = "http:rw", tenant = "default", token = "fedcba9876543210" } }

describe(F.tag("OAuth: a read-only principal reads only"), function()
  local base, root, allow_all

  local function tree()
    return F.sh("cd " .. F.q(root) .. " && find . -printf '%p %s %y\\n' | LC_ALL=C sort && cat a.txt d/b.txt")
  end

  before_each(function()
    base = F.sh("mktemp -d"):gsub("%s+$", "")
    root = base .. "/ws"
    F.sh("mkdir -p " .. F.q(root .. "/d") .. " && printf 'one\\ntwo\\n' > " .. F.q(root .. "/a.txt")
      .. " && printf 'b\\n' > " .. F.q(root .. "/d/b.txt"))
    allow_all = base .. "/allow.lua"
    local f = assert(io.open(allow_all, "w"))
    f:write('return { name = "allow_all", check = function() return "allow" end }\n')
    f:close()
  end)

  after_each(function() F.sh("rm -rf " .. F.q(base)) end)

  local function open(pack)
    return assert(burrow.open { roots = { { path = root } }, resolver = F.RESOLVER, pack = pack,
      policies = { allow_all } })
  end

  it("every native writing tool is refused, POLICY_DENIED, nothing changes; reads work", function()
    local ws = open()
    -- the read-write principal edits once, so undo_edit has something to take back
    assert(ws:call("edit_file", { path = "a.txt", old_text = "two", new_text = "TWO" }, RW))
    local before = tree()
    local calls = {
      { "write_file", { path = "a.txt", content = "x" } },
      { "write_file", { path = "new.txt", content = "x" } },
      { "edit_file", { path = "a.txt", old_text = "one", new_text = "ONE" } },
      { "insert_lines", { path = "a.txt", line = 1, content = "x\n" } },
      { "append_file", { path = "a.txt", content = "x\n" } },
      { "mkdir", { path = "e" } },
      { "remove", { path = "d", recursive = true } },
      { "remove", { path = "a.txt" } },
      { "move", { source = "a.txt", destination = "m.txt" } },
      { "move", { source = "d", destination = "m" } },
      { "copy", { source = "d", destination = "c", recursive = true } },
      { "copy", { source = "a.txt", destination = "d/b.txt", overwrite = true } },
      { "undo_edit", { path = "a.txt" } },
    }
    for _, c in ipairs(calls) do
      local res, msg, code = ws:call(c[1], c[2], RO)
      assert.is_nil(res, c[1])
      assert.equals("POLICY_DENIED", code, c[1] .. ": " .. tostring(msg))
      assert.truthy(msg:find("reading only", 1, true), msg)
    end
    assert.equals(before, tree())
    local r = assert(ws:call("read_file", { path = "a.txt" }, RO))
    assert.equals(2, r.total_lines)
    assert(ws:call("list_dir", { path = "." , recursive = true }, RO))
    assert(ws:call("grep", { pattern = "b" }, RO))
    assert(ws:call("stat", { path = "d/b.txt" }, RO))
    ws:close()
  end)

  it("the packs' writing tools too (claude_code, codex, mcp_filesystem)", function()
    local before = tree()
    local cases = {
      claude_code = { { "Write", { file_path = root .. "/a.txt", content = "x" } },
        { "Edit", { file_path = root .. "/a.txt", old_string = "one", new_string = "ONE" } } },
      codex = { { "apply_patch", { input = "*** Begin Patch\n*** Add File: p.txt\n+x\n*** End Patch\n" } } },
      mcp_filesystem = { { "write_file", { path = root .. "/a.txt", content = "x" } },
        { "create_directory", { path = root .. "/z" } } },
    }
    for pack, calls in pairs(cases) do
      local ws = open(pack)
      for _, c in ipairs(calls) do
        local res, msg = ws:call(c[1], c[2], RO)
        -- a pack words the refusal in its dialect; what matters is that it is one
        local failed = res == nil or (type(res) == "table" and res.isError) or
          (type(res) == "string" and res:find("reading only", 1, true))
        assert.truthy(failed, pack .. "." .. c[1] .. " went through: " .. tostring(msg))
      end
      ws:close()
    end
    assert.equals(before, tree())
  end)

  it("a read-write principal (no read_only) still writes under the same policies", function()
    local ws = open()
    assert(ws:call("write_file", { path = "w.txt", content = "w" }, RW))
    assert.equals("w", F.sh("cat " .. F.q(root .. "/w.txt")))
    ws:close()
  end)
end)

describe(F.tag("OAuth: http.oauth's config"), function()
  local base

  before_each(function() base = F.sh("mktemp -d"):gsub("%s+$", "") end)
  after_each(function() F.sh("rm -rf " .. F.q(base)) end)

  local function load(yaml)
    local f = assert(io.open(base .. "/c.yaml", "w"))
    f:write("roots: [.]\nhttp:\n  oauth:\n" .. yaml)
    f:close()
    local ok, o, msg = pcall(require("burrow.config").load, base .. "/c.yaml")
    if ok and o then return o end
    if ok then return nil, msg end
    return nil, type(o) == "table" and (o.fail or o.usage) or tostring(o)
  end

  it("refuses what would make it trust the wrong tokens, at load, with the line", function()
    local _, e = load("    audience: https://m.example.com/mcp\n")
    assert.truthy(e and e:find("issuer", 1, true), e)
    _, e = load("    issuer: id.example.com\n    audience: https://m.example.com/mcp\n")
    assert.truthy(e and e:find("absolute http(s) URL", 1, true), e)
    _, e = load("    issuer: https://id.example.com\n    audience: https://m.example.com/mcp\n    scopes: {read: \"a b\"}\n")
    assert.truthy(e and e:find("not one scope token", 1, true), e)
    _, e = load("    issuer: https://id.example.com\n    audience: https://m.example.com/mcp\n    tenants: {x: default}\n")
    assert.truthy(e and e:find("tenant_claim", 1, true), e)
    _, e = load("    issuer: https://id.example.com\n    audience: https://m.example.com/mcp\n    tenant_claim: org\n    tenants: {x: nobody}\n")
    assert.truthy(e and e:find("no tenant \"nobody\"", 1, true), e)
    _, e = load("    issuer: https://id.example.com\n    audience: https://m.example.com/mcp\n    introspection: {endpoint: https://id.example.com/i, client_id: b, client_secret_file: ./none}\n")
    assert.truthy(e and e:find("cannot read a secret", 1, true), e)
    _, e = load("    issuer: https://id.example.com\n    audience: https://m.example.com/mcp\n    skew: 30\n")
    assert.truthy(e and e:find("needs a unit", 1, true), e)
    local o = assert(load("    issuer: https://id.example.com\n    audience: https://m.example.com/mcp\n"))
    assert.equals("default", o.http.oauth.default_tenant)
    -- burrow check says what the listener will take, not "no authentication"
    local out = F.sh("cd " .. F.q(base) .. " && " .. F.q(F.REPO .. "/build/burrow") .. " check --config c.yaml 2>&1")
    assert.truthy(out:find("oauth: access tokens of https://id.example.com for https://m.example.com/mcp", 1, true), out)
    assert.falsy(out:find("no authentication", 1, true), out)
  end)

  it("an http:// issuer off loopback is refused when the listener starts", function()
    local f = assert(io.open(base .. "/c.yaml", "w"))
    f:write("roots: [.]\nhttp:\n  oauth:\n    issuer: http://id.example.com\n    audience: http://127.0.0.1:1/mcp\n")
    f:close()
    local out = F.sh("cd " .. F.q(base) .. " && timeout 20 " .. F.q(F.REPO .. "/build/burrow")
      .. " mcp --strict-start --config c.yaml --http 127.0.0.1:0 2>&1; echo rc=$?")
    assert.truthy(out:find("issuer must be an https:// URL", 1, true), out)
    assert.falsy(out:find("rc=0", 1, true), out)
  end)
end)
