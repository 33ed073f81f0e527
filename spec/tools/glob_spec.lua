-- glob: **, *, ?, [...], {a,b}; types; hidden and ignore rules; sort by
-- path or mtime; the max_results cap; absolute patterns and paths.

local H = require "helpers"

local function paths(res)
  local out = {}
  for i, e in ipairs(res.entries) do out[i] = e.path end
  return out
end

describe(H.tag("glob"), function()
  local ws, dir

  before_each(function()
    ws, dir = H.workspace {
      ["a.c"] = "", ["b.h"] = "", ["src/m.c"] = "", ["src/m.h"] = "", ["src/deep/x/y.c"] = "",
      ["lib/l.rs"] = "", ["README.md"] = "", ["test_1.py"] = "", ["test_22.py"] = "",
    }
  end)
  after_each(H.cleanup)

  local function glob(args) return ws:call("glob", args) end

  it("matches ** across directories and * within a name", function()
    assert.same({ "a.c", "src/deep/x/y.c", "src/m.c" }, paths(assert(glob { pattern = "**/*.c" })))
    assert.same({ "a.c" }, paths(assert(glob { pattern = "*.c" })))
    assert.same({ "src/deep/x/y.c", "src/m.c" }, paths(assert(glob { pattern = "src/**/*.c" })))
  end)

  it("supports ?, [...] and {a,b}", function()
    assert.same({ "test_1.py" }, paths(assert(glob { pattern = "test_?.py" })))
    assert.same({ "a.c", "b.h" }, paths(assert(glob { pattern = "[ab].[ch]" })))
    assert.same({ "a.c", "b.h", "src/m.c", "src/m.h" }, paths(assert(glob { pattern = "{,src/}*.{c,h}" })))
  end)

  it("lists files by default, directories or anything with type", function()
    assert.same({ "src/deep", "src/deep/x" }, paths(assert(glob { pattern = "src/**", type = "dir" })))
    H.symlink("a.c", dir, "link.c")
    assert.same({ "a.c" }, paths(assert(glob { pattern = "*.c" })))
    local r = assert(glob { pattern = "*.c", type = "any" })
    assert.same({ "a.c", "link.c" }, paths(r))
    assert.equal("symlink", r.entries[2].type)
    assert.same({ "link.c" }, paths(assert(glob { pattern = "*", type = "symlink" })))
  end)

  it("never descends through a directory symlink", function()
    H.symlink("src", dir, "srclink")
    assert.same({}, paths(assert(glob { pattern = "srclink/**/*.c" })))
  end)

  it("leaves hidden and ignored entries out, unless asked or named", function()
    H.write_all(dir, { [".github/w.yml"] = "", [".env"] = "", ["out/gen.c"] = "", [".gitignore"] = "out/\n" })
    H.mkdir(dir, ".git")
    assert.same({ "a.c", "src/deep/x/y.c", "src/m.c" }, paths(assert(glob { pattern = "**/*.c" })))
    assert.same({ "a.c", "out/gen.c", "src/deep/x/y.c", "src/m.c" },
      paths(assert(glob { pattern = "**/*.c", respect_ignore = false })))
    assert.same({ ".github/w.yml" }, paths(assert(glob { pattern = ".github/*.yml" })))
    assert.same({ ".env" }, paths(assert(glob { pattern = "**/.env" })))
    assert.same({ ".env" }, paths(assert(glob { pattern = ".e*", include_hidden = true })))
  end)

  it("sorts by mtime, newest first, with sort = mtime", function()
    H.sh("touch -d '2001-01-01' " .. H.q(dir .. "/a.c") .. " && touch -d '2010-01-01' " .. H.q(dir .. "/src/m.c") ..
      " && touch -d '2005-01-01' " .. H.q(dir .. "/src/deep/x/y.c"))
    assert.same({ "src/m.c", "src/deep/x/y.c", "a.c" }, paths(assert(glob { pattern = "**/*.c", sort = "mtime" })))
  end)

  it("stops at max_results with truncated, the first in path order", function()
    for i = 1, 30 do H.write(dir, ("many/f%02d.txt"):format(i), "") end
    local r = assert(glob { pattern = "many/*.txt", max_results = 3 })
    assert.same({ "many/f01.txt", "many/f02.txt", "many/f03.txt" }, paths(r))
    assert.is_true(r.truncated)
    assert.matches("stopped at max_results=3", (ws:render("glob", r)))
  end)

  it("names results from the agent's path, relative or absolute", function()
    assert.same({ "src/m.c" }, paths(assert(glob { pattern = "*.c", path = "src" })))
    assert.same({ dir .. "/src/m.c" }, paths(assert(glob { pattern = "*.c", path = dir .. "/src" })))
    assert.same({ dir .. "/src/m.c" }, paths(assert(glob { pattern = dir .. "/src/*.c" })))
    assert.same({}, paths(assert(glob { pattern = "nothing/here/*.c" })))
  end)

  it("refuses '..' in a pattern and an absolute pattern with a path", function()
    local r, msg, code = glob { pattern = "../*" }
    assert.is_nil(r)
    assert.equal("INVALID_ARGUMENT", code)
    assert.matches("'..'", msg, 1, true)
    r, msg, code = glob { pattern = "/x/*.c", path = "src" }
    assert.equal("INVALID_ARGUMENT", code)
  end)

  it("renders one path per line, directories with a slash", function()
    local text = ws:render("glob", assert(glob { pattern = "src/*", type = "any" }))
    assert.equal("src/deep/\nsrc/m.c\nsrc/m.h", text)
    assert.matches("^No paths match", (ws:render("glob", assert(glob { pattern = "*.zz" }))))
  end)
end)
