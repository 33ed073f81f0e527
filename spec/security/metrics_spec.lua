-- The metrics listener (http.metrics, host/src/server/httpmetrics.c) as an
-- attack surface, on the resolver under test (the server inherits
-- BURROW_RESOLVER): what an agent sends (tool names, arguments, the codes
-- an operator's tool passes through from its arguments) never becomes a
-- label, nor grows the series without bound, nor breaks the exposition;
-- a tenant's name that needs escaping stays inside its label; a page of
-- another name rebound to 127.0.0.1 reads nothing; the MCP listener has
-- no /metrics. Also the format itself on the real output: each family's
-- HELP and TYPE once and before its samples, every sample line well
-- formed, histogram buckets cumulative with +Inf equal to _count. Drives
-- the real binary with curl.

local F = require "spec.security.fixture"
local json = require("burrow.core").json

local BIN = F.REPO .. "/build/burrow"
local TOKEN = "metrics-spec-token-5a6b7c"
local ODD = 'we "q" \\ x\nnext' -- a tenant's name with a quote, a backslash and a newline

describe(F.tag("the metrics listener: bounded labels, escaping, Host"), function()
  local base, url, murl, pid

  local function curl(args)
    local out = F.sh("curl -s -o " .. F.q(base .. "/body") .. " -w '%{http_code}' --max-time 20 " .. args)
    local f = io.open(base .. "/body", "rb")
    local body = f and f:read("a") or ""
    if f then f:close() end
    return tonumber(out), body
  end

  local function post(sid, msg)
    local h = "-H 'Content-Type: application/json' -H 'Accept: application/json' -H "
      .. F.q("Authorization: Bearer " .. TOKEN) .. " "
    if sid then h = h .. "-H " .. F.q("Mcp-Session-Id: " .. sid) .. " " end
    return curl("-X POST " .. h .. " --data-binary " .. F.q(json.encode(msg)) .. " " .. F.q(url))
  end

  local function session()
    local out = F.sh("curl -s -D - -o /dev/null --max-time 20 -X POST -H 'Content-Type: application/json' "
      .. "-H 'Accept: application/json' -H " .. F.q("Authorization: Bearer " .. TOKEN) .. " --data-binary "
      .. F.q('{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25",'
        .. '"capabilities":{},"clientInfo":{"name":"spec","version":"1"}}}') .. " " .. F.q(url))
    return (assert(out:match("[Mm]cp%-[Ss]ession%-[Ii]d: (%x+)"), out))
  end

  local function call(sid, tool, args)
    return post(sid, { jsonrpc = "2.0", id = 2, method = "tools/call", params = { name = tool, arguments = args } })
  end

  local function scrape()
    local status, body = curl(F.q(murl))
    assert.equal(200, status, body)
    return body
  end

  setup(function()
    base = F.sh("mktemp -d"):gsub("%s+$", "")
    F.sh(("mkdir -p %s/ws %s/wq && printf 'alpha\\n' > %s/ws/a.txt"):format(F.q(base), F.q(base), F.q(base)))
    -- an operator's tool that fails with the code its arguments name: the
    -- code label is then an agent's string, and must stay bounded
    local f = assert(io.open(base .. "/echo_code.lua", "w"))
    f:write([[return { name = "echo_code", description = "Test only: fail with the code given.",
  input_schema = { type = "object", properties = { code = { type = "string" } }, required = { "code" } },
  permissions = {}, risk = "low",
  handler = function(_, a) return nil, a.code .. ": as asked", a.code end }
]])
    f:close()
    f = assert(io.open(base .. "/q.yaml", "w"))
    f:write("roots: [wq]\n")
    f:close()
    local odd_yaml = json.encode(ODD) -- a JSON string is a YAML double-quoted scalar
    f = assert(io.open(base .. "/server.yaml", "w"))
    f:write(("roots: [ws]\ntools: [read_file, ./echo_code.lua]\nhttp:\n  access_log: \"off\"\n"
      .. "  metrics: {listen: \"127.0.0.1:0\"}\n  tenants:\n    %s: {config: q.yaml}\n"
      .. "  tokens:\n    - {sha256: %s}\n"):format(odd_yaml, (F.sh("printf %s " .. F.q(TOKEN) .. " | sha256sum"):match("^(%x+)"))))
    f:close()
    pid = F.sh(("%s mcp --config %s/server.yaml --http 127.0.0.1:0 >/dev/null 2>%s/log & echo $!")
      :format(F.q(BIN), F.q(base), F.q(base))):match("%d+")
    for _ = 1, 100 do
      local l = io.open(base .. "/log")
      local text = l and l:read("a") or ""
      if l then l:close() end
      url, murl = text:match("at (http://%S+/mcp)"), text:match("metrics at (http://%S+/metrics)")
      if url then break end
      F.sh("sleep 0.1")
    end
    assert(url and murl, "the server did not start")
  end)

  teardown(function()
    if pid then F.run("kill " .. pid .. " 2>/dev/null; sleep 0.2") end
    if base then F.run("rm -rf " .. F.q(base)) end
  end)

  it("keeps every agent string out of the labels, and the series bounded", function()
    local sid = session()
    local evil = 'evil"} 1\nburrow_fake_total 9\n#'
    local st, body = call(sid, evil, {})
    assert.equal(200, st)
    assert.matches("not found", body)
    for i = 1, 100 do call(sid, "probe_" .. i, {}) end
    call(sid, "read_file", { path = 'x"} 9\nburrow_fake_total 9' })
    call(sid, "read_file", { path = "a.txt" })
    -- codes not of burrow's form (first, while slots are free), then 60 distinct ones
    call(sid, "echo_code", { code = 'bad"code\n' })
    call(sid, "echo_code", { code = "lower" })
    for i = 1, 60 do call(sid, "echo_code", { code = "CODE_" .. i }) end
    local text = scrape()
    for _, needle in ipairs { "evil", "probe_", "burrow_fake", "x\\\"}", "bad", "lower" } do
      assert.is_nil(text:find(needle, 1, true), needle .. " is in the metrics")
    end
    assert.matches('burrow_unknown_tool_calls_total{tenant="default"} 101', text, 1, true)
    assert.matches('burrow_tool_calls_total{tenant="default",tool="read_file",outcome="ok"} 1', text, 1, true)
    assert.matches('burrow_tool_calls_total{tenant="default",tool="read_file",outcome="error",code="ENOENT"} 1', text, 1, true)
    -- the codes: at most 29 of their own (32 slots less ok and the two OTHERs), the rest OTHER
    local own, other = 0, 0
    for code, n in text:gmatch('burrow_tool_calls_total{tenant="default",tool="echo_code",outcome="error",code="([^"]+)"} (%d+)') do
      if code == "OTHER" then other = other + tonumber(n) else own = own + 1 end
    end
    assert.is_true(own <= 29, own .. " codes of their own")
    assert.equal(62, own + other, "every call counted once")
    local tools = {}
    for tool in text:gmatch('tool="([^"]*)"') do tools[tool] = true end
    assert.same({ read_file = true, echo_code = true }, tools)
  end)

  it("writes the exposition format: escaped labels, HELP and TYPE first, cumulative buckets", function()
    local text = scrape()
    -- the odd tenant's name, escaped inside its label on one line
    assert.matches('burrow_http_sessions{tenant="we \\"q\\" \\\\ x\\nnext"} 0', text, 1, true)
    local typed, helped, seen_sample = {}, {}, {}
    local buckets = {} -- series -> {last cumulative, +Inf}
    local counts = {}
    for line in text:gmatch("[^\n]+") do
      local kind, fam = line:match("^# (%u+) ([%w_:]+)")
      if kind == "HELP" then
        assert.is_nil(helped[fam], "HELP twice for " .. fam)
        helped[fam] = true
      elseif kind == "TYPE" then
        assert.is_true(helped[fam] == true, "TYPE before HELP for " .. fam)
        assert.is_nil(typed[fam], "TYPE twice for " .. fam)
        typed[fam] = line:match(" (%a+)$")
      else
        -- name, then {label="value",...} with \\ \" \n the only escapes, then a value
        local name, rest = line:match("^([%a_:][%w_:]*)(.*)$")
        assert.is_truthy(name, line)
        local labels = ""
        if rest:sub(1, 1) == "{" then
          local i = 2
          while rest:sub(i, i) ~= "}" do
            local lname, after = rest:match("^([%a_][%w_]*)=\"()", i)
            assert.is_truthy(lname, "a label at " .. i .. " of " .. line)
            i = after
            while true do
              local c = rest:sub(i, i)
              assert.is_true(c ~= "" and c ~= "\n", "an unterminated value in " .. line)
              if c == "\\" then
                assert.is_truthy(("\\\"n"):find(rest:sub(i + 1, i + 1), 1, true), "a bad escape in " .. line)
                i = i + 2
              elseif c == '"' then i = i + 1 break
              else i = i + 1 end
            end
            if rest:sub(i, i) == "," then i = i + 1 end
          end
          labels = rest:sub(1, i)
          rest = rest:sub(i + 1)
        end
        local value = rest:match("^ (%S+)$")
        assert.is_truthy(value and (tonumber(value) or value == "+Inf" or value == "NaN"), line)
        local fam2 = name:gsub("_bucket$", ""):gsub("_sum$", ""):gsub("_count$", "")
        local f = typed[name] and name or (typed[fam2] == "histogram" and fam2) or nil
        assert.is_truthy(f, "a sample before its TYPE: " .. line)
        seen_sample[f] = true
        if typed[f] == "histogram" then
          local series = labels:gsub(',?le="[^"]*"', ""):gsub("{}", "")
          if name:match("_bucket$") then
            local b = buckets[series] or { last = 0 }
            assert.is_true(tonumber(value) >= b.last, "buckets not cumulative: " .. line)
            b.last = tonumber(value)
            if labels:find('le="+Inf"', 1, true) then b.inf = b.last end
            buckets[series] = b
          elseif name:match("_count$") then counts[series] = tonumber(value) end
        end
      end
    end
    assert.equal("counter", typed.burrow_tool_calls_total)
    assert.equal("histogram", typed.burrow_tool_call_duration_seconds)
    assert.equal("gauge", typed.burrow_http_sessions)
    local fds, max = tonumber(text:match("\nprocess_open_fds (%d+)")), tonumber(text:match("\nprocess_max_fds (%d+)"))
    assert.is_true(fds > 3 and fds < max, ("open fds %s, their limit %s"):format(fds, max))
    assert.is_true(next(buckets) ~= nil, "a histogram series")
    for series, b in pairs(buckets) do assert.equal(b.inf, counts[series], series .. ": +Inf = _count") end
  end)

  it("answers only GET /metrics, only to a loopback Host; the MCP listener has no /metrics", function()
    assert.equal(403, (curl("-H 'Host: evil.example.com' " .. F.q(murl))))
    assert.equal(404, (curl(F.q((murl:gsub("/metrics$", "/mcp"))))))
    assert.equal(405, (curl("-X POST --data-binary x " .. F.q(murl))))
    local status, body = curl("-H " .. F.q("Authorization: Bearer " .. TOKEN) .. " " .. F.q((url:gsub("/mcp$", "/metrics"))))
    assert.equal(404, status)
    assert.is_nil(body:find("burrow_", 1, true))
  end)
end)
