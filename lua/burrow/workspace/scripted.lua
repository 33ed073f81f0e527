-- burrow.workspace.scripted: what the operator's MCP prompts and resources
-- (burrow.workspace.prompts, burrow.workspace.operator_resources) share: their files loaded and
-- checked, the ctx their code gets, and the answer of a completion.

local core = require "burrow.core"
local whole_name = require("burrow.base.files").whole_name
local json = core.json

local scripted = {}

scripted.MAX_VALUES = 100 -- completion values per answer (MCP's cap)

--- Each file run and its value checked (check(value, file) -> value | nil,
-- why), key(value) naming it: the values in order and an index by key, or
-- nil and what is wrong (dup: the message for a key given twice, %s of the
-- key and the file).
function scripted.load(files, check, key, dup)
  local list, by_key = {}, {}
  for _, file in ipairs(files or {}) do
    local chunk, err = core.loadfile(file)
    if not chunk then return nil, whole_name(err, file) end
    local ok, v = pcall(chunk)
    if not ok then return nil, ("%s: %s"):format(file, whole_name(v, file)) end
    local checked, why = check(v, file)
    if not checked then return nil, why end
    local k = key(v)
    if by_key[k] then return nil, dup:format(k, file) end
    list[#list + 1], by_key[k] = v, v
  end
  return list, by_key
end

--- What operator code gets: ctx:call runs a tool as the client's own call
-- would (its policies, its caps, the session's scope); ctx:ask(key, method,
-- params) asks the client as a tool's ctx:ask does, where the caller can
-- (hooks.ask: a prompt), else nil and why.
function scripted.ctx(ws, hooks)
  return {
    call = function(_, tool, args) return ws:call(tool, args or {}, hooks) end,
    ask = function(_, key, method, params)
      if not hooks.ask then return nil, "this caller cannot ask the client" end
      return hooks.ask(key, method, params)
    end,
  }
end

--- completion/complete's answer: at most MAX_VALUES of list.
function scripted.values(list)
  local vals = json.array {}
  for i = 1, math.min(#list, scripted.MAX_VALUES) do vals[i] = tostring(list[i]) end
  return { completion = { values = vals, total = #list, hasMore = #list > scripted.MAX_VALUES } }
end

--- An operator's complete(name, value, ctx) run for argument: its values
-- (none without one), or nil, -32603 and a message when it fails (what:
-- whose it is, for the message; the error goes to stderr).
function scripted.complete(fn, argument, ctx, what)
  if not fn then return scripted.values {} end
  local ok, list = pcall(fn, argument.name, argument.value, ctx)
  if not ok then
    io.stderr:write("burrow: ", what, " complete failed: ", tostring(list), "\n")
    return nil, -32603, ("%s: completion failed; see the server log"):format(what)
  end
  return scripted.values(type(list) == "table" and list or {})
end

return scripted
