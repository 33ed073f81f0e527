-- Policy options: a policy that lists the options it takes refuses any
-- other key at load (a typo is an error, never a silent default); sizes
-- arrive as the operator wrote them and the sandbox's size() reads them.

local H = require "helpers"
local burrow = require "burrow"

describe(H.tag("policy options"), function()
  after_each(H.cleanup)

  local function open(policies)
    return burrow.open { roots = { { path = H.tmpdir() } }, policies = policies, resolver = H.RESOLVER }
  end

  it("an unknown option of a standard policy is an error naming the known ones", function()
    local ws, msg, code = open { { name = "quotas", calls_per_minute = 60 } }
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.truthy(msg:find('unknown option "calls_per_minute"', 1, true), msg)
    assert.truthy(msg:find("max_bytes_written, max_calls_per_minute", 1, true), msg)
  end)

  it("a policy that takes no options refuses any", function()
    local ws, msg = open { { name = "readonly", strict = true } }
    assert.is_nil(ws)
    assert.truthy(msg:find("takes: no options", 1, true), msg)
  end)

  it("a policy that does not list its options gets any key", function()
    local dir = H.tmpdir()
    H.write(dir, "p.lua", [[local o = ... return { check = function() return o.anything and "allow" or "deny" end }]])
    local ws = assert(open { { path = dir .. "/p.lua", anything = 1 } })
    assert.truthy(ws:call("stat", { path = "." }))
    ws:close()
  end)

  it("size() reads the host's size syntax, and refuses nonsense", function()
    local dir = H.tmpdir()
    H.write(dir, "p.lua", [[
local o = ...
assert(size("1KB") == 1000 and size("2KiB") == 2048 and size("1.5 MB") == 1500000 and size(7) == 7)
assert(not pcall(size, "12 parsecs"))
return { check = function() return "allow" end }]])
    local ws = assert(open { dir .. "/p.lua" })
    ws:close()
  end)

  it("default's max_file_size given as a size string is enforced", function()
    local ws = assert(open { { name = "default", max_file_size = "1KB" } })
    local r, msg, code = ws:call("write_file", { path = "big.txt", content = ("x"):rep(2000) })
    assert.is_nil(r)
    assert.equal("POLICY_DENIED", code, msg)
    assert.truthy(ws:call("write_file", { path = "small.txt", content = ("x"):rep(900) }))
    ws:close()
  end)
end)
