-- mkdir: one directory or a whole chain; an existing directory is fine
-- with parents, a file in the way is not.

local H = require "helpers"

describe(H.tag("mkdir"), function()
  local ws, dir

  before_each(function()
    dir = H.tmpdir()
    ws = H.open(dir)
  end)

  after_each(function()
    ws:close()
    H.cleanup()
  end)

  it("creates a chain of directories by default", function()
    local r = assert(ws:call("mkdir", { path = "a/b/c" }))
    assert.is_true(r.created)
    assert.equal("directory", H.file_type(dir, "a/b/c"))
  end)

  it("accepts an existing directory with parents (created = false)", function()
    H.mkdir(dir, "a")
    local r = assert(ws:call("mkdir", { path = "a" }))
    assert.is_false(r.created)
  end)

  it("with parents = false: EEXIST for an existing directory, ENOENT for a missing parent", function()
    H.mkdir(dir, "a")
    local _, _, code = ws:call("mkdir", { path = "a", parents = false })
    assert.equal("EEXIST", code)
    _, _, code = ws:call("mkdir", { path = "x/y", parents = false })
    assert.equal("ENOENT", code)
    assert(ws:call("mkdir", { path = "b", parents = false }))
    assert.equal("directory", H.file_type(dir, "b"))
  end)

  it("accepts a trailing slash", function()
    assert(ws:call("mkdir", { path = "newdir/" }))
    assert.equal("directory", H.file_type(dir, "newdir"))
  end)

  it("refuses a file in the way: EEXIST, or ENOTDIR below it", function()
    H.write(dir, "f", "x")
    local _, _, code = ws:call("mkdir", { path = "f" })
    assert.equal("EEXIST", code)
    _, _, code = ws:call("mkdir", { path = "f/sub" })
    assert.equal("ENOTDIR", code)
  end)

  it("the root itself already exists", function()
    local r = assert(ws:call("mkdir", { path = "." }))
    assert.is_false(r.created)
  end)

  it("a read-only root is READ_ONLY_ROOT", function()
    ws:close()
    ws = H.open { path = dir, mode = "ro" }
    local _, _, code = ws:call("mkdir", { path = "a" })
    assert.equal("READ_ONLY_ROOT", code)
    assert.is_false(H.exists(dir, "a"))
  end)
end)
