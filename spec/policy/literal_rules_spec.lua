-- A policy's literal rule patterns ("**/.git/hooks", "**/.ssh/**", "secret"):
-- rules.c compares them as strings and checks them as globmatch.c would
-- compile them without compiling them (bw_glob_check; docs/benchmarks.md,
-- Start-up). A bad one is still refused when the policies load (burrow.open,
-- and CONFIG_ERROR / exit 2 at start for the command), never at a first
-- call, and a good one still applies to every call it names.
local H = require "helpers"
local burrow = require "burrow"
local json = require "burrow.jsonlite"

-- a policy file whose one rule denies changes to PATHS
local function policy(paths)
  local quoted = {}
  for i, p in ipairs(paths) do quoted[i] = ("%q"):format(p) end
  return H.policy_file("lit", ([[
return { name = "lit", rules = { { deny = "change", casefold = true, reason = "kept",
  paths = { %s } } } }
]]):format(table.concat(quoted, ", ")))
end

-- "**" and n - 1 names: n segments as globmatch.c counts them
local function segments(n) return "**" .. ("/a"):rep(n - 1) end

local BAD = {
  { segments(129), "pattern has too many segments" },
  { "**/" .. ("a/"):rep(130) .. "x/**", "pattern has too many segments" },
  { "**/" .. ("k"):rep(4094), "pattern too long" },
  { "secret/" .. ("k"):rep(4090) .. "/**", "pattern too long" },
}

describe(H.tag("policies: literal rule patterns"), function()
  local root, ws

  before_each(function()
    root = H.tmpdir()
    H.write(root, "notes.txt", "n\n")
  end)

  after_each(function()
    if ws then ws:close() end
    ws = nil
    H.cleanup()
  end)

  local function open(file)
    return burrow.open { roots = { { path = root } }, resolver = H.RESOLVER, policies = { file } }
  end

  it("a bad literal pattern stops burrow.open, with globmatch.c's reason", function()
    for _, b in ipairs(BAD) do
      local w, err = open(policy { "**/.ok", b[1] })
      if w then w:close() end
      assert.is_nil(w, #b[1] .. " bytes: opened")
      assert.truthy(tostring(err):find(b[2], 1, true), err)
    end
  end)

  it("at the limits a literal pattern loads and applies", function()
    local deep = ("a/"):rep(126) .. "f.txt" -- "**" + 127 names: 128 segments
    ws = assert(open(policy { segments(128):gsub("a$", "f.txt"), "**/" .. ("k"):rep(4093) }))
    local res, _, code = ws:call("write_file", { path = deep, content = "x" })
    assert.is_nil(res)
    assert.equals("POLICY_DENIED", code)
    assert.is_false(H.exists(root, deep))
  end)

  it("every literal kind still denies the calls it names, case folded, and lets reads through", function()
    H.write(root, "Secret", "s\n")
    H.write(root, "d/.Hg/Hgrc", "c\n")
    ws = assert(open(policy { "**/.env", "**/.hg/hgrc", "**/.ssh/**", "secret", "vault/**" }))
    for _, path in ipairs { ".env", "x/y/.ENV", "d/.Hg/Hgrc", ".hg/hgrc", "h/.SSH/id", "Secret", "vault/k" } do
      local res, msg, code = ws:call("write_file", { path = path, content = "x" })
      assert.is_nil(res, path .. " was written")
      assert.equals("POLICY_DENIED", code, path)
      assert.truthy(msg:find("lit policy", 1, true), msg)
    end
    assert.equals("s\n", H.read(root, "Secret"))
    assert(ws:call("read_file", { path = "d/.Hg/Hgrc" }))
    assert(ws:call("write_file", { path = "notes.env", content = "x" }))
    assert(ws:call("write_file", { path = "h/ssh/id", content = "x" }))
  end)

  it("burrow call with such a policy in its config exits 2 before the call", function()
    local file = policy { "**/.ok", BAD[1][1] }
    local cfg = H.write(H.tmpdir(), "burrow.yaml", ("roots: [%s]\npolicies: [%s]\n"):format(root, file))
    local out, err, code = H.burrow_cmd { "call", "write_file", json.encode { path = "new.txt", content = "x" },
      "--config", cfg }
    assert.equals(2, code, out)
    assert.truthy(err:find("pattern has too many segments", 1, true), err)
    assert.is_false(H.exists(root, "new.txt"))
  end)
end)
