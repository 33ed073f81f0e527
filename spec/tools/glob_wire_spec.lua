-- glob straight to the wire: over `burrow mcp` (stdio) and `burrow call`,
-- glob's entries are written as JSON by the core (globwire.c) and, for
-- MCP, its listing too, instead of Lua tables encoded afterwards. The
-- bytes must be the table path's: each raw reply line of a `burrow mcp`
-- process is compared with the same call made in process through ws:call
-- (the Lua API's edge: tables) and rendered by mcp.new without a stdio
-- loop, and each `burrow call` output with json.encode of the in-process
-- result.

local H = require "helpers"
local json = H.json
local mcp = require "burrow.mcp"

local FILES = {
  ["a.h"] = "x",
  ["src/main.c"] = "int main;\n",
  ["src/util.h"] = "",
  ["src/deep/er/x.h"] = "yyy",
  ["src/q\"uote\\d.h"] = "q",
  ["src/ctl\1\127name.h"] = "c",
  ["src/nl\nname.h"] = "n",
  ["src/bad\255name.h"] = "b",
  ["src/é.h"] = "e",
  ["docs/readme.md"] = "# r\n",
  [".hidden/k.h"] = "k",
  ["ignored.h"] = "i",
  [".gitignore"] = "ignored.h\n",
}

-- the calls: every type, sort, hidden and ignore choice, a cap, no match
local CALLS = {
  { pattern = "**/*.h" },
  { pattern = "**", type = "any" },
  { pattern = "**", type = "dir" },
  { pattern = "**/*.h", sort = "mtime" },
  { pattern = "**/*", sort = "mtime", max_results = 3 },
  { pattern = "*.h", path = "src" },
  { pattern = "**/*.h", path = "src/" },
  { pattern = "**/*.h", include_hidden = true, respect_ignore = false },
  { pattern = "**/*.h", max_results = 2 },
  { pattern = "**/*.zzz" },
  { pattern = "src/**/{x,util}.h" },
}

local same_bytes = H.same_bytes

-- What the MCP server sends for a call made on the table path (its
-- tools_call: the tool result and the skipped_policy _meta).
local function want_reply(ws, server, id, a)
  local hooks = {}
  local res, msg, code, details = ws:call("glob", a, hooks)
  local out = server:tool_result("glob", res, msg, code, details)
  if (hooks.skipped_policy or 0) > 0 then
    out._meta = out._meta or {}
    out._meta["burrow/skipped_policy"] = hooks.skipped_policy
  end
  return json.encode { jsonrpc = "2.0", id = id, result = out }
end

-- opts: ws (burrow.open options beside the root and caps), extra (CLI
-- flags), cli (`burrow call` flags), tables (the wire path is off)
local function check(dir, caps, calls, opts)
  opts = opts or {}
  local list = {}
  for i, a in ipairs(calls) do list[i] = { "glob", a } end
  local got = H.mcp_calls(dir, list, { caps = caps, flags = opts.extra })
  local o = { roots = { { path = dir } }, caps = caps }
  for k, v in pairs(opts.ws or {}) do o[k] = v end
  local ws = H.open(o)
  local server = mcp.new(ws) -- no stdio loop: the table path
  local wired = 0
  for i, a in ipairs(calls) do
    local label = "glob " .. json.encode(a) .. " caps " .. json.encode(caps or {})
    same_bytes(want_reply(ws, server, 100 + i, a), got[100 + i], "MCP: " .. label)
    -- the same call as the MCP server runs it (ws:run) holds the core's
    -- entry set, and its reply printed here is the tables' byte for byte
    local hooks = {}
    local r = ws:run("glob", a, hooks)
    assert.equal(opts.tables and "table" or "userdata", type(r.entries), label)
    if not opts.tables then wired = wired + 1 end
    local printed = server:tool_result("glob", r)
    if (hooks.skipped_policy or 0) > 0 then printed._meta = { ["burrow/skipped_policy"] = hooks.skipped_policy } end
    same_bytes(want_reply(ws, server, 100 + i, a), json.encode { jsonrpc = "2.0", id = 100 + i, result = printed },
      "printed: " .. label)
    -- the Lua API's edge: tables, always
    assert.equal("table", type(ws:call("glob", a).entries), label)
    -- `burrow call`: the encoded result
    local res, msg, code, details = ws:call("glob", a)
    local want = json.encode(res or { error = { code = code, message = msg, details = details } }) .. "\n"
    local args = { "call", "glob", json.encode(a), "--root", dir }
    for k, v in pairs(caps or {}) do args[#args + 1] = "--cap"; args[#args + 1] = k .. "=" .. v end
    for _, f in ipairs(opts.cli or {}) do args[#args + 1] = f end
    same_bytes(want, H.burrow_cmd(args), "burrow call: " .. label)
  end
  ws:close()
  return wired
end

local policy = H.policy_file

describe(H.tag("glob straight to the wire: the table path's bytes"), function()
  local dir
  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, FILES)
  end)
  after_each(function() H.cleanup() end)

  it("types, sorts, hidden and ignored names, odd paths, no match", function()
    assert.equal(#CALLS, check(dir, nil, CALLS))
  end)

  it("max_entries, and a small max_result_bytes cut (never the first entry)", function()
    check(dir, { max_entries = 4 }, CALLS)
    for _, bytes in ipairs { 1, 12, 40, 100 } do
      check(dir, { max_result_bytes = bytes }, CALLS)
    end
  end)

  it("a result over 64 KiB (the fragments spliced into the reply)", function()
    for i = 1, 1500 do H.write(dir, ("many/sub%02d/file-%04d-\"q\"-\195\169.h"):format(i % 30, i), "") end
    local calls = { { pattern = "**/*.h" }, { pattern = "many/**", type = "any" } }
    check(dir, { max_entries = 100000, max_result_bytes = 8 * 1024 * 1024 }, calls)
    check(dir, { max_entries = 100000, max_result_bytes = 20000 }, calls)
  end)

  it("declared policy rules (the walk skips; still the wire path)", function()
    local file = policy("hide", 'return { name = "hide", rules = { { deny = { "read", "list" }, paths = { "src/deep/**", "docs/**" }, reason = "hidden" } } }\n')
    local calls = { { pattern = "**/*.h" }, { pattern = "**", type = "any" } }
    check(dir, nil, calls, { ws = { policies = { file } }, extra = "--config " .. H.q(file .. ".yaml"),
      cli = { "--config", file .. ".yaml" } })
  end)

  it("a policy judging each object keeps the tables, and its bytes", function()
    local file = policy("judge", 'return { name = "judge", check = function(req) if req.path:find("util", 1, true) then return "deny", "hidden" end return "allow" end }\n')
    local calls = { { pattern = "**/*.h" }, { pattern = "**", type = "any" } }
    check(dir, nil, calls, { ws = { policies = { file } }, tables = true, extra = "--config " .. H.q(file .. ".yaml"),
      cli = { "--config", file .. ".yaml" } })
  end)
end)
