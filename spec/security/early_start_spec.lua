-- `burrow mcp` answers an initialize waiting at its start before its
-- workspace opens (mcp.on_stdio; docs/benchmarks.md, Start-up). What
-- else waits there must not get through before the roots and policies
-- are in place, nor hang the start: a call sent first, in a batch, as a
-- 2026-07-28 request or dressed as an initialize is judged by the
-- policies as any call is; a line cut off by the end of input ends the
-- process.

local H = require "helpers"
local json = H.json

local SECRET = "API_KEY=do-not-leak-7f3a"

local INIT = { jsonrpc = "2.0", id = 1, method = "initialize", params = {
  protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "busted", version = "1" } } }

local function read_env(id, meta)
  return { jsonrpc = "2.0", id = id, method = "tools/call",
    params = { name = "read_file", arguments = { path = ".env" }, _meta = meta } }
end

-- `burrow mcp --config CONFIG` with raw lines waiting on stdin: stdout and
-- stderr together, and the exit status (timeout's 124 if it hung).
local function run(config, text)
  local tmp = H.tmpdir()
  H.write(tmp, "in", text)
  local _, _, code = H.run(("timeout 60 %s mcp --config %s < %s > %s 2>&1"):format(H.q(H.BURROW), H.q(config),
    H.q(tmp .. "/in"), H.q(tmp .. "/out")))
  return H.read(tmp, "out") or "", code
end

local function lines(...)
  local out = {}
  for i, m in ipairs { ... } do out[i] = type(m) == "string" and m or json.encode(m) end
  return table.concat(out, "\n") .. "\n"
end

describe(H.tag("security: what waits at an mcp start before the workspace opens"), function()
  local dir, config

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, ".env", SECRET .. "\n")
    H.write(dir, "c.yaml", ("roots: [%s]\npolicies: [secrets]\n"):format(json.encode(dir)))
    config = dir .. "/c.yaml"
  end)

  after_each(H.cleanup)

  it("a call sent before initialize is judged by the policies (denied), as after it", function()
    local out, code = run(config, lines(read_env(2), INIT, read_env(3)))
    assert.equal(0, code, out)
    assert.is_nil(out:find("do-not-leak", 1, true), out)
    for _, id in ipairs { 2, 3 } do
      local line = out:match('\n?({"id":' .. id .. ',[^\n]*)')
      assert.is_truthy(line, out)
      assert.is_true(json.decode(line).result.isError, line)
    end
  end)

  it("a 2026-07-28 call first, and an initialize that names that revision, go the stateless way: denied", function()
    local stateless_init = { jsonrpc = "2.0", id = 4, method = "initialize",
      params = { protocolVersion = "2025-06-18", _meta = H.META_2026 } }
    local out, code = run(config, lines(read_env(2, H.META_2026), stateless_init, INIT, read_env(3)))
    assert.equal(0, code, out)
    assert.is_nil(out:find("do-not-leak", 1, true), out)
    assert.is_truthy(out:find('{"id":2,', 1, true), out)
    assert.is_truthy(out:find('{"id":3,', 1, true), out)
  end)

  it("a batch holding an initialize and a call is not answered early, and leaks nothing", function()
    local out, code = run(config, "[" .. json.encode(INIT) .. "," .. json.encode(read_env(2)) .. "]\n" .. lines(INIT, read_env(3)))
    assert.equal(0, code, out)
    assert.is_nil(out:find("do-not-leak", 1, true), out)
    local banner = out:find("burrow ", 1, true)
    local first = out:find("{", 1, true)
    assert.is_truthy(banner and first, out)
    assert.is_true(banner < first, out) -- the batch waited for the open
  end)

  it("an initialize cut off by the end of input, or a first line with no end, ends the process", function()
    for _, text in ipairs { json.encode(INIT):sub(1, 40), json.encode(INIT), ("x"):rep(100000) } do
      local out, code = run(config, text)
      assert.equal(0, code, out:sub(1, 300))
      assert.is_nil(out:find("do-not-leak", 1, true))
    end
  end)
end)
