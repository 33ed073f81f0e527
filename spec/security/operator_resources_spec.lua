-- Operator resources (burrow.workspace.operator_resources, the config's `resources:`
-- list) over MCP stdio, in both eras: listed beside the files, read (text,
-- blob, a template's variables), completed; a resource's tool calls get the
-- client's limits whatever the URI's variables say; a resource file that
-- is not one fails the configuration.

local H = require "helpers"
local json = H.json
local serve = H.mcp_config

local META = H.META_2026

local FIXED = [[
return { uri = "notes://todo", name = "todo", title = "To do", mime_type = "text/markdown",
  read = function() return { text = "- ship it\n" } end }
]]
local LOGO = [[
return { uri = "brand://logo", name = "logo", mime_type = "image/png",
  read = function() return { blob = "iVBORw0KGgo=" } end }
]]
-- a template whose variable names a file: read through ctx:call
local DOC = [[
return { uri_template = "doc://{+path}", name = "doc", mime_type = "text/plain",
  read = function(vars, ctx)
    local r, msg = ctx:call("read_file", { path = vars.path })
    if not r then return nil, msg end
    return { text = r.content }
  end,
  complete = function(var, value) return var == "path" and { value .. "a.txt", value .. "b.txt" } or {} end }
]]

describe(H.tag("operator resources"), function()
  local dir, config

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "ws/a.txt", "alpha\n")
    H.write(dir, "ws/.env", "SECRET=1\n")
    H.write(dir, "outside.txt", "outside the root\n")
    H.write(dir, "fixed.lua", FIXED)
    H.write(dir, "logo.lua", LOGO)
    H.write(dir, "doc.lua", DOC)
    H.write(dir, "noenv.lua", 'return { name = "noenv", check = function(r)\n'
      .. '  if r.path:match("%.env$") then return "deny", "no env files" end\n  return "allow" end }\n')
    H.write(dir, "burrow.yaml", "roots: [ws]\npolicies: [default, ./noenv.lua]\nresources: [fixed.lua, logo.lua, doc.lua]\n")
    config = dir .. "/burrow.yaml"
  end)

  local function both(name, fn) H.both_eras(it, name, fn) end

  both("lists the fixed ones beside the files and the templates beside the roots', and reads them", function(req, pre)
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = req(1, "resources/list", {})
    msgs[#msgs + 1] = req(2, "resources/templates/list", {})
    msgs[#msgs + 1] = req(3, "resources/read", { uri = "notes://todo" })
    msgs[#msgs + 1] = req(4, "resources/read", { uri = "brand://logo" })
    msgs[#msgs + 1] = req(5, "resources/read", { uri = "doc://a.txt" })
    msgs[#msgs + 1] = req(6, "completion/complete", { ref = { type = "ref/resource", uri = "doc://{+path}" },
      argument = { name = "path", value = "x/" } })
    local r = serve(config, msgs)
    local uris = {}
    for _, e in ipairs(r[1].result.resources) do uris[e.uri] = e end
    assert.equal("To do", uris["notes://todo"].title)
    assert.equal("image/png", uris["brand://logo"].mimeType)
    assert.is_table(uris["file://" .. dir .. "/ws/a.txt"], "the files are listed too")
    local tmpl = {}
    for _, t in ipairs(r[2].result.resourceTemplates) do tmpl[t.uriTemplate] = t end
    assert.is_table(tmpl["doc://{+path}"])
    assert.is_table(tmpl["file://" .. dir .. "/ws/{+path}"])
    assert.same({ uri = "notes://todo", mimeType = "text/markdown", text = "- ship it\n" }, r[3].result.contents[1])
    assert.equal("iVBORw0KGgo=", r[4].result.contents[1].blob)
    assert.equal("1\talpha\n", r[5].result.contents[1].text)
    assert.same({ "x/a.txt", "x/b.txt" }, r[6].result.completion.values)
  end)

  both("a template's variables get the client's limits: no path outside the roots, no file a policy denies", function(req, pre)
    local msgs = { table.unpack(pre) }
    local tries = { "doc://../outside.txt", "doc://" .. dir .. "/outside.txt", "doc://.env", "doc://a.txt/../../outside.txt" }
    for i, u in ipairs(tries) do msgs[#msgs + 1] = req(i, "resources/read", { uri = u }) end
    msgs[#msgs + 1] = req(10, "resources/subscribe", { uri = "notes://todo" })
    local r = serve(config, msgs)
    for i, u in ipairs(tries) do
      local text = json.encode(r[i])
      assert.is_table(r[i].error, u .. ": " .. text)
      assert.equal(-32602, r[i].error.code, text)
      assert.is_nil(text:find("outside the root\\n", 1, true), u)
      assert.is_nil(text:find("SECRET", 1, true), u)
    end
    -- the session era takes a subscription to an operator resource that
    -- watches nothing (never reported); 2026-07-28 has no resources/subscribe
    if #pre > 0 then assert.same({}, r[10].result, json.encode(r[10]))
    else assert.is_table(r[10].error, json.encode(r[10])) end
  end)

  -- A resource's watch (what a subscription to it watches) is resolved as
  -- a file subscription is: a template's variables cannot lead it out of
  -- the roots or to a file the policies deny.
  it("a subscription's watch path stays beneath the roots and under the policies", function()
    H.write(dir, "w.lua", 'return { uri_template = "w://{+p}", name = "w", watch = "{+p}",\n'
      .. '  read = function() return { text = "x" } end }\n')
    H.write(dir, "w.yaml", "roots: [ws]\npolicies: [default, ./noenv.lua]\nresources: [w.lua]\n")
    local tries = { "w://../outside.txt", "w://" .. dir .. "/outside.txt", "w://.env", "w://a.txt/../../outside.txt" }
    local msgs = { { id = "init", method = "initialize", params = { protocolVersion = "2025-11-25", capabilities = {},
      clientInfo = { name = "busted", version = "1" } } } }
    for i, u in ipairs(tries) do msgs[#msgs + 1] = { id = i, method = "resources/subscribe", params = { uri = u } } end
    msgs[#msgs + 1] = { id = 9, method = "resources/subscribe", params = { uri = "w://a.txt" } }
    local r = serve(dir .. "/w.yaml", msgs)
    for i, u in ipairs(tries) do
      assert.is_table(r[i].error, u .. ": " .. json.encode(r[i]))
    end
    assert.same({}, r[9].result, "the control: a file under the root is watched")
  end)

  it("a listen (MCP 2026-07-28) watches an operator resource's path as a subscribe does: beneath the roots, under the policies", function()
    H.write(dir, "w.lua", 'return { uri_template = "w://{+p}", name = "w", watch = "{+p}",\n'
      .. '  read = function() return { text = "x" } end }\n')
    H.write(dir, "fixed.lua", FIXED) -- watches nothing: honoured, never reported
    H.write(dir, "w.yaml", "roots: [ws]\npolicies: [default, ./noenv.lua]\nresources: [w.lua, fixed.lua]\n")
    local tries = { "w://../outside.txt", "w://" .. dir .. "/outside.txt", "w://.env", "w://a.txt/../../outside.txt" }
    local uris = { "w://a.txt", "notes://todo" }
    for _, u in ipairs(tries) do uris[#uris + 1] = u end
    local tmp = H.tmpdir()
    H.write(tmp, "in", json.encode { jsonrpc = "2.0", id = "L", method = "subscriptions/listen",
      params = { notifications = { resourceSubscriptions = json.array(uris) }, _meta = META } } .. "\n")
    H.run(("timeout 60 %s mcp --config %s < %s > %s 2>/dev/null"):format(H.q(H.BURROW), H.q(dir .. "/w.yaml"),
      H.q(tmp .. "/in"), H.q(tmp .. "/out")))
    local ack
    for line in (H.read(tmp, "out") or ""):gmatch("[^\n]+") do
      local m = json.decode(line)
      if type(m) == "table" and m.method == "notifications/subscriptions/acknowledged" then ack = m end
    end
    assert.is_table(ack, H.read(tmp, "out"))
    assert.same({ "w://a.txt", "notes://todo" }, ack.params.notifications.resourceSubscriptions)
    local refused = {}
    for _, r in ipairs(ack.params._meta["burrow/refused"]) do refused[#refused + 1] = r.uri end
    assert.same(tries, refused)
  end)

  it("a resource file that is not one fails the configuration, saying what is wrong", function()
    local cases = {
      { "return 42", "must return a table" },
      { "return { name = 'x', read = function() end }", "exactly one of uri" },
      { "return { uri = 'file:///etc/passwd', name = 'x', read = function() end }", "file:// URIs are the roots'" },
      { "return { uri = 'no scheme', name = 'x', read = function() end }", "must be a URI with a scheme" },
      { "return { uri_template = 'x://{a}/{b', name = 'x', read = function() end }", "only {name} and {+name}" },
      { "return { uri_template = 'x://fixed', name = 'x', read = function() end }", "has no {variable}" },
      { "return { uri = 'x://a', name = 'x' }", "read must be a function" },
      { "return { uri = 'x://a', name = 'x', watch = 5, read = function() end }", "watch must be the path of a file or folder" },
    }
    for _, c in ipairs(cases) do
      H.write(dir, "bad.lua", c[1])
      H.write(dir, "bad.yaml", "roots: [ws]\nresources: [bad.lua]\n")
      local r, err = serve(dir .. "/bad.yaml", { { id = 1, method = "resources/read", params = { uri = "x://a", _meta = META } } })
      assert.matches(c[2], err, 1, true)
      assert.is_table(r[1].error, c[1])
    end
    H.write(dir, "twice.yaml", "roots: [ws]\nresources: [fixed.lua, fixed.lua]\n")
    local _, err = serve(dir .. "/twice.yaml", { { id = 1, method = "ping" } })
    assert.matches("resource notes://todo is defined twice", err, 1, true)
  end)

  it("a read that returns the wrong shape is -32603 to the client, the details on stderr", function()
    H.write(dir, "odd.lua", "return { uri = 'x://odd', name = 'odd', read = function() return { text = 'a', blob = 'b' } end }")
    H.write(dir, "bad64.lua", "return { uri = 'x://b64', name = 'b64', read = function() return { blob = '!!!' } end }")
    H.write(dir, "boom.lua", "return { uri = 'x://boom', name = 'boom', read = function() error('kaboom') end }")
    H.write(dir, "odd.yaml", "roots: [ws]\nresources: [odd.lua, bad64.lua, boom.lua]\n")
    local r, err = serve(dir .. "/odd.yaml", {
      { id = 1, method = "resources/read", params = { uri = "x://odd", _meta = META } },
      { id = 2, method = "resources/read", params = { uri = "x://b64", _meta = META } },
      { id = 3, method = "resources/read", params = { uri = "x://boom", _meta = META } },
    })
    for id = 1, 3 do assert.equal(-32603, r[id].error.code, json.encode(r[id])) end
    assert.is_nil(json.encode(r[3]):find("kaboom", 1, true), "the error's text stays on the server")
    assert.matches("kaboom", err, 1, true)
  end)
end)

-- An operator resource that asks the client (ctx:ask) in 2026-07-28:
-- input_required rounds whose signed state names the URI, in one process
-- (the state's key is the process's own).
describe(H.tag("an operator resource's questions to the client (MRTR)"), function()
  local dir, ws, request
  local ASKS = [[
return { uri_template = "ask://{name}", name = "asks", mime_type = "text/plain",
  read = function(vars, ctx)
    local r, why = ctx:ask("who", "elicitation/create", { message = "Who?",
      requestedSchema = { type = "object", properties = { who = { type = "string" } } } })
    if not r then return nil, why end
    return { text = vars.name .. " for " .. tostring(r.content.who) }
  end }
]]

  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "ws/a.txt", "a\n")
    H.write(dir, "asks.lua", ASKS)
    ws = assert(H.burrow.open { roots = { { path = dir .. "/ws" } }, resources = { dir .. "/asks.lua" } })
    request = H.inproc_mcp(ws)
  end)
  after_each(function() ws:close() H.cleanup() end)

  local function read(_, params, meta) return request("resources/read", params, meta) end

  it("asks, then answers the retry; another URI's state, a tampered one or none are refused", function()
    local r1 = read(1, { uri = "ask://x" }).result
    assert.equal("input_required", r1.resultType)
    local answer = { who = { action = "accept", content = { who = "me" } } }
    local r2 = read(2, { uri = "ask://x", requestState = r1.requestState, inputResponses = answer }).result
    assert.equal("x for me", r2.contents[1].text)
    for i, p in ipairs {
      { uri = "ask://y", requestState = r1.requestState, inputResponses = answer },
      { uri = "ask://x", requestState = r1.requestState:gsub("^.", function(c) return c == "e" and "f" or "e" end), inputResponses = answer },
      { uri = "ask://x", inputResponses = answer },
    } do
      local m = read(10 + i, p)
      assert.is_nil(m.result, H.json.encode(m))
      assert.equal(-32602, m.error.code)
    end
    local m = read(20, { uri = "ask://x" }, H.META_2026)
    assert.equal(-32021, m.error.code)
  end)
end)
