-- undo_edit's history in the deployment's state store (issue 45): two
-- workspaces on one state store stand for two instances of a deployment
-- (as burrow mcp --http opens them with state:). Each call carries its
-- session record as the HTTP listener builds it: the principal (tenant,
-- token) and the name of its shared store (undo_named: derived from the
-- session id, or the stateless principal's). An attacker's angles: another
-- principal of the same tenant or another tenant naming the same store,
-- paths with .. (the same file is one history; outside the root, none),
-- a file over the 1 MiB a shared record keeps, a tenant's budget spent by
-- another of its principals; an edit_files change (one undo step, its
-- group's record taken by the undo): another principal cannot undo it, a
-- file of it turned into a link out makes its undo refuse with nothing
-- outside touched, and a refused undo gives the group back (no lock-out).

local burrow = require "burrow"
local core = require "burrow.core"
local F = require "spec.security.fixture"

local ID_A = ("a"):rep(32)
local ID_B = ("b"):rep(32)

describe(F.tag("undo_edit shared by instances"), function()
  local B, st, one, two

  local function open()
    local ws = assert(burrow.open { roots = { { path = B .. "/root" } }, resolver = F.RESOLVER,
      state = st, state_config = { url = "redis://the.store.of.this.spec/0" } })
    return ws
  end
  -- a call of principal (tenant, store name) through ws, as a fresh
  -- request record (each instance builds its own)
  local function call(ws, tenant, id, tool, args, budget)
    return ws:call(tool, args, { session = { id = "spec", tenant = tenant, token = id:sub(1, 4), undo_named = id,
      undo_budget = budget } })
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
    st = core.state_open { kind = "memory" }
    one, two = open(), open()
  end)
  teardown(function()
    one:close()
    two:close()
    st:close()
    F.rmtree(B)
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
end)
