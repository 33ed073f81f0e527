-- What the specs of the standard policies' installed forms share
-- (spec/policy/standard_bytecode_spec.lua, standard_data_spec.lua): called
-- inside a describe with its before_each and after_each, each test gets a
-- root holding a.txt (S.root), and after it the workspace it opened last
-- is closed and policy.dir put back.
-- S.open(opts): a workspace on that root, without the protected policy;
-- S.answer(): what a stat of a.txt gives in it ("allowed", or the message).

local H = require "helpers"
local burrow = require "burrow"
local policy = require "burrow.policy"

return function(before_each, after_each) -- busted's, from the spec
  local S, saved, ws = {}, nil, nil

  before_each(function()
    S.root = H.tmpdir()
    H.write(S.root, "a.txt", "a\n")
    saved = policy.dir
  end)

  after_each(function()
    policy.dir = saved
    if ws then ws:close() end
    ws = nil
    H.cleanup()
  end)

  function S.open(opts)
    local o = { roots = { { path = S.root } }, resolver = H.RESOLVER, protect = false }
    for k, v in pairs(opts) do o[k] = v end
    ws = assert(burrow.open(o))
    return ws
  end

  function S.answer()
    local res, msg = ws:call("stat", { path = "a.txt" })
    return res and "allowed" or msg
  end

  return S
end
