-- A start that answers initialize loads only what initialize runs
-- (docs/benchmarks.md, Start-up): burrow.mcp, its session record, base
-- (where initialize is) and dispatch. The Server's methods of ask.lua,
-- call.lua and reload.lua come with the first call of one of them
-- (burrow.mcp's LATER); the other requests' files with their first
-- request (dispatch.lua's table of methods); a session's record as text
-- with session.encode, decode or undo_id; --landlock's file with the flag.
-- In a fresh process each time: this one's package.loaded has whatever
-- other specs loaded.

local H = require "helpers"

describe(H.tag("mcp: files loaded with their first use"), function()
  after_each(H.cleanup)

  it("mcp.LATER names exactly the Server's methods that ask.lua, call.lua and reload.lua add", function()
    local out, code = H.lua_child([[
      local mcp = require "burrow.mcp"
      local Server = require("burrow.mcp.base").Server
      assert(getmetatable(Server) == nil)
      local before = {}
      for k, v in pairs(Server) do before[k] = v end
      for name in pairs(mcp.LATER) do assert(type(Server[name]) == "function", name .. " has no stand-in") end
      assert(Server.no_such_method == nil)
      for _, f in ipairs { "ask", "call", "reload" } do
        assert(not package.loaded["burrow.mcp." .. f], f .. ".lua is loaded before its first call")
      end
      for _, load in pairs(mcp.LATER) do load() end
      local defined, listed = {}, {}
      for k, v in pairs(Server) do if before[k] ~= v then defined[#defined + 1] = k end end
      for k in pairs(mcp.LATER) do listed[#listed + 1] = k end
      table.sort(defined)
      table.sort(listed)
      print(table.concat(defined, " "))
      print(table.concat(listed, " "))
    ]], 60)
    assert.equal(0, code, out)
    local defined, listed = out:match("^([^\n]*)\n([^\n]*)\n$")
    assert.is_truthy(defined, out)
    assert.equal(listed, defined)
    assert.matches("run_tool", defined, 1, true)
    assert.matches("reload", defined, 1, true)
  end)

  it("a method a program wraps before its first call keeps its wrapper, whose stand-in reaches the definition", function()
    local out, code = H.lua_child([[
      require "burrow.mcp"
      local Server = require("burrow.mcp.base").Server
      local inner, seen = Server.meanwhile_ok, 0
      Server.meanwhile_ok = function(...) seen = seen + 1 return inner(...) end
      local a = Server.meanwhile_ok({}, { jsonrpc = "2.0", id = 1, method = "ping" }) -- call.lua loads
      local b = Server.meanwhile_ok({}, { jsonrpc = "2.0", id = 2, method = "ping" })
      local run = Server.run_tool ~= nil and debug.getinfo(Server.run_tool, "S").source:match("call%.lua$") ~= nil
      print("wrapped", seen, a, b, package.loaded["burrow.mcp.call"] ~= nil, run)
    ]], 60)
    assert.equal(0, code, out)
    assert.equal("wrapped\t2\ttrue\ttrue\ttrue\ttrue\n", out)
  end)

  it("a stand-in whose file does not define its name says so (no endless loop)", function()
    local out, code = H.lua_child([[
      local mcp = require "burrow.mcp"
      local Server = require("burrow.mcp.base").Server
      package.preload["burrow.mcp.reload"] = function() return true end -- a file that lost its method
      local ok, err = pcall(Server.reload, {})
      print(ok, err)
    ]], 60)
    assert.equal(0, code, out)
    assert.matches("^false\t.*the file of Server:reload does not define it", out)
  end)

  it("initialize loads none of them; tools/list, a notification, 2026-07-28 and a method of ask.lua load theirs", function()
    local dir = H.tmpdir()
    H.write(dir, "a.txt", "x\n")
    local out, code = H.lua_child(([[
      local json = require("burrow.core").json
      local burrow = require "burrow"
      local mcp = require "burrow.mcp"
      local ws = assert(burrow.open { roots = { %q } })
      local sent = {}
      local server = mcp.new(ws, { channel = mcp.channel(function(m) sent[#sent + 1] = json.encode(m) end) })
      local FILES = { "ask", "call", "reload", "session_text", "handlers", "stateless", "listen", "tasks",
        "resource_ops", "resources", "approvals" }
      local function loaded(step)
        local names = {}
        for _, f in ipairs(FILES) do
          if package.loaded["burrow.mcp." .. f] then names[#names + 1] = f end
        end
        print(step, #names > 0 and table.concat(names, ",") or "none")
      end
      loaded("start")
      server:handle { jsonrpc = "2.0", id = 1, method = "initialize",
        params = { protocolVersion = "2025-06-18", capabilities = {}, clientInfo = { name = "x", version = "1" } } }
      assert(server.no_such_field == nil and server.batch == nil)
      loaded("initialize")
      print("answer", sent[1])
      server:handle { jsonrpc = "2.0", id = 2, method = "tools/list" }
      assert(#json.decode(sent[2]).result.tools > 0)
      loaded("tools/list")
      server:handle { jsonrpc = "2.0", method = "notifications/progress", params = { progressToken = 1, progress = 1 } }
      loaded("notification")
      server:handle { jsonrpc = "2.0", id = 3, method = "server/discover",
        params = { _meta = { ["io.modelcontextprotocol/protocolVersion"] = "2026-07-28",
          ["io.modelcontextprotocol/clientCapabilities"] = {} } } }
      assert(json.decode(sent[3]).result.supportedVersions)
      loaded("discover")
      server:reload() -- mcp.new without reopen: nothing to reload
      loaded("reload")
      local session = require "burrow.mcp.session"
      assert(session.no_such_function == nil)
      assert(session.decode(session.encode(server.session)).protocol == "2025-06-18")
      loaded("text")
      ws:close()
    ]]):format(dir), 60)
    assert.equal(0, code, out)
    local lines = {}
    for l in out:gmatch("[^\n]+") do lines[#lines + 1] = l end
    assert.equal("start\tnone", lines[1], out)
    assert.equal("initialize\tnone", lines[2], out)
    -- the answer as it was when every file loaded at start
    assert.equal('answer\t{"id":1,"jsonrpc":"2.0","result":{"capabilities":{"completions":{},"experimental":'
      .. '{"io.modelcontextprotocol/resource-operations":{"directoryRead":false}},"extensions":'
      .. '{"io.modelcontextprotocol/resource-operations":{"directoryRead":false}},"logging":{},"prompts":{},'
      .. '"resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}},"instructions":'
      .. '"Filesystem tools sandboxed to the workspace roots. Paths are relative to the first root or absolute '
      .. 'under a root\'s mount.","protocolVersion":"2025-06-18","serverInfo":{"name":"burrow","title":'
      .. '"burrow filesystem tools","version":"' .. require("burrow.core").version .. '"}}}', lines[3])
    assert.equal("tools/list\task,call", lines[4], out)
    assert.equal("notification\task,call,handlers", lines[5], out)
    -- discover's capabilities name the tasks extension and ask listens (which use resources) whether lists change
    assert.equal("discover\task,call,handlers,stateless,listen,tasks,resources", lines[6], out)
    assert.equal("reload\task,call,reload,handlers,stateless,listen,tasks,resources", lines[7], out)
    assert.equal("text\task,call,reload,session_text,handlers,stateless,listen,tasks,resources", lines[8], out)
  end)

  it("burrow mcp's start loads --landlock's file only with the flag", function()
    local out, code = H.lua_child([[
      require "burrow.transport.cli_serve"
      print(package.loaded["burrow.transport.cli_landlock"] and "loaded" or "not loaded")
      assert(type(require "burrow.transport.cli_landlock") == "function")
    ]], 60)
    assert.equal(0, code, out)
    assert.equal("not loaded\n", out)
  end)
end)
