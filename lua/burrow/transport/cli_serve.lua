-- burrow.transport.cli_serve: `burrow mcp`, apart from burrow.transport.cli so
-- that a one-shot `burrow call` does not load the server's start (--landlock,
-- the http: section, the banner, SIGHUP's reopen; docs/benchmarks.md, Start-up).
-- cli.lua hands it open, options and collect.

-- `burrow` (the workspace's modules) is required once the initialize a
-- client sent with the start is answered (serve.mcp)
local function burrow() return require "burrow" end
local core = require "burrow.core"

local serve = {}

-- The config's http section, or nil, and the file as loaded (for the
-- options: one read of it a start). A file with an http: section is a
-- network configuration: any error in it stops the start (exit 2), with or
-- without --http, and it needs http.listen unless --http gives the
-- address; a stdio server is never started from it by mistake.
local function http_config(o)
  if not o.config then return nil end
  local config = require "burrow.config"
  local opts, err = config.load(o.config)
  if not opts then
    if config.is_network(o.config) then
      error({ fail = err .. "\n(a configuration with an http: section must load: nothing was started)" })
    end
    return nil -- over stdio the client sees why on each call (or --strict-start exits)
  end
  local hc = opts.http
  if hc and not (hc.listen or o.http) then
    error({ fail = ("%s: http.listen is required to serve it (or pass --http HOST:PORT): a file with an http: section is a network configuration"):format(o.config) })
  end
  return hc, opts
end

-- Words as a POSIX shell reads them back: any with a character outside
-- [%w@%%+=:,./_-] single-quoted. (One anchored match a word: a search for
-- a character outside the set tried the pattern at each position.)
local function shell_words(words)
  local out = {}
  for i, w in ipairs(words) do
    w = tostring(w)
    out[i] = w:find("^[%w@%%+=:,./_-]+$") and w or "'" .. w:gsub("'", "'\\''") .. "'"
  end
  return table.concat(out, " ")
end

function serve.mcp(o, shared)
  local open, options, collect = shared.open, shared.options, shared.collect
  if #o.args > 0 then error({ usage = "mcp takes no arguments" }) end
  local hc, loaded = http_config(o)
  if o.http or (hc and hc.listen) then
    if o.landlock then error({ usage = "--landlock is for stdio; confine the HTTP server with its service unit (docs/deploy.md)" }) end
    collect()
    local ok, err = require("burrow.transport.http").serve(o, hc, o.http)
    if not ok then error({ fail = err }) end
    return 0
  end
  -- the process's state store: budgets outlive a reload (SIGHUP)
  o.state = core.state()
  -- SIGHUP: the same command line's workspace, built again from the files
  local function reopen()
    local ok, opts = pcall(options, o)
    if not ok then return nil, type(opts) == "table" and (opts.fail or opts.usage) or tostring(opts) end
    if not opts.state_config then opts.state = o.state end
    return burrow().open(opts)
  end
  -- the options (the config file as http_config loaded it: read once), then
  -- the initialize request a client sent as it started this process is
  -- answered before the workspace opens, whose roots and policies its
  -- answer does not need (mcp.on_stdio; docs/benchmarks.md, Start-up).
  -- Not with --strict-start or --landlock, whose start fails, or confines
  -- the process, before any answer; nor when the options do not load
  -- (then the open below says why, as before).
  local read, got = pcall(options, o, loaded)
  local opts, server = read and got or nil, nil
  if opts and not (o.strict_start or o.landlock) then
    local caps = require("burrow.base.caps").merge(opts.caps)
    if caps then server = require("burrow.mcp").on_stdio(caps.max_request_bytes, { reopen = reopen }) end
  end
  local ok, ws = pcall(open, o, opts)
  local unavailable = false
  if not ok then
    -- fail closed but visible: the client connects and each call says why
    -- (not with --landlock: a reload must not serve roots unconfined)
    local e = ws
    if o.strict_start or o.landlock or type(e) ~= "table" or not (e.fail or e.usage) then error(e, 0) end
    local msg = e.fail or e.usage
    -- what fixes it: a flag needs a restart; the file, a SIGHUP
    local how = e.fail and "fix the file and send SIGHUP"
      or "fix the command line and restart (a SIGHUP reloads files, not flags)"
    io.stderr:write("burrow: ", msg, "\nburrow: the configuration did not load: serving no root; every tool call fails with this error (", how,
      ", or use --strict-start to exit instead)\n")
    ws = require("burrow.transport.unavailable").new(msg)
    unavailable = true
  elseif o.landlock then
    require("burrow.transport.cli_landlock")(ws, o, opts) -- they loaded: the open took them
  end
  local mounts = {}
  for _, r in ipairs(ws:mounts()) do
    mounts[#mounts + 1] = r.mount .. (r.readonly and " (ro)" or " (rw)")
  end
  -- one write (stderr is unbuffered: a write a piece)
  io.stderr:write(("burrow %s: MCP over stdio, serving %s with %d tools (resolver %s); Ctrl-D or close stdin to stop\n")
    :format(core.version, unavailable and "nothing (the configuration did not load)" or table.concat(mounts, ", "),
      ws.tool_count and ws:tool_count() or #ws:tools(), ws.resolver or burrow().set_resolver())
    -- stdout is the MCP stream: what a person who started this by hand
    -- does next, ending with the command line that starts this server
    -- again under the MCP Inspector (-- keeps its options from the
    -- Inspector's own)
    .. "burrow: stdout is the MCP stream, for a client that starts this command itself (README.md, \"Use it from an MCP client\");"
    .. " to try the tools by hand, in the MCP Inspector:\n"
    .. "  npx @modelcontextprotocol/inspector -- " .. shell_words(o.command_line or { "burrow", "mcp" }) .. "\n")
  if ws.state_down then
    io.stderr:write("burrow: warning: ", ws.state_down, "; serving all the same: calls that need the store ",
      "fail with STORE_UNAVAILABLE until it answers, the others are served\n")
  end
  server = server and server:attach(ws) or require("burrow.mcp").new(ws, { reopen = reopen })
  server:run(ws.caps.max_request_bytes, true) -- it restarts the collector (collect)
  server.ws:close()
  return 0
end

return serve
