-- undo_edit's history in the deployment's state store (issue 45): two
-- workspaces on one state store stand for two instances of a deployment
-- (as burrow mcp --http opens them with state:), on the embedded store
-- and on a redis-server this spec starts on a free port (never the system
-- service). Each call carries its
-- session record as the HTTP listener builds it: the principal (tenant,
-- token) and the name of its shared store (undo_named: derived from the
-- session id, or the stateless principal's). An attacker's angles: another
-- principal of the same tenant or another tenant naming the same store,
-- paths with .. (the same file is one history; outside the root, none),
-- a file over the 1 MiB a shared record keeps, a tenant's budget spent by
-- another of its principals; an edit_files change (one undo step, its
-- group's record held by the undo; issue 44): another principal cannot
-- undo it, a file of it turned into a link out makes its undo refuse with
-- nothing outside touched, and a refused undo gives the group back (no
-- lock-out); ten files undone through the other instance in one call, a
-- stale one refusing the whole undo as the embedded store does; a
-- change whose group record expired refused (never undone by halves) and
-- taken off each file's history, so the change before it is reachable; with
-- Redis, the store not answering before or in the middle of such an undo
-- (STORE_UNAVAILABLE, nothing undone, the change whole for a later undo).

local burrow = require "burrow"
local core = require "burrow.core"
local F = require "spec.security.fixture"
local H = require "helpers"

local ID_A = ("a"):rep(32)
local ID_B = ("b"):rep(32)

-- The stores the cases run on: the embedded one, and a redis-server of
-- this spec's own (redis: the cases of a store that stops answering).
local STORES = { { name = "embedded state store" }, { name = "redis-server", redis = true } }

for _, store in ipairs(STORES) do
  describe(F.tag("undo_edit shared by instances, " .. store.name), function()
    local B, st, one, two, srv, asker

    local function open()
      local ws = assert(burrow.open { roots = { { path = B .. "/root" } }, resolver = F.RESOLVER,
        state = st, state_config = { url = "redis://the.store.of.this.spec/0" }, policies = { asker } })
      return ws
    end
    -- a call of principal (tenant, store name) through ws, as a fresh
    -- request record (each instance builds its own); approve: the call's
    -- approval hook (the asker policy asks it for undo_edit's writes of
    -- files named held*)
    local function call(ws, tenant, id, tool, args, budget, approve)
      return ws:call(tool, args, { session = { id = "spec", tenant = tenant, token = id:sub(1, 4), undo_named = id,
        undo_budget = budget }, approve = approve })
    end
    local function read(name)
      local f = io.open(B .. "/root/" .. name, "rb")
      if not f then return nil end
      local s = f:read("a")
      f:close()
      return s
    end

    setup(function()
      B = F.mktemp()
      os.execute("mkdir -p " .. B .. "/root/sub")
      asker = H.policy_file("asker", [[return { name = "asker", check = function(req)
        if req.tool == "undo_edit" and req.commit and tostring(req.path):find("held", 1, true) then
          return "ask", "this spec's approval hook decides"
        end
      end }]])
      if store.redis then
        srv = H.redis_server()
        srv.need()
        srv.start()
        -- a short timeout: a frozen server is STORE_UNAVAILABLE soon
        st = assert(core.state_open { kind = "redis", url = srv.url, timeout = 0.5 })
      else
        st = core.state_open { kind = "memory" }
      end
      one, two = open(), open()
    end)
    teardown(function()
      if one then one:close() end
      if two then two:close() end
      if st then st:close() end
      if srv and not srv.missing then srv.stop() end
      F.rmtree(B)
      H.cleanup()
    end)

    it("what one instance recorded, the other undoes, newest first", function()
      assert(call(one, "t", ID_A, "write_file", { path = "f.txt", content = "one\n" }))
      assert(call(two, "t", ID_A, "edit_file", { path = "f.txt", old_text = "one", new_text = "two" }))
      assert(call(one, "t", ID_A, "append_file", { path = "f.txt", content = "three\n" }))
      local r = assert(call(two, "t", ID_A, "undo_edit", { path = "f.txt" }))
      assert.equal(2, r.remaining)
      assert.equal("two\n", read("f.txt"))
      assert(call(one, "t", ID_A, "undo_edit", { path = "f.txt" }))
      assert.equal("one\n", read("f.txt"))
      assert(call(two, "t", ID_A, "undo_edit", { path = "f.txt" }))
      assert.is_nil(read("f.txt"))
    end)

    it("another principal of the tenant, or another tenant naming the same store, undoes nothing", function()
      assert(call(one, "t", ID_A, "write_file", { path = "mine.txt", content = "mine\n" }))
      assert(call(one, "t", ID_A, "write_file", { path = "mine.txt", content = "changed\n" }))
      for _, who in ipairs { { "t", ID_B }, { "u", ID_A }, { "", ID_A } } do
        local r, msg, code, details = call(two, who[1], who[2], "undo_edit", { path = "mine.txt" })
        assert.is_nil(r)
        assert.equal("INVALID_ARGUMENT", code, msg)
        assert.is_true(details.nothing_to_undo)
      end
      assert.equal("changed\n", read("mine.txt"))
      assert(call(two, "t", ID_A, "undo_edit", { path = "mine.txt" }))
      assert.equal("mine\n", read("mine.txt"))
    end)

    it("paths with ..: one file is one history; outside the root nothing is written or recorded", function()
      assert(call(one, "t", ID_A, "write_file", { path = "sub/../g.txt", content = "g1\n" }))
      assert(call(one, "t", ID_A, "write_file", { path = "g.txt", content = "g2\n" }))
      assert(call(two, "t", ID_A, "undo_edit", { path = "./sub/../g.txt" }))
      assert.equal("g1\n", read("g.txt"))
      for _, p in ipairs { "../outside.txt", "sub/../../outside.txt", B .. "/outside.txt" } do
        local r, msg, code = call(one, "t", ID_A, "write_file", { path = p, content = "x" })
        assert.is_nil(r)
        assert.equal("OUTSIDE_ROOT", code, msg)
        local u, umsg, ucode = call(two, "t", ID_A, "undo_edit", { path = p })
        assert.is_nil(u)
        assert.equal("OUTSIDE_ROOT", ucode, umsg)
      end
      local f = io.open(B .. "/outside.txt")
      assert.is_nil(f)
    end)

    it("a file over what a shared record keeps: its undo says so and changes nothing", function()
      local big = ("x"):rep(1536 * 1024)
      assert(call(one, "t", ID_A, "write_file", { path = "big.txt", content = big }))
      assert(call(one, "t", ID_A, "write_file", { path = "big.txt", content = "small\n" }))
      local r, msg, code, details = call(two, "t", ID_A, "undo_edit", { path = "big.txt" })
      assert.is_nil(r)
      assert.equal("TOO_LARGE", code)
      assert.matches("shared undo store keeps at most", msg)
      assert.equal("shared_undo_record", details.limit)
      assert.equal(#big, details.size)
      assert.equal("small\n", read("big.txt"))
      -- the marker taken, the change before it (the file's creation) left
      -- the big content, which the file no longer has: refused, not removed
      local r2, msg2, code2 = call(two, "t", ID_A, "undo_edit", { path = "big.txt" })
      assert.is_nil(r2)
      assert.equal("HASH_MISMATCH", code2, msg2)
      assert.equal("small\n", read("big.txt"))
    end)

    it("an edit_files change: one undo step, the principal's only; a link out refuses it and gives it back", function()
      os.execute("mkdir -p " .. B .. "/outside && printf SECRET > " .. B .. "/outside/secret.txt")
      assert(call(one, "t", ID_A, "write_file", { path = "u1.txt", content = "U1\n" }))
      assert(call(one, "t", ID_A, "write_file", { path = "u2.txt", content = "U2\n" }))
      assert(call(one, "t", ID_A, "edit_files", { files = { { path = "u1.txt", content = "N1\n" }, { path = "u2.txt", content = "N2\n" } } }))
      for _, who in ipairs { { "t", ID_B }, { "u", ID_A } } do
        local r, msg, code = call(two, who[1], who[2], "undo_edit", { path = "u1.txt" })
        assert.is_nil(r)
        assert.equal("INVALID_ARGUMENT", code, msg)
      end
      os.execute("rm " .. B .. "/root/u2.txt && ln -s " .. B .. "/outside/secret.txt " .. B .. "/root/u2.txt")
      local r, msg, code = call(two, "t", ID_A, "undo_edit", { path = "u1.txt" })
      assert.is_nil(r)
      assert.is_truthy(({ HASH_MISMATCH = 1, OUTSIDE_ROOT = 1, POLICY_DENIED = 1, ELOOP = 1 })[code], msg)
      assert.is_nil(msg:find("SECRET", 1, true))
      local f = assert(io.open(B .. "/outside/secret.txt", "rb"))
      assert.equal("SECRET", f:read("a"))
      f:close()
      assert.equal("N1\n", read("u1.txt"))
      -- the link gone and the file as the change left it: the undo, refused
      -- before, is whole again, through either instance
      os.execute("rm " .. B .. "/root/u2.txt && printf 'N2\\n' > " .. B .. "/root/u2.txt")
      local u = assert(call(one, "t", ID_A, "undo_edit", { path = "u2.txt" }))
      assert.equal(2, u.files)
      assert.equal("U1\n", read("u1.txt"))
      assert.equal("U2\n", read("u2.txt"))
    end)

    it("a tenant's budget spent by one of its principals: another's change keeps a marker, never another's bytes", function()
      local budget = { name = "spec-budget", cap = 20000 }
      local body = ("y"):rep(12000)
      assert(call(one, "b", ID_A, "write_file", { path = "b1.txt", content = body }, budget))
      assert(call(one, "b", ID_A, "write_file", { path = "b1.txt", content = "after\n" }, budget))
      assert(call(one, "b", ID_B, "write_file", { path = "b2.txt", content = body }, budget))
      assert(call(one, "b", ID_B, "write_file", { path = "b2.txt", content = "after\n" }, budget))
      local r, msg, code, details = call(two, "b", ID_B, "undo_edit", { path = "b2.txt" }, budget)
      assert.is_nil(r)
      assert.equal("TOO_LARGE", code, msg)
      assert.equal("tenant", details.budget)
      assert.equal("after\n", read("b2.txt"))
      assert(call(two, "b", ID_A, "undo_edit", { path = "b1.txt" }, budget))
      assert.equal(body, read("b1.txt"))
    end)

    -- ten files of the root, each "<name> v1\n" on disk (no history of
    -- its own): their names
    local function ten(prefix)
      local names = {}
      for i = 1, 10 do
        names[i] = ("%s%02d.txt"):format(prefix, i)
        F.write_host(B .. "/root/" .. names[i], names[i] .. " v1\n")
      end
      return names
    end
    local function rename_all(names)
      local files = {}
      for i, n in ipairs(names) do files[i] = { path = n, edits = { { old_text = "v1", new_text = "v2" } } } end
      return { files = files }
    end
    local function all_are(names, v, label)
      for _, n in ipairs(names) do assert.equal(n .. " " .. v .. "\n", read(n), label .. ": " .. n) end
    end

    it("a 10-file edit_files change through one instance: one undo_edit through the other restores all ten", function()
      local names = ten("m")
      local ef = assert(call(one, "t", ID_A, "edit_files", rename_all(names)))
      assert.equal(10, #ef.files)
      all_are(names, "v2", "changed")
      local u = assert(call(two, "t", ID_A, "undo_edit", { path = names[4] }))
      assert.equal(10, u.files)
      assert.equal(names[4], u.path)
      all_are(names, "v1", "after the one undo")
      -- undone once: no file of it has anything left to undo, on either instance
      for i, n in ipairs(names) do
        local r, msg, code, details = call(i % 2 == 0 and one or two, "t", ID_A, "undo_edit", { path = n })
        assert.is_nil(r)
        assert.equal("INVALID_ARGUMENT", code, msg)
        assert.is_true(details.nothing_to_undo, msg)
      end
      all_are(names, "v1", "after")
    end)

    it("one of the ten changed since: the whole undo refused naming it, as the embedded store refuses it", function()
      -- the same change and the same stale file with the undo store of
      -- this process (no state:): what a shared store must answer alike
      local alone = H.open(B .. "/root")
      local names = ten("s")
      assert(alone:call("edit_files", rename_all(names)))
      F.write_host(B .. "/root/" .. names[7], "someone else\n")
      local _, emsg, ecode, edetails = alone:call("undo_edit", { path = names[2] })
      assert.equal("HASH_MISMATCH", ecode, emsg)
      for i, n in ipairs(names) do
        if i ~= 7 then F.write_host(B .. "/root/" .. n, n .. " v1\n") end
      end
      F.write_host(B .. "/root/" .. names[7], names[7] .. " v1\n")

      assert(call(one, "t", ID_A, "edit_files", rename_all(names)))
      F.write_host(B .. "/root/" .. names[7], "someone else\n")
      local r, msg, code, details = call(two, "t", ID_A, "undo_edit", { path = names[2] })
      assert.is_nil(r)
      assert.equal(ecode, code, msg)
      assert.equal(emsg, msg)
      assert.equal(7, details.file)
      assert.equal(edetails.file, details.file)
      assert.equal(edetails.current, details.current)
      assert.matches(names[7], msg, 1, true)
      assert.matches("nothing was undone", msg, 1, true)
      for i, n in ipairs(names) do
        assert.equal(i == 7 and "someone else\n" or n .. " v2\n", read(n), "nothing undone: " .. n)
      end
      -- the file back as the change left it: the same undo, whole, through
      -- the other instance (the refusal gave the change back)
      F.write_host(B .. "/root/" .. names[7], names[7] .. " v2\n")
      local u = assert(call(one, "t", ID_A, "undo_edit", { path = names[9] }))
      assert.equal(10, u.files)
      all_are(names, "v1", "after the undo")
    end)

    it("a policy refusing the write of one of its files refuses the whole undo; the change stays whole for a later one", function()
      local names = ten("heldp")
      assert(call(one, "t", ID_A, "edit_files", rename_all(names)))
      local asked = {}
      local function no(req)
        asked[#asked + 1] = req.path
        return false, "not this one"
      end
      local r, msg, code = call(two, "t", ID_A, "undo_edit", { path = names[8] }, nil, no)
      assert.is_nil(r)
      assert.equal("POLICY_DENIED", code, msg)
      assert.equal(1, #asked, "refused at the first file asked: " .. table.concat(asked, ", "))
      all_are(names, "v2", "nothing undone")
      local u = assert(call(one, "t", ID_A, "undo_edit", { path = names[8] }, nil, function() return true end))
      assert.equal(10, u.files)
      all_are(names, "v1", "undone whole once approved")
    end)

    it("a change whose group record is gone for good (expired): each file's undo says so and takes it off, never undoes by halves", function()
      local names = ten("x")
      -- the change's records live 2 s after it (a session's history
      -- lives http.session_ttl after a file's last change)
      local function c(ws, tool, args, ttl)
        return ws:call(tool, args, { session = { id = "spec", tenant = "t", token = "aaaa", undo_named = ID_A,
          undo_ttl = ttl or 60 } })
      end
      assert(c(one, "edit_files", rename_all(names), 2))
      -- a change of the first file on top of it: its history lives on (60 s)
      assert(c(two, "edit_file", { path = names[1], old_text = "v2", new_text = "v3" }))
      -- until the change's group record and the other files' histories are gone
      assert(H.eventually(function()
        local _, _, _, details = c(two, "undo_edit", { path = names[2] })
        return details and details.nothing_to_undo
      end))
      assert.equal(names[2] .. " v2\n", read(names[2]), "nothing undone")
      local back = assert(c(one, "undo_edit", { path = names[1] }))
      assert.is_nil(back.files)
      assert.equal(names[1] .. " v2\n", read(names[1]))
      -- the edit_files change of it: refused (alone it would be half the change), and taken off
      local r, msg, code, details = c(two, "undo_edit", { path = names[1] })
      assert.is_nil(r)
      assert.equal("TOO_LARGE", code, msg)
      assert.matches("cannot be undone as one", msg, 1, true)
      assert.is_true(details.group)
      all_are(names, "v2", "nothing undone")
      local _, msg2, code2, details2 = c(one, "undo_edit", { path = names[1] })
      assert.equal("INVALID_ARGUMENT", code2, msg2)
      assert.is_true(details2.nothing_to_undo, msg2)
    end)

    if store.redis then
      it("the store not answering: the undo of the change is STORE_UNAVAILABLE, nothing undone; then it is whole", function()
        local names = ten("d")
        assert(call(one, "t", ID_A, "edit_files", rename_all(names)))
        srv.freeze()
        local r, msg, code = call(two, "t", ID_A, "undo_edit", { path = names[1] })
        srv.thaw()
        assert.is_nil(r)
        assert.equal("STORE_UNAVAILABLE", code, msg)
        assert.matches("nothing was undone", msg, 1, true)
        all_are(names, "v2", "nothing undone")
        local u = assert(call(one, "t", ID_A, "undo_edit", { path = names[10] }))
        assert.equal(10, u.files)
        all_are(names, "v1", "undone whole")
      end)

      it("the store stops answering in the middle of the undo: STORE_UNAVAILABLE, nothing undone, the change not lost", function()
        local names = ten("held")
        assert(call(one, "t", ID_A, "edit_files", rename_all(names)))
        -- the first file's write is asked about (the asker policy) after
        -- the change is held for this undo and before the second file is read
        local frozen = false
        local function freeze()
          srv.freeze()
          frozen = true
          return true
        end
        local ok, r, msg, code = pcall(call, two, "t", ID_A, "undo_edit", { path = names[3] }, nil, freeze)
        if frozen then srv.thaw() end
        assert.is_true(ok, r)
        assert.is_true(frozen, "the approval hook was asked")
        assert.is_nil(r)
        assert.equal("STORE_UNAVAILABLE", code, msg)
        assert.matches("nothing was undone", msg, 1, true)
        all_are(names, "v2", "nothing undone")
        -- the store answers again: the change is undone whole, once the
        -- failed undo's hold on it has lapsed (it could not let go of it
        -- while the store did not answer); until then the undo says another
        -- call holds it, and changes nothing
        local u, seen = nil, {}
        assert(H.eventually(function()
          local m, c
          u, m, c = call(one, "t", ID_A, "undo_edit", { path = names[5] }, nil, function() return true end)
          if not u then
            seen[#seen + 1] = tostring(c) .. ": " .. tostring(m)
            assert.equal("EAGAIN", c, m)
            all_are(names, "v2", "nothing undone while it is held")
          end
          return u
        end), "the change is undone in the end: " .. table.concat(seen, "\n"))
        assert.equal(10, u.files)
        all_are(names, "v1", "undone whole")
      end)
    end
  end)
end
