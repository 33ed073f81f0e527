-- The YAML configuration: core.yaml_decode (the YAML subset, positions,
-- bounds) and burrow.config (every key, sizes, relative paths, errors with
-- file:line:column, the seed "filesystem module" constraint YAML).

local H = require "helpers"
local config = require "burrow.config"
local registry = require "burrow.workspace.registry"
local core = H.core
local json = H.json
local null = json.null

local decode = core.yaml_decode

-- config.parse that must succeed
local function parse(text, dir)
  local opts, err = config.parse(text, "c.yaml", dir or "/etc/burrow")
  assert(opts, err)
  return opts
end

-- config.parse that must fail; its message
local function parse_err(text, dir)
  local opts, err = config.parse(text, "c.yaml", dir or "/etc/burrow")
  assert.is_nil(opts, "expected an error, got options")
  assert.is_string(err)
  return err
end

describe("core.yaml_decode", function()
  it("turns mappings into tables and sequences into JSON arrays", function()
    local v = assert(decode("a: 1\nb: [x, y]\nc: []\nd: {}\n"))
    assert.equal(1, v.a)
    assert.same({ "x", "y" }, { v.b[1], v.b[2] })
    assert.equal(json.array_mt, getmetatable(v.b))
    assert.equal(json.array_mt, getmetatable(v.c))
    assert.is_nil(getmetatable(v.d))
    assert.equal('{"a":1,"b":["x","y"],"c":[],"d":{}}', json.encode(v))
  end)

  it("reads booleans by the YAML 1.2 core schema: yes/no/on/off stay strings", function()
    local v = assert(decode("[true, True, TRUE, false, False, FALSE, yes, no, on, off, Y, n]"))
    assert.same({ true, true, true, false, false, false }, { table.unpack(v, 1, 6) })
    assert.same({ "yes", "no", "on", "off", "Y", "n" }, { table.unpack(v, 7, 12) })
  end)

  it("reads null, ~ and empty values as json.null", function()
    local v = assert(decode("a: null\nb: ~\nc:\nd: NULL\ne: [~, null]\n"))
    for _, k in ipairs { "a", "b", "c", "d" } do assert.equal(null, v[k], k) end
    assert.equal(2, #v.e)
    assert.equal(null, v.e[1])
    assert.equal(null, decode(""))
    assert.equal(null, decode("# only a comment\n"))
  end)

  it("reads integers exactly and refuses those beyond 64 bits", function()
    local v = assert(decode("[0, -17, +5, 007, 0x1F, 0o17, 9223372036854775807, -9223372036854775808]"))
    assert.same({ 0, -17, 5, 7, 31, 15, math.maxinteger, math.mininteger }, { table.unpack(v, 1, 8) })
    for i = 1, 8 do assert.equal("integer", math.type(v[i])) end
    local nothing, err = decode("size: 9223372036854775808\n")
    assert.is_nil(nothing)
    assert.equal("line 1, column 7: integer 9223372036854775808 does not fit in 64 bits", err)
  end)

  it("reads floats, and keeps other plain text as strings", function()
    local v = assert(decode("[1.5, -0.25, 2e3, .5, .inf, -.inf, .nan, 1e, 1.2.3, 50MB, 0x, 12ab]"))
    assert.equal(1.5, v[1])
    assert.equal(-0.25, v[2])
    assert.equal("float", math.type(v[3]))
    assert.equal(2000.0, v[3])
    assert.equal(0.5, v[4])
    assert.equal(math.huge, v[5])
    assert.equal(-math.huge, v[6])
    assert.is_true(v[7] ~= v[7])
    assert.same({ "1e", "1.2.3", "50MB", "0x", "12ab" }, { table.unpack(v, 8, 12) })
  end)

  it("keeps every quoted and block scalar a string", function()
    local v = assert(decode("a: 'true'\nb: \"1\"\nc: ''\nd: |\n  two\n  lines\ne: >\n  folded\n  text\n"))
    assert.equal("true", v.a)
    assert.equal("1", v.b)
    assert.equal("", v.c)
    assert.equal("two\nlines\n", v.d)
    assert.equal("folded text\n", v.e)
  end)

  it("makes every key a string", function()
    local v = assert(decode("1: a\ntrue: b\n~: c\n"))
    assert.equal("a", v["1"])
    assert.equal("b", v["true"])
    assert.equal("c", v["~"])
  end)

  it("returns the position of every table, key, value and item (1-based)", function()
    local v, pos = decode("roots:\n  - path: /x\n    mode: ro\n  - /y\ncaps: {max_entries: 5}\n")
    assert.is_table(v)
    assert.same({ line = 1, col = 1 }, { line = pos[v].line, col = pos[v].col })
    assert.same({ line = 1, col = 1 }, pos[v].keys.roots)
    assert.same({ line = 5, col = 1 }, pos[v].keys.caps)
    assert.same({ line = 5, col = 7 }, pos[v].values.caps)
    assert.same({ line = 2, col = 5 }, pos[v.roots].items[1])
    assert.same({ line = 4, col = 5 }, pos[v.roots].items[2])
    assert.same({ line = 3, col = 5 }, pos[v.roots[1]].keys.mode)
    assert.same({ line = 3, col = 11 }, pos[v.roots[1]].values.mode)
    assert.same({ line = 5, col = 8 }, pos[v.caps].keys.max_entries)
  end)

  it("reports bad YAML as line L, column C: problem", function()
    local _, err = decode("a: 1\nb: c: d\n")
    assert.equal("line 2, column 5: mapping values are not allowed in this context", err)
    _, err = decode("a: [1, 2\n")
    assert.matches("^line 2, column 1: did not find expected ',' or ']'", err)
    _, err = decode("a:\n\tb: 1\n")
    assert.matches("^line 2, column 1: found character that cannot start any token", err)
    _, err = decode("a: ok\nb: \255\n")
    assert.equal("line 2, column 4: invalid leading UTF-8 octet", err)
  end)

  it("refuses anchors, aliases, merge keys and tags", function()
    local cases = {
      ["a: &x 1\n"] = "line 1, column 4: anchors (&x) are not supported",
      ["a: 1\nb: *x\n"] = "line 2, column 4: aliases (*x) are not supported",
      ["base: {a: 1}\nmine:\n  <<: {b: 2}\n"] = "line 3, column 3: merge keys (<<) are not supported",
      ["a: !!str 1\n"] = "line 1, column 4: tags (tag:yaml.org,2002:str) are not supported",
      ["a: !local x\n"] = "line 1, column 4: tags (!local) are not supported",
      ["%TAG ! tag:example.com,2000:\n--- 1\n"] = "line 1, column 1: %TAG directives are not supported",
    }
    for text, want in pairs(cases) do
      local v, err = decode(text)
      assert.is_nil(v, text)
      assert.equal(want, err)
    end
  end)

  it("refuses an alias bomb at its first anchor, before expanding anything", function()
    local lines = { "a: &a [x, x, x, x, x, x, x, x, x]" }
    for i = 2, 9 do
      local prev = string.char(96 + i - 1)
      lines[i] = ("%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]"):format(
        string.char(96 + i), string.char(96 + i), prev, prev, prev, prev, prev, prev, prev, prev, prev)
    end
    local v, err = decode(table.concat(lines, "\n") .. "\n")
    assert.is_nil(v)
    assert.equal("line 1, column 4: anchors (&a) are not supported", err)
  end)

  it("refuses duplicate keys, non-scalar keys and a second document", function()
    local _, err = decode("a: 1\nb: 2\na: 3\n")
    assert.equal('line 3, column 1: duplicate key "a"', err)
    _, err = decode("? [a, b]\n: 1\n")
    assert.equal("line 1, column 3: a key must be a plain value, not a list or mapping", err)
    _, err = decode("a: 1\n---\nb: 2\n")
    assert.equal("line 2, column 1: only one YAML document is supported", err)
  end)

  it("accepts 64 levels of nesting and refuses 65", function()
    local v = decode(("["):rep(64) .. ("]"):rep(64))
    assert.is_table(v)
    local nothing, err = decode(("["):rep(65) .. ("]"):rep(65))
    assert.is_nil(nothing)
    assert.equal("line 1, column 65: nesting deeper than 64 levels", err)
    local block = {}
    for i = 1, 65 do block[i] = ("  "):rep(i - 1) .. "k:" end
    nothing, err = decode(table.concat(block, "\n") .. " 1\n")
    assert.is_nil(nothing)
    assert.equal("line 65, column 129: nesting deeper than 64 levels", err)
  end)

  it("accepts 1 MiB of text and refuses more, before parsing", function()
    local big = "a: " .. ("x"):rep(1024 * 1024 - 4) .. "\n"
    assert.equal(1024 * 1024, #big)
    assert.equal(1024 * 1024 - 4, #decode(big).a)
    local v, err = decode(big .. "b")
    assert.is_nil(v)
    assert.equal("YAML text too large: 1048577 bytes (the limit is 1048576)", err)
  end)

  it("raises on misuse", function()
    assert.has_error(function() decode() end)
    assert.has_error(function() decode({}) end)
  end)
end)

describe("burrow.config", function()
  local tools_dir = registry.tools_dir

  -- A tools directory with only some native tools, so "not available yet"
  -- stays testable as the tool set grows.
  local function fake_tools(names)
    local dir = H.tmpdir()
    for _, n in ipairs(names) do H.write(dir, n .. ".lua", "return {}\n") end
    registry.tools_dir = dir
  end

  after_each(function()
    registry.tools_dir = tools_dir
    H.cleanup()
  end)

  describe("keys", function()
    it("reads a whole config: roots, pack, a tools subset, policies with a file and options, caps, audit", function()
      local dir = H.tmpdir()
      H.write(dir, "policies/no-vendor.lua", "return {}\n")
      local opts = parse([[
roots:
  - path: .
    mount: /workspace
    mode: rw
  - path: /usr/share/doc
    mode: ro
pack: native             # or mcp_filesystem, ...
tools: [read_file, list_dir, stat]   # a subset
policies: [default, secrets, ./policies/no-vendor.lua, {name: quotas, max_bytes_written: 100MB}]
caps: {max_file_size: 50MB, max_result_bytes: 256KiB, max_entries: 1000}
audit: ./burrow-audit.jsonl
]], dir)
      assert.same({
        { path = dir, mount = "/workspace", mode = "rw", where = "c.yaml:2:11" },
        { path = "/usr/share/doc", mode = "ro", where = "c.yaml:5:11" },
      }, opts.roots)
      assert.equal("native", opts.pack)
      assert.same({ "read_file", "list_dir", "stat" }, opts.tools)
      assert.same({
        { name = "default", options = {} },
        { name = "secrets", options = {} },
        { path = dir .. "/policies/no-vendor.lua", options = {} },
        { name = "quotas", options = { max_bytes_written = "100MB" } },
      }, opts.policies)
      assert.same({ max_file_size = 50000000, max_result_bytes = 262144, max_entries = 1000 }, opts.caps)
      assert.equal(dir .. "/burrow-audit.jsonl", opts.audit)
    end)

    it("makes every key optional: empty text, comments and null values are the defaults", function()
      assert.same({ caps = {} }, parse(""))
      assert.same({ caps = {} }, parse("# nothing yet\n"))
      assert.same({ caps = {} }, parse("roots:\ntools: ~\npolicies: null\ncaps:\naudit:\n"))
    end)

    it("takes relative paths from the config file's directory, absolute ones as they are", function()
      local opts = parse("roots: [., src, ./docs, /srv/data, 'lib:/lib:ro']\naudit: logs/audit.jsonl\n", "/etc/burrow")
      assert.same({
        { path = "/etc/burrow", mode = "rw", where = "c.yaml:1:9" },
        { path = "/etc/burrow/src", mode = "rw", where = "c.yaml:1:12" },
        { path = "/etc/burrow/docs", mode = "rw", where = "c.yaml:1:17" },
        { path = "/srv/data", mode = "rw", where = "c.yaml:1:25" },
        { path = "/etc/burrow/lib", mount = "/lib", mode = "ro", where = "c.yaml:1:36" },
      }, opts.roots)
      assert.equal("/etc/burrow/logs/audit.jsonl", opts.audit)
    end)

    it("config.load reads a file and starts relative paths at its directory", function()
      local dir = H.tmpdir()
      H.write(dir, "conf/burrow.yaml", "roots: [../data]\n")
      local opts = assert(config.load(dir .. "/conf/burrow.yaml"))
      assert.same({ { path = dir .. "/conf/../data", mode = "rw", where = dir .. "/conf/burrow.yaml:1:9" } }, opts.roots)
      local nothing, err = config.load(dir .. "/missing.yaml")
      assert.is_nil(nothing)
      assert.matches("missing.yaml: No such file or directory", err, 1, true)
    end)

    it("reads roots as mappings or DIR[:MOUNT][:ro] strings", function()
      local opts = parse("roots:\n  - {path: /a, mount: /w}\n  - /b:ro\n  - /c:/m:ro\n  - path: /d\n    mode: ro\n")
      assert.same({
        { path = "/a", mount = "/w", mode = "rw", where = "c.yaml:2:12" },
        { path = "/b", mode = "ro", where = "c.yaml:3:5" },
        { path = "/c", mount = "/m", mode = "ro", where = "c.yaml:4:5" },
        { path = "/d", mode = "ro", where = "c.yaml:5:11" },
      }, opts.roots)
    end)

    it("parses sizes in caps: decimal and binary units, plain numbers", function()
      local opts = parse("caps:\n  max_file_size: 1GiB\n  max_result_bytes: 64KB\n  max_request_bytes: 2 MiB\n"
        .. "  max_entries: 20\n  max_matches: '30'\n  max_line_chars: 100B\n")
      assert.same({
        max_file_size = 1024 ^ 3, max_result_bytes = 64000, max_request_bytes = 2 * 1024 ^ 2,
        max_entries = 20, max_matches = 30, max_line_chars = 100,
      }, opts.caps)
    end)

    it("reads tools as names, files relative to the config and {name}/{path} entries", function()
      local dir = H.tmpdir()
      H.write(dir, "tools/mine.lua", "return {}\n")
      local opts = parse("tools: [read_file, tools/mine.lua, {name: stat}, {path: ./tools/mine.lua}]\n", dir)
      assert.same({ "read_file", dir .. "/tools/mine.lua", "stat", dir .. "/tools/mine.lua" }, opts.tools)
    end)

    it("normalizes policies: names, files (a / or .lua) and {name|path, ...options}", function()
      local opts = parse([[
policies:
  - readonly
  - mine.lua
  - /opt/p/x.lua
  - {path: sub/y.lua, limit: 3}
  - name: quotas
    max_bytes_written: 100MB
    calls_per_minute: 60
]])
      assert.same({
        { name = "readonly", options = {} },
        { path = "/etc/burrow/mine.lua", options = {} },
        { path = "/opt/p/x.lua", options = {} },
        { path = "/etc/burrow/sub/y.lua", options = { limit = 3 } },
        { name = "quotas", options = { max_bytes_written = "100MB", calls_per_minute = 60 } },
      }, opts.policies)
      assert.same({}, parse("policies: []\n").policies)
    end)

    it("accepts audit as {file, max_bytes}", function()
      assert.same({ file = "/etc/burrow/a.jsonl", max_bytes = 10 * 2 ^ 20 },
        parse("audit: {file: a.jsonl, max_bytes: 10MiB}\n").audit)
    end)

    it("gives burrow.open options it serves", function()
      local dir = H.tmpdir()
      H.write(dir, "data/a.txt", "alpha\n")
      local opts = parse("roots: ['data:/w:ro']\ntools: [read_file, write_file]\ncaps: {max_result_bytes: 1KiB}\n", dir)
      opts.resolver = H.RESOLVER
      local ws = assert(H.burrow.open(opts))
      assert.equal("1\talpha\n", assert(ws:call("read_file", { path = "/w/a.txt" })).content)
      local res, _, code = ws:call("write_file", { path = "/w/b.txt", content = "x" })
      assert.is_nil(res)
      assert.equal("READ_ONLY_ROOT", code)
      assert.equal(1024, ws.caps.max_result_bytes)
      assert.equal(2, #ws:tools())
      ws:close()
    end)
  end)

  describe("errors", function()
    it("reports bad YAML as file:line:column", function()
      assert.equal("c.yaml:2:10: mapping values are not allowed in this context",
        parse_err("roots:\n  - /a: b: c\n"))
      assert.matches("^c%.yaml:3:1: did not find expected ',' or ']'", parse_err("tools: [a,\n  b\n"))
    end)

    it("refuses aliases and anchors in a config", function()
      assert.equal("c.yaml:1:8: anchors (&r) are not supported", parse_err("roots: &r [/a]\ncaps: *r\n"))
    end)

    it("names unknown keys with their position and the known keys", function()
      assert.equal('c.yaml:2:1: unknown key "rots" in the configuration: did you mean "roots"? '
        .. "(known: audit, caps, charsets, http, modules, pack, packs, policies, prompts, protect, resources, roots, roots_from_client, state, tools)",
        parse_err("pack: native\nrots: [/a]\n"))
      assert.equal('c.yaml:3:5: unknown key "mnt" in a root: did you mean "mount"? (known: inotify, mode, mount, path)',
        parse_err("roots:\n  - path: /a\n    mnt: /w\n"))
      -- a key far from every known one: no guess
      assert.equal('c.yaml:1:1: unknown key "colour" in the configuration '
        .. "(known: audit, caps, charsets, http, modules, pack, packs, policies, prompts, protect, resources, roots, roots_from_client, state, tools)",
        parse_err("colour: blue\n"))
      local known = {}
      for k in pairs(require("burrow.base.caps").defaults) do known[#known + 1] = k end
      table.sort(known)
      assert.equal(('c.yaml:1:24: unknown cap "max_bytes" (known: %s)'):format(table.concat(known, ", ")),
        parse_err("caps: {max_entries: 1, max_bytes: 2}\n"))
      assert.equal('c.yaml:3:5: unknown key "when" in a module (known: actions, constraints, module)',
        parse_err("modules:\n  - module: filesystem\n    when: now\n"))
      assert.equal('c.yaml:4:7: unknown key "allow_hidden" in constraints (known: max_file_size, paths)',
        parse_err("modules:\n  - module: filesystem\n    constraints:\n      allow_hidden: true\n"))
    end)

    it("charsets: a list of charsets a fallback can be, each mistake at its item", function()
      assert.same({ "utf-8", "ISO-8859-2" }, parse("charsets: [utf-8, ISO-8859-2]\n").charsets)
      assert.equal('c.yaml:1:11: charsets must be a list, not "windows-1252"', parse_err("charsets: windows-1252\n"))
      assert.equal("c.yaml:1:19: charsets[2]: latin-9x is not a charset this system knows"
        .. " (iconv -l lists them: windows-1252, iso-8859-15, shift_jis, ...)",
        parse_err("charsets: [utf-8, latin-9x]\n"))
      assert.equal("c.yaml:2:5: charsets[1]: utf-16le cannot be a fallback: it does not read ASCII as ASCII"
        .. " (UTF-16 and UTF-32 are told by their BOM or NULs)", parse_err("charsets:\n  - utf-16le\n"))
      assert.equal("c.yaml:1:11: charsets must list at least one charset, e.g. [utf-8, windows-1252]",
        parse_err("charsets: []\n"))
      assert.equal("c.yaml:1:19: charsets[2] must be a non-empty string, not an integer", parse_err("charsets: [utf-8, 5]\n"))
    end)

    it("reports the first unknown key in file order", function()
      assert.matches('^c%.yaml:2:1: unknown key "b"', parse_err("roots: [/a]\nb: 1\nc: 2\na: 3\n"))
    end)

    it("names wrong types with the position of the value", function()
      local cases = {
        ["roots: /a\n"] = 'c.yaml:1:8: roots must be a list, not "/a"',
        ["roots: []\n"] = "c.yaml:1:8: roots: the list is empty (leave the key out to serve the current directory)",
        ["roots:\n  - [/a]\n"] = 'c.yaml:2:5: a root (a mapping {path, mount, mode} or "DIR[:MOUNT][:ro]") must be a mapping, not a list',
        ["roots:\n  - mode: ro\n"] = "c.yaml:2:5: a root needs a path",
        ["roots:\n  - path: 5\n"] = "c.yaml:2:11: path must be a non-empty string, not an integer",
        ["roots:\n  - {path: /a, mode: rx}\n"] = 'c.yaml:2:22: mode must be rw or ro, not "rx"',
        ["roots:\n  - {path: /a, mode: true}\n"] = "c.yaml:2:22: mode must be rw or ro, not a boolean",
        ["roots:\n  - {path: /a, mount: w}\n"] = 'c.yaml:2:23: mount "w" must be an absolute path like /workspace',
        ["roots: ['/a:/b:/c:ro']\n"] = 'c.yaml:1:9: invalid root "/a:/b:/c:ro" (use DIR[:MOUNT][:ro])',
        ["caps: [1]\n"] = "c.yaml:1:7: caps must be a mapping, not a list",
        ["caps:\n  max_file_size: 5XB\n"] = 'c.yaml:2:18: cap max_file_size: invalid size "5XB": unknown unit "XB" at column 2 (use a number with B, KB, MB, GB, KiB, MiB or GiB)',
        ["caps:\n  max_entries: 1.5\n"] = "c.yaml:2:16: cap max_entries: expected a size like 256KiB or 50MB",
        ["tools: read_file\n"] = 'c.yaml:1:8: tools must be a list, not "read_file"',
        ["tools: []\n"] = "c.yaml:1:8: tools: the list is empty (leave the key out for the native set)",
        ["tools: [{name: stat, limit: 1}]\n"] = 'c.yaml:1:22: unknown key "limit" in a tool entry (tools take no options) (known: name, path)',
        ["policies: {default: true}\n"] = "c.yaml:1:11: policies must be a list, not a mapping",
        ["policies: [5]\n"] = "c.yaml:1:12: a policy (a name, a .lua file or {name|path, ...options}) must be a non-empty string, not an integer",
        ["policies: [{limit: 1}]\n"] = "c.yaml:1:12: a policy entry needs exactly one of name or path (the other keys are its options)",
        ["policies: [{name: a, path: b.lua}]\n"] = "c.yaml:1:12: a policy entry needs exactly one of name or path (the other keys are its options)",
        ["policies: ['no such']\n"] = 'c.yaml:1:12: invalid policy name "no such" (a file path needs a / or a .lua ending)',
        ["audit: 5\n"] = "c.yaml:1:8: audit must be a file name or {file, max_bytes}, not an integer",
        ["pack: [native]\n"] = "c.yaml:1:7: pack must be a non-empty string, not a list",
        ["- roots\n"] = "c.yaml:1:1: the configuration must be a mapping, not a list",
        ["just text\n"] = 'c.yaml:1:1: the configuration must be a mapping, not "just text"',
      }
      local wrong = {}
      for text, want in pairs(cases) do
        local got = parse_err(text)
        if got ~= want then wrong[#wrong + 1] = ("%q\n  got  %s\n  want %s"):format(text, got, want) end
      end
      assert(#wrong == 0, table.concat(wrong, "\n"))
    end)

    it("refuses a pack that does not exist, listing the available ones", function()
      assert.matches('^c%.yaml:1:7: unknown pack "no_such_pack" %(available: native, ',
        parse_err("pack: no_such_pack\n"))
      assert.equal("mcp_filesystem", parse("pack: mcp_filesystem\n").pack)
      assert.equal("native", parse("pack: native\n").pack)
    end)

    it("names unknown tools and unreadable tool files", function()
      fake_tools { "read_file", "write_file", "list_dir", "stat" }
      assert.equal('c.yaml:1:20: unknown tool "no_such_tool" (available: read_file, write_file, list_dir, stat)',
        parse_err("tools: [read_file, no_such_tool]\n"))
      registry.tools_dir = tools_dir
      local dir = H.tmpdir()
      assert.equal(("c.yaml:1:9: tool file %s/gone.lua cannot be read"):format(dir), parse_err("tools: [gone.lua]\n", dir))
    end)
  end)

  describe("http (the listener of mcp --http)", function()
    local H64 = ("ab"):rep(32)
    it("reads the listener, its limits, tenants and tokens", function()
      local dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir -p " .. dir))
      local f = assert(io.open(dir .. "/a.yaml", "w"))
      f:write("roots: [.]\n")
      f:close()
      local o = parse(("http:\n  listen: 0.0.0.0:9\n  workers: 3\n  session_ttl: 2m\n  max_body: 1KiB\n"
        .. "  max_running: 2\n  max_undo_bytes: 1MiB\n  max_kept_bytes: 2MiB\n  max_unauthenticated: 9\n  auth_timeout: 1m\n"
        .. "  max_watches: 7\n  max_sessions_per_address: 5\n  shutdown_grace: 2500ms\n"
        .. "  allowed_hosts: [mcp.example.com]\n  tenants:\n    alice: {config: a.yaml, max_running: 1, max_undo_bytes: 1KiB, max_kept_bytes: 3KiB}\n"
        .. "  tokens:\n    - {sha256: %s, tenant: alice, max_calls: 2, max_body: 2KiB}\n    - {sha256: %s}\n")
        :format(H64:upper(), H64), dir)
      os.execute("rm -rf " .. dir)
      local h = o.http
      assert.equal("0.0.0.0:9", h.listen)
      assert.equal(3, h.workers)
      assert.equal(120, h.session_ttl)
      assert.equal(1024, h.max_body)
      assert.equal(2.5, h.shutdown_grace)
      assert.same({ "mcp.example.com" }, { table.unpack(h.allowed_hosts) })
      assert.same({ 2, 1048576, 2097152, 9, 60, 7, 5 }, { h.max_running, h.max_undo_bytes, h.max_kept_bytes,
        h.max_unauthenticated, h.auth_timeout, h.max_watches, h.max_sessions_per_address })
      assert.same({ name = "alice", config = dir .. "/a.yaml", max_running = 1, max_undo_bytes = 1024, max_kept_bytes = 3072 }, h.tenants[1])
      assert.same({ sha256 = H64, tenant = "alice", max_calls = 2, max_body = 2048 }, h.tokens[1])
      assert.equal("default", h.tokens[2].tenant)
    end)

    it("names what is wrong, where", function()
      assert.matches('^c%.yaml:2:3: unknown key "port" in http', parse_err("http:\n  port: 8080\n"))
      assert.matches("^c%.yaml:3:16: http%.tokens%[1%]%.sha256 must be 64 hex digits",
        parse_err("http:\n  tokens:\n    - {sha256: secret}\n"))
      assert.matches('http%.tokens%[1%]%.tenant: no tenant "bob"',
        parse_err(("http:\n  tokens:\n    - {sha256: %s, tenant: bob}\n"):format(H64)))
      assert.matches("http%.workers must be an integer of at least 1", parse_err("http:\n  workers: 0\n"))
      assert.matches("http%.session_ttl must be a duration", parse_err("http:\n  session_ttl: soon\n"))
      assert.matches("http%.session_ttl: 1800 needs a unit: 1800s, 1800m or 1800ms", parse_err("http:\n  session_ttl: 1800\n"))
      assert.matches("http%.max_running must be an integer of at least 1", parse_err("http:\n  max_running: 0\n"))
      assert.matches("http%.auth_timeout must be a duration", parse_err("http:\n  auth_timeout: -1\n"))
      assert.matches("http%.shutdown_grace: 10 needs a unit", parse_err("http:\n  shutdown_grace: 10\n"))
      assert.matches("http%.shutdown_grace must be a duration", parse_err("http:\n  shutdown_grace: later\n"))
      -- the caps' grammar reads it: what is wrong, and where in the value
      assert.matches('http%.session_ttl must be a duration %(500ms, 30s, 15m, 2h%), not "5d" %(unknown unit "d" at column 2%)',
        parse_err("http:\n  session_ttl: 5d\n"))
      assert.matches('http%.auth_timeout must be a duration .* not "0s" %(more than 0%)', parse_err("http:\n  auth_timeout: 0s\n"))
      assert.matches("http%.max_undo_bytes:", parse_err("http:\n  max_undo_bytes: lots\n"))
      assert.matches("http%.max_kept_bytes:", parse_err("http:\n  max_kept_bytes: 0\n"))
      assert.matches("http%.tenants%.x%.config: cannot read", parse_err("http:\n  tenants:\n    x: {config: nope.yaml}\n"))
      assert.matches("default is the main configuration's own",
        parse_err("http:\n  tenants:\n    default: {config: nope.yaml}\n"))
    end)

    it("reads http.metrics: its address, allow_remote, and what is wrong with them, where", function()
      assert.same({ listen = "127.0.0.1:9464", allow_remote = false },
        parse("http:\n  metrics: {listen: 127.0.0.1:9464}\n").http.metrics)
      assert.same({ listen = "[::]:9464", allow_remote = true },
        parse("http:\n  metrics: {listen: \"[::]:9464\", allow_remote: true}\n").http.metrics)
      assert.is_nil(parse("http:\n  listen: 127.0.0.1:8080\n").http.metrics) -- off by default
      assert.matches('^c%.yaml:2:%d+: unknown key "path" in http%.metrics',
        parse_err("http:\n  metrics: {listen: \"127.0.0.1:9464\", path: /m}\n"))
      assert.matches("^c%.yaml:2:12: http%.metrics needs a listen address", parse_err("http:\n  metrics: {}\n"))
      assert.matches("http%.metrics%.listen must be HOST:PORT", parse_err("http:\n  metrics: {listen: localhost}\n"))
      assert.matches("http%.metrics%.allow_remote must be true or false",
        parse_err("http:\n  metrics: {listen: \"0.0.0.0:9464\", allow_remote: yes please}\n"))
      assert.matches("http%.metrics must be", parse_err("http:\n  metrics: 9464\n"))
    end)

    it("reads the caps on a tenant's long streams and listens, the listener's and a tenant's own", function()
      local dir = os.tmpname()
      os.remove(dir)
      assert(os.execute("mkdir -p " .. dir))
      local f = assert(io.open(dir .. "/a.yaml", "w"))
      f:write("roots: [.]\n")
      f:close()
      local o = parse("http:\n  max_streams: 300\n  max_listens: 200\n"
        .. "  tenants:\n    alice: {config: a.yaml, max_streams: 30, max_listens: 20}\n", dir)
      os.execute("rm -rf " .. dir)
      assert.same({ 300, 200 }, { o.http.max_streams, o.http.max_listens })
      assert.same({ 30, 20 }, { o.http.tenants[1].max_streams, o.http.tenants[1].max_listens })
      assert.matches("http%.max_listens must be an integer of at least 1", parse_err("http:\n  max_listens: 0\n"))
      assert.matches("http%.max_streams must be an integer of at least 1", parse_err("http:\n  max_streams: many\n"))
    end)
  end)

  describe("the seed filesystem module's constraint YAML", function()
    it("maps read-only actions onto read-only roots and the tool subset", function()
      local opts = parse([[
modules:
  - module: filesystem
    actions: [read, ls, file_stat]
    constraints:
      paths: ["{{workspace}}", ./data, /srv/shared]
      max_file_size: "50MB"
]])
      assert.same({ "read_file", "list_dir", "stat" }, opts.tools)
      assert.same({
        { path = ".", mount = "/workspace", mode = "ro", where = "c.yaml:5:15" },
        { path = "/etc/burrow/data", mode = "ro", where = "c.yaml:5:32" },
        { path = "/srv/shared", mode = "ro", where = "c.yaml:5:40" },
      }, opts.roots)
      assert.same({ max_file_size = 50000000 }, opts.caps)
    end)

    it("makes the roots read-write when an action writes", function()
      local opts = parse([[
modules:
  - module: filesystem
    actions: [read, write, ls]
    constraints:
      paths: ["{{workspace}}/src"]
]])
      assert.same({ "read_file", "write_file", "list_dir" }, opts.tools)
      assert.same({ { path = "./src", mount = "/workspace/src", mode = "rw", where = "c.yaml:5:15" } }, opts.roots)
    end)

    it("maps every seed action onto its native tool", function()
      local want = {
        read = "read_file", write = "write_file", edit = "edit_file", insert = "insert_lines",
        ls = "list_dir", grep = "grep", find = "glob", mv = "move", cp = "copy",
        rm = "remove", mkdir = "mkdir", file_stat = "stat",
      }
      assert.same(want, config.seed_actions)
      local names, actions = {}, {}
      for a, t in pairs(want) do
        actions[#actions + 1] = a
        names[#names + 1] = t
      end
      table.sort(actions)
      fake_tools(names)
      local opts = parse("modules:\n  - module: filesystem\n    actions: [" .. table.concat(actions, ", ") .. "]\n"
        .. "    constraints: {paths: [/w]}\n")
      local got = {}
      for i, a in ipairs(actions) do
        got[i] = opts.tools[i]
        assert.equal(want[a], got[i], a)
      end
      assert.equal("rw", opts.roots[1].mode)
    end)

    it("fails at load, with the position, for an action whose tool does not exist yet", function()
      fake_tools { "read_file", "write_file", "list_dir", "stat" }
      assert.equal('c.yaml:3:28: action "edit" needs the native tool "edit_file", which is not available yet '
        .. "(available: read_file, write_file, list_dir, stat)",
        parse_err([[
modules:
  - module: filesystem
    actions: [read, write, edit, insert, ls, grep, find, mkdir, rm]
    constraints:
      paths: ["{{workspace}}"]
      max_file_size: "50MB"
]]))
    end)

    it("serves the seed's example once every action has a tool", function()
      fake_tools { "read_file", "write_file", "edit_file", "insert_lines", "list_dir", "grep", "glob", "mkdir", "remove" }
      local opts = parse([[
modules:
  - module: filesystem
    actions: [read, write, edit, insert, ls, grep, find, mkdir, rm]
    constraints:
      paths: ["{{workspace}}"]
      max_file_size: "50MB"
]])
      assert.same({ "read_file", "write_file", "edit_file", "insert_lines", "list_dir", "grep", "glob", "mkdir", "remove" },
        opts.tools)
      assert.same({ { path = ".", mount = "/workspace", mode = "rw", where = "c.yaml:5:15" } }, opts.roots)
      assert.same({ max_file_size = 50000000 }, opts.caps)
    end)

    it("keeps the native tool set when there are no actions, and combines with policies", function()
      local opts = parse("modules:\n  - module: filesystem\n    constraints: {paths: [/w]}\npolicies: [secrets]\n")
      assert.is_nil(opts.tools)
      assert.same({ { path = "/w", mode = "rw", where = "c.yaml:3:27" } }, opts.roots)
      assert.same({ { name = "secrets", options = {} } }, opts.policies)
    end)

    it("refuses what it cannot honour, with positions", function()
      local cases = {
        ["modules:\n  - module: shell\n"] = 'c.yaml:2:13: only the filesystem module is supported, not "shell"',
        ["modules:\n  - actions: [read]\n"] = "c.yaml:2:5: a module needs a name (module: filesystem)",
        ["modules:\n  - module: filesystem\n  - module: filesystem\n"] = "c.yaml:3:5: the filesystem module is listed twice",
        ["modules:\n  - module: filesystem\n    actions: [read, chmod]\n"] =
          'c.yaml:3:21: unknown action "chmod" (known: cp, edit, file_stat, find, grep, insert, ls, mkdir, mv, read, rm, write)',
        ["modules:\n  - module: filesystem\n    actions: []\n"] = "c.yaml:3:14: actions: the list is empty",
        ["modules:\n  - module: filesystem\n    constraints: {paths: ['{{home}}']}\n"] =
          "c.yaml:3:27: unknown template variable {{home}} (only {{workspace}} is known)",
        ["modules:\n  - module: filesystem\n    constraints: {paths: ['/a/{{workspace}}']}\n"] =
          "c.yaml:3:27: {{workspace}} may only start a path",
        ["modules:\n  - module: filesystem\n    constraints: {paths: ['{{workspace}}x']}\n"] =
          "c.yaml:3:27: {{workspace}} must be followed by / or nothing",
        ["modules:\n  - module: filesystem\n    constraints: {max_file_size: lots}\n"] =
          'c.yaml:3:34: max_file_size: invalid size "lots": expected a number at column 1 (use a number with B, KB, MB, GB, KiB, MiB or GiB)',
        ["tools: [stat]\nmodules:\n  - module: filesystem\n    actions: [read]\n"] =
          "c.yaml:4:14: give either tools or the module's actions, not both",
        ["roots: [/a]\nmodules:\n  - module: filesystem\n    constraints: {paths: [/b]}\n"] =
          "c.yaml:4:26: give either roots or constraints.paths, not both",
        ["caps: {max_file_size: 1MB}\nmodules:\n  - module: filesystem\n    constraints: {max_file_size: 2MB}\n"] =
          "c.yaml:4:34: max_file_size is also set in caps",
        ["modules: {module: filesystem}\n"] = "c.yaml:1:10: modules must be a list, not a mapping",
      }
      local wrong = {}
      for text, want in pairs(cases) do
        local got = parse_err(text)
        if got ~= want then wrong[#wrong + 1] = ("%q\n  got  %s\n  want %s"):format(text, got, want) end
      end
      assert(#wrong == 0, table.concat(wrong, "\n"))
    end)

    it("opens the mapped workspace: /workspace is the current directory, read-only", function()
      local opts = parse("modules:\n  - module: filesystem\n    actions: [read, ls]\n"
        .. "    constraints: {paths: ['{{workspace}}']}\n")
      opts.resolver = H.RESOLVER
      local ws = assert(H.burrow.open(opts))
      local m = ws:mounts()
      assert.equal("/workspace", m[1].mount)
      assert.is_true(m[1].readonly)
      assert.is_table(assert(ws:call("list_dir", { path = "/workspace" })).entries)
      assert.matches("burrow", assert(ws:call("read_file", { path = "/workspace/Makefile", limit = 3 })).content)
      ws:close()
    end)
  end)
end)

describe(H.tag("burrow_open's config text (burrow.embed.capi)"), function()
  local capi = require "burrow.embed.capi"

  after_each(H.cleanup)

  it("takes YAML configuration, a bare root, or nothing", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "alpha\n")
    local ws = assert(capi.open(("roots: ['%s:/w:ro']\ntools: [read_file]\n"):format(dir)))
    assert.equal("/w", ws:mounts()[1].mount)
    assert.is_true(ws:mounts()[1].readonly)
    assert.equal(1, #ws:tools())
    ws:close()
    ws = assert(capi.open(dir .. ":/v"))
    assert.equal("/v", ws:mounts()[1].mount)
    ws:close()
    ws = assert(capi.open(nil))
    assert.equal(H.REPO, ws:mounts()[1].mount)
    ws:close()
  end)

  it("returns the config error with its position", function()
    local ws, err = capi.open("roots: [/tmp]\ncolour: blue\n")
    assert.is_nil(ws)
    assert.matches('^config:2:1: unknown key "colour"', err)
  end)
end)

describe("config: state (the deployment's state store, issue 45)", function()
  it("takes a Redis URL with a password file, a CA file and a timeout; relative files start at the config's folder", function()
    local opts = parse("state: {url: rediss://valkey.internal:6380/2, password_file: redis.pw, ca_file: /etc/ssl/ca.pem, timeout: 1500ms}\n")
    assert.same({ url = "rediss://valkey.internal:6380/2", password_file = "/etc/burrow/redis.pw",
      ca_file = "/etc/ssl/ca.pem", timeout = 1.5 }, opts.state_config)
    assert.is_nil(parse("state: memory\n").state_config, "the embedded default, said out loud")
    assert.same({ url = "redis://burrow@h:6379/0", verify = false, connect_timeout = 0.5, pool = 8,
      max_entries_per_tenant = 500, max_bytes_per_tenant = 1048576 },
      parse("state: {url: redis://burrow@h:6379/0, verify: false, connect_timeout: 500ms, pool: 8, "
        .. "max_entries_per_tenant: 500, max_bytes_per_tenant: 1MiB}\n").state_config, "a user without a password is fine")
    assert.is_nil(parse("roots: [.]\n").state_config)
  end)

  it("refuses a password in the URL, another scheme, unknown keys and a missing url, at their line", function()
    assert.equal("c.yaml:1:14: state.url holds a password: put it in a file and name it as state.password_file",
      parse_err('state: {url: "redis://:secret@h:6379/0"}\n'))
    assert.truthy(parse_err("state: {url: http://h:6379}\n"):find("^c.yaml:1:14: state.url must be redis://"))
    assert.truthy(parse_err("state: {url: redis://h:1/0, pasword_file: x}\n"):find("pasword_file", 1, true))
    assert.truthy(parse_err("state: {timeout: 1s}\n"):find("state needs a url", 1, true))
    assert.truthy(parse_err("state: {url: redis://h:1/0, timeout: soon}\n"):find("state.timeout", 1, true))
    assert.truthy(parse_err("state: redis\n"):find("state must be memory or {url", 1, true))
  end)
end)
