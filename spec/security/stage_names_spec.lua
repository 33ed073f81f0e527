-- Issue 40: what a crashed staged operation leaves on disk until it is
-- recovered (a stage ".burrow-stage.m.*" holding a folder, a half-made
-- copy ".burrow-stage.c.*", an intent record ".burrow-stage.i.*", a temp
-- ".burrow-stage.t.*", the root's journal ".burrow-stage.j/") is reached
-- by no agent path: no listing, walk, glob, grep, stat or read shows it or
-- its contents, and no write, create, mkdir, move, copy or remove names
-- one, at the top or below, spelled in another case, through a link, or
-- as a pack's tool would. The names are planted after the workspace
-- opened (its start would have settled them). On the resolver under test.

local F = require "security.fixture"

local NEEDLE = "STAGED-NEEDLE"

describe(F.tag("security: staged names and intent records are no agent's (issue 40)"), function()
  local w, ws
  local PLANTED = {
    ".burrow-stage.m.1.00000000000000aa",
    ".burrow-stage.i.1.00000000000000bb",
    ".burrow-stage.j",
    "sub/.burrow-stage.c.1.00000000000000cc",
    "sub/.burrow-stage.t.1.00000000000000dd",
    "sub/.burrow-stage.i.1.00000000000000ee",
  }

  before_each(function()
    w = F.mktemp()
    F.sh("mkdir -p " .. F.q(w .. "/sub") .. " && echo " .. NEEDLE .. " > " .. F.q(w .. "/visible.txt"))
    ws = F.open({ { path = w, mode = "rw" } }, { pack = "native" })
    -- as a crash leaves them, once the workspace is open
    F.sh("cd " .. F.q(w) .. " && mkdir -p .burrow-stage.m.1.00000000000000aa/inner " ..
      "sub/.burrow-stage.c.1.00000000000000cc .burrow-stage.j" ..
      " && echo " .. NEEDLE .. " > .burrow-stage.m.1.00000000000000aa/inner/secret.txt" ..
      " && echo " .. NEEDLE .. " > sub/.burrow-stage.c.1.00000000000000cc/half.txt" ..
      " && printf 'BWI1sm\\n%s\\0x\\0' .burrow-stage.m.1.00000000000000aa > .burrow-stage.i.1.00000000000000bb" ..
      " && printf 'BWI1sc\\n%s\\0y\\0' .burrow-stage.c.1.00000000000000cc > sub/.burrow-stage.i.1.00000000000000ee" ..
      " && echo " .. NEEDLE .. " > sub/.burrow-stage.t.1.00000000000000dd" ..
      " && printf '1 2\\nsub' > .burrow-stage.j/.burrow-stage.i.1.00000000000000ee")
  end)

  after_each(function()
    ws:close()
    F.rmtree(w)
  end)

  local function none_in(label, res)
    for _, s in ipairs(F.strings(res, { pattern = true, include = true })) do
      assert.is_nil(s:lower():find("burrow-stage", 1, true), label .. " shows " .. s)
    end
  end

  it("listings, walks, glob and grep show none of them, nor what they hold", function()
    for _, args in ipairs {
      { path = ".", include_hidden = true },
      { path = ".", include_hidden = true, recursive = true },
      { path = "sub", include_hidden = true },
    } do
      none_in("list_dir " .. args.path, F.ok("list_dir", ws:call("list_dir", args)))
    end
    for _, pattern in ipairs { "**/*", "**/.burrow-stage*", ".burrow-stage.j/*", "**/*.txt", "sub/.*" } do
      local g = F.ok("glob " .. pattern, ws:call("glob", { pattern = pattern, include_hidden = true }))
      none_in("glob " .. pattern, g)
    end
    local r = F.ok("grep", ws:call("grep", { pattern = NEEDLE, include_hidden = true, output_mode = "files" }))
    assert.are.same({ "visible.txt" }, r.files)
    r = F.ok("grep content", ws:call("grep", { pattern = NEEDLE, include_hidden = true, include = { ".burrow-stage*", "*.txt" } }))
    none_in("grep content", r)
    local files = {}
    for _, s in ipairs(F.strings(r, { pattern = true, include = true })) do
      if s:find("%.txt$") then files[s] = true end
    end
    assert.are.same({ ["visible.txt"] = true }, files)
  end)

  it("stat, read and search by their names are refused", function()
    local names = {}
    for _, p in ipairs(PLANTED) do names[#names + 1] = p end
    for _, p in ipairs {
      ".burrow-stage.m.1.00000000000000aa/inner/secret.txt",
      "sub/.burrow-stage.c.1.00000000000000cc/half.txt",
      ".burrow-stage.j/.burrow-stage.i.1.00000000000000ee",
      "./.burrow-stage.i.1.00000000000000bb",
      "sub/../.burrow-stage.i.1.00000000000000bb",
      ".BURROW-STAGE.i.1.00000000000000bb",
      ".Burrow-Stage.m.1.00000000000000aa/inner/secret.txt",
    } do names[#names + 1] = p end
    for _, p in ipairs(names) do
      F.refused("stat " .. p, { "INVALID_ARGUMENT", "ENOENT" }, ws:call("stat", { path = p }))
      F.refused("read_file " .. p, { "INVALID_ARGUMENT", "ENOENT", "EISDIR" }, ws:call("read_file", { path = p }))
      F.refused("list_dir " .. p, { "INVALID_ARGUMENT", "ENOENT", "ENOTDIR" }, ws:call("list_dir", { path = p }))
      F.refused("grep in " .. p, { "INVALID_ARGUMENT", "ENOENT" }, ws:call("grep", { pattern = NEEDLE, path = p }))
    end
    -- a link another process planted to a stage: refused as well
    F.sh("ln -s .burrow-stage.m.1.00000000000000aa " .. F.q(w .. "/lnk"))
    F.refused("read through a link", { "INVALID_ARGUMENT" }, ws:call("read_file", { path = "lnk/inner/secret.txt" }))
    F.refused("list through a link", { "INVALID_ARGUMENT" }, ws:call("list_dir", { path = "lnk" }))
  end)

  it("writes, creates, mkdir, moves, copies and removes that name one are refused and change nothing", function()
    local before = F.sh("cd " .. F.q(w) .. " && find . -printf '%p %y %s\\n' | sort")
    local new = { ".burrow-stage.i.2.00000000000000ff", "sub/.burrow-stage.m.2.0000000000000011",
      ".burrow-stage.j/.burrow-stage.i.9.0000000000000022", ".BURROW-STAGE.x" }
    for _, p in ipairs(new) do
      F.refused("write_file " .. p, { "INVALID_ARGUMENT" }, ws:call("write_file", { path = p, content = "x" }))
      F.refused("append_file " .. p, { "INVALID_ARGUMENT" }, ws:call("append_file", { path = p, content = "x" }))
      F.refused("mkdir " .. p, { "INVALID_ARGUMENT" }, ws:call("mkdir", { path = p }))
      F.refused("move to " .. p, { "INVALID_ARGUMENT" }, ws:call("move", { source = "visible.txt", destination = p }))
      F.refused("copy to " .. p, { "INVALID_ARGUMENT" }, ws:call("copy", { source = "visible.txt", destination = p }))
      F.refused("copy a folder to " .. p, { "INVALID_ARGUMENT" },
        ws:call("copy", { source = "sub", destination = p, recursive = true }))
    end
    for _, p in ipairs(PLANTED) do
      F.refused("write_file over " .. p, { "INVALID_ARGUMENT" }, ws:call("write_file", { path = p, content = "x" }))
      F.refused("edit_file " .. p, { "INVALID_ARGUMENT" },
        ws:call("edit_file", { path = p, old_text = "BWI1", new_text = "BWI1" }))
      F.refused("remove " .. p, { "INVALID_ARGUMENT" }, ws:call("remove", { path = p, recursive = true }))
      F.refused("move " .. p .. " out", { "INVALID_ARGUMENT" }, ws:call("move", { source = p, destination = "out" }))
      F.refused("copy " .. p .. " out", { "INVALID_ARGUMENT" },
        ws:call("copy", { source = p, destination = "out", recursive = true }))
    end
    assert.are.equal(before, F.sh("cd " .. F.q(w) .. " && find . -printf '%p %y %s\\n' | sort"))
  end)

  it("a compatibility pack's tools see none of them either", function()
    local pk = F.open({ { path = w, mode = "rw" } }, { pack = "mcp_filesystem" })
    for _, c in ipairs {
      { "list_directory", { path = w } },
      { "directory_tree", { path = w } },
      { "search_files", { path = w, pattern = "burrow" } },
    } do
      local res = F.ok(c[1], pk:call(c[1], c[2]))
      none_in(c[1], res)
    end
    F.refused("read_text_file", { "INVALID_ARGUMENT" },
      pk:call("read_text_file", { path = w .. "/.burrow-stage.i.1.00000000000000bb" }))
    F.refused("write_file", { "INVALID_ARGUMENT" },
      pk:call("write_file", { path = w .. "/.burrow-stage.i.3.0000000000000033", content = "x" }))
    pk:close()
  end)
end)
