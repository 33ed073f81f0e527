-- burrow.workspace.policy_sandbox: what burrow.policy needs for a policy
-- that runs (one with a check() or an after(), options, an operator's
-- file, an edited standard one): the sandbox made with the first, the
-- policy's text, or the bytecode `make install` compiled from a standard
-- one, loaded into it, its fields read, its check_paths compiled, its
-- check() asked (Engine:answer). Required by policy.lua with the first such
-- policy: a start with the standard policies, whose fields `make install`
-- wrote (NAME.luad), makes no sandbox and loads none of this.

local core = require "burrow.core"
local files = require "burrow.base.files"

local sandbox = {}

-- What policy.load uses of a loaded policy's table (sandbox sb, key):
-- plain data, and whether it has a check() and an after().
function sandbox.fields(sb, key)
  return { options = sb:get(key, "options"), scope = sb:get(key, "scope"), rules = sb:get(key, "rules"),
    check_paths = sb:get(key, "check_paths"), check_casefold = sb:get(key, "check_casefold"),
    check = sb:has(key, "check"), after = sb:has(key, "after") }
end

-- Load policy p (its text src) into the sandbox held.sb, made with the
-- first ({limits =, state =, base_dir =}: policy.load's; held.sb and
-- held.state set here); compiled_beside: policy.lua's. Its fields, or
-- nil, message.
function sandbox.load(held, p, src, compiled_beside)
  -- store: a counter file the host opens for the policy (shared_add and
  -- state.* in its _ENV); the operator names it, the policy code cannot
  -- open files
  local store = p.options.store
  if store ~= nil and type(store) ~= "string" then
    return nil, ("policy %s: store must be a file name"):format(p.label)
  end
  if store and held.base_dir and store:sub(1, 1) ~= "/" then store = held.base_dir .. "/" .. store end
  if not held.sb then
    held.sb = core.sandbox(held.limits)
    held.state = held.state or core.state_open { kind = "memory" }
  end
  -- the chunk: for one of burrow's own standard policies (by name, from
  -- the standard directory) the bytecode `make install` compiled from it
  -- (NAME.luac: the text, then its bytecode; host/luac.lua), when the
  -- text there is src byte for byte, so a start does not parse it; else src
  local chunk, binary = compiled_beside(p, src, p.file .. "c"), true
  if not chunk then chunk, binary = src, false end
  local ok, lerr = held.sb:load(p.key, chunk, p.options, store, "@" .. p.source, held.state, binary)
  if not ok then return nil, ("policy %s: %s"):format(p.label, files.whole_name(lerr, p.source)) end
  return sandbox.fields(held.sb, p.key)
end

function sandbox.check_paths(p, paths, asks, casefold)
  if type(paths) == "string" then paths = { paths } end
  if type(paths) ~= "table" or #paths == 0 then
    return ("policy %s: check_paths must be a list of globs (the in-root paths check() is about)"):format(p.label)
  end
  for i, g in ipairs(paths) do
    if type(g) ~= "string" or g == "" then return ("policy %s: check_paths[%d] must be a glob"):format(p.label, i) end
  end
  if not p.has_check then return ("policy %s: check_paths without a check()"):format(p.label) end
  if casefold ~= nil and type(casefold) ~= "boolean" then
    return ("policy %s: check_casefold must be true or false"):format(p.label)
  end
  local spec = { patterns = paths, except = {}, ops = { "read", "list", "write", "delete" }, id = #asks,
    casefold = casefold == true }
  local compiled, err = core.rules { spec }
  if not compiled then return ("policy %s: check_paths: %s"):format(p.label, err) end
  p.ask_rules = compiled
  asks[#asks + 1] = spec
end

function sandbox.answer(self, p, req)
  local outages = self.sandbox:outages()
  local ok, answer, reason = self.sandbox:call(p.key, "check", req)
  local code = self.sandbox:outages() > outages and "STORE_UNAVAILABLE" or nil
  if not ok then
    return "deny", ("denied by policy %s (policy error)"):format(p.label),
      ("policy %s failed, so the call is denied: %s"):format(p.label,
        files.whole_name(tostring(answer), p.source or p.file)), true, code
  end
  if answer == "deny" then
    if reason then return "deny", tostring(reason), nil, nil, code end
    return "deny", "denied by policy " .. p.label, nil, true, code
  elseif answer == "ask" then
    return "ask", reason and tostring(reason) or ("policy " .. p.label .. " asks for approval")
  elseif answer ~= "allow" and answer ~= nil then
    return "deny", ("denied by policy %s (policy error)"):format(p.label),
      ("policy %s answered %q; expected allow, deny or ask"):format(p.label, tostring(answer)), true
  end
  return "allow"
end

return sandbox
