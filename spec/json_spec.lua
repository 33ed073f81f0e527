-- spec/json_spec.lua
-- The JSON binding of burrow.core (host/src/lua/ljson.c): decoding through
-- jansson, our own encoder, and the conventions the rest of burrow relies
-- on (null sentinel, array_mt, sorted keys, U+FFFD for invalid UTF-8).

local json = require("burrow.core").json

local FFFD = "\u{FFFD}"

-- encode(v) must raise an error whose message contains 'text'
local function encode_error(v, text)
  local ok, err = pcall(json.encode, v)
  assert.is_false(ok)
  assert.is_truthy(tostring(err):find(text, 1, true),
                   "expected '" .. text .. "' in: " .. tostring(err))
end

describe("burrow.core json", function()

  describe("module", function()
    it("exports decode, encode, null, array_mt and array", function()
      assert.is_function(json.decode)
      assert.is_function(json.encode)
      assert.is_function(json.array)
      assert.is_table(json.array_mt)
      assert.equal("userdata", type(json.null))
    end)

    it("keeps null in the registry as burrow.json.null", function()
      assert.equal(json.null, debug.getregistry()["burrow.json.null"])
    end)
  end)

  describe("valid", function()
    it("says whether a text is one JSON value as decode takes it, building nothing", function()
      for _, ok in ipairs { '{"a": [1, 2.5, "x", null, true]}', "3", '"s\\u0000"', "[]" } do
        assert.is_true(json.valid(ok), ok)
        assert.is_not_nil(json.decode(ok), ok)
      end
      for _, bad in ipairs { "[1,]", '{"a" 1}', "tru", "", '{"a": 1} x' } do
        local none, why = json.valid(bad)
        assert.is_nil(none, bad)
        assert.matches("json decode:", why, 1, true)
        assert.is_nil((json.decode(bad)), bad)
      end
    end)
  end)

  describe("decode", function()
    it("decodes scalars at the top level", function()
      assert.equal("hi", json.decode('"hi"'))
      assert.equal(true, json.decode("true"))
      assert.equal(false, json.decode("false"))
      assert.equal(json.null, json.decode("null"))
      assert.equal(42, json.decode("42"))
    end)

    it("turns objects into plain tables", function()
      local t = json.decode('{"a": 1, "b": {"c": "d"}}')
      assert.equal(1, t.a)
      assert.equal("d", t.b.c)
      assert.is_nil(getmetatable(t))
    end)

    it("gives arrays the array_mt metatable", function()
      local t = json.decode("[10, 20, [30]]")
      assert.equal(json.array_mt, getmetatable(t))
      assert.equal(json.array_mt, getmetatable(t[3]))
      assert.same({10, 20, {30}}, t)
    end)

    it("keeps JSON null inside arrays, so the length is right", function()
      local t = json.decode("[1, null, 3]")
      assert.equal(3, #t)
      assert.equal(json.null, t[2])
    end)

    it("keeps \\u0000 inside strings", function()
      local s = json.decode('"a\\u0000b"')
      assert.equal("a\0b", s)
      assert.equal(3, #s)
    end)

    it("decodes integers as exact 64-bit Lua integers", function()
      local n = json.decode("9007199254740993")
      assert.equal("integer", math.type(n))
      assert.equal(9007199254740993, n)
      assert.equal(math.maxinteger, json.decode("9223372036854775807"))
      assert.equal(math.mininteger, json.decode("-9223372036854775808"))
    end)

    it("decodes reals as Lua floats", function()
      assert.equal("float", math.type(json.decode("1.0")))
      assert.equal("float", math.type(json.decode("1e2")))
      assert.equal(0.1, json.decode("0.1"))
    end)

    it("returns nil and a message with the position on invalid JSON", function()
      local v, err = json.decode('{"a": [1, 2}')
      assert.is_nil(v)
      assert.matches("^json decode: ", err)
      assert.matches("line 1", err)
      assert.matches("column %d+", err)
      assert.is_nil((json.decode("")))
      assert.is_nil((json.decode("[1] x")))
    end)

    it("rejects invalid UTF-8 in the input", function()
      local v, err = json.decode('"a\xffb"')
      assert.is_nil(v)
      assert.matches("json decode: ", err)
      assert.is_nil((json.decode('"\xed\xa0\x80"')))  -- encoded surrogate
      assert.is_nil((json.decode('"\xc0\xaf"')))  -- overlong
    end)

    it("rejects integers outside 64 bits", function()
      local v, err = json.decode("9223372036854775808")
      assert.is_nil(v)
      assert.matches("json decode: ", err)
    end)

    it("fails cleanly on very deep nesting", function()
      local v, err = json.decode(string.rep("[", 100000))
      assert.is_nil(v)
      assert.matches("depth", err)
      v, err = json.decode(string.rep('{"a":', 100000))
      assert.is_nil(v)
      assert.is_string(err)
    end)

    it("accepts nesting up to 500 levels, what encode can write back inside a reply", function()
      local t = json.decode(string.rep("[", 500) .. string.rep("]", 500))
      for _ = 1, 499 do t = t[1] end
      assert.same({}, t)
      local deep = string.rep('{"a":', 500) .. "1" .. string.rep("}", 500)
      assert.equal(deep, json.encode({ id = json.decode(deep) }):sub(7, -2))
    end)

    it("refuses nesting deeper than 500 levels (found by fuzzing: an id too deep to echo)", function()
      local v, err = json.decode(string.rep("[", 501) .. string.rep("]", 501))
      assert.is_nil(v)
      assert.equal("json decode: nesting deeper than 500 levels", err)
    end)
  end)

  describe("encode", function()
    it("encodes scalars", function()
      assert.equal('"hi"', json.encode("hi"))
      assert.equal("true", json.encode(true))
      assert.equal("false", json.encode(false))
      assert.equal("null", json.encode(json.null))
      assert.equal("42", json.encode(42))
      assert.equal("-7", json.encode(-7))
    end)

    it("escapes quotes, backslashes and control characters", function()
      assert.equal([["a\"b\\c"]], json.encode('a"b\\c'))
      assert.equal([["\n\t\r\b\f"]], json.encode("\n\t\r\b\f"))
      assert.equal([["\u0000\u0001\u001f\u000b"]], json.encode("\0\1\31\11"))
      assert.equal([["a/b"]], json.encode("a/b"))  -- '/' is left alone
      assert.equal('"\x7f"', json.encode("\x7f"))
    end)

    it("passes valid UTF-8 through unchanged", function()
      local s = "héllo — wörld 漢字 😀 \u{10FFFF}"
      assert.equal('"' .. s .. '"', json.encode(s))
    end)

    it("replaces invalid UTF-8 with U+FFFD", function()
      assert.equal('"a' .. FFFD .. 'b"', json.encode("a\xffb"))
      -- one U+FFFD per maximal ill-formed part (the Unicode practice)
      assert.equal('"' .. FFFD .. 'c"', json.encode("\xe2\x82c"))  -- truncated
      assert.equal('"' .. FFFD:rep(2) .. '"', json.encode("\xc0\xaf"))  -- overlong
      assert.equal('"' .. FFFD:rep(3) .. '"', json.encode("\xe0\x80\xaf"))  -- overlong
      assert.equal('"' .. FFFD:rep(4) .. '"', json.encode("\xf0\x80\x80\xaf"))  -- overlong
      assert.equal('"' .. FFFD:rep(3) .. '"', json.encode("\xed\xa0\x80"))  -- surrogate
      assert.equal('"' .. FFFD:rep(4) .. '"', json.encode("\xf4\x90\x80\x80"))  -- > U+10FFFF
      assert.equal('"x' .. FFFD .. '"', json.encode("x\xf0\x9f\x98"))  -- cut at the end
      assert.equal('"' .. FFFD .. '"', json.encode("\x80"))  -- stray continuation
    end)

    it("never emits invalid UTF-8", function()
      local bytes = {}
      for i = 0, 255 do bytes[#bytes + 1] = string.char(i) end
      local s = table.concat(bytes):rep(3)
      local out = json.encode(s)
      assert.is_truthy(utf8.len(out))
      assert.is_string(json.decode(out))
    end)

    it("writes Lua integers exactly", function()
      assert.equal("9007199254740993", json.encode(9007199254740993))
      assert.equal("9223372036854775807", json.encode(math.maxinteger))
      assert.equal("-9223372036854775808", json.encode(math.mininteger))
    end)

    it("writes floats so that they read back exactly, and as floats", function()
      assert.equal("0.1", json.encode(0.1))
      assert.equal("1.5", json.encode(1.5))
      assert.equal("1.0", json.encode(1.0))
      assert.equal("-0.0", json.encode(-0.0))
      assert.equal("9007199254740992.0", json.encode(2.0 ^ 53))
      assert.equal("1e+300", json.encode(1e300))
      for _, x in ipairs({1 / 3, 2 / 3, 5e-324, 1.7976931348623157e308,
                          123456.789, -2.5e-10, 2.0 ^ 63, 1e21}) do
        local back = json.decode(json.encode(x))
        assert.equal("float", math.type(back))
        assert.equal(x, back)
      end
    end)

    it("refuses NaN and infinities", function()
      encode_error(0 / 0, "json encode: cannot encode NaN or infinity")
      encode_error(math.huge, "NaN or infinity")
      encode_error({-math.huge}, "NaN or infinity")
    end)

    it("tells an empty array from an empty object", function()
      assert.equal("{}", json.encode({}))
      assert.equal("[]", json.encode(json.array()))
      assert.equal("[]", json.encode(setmetatable({}, json.array_mt)))
      assert.equal('{"a":[],"b":{}}', json.encode(json.decode('{"a":[],"b":{}}')))
    end)

    it("encodes sequences 1..n as arrays, other tables as objects", function()
      assert.equal("[1,2,3]", json.encode({1, 2, 3}))
      assert.equal('["a",["b"]]', json.encode({"a", {"b"}}))
      assert.equal('{"1":1,"3":3}', json.encode({[1] = 1, [3] = 3}))
      assert.equal('{"1":"a","n":1}', json.encode({"a", n = 1}))
      assert.equal('{"-1":0}', json.encode({[-1] = 0}))
    end)

    it("encodes an array_mt table as an array of 1..#t", function()
      local t = json.array({1, 2})
      t.extra = "ignored"
      assert.equal("[1,2]", json.encode(t))
    end)

    it("sorts object keys, so output is deterministic", function()
      assert.equal('{"a":2,"b":1,"c":{"y":2,"z":1}}',
                   json.encode({b = 1, a = 2, c = {z = 1, y = 2}}))
      -- bytewise: integer keys become strings first
      assert.equal('{"10":1,"2":2,"B":3,"a":4,"é":5}',
                   json.encode({[10] = 1, [2] = 2, B = 3, a = 4, ["é"] = 5}))
      local keys = {}
      for i = 1, 500 do keys["k" .. (i * 7919 % 1000)] = i end
      assert.equal(json.encode(keys), json.encode(json.decode(json.encode(keys))))
    end)

    it("escapes object keys like strings", function()
      assert.equal('{"a\\nb":1,"k\\u0000":2,"x' .. FFFD .. '":3}',
                   json.encode({["a\nb"] = 1, ["k\0"] = 2, ["x\xff"] = 3}))
      local long = string.rep("k", 100)
      assert.equal('{"' .. long .. '":true}', json.encode({[long] = true}))
    end)

    it("raises clear errors for values JSON cannot hold", function()
      encode_error(print, "json encode: cannot encode function")
      encode_error({f = print}, "cannot encode function")
      encode_error(coroutine.create(print), "cannot encode thread")
      encode_error(io.stdout, "cannot encode userdata")
      encode_error(nil, "cannot encode nil")
    end)

    it("names the type of a bad object key", function()
      encode_error({[true] = 1}, "object key must be a string or an integer, got boolean")
      encode_error({[1.5] = 1}, "got float")
      encode_error({[{}] = 1}, "got table")
      encode_error({[print] = 1}, "got function")
    end)

    it("refuses an integer and a string key that collide", function()
      encode_error({[1] = "a", ["1"] = "b"}, "duplicate object key")
    end)

    it("limits nesting to 1000 levels and so catches cycles", function()
      local function nest(n)
        local t = {}
        for _ = 2, n do t = {t} end
        return t
      end
      assert.equal(string.rep("[", 999) .. "{}" .. string.rep("]", 999),
                   json.encode(nest(1000)))
      encode_error(nest(1001), "json encode: nesting deeper than 1000 levels")
      local cycle = {}
      cycle.self = cycle
      encode_error(cycle, "nesting deeper than 1000 levels (or a cycle)")
    end)

    it("does not call metamethods", function()
      local t = setmetatable({a = 1}, {
        __index = function() error("called __index") end,
        __pairs = function() error("called __pairs") end,
      })
      assert.equal('{"a":1}', json.encode(t))
    end)
  end)

  describe("array", function()
    it("marks a table as an array and returns it", function()
      local t = {}
      assert.equal(t, json.array(t))
      assert.equal(json.array_mt, getmetatable(t))
      assert.equal(json.array_mt, getmetatable(json.array()))
    end)
  end)

  describe("round trips", function()
    it("gives back canonical JSON unchanged", function()
      local docs = {
        '{"a":[1,2.5,"x",true,false,null],"b":{"c":[]},"d":{}}',
        '[[],[[]],{},[{}]]',
        '"line\\nbreak \\"quoted\\" \\\\ tab\\t nul\\u0000"',
        '{"big":9223372036854775807,"f":1.0,"neg":-9223372036854775808}',
        '"héllo 漢字 😀"',
      }
      for _, doc in ipairs(docs) do
        assert.equal(doc, json.encode(json.decode(doc)))
      end
    end)

    it("gives back Lua values unchanged", function()
      local v = {list = json.array({1, "two", json.null, {x = json.array()}}),
                 n = 9007199254740993, f = 0.1, s = "a\0b\n"}
      local back = json.decode(json.encode(v))
      assert.same(v, back)
      assert.equal(json.array_mt, getmetatable(back.list))
      assert.equal(json.array_mt, getmetatable(back.list[4].x))
    end)

    it("survives strings of every length around the encoder's chunk sizes", function()
      local unit = "ab\"c\0é漢😀\n"
      for _, n in ipairs({0, 1, 7, 8, 9, 15, 16, 17, 65535, 65536, 65537, 200003}) do
        local s = string.rep(unit, n // #unit + 1):sub(1, n)
        -- cutting may split a character at the end: compare after encoding
        local out = json.encode(s)
        local back = json.decode(out)
        assert.is_string(back)
        if utf8.len(s) then assert.equal(s, back) end
        assert.equal(out, json.encode(back))
      end
    end)
  end)

  describe("large values", function()
    local MiB = 1024 * 1024

    it("encodes and decodes a 50 MiB plain string", function()
      local s = string.rep("0123456789abcdef", 50 * MiB // 16)
      local out = json.encode(s)
      assert.equal(50 * MiB + 2, #out)
      assert.is_true(out == '"' .. s .. '"')
      assert.is_true(json.decode(out) == s)
    end)

    it("encodes a 50 MiB string full of escapes and UTF-8", function()
      local unit = 'line "é"\n\t\0\xff'
      local s = string.rep(unit, 50 * MiB // #unit)
      local out = json.encode(s)
      local want = '"' .. string.rep('line \\"é\\"\\n\\t\\u0000' .. FFFD, 50 * MiB // #unit) .. '"'
      assert.is_true(out == want)
    end)

    it("encodes a large array of objects", function()
      local t = {}
      for i = 1, 100000 do t[i] = {id = i, name = "n" .. i} end
      local back = json.decode(json.encode(t))
      assert.equal(100000, #back)
      assert.equal("n99999", back[99999].name)
    end)
  end)
end)
