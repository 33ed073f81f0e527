-- The public Lua API: burrow.open, ws:call, ws:tools, ws:close, roots and
-- mounts, read-only roots, argument validation.

local H = require "helpers"
local burrow = require "burrow"
local json = H.json

describe(H.tag("burrow.open"), function()
  local dir

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "a.txt", "alpha\n")
  end)

  after_each(H.cleanup)

  it("opens a root and returns a workspace that serves calls", function()
    local ws, msg, code = burrow.open { roots = { { path = dir } }, resolver = H.RESOLVER }
    assert.is_nil(msg)
    assert.is_nil(code)
    assert.is_table(ws)
    local res = assert(ws:call("read_file", { path = "a.txt" }))
    assert.equal("1\talpha\n", res.content)
    ws:close()
  end)

  it("defaults to the current directory as the only root, mounted at its own path", function()
    local ws = H.open {}
    local m = ws:mounts()
    assert.equal(1, #m)
    assert.equal(H.REPO, m[1].mount)
    assert.is_false(m[1].readonly)
    local res = assert(ws:call("stat", { path = "Makefile" }))
    assert.equal("file", res.type)
    ws:close()
  end)

  it("refuses an empty root list and says why a root cannot be opened", function()
    local ws, msg, code = burrow.open { roots = {}, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.truthy(msg:find("at least one root", 1, true), msg)
    ws, msg, code = burrow.open { roots = { { path = dir, mount = "relative" } }, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.truthy(msg:find("absolute", 1, true), msg)
    ws, msg = burrow.open { roots = { "a:b:c:d" }, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.truthy(msg:find("DIR[:MOUNT][:ro]", 1, true), msg)
  end)

  it("accepts a root given as a DIR[:MOUNT][:ro] string", function()
    local ws = H.open { roots = { dir .. ":/w:ro" } }
    local m = ws:mounts()
    assert.equal("/w", m[1].mount)
    assert.is_true(m[1].readonly)
    assert.equal("1\talpha\n", assert(ws:call("read_file", { path = "/w/a.txt" })).content)
    ws:close()
  end)

  it("uses the default caps: max_result_bytes 256 KiB and max_entries 1000", function()
    -- 1600 lines of 200 bytes (under the 2000-line default limit): the
    -- text stops at 256 KiB
    local line = ("x"):rep(199) .. "\n"
    H.write(dir, "big.txt", line:rep(1600))
    H.sh("mkdir " .. H.q(dir .. "/many") .. " && cd " .. H.q(dir .. "/many")
      .. " && i=0; while [ $i -lt 1001 ]; do : > f$i; i=$((i+1)); done")
    local ws = H.open(dir)
    local r = assert(ws:call("read_file", { path = "big.txt" }))
    assert.is_true(r.truncated)
    assert.is_true(#r.content <= 256 * 1024)
    assert.is_true(#r.content > 250 * 1024)
    local l = assert(ws:call("list_dir", { path = "many" }))
    assert.equal(1000, #l.entries)
    assert.equal(1, l.omitted)
    ws:close()
  end)

  it("accepts caps as sizes written by people", function()
    H.write(dir, "b.txt", ("0123456789\n"):rep(100))
    local ws = H.open(dir, { max_result_bytes = "1KiB" })
    local r = assert(ws:call("read_file", { path = "b.txt" }))
    assert.is_true(r.truncated)
    assert.is_true(#r.content <= 1024)
    ws:close()
  end)

  it("refuses an unknown resolver with nil, message, INVALID_ARGUMENT", function()
    local ws, msg, code = burrow.open { roots = { { path = dir } }, resolver = "chroot" }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("^INVALID_ARGUMENT: ", msg)
    assert.matches("chroot", msg, 1, true)
  end)

  it("refuses an unknown cap, naming it", function()
    local ws, msg, code = burrow.open { roots = { { path = dir } }, caps = { max_bogus = 1 }, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("max_bogus", msg, 1, true)
  end)

  it("refuses a cap with a bad value", function()
    local ws, msg, code = burrow.open { roots = { { path = dir } }, caps = { max_file_size = "lots" }, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("max_file_size", msg, 1, true)
  end)

  it("refuses a root mode other than rw or ro", function()
    local ws, msg, code = burrow.open { roots = { { path = dir, mode = "wo" } }, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.is_string(msg)
  end)

  it("returns nil, message, ENOENT for a missing root directory", function()
    local missing = dir .. "/no/such/dir"
    local ws, msg, code = burrow.open { roots = { { path = missing } }, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.equal("ENOENT", code)
    assert.matches("^ENOENT: ", msg)
    assert.matches(missing, msg, 1, true)
  end)

  it("refuses a root that is a file, not a directory", function()
    local ws, msg, code = burrow.open { roots = { { path = dir .. "/a.txt" } }, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.equal("ENOTDIR", code)
    assert.is_string(msg)
  end)

  it("refuses a relative mount", function()
    local ws, _, code = burrow.open { roots = { { path = dir, mount = "workspace" } }, resolver = H.RESOLVER }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("raises on misuse: options that are not a table", function()
    assert.has_error(function() burrow.open("/tmp") end)
  end)
end)

describe(H.tag("ws:call"), function()
  local ws, dir

  before_each(function()
    ws, dir = H.workspace { ["a.txt"] = "one\ntwo\n" }
  end)

  after_each(H.cleanup)

  it("returns nil, message, INVALID_ARGUMENT for an unknown tool", function()
    local res, msg, code = ws:call("delete_everything", { path = "a.txt" })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("delete_everything", msg, 1, true)
  end)

  it("raises when the tool name is not a string", function()
    assert.has_error(function() ws:call(42, {}) end)
  end)

  it("raises when called with a dot instead of a colon", function()
    assert.has_error(function() ws.call("read_file", { path = "a.txt" }) end)
  end)

  it("names the missing required field", function()
    local res, msg, code = ws:call("read_file", {})
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'path'", msg, 1, true)
    assert.matches("missing", msg, 1, true)
  end)

  it("names a field of the wrong type", function()
    local res, msg, code = ws:call("read_file", { path = "a.txt", limit = "10" })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'limit'", msg, 1, true)
    assert.matches("integer", msg, 1, true)
  end)

  it("refuses a non-integral number for an integer field", function()
    local res, msg, code = ws:call("read_file", { path = "a.txt", offset = 1.5 })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'offset'", msg, 1, true)
  end)

  it("accepts an integral float for an integer field (as JSON decoders give)", function()
    local res = assert(ws:call("read_file", { path = "a.txt", offset = 2.0 }))
    assert.equal("2\ttwo\n", res.content)
  end)

  it("names an unknown field and lists the known ones", function()
    local res, msg, code = ws:call("read_file", { path = "a.txt", lines = 3 })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'lines'", msg, 1, true)
    assert.matches("offset", msg, 1, true)
  end)

  it("names an enum field with a value outside the enum", function()
    local res, msg, code = ws:call("read_file", { path = "a.txt", encoding = "utf-16" })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'encoding'", msg, 1, true)
    assert.matches("base64", msg, 1, true)
  end)

  it("enforces minimum on integer fields", function()
    local res, msg, code = ws:call("read_file", { path = "a.txt", offset = 0 })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'offset'", msg, 1, true)
  end)

  it("treats JSON null for an optional field as absent", function()
    local res = assert(ws:call("read_file", { path = "a.txt", limit = json.null }))
    assert.equal("1\tone\n2\ttwo\n", res.content)
  end)

  it("refuses JSON null for a required field", function()
    local res, msg, code = ws:call("read_file", { path = json.null })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'path'", msg, 1, true)
  end)

  it("refuses arguments that are not an object", function()
    local res, _, code = ws:call("read_file", json.array { "a.txt" })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("checks required fields when the arguments are an empty JSON array", function()
    -- `[]` decoded from JSON: the handler must not run without its path
    local res, msg, code = ws:call("read_file", json.array {})
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'path'", msg, 1, true)
  end)

  it("does not run the handler when validation fails (no file written)", function()
    local res, _, code = ws:call("write_file", { path = "new.txt", content = "x", mode = "0600" })
    assert.is_nil(res)
    assert.equal("INVALID_ARGUMENT", code)
    assert.is_false(H.exists(dir, "new.txt"))
  end)

  it("reports failures as nil, \"CODE: message\", CODE", function()
    local res, msg, code = ws:call("read_file", { path = "missing.txt" })
    assert.is_nil(res)
    assert.equal("ENOENT", code)
    assert.equal("ENOENT: ", msg:sub(1, 8))
    assert.matches("missing.txt", msg, 1, true)
  end)
end)

describe(H.tag("ws:tools"), function()
  local ws

  before_each(function() ws = H.workspace {} end)
  after_each(H.cleanup)

  local native = require("burrow.workspace.registry").native

  local function by_name(list, key)
    local t = {}
    for _, e in ipairs(list) do t[key(e)] = e end
    return t
  end

  it("lists the native tools in MCP shape by default", function()
    local list = ws:tools()
    local t = by_name(list, function(e) return e.name end)
    for _, name in ipairs(native) do
      local e = t[name]
      assert.is_table(e, name)
      assert.is_string(e.description)
      assert.equal("object", e.inputSchema.type)
      assert.is_table(e.inputSchema.properties)
      assert.is_table(e.annotations)
    end
    assert.same({ "path" }, t.read_file.inputSchema.required)
    assert.is_true(t.read_file.annotations.readOnlyHint)
    assert.is_false(t.write_file.annotations.readOnlyHint)
    assert.is_true(t.write_file.annotations.destructiveHint)
    assert.is_table(t.read_file.outputSchema)
  end)

  it("gives the same list for format = \"mcp\"", function()
    assert.same(ws:tools(), ws:tools { format = "mcp" })
  end)

  it("encodes the list as a JSON array", function()
    local s = json.encode(ws:tools())
    assert.equal("[", s:sub(1, 1))
    assert.equal(#native, #json.decode(s))
  end)

  it("lists the tools in OpenAI function-calling shape", function()
    local list = ws:tools { format = "openai" }
    assert.equal(#native, #list)
    local t = by_name(list, function(e) return e["function"].name end)
    for _, name in ipairs(native) do
      local e = t[name]
      assert.is_table(e, name)
      assert.equal("function", e.type)
      assert.is_string(e["function"].description)
      assert.equal("object", e["function"].parameters.type)
    end
    assert.same({ "path", "content" }, t.write_file["function"].parameters.required)
  end)

  it("lists the tools in Anthropic tool shape", function()
    local list = ws:tools { format = "anthropic" }
    assert.equal(#native, #list)
    local t = by_name(list, function(e) return e.name end)
    for _, name in ipairs(native) do
      local e = t[name]
      assert.is_table(e, name)
      assert.is_string(e.description)
      assert.equal("object", e.input_schema.type)
      assert.is_nil(e.inputSchema)
    end
  end)

  it("returns nil and a message for an unknown format", function()
    local list, msg = ws:tools { format = "gemini" }
    assert.is_nil(list)
    assert.matches("gemini", msg, 1, true)
  end)
end)

describe(H.tag("ws:close"), function()
  after_each(H.cleanup)

  it("makes later use raise", function()
    local ws = H.workspace { ["a.txt"] = "x" }
    ws:close()
    assert.has_error(function() ws:call("read_file", { path = "a.txt" }) end)
    assert.has_error(function() ws:tools() end)
    assert.has_error(function() ws:mounts() end)
  end)

  it("can be called twice", function()
    local ws = H.workspace {}
    ws:close()
    assert.has_no.errors(function() ws:close() end)
  end)

  it("closes a <close> variable at the end of its scope", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "x\n")
    local kept
    do
      local ws <close> = H.open(dir)
      kept = ws
      assert.equal("1\tx\n", assert(ws:call("read_file", { path = "a.txt" })).content)
    end
    assert.has_error(function() kept:call("read_file", { path = "a.txt" }) end)
  end)

  it("closes a <close> variable when the scope is left by an error", function()
    local dir = H.tmpdir()
    local kept
    local ok = pcall(function()
      local ws <close> = H.open(dir)
      kept = ws
      error("boom")
    end)
    assert.is_false(ok)
    assert.has_error(function() kept:tools() end)
  end)
end)

describe(H.tag("roots and mounts"), function()
  local a, b, ws

  before_each(function()
    a = H.tmpdir()
    b = H.tmpdir()
    H.write(a, "x.txt", "in a\n")
    H.write(a, "sub/y.txt", "in a/sub\n")
    H.write(b, "x.txt", "in b\n")
    ws = H.open { roots = { { path = a, mount = "/workspace" }, { path = b, mode = "ro" } } }
  end)

  after_each(H.cleanup)

  it("resolves relative paths against the first root", function()
    assert.equal("1\tin a\n", assert(ws:call("read_file", { path = "x.txt" })).content)
  end)

  it("accepts absolute paths under the virtual mount", function()
    local r = assert(ws:call("read_file", { path = "/workspace/x.txt" }))
    assert.equal("1\tin a\n", r.content)
    assert.equal("/workspace/x.txt", r.path)
    assert.equal("1\tin a/sub\n", assert(ws:call("read_file", { path = "/workspace/sub/y.txt" })).content)
  end)

  it("accepts the mount itself as a directory", function()
    local l = assert(ws:call("list_dir", { path = "/workspace" }))
    local paths = {}
    for _, e in ipairs(l.entries) do paths[#paths + 1] = e.path end
    assert.same({ "/workspace/sub", "/workspace/x.txt" }, paths)
  end)

  it("refuses the host path of a root mounted elsewhere: OUTSIDE_ROOT", function()
    local res, msg, code = ws:call("read_file", { path = a .. "/x.txt" })
    assert.is_nil(res)
    assert.equal("OUTSIDE_ROOT", code)
    assert.matches("^OUTSIDE_ROOT: ", msg)
  end)

  it("compares mounts component-wise, not as string prefixes", function()
    local res, _, code = ws:call("read_file", { path = "/workspace_evil/x.txt" })
    assert.is_nil(res)
    assert.equal("OUTSIDE_ROOT", code)
    res, _, code = ws:call("read_file", { path = "/workspacex.txt" })
    assert.is_nil(res)
    assert.equal("OUTSIDE_ROOT", code)
  end)

  it("refuses absolute paths under no root: OUTSIDE_ROOT", function()
    local res, _, code = ws:call("read_file", { path = "/etc/passwd" })
    assert.is_nil(res)
    assert.equal("OUTSIDE_ROOT", code)
  end)

  it("names paths under the virtual mount in errors, never the host path", function()
    local res, msg, code = ws:call("read_file", { path = "/workspace/missing.txt" })
    assert.is_nil(res)
    assert.equal("ENOENT", code)
    assert.matches("/workspace/missing.txt", msg, 1, true)
    assert.is_nil(msg:find(a, 1, true))
  end)

  it("serves a second root by its own host path (the default mount)", function()
    assert.equal("1\tin b\n", assert(ws:call("read_file", { path = b .. "/x.txt" })).content)
  end)

  it("lists every root in ws:mounts()", function()
    local m = ws:mounts()
    assert.equal(2, #m)
    assert.equal("/workspace", m[1].mount)
    assert.is_false(m[1].readonly)
    assert.equal(b, m[2].mount)
    assert.is_true(m[2].readonly)
  end)

  it("refuses writes to a read-only root with READ_ONLY_ROOT and leaves it unchanged", function()
    local res, msg, code = ws:call("write_file", { path = b .. "/x.txt", content = "changed\n" })
    assert.is_nil(res)
    assert.equal("READ_ONLY_ROOT", code)
    assert.matches("^READ_ONLY_ROOT: ", msg)
    assert.equal("in b\n", H.read(b, "x.txt"))
    res, _, code = ws:call("write_file", { path = b .. "/new.txt", content = "x" })
    assert.is_nil(res)
    assert.equal("READ_ONLY_ROOT", code)
    assert.is_false(H.exists(b, "new.txt"))
  end)

  it("still allows writes to the read-write root", function()
    local r = assert(ws:call("write_file", { path = "/workspace/new.txt", content = "hi\n" }))
    assert.is_true(r.created)
    assert.equal("hi\n", H.read(a, "new.txt"))
  end)

  it("refuses .. that climbs out of the root: OUTSIDE_ROOT", function()
    local res, _, code = ws:call("read_file", { path = "../x.txt" })
    assert.is_nil(res)
    assert.equal("OUTSIDE_ROOT", code)
    res, _, code = ws:call("read_file", { path = "/workspace/../etc/passwd" })
    assert.is_nil(res)
    assert.equal("OUTSIDE_ROOT", code)
  end)
end)
