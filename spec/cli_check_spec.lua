-- burrow check [--config FILE] and --config on the other commands: exit 0
-- with what would be served, or exit 2 with file:line:column on stderr.

local H = require "helpers"
local json = H.json

local function burrow(args, stdin)
  return H.burrow_cmd(args, stdin)
end

describe(H.tag("burrow check"), function()
  local dir

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "data/a.txt", "alpha\n")
    H.write(dir, "docs/readme.md", "# docs\n")
  end)

  after_each(H.cleanup)

  it("prints the roots, tools, caps and policies a config serves, and exits 0", function()
    H.write(dir, "burrow.yaml", [[
roots:
  - path: data
    mount: /workspace
  - docs:/docs:ro
tools: [read_file, list_dir]
policies: [default, {name: quotas, max_bytes_written: 1MB}]
caps: {max_result_bytes: 64KiB, max_file_size: 50MB}
audit: audit.jsonl
charsets: [utf-8, ISO-8859-2]
]])
    local out, err, code = burrow { "check", "--config", dir .. "/burrow.yaml" }
    assert.equal(0, code, err)
    assert.equal("", err)
    assert.matches("config: " .. dir .. "/burrow.yaml\n", out, 1, true)
    assert.matches("  /workspace (rw)  <- " .. dir .. "/data\n", out, 1, true)
    assert.matches("  /docs (ro)  <- " .. dir .. "/docs\n", out, 1, true)
    assert.matches("tools (2): read_file, list_dir\n", out, 1, true)
    assert.matches("max_result_bytes   64 KiB\n", out, 1, true)
    assert.matches("max_file_size      50 MB\n", out, 1, true)
    assert.matches("max_entries        1000\n", out, 1, true)
    -- audit: alone turns the audit policy on (it would record nothing otherwise)
    assert.matches('policies: protected, default, quotas {"max_bytes_written":"1MB"}, audit\n', out, 1, true)
    assert.matches("audit: " .. dir .. "/audit.jsonl\n", out, 1, true)
    assert.matches("charsets: utf-8, iso-8859-2 (text that is not UTF-8", out, 1, true)
    assert.equal("ok\n", out:sub(-3))
  end)

  it("checks the defaults without a config", function()
    local out, err, code = burrow { "check" }
    assert.equal(0, code, err)
    assert.matches("config: none (defaults)\n", out, 1, true)
    assert.matches("  " .. H.REPO .. " (rw)", out, 1, true)
    local native = require("burrow.workspace.registry").native
    assert.matches(("tools (%d): %s\n"):format(#native, table.concat(native, ", ")), out, 1, true)
    assert.matches("policies: protected, default\n", out, 1, true)
    -- what is protected, rule by rule, and how to let one go
    assert.matches("protected (agents may read these, never change them; protect: {except: [NAME]} lets a rule go):\n"
      .. "  git-hooks      .git/hooks .husky\n", out, 1, true)
    assert.matches("\n  vscode         .vscode\n", out, 1, true)
    assert.matches("charsets: utf-8, windows-1252 (the default)", out, 1, true)
  end)

  it("exits 2 with file:line:column for bad YAML, unknown keys and wrong values", function()
    local cases = {
      ["roots:\n  - path: data\n    mnt: /w\n"] = ':3:5: unknown key "mnt" in a root: did you mean "mount"? (known: inotify, mode, mount, path)',
      ["tools: [read_file,\n"] = ":2:1: did not find expected node content",
      ["caps:\n  max_file_size: huge\n"] = ':2:18: cap max_file_size: invalid size "huge"',
      ["roots: &r [data]\n"] = ":1:8: anchors (&r) are not supported",
      ["pack: nosuch\n"] = ':1:7: unknown pack "nosuch" (available: native',
      ["charsets: [utf-8, utf-16]\n"] = ":1:19: charsets[2]: utf-16 cannot be a fallback",
    }
    for text, want in pairs(cases) do
      H.write(dir, "bad.yaml", text)
      local out, err, code = burrow { "check", "--config", dir .. "/bad.yaml" }
      assert.equal(2, code, text)
      assert.equal("", out)
      assert.matches("burrow: " .. dir .. "/bad.yaml" .. want, err, 1, true)
      assert.not_matches("usage:", err, 1, true)
    end
  end)

  it("exits 2 when the config is fine but the workspace cannot open: a root, a policy", function()
    H.write(dir, "c1.yaml", "roots: [missing]\n")
    local _, err, code = burrow { "check", "--config", dir .. "/c1.yaml" }
    assert.equal(2, code)
    assert.matches("burrow: " .. dir .. "/c1.yaml:1:9: ENOENT: cannot open root " .. dir .. "/missing", err, 1, true)

    H.write(dir, "c2.yaml", "roots: [data]\npolicies: [no_such_policy]\n")
    _, err, code = burrow { "check", "--config", dir .. "/c2.yaml" }
    assert.equal(2, code)
    assert.matches("burrow: " .. dir .. "/c2.yaml: INVALID_ARGUMENT: policy no_such_policy", err, 1, true)

    H.write(dir, "broken.lua", "return {check = function(req) return 'allow' end\n") -- syntax error
    H.write(dir, "c3.yaml", "roots: [data]\npolicies: [./broken.lua]\n")
    _, err, code = burrow { "check", "--config", dir .. "/c3.yaml" }
    assert.equal(2, code)
    assert.matches("broken", err, 1, true)
  end)

  it("runs each policy's check() on samples: one that raises is named (exit 2)", function()
    H.write(dir, "boom.lua", 'return { name = "boom", check = function(r) error("kaboom") end }\n')
    H.write(dir, "c.yaml", "roots: [data]\npolicies: [./boom.lua]\n")
    local out, err, code = burrow { "check", "--config", dir .. "/c.yaml" }
    assert.equal(2, code)
    assert.matches("policy boom failed, so the call is denied: .*kaboom %(on a sample read of", err)
    assert.not_matches("\nok\n", out)
  end)

  it("samples a read, a write, a delete and a listing: a check() that raises only on delete fails", function()
    H.write(dir, "ondelete.lua", 'return { name = "ondelete", check = function(r)\n'
      .. '  if r.operation == "delete" then error("no delete here") end\n  return "allow"\nend }\n')
    H.write(dir, "c.yaml", "roots:\n  - {path: data, mount: /w}\n  - docs:/d:ro\npolicies: [default, ./ondelete.lua]\n")
    local out, err, code = burrow { "check", "--config", dir .. "/c.yaml" }
    assert.equal(2, code)
    assert.matches("policy ondelete failed, so the call is denied: .*no delete here %(on a sample delete of /w/burrow%-check%.txt%)", err)
    assert.matches("policy samples (each policy's check(); --sample OP:PATH asks about more):\n"
      .. "  protected on /w: read allow, write allow, delete allow, list allow\n"
      .. "  protected on /d: read allow, write allow, delete allow, list allow\n"
      .. "  default on /w: read allow, write allow, delete allow, list allow\n"
      .. "  default on /d: read allow, write allow, delete allow, list allow\n"
      .. "  ondelete on /w: read allow, write allow, delete FAILED, list allow\n"
      .. "  ondelete on /d: read allow, write allow, delete FAILED, list allow\n", out, 1, true)
    assert.not_matches("\nok\n", out)
    -- no policy listed: the protected one still is; with protect: none,
    -- nothing to sample
    H.write(dir, "none.yaml", "roots: [data]\npolicies: []\n")
    out, err, code = burrow { "check", "--config", dir .. "/none.yaml" }
    assert.equal(0, code, err)
    assert.matches("policies: protected\n", out, 1, true)
    H.write(dir, "none.yaml", "roots: [data]\npolicies: []\nprotect: none\n")
    out, err, code = burrow { "check", "--config", dir .. "/none.yaml" }
    assert.equal(0, code, err)
    assert.matches("policies: none\n", out, 1, true)
    assert.not_matches("policy samples", out, 1, true)
    -- a rule let go by name is not listed, the option is shown
    H.write(dir, "some.yaml", "roots: [data]\nprotect: {except: [vscode, idea]}\n")
    out, err, code = burrow { "check", "--config", dir .. "/some.yaml" }
    assert.equal(0, code, err)
    assert.matches('policies: protected {"except":["vscode","idea"]}, default\n', out, 1, true)
    assert.not_matches("\n  vscode ", out)
  end)

  it("--sample OP:PATH asks each policy about more paths, relative or under a mount", function()
    H.write(dir, "nobuild.lua", 'return { name = "nobuild", check = function(r)\n'
      .. '  if r.rel:match("^build/") then return r.operation == "read" and "allow" or "deny" end\n'
      .. '  if r.rel == "gen" then return "maybe" end\n  return "allow"\nend }\n')
    H.write(dir, "c.yaml", "roots: ['data:/w']\npolicies: [./nobuild.lua, secrets]\n")
    local out, err, code = burrow { "check", "--config", dir .. "/c.yaml",
      "--sample", "write:build/out.o", "--sample", "read:/w/build/out.o", "--sample", "delete:.env" }
    assert.equal(0, code, err)
    assert.matches("  nobuild on /w: read allow, write allow, delete allow, list allow, write build/out.o deny, "
      .. "read /w/build/out.o allow, delete .env allow\n", out, 1, true)
    assert.matches("  secrets on /w: read allow, write allow, delete allow, list allow, write build/out.o allow, "
      .. "read /w/build/out.o allow, delete .env deny (rule)\n", out, 1, true)
    -- an answer that is no answer, on a given path only
    _, err, code = burrow { "check", "--config", dir .. "/c.yaml", "--sample", "list:gen" }
    assert.equal(2, code)
    assert.matches('policy nobuild answered "maybe"; expected allow, deny or ask (on a sample list of /w/gen)', err, 1, true)
    -- what it cannot ask about
    for _, bad in ipairs { "rename:x", "read", "read:/elsewhere/x" } do
      _, err, code = burrow { "check", "--config", dir .. "/c.yaml", "--sample", bad }
      assert.equal(2, code, bad)
      assert.matches("--sample", err, 1, true)
    end
    _, err, code = burrow { "tools", "--sample", "read:x" }
    assert.equal(2, code)
    assert.matches("--sample is check's", err, 1, true)
  end)

  it("checks the listener, its tenants and tokens: what would listen where, for whom", function()
    H.write(dir, "t.yaml", "roots: [docs]\n")
    H.write(dir, "c.yaml", ("roots: [data]\nhttp:\n  listen: 127.0.0.1:8080\n  workers: 3\n"
      .. "  tenants: {t: {config: t.yaml}}\n  tokens:\n    - {sha256: %s, tenant: t}\n"):format(("ab"):rep(32)))
    local out, err, code = burrow { "check", "--config", dir .. "/c.yaml" }
    assert.equal(0, code, err)
    assert.matches("http: listen 127.0.0.1:8080, 3 workers", out, 1, true)
    assert.matches("tenant default: this file's workspace, 0 token%(s%)", out)
    assert.matches("tenant t: .*t%.yaml, roots .*/docs %(rw%), 16 tools, 1 token%(s%)", out)
    assert.matches("\nok\n$", out)
    -- a tenant whose file is broken, or has its own http: section
    for body, want in pairs {
      ["roots: [docs\n"] = "http%.tenants%.t: .*t%.yaml:2:1: did not find expected",
      ["roots: [docs]\nhttp: {workers: 1}\n"] = "http%.tenants%.t: .*has an http: section of its own",
      ["roots: [nowhere]\n"] = "http%.tenants%.t: .*nowhere",
    } do
      H.write(dir, "t.yaml", body)
      local _, terr, tcode = burrow { "check", "--config", dir .. "/c.yaml" }
      assert.equal(2, tcode, body)
      assert.matches(want, terr)
    end
  end)

  it("names the file, line and column of a root that does not exist, at start-up too", function()
    H.write(dir, "c.yaml", "# two roots\nroots:\n  - data\n  - path: gone\n    mount: /g\n")
    local want = "burrow: " .. dir .. "/c.yaml:4:11: ENOENT: cannot open root " .. dir .. "/gone: "
      .. dir .. "/gone does not exist\n"
    local _, err, code = burrow { "check", "--config", dir .. "/c.yaml" }
    assert.equal(2, code)
    assert.equal(want, err)
    _, err, code = burrow({ "mcp", "--strict-start", "--config", dir .. "/c.yaml" }, "")
    assert.equal(2, code)
    assert.equal(want, err)
    -- without --strict-start: the banner says it, and so does every call
    _, err, code = burrow({ "mcp", "--config", dir .. "/c.yaml" }, "")
    assert.equal(0, code, err)
    assert.equal(want, err:match("^[^\n]*\n"))
    -- a --root that does not exist is named as given
    _, err, code = burrow({ "mcp", "--strict-start", "--root", dir .. "/nowhere:/w" }, "")
    assert.equal(2, code)
    assert.matches("^burrow: %-%-root " .. dir:gsub("%p", "%%%0") .. "/nowhere:/w: ENOENT: cannot open root "
      .. dir:gsub("%p", "%%%0") .. "/nowhere: .*does not exist", err)
  end)

  it("names the tenant's file and line of a tenant's root that does not exist, at start-up too", function()
    H.write(dir, "t.yaml", "roots:\n  - docs\n  - path: gone\n")
    H.write(dir, "c.yaml", "roots: [data]\nhttp:\n  listen: 127.0.0.1:0\n  tenants: {t: {config: t.yaml}}\n")
    local want = dir .. "/t.yaml:3:11: ENOENT: cannot open root " .. dir .. "/gone: " .. dir .. "/gone does not exist\n"
    local _, err, code = burrow { "check", "--config", dir .. "/c.yaml" }
    assert.equal(2, code)
    assert.equal("burrow: http.tenants.t: " .. want, err)
    _, err, code = burrow({ "mcp", "--config", dir .. "/c.yaml" }, "")
    assert.equal(2, code)
    assert.equal("burrow: tenant t: " .. want, err)
    -- the main file's own roots: tenant default
    H.write(dir, "c.yaml", "http:\n  listen: 127.0.0.1:0\nroots: [data, gone]\n")
    _, err, code = burrow({ "mcp", "--config", dir .. "/c.yaml" }, "")
    assert.equal(2, code)
    assert.equal("burrow: tenant default: " .. dir .. "/c.yaml:3:15: ENOENT: cannot open root " .. dir .. "/gone: "
      .. dir .. "/gone does not exist\n", err)
  end)

  it("exits 2 for a config file that does not exist", function()
    local _, err, code = burrow { "check", "--config", dir .. "/nope.yaml" }
    assert.equal(2, code)
    assert.matches("burrow: " .. dir .. "/nope.yaml: No such file or directory", err, 1, true)
  end)

  it("checks the seed constraint YAML: read-only /workspace, the mapped tools", function()
    H.write(dir, "seed.yaml", [[
modules:
  - module: filesystem
    actions: [read, ls, file_stat]
    constraints:
      paths: ["{{workspace}}"]
      max_file_size: "50MB"
]])
    local out, err, code = burrow { "check", "--config", dir .. "/seed.yaml" }
    assert.equal(0, code, err)
    assert.matches("  /workspace (ro)  <- .\n", out, 1, true)
    assert.matches("tools (3): read_file, list_dir, stat\n", out, 1, true)
    assert.matches("max_file_size      50 MB\n", out, 1, true)
  end)
end)

describe(H.tag("--config on mcp, call and tools"), function()
  local dir

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "data/a.txt", "alpha\n")
    H.write(dir, "other/b.txt", "beta\n")
    H.write(dir, "burrow.yaml", "roots: ['data:/w:ro']\ntools: [read_file, write_file, stat]\ncaps: {max_entries: 7}\n")
  end)

  after_each(H.cleanup)

  it("call serves the config's roots and tools", function()
    local out, err, code = burrow { "call", "read_file", '{"path":"/w/a.txt"}', "--config", dir .. "/burrow.yaml" }
    assert.equal(0, code, err)
    assert.equal("1\talpha\n", json.decode(out).content)
    out, _, code = burrow { "call", "write_file", '{"path":"/w/n.txt","content":"x"}', "--config", dir .. "/burrow.yaml" }
    assert.equal(1, code)
    assert.equal("READ_ONLY_ROOT", json.decode(out).error.code)
    _, err, code = burrow { "call", "list_dir", "{}", "--config", dir .. "/burrow.yaml" }
    assert.equal(2, code)
    assert.matches('unknown tool "list_dir"', err, 1, true)
  end)

  it("tools lists the config's subset", function()
    local out, err, code = burrow { "tools", "--format", "mcp", "--config", dir .. "/burrow.yaml" }
    assert.equal(0, code, err)
    local names = {}
    for i, t in ipairs(json.decode(out)) do names[i] = t.name end
    assert.same({ "read_file", "write_file", "stat" }, names)
  end)

  it("--root replaces the config's roots and --cap overrides its caps", function()
    local out, err, code = burrow { "check", "--config", dir .. "/burrow.yaml", "--root", dir .. "/other",
      "--cap", "max_entries=9", "--cap", "max_matches=5" }
    assert.equal(0, code, err)
    assert.matches("  " .. dir .. "/other (rw)\n", out, 1, true)
    assert.not_matches("/w (ro)", out, 1, true)
    assert.matches("max_entries        9\n", out, 1, true)
    assert.matches("max_matches        5\n", out, 1, true)
    assert.matches("tools (3): read_file, write_file, stat\n", out, 1, true)
    out, err, code = burrow { "call", "read_file", '{"path":"b.txt"}', "--config", dir .. "/burrow.yaml",
      "--root", dir .. "/other" }
    assert.equal(0, code, err)
    assert.equal("1\tbeta\n", json.decode(out).content)
  end)

  it("mcp --strict-start exits 2 before serving when the config is bad", function()
    H.write(dir, "bad.yaml", "roots: [data]\ncaps: {max_entries: -1}\n")
    local out, err, code = burrow({ "mcp", "--strict-start", "--config", dir .. "/bad.yaml" }, "")
    assert.equal(2, code)
    assert.equal("", out)
    assert.matches("bad.yaml:2:21: cap max_entries:", err, 1, true)
  end)

  it("mcp with a bad config answers initialize and fails every tool call with the error", function()
    H.write(dir, "bad.yaml", "roots: [data]\ncaps: {max_entries: -1}\n")
    local init = json.encode { jsonrpc = "2.0", id = 1, method = "initialize",
      params = { protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "t", version = "1" } } }
    local list = json.encode { jsonrpc = "2.0", id = 2, method = "tools/list" }
    local call = json.encode { jsonrpc = "2.0", id = 3, method = "tools/call",
      params = { name = "read_file", arguments = { path = "a.txt" } } }
    local out, err, code = burrow({ "mcp", "--config", dir .. "/bad.yaml" }, init .. "\n" .. list .. "\n" .. call .. "\n")
    assert.equal(0, code, err)
    assert.matches("bad.yaml:2:21: cap max_entries:", err, 1, true)
    local by_id = {}
    for line in out:gmatch("[^\n]+") do
      local msg = json.decode(line)
      by_id[msg.id] = msg
    end
    assert.equal("burrow", by_id[1].result.serverInfo.name)
    assert.is_true(#by_id[2].result.tools > 0)
    local r = by_id[3].result
    assert.is_true(r.isError)
    assert.equal("CONFIG_ERROR", r._meta["burrow/code"])
    assert.matches("bad.yaml:2:21: cap max_entries:", r.content[1].text, 1, true)
  end)

  it("mcp --landlock with a bad config exits (a reload must not serve roots unconfined)", function()
    H.write(dir, "bad.yaml", "roots: [data]\ncaps: {max_entries: -1}\n")
    local out, _, code = burrow({ "mcp", "--landlock", "--config", dir .. "/bad.yaml" }, "")
    assert.equal(2, code)
    assert.equal("", out)
  end)

  it("mcp serves the config's tools", function()
    local init = json.encode { jsonrpc = "2.0", id = 1, method = "initialize",
      params = { protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "t", version = "1" } } }
    local list = json.encode { jsonrpc = "2.0", id = 2, method = "tools/list" }
    local out, err, code = burrow({ "mcp", "--config", dir .. "/burrow.yaml" }, init .. "\n" .. list .. "\n")
    assert.equal(0, code, err)
    local names = {}
    for line in out:gmatch("[^\n]+") do
      local msg = json.decode(line)
      if msg.id == 2 then
        for i, t in ipairs(msg.result.tools) do names[i] = t.name end
      end
    end
    assert.same({ "read_file", "write_file", "stat" }, names)
  end)
end)
