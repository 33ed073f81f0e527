-- burrow.transport.options: the options burrow.open gets from a command line (cli's
-- parse: config, roots, caps, pack): the config file's, then the command
-- line's over them. Shared by burrow.transport.cli and burrow.transport.http (each tenant's
-- workspace), so neither needs the other.

-- o: {config =, roots =, caps = {}, pack =}; loaded: what
-- burrow.config.load gave for o.config just now, if the caller has it (it
-- is taken over, not copied). Raises {fail = message} when the config file
-- cannot be used.
return function(o, loaded)
  local opts = { caps = {} }
  if o.config then
    local err
    -- burrow.config only with a config file: a start without one does
    -- not load its 22 KB of bytecode (about a third of a ms here)
    opts, err = loaded, nil
    if not opts then opts, err = require("burrow.config").load(o.config) end
    if not opts then error({ fail = err }) end
  end
  opts.http = nil -- the listener's, not the workspace's (http.lua reads it)
  if o.roots then opts.roots = o.roots end
  for k, v in pairs(o.caps or {}) do opts.caps[k] = v end
  if o.pack then opts.pack, opts.packs = o.pack, nil end
  return opts
end
