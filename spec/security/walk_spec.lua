-- P0-16: walks (list_dir recursive) never descend through links, list links
-- as links with lstat data, survive loops and honour max_entries.

local F = require "security.fixture"

local LINKS = {"esc_dir", "esc_updir", "proc_link", "root_link1", "root_link2", "root_link3",
               "d_link", "link_sub", "to_rootb_dir", "dangling_dir", "self", "loop1", "loop/d",
               "gochain/a/b", "gochain/f", "gochain/g/h/i", "racelink"}

-- ("esc_dir/x", "esc_dir") or ("/abs/ws/esc_dir/x", "esc_dir") -> true
local function under(path, link)
  return ("/" .. path):find("/" .. link .. "/", 1, true) ~= nil
end

describe(F.tag("security: walks P0-16"), function()
  local fx, ws, fifo_pid

  lazy_setup(function()
    fx = F.build()
    ws = F.open({{path = fx.ws, mode = "rw"}})
  end)

  lazy_teardown(function()
    F.stop(fifo_pid)
    if ws then ws:close() end
    F.cleanup(fx)
  end)

  it("recursive list_dir of the root never descends through any link and lists each as a symlink", function()
    -- If a broken walk opened the FIFO it would block: the release opens it
    -- later, so the case fails (F.unblocked) instead of hanging.
    fifo_pid = F.fifo_release(fx.ws .. "/fifo")
    F.guarded(fx, "recursive list", function()
      local t, res, msg, code = F.timed(ws.call, ws, "list_dir",
        {path = ".", recursive = true, max_depth = 100, include_hidden = true})
      F.ok("list_dir . recursive", res, msg, code)
      F.unblocked(fifo_pid, "recursive list")
      assert.is_true(t < F.HANG, ("recursive list took %.2f s (loop followed?)"):format(t))
      local by_rel = {}
      for _, e in ipairs(res.entries) do
        local p = tostring(e.path)
        for _, link in ipairs(LINKS) do
          assert.is_false(under(p, link), "walk descended through link " .. link .. ": " .. p)
        end
        assert.is_nil(({["secret.txt"] = 1, ["hard_target.txt"] = 1, ["usr"] = 1, ["boot"] = 1,
                         ["sbin"] = 1, ["b.txt"] = 1})[e.name], "walk listed an outside entry: " .. p)
        -- strip to the root-relative spelling, whatever the path style
        local rel = p:gsub("^" .. fx.ws:gsub("%p", "%%%0") .. "/", ""):gsub("^%./", "")
        by_rel[rel] = e
      end
      for _, link in ipairs(LINKS) do
        local e = by_rel[link]
        assert.is_not_nil(e, "recursive listing misses the link " .. link)
        assert.are.equal("symlink", e.type, link .. " should be listed as symlink, got " .. tostring(e.type))
      end
      for _, name in ipairs({"fifo", "sock"}) do
        assert.are.equal("other", by_rel[name] and by_rel[name].type, name .. " should be type other")
      end
      assert.are.equal("file", by_rel["hl"] and by_rel["hl"].type)
      -- exactly the entries `find` sees without following links
      local want = tonumber(F.sh("find " .. F.q(fx.ws) .. " -mindepth 1 | wc -l"):match("%d+"))
      assert.are.equal(want, #res.entries, "recursive listing should hold every entry of the root once")
      assert.is_falsy(res.truncated)
    end)
    F.stop(fifo_pid); fifo_pid = nil
  end)

  it("list_dir on an in-root dir link lists its target; walks below it do not follow inner links", function()
    F.guarded(fx, "link_sub", function()
      local res = F.ok("list link_sub recursive", ws:call("list_dir", {path = "link_sub", recursive = true}))
      local names = {}
      for _, e in ipairs(res.entries) do names[e.name] = e.type end
      assert.are.equal("file", names["file.txt"])
      assert.are.equal("symlink", names["up_in"])
      assert.are.equal("symlink", names["esc2"])
    end)
  end)

  it("recursive list_dir starting at an outside link -> OUTSIDE_ROOT", function()
    F.guarded(fx, "outside starts", function()
      for _, p in ipairs({"esc_updir", "esc_dir", "proc_link", "root_link1", "d_link", "esc_updir/.."}) do
        F.refused("list " .. p, "OUTSIDE_ROOT", ws:call("list_dir", {path = p, recursive = true}))
      end
      F.refused("list self", "ELOOP", ws:call("list_dir", {path = "self", recursive = true}))
      F.refused("list loop/link", "ELOOP", ws:call("list_dir", {path = "loop/link"}))
    end)
  end)

  it("a link loop below the walk start does not hang the walk", function()
    F.guarded(fx, "loops", function()
      local t, res, msg, code = F.timed(ws.call, ws, "list_dir", {path = "loop", recursive = true, max_depth = 64})
      F.ok("list loop recursive", res, msg, code)
      assert.is_true(t < F.HANG, ("walk over loop/ took %.2f s"):format(t))
      local want = tonumber(F.sh("find " .. F.q(fx.ws .. "/loop") .. " -mindepth 1 | wc -l"):match("%d+"))
      assert.are.equal(want, #res.entries, "loop/ entries listed once each, links not followed")
    end)
  end)

  describe("100,000 entries", function()
    local big, wb
    lazy_setup(function()
      big = F.mktemp()
      F.sh("mkdir " .. F.q(big .. "/many") .. " && cd " .. F.q(big .. "/many") ..
           " && seq 1 100000 | xargs touch")
      wb = F.open({{path = big, mode = "ro"}},
        {caps = {max_result_bytes = 262144, max_entries = 1000, max_file_size = 52428800}})
    end)
    lazy_teardown(function()
      if wb then wb:close() end
      if big then F.rmtree(big) end
    end)

    for _, recursive in ipairs({false, true}) do
      it("list_dir (recursive=" .. tostring(recursive) .. ") stops at max_entries and reports the omitted count", function()
        local path = recursive and "." or "many"
        local t, res, msg, code = F.timed(wb.call, wb, "list_dir", {path = path, recursive = recursive})
        F.ok("list " .. path, res, msg, code)
        assert.is_true(#res.entries <= 1000, "listing returned " .. #res.entries .. " entries, cap 1000")
        assert.is_true(#res.entries >= 1, "listing returned nothing")
        assert.is_true(res.truncated == true, "truncated must be true")
        assert.are.equal("number", type(res.omitted), "omitted should be a count")
        assert.is_true(res.omitted > 0, "omitted should be > 0")
        assert.is_true(t < F.HANG, ("capped listing took %.2f s"):format(t))
      end)
    end
  end)
end)
