-- Choosing packs: `pack: NAME`, `packs: [a, {name: b, prefix: p}]`, a
-- `tools` subset of a pack, `--pack NAME` on the command line, and
-- errors for unknown packs and colliding names.

local H = require "helpers"
local config = require "burrow.config"
local burrow = require "burrow"

describe(H.tag("packs in config and CLI"), function()
  local dir
  before_each(function()
    dir = H.tmpdir()
    H.write(dir, "a.txt", "hi\n")
  end)
  after_each(H.cleanup)

  it("pack: NAME selects a pack; an unknown name lists the available packs", function()
    assert.equal("mcp_filesystem", config.parse("pack: mcp_filesystem\n", "c.yaml").pack)
    local _, err = config.parse("pack: nosuch\n", "c.yaml")
    assert.matches('^c%.yaml:1:7: unknown pack "nosuch" %(available: native, [^)]*mcp_filesystem', err)
    _, err = config.parse("pack: native\npacks: [mcp_filesystem]\n", "c.yaml")
    assert.matches("give either pack or packs", err, 1, true)
  end)

  it("packs: names collide unless one has a prefix", function()
    local opts = assert(config.parse("packs: [native, mcp_filesystem]\n", "c.yaml"))
    opts.roots = { { path = dir } }
    local ws, err, code = burrow.open(opts)
    assert.is_nil(ws)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches('tool "read_file" is in two packs %(native and mcp_filesystem%): give one of them a prefix', err)
    opts = assert(config.parse("packs: [native, {name: mcp_filesystem, prefix: fs_}]\n", "c.yaml"))
    opts.roots, opts.resolver = { { path = dir } }, H.RESOLVER
    ws = assert(burrow.open(opts))
    assert.truthy(ws:tool("read_file"))
    assert.truthy(ws:tool("fs_read_text_file"))
    local res = ws:call("fs_read_text_file", { path = "a.txt" })
    assert.equal("hi\n", (ws:render("fs_read_text_file", res)))
    ws:close()
  end)

  it("tools picks a subset of the pack's tools", function()
    local opts = assert(config.parse("pack: mcp_filesystem\ntools: [read_text_file, list_directory]\n", "c.yaml"))
    opts.roots, opts.resolver = { { path = dir } }, H.RESOLVER
    local ws = assert(burrow.open(opts))
    assert.equal(2, #ws:tools())
    ws:close()
    opts = assert(config.parse("pack: mcp_filesystem\ntools: [grep]\n", "c.yaml"))
    opts.roots = { { path = dir } }
    local _, err = burrow.open(opts)
    assert.matches('tool "grep" is not in the pack', err, 1, true)
  end)

  it("--pack NAME for mcp, call and tools; an unknown pack is a usage error", function()
    local out, _, code = H.burrow_cmd { "call", "read_text_file", '{"path":"a.txt"}', "--pack", "mcp_filesystem", "--root", dir }
    assert.equal(0, code)
    assert.equal('{"content":"hi\\n"}\n', out)
    local _, err
    _, err, code = H.burrow_cmd { "tools", "--pack", "nosuch", "--root", dir }
    assert.equal(2, code)
    assert.matches('unknown pack "nosuch"', err, 1, true)
  end)
end)
