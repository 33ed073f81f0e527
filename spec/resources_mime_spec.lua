-- resources/read's mimeType (burrow.mcp.resources): by extension, so a notebook
-- or a .bin file is not text/plain whatever its bytes are (issue 30).
local resources = require "burrow.mcp.resources"

describe("resources mime types", function()
  it("names notebooks and .bin files by what they are", function()
    assert.equal("application/x-ipynb+json", resources.mime("/w/a.ipynb", false))
    assert.equal("application/octet-stream", resources.mime("/w/data.bin", false))
    assert.equal("text/markdown", resources.mime("/w/README.md", false))
    assert.equal("text/plain", resources.mime("/w/notes", false))
    assert.equal("application/octet-stream", resources.mime("/w/blob", true))
  end)
end)
