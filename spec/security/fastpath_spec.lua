-- The small-call fast paths (issue 12) give an agent nothing a direct call
-- is denied: arguments the schema refuses are refused through the compiled
-- check too (the same code and message as the checker's), over MCP as in
-- process; a tool name is looked up among the native tools, never turned
-- into a file to load (tools load when first named); a closed handle
-- stays closed after its resolution went back to the spare pool.

local F = require "security.fixture"
local schema = require "burrow.toolkit.schema"
local json = require("burrow.core").json

-- Arguments an agent could send, as JSON: each is refused by the checker.
local BAD = {
  read_file = {
    '{"path":"file.txt","limit":0}', '{"path":"file.txt","limit":1e300}', '{"path":"file.txt","limit":-1}',
    '{"path":"file.txt","limit":9007199254740992}', '{"path":"file.txt","offset":0.5}',
    '{"path":"file.txt","encoding":"raw"}', '{"path":["file.txt"]}', '{"path":{"0":"x"}}',
    '{"path":null}', '{}', '{"path":"file.txt","extra":1}', '{"path":"file.txt","notebook":"no"}',
    '{"path":"file.txt","limit":"5"}', '{"path":"file.txt","limit":[5]}',
  },
  write_file = {
    '{"path":"new.txt"}', '{"path":"new.txt","content":5}', '{"path":"new.txt","content":"x","encoding":"hex"}',
    '{"path":"new.txt","content":"x","x":null,"y":1}',
  },
  grep = {
    '{"path":".","pattern":5}', '{"path":".","max_results":-3}', '{"path":".","pattern":"a","output_mode":"lines"}',
  },
}

describe(F.tag("security: small-call fast paths"), function()
  local fx, ws

  lazy_setup(function()
    fx = F.build()
    ws = F.open({{path = fx.ws, mode = "rw"}})
  end)

  lazy_teardown(function()
    if ws then ws:close() end
    F.cleanup(fx)
  end)

  it("arguments the checker refuses are refused, with its words, and nothing is written", function()
    for tool, list in pairs(BAD) do
      local s = ws:tool(tool).input_schema
      for _, text in ipairs(list) do
        local args = json.decode(text)
        local want = schema.validate(s, json.decode(text))
        assert(want, tool .. " " .. text .. ": the checker accepts it; not a bad case")
        assert.is_false(schema.fits(s, args), tool .. " " .. text)
        local res, msg, code = ws:call(tool, args)
        assert.is_nil(res, tool .. " " .. text)
        assert.equal("INVALID_ARGUMENT", code, tool .. " " .. text)
        assert.matches(want, msg, 1, true)
      end
    end
    assert.is_false(F.exists(fx.ws .. "/new.txt"), "a refused write_file wrote")
  end)

  it("a tool name is never a file to load: unknown and path-like names are unknown tools", function()
    for _, name in ipairs { "../policy/default", "../../burrow/init", "/etc/passwd", "packs/codex", "read_file.lua",
      "__index", "" } do
      assert.is_nil(ws:tool(name), name)
      assert.is_nil(rawget(ws.tool_by_name, name), name)
      local res, _, code = ws:call(name, {})
      assert.is_nil(res)
      assert.equal("INVALID_ARGUMENT", code, name)
    end
  end)

  it("a closed handle stays closed when its resolution is reused by the next one", function()
    local roots = ws.roots
    local idx, rel = roots:map("file.txt")
    local h = assert(roots:handle(idx, rel, false))
    local root = h:root()
    h:close()
    local h2 = assert(roots:handle(roots:map("sub/file.txt")))
    assert.equal(root, h:root()) -- kept, not read from the reused block
    assert.has_error(function() roots:read(h, nil, 1024) end)
    local f = assert(roots:read(h2, nil, 1024))
    assert.equal(F.SUBFILE, f:lines(1, 100, 1000, 1 << 20, true):gsub("^1\t", ""))
    h2:close()
  end)
end)
