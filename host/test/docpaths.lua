-- host/test/docpaths.lua: every repository path that docs/, the README and
-- the code's comments cite exists (a path under host/, lua/, spec/, test/,
-- docs/, bench/, examples/ or rockspec/). A path with a placeholder (*,
-- NAME, N, X, ...) is a pattern, not a citation, and is skipped, as is a
-- URL's path; a path named as an example or made at run time is listed in
-- host/test/docpaths.allow ("FILE: PATH"). A bare file name (`clock.c`,
-- `security.md`: a name ending .md, .lua, .c, .h, .sh or .mjs, no folder)
-- must be the name of a file somewhere in the repository, so a citation
-- of a file a reader cannot open fails too; an example name is allowed
-- the same way ("FILE: NAME", or "*: NAME" in any file). Prints each
-- missing one with where it is cited; ends "docpaths: N passed, N failed".

local function sh(cmd)
  local p = assert(io.popen(cmd))
  local out = p:read("a")
  p:close()
  return out
end

local function exists(path)
  local f = io.open(path, "r")
  if f then f:close() return true end
  return os.execute("test -e '" .. path:gsub("'", "'\\''") .. "'") == true
end

local sources = {}
for f in sh("ls README.md docs/*.md 2>/dev/null; find lua host/src host/test host/fuzz bench spec test -type f \\( -name '*.lua' -o -name '*.c' -o -name '*.h' -o -name '*.sh' -o -name '*.mjs' \\) -not -path '*/node_modules/*' | LC_ALL=C sort"):gmatch("[^\n]+") do
  sources[#sources + 1] = f
end

-- every file name in the repository, for bare names
local names = {}
local listing = sh("git ls-files --cached --others --exclude-standard 2>/dev/null") -- else (an unpacked archive) the tree itself
if listing == "" then listing = sh("find . -type f -not -path './build/*' -not -path '*/node_modules/*'") end
for f in listing:gmatch("[^\n]+") do names[f:match("[^/]*$")] = true end
local BARE = { md = true, lua = true, c = true, h = true, sh = true, mjs = true }

local allow = {}
for line in (io.open("host/test/docpaths.allow") or io.open("/dev/null")):lines() do
  local f, p = line:match("^([^#%s][^:]*):%s*(%S+)")
  if f then allow[f .. ":" .. p] = true end
end

local function allowed(file, p) return allow[file .. ":" .. p] or allow["*:" .. p] end

-- A bare name's placeholder: NAME.lua, fuzz_NAME.c, OUT.md (a word of
-- PLACEHOLDER in capitals); a suffix (_spec.lua, .test.mjs); an extension
-- alone (.c). Other capitals are a name (README.md), so cited too.
local PLACEHOLDER = { NAME = true, OUT = true, FILE = true, N = true, X = true, TOOL = true }
local function bare_placeholder(name)
  local stem = name:match("^(.-)%.[%a.]+$") or name
  if stem == "" or name:match("^[_.]") then return true end
  for word in stem:gmatch("%u+") do
    if PLACEHOLDER[word] then return true end
  end
  return false
end

local PREFIX = { host = true, lua = true, spec = true, test = true, docs = true, bench = true, examples = true, rockspec = true }
local checked, missing, clean = 0, {}, 0
for _, file in ipairs(sources) do
  local before, cites = #missing, 0
  local text = assert(io.open(file)):read("a")
  local n = 0
  for line in text:gmatch("[^\n]*") do
    n = n + 1
    -- in code, comments only (a path in code is the code's own business)
    local scope = line
    if not file:match("%.md$") then
      scope = line:match("%-%-(.*)$") or line:match("^%s*//(.*)$") or line:match("[^:\"'/]//(.*)$") or line:match("^%s*/?%*(.*)$") or line:match("#(.*)$") or ""
    end
    for at, p in scope:gmatch("()([%w_%.%-/]+)") do
      local before = scope:sub(at - 1, at - 1)
      if not p:find("/", 1, true) and before ~= "/" and before ~= "<" then
        local name = p:gsub("[%.,:;%-]+$", "")
        local ext = name:match("%.(%a+)$")
        if ext and BARE[ext] and not names[name] and not bare_placeholder(name) then
          checked, cites = checked + 1, cites + 1
          if not allowed(file, name) then
            missing[#missing + 1] = ("%s:%d: %s (no file of that name in the repository)"):format(file, n, name)
          end
        end
      end
      local top = scope:sub(math.max(1, at - 3), at - 1) ~= "://" and p:match("^([%w]+)/")
      if top and PREFIX[top] and p:find("/", 1, true) then
        p = p:gsub("[%.,:;]+$", "")
        local last = p:match("[^/]*$")
        -- made by the build or npm, not in the tree: node_modules, build output
        local placeholder = p:find("[%*]") or p:find("%.%.") or p:match("/$") or last:match("_$")
          or p:find("node_modules", 1, true) or p:find("^test/e2e/node_modules")
          or last:find("[_/%-]?[A-Z][A-Z_]*[%.%-_]") and last:find("%u%u?") and last:match("[_%-]%u+[%._]")
          or last:match("^%u+[%.%-_]") or last:match("_%u+$") or last:match("^%u+$")
        if not placeholder and p ~= "" then
          checked, cites = checked + 1, cites + 1
          if not exists(p) and not allowed(file, p) then missing[#missing + 1] = ("%s:%d: %s"):format(file, n, p) end
        end
      end
    end
  end
  if cites > 0 and #missing == before then clean = clean + 1 end
end
for _, m in ipairs(missing) do print("FAIL missing " .. m) end
-- one pass per file whose citations all exist, one failure per missing path
print(("docpaths: %d citations checked in %d files"):format(checked, #sources))
print(("docpaths: %d passed, %d failed"):format(clean, #missing))
os.exit(#missing == 0 and 0 or 1)
