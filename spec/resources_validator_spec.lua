-- resources/read's validator (issue 42): each file's contents carry the
-- file's sha256 as _meta.version (the MCP Files Working Group strawman's
-- opaque version), and a read whose params._meta presents it as
-- "burrow/if_none_match" gets no contents, only _meta "burrow/not_modified"
-- and the version. Both eras of MCP; a denied file refused the same with or
-- without a validator.

local H = require "helpers"
local mcp = require "burrow.mcp"
local json = H.json

local TEXT, BIN = "hello\nworld\n", "\0\1\2\255\0"

-- Answers of an in-process Server on ws to messages, by id.
local function serve(ws, msgs)
  local out = {}
  local server = mcp.new(ws, { channel = mcp.channel(function(m) out[#out + 1] = m end) })
  for _, m in ipairs(msgs) do
    m.jsonrpc = "2.0"
    server:handle(m)
  end
  local by_id = {}
  for _, m in ipairs(out) do if m.id ~= nil then by_id[m.id] = m end end
  return by_id
end

-- A request of the era (req from H.both_eras) with "burrow/if_none_match"
-- in its _meta when v is given.
local function read_req(req, id, uri, v)
  local m = req(id, "resources/read", { uri = uri })
  if v ~= nil then
    local meta = {}
    for k, x in pairs(m.params._meta or {}) do meta[k] = x end
    meta["burrow/if_none_match"] = v
    m.params._meta = meta
  end
  return m
end

describe(H.tag("resources/read validator"), function()
  local ws, dir
  before_each(function()
    dir = H.tmpdir()
    H.write_all(dir, { ["a.txt"] = TEXT, ["b.bin"] = BIN, [".env"] = "API_KEY=s3cr3t\n" })
    ws = H.open { roots = { { path = dir } }, policies = { "default", "secrets" } }
  end)
  after_each(H.cleanup)

  local function uri(rel) return "file://" .. dir .. "/" .. rel end

  H.both_eras(it, "every file's contents carry _meta.version, the file's sha256", function(req, pre)
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = read_req(req, 1, uri("a.txt"))
    msgs[#msgs + 1] = read_req(req, 2, uri("b.bin"))
    local got = serve(ws, msgs)
    local text, blob = got[1].result.contents[1], got[2].result.contents[1]
    assert.equal(TEXT, text.text)
    assert.equal(H.sha256_of(TEXT), text._meta.version)
    assert.equal(BIN, require("burrow.core").base64_decode(blob.blob))
    assert.equal(H.sha256_of(BIN), blob._meta.version)
    assert.is_nil((got[1].result._meta or {})["burrow/not_modified"])
  end)

  H.both_eras(it, "a matching version: not modified, no contents", function(req, pre)
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = read_req(req, 1, uri("a.txt"), H.sha256_of(TEXT))
    msgs[#msgs + 1] = read_req(req, 2, uri("b.bin"), H.sha256_of(BIN))
    local got = serve(ws, msgs)
    for id, body in pairs { TEXT, BIN } do
      local r = got[id].result
      assert.is_table(r, json.encode(got[id]))
      assert.equal(0, #r.contents)
      assert.equal("[]", json.encode(r.contents))
      assert.is_true(r._meta["burrow/not_modified"])
      assert.equal(H.sha256_of(body), r._meta.version)
    end
  end)

  H.both_eras(it, "a stale version: the contents and the new version", function(req, pre)
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = read_req(req, 1, uri("a.txt"), H.sha256_of("older\n"))
    msgs[#msgs + 1] = read_req(req, 2, uri("a.txt"), "not a hash")
    local got = serve(ws, msgs)
    for id = 1, 2 do
      local c = got[id].result.contents[1]
      assert.equal(TEXT, c.text)
      assert.equal(H.sha256_of(TEXT), c._meta.version)
      assert.is_nil((got[id].result._meta or {})["burrow/not_modified"])
    end
  end)

  H.both_eras(it, "a denied file: the same error with or without a version", function(req, pre)
    local msgs = { table.unpack(pre) }
    msgs[#msgs + 1] = read_req(req, 1, uri(".env"))
    msgs[#msgs + 1] = read_req(req, 2, uri(".env"), H.sha256_of("API_KEY=s3cr3t\n"))
    msgs[#msgs + 1] = read_req(req, 3, uri(".env"), H.sha256_of("other\n"))
    local got = serve(ws, msgs)
    assert.is_table(got[1].error)
    assert.equal("POLICY_DENIED", got[1].error.data.code)
    for id = 2, 3 do
      got[id].id = 1
      assert.equal(json.encode(got[1]), json.encode(got[id]))
    end
  end)
end)
