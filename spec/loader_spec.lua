-- require's Lua-file searcher in the burrow binary (api.c search_lua: each
-- module file opened once) answers as the stock one: found files with
-- their path, a BOM and a '#' first line skipped (line numbers kept),
-- bytecode, load errors and the "no file" list. Run through build/burrow
-- with BURROW_LUA_DIR on a tree whose burrow/transport/cli.lua does the requires.

local H = require "helpers"

describe(H.tag("require in the burrow binary"), function()
  after_each(function() H.cleanup() end)

  it("finds, loads and refuses modules as the stock searcher", function()
    local dir = H.tmpdir()
    H.write_all(dir, {
      ["burrow/transport/cli.lua"] = [[
local out = {}
local long = "long." .. ("a"):rep(100) .. "." .. ("b"):rep(100) .. "." .. ("c"):rep(100) -- past the C buffers
for _, n in ipairs { "nosuch.mod", "m.bang", "m.bom", "m.bad", "m", "m.bc", "m.empty", "m.err", long, long .. "x" } do
  local ok, r, f = pcall(require, n)
  out[#out + 1] = ("%s|%s|%s|%s"):format(n, tostring(ok), tostring(r), tostring(f))
end
io.stdout:write(table.concat(out, "\n"), "\n")
return function() return 0 end
]],
      ["m/bang.lua"] = "#!/usr/bin/lua\nreturn debug.getinfo(1, 'l').currentline\n",
      ["m/bom.lua"] = "\239\187\191return 'bom'\n",
      ["m/bad.lua"] = "return +\n",
      ["m/init.lua"] = "return 'init'\n",
      ["m/empty.lua"] = "",
      ["m/err.lua"] = "error('boom')\n",
      ["m/bc.lua"] = string.dump(load("return 'bc'")),
      ["long/" .. ("a"):rep(100) .. "/" .. ("b"):rep(100) .. "/" .. ("c"):rep(100) .. ".lua"] = "return 'long'\n",
    })
    local out, err, code = H.run(("BURROW_LUA_DIR=%s %s 2>&1"):format(H.q(dir), H.q(H.BURROW)))
    assert.equal(0, code, err)
    local got = {}
    for line in out:gmatch("[^\n]+") do got[#got + 1] = line end
    local text = table.concat(got, "\n")
    local d = dir
    assert.truthy(text:find("nosuch.mod|false|module 'nosuch.mod' not found:\n\tno field package.preload['nosuch.mod']\n\tno file '"
      .. d .. "/nosuch/mod.lua'\n\tno file '" .. d .. "/nosuch/mod/init.lua'\n\tno file '", 1, true), text)
    assert.truthy(text:find("m.bang|true|2|" .. d .. "/m/bang.lua", 1, true), text)
    assert.truthy(text:find("m.bom|true|bom|" .. d .. "/m/bom.lua", 1, true), text)
    assert.truthy(text:find("m.bad|false|error loading module 'm.bad' from file '" .. d .. "/m/bad.lua':\n\t"
      .. d .. "/m/bad.lua:1: unexpected symbol near '+'|nil", 1, true), text)
    assert.truthy(text:find("\nm|true|init|" .. d .. "/m/init.lua", 1, true), text)
    assert.truthy(text:find("m.bc|true|bc|" .. d .. "/m/bc.lua", 1, true), text)
    assert.truthy(text:find("m.empty|true|true|" .. d .. "/m/empty.lua", 1, true), text)
    assert.truthy(text:find("m.err|false|" .. d .. "/m/err.lua:1: boom|nil", 1, true), text)
    -- a name too long for the searcher's buffers: the same answers
    local lp = ("a"):rep(100) .. "/" .. ("b"):rep(100) .. "/" .. ("c"):rep(100)
    local ln = ("a"):rep(100) .. "." .. ("b"):rep(100) .. "." .. ("c"):rep(100)
    assert.truthy(text:find("long." .. ln .. "|true|long|" .. d .. "/long/" .. lp .. ".lua", 1, true), text)
    assert.truthy(text:find("long." .. ln .. "x|false|module 'long." .. ln .. "x' not found:\n\tno field package.preload['long."
      .. ln .. "x']\n\tno file '" .. d .. "/long/" .. lp .. "x.lua'\n\tno file '" .. d .. "/long/" .. lp .. "x/init.lua'", 1, true), text)
  end)
end)

describe(H.tag("core.loadfile"), function()
  after_each(function() H.cleanup() end)

  it("gives loadfile's results and messages for a named file", function()
    local dir = H.tmpdir()
    H.write_all(dir, {
      ["ok.lua"] = "#!/bin/lua\nlocal a = ... return a, x, debug.getinfo(1, 'l').currentline\n",
      ["bad.lua"] = "return +\n",
      ["bom.lua"] = "\239\187\191return 'bom'\n",
    })
    H.write(dir, "bc.lua", string.dump(load("return 'bc'")))
    for _, name in ipairs { "ok.lua", "bad.lua", "bom.lua", "bc.lua", "missing.lua" } do
      local f = dir .. "/" .. name
      for _, mode in ipairs { "bt", "t", "b" } do
        local env = { x = 7, debug = debug }
        local a1, b1 = loadfile(f, mode, env)
        local a2, b2 = H.core.loadfile(f, mode, env)
        assert.equal(type(a1), type(a2), name .. " " .. mode)
        assert.equal(b1, b2, name .. " " .. mode)
        if a1 then assert.same({ a1("arg") }, { a2("arg") }) end
      end
    end
    assert.same({ "arg", 7, 2 }, { H.core.loadfile(dir .. "/ok.lua", nil, { x = 7, debug = debug })("arg") })
    assert.same({ "arg", nil, 2 }, { H.core.loadfile(dir .. "/ok.lua")("arg") })
  end)
end)
