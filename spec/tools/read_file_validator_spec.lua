-- read_file's validator (issue 42): every read names the whole file's
-- sha256 (content_hash; over MCP also _meta["burrow/sha256"]), and a read
-- that presents the one it holds (if_none_match) gets a short "not
-- modified" answer without the content. A policy that denies the read
-- denies it the same with or without a validator.

local H = require "helpers"
local mcp = require "burrow.mcp"
local core = require "burrow.core"

local PNG = core.base64_decode("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC")
local NOTEBOOK = [[{"cells":[{"cell_type":"code","id":"c1","metadata":{},"source":["print(1)"],"outputs":[],"execution_count":null}],
"metadata":{},"nbformat":4,"nbformat_minor":5}]]

local function lines(n)
  local t = {}
  for i = 1, n do t[i] = ("line %d of the file\n"):format(i) end
  return table.concat(t)
end

describe(H.tag("read_file validator"), function()
  local ws, dir, server
  local FILES = {
    ["a.txt"] = lines(300),
    ["dot.png"] = PNG,
    ["n.ipynb"] = NOTEBOOK,
    ["u16.txt"] = "\255\254" .. ("h\0i\0\n\0"):rep(3),
    ["empty.txt"] = "",
  }

  before_each(function()
    ws, dir = H.workspace(FILES, { max_result_bytes = 2000 })
    server = mcp.new(ws)
  end)
  after_each(H.cleanup)

  -- The MCP result of a call, as tools/call answers it.
  local function mcp_call(args)
    local res, msg, code, details = ws:call("read_file", args)
    return server:tool_result("read_file", res, msg, code, details), res, msg, code
  end

  it("names the whole file's sha256 in every read: paged, capped, past the end, base64, image, notebook, decoded", function()
    local reads = {
      { path = "a.txt" },                          -- capped by max_result_bytes (2000)
      { path = "a.txt", offset = 100, limit = 5 }, -- a page
      { path = "a.txt", offset = 1000 },           -- past the end
      { path = "u16.txt", encoding = "base64" },
      { path = "dot.png" },
      { path = "n.ipynb" },
      { path = "n.ipynb", notebook = false },
      { path = "u16.txt" },
      { path = "empty.txt" },
    }
    for _, a in ipairs(reads) do
      local want = H.sha256_of(FILES[a.path])
      local out, res, msg = mcp_call(a)
      assert.is_table(res, msg)
      local what = core.json.encode(a)
      assert.equal(want, res.content_hash, what)
      assert.is_nil(out.isError, what)
      assert.equal(want, out._meta and out._meta["burrow/sha256"], what)
      assert.equal(want, out.structuredContent.content_hash, what)
    end
    -- the capped read was cut: the validator is still the whole file's
    local _, capped = mcp_call { path = "a.txt" }
    assert.is_true(capped.truncated)
    assert.is_number(capped.next_offset)
  end)

  it("a matching validator: not modified, and no content", function()
    local hash = assert(ws:call("read_file", { path = "a.txt" })).content_hash
    for _, a in ipairs {
      { path = "a.txt", if_none_match = hash },
      { path = "a.txt", if_none_match = hash, offset = 100, limit = 5 },
      { path = "a.txt", if_none_match = hash, encoding = "base64" },
      { path = "a.txt", if_none_match = hash:upper():gsub("^SHA256", "sha256") },
    } do
      local what = core.json.encode(a)
      local out, res, msg = mcp_call(a)
      assert.is_table(res, msg)
      assert.is_true(res.not_modified, what)
      assert.equal(hash, res.content_hash, what)
      assert.equal(#FILES["a.txt"], res.size, what)
      assert.is_nil(res.content, what)
      assert.is_nil(res.lines, what)
      assert.is_nil(res.total_lines, what)
      -- over MCP: one short text block, the structured fields, the validator
      assert.equal(1, #out.content, what)
      local text = out.content[1].text
      assert.truthy(text:find("not modified", 1, true), text)
      assert.truthy(text:find(hash, 1, true), text)
      assert.is_nil(text:find("line 1 of", 1, true), text)
      assert.is_true(#text < 200, text)
      assert.is_true(out.structuredContent.not_modified, what)
      assert.equal(hash, out._meta["burrow/sha256"], what)
      assert.is_true(out._meta["burrow/not_modified"], what)
    end
    -- an image and a notebook too
    for _, p in ipairs { "dot.png", "n.ipynb", "empty.txt" } do
      local h = H.sha256_of(FILES[p])
      local r = assert(ws:call("read_file", { path = p, if_none_match = h }))
      assert.is_true(r.not_modified, p)
      assert.is_nil(r.content, p)
    end
  end)

  it("a stale validator gets the content and the new validator", function()
    local old = assert(ws:call("read_file", { path = "a.txt", limit = 3 })).content_hash
    H.write(dir, "a.txt", "changed\n")
    local out, res = mcp_call { path = "a.txt", if_none_match = old }
    assert.is_nil(res.not_modified)
    assert.equal("1\tchanged\n", res.content)
    local new = H.sha256_of("changed\n")
    assert.equal(new, res.content_hash)
    assert.equal(new, out._meta["burrow/sha256"])
    assert.is_nil(out._meta["burrow/not_modified"])
    -- anything that is not the file's hash is stale: the content comes back
    for _, v in ipairs { "", "sha256:00", "absent", "*", new .. " " } do
      local r = assert(ws:call("read_file", { path = "a.txt", if_none_match = v }))
      assert.equal("1\tchanged\n", r.content, v)
    end
  end)

  it("a big file's cached facts never answer for a changed file of the same size", function()
    local big = lines(60000) -- over 1 MiB: its facts are cached per workspace
    H.write(dir, "big.txt", big)
    local old = assert(ws:call("read_file", { path = "big.txt", limit = 1 })).content_hash
    assert.is_true(assert(ws:call("read_file", { path = "big.txt", limit = 1, if_none_match = old })).not_modified)
    local changed = "LINE" .. big:sub(5)
    H.write(dir, "big.txt", changed)
    local r = assert(ws:call("read_file", { path = "big.txt", limit = 1, if_none_match = old }))
    assert.is_nil(r.not_modified)
    assert.equal("1\tLINE 1 of the file\n", r.content)
    assert.equal(H.sha256_of(changed), r.content_hash)
  end)

  it("tail reads no whole file: no validator, and if_none_match with tail is refused", function()
    local out, res = mcp_call { path = "a.txt", tail = 2 }
    assert.is_nil(res.content_hash)
    assert.is_nil(out._meta)
    local _, r, msg, code = mcp_call { path = "a.txt", tail = 2, if_none_match = H.sha256_of(FILES["a.txt"]) }
    assert.is_nil(r)
    assert.equal("INVALID_ARGUMENT", code)
    assert.truthy(msg:find("if_none_match", 1, true), msg)
  end)

  it("a pack's read (ctx:call) keeps its shape: lines, content_hash, no not_modified", function()
    local res = assert(ws:call_native("read_file", { path = "a.txt", limit = 2 }, nil, "test_pack_tool"))
    assert.same({ "line 1 of the file", "line 2 of the file" }, res.lines)
    assert.equal(H.sha256_of(FILES["a.txt"]), res.content_hash)
    assert.is_nil(res.not_modified)
  end)
end)

describe(H.tag("read_file validator: a denied read stays denied"), function()
  after_each(H.cleanup)

  it("refuses a file a policy denies identically with and without a validator, matching or not", function()
    local dir = H.tmpdir()
    H.write_all(dir, { [".env"] = "API_KEY=s3cr3t\n", ["ok.txt"] = "fine\n" })
    local ws = H.open { roots = { { path = dir } }, policies = { "default", "secrets" } }
    local server = mcp.new(ws)
    local function answer(args)
      local res, msg, code, details = ws:call("read_file", args)
      assert.is_nil(res)
      return core.json.encode(server:tool_result("read_file", res, msg, code, details))
    end
    local plain = answer { path = ".env" }
    assert.truthy(plain:find("POLICY_DENIED", 1, true), plain)
    local right = H.sha256_of("API_KEY=s3cr3t\n")
    assert.equal(plain, answer { path = ".env", if_none_match = right })
    assert.equal(plain, answer { path = ".env", if_none_match = "sha256:" .. ("0"):rep(64) })
    -- the readable file next to it still answers the validator
    local h = H.sha256_of("fine\n")
    assert.is_true(assert(ws:call("read_file", { path = "ok.txt", if_none_match = h })).not_modified)
  end)
end)
