-- burrow.cli_report: the commands that report rather than serve (burrow
-- tools, burrow check, burrow token), apart from burrow.cli so a `burrow
-- call` or `burrow mcp` does not load them (docs/benchmarks.md, Start-up).
-- cli: what they share with burrow.cli (open, options, in_file, SAMPLES,
-- SAMPLE_ORDER).

local burrow = require "burrow"
local core = require "burrow.core"
local json = core.json

local M = {}

local function sample_req(SAMPLES, op, r, rel)
  local s = SAMPLES[op]
  local base = r.mount == "/" and "" or r.mount
  return { tool = s.tool, operation = op, arg = "path", path = rel == "." and r.mount or base .. "/" .. rel,
    root = r.mount, readonly = r.readonly, rel = rel, resolved = rel, exists = s.exists,
    type = s.type, nlink = 1, size = s.size, session = "check" }
end

-- The root of an agent's path (relative: the first root's; absolute: the
-- mount it falls under, component-wise) and the path in it, or nil.
local function in_root(mounts, path)
  if path:sub(1, 1) ~= "/" then return 1, (path:gsub("^%./", "")) end
  local best, rel
  for i, r in ipairs(mounts) do
    local m = r.mount == "/" and "" or r.mount
    if path == r.mount then
      best, rel = i, "."
    elseif path:sub(1, #m + 1) == m .. "/" and not (best and #mounts[best].mount > #r.mount) then
      best, rel = i, path:sub(#m + 2)
    end
  end
  return best, rel
end

-- A tool's description, its first sentence, cut to fit a line.
local function summary(desc, width)
  local first = tostring(desc or ""):gsub("%s+", " "):match("^(.-[%.!?])%s") or tostring(desc or "")
  if #first > width then first = first:sub(1, width - 3):gsub("[\128-\191]*$", ""):gsub("[\192-\255]$", "") .. "..." end
  return first
end

-- A schema's arguments for people, one a line: name (type, required):
-- description; an object's or a list of objects' own, indented below.
local function argument_lines(out, schema, indent)
  local props = type(schema) == "table" and schema.properties
  if type(props) ~= "table" then return end
  local required, names = {}, {}
  for i, n in ipairs(schema.required or {}) do required[n] = i end
  for n in pairs(props) do names[#names + 1] = n end
  table.sort(names, function(a, b) -- the required ones first, in their order
    if (required[a] ~= nil) ~= (required[b] ~= nil) then return required[a] ~= nil end
    if required[a] then return required[a] < required[b] end
    return a < b
  end)
  for _, n in ipairs(names) do
    local p = props[n]
    local t = type(p.type) == "table" and table.concat(p.type, "|") or tostring(p.type or "any")
    local items = type(p.items) == "table" and p.items
    if items then t = t .. " of " .. tostring(items.type or "any") end
    if type(p.enum) == "table" then
      local e = {}
      for i, v in ipairs(p.enum) do e[i] = json.encode(v) end
      t = t .. ": " .. table.concat(e, "|")
    end
    if p.default ~= nil then t = t .. ", default " .. json.encode(p.default) end
    if required[n] then t = t .. ", required" end
    out[#out + 1] = ("%s%s (%s)%s"):format(indent, n, t,
      p.description and (": " .. tostring(p.description):gsub("%s+", " ")) or "")
    argument_lines(out, p, indent .. "  ")
    if items then argument_lines(out, items, indent .. "  ") end
  end
end

local function tool_name(t) return t.name or (t["function"] and t["function"].name) end

-- burrow tools NAME: that tool's description and arguments (its JSON in
-- the client's shape with --format).
local function one_tool(o, list, name)
  local tool
  for _, t in ipairs(list) do
    if tool_name(t) == name then tool = t end
  end
  if not tool then
    local names = {}
    for i, t in ipairs(list) do names[i] = tool_name(t) end
    error({ usage = ("unknown tool %q (the tools served: %s)"):format(name, table.concat(names, ", ")) })
  end
  if o.format then
    io.stdout:write(json.encode(tool), "\n")
    return 0
  end
  local ro = tool.annotations and tool.annotations.readOnlyHint
  local out = { ("%s (%s)"):format(tool.name, ro and "read-only" or "writes"), "", tostring(tool.description or ""), "", "arguments:" }
  local n = #out
  argument_lines(out, tool.inputSchema, "  ")
  if #out == n then out[#out + 1] = "  none" end
  out[#out + 1] = ""
  out[#out + 1] = ("burrow tools %s --format mcp|openai|anthropic prints its schema as JSON"):format(tool.name)
  io.stdout:write(table.concat(out, "\n"), "\n")
  return 0
end

-- burrow tools: a table for people (name, read-only or not, what it
-- does); --format mcp|openai|anthropic: the JSON a client gets. With a
-- NAME: that tool only.
function M.tools(o, cli)
  local open = cli.open
  if #o.args > 1 then error({ usage = "tools takes one tool name at most" }) end
  local ws = open(o)
  local list, err = ws:tools { format = o.format or "mcp" }
  ws:close()
  if not list then error({ usage = err }) end
  if o.args[1] then return one_tool(o, list, o.args[1]) end
  if o.format then
    io.stdout:write(json.encode(list), "\n")
    return 0
  end
  local w = 4
  for _, t in ipairs(list) do w = math.max(w, #t.name) end
  local out = { ("%-" .. w .. "s  %-5s  %s"):format("TOOL", "MODE", "WHAT IT DOES") }
  for _, t in ipairs(list) do
    local ro = t.annotations and t.annotations.readOnlyHint
    out[#out + 1] = ("%-" .. w .. "s  %-5s  %s"):format(t.name, ro and "read" or "write", summary(t.description, 100 - w))
  end
  out[#out + 1] = ("%d tools; burrow tools NAME describes one; --format mcp|openai|anthropic prints their schemas as JSON"):format(#list)
  io.stdout:write(table.concat(out, "\n"), "\n")
  return 0
end

-- Sizes as people write them: 262144 -> "256 KiB".
local function size_text(n)
  for _, u in ipairs { { 2 ^ 30, "GiB" }, { 2 ^ 20, "MiB" }, { 2 ^ 10, "KiB" } } do
    if n >= u[1] and n % u[1] == 0 then return ("%d %s"):format(n // u[1], u[2]) end
  end
  if n >= 10 ^ 6 and n % 10 ^ 6 == 0 then return ("%d MB"):format(n // 10 ^ 6) end
  return tostring(n)
end

-- Validate config, tools and policies by opening the workspace; print what
-- would be served.
function M.check(o, cli)
  local options, in_file, SAMPLES, SAMPLE_ORDER = cli.options, cli.in_file, cli.SAMPLES, cli.SAMPLE_ORDER
  if #o.args > 0 then error({ usage = "check takes no arguments" }) end
  local opts = options(o)
  local ws, err = burrow.open(opts)
  if not ws then error({ fail = o.config and in_file(o.config, err) or err }) end
  for _, sp in ipairs(o.samples or {}) do
    if not in_root(ws:mounts(), sp.path) then
      ws:close()
      error({ usage = ("--sample %s:%s: the path is under no root"):format(sp.op, sp.path) })
    end
  end
  local out = {}
  local function say(...) out[#out + 1] = table.concat({ ... }) end
  say("config: ", o.config or "none (defaults)")
  say("roots:")
  local hosts = opts.roots or { { path = "." } }
  for i, r in ipairs(ws:mounts()) do
    local host = hosts[i]
    host = type(host) == "table" and host.path or tostring(host)
    say("  ", r.mount, " (", r.readonly and "ro" or "rw", ")", host ~= r.mount and ("  <- " .. host) or "")
  end
  if ws.roots_from_client then say("roots_from_client: true (MCP: the client's roots within these)") end
  local names = {}
  for i, t in ipairs(ws:tools()) do names[i] = t.name end
  say(("tools (%d): "):format(#names), table.concat(names, ", "))
  local cap_names = {}
  for k in pairs(ws.caps) do cap_names[#cap_names + 1] = k end
  table.sort(cap_names)
  say("caps:")
  for _, k in ipairs(cap_names) do
    local v = ws.caps[k]
    say(("  %-18s %s"):format(k, (k:match("bytes$") or k:match("size$")) and size_text(v) or tostring(v)))
  end
  if ws.policies and ws.policies.names then
    local labels = ws.policies:names()
    for i, label in ipairs(labels) do -- each with its options (the engine's own list: protected comes first)
      local p = ws.policies.list[i]
      if p and type(p.options) == "table" and next(p.options) then
        labels[i] = label .. " " .. json.encode(p.options)
      end
    end
    say("policies: ", #labels > 0 and table.concat(labels, ", ") or "none")
    -- what the protected policy keeps agents from changing, rule by rule
    local prot = {}
    for _, spec in ipairs(ws.policies.rule_specs or {}) do
      local who = ws.policies.rule_of[spec.id]
      if who and who.policy == "protected" then
        local seen, globs = {}, {}
        for _, g in ipairs(spec.patterns) do
          local short = g:gsub("^%*%*/", ""):gsub("/%*%*$", "")
          if not seen[short] then seen[short], globs[#globs + 1] = true, short end
        end
        prot[#prot + 1] = ("  %-14s %s"):format((who.reason or ""):match("^([%w%-]+):") or "?", table.concat(globs, " "))
      end
    end
    if #prot > 0 then
      say("protected (agents may read these, never change them; protect: {except: [NAME]} lets a rule go):")
      for _, line in ipairs(prot) do say(line) end
    end
  end
  if opts.audit then
    say("audit: ", type(opts.audit) == "table" and opts.audit.file or opts.audit)
  end
  say("charsets: ", (ws.charsets or "utf-8,windows-1252"):gsub(",", ", "),
    ws.charsets and "" or " (the default)", " (text that is not UTF-8 and whose guess is not trusted)")
  say("resolver: ", ws.resolver or burrow.set_resolver())
  local problems = {}
  -- each policy's check() on sample requests (a read, a write, a delete, a
  -- listing in each root, and the --sample ones): one that raises or
  -- answers nonsense is named here, not at a client's first call; what
  -- each answered is printed
  local function try_policies(w, label, indent)
    if not (w.policies and w.policies.list) then return end
    local mounts = w:mounts()
    local reqs = {} -- {root index, req, shown}
    for i, r in ipairs(mounts) do
      for _, op in ipairs(SAMPLE_ORDER) do
        local rel = SAMPLES[op].rel
        reqs[#reqs + 1] = { i, sample_req(SAMPLES, op, r, rel), op }
      end
    end
    for _, sp in ipairs(o.samples or {}) do
      local i, rel = in_root(mounts, sp.path)
      if i then reqs[#reqs + 1] = { i, sample_req(SAMPLES, sp.op, mounts[i], rel), sp.op .. " " .. sp.path } end
    end
    for _, p in ipairs(w.policies.list) do
      for i, r in ipairs(mounts) do
        local answers = {}
        for _, q in ipairs(reqs) do
          if q[1] == i then
            local req, answer, detail = q[2], "allow", nil
            local rule = w.policies:rule(req.resolved, req.operation)
            if rule and rule.policy == p.label then
              answer = "deny (rule)"
            elseif not p.has_check then
              answer = "allow"
            elseif not w.policies:asks(p, req) then
              answer = "not asked (check_paths)"
            else
              answer, _, detail = w.policies:answer(p, req)
              if detail then
                answer = "FAILED"
                problems[#problems + 1] = ("%s%s (on a sample %s of %s)"):format(label, detail, req.operation, req.path)
              end
            end
            answers[#answers + 1] = q[3] .. " " .. answer
          end
        end
        say(indent, p.label, " on ", r.mount, ": ", table.concat(answers, ", "))
      end
    end
  end
  if ws.policies and ws.policies.list and #ws.policies.list > 0 then
    say("policy samples (each policy's check(); --sample OP:PATH asks about more):")
    try_policies(ws, "", "  ")
  end
  ws:close()
  -- the listener, its tenants and tokens: what burrow mcp would serve
  local hc = o.config and (require("burrow.config").load(o.config) or {}).http
  if hc then
    say("http: listen ", o.http or hc.listen or "(none: give --http HOST:PORT)", ", ", hc.workers or 2, " workers",
      hc.max_running and (", " .. hc.max_running .. " running per tenant") or "",
      ", access log ", hc.access_log or "stderr")
    if hc.metrics then
      say("  metrics: http://", hc.metrics.listen, "/metrics (Prometheus)", hc.metrics.allow_remote and ", allow_remote" or "")
    end
    local per = { default = 0 }
    for _, t in ipairs(hc.tokens or {}) do per[t.tenant or "default"] = (per[t.tenant or "default"] or 0) + 1 end
    say("  tenant default: this file's workspace, ", per.default, " token(s)")
    for _, t in ipairs(hc.tenants or {}) do
      local topts, terr = require("burrow.config").load(t.config)
      if topts and topts.http then
        terr = t.config .. " has an http: section of its own; a tenant's file holds its workspace only"
      end
      local tws
      if topts and not terr then
        topts.http = nil
        tws, terr = burrow.open(topts)
      end
      if not tws then
        problems[#problems + 1] = ("http.tenants.%s: %s"):format(t.name, terr)
      else
        local m = {}
        for _, r in ipairs(tws:mounts()) do m[#m + 1] = r.mount .. (r.readonly and " (ro)" or " (rw)") end
        say("  tenant ", t.name, ": ", t.config, ", roots ", table.concat(m, ", "), ", ", #tws:tools(), " tools, ",
          per[t.name] or 0, " token(s)")
        try_policies(tws, "tenant " .. t.name .. ": ", "    ")
        tws:close()
      end
    end
    local oc = hc.oauth
    if oc then -- the resource server: what clients are told, and what they need
      local _, meta = require("burrow.oauth").metadata_location(oc.audience)
      say("  oauth: access tokens of ", oc.issuer, " for ", oc.audience, " (metadata at ", meta, ")",
        oc.read_scope and (", scopes read " .. oc.read_scope) or "", oc.write_scope and (", write " .. oc.write_scope) or "",
        oc.tenant_claim and (", tenant from claim " .. oc.tenant_claim) or "",
        oc.introspection and ", opaque tokens introspected" or "")
    elseif #(hc.tokens or {}) == 0 then
      say("  no tokens: loopback only, no authentication")
    end
  end
  io.stdout:write(table.concat(out, "\n"), "\n")
  if #problems > 0 then
    for _, p in ipairs(problems) do io.stderr:write("burrow: ", p, "\n") end
    return 2
  end
  io.stdout:write("ok\n")
  return 0
end

-- burrow token hash|new: what http.tokens stores is the sha256 of a token.
function M.token(o)
  local sub, text = o.args[1], o.args[2]
  if sub == "new" and #o.args == 1 then
    local f = assert(io.open("/dev/urandom", "rb"))
    local raw = f:read(32)
    f:close()
    local token = raw:gsub(".", function(c) return ("%02x"):format(c:byte()) end)
    print("token:  " .. token)
    print("sha256: " .. require("burrow.server").token_hash(token))
    return 0
  end
  if sub ~= "hash" or #o.args > 2 then error({ usage = "token takes hash [TOKEN | -] or new" }) end
  if text == nil or text == "-" then text = (io.read("l") or "") end
  print(require("burrow.server").token_hash(text))
  return 0
end

return M
