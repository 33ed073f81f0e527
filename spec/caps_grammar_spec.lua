-- The LPeg grammar of sizes and durations (lua/burrow/base/caps.lua): values
-- people write, and errors that name what is wrong and the column.

local caps = require "burrow.base.caps"

describe("caps: sizes and durations", function()
  it("reads sizes in decimal and binary units, with blanks and fractions", function()
    local cases = { ["1000"] = 1000, ["100B"] = 100, ["50MB"] = 50000000, ["256KiB"] = 262144,
      [" 2 MiB "] = 2097152, ["1.5GB"] = 1500000000, ["1.5KiB"] = 1536, ["0"] = 0, ["7."] = 7 }
    for text, want in pairs(cases) do assert.equal(want, caps.parse_size(text), text) end
    assert.equal(42, caps.parse_size(42))
  end)

  it("reads durations in ms, s, m and h", function()
    local cases = { ["30000"] = 30000, ["30s"] = 30000, ["500ms"] = 500, ["1.5s"] = 1500, ["2m"] = 120000, [" 10 s"] = 10000,
      ["2h"] = 7200000 }
    for text, want in pairs(cases) do assert.equal(want, caps.parse_ms(text), text) end
  end)

  it("is the config file's duration grammar too: there a duration carries its unit", function()
    assert.equal(1500, caps.parse_duration("1.5s", false))
    assert.equal(0.5, caps.parse_duration("0.5ms", false)) -- not rounded: config.lua's seconds
    assert.equal(7200000, caps.parse_duration("2h", false))
    local n, err = caps.parse_duration("1800", false)
    assert.is_nil(n)
    assert.equal('invalid duration "1800": no unit at column 5 (use a number with ms, s, m or h)', err)
    assert.is_nil((caps.parse_duration(1800, false)))
    assert.equal(1800, caps.parse_duration(1800, true))
  end)

  it("says what is wrong and at which column", function()
    local cases = {
      { caps.parse_size, "5XB", 'invalid size "5XB": unknown unit "XB" at column 2' },
      { caps.parse_size, "huge", 'invalid size "huge": expected a number at column 1' },
      { caps.parse_size, "  ", 'invalid size "  ": expected a number at column 3' },
      { caps.parse_size, "-3MB", 'invalid size "-3MB": expected a number at column 1' },
      { caps.parse_size, "12 KiB x", 'invalid size "12 KiB x": unexpected "x" at column 8' },
      { caps.parse_size, "1e3", 'invalid size "1e3": unexpected "3" at column 3' },
      { caps.parse_size, "10 mb", 'invalid size "10 mb": unknown unit "mb" at column 4' },
      { caps.parse_ms, "3d", 'invalid duration "3d": unknown unit "d" at column 2' },
      { caps.parse_ms, "30 s 1", 'invalid duration "30 s 1": unexpected "1" at column 6' },
      { caps.parse_ms, "64MiB", 'invalid duration "64MiB": unknown unit "MiB" at column 3' },
    }
    for _, c in ipairs(cases) do
      local n, err = c[1](c[2])
      assert.is_nil(n, c[2])
      assert.equal(c[3], err:sub(1, #c[3]), c[2])
    end
    assert.equal("negative size", select(2, caps.parse_size(-1)))
  end)

  it("is linear: a long run of blanks or digits is read once", function()
    local t0 = os.clock()
    assert.equal(1, caps.parse_size((" "):rep(200000) .. "1"))
    assert.is_nil(caps.parse_size(("9"):rep(200000) .. "x"))
    assert.is_true(os.clock() - t0 < 1)
  end)
end)
