-- burrow.toolkit.context_tree: the part of ctx (burrow.toolkit.context) for
-- the entries of walks and subtrees: judged one by one or as declared
-- rules, a subtree's staged entries and their landing places, hidden
-- entries revealed. context.lua loads it with the first lookup it does
-- not answer itself and gives it its tables and its decide (one judgement
-- recorded for the call's audit); a call on one path needs none of it.

local core = require "burrow.core"
local errors = require "burrow.base.errors"

return function(context, Ctx, decide)

local function under(rel, sub)
  if rel == "." then return sub end
  return rel .. "/" .. sub
end

-- Ask the policies about each entry of a subtree as it stands (or will
-- stand) under the object of the path argument arg, for op: how many
-- were refused, and the first refused request. Entries that exist are
-- judged with their facts; landing places as paths that do not exist yet.
-- Past max_tree_ms, or once the call is cancelled, it stops: nil,
-- message, code (nothing is done).
function Ctx:judge_entries(entries, arg, op, exists, nested)
  local j, path = self.by_arg[arg], self.args[arg]
  local info = j.info
  local refused, first = 0, nil
  for i, e in ipairs(entries) do
    if i % 64 == 0 and self:over("max_tree_ms") then
      return nil, errors.message("TOO_LARGE", path, ("checking its %d entries against the policies took longer than max_tree_ms=%d (%d checked); nothing was done")
        :format(#entries, self.caps.max_tree_ms, i - 1)), "TOO_LARGE"
    end
    if i % 64 == 0 and self:cancelled() then
      return nil, errors.message("EAGAIN", path, "the call was cancelled; nothing was done"), "EAGAIN"
    end
    local at, inner = self:member(info, e.path, nested) -- below a nested root: its paths
    if not inner then at.lexical = under(info.lexical, e.path) end
    at.exists, at.type, at.nlink = exists, e.type, exists and e.nlink or nil
    local req = self:request(under(path, e.path), op, at, arg)
    req.member, req.size = true, nil
    if self.ws:decide(req, self.hooks) then
      refused, first = refused + 1, first or req
      self.reqs[#self.reqs + 1] = req
    end
  end
  return refused, first
end

-- The roots' own directories: {dev =, ino =, mount =}; a move or a remove
-- never takes one along.
function Ctx:root_dirs()
  local dirs = {}
  for i = 1, self.roots:count() do
    local h, info = self.roots:handle(i, ".", false)
    if h then
      dirs[#dirs + 1] = { dev = info.dev, ino = info.ino, mount = self.roots:info(i).mount, index = i }
      h:close()
    end
  end
  return dirs
end

-- POLICY_DENIED for a folder some of whose entries (or landing places)
-- the policies refused: the entries are not named, only counted.
function Ctx:refused_inside(path, op, refused, first, detail)
  return self:fail("POLICY_DENIED", path, detail,
    { operation = op, refused = refused, policy = first.policy })
end

local REFUSED = {
  read = "%d entr%s inside may not be read (refused by policy %s)",
  delete = "%d entr%s inside may not be taken away (refused by policy %s)",
  write = "%d path%s the call would create there may not be written (refused by policy %s)",
}

-- The entries of a staged tree (st) refused op at the object of the path
-- argument arg: the count and the first refused request, or nil, message,
-- code. Only declared rules judge an entry unless some policy's check()
-- judges objects: then each entry is asked (judge_entries); else the core
-- matches them all against the compiled rules in one pass (stage:match).
function Ctx:judge_side(st, arg, op, entries, nested)
  local exists = op ~= "write"
  if entries then return self:judge_entries(entries, arg, op, exists, nested) end
  local policies, j = self.ws.policies, self.by_arg[arg]
  if not policies.rules then return 0 end
  local refused, idx = st:match { rules = policies.rules, op = op, rel = j.info.rel, lexical = j.info.lexical,
    nested = nested }
  if refused == 0 then return 0 end
  -- the first refused entry, asked in full: its request carries the rule's
  -- policy and reason, and goes to the audit
  local e = st:entries()[idx]
  local path, info = self.args[arg], j.info
  local at, inner = self:member(info, e.path, nested)
  if not inner then at.lexical = under(info.lexical, e.path) end
  at.exists, at.type, at.nlink = exists, e.type, exists and e.nlink or nil
  local req = self:request(under(path, e.path), op, at, arg)
  req.member = true
  self.ws:decide(req, self.hooks)
  self.reqs[#self.reqs + 1] = req
  return refused, req
end

--- Judge every entry of a staged subtree (roots:stage_copy, stage_move,
-- stage_remove) as the tool's `subtree` says: {from = arg, to = arg,
-- ops = {...}}: each entry at from for each op (what is taken: read for
-- a copy, read and delete for a move, delete for a remove), and at to for
-- write (where it lands). A staged tree is out of every agent's reach, so
-- what is judged here is what lands. A move or a remove never takes a
-- root's own directory (by dev/ino) along. true, or nil, message, code.
function Ctx:judge_stage(st)
  if st:count() == 0 then return true end
  local sub = self.tool.subtree
  local path = self.args[sub.from]
  -- the roots' directories the tree holds: a move or a remove takes none
  -- along; below one a copy's source is judged as that root's (nested)
  local dirs, nested = self:root_dirs(), {}
  local held = st:roots_in(dirs)
  if sub.whole_roots == false and held[1] then
    return self:fail("EACCES", path, ("it holds the directory of root %s, which cannot be moved or removed")
      :format(dirs[held[1].root].mount))
  end
  for i, n in ipairs(held) do nested[i] = { path = n.path, root = dirs[n.root].index } end
  local entries = self.ws.policies:judges_objects() and st:entries() or nil
  local sides = {}
  for _, op in ipairs(sub.ops) do sides[#sides + 1] = { sub.from, op, nested } end
  if sub.to then sides[#sides + 1] = { sub.to, "write" } end
  for _, side in ipairs(sides) do
    local arg, op = side[1], side[2]
    local refused, first, code = self:judge_side(st, arg, op, entries, side[3])
    if not refused then return nil, first, code end
    if refused > 0 then
      return self:refused_inside(self.args[arg], op, refused, first, REFUSED[op]
        :format(refused, refused == 1 and (op == "write" and "" or "y") or (op == "write" and "s" or "ies"),
          first.policy or "approval"))
    end
  end
  return true
end

--- Settle a staged subtree: judge it (ctx:judge_stage), tell the
-- policies the bytes a copy writes (size_arg: ctx:commit), then put it in
-- place; on a refusal put it back. A stage with nothing left to judge (a
-- single file, done at once) is only committed. The totals, or nil,
-- message, code (judged: a message for the agent) or nil, detail, code,
-- "core" (the core's: the tool words it).
function Ctx:settle(st, size_arg)
  if st:pending() then
    local ok, msg, code, details = self:judge_stage(st)
    -- the last look before the commit (a call that ran long becomes a task
    -- here too, e.g. a removal whose commit unlinks the tree): a cancel
    -- until now puts everything back
    if ok and self:cancelled() then ok, msg, code = nil, "the call was cancelled; nothing was done", "EAGAIN" end
    if ok and size_arg then ok, msg, code, details = self:commit(size_arg, st:totals().bytes) end
    if not ok then
      local back, restored = st:abort()
      if back and restored then
        msg = ("%s; the source was put back as %s (its name was taken meanwhile)"):format(msg, restored)
      elseif not back then
        msg = ("%s; putting the source back failed: %s"):format(msg, restored)
      end
      st:close()
      return nil, msg, code, details
    end
  end
  local res, detail, code = st:commit()
  st:close()
  if not res then return nil, detail, code, "core" end
  return res
end


-- A path as a glob that matches only itself.
local function literal(path)
  return (path:gsub("[\\%*%?%[%]{}]", "\\%0"))
end

--- Where an entry sub (a path below the start of a walk, whose start is
-- info) lies for the policies: in the innermost root the walk met on its
-- way there (nested: where roots:grep, glob and list met other roots'
-- directories, by identity), else in the start's root. Its request
-- fields (mount, readonly, lexical, rel; index: the root's) and whether
-- it is nested.
function Ctx:member(info, sub, nested)
  local best
  for _, n in ipairs(nested or {}) do
    if sub:sub(1, #n.path + 1) == n.path .. "/" and (not best or #n.path > #best.path) then best = n end
  end
  if not best then
    return { mount = info.mount, readonly = info.readonly, lexical = under(info.rel, sub), rel = under(info.rel, sub),
      index = info.root }
  end
  local r, in_root = self.roots:info(best.root), sub:sub(#best.path + 2)
  return { mount = r.mount, readonly = r.readonly, lexical = in_root, rel = in_root, index = best.root }, true
end

-- Policies whose check() judges each object are asked about every entry
-- a walk from the directory h (in-root path rel) would meet, before the
-- walk opens anything: the entries they deny become rules of the walk
-- beside the declared ones, so the core never opens, searches or enters
-- them and only counts them (skipped_policy), whatever they hold or are
-- named. The entries are found by a walk of names alone (roots:glob "**",
-- the declared rules applied, hidden files and ignore files as the walk
-- will take them): for a policy that does not declare its paths (those
-- that do are asked inside the walk: ctx:walk_judge). Past max_tree_ms
-- the entries not yet asked about are denied (fail closed). The compiled
-- rules, or nil (nothing denied), or false, message, code.
function Ctx:asked_rules(h, rel, opts, info)
  local policies = self.ws.policies
  local res, detail, code = self.roots:glob(h, rel, "**", {
    type = "any", sort = "path", max_results = context.ASK_MAX, include_hidden = opts.include_hidden,
    -- the ignore files as the walk takes them (list_dir reads none)
    respect_ignore = opts.respect_ignore == true, rules = policies.hides and policies.rules or nil, base = rel,
  }, function() return self:cancelled() end)
  if not res then return false, errors.message(code, self.args.path or rel, detail), code end
  if res.truncated then
    return false, errors.message("TOO_LARGE", self.args.path or rel, ("a policy asks about each entry before a walk, and this one has more than %d; narrow the path")
      :format(context.ASK_MAX)), "TOO_LARGE"
  end
  local extra = {}
  local late = false
  for i, e in ipairs(res.entries) do
    local sub = e.path
    late = late or (i % 16 == 0 and self:over("max_tree_ms"))
    local denied = late
    local at = self:member(info, sub, res.nested) -- a nested root's entries: its paths
    if not late then
      at.exists, at.type = true, e.type
      local req = self:request(sub, "read", at, "path")
      req.member = true
      denied = self.ws:decide(req, self.hooks) ~= nil
      if denied then self.reqs[#self.reqs + 1] = req end
    end
    if denied then -- matched by the core as it sees the entry: in its innermost root
      local p = literal(at.rel)
      extra[#extra + 1] = { patterns = e.type == "dir" and { p, p .. "/**" } or { p }, except = {},
        ops = { "read", "list" }, casefold = false, id = -1, root = at.index } -- that root's objects only
    end
  end
  if #extra == 0 then return nil end
  local specs = {}
  for i, r in ipairs(policies.rule_specs or {}) do specs[i] = r end
  for _, r in ipairs(extra) do
    r.id = #specs
    specs[#specs + 1] = r
  end
  local compiled, cerr, ccode = core.rules(specs)
  if not compiled then return false, cerr, ccode end
  return compiled
end

-- The judge of a walk that holds back the entries check() is about
-- (opts.defer: every judging policy declares check_paths): the core
-- calls it on this thread with each batch it met ({path =, type =, and
-- below another root's directory root =, at =}), before it opens or
-- enters any of them, and visits only those it allows. Each is asked as a
-- read of that entry, in its innermost root, as ctx:asked_rules asks;
-- past max_tree_ms the rest are refused (fail closed), past ASK_MAX the
-- walk ends TOO_LARGE. ctx:reveal has nothing left to ask after it
-- (self.walked).
function Ctx:walk_judge(info)
  local asked, late = 0, false
  self.walked = true
  return function(items)
    local allow = {}
    for i, e in ipairs(items) do
      asked = asked + 1
      if asked > context.ASK_MAX then return nil, "TOO_LARGE" end
      late = late or (asked % 16 == 0 and self:over("max_tree_ms"))
      local ok = false
      if not late then
        local at = self:member(info, e.path, e.root and { { path = e.path:sub(1, e.at - 1), root = e.root } })
        at.exists, at.type = true, e.type
        local req = self:request(e.path, "read", at, "path")
        req.member = true
        ok = self.ws:decide(req, self.hooks) == nil
        if not ok then self.reqs[#self.reqs + 1] = req end
      end
      allow[i] = ok
    end
    return allow
  end
end

--- Options of a walk from an object whose in-root path is rel (as
-- ctx:resolve gave it: h, info): the policies' declared rules, which the
-- core applies in its walker threads (a denied entry is never opened, a
-- denied directory never entered, and only counted: skipped_policy), and,
-- where a policy's check() judges each object, the entries it denies,
-- asked before anything of them is opened: in the walk itself where the
-- walker can hold entries back (grep, glob, list_dir: defers) and every
-- such policy declares its paths (ctx:walk_judge), else by a walk of
-- names before it (ctx:asked_rules). opts, or nil, message, code.
function Ctx:walk_opts(rel, opts, h, info, defers)
  local policies = self.ws.policies
  self.walked = nil -- this walk's own judge sets it
  if policies.hides then opts.rules, opts.base = policies.rules, rel end
  if h and info and info.type == "dir" and policies:judges_objects() then
    if defers and policies.asked then
      opts.defer, opts.judge, opts.base = policies.asked, self:walk_judge(info), rel
      return opts
    end
    local rules, msg, code = self:asked_rules(h, rel, opts, info)
    if rules == false then return nil, msg, code end
    if rules then opts.rules, opts.base = rules, rel end
  end
  return opts
end

--- "[N entries hidden by policy]": how many, never which (nil for none).
function context.hidden_note(n)
  if (n or 0) == 0 then return nil end
  return ("[%d %s hidden by policy]"):format(n, n == 1 and "entry" or "entries")
end

--- Entries a walk revealed, asked of the policies whose check() judges
-- each object (the declared rules were applied by the core already), as
-- a read of each. Keeps the allowed ones in order in list; sub_of(item)
-- gives an item's path below the walk's start (nil: keep it). info: the
-- start's, from ctx:resolve; nested: where the walk met other roots (the
-- walk result's `nested`), whose entries are asked as that root's.
-- Returns how many were dropped (and the dropped items' set, by sub path).
-- Past max_tree_ms the items not yet asked about are dropped too (fail
-- closed), and counted.
function Ctx:reveal(list, sub_of, info, nested)
  if not (list and self.ws.policies:judges_objects()) then return 0, {} end
  -- the walk asked about every entry a check() is about before it showed
  -- any (ctx:walk_judge): nothing is left to ask
  if self.walked then return 0, {} end
  local verdict, dropped, out, n = {}, {}, 1, 0
  local late = false
  -- where every such policy declares its paths (check_paths), an entry
  -- outside them is one no check() is about: nothing to ask (Engine:check
  -- would skip each policy), so no request is built for it
  local asked = self.ws.policies.asked
  for i = 1, #list do
    local item = list[i]
    list[i] = nil
    local sub = sub_of(item)
    late = late or (i % 16 == 0 and self:over("max_tree_ms"))
    if asked and sub and sub ~= "" and verdict[sub] == nil and not asked:match(self:member(info, sub, nested).rel) then
      verdict[sub] = true
    elseif late and sub and sub ~= "" and verdict[sub] == nil then
      verdict[sub], n, dropped[sub] = false, n + 1, true
    elseif sub and sub ~= "" and verdict[sub] == nil then
      local at = self:member(info, sub, nested) -- a nested root's entries: its paths
      at.exists = true
      local req = self:request(sub, "read", at, "path")
      req.member = true
      verdict[sub] = self.ws:decide(req, self.hooks) == nil
      if not verdict[sub] then
        self.reqs[#self.reqs + 1] = req
        n, dropped[sub] = n + 1, true
      end
    end
    if not sub or sub == "" or verdict[sub] then
      list[out] = item
      out = out + 1
    end
  end
  return n, dropped
end

end
