-- list_dir: sorted entries, types, hidden filter, recursion and depth,
-- symlinks not followed, the max_entries cap, paths as the agent wrote them.

local H = require "helpers"

local function paths(res)
  local out = {}
  for i, e in ipairs(res.entries) do out[i] = e.path end
  return out
end

local function by_path(res)
  local t = {}
  for _, e in ipairs(res.entries) do t[e.path] = e end
  return t
end

describe(H.tag("list_dir"), function()
  local ws, dir

  before_each(function() ws, dir = H.workspace() end)
  after_each(H.cleanup)   -- closes every workspace H.open made

  -- Reopen the workspace on the same directory, with these caps.
  local function open(caps)
    ws:close()
    ws = H.open(dir, caps)
    return ws
  end

  local function list(args)
    return ws:call("list_dir", args or {})
  end

  it("lists entries sorted by name, whatever the creation order", function()
    for _, n in ipairs { "zeta", "alpha", "mid", "beta", "a2", "a1" } do H.write(dir, n, "") end
    local r = assert(list { path = "." })
    assert.same({ "a1", "a2", "alpha", "beta", "mid", "zeta" }, paths(r))
    assert.is_false(r.truncated)
    assert.equal(0, r.omitted)
  end)

  it("gives name, path, type, size and an ISO 8601 UTC mtime for each entry", function()
    H.write(dir, "f.txt", "12345")
    H.sh("touch -d '2020-02-29 12:34:56 UTC' " .. H.q(dir .. "/f.txt"))
    local e = assert(list {}).entries[1]
    assert.equal("f.txt", e.name)
    assert.equal("f.txt", e.path)
    assert.equal("file", e.type)
    assert.equal(5, e.size)
    assert.equal("2020-02-29T12:34:56Z", e.mtime)
  end)

  it("types entries as file, dir, symlink and other (a FIFO)", function()
    H.write(dir, "file", "x")
    H.mkdir(dir, "dir")
    H.symlink("file", dir, "link")
    H.symlink("missing", dir, "dangling")
    H.mkfifo(dir, "fifo")
    local t = by_path(assert(list {}))
    assert.equal("file", t.file.type)
    assert.equal("dir", t.dir.type)
    assert.equal("symlink", t.link.type)
    assert.equal("symlink", t.dangling.type)
    assert.equal("other", t.fifo.type)
  end)

  it("lists the first root when no path is given", function()
    H.write(dir, "top.txt", "")
    H.write(dir, "sub/inner.txt", "")
    local r = assert(list {})
    assert.same({ "sub", "top.txt" }, paths(r))
    assert.equal(".", r.path)
  end)

  it("lists an empty directory as no entries", function()
    H.mkdir(dir, "empty")
    local r = assert(list { path = "empty" })
    assert.equal(0, #r.entries)
    assert.is_false(r.truncated)
    assert.matches("empty", (ws:render("list_dir", r)), 1, true)
  end)

  describe("hidden entries", function()
    before_each(function()
      H.write(dir, ".env", "SECRET=1")
      H.write(dir, ".hidden/inside", "")
      H.write(dir, "visible", "")
    end)

    it("are left out by default", function()
      assert.same({ "visible" }, paths(assert(list {})))
    end)

    it("are listed with include_hidden = true", function()
      assert.same({ ".env", ".hidden", "visible" }, paths(assert(list { include_hidden = true })))
    end)

    it("are not descended into by default when recursive", function()
      assert.same({ "visible" }, paths(assert(list { recursive = true })))
    end)

    it("are descended into with include_hidden when recursive", function()
      assert.same({ ".env", ".hidden", ".hidden/inside", "visible" },
        paths(assert(list { recursive = true, include_hidden = true })))
    end)
  end)

  describe("recursion", function()
    before_each(function()
      H.write(dir, "a/b/c/d.txt", "")
      H.write(dir, "a/b/x.txt", "")
      H.write(dir, "a/y.txt", "")
      H.write(dir, "z.txt", "")
    end)

    it("shows only direct children without recursive", function()
      assert.same({ "a", "z.txt" }, paths(assert(list {})))
    end)

    it("descends into every level with recursive, children after their parent", function()
      assert.same({ "a", "a/b", "a/b/c", "a/b/c/d.txt", "a/b/x.txt", "a/y.txt", "z.txt" },
        paths(assert(list { recursive = true })))
    end)

    it("stops at max_depth levels (1 = direct children)", function()
      assert.same({ "a", "z.txt" }, paths(assert(list { recursive = true, max_depth = 1 })))
      assert.same({ "a", "a/b", "a/y.txt", "z.txt" }, paths(assert(list { recursive = true, max_depth = 2 })))
      assert.same({ "a", "a/b", "a/b/c", "a/b/x.txt", "a/y.txt", "z.txt" },
        paths(assert(list { recursive = true, max_depth = 3 })))
    end)

    it("refuses max_depth = 0: INVALID_ARGUMENT", function()
      local r, _, code = list { recursive = true, max_depth = 0 }
      assert.is_nil(r)
      assert.equal("INVALID_ARGUMENT", code)
    end)

    it("gives each entry's name as its last component", function()
      local t = by_path(assert(list { recursive = true }))
      assert.equal("d.txt", t["a/b/c/d.txt"].name)
      assert.equal("b", t["a/b"].name)
    end)

    it("lists a symlinked directory as a symlink and does not descend into it", function()
      H.symlink("a", dir, "link_to_a")
      local outside = H.tmpdir()
      H.write(outside, "secret.txt", "")
      H.symlink(outside, dir, "link_out")
      local r = assert(list { recursive = true })
      local t = by_path(r)
      assert.equal("symlink", t.link_to_a.type)
      assert.equal("symlink", t.link_out.type)
      for _, p in ipairs(paths(r)) do
        assert.is_nil(p:find("^link_to_a/"), "descended into a symlink: " .. p)
        assert.is_nil(p:find("^link_out/"), "descended into a symlink: " .. p)
      end
    end)
  end)

  describe("paths", function()
    before_each(function()
      H.write(dir, "sub/x.txt", "")
      H.write(dir, "sub/deeper/y.txt", "")
    end)

    it("are relative to the path the agent gave", function()
      local r = assert(list { path = "sub" })
      assert.same({ "sub/deeper", "sub/x.txt" }, paths(r))
      assert.equal("sub", r.path)
      r = assert(list { path = "sub", recursive = true })
      assert.same({ "sub/deeper", "sub/deeper/y.txt", "sub/x.txt" }, paths(r))
    end)

    it("do not double a trailing slash", function()
      assert.same({ "sub/deeper", "sub/x.txt" }, paths(assert(list { path = "sub/" })))
    end)

    it("keep an absolute mount path absolute", function()
      local r = assert(list { path = dir .. "/sub" })
      assert.same({ dir .. "/sub/deeper", dir .. "/sub/x.txt" }, paths(r))
    end)

    it("under a virtual mount name the mount, never the host path", function()
      ws:close()
      ws = H.open { path = dir, mount = "/workspace" }
      local r = assert(list { path = "/workspace", recursive = true })
      assert.same({ "/workspace/sub", "/workspace/sub/deeper", "/workspace/sub/deeper/y.txt", "/workspace/sub/x.txt" },
        paths(r))
    end)

    it("can be passed back to read_file", function()
      H.write(dir, "sub/x.txt", "content\n")
      for _, p in ipairs { "sub", dir .. "/sub" } do
        local r = assert(list { path = p })
        local e = by_path(r)[p:gsub("/$", "") .. "/x.txt"]
        assert.is_table(e)
        assert.equal("1\tcontent\n", assert(ws:call("read_file", { path = e.path })).content)
      end
    end)
  end)

  describe("max_entries", function()
    it("caps the listing and says how many entries were left out", function()
      for i = 1, 8 do H.write(dir, ("f%d"):format(i), "") end
      open { max_entries = 5 }
      local r = assert(list {})
      assert.equal(5, #r.entries)
      assert.same({ "f1", "f2", "f3", "f4", "f5" }, paths(r))
      assert.is_true(r.truncated)
      assert.equal(3, r.omitted)
      local text = ws:render("list_dir", r)
      assert.matches("3 more entries", text, 1, true)
    end)

    it("counts omitted entries across subdirectories", function()
      H.write(dir, "a/1", "")
      H.write(dir, "a/2", "")
      H.write(dir, "b/3", "")
      open { max_entries = 2 }
      local r = assert(list { recursive = true })
      -- a, a/1, a/2, b, b/3: two shown, three left out
      assert.same({ "a", "a/1" }, paths(r))
      assert.equal(3, r.omitted)
      assert.is_true(r.truncated)
    end)

    it("is not truncated at exactly max_entries", function()
      for i = 1, 5 do H.write(dir, ("f%d"):format(i), "") end
      open { max_entries = 5 }
      local r = assert(list {})
      assert.equal(5, #r.entries)
      assert.is_false(r.truncated)
      assert.equal(0, r.omitted)
    end)
  end)

  describe("errors", function()
    it("refuses a file: ENOTDIR", function()
      H.write(dir, "f.txt", "x")
      local r, msg, code = list { path = "f.txt" }
      assert.is_nil(r)
      assert.equal("ENOTDIR", code)
      assert.matches("f.txt", msg, 1, true)
    end)

    it("refuses a missing directory: ENOENT", function()
      local r, _, code = list { path = "nope" }
      assert.is_nil(r)
      assert.equal("ENOENT", code)
    end)

    it("refuses a path outside the roots: OUTSIDE_ROOT", function()
      local r, _, code = list { path = "/" }
      assert.is_nil(r)
      assert.equal("OUTSIDE_ROOT", code)
    end)

    it("refuses unknown arguments: INVALID_ARGUMENT", function()
      local r, msg, code = list { path = ".", depth = 2 }
      assert.is_nil(r)
      assert.equal("INVALID_ARGUMENT", code)
      assert.matches("'depth'", msg, 1, true)
    end)
  end)

  describe("rendered text", function()
    it("marks directories with / and gives file sizes", function()
      H.write(dir, "f.txt", "abc")
      H.mkdir(dir, "d")
      local text, s = ws:render("list_dir", assert(list {}))
      assert.matches("d/", text, 1, true)
      assert.matches("f.txt  (3 bytes)", text, 1, true)
      assert.is_table(s.entries)
    end)
  end)
end)
