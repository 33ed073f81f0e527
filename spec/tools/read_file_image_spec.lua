-- read_file on images: PNG, JPEG, GIF and WebP (by magic bytes, not by
-- name) come back as MCP image content; other binary files stay BINARY.

local H = require "helpers"

local MAGIC = {
  ["image/png"] = "\137PNG\r\n\26\n\0\0\0\rIHDR\0\0\0\1\0\0\0\1\8\2\0\0\0",
  ["image/jpeg"] = "\255\216\255\224\0\16JFIF\0\1\1\0\0\1\0\1\0\0",
  ["image/gif"] = "GIF89a\1\0\1\0\128\0\0\0\0\0\255\255\255",
  ["image/webp"] = "RIFF\36\0\0\0WEBPVP8 \24\0\0\0\48\1\0\157\1\42",
}

describe(H.tag("read_file images"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  for mime, bytes in pairs(MAGIC) do
    it("returns " .. mime .. " as image content", function()
      H.write(dir, "pic.dat", bytes)
      local r = assert(ws:call("read_file", { path = "pic.dat" }))
      assert.equal("image", r.encoding)
      assert.equal(mime, r.mime_type)
      assert.equal(bytes, H.core.base64_decode(r.content))
      assert.equal(H.sha256sum(dir, "pic.dat"), r.content_hash)
      local blocks, structured = ws:render("read_file", r)
      assert.equal("image", blocks[2].type)
      assert.equal(mime, blocks[2].mimeType)
      assert.equal(r.content, blocks[2].data)
      assert.is_nil(structured.content)
    end)
  end

  it("gives the raw base64 when encoding = base64 is asked", function()
    H.write(dir, "p.png", MAGIC["image/png"])
    local r = assert(ws:call("read_file", { path = "p.png", encoding = "base64" }))
    assert.equal("base64", r.encoding)
  end)

  it("other binary files are still BINARY", function()
    H.write(dir, "x.png", "not\0an image")
    local _, _, code = ws:call("read_file", { path = "x.png" })
    assert.equal("BINARY", code)
  end)

  it("an image over max_image_bytes is BINARY (read it with base64)", function()
    ws:close()
    ws = H.open(dir, { max_image_bytes = 10 })
    H.write(dir, "p.png", MAGIC["image/png"])
    local _, _, code = ws:call("read_file", { path = "p.png" })
    assert.equal("BINARY", code)
  end)

  it("over MCP the result holds an image block", function()
    H.write(dir, "p.png", MAGIC["image/png"])
    local mcp = require "burrow.mcp"
    local server = mcp.new(ws)
    local res = server:tool_result("read_file", ws:call("read_file", { path = "p.png" }))
    assert.equal("text", res.content[1].type)
    assert.equal("image", res.content[2].type)
    assert.equal("image/png", res.content[2].mimeType)
  end)
end)
