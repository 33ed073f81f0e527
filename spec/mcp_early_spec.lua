-- `burrow mcp` over stdio answers an initialize request that is already
-- waiting when its options are read before its workspace opens
-- (mcp.on_stdio; docs/benchmarks.md, Start-up): the answer needs none of
-- the roots and policies. Everything else waits for the open, as before;
-- --strict-start and --landlock open first. The order is seen in one
-- stream: stdout and stderr to the same file, where the banner (written
-- once the workspace opened) falls between the answers.

local H = require "helpers"
local json = H.json

local INIT = json.encode { jsonrpc = "2.0", id = 1, method = "initialize", params = {
  protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "busted", version = "1" } } }
local INITIALIZED = json.encode { jsonrpc = "2.0", method = "notifications/initialized" }
local LIST = json.encode { jsonrpc = "2.0", id = 2, method = "tools/list" }

local function call(id, name, args)
  return json.encode { jsonrpc = "2.0", id = id, method = "tools/call", params = { name = name, arguments = args } }
end

-- `burrow mcp ARGS` as a shell command, and a scratch directory holding
-- the lines for its stdin (file "in").
local function command(args, lines)
  local tmp = H.tmpdir()
  H.write(tmp, "in", table.concat(lines, "\n") .. "\n")
  local parts = { H.q(H.BURROW), "mcp" }
  for _, a in ipairs(args) do parts[#parts + 1] = H.q(a) end
  return table.concat(parts, " "), tmp
end

-- `burrow mcp ARGS` with lines waiting on stdin (a file) before it starts:
-- its stdout and stderr as one stream, as lines; the exit status.
local function waiting(args, lines)
  local cmd, tmp = command(args, lines)
  local _, _, code = H.run(("timeout 60 %s < %s > %s 2>&1"):format(cmd, H.q(tmp .. "/in"), H.q(tmp .. "/out")))
  local out = {}
  for line in (H.read(tmp, "out") or ""):gmatch("[^\n]+") do out[#out + 1] = line end
  return out, code
end

-- The index in lines of the first that starts with prefix (plain), or nil.
local function at(lines, prefix)
  for i, l in ipairs(lines) do
    if l:sub(1, #prefix) == prefix then return i end
  end
end

-- The reply with this id among the lines, decoded.
local function reply(lines, id)
  local i = at(lines, ('{"id":%d,'):format(id))
  return i and json.decode(lines[i]), i
end

-- `burrow mcp ARGS` whose stdin is a FIFO written only once the banner is
-- on stderr (the workspace open): the initialize request comes late.
-- Returns the replies by id and stderr.
local function late(args, lines)
  local cmd, tmp = command(args, lines)
  local script = ([[
set -e
cd %s
mkfifo fifo
timeout 60 %s < fifo > out 2> err &
pid=$!
exec 3> fifo
n=0
until grep -q 'Ctrl-D' err; do n=$((n + 1)); [ $n -lt 6000 ] || exit 9; sleep 0.01; done
cat in >&3
exec 3>&-
wait $pid
]]):format(H.q(tmp), cmd)
  local _, ok = H.run("sh -c " .. H.q(script))
  assert.is_true(ok, "the late client's script failed")
  local by_id = {}
  for line in (H.read(tmp, "out") or ""):gmatch("[^\n]+") do
    local m = json.decode(line)
    if type(m) == "table" and m.id ~= nil then by_id[m.id] = m end
  end
  return by_id, H.read(tmp, "err") or ""
end

describe(H.tag("mcp over stdio: an initialize waiting at the start"), function()
  local dir

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "a.txt", "alpha\n")
  end)

  after_each(H.cleanup)

  it("is answered before the workspace opens; the requests after it wait for the open", function()
    local lines, code = waiting({ "--root", dir }, { INIT, INITIALIZED, LIST, call(3, "read_file", { path = "a.txt" }) })
    assert.equal(0, code, table.concat(lines, "\n"))
    local init, i_init = reply(lines, 1)
    local banner = at(lines, "burrow ")
    local list, i_list = reply(lines, 2)
    local read = reply(lines, 3)
    assert.is_truthy(init and banner and list and read, table.concat(lines, "\n"))
    assert.equal(1, i_init) -- the first line of all
    assert.is_true(banner > i_init and i_list > banner, table.concat(lines, "\n"))
    assert.equal("2025-06-18", init.result.protocolVersion)
    assert.equal("burrow", init.result.serverInfo.name)
    assert.is_truthy(#list.result.tools > 0)
    assert.matches("alpha", read.result.content[1].text, 1, true)
  end)

  it("answers as a late initialize is answered: the same result, the same session", function()
    -- a policy that names the session in its denial: the record the
    -- early answer made is the one the calls run in, with the same name
    H.write(dir, "p/who.lua", [[return { check = function(req)
      if req.tool == "read_file" then return "deny", "session " .. tostring(req.session) end
      return "allow"
    end }]])
    H.write(dir, "c.yaml", ("roots: [%s]\npolicies: [%s]\n"):format(json.encode(dir), json.encode(dir .. "/p/who.lua")))
    local msgs = { INIT, INITIALIZED, call(3, "read_file", { path = "a.txt" }) }
    local lines = waiting({ "--config", dir .. "/c.yaml" }, msgs)
    local early_init, i_init = reply(lines, 1)
    assert.equal(1, i_init, table.concat(lines, "\n"))
    local early_read = reply(lines, 3)
    local by_id, err = late({ "--config", dir .. "/c.yaml" }, msgs)
    assert.matches("Ctrl-D", err, 1, true)
    assert.is_truthy(by_id[1] and by_id[3], err)
    assert.same(by_id[1], early_init)
    assert.is_true(early_read.result.isError, lines[#lines])
    assert.matches("session %S+", early_read.result.content[1].text)
    assert.equal(by_id[3].result.content[1].text, early_read.result.content[1].text)
  end)

  it("is not answered first with --strict-start: the workspace opens before any answer", function()
    local lines, code = waiting({ "--strict-start", "--root", dir }, { INIT, LIST })
    assert.equal(0, code, table.concat(lines, "\n"))
    local _, i_init = reply(lines, 1)
    local banner = at(lines, "burrow ")
    assert.is_truthy(i_init and banner, table.concat(lines, "\n"))
    assert.is_true(banner < i_init, table.concat(lines, "\n"))
  end)

  it("with a configuration that does not load: answered first; then the banner says why, and so does each call", function()
    local lines, code = waiting({ "--root", dir .. "/missing" }, { INIT, INITIALIZED, call(3, "read_file", { path = "a.txt" }) })
    assert.equal(0, code, table.concat(lines, "\n"))
    local init, i_init = reply(lines, 1)
    assert.equal(1, i_init, table.concat(lines, "\n"))
    assert.equal("2025-06-18", init.result.protocolVersion)
    assert.is_truthy(at(lines, "burrow: the configuration did not load"), table.concat(lines, "\n"))
    local read = reply(lines, 3)
    assert.is_truthy(read, table.concat(lines, "\n"))
    assert.matches("missing", json.encode(read), 1, true)
  end)

  it("anything else first waits for the open: a request, a 2026-07-28 request, a line that is not JSON, one too large", function()
    local stateless = json.encode { jsonrpc = "2.0", id = 5, method = "tools/list", params = { _meta = H.META_2026 } }
    for _, case in ipairs {
      { first = LIST, id = 2, check = function(m) assert.is_truthy(m.result and #m.result.tools > 0) end },
      { first = stateless, id = 5, check = function(m) assert.is_truthy(m.result and #m.result.tools > 0) end },
      { first = "{not json", id = json.null, check = function(m) assert.equal(-32700, m.error.code) end },
      { first = '{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"pad":"' .. ("x"):rep(2000) .. '"}}',
        id = json.null, caps = { "--cap", "max_request_bytes=1KiB" },
        check = function(m) assert.equal(-32600, m.error.code); assert.matches("too large", m.error.message) end },
    } do
      local args = { "--root", dir }
      for _, c in ipairs(case.caps or {}) do args[#args + 1] = c end
      local lines = waiting(args, { case.first, INIT })
      local banner = at(lines, "burrow ")
      local first, i_first
      for i, l in ipairs(lines) do
        local m = l:sub(1, 1) == "{" and json.decode(l)
        if m and (m.id == case.id or (case.id == json.null and m.id == json.null)) then first, i_first = m, i break end
      end
      assert.is_truthy(banner and first, case.first:sub(1, 60) .. ":\n" .. table.concat(lines, "\n"))
      assert.is_true(banner < i_first, case.first:sub(1, 60) .. ":\n" .. table.concat(lines, "\n"))
      case.check(first)
      local init, i_init = reply(lines, 1) -- the initialize after it: in its turn
      assert.is_truthy(init and i_init > i_first, table.concat(lines, "\n"))
    end
  end)

  it("a late initialize (the workspace open before it came) is answered as before", function()
    local by_id, err = late({ "--root", dir }, { INIT, INITIALIZED, LIST })
    assert.matches("Ctrl-D", err, 1, true)
    assert.equal("2025-06-18", by_id[1].result.protocolVersion)
    assert.is_truthy(#by_id[2].result.tools > 0)
  end)
end)
