/*
 * lsearch.c - grep, glob and list as methods of burrow.core's Roots:
 *
 *   roots:grep(i, rel, opts [, progress]) -> result | nil, detail, CODE
 *   roots:glob(i, rel, pattern, opts [, progress]) -> result | nil, detail, CODE
 *   roots:list(i, rel, opts) -> entries, omitted, skipped_policy (dir.c)
 *
 * The search runs on worker threads; this (the Lua) thread waits and,
 * when a progress function is given, calls it between waits with the
 * directories and entries seen so far. A truthy return cancels the search,
 * as does the MCP cancel flag of the request in flight. Lua is never
 * touched from a worker.
 *
 * grep's budget: opts.max_ms (wall time) and opts.max_bytes (read), 0 or
 * absent for none; a search they end has limit = "time" or "bytes".
 *
 * All three take the walk option `rules` (core.rules, lrules.c: entries a
 * direct read would deny are skipped, and counted in the result's
 * skipped_policy) and `base` (the in-root path of rel, "." the root;
 * default: rel made canonical).
 *
 * With opts.held, grep's content matches and glob's entries stay as the
 * core made them, a set (lheld.c) that the edge prints as JSON, text or
 * tables (lua/burrow/toolkit/printer.lua); else they come as tables. Both give
 * the same choice (max_results, max_result_bytes).
 */
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lcore.h"
#include "lheld.h"
#include "lrules.h"
#include "lsearch.h"
#include "search.h"

#define ARRAY_MT "burrow.json.array"

static void new_array(lua_State *L, int n) {
  lua_createtable(L, n, 0);
  luaL_setmetatable(L, ARRAY_MT);
}

static size_t opt_size(lua_State *L, int t, const char *k, size_t dflt) {
  lua_getfield(L, t, k);
  lua_Integer v = luaL_optinteger(L, -1, (lua_Integer)dflt);
  lua_pop(L, 1);
  return v < 0 ? 0 : (size_t)v;
}

static int opt_bool(lua_State *L, int t, const char *k, int dflt) {
  lua_getfield(L, t, k);
  int v = lua_isnil(L, -1) ? dflt : lua_toboolean(L, -1);
  lua_pop(L, 1);
  return v;
}

/* A list of strings from opts[k]. Leaves one value on the stack (the
 * array's holder); the strings stay alive in opts. */
static const char **opt_list(lua_State *L, int t, const char *k, size_t *n) {
  *n = 0;
  lua_getfield(L, t, k);
  if (lua_isnil(L, -1)) return NULL;
  luaL_checktype(L, -1, LUA_TTABLE);
  size_t len = (size_t)luaL_len(L, -1);
  const char **v = lua_newuserdatauv(L, (len ? len : 1) * sizeof *v, 0);
  for (size_t i = 0; i < len; i++) {
    lua_geti(L, -2, (lua_Integer)i + 1);
    size_t sl;
    v[i] = luaL_checklstring(L, -1, &sl);
    if (strlen(v[i]) != sl) luaL_error(L, "%s: a glob contains a NUL byte", k);
    lua_pop(L, 1);
  }
  lua_remove(L, -2);
  *n = len;
  return v;
}

typedef struct prog {
  lua_State *L;
  int fn;    /* stack index of the progress function, 0 if none */
  int judge; /* of the judge function (opts.judge), 0 if none */
} prog;

static const char *type_name(char t);

/* What on_judge hands judge_call, and gets back */
typedef struct judging {
  const bw_wjudge *items;
  size_t n;
  unsigned char *allow;
  int rc;
} judging;

/* Under lua_pcall (1: the judging, 2: the judge): the entries as tables,
 * the judge called, its answer read, so nothing that may raise (a memory
 * error) unwinds through the walk's frames while its workers run. */
static int judge_call(lua_State *L) {
  judging *j = lua_touserdata(L, 1);
  lua_pushvalue(L, 2);
  lua_createtable(L, j->n < INT_MAX ? (int)j->n : INT_MAX, 0);
  for (size_t i = 0; i < j->n; i++) {
    lua_createtable(L, 0, 4);
    lua_pushstring(L, j->items[i].path);
    lua_setfield(L, -2, "path");
    lua_pushstring(L, type_name(j->items[i].type));
    lua_setfield(L, -2, "type");
    if (j->items[i].nest_at) {
      lua_pushinteger(L, j->items[i].root);
      lua_setfield(L, -2, "root");
      lua_pushinteger(L, (lua_Integer)j->items[i].nest_at);
      lua_setfield(L, -2, "at");
    }
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_call(L, 1, 2);
  if (lua_istable(L, -2)) {
    for (size_t i = 0; i < j->n; i++) {
      lua_rawgeti(L, -2, (lua_Integer)i + 1);
      j->allow[i] = lua_toboolean(L, -1) ? 1 : 0;
      lua_pop(L, 1);
    }
    return 0;
  }
  const char *code = lua_tostring(L, -1);
  j->rc = BW_EIO;
  for (int c = 1; code && c < BW_CODE_COUNT; c++)
    if (!strcmp(code, bw_code_name(c))) j->rc = c;
  return 0;
}

/* On the Lua thread, between waits: judge(entries) -> {allow...} | nil,
 * CODE for the entries opts.defer held back ({path =, type =, root =,
 * at =}: below another root's directory, that root and where its in-root
 * paths start in path). A judge that fails or answers otherwise refuses
 * nothing silently: the walk stops with EIO (its message on stderr, for
 * the operator). */
static int on_judge(void *arg, const bw_wjudge *items, size_t n, unsigned char *allow) {
  prog *p = arg;
  lua_State *L = p->L;
  judging j = {items, n, allow, BW_OK};
  if (!lua_checkstack(L, 8)) return BW_ENOMEM;
  lua_pushcfunction(L, judge_call); /* neither push allocates */
  lua_pushlightuserdata(L, &j);
  lua_pushvalue(L, p->judge);
  if (lua_pcall(L, 2, 0, 0) != LUA_OK) {
    const char *why = lua_tostring(L, -1);
    fprintf(stderr, "burrow: a walk's judge failed: %s\n", why ? why : "(not a string)");
    lua_pop(L, 1);
    return bw_fail(BW_EIO, "a policy's judgement of a walk's entries failed");
  }
  if (j.rc) bw_fail(j.rc, j.rc == BW_TOO_LARGE ? "too many entries to ask a policy about; narrow the path" : NULL);
  return j.rc;
}

/* On the Lua thread, between waits: progress(dirs, entries) -> cancel? */
static int on_progress(void *arg, size_t dirs, size_t entries) {
  prog *p = arg;
  lua_State *L = p->L;
  lua_pushvalue(L, p->fn);
  lua_pushinteger(L, (lua_Integer)dirs);
  lua_pushinteger(L, (lua_Integer)entries);
  if (lua_pcall(L, 2, 1, 0) != LUA_OK) { /* a failing reporter stops nothing */
    lua_pop(L, 1);
    return 0;
  }
  int stop = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return stop;
}

/* Walk options shared by grep and glob from the table at t; progress and
 * the judge trampoline through p. The rules it holds (opts.rules, and
 * opts.defer into *defer) stay on the stack, entered: call
 * bw_lua_rules_leave on them once the walk is over, with nothing that may
 * raise in between. */
static bw_lrules *walk_opts(lua_State *L, int t, int fn, prog *p,
                            bw_walk_opts *w, bw_lrules **defer) {
  memset(w, 0, sizeof *w);
  size_t bl;
  lua_getfield(L, t, "base");
  w->base = luaL_optlstring(L, -1, NULL, &bl);
  if (w->base && (bl > BW_PATH_MAX || strlen(w->base) != bl))
    luaL_error(L, "base must be an in-root path");
  lua_pop(L, 1); /* alive in opts */
  bw_lrules *rules = bw_lua_rules_opt(L, t, "rules");
  w->threads = (int)opt_size(L, t, "threads", 0);
  w->include_hidden = opt_bool(L, t, "include_hidden", 0);
  w->respect_ignore = opt_bool(L, t, "respect_ignore", 1);
  w->cancel = bw_cancel_flag();
  w->interval_ms = (int)opt_size(L, t, "interval_ms", 100);
  p->L = L;
  p->fn = fn;
  if (fn) w->progress = on_progress;
  w->rules = bw_lua_rules_enter(rules);
  *defer = bw_lua_rules_opt(L, t, "defer"); /* stays on the stack */
  w->defer = bw_lua_rules_enter(*defer);
  lua_getfield(L, t, "judge"); /* stays on the stack */
  p->judge = lua_isfunction(L, -1) ? lua_absindex(L, -1) : 0;
  if (w->defer && p->judge) {
    w->judge = on_judge;
    w->judge_arg = p;
  }
  return rules;
}

/* prefix + path (bw_grep_path) */
static void push_strings(lua_State *L, const char *prefix, char **v, size_t n) {
  new_array(L, (int)n);
  for (size_t i = 0; i < n; i++) {
    bw_held_path(L, prefix, v[i]);
    lua_seti(L, -2, (lua_Integer)i + 1);
  }
}

/* max_bytes: the result's byte cap on matches, or with held on the files
 * (files mode) or counts (count mode) list (0: none, the caller caps);
 * held: the matches as a set (lheld.c), which then owns *r0, and the
 * files and counts lists as sets of their own. */
static void push_grep(lua_State *L, bw_grep_res *r0, const char *prefix,
                      int mode, size_t limit, int context, size_t max_bytes, int held) {
  lua_createtable(L, 0, 12);
  const bw_grep_res *r = r0;
  size_t total = 0;
  int cut = 0;
  if (mode == BW_GREP_CONTENT && held)
    r = bw_held_grep(L, r0, prefix, limit, context, max_bytes, &total, &cut);
  else if (mode == BW_GREP_CONTENT)
    total = bw_held_matches(L, r, prefix, limit, context, max_bytes, &cut);
  else
    new_array(L, 0);
  if (cut) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -3, "cut");
  }
  lua_setfield(L, -2, "matches");
  size_t rf, rl; /* capped, not stopped: where the next page starts */
  if (mode == BW_GREP_CONTENT && (r->truncated || cut) && !r->cancelled && !r->limit &&
      bw_grep_resume(r, total, &rf, &rl)) {
    lua_pushstring(L, r->files[rf]->item.path);
    lua_setfield(L, -2, "resume_path");
    lua_pushinteger(L, (lua_Integer)rl);
    lua_setfield(L, -2, "resume_line");
  }
  int lcut = 0; /* held: the files or counts list cut by max_bytes */
  if (held)
    bw_held_list(L, r, prefix, 0, mode == BW_GREP_FILES ? max_bytes : 0, &lcut);
  else {
    new_array(L, (int)r->nfiles);
    for (size_t i = 0; i < r->nfiles; i++) {
      bw_held_path(L, prefix, r->files[i]->item.path);
      lua_seti(L, -2, (lua_Integer)i + 1);
    }
  }
  lua_setfield(L, -2, "files");
  if (held && mode == BW_GREP_COUNT) {
    int ccut = 0;
    bw_held_list(L, r, prefix, 1, max_bytes, &ccut);
    lcut = ccut;
    for (size_t i = 0; i < r->nfiles; i++) total += r->files[i]->count;
  } else new_array(L, mode == BW_GREP_COUNT ? (int)r->nfiles : 0);
  for (size_t i = 0; !held && mode == BW_GREP_COUNT && i < r->nfiles; i++) {
    lua_createtable(L, 0, 2);
    bw_held_path(L, prefix, r->files[i]->item.path);
    lua_setfield(L, -2, "path");
    lua_pushinteger(L, (lua_Integer)r->files[i]->count);
    lua_setfield(L, -2, "count");
    lua_seti(L, -2, (lua_Integer)i + 1);
    total += r->files[i]->count;
  }
  lua_setfield(L, -2, "counts");
  if (lcut) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "cut");
  }
  if (mode == BW_GREP_FILES) total = r->nfiles;
  lua_pushinteger(L, (lua_Integer)total);
  lua_setfield(L, -2, "total");
  push_strings(L, prefix, r->skipped_binary, r->listed_binary);
  lua_setfield(L, -2, "skipped_binary");
  push_strings(L, prefix, r->skipped_size, r->listed_size);
  lua_setfield(L, -2, "skipped_size");
  lua_pushinteger(L, (lua_Integer)r->n_binary);
  lua_setfield(L, -2, "n_skipped_binary");
  lua_pushinteger(L, (lua_Integer)r->n_size);
  lua_setfield(L, -2, "n_skipped_size");
  lua_pushinteger(L, (lua_Integer)r->searched);
  lua_setfield(L, -2, "searched");
  lua_pushinteger(L, (lua_Integer)r->unreadable);
  lua_setfield(L, -2, "unreadable");
  lua_pushinteger(L, (lua_Integer)r->skipped_policy);
  lua_setfield(L, -2, "skipped_policy");
  lua_pushboolean(L, r->truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushboolean(L, r->cancelled);
  lua_setfield(L, -2, "cancelled");
  lua_pushinteger(L, (lua_Integer)r->bytes);
  lua_setfield(L, -2, "bytes");
  if (mode != BW_GREP_CONTENT) { /* the whole walk's, listed or not */
    lua_pushinteger(L, (lua_Integer)r->found_files);
    lua_setfield(L, -2, "found_files");
    lua_pushinteger(L, (lua_Integer)r->found_matches);
    lua_setfield(L, -2, "found_matches");
  }
  if (r->limit) {
    lua_pushstring(L, r->limit == BW_GREP_LIMIT_TIME ? "time" : "bytes");
    lua_setfield(L, -2, "limit");
  }
}

static int parse_mode(lua_State *L, int t) {
  lua_getfield(L, t, "mode");
  const char *m = luaL_optstring(L, -1, "content");
  int mode = !strcmp(m, "files")   ? BW_GREP_FILES
             : !strcmp(m, "count") ? BW_GREP_COUNT
             : !strcmp(m, "content")
                 ? BW_GREP_CONTENT
                 : luaL_error(L, "grep: mode must be content, files or count");
  lua_pop(L, 1);
  return mode;
}

/* roots:grep(i, rel, opts [, progress]) */
static int roots_grep(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_READ, &rel);
  luaL_checktype(L, 4, LUA_TTABLE);
  int fn = lua_isfunction(L, 5) ? 5 : 0;
  bw_grep_opts o;
  memset(&o, 0, sizeof o);
  lua_getfield(L, 4, "pattern");
  o.pattern = luaL_checklstring(L, -1, &o.pattern_len); /* stays on the stack */
  o.literal = opt_bool(L, 4, "literal", 0);
  o.ignore_case = opt_bool(L, 4, "ignore_case", 0);
  o.multiline = opt_bool(L, 4, "multiline", 0);
  o.mode = parse_mode(L, 4);
  o.before = opt_size(L, 4, "before", 0);
  o.after = opt_size(L, 4, "after", 0);
  o.max_results = opt_size(L, 4, "max_results", 1000);
  o.max_file_size = opt_size(L, 4, "max_file_size", 64u << 20);
  o.max_line = opt_size(L, 4, "max_line", 2000);
  o.max_skipped = opt_size(L, 4, "max_skipped", 1000);
  o.max_ms = opt_size(L, 4, "max_ms", 0);
  o.max_bytes = opt_size(L, 4, "max_bytes", 0);
  size_t out_bytes = opt_size(L, 4, "max_result_bytes", 0);
  int held = opt_bool(L, 4, "held", 0);
  o.include = opt_list(L, 4, "include", &o.n_include);
  o.exclude = opt_list(L, 4, "exclude", &o.n_exclude);
  lua_getfield(L, 4, "charsets");
  o.charsets = luaL_optstring(L, -1, NULL);
  lua_getfield(L, 4, "prefix");
  const char *prefix = luaL_optstring(L, -1, "");
  lua_getfield(L, 4, "from_path"); /* a cursor's */
  o.from_path = luaL_optstring(L, -1, NULL);
  o.from_line = opt_size(L, 4, "from_line", 1);
  lua_pop(L, 3); /* alive in opts */
  prog p;
  bw_lrules *defer, *rules = walk_opts(L, 4, fn, &p, &o.walk, &defer);
  o.walk.progress_arg = &p;
  bw_nest nest;
  bw_lua_nest(L, 1, r, &nest);
  o.walk.nest = &nest;
  bw_grep_res res;
  int rc = bw_grep(r, rel, &o, &res);
  bw_lua_rules_leave(rules);
  bw_lua_rules_leave(defer);
  luaL_checkstack(L, 16, "grep result");
  bw_lua_push_nested(L, &nest);
  if (rc) return bw_lua_fail(L, rc);
  push_grep(L, &res, prefix, o.mode, o.max_results, o.before || o.after, out_bytes, held);
  bw_grep_res_free(&res); /* held: moved to the set, nothing left here */
  lua_rotate(L, -2, 1); /* nested on top */
  lua_setfield(L, -2, "nested");
  return 1;
}

static const char *type_name(char t) {
  return t == 'f' ? "file" : t == 'd' ? "dir" : t == 'l' ? "symlink" : "other";
}

static int parse_types(lua_State *L, int t) {
  lua_getfield(L, t, "type");
  const char *s = luaL_optstring(L, -1, "file");
  lua_pop(L, 1);
  if (!strcmp(s, "file")) return 1;
  if (!strcmp(s, "dir")) return 2;
  if (!strcmp(s, "symlink")) return 4;
  if (!strcmp(s, "any")) return 15;
  return luaL_error(L, "glob: type must be file, dir, symlink or any");
}

/* roots:glob(i, rel, pattern, opts [, progress]) */
static int roots_glob(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_READ, &rel);
  size_t plen;
  const char *pat = luaL_checklstring(L, 4, &plen);
  luaL_checktype(L, 5, LUA_TTABLE);
  int fn = lua_isfunction(L, 6) ? 6 : 0;
  bw_glob_opts o;
  memset(&o, 0, sizeof o);
  o.types = parse_types(L, 5);
  lua_getfield(L, 5, "sort");
  o.by_mtime = !strcmp(luaL_optstring(L, -1, "path"), "mtime");
  lua_pop(L, 1);
  o.max_results = opt_size(L, 5, "max_results", 1000);
  o.count_limit = opt_size(L, 5, "count_limit", 100000);
  lua_getfield(L, 5, "prefix");
  const char *prefix = luaL_optstring(L, -1, "");
  lua_pop(L, 1);
  int held = opt_bool(L, 5, "held", 0);
  size_t max_bytes = opt_size(L, 5, "max_result_bytes", (size_t)-1);
  prog p;
  bw_lrules *defer, *rules = walk_opts(L, 5, fn, &p, &o.walk, &defer);
  o.walk.progress_arg = &p;
  bw_nest nest;
  bw_lua_nest(L, 1, r, &nest);
  o.walk.nest = &nest;
  bw_glob_res res;
  int rc = bw_glob_search(r, rel, pat, plen, &o, &res);
  bw_lua_rules_leave(rules);
  bw_lua_rules_leave(defer);
  luaL_checkstack(L, 8, "glob result");
  bw_lua_push_nested(L, &nest);
  if (rc) return bw_lua_fail(L, rc);
  lua_createtable(L, 0, 8);
  lua_rotate(L, -2, 1);
  lua_setfield(L, -2, "nested"); /* where the walk met other roots */
  const bw_glob_res *g = &res;
  if (held) { /* the set owns the result from here */
    size_t n;
    int cut;
    g = bw_held_glob(L, &res, prefix, max_bytes, &n, &cut);
    lua_pushboolean(L, cut);
    lua_setfield(L, -3, "cut");
  } else
    bw_held_entries(L, g, prefix, g->n);
  lua_setfield(L, -2, "entries");
  lua_pushboolean(L, g->truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushboolean(L, g->cancelled);
  lua_setfield(L, -2, "cancelled");
  lua_pushinteger(L, (lua_Integer)g->skipped_policy);
  lua_setfield(L, -2, "skipped_policy");
  bw_glob_res_free(&res); /* held: moved to the set, nothing left here */
  return 1;
}

/* ---- roots:list: one directory's entries, as a walk takes rules ---- */

static int list_push(void *arg, const bw_entry *e) {
  lua_State *L = arg;
  bw_lua_push_stat(L, &e->st);
  lua_pushstring(L, e->path);
  lua_setfield(L, -2, "path");
  lua_pushstring(L, e->name);
  lua_setfield(L, -2, "name");
  lua_pushinteger(L, e->depth);
  lua_setfield(L, -2, "depth");
  lua_seti(L, -2, (lua_Integer)luaL_len(L, -2) + 1);
  return BW_OK;
}

/* roots:list(i, rel, opts) -> entries, omitted, skipped_policy, nested
 * opts.rules (core.rules) leaves out what they deny reading, counted in
 * skipped_policy; opts.base is rel's in-root path (default: canonical);
 * below another root's directory the rules see its paths, and nested
 * says where the listing met one ({{path =, root =}...}). */
static int roots_list(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_READ, &rel);
  luaL_checktype(L, 4, LUA_TTABLE);
  bw_list_opts o = {0};
  lua_getfield(L, 4, "base");
  o.base = lua_isnil(L, -1) ? NULL : bw_lua_rel(L, -1);
  bw_lrules *rules = bw_lua_rules_opt(L, 4, "rules"); /* stays on the stack */
  size_t skipped = 0;
  o.skipped_policy = &skipped;
  size_t depth = opt_size(L, 4, "max_depth", 0);
  o.max_depth = depth > INT_MAX ? INT_MAX : (int)depth; /* deeper than any tree */
  o.max_entries = opt_size(L, 4, "max_entries", 1000);
  o.count_limit = opt_size(L, 4, "count_limit", 100000);
  lua_getfield(L, 4, "include_hidden");
  o.include_hidden = lua_toboolean(L, -1);
  lua_pop(L, 1);
  lua_newtable(L);
  luaL_checkstack(L, 8, "listing");
  size_t omitted = 0;
  bw_nest nest;
  bw_lua_nest(L, 1, r, &nest);
  o.nest = &nest;
  o.rules = bw_lua_rules_enter(rules);
  bw_lrules *defer = bw_lua_rules_opt(L, 4, "defer"); /* stays on the stack */
  o.defer = bw_lua_rules_enter(defer);
  lua_getfield(L, 4, "judge"); /* stays on the stack */
  prog p = {L, 0, lua_isfunction(L, -1) ? lua_absindex(L, -1) : 0};
  if (o.defer && p.judge) o.judge = on_judge, o.judge_arg = &p;
  lua_pushvalue(L, -3); /* the entries' table on top, as list_push wants it */
  int rc = bw_list(r, rel, &o, list_push, L, &omitted);
  lua_pop(L, 1);
  bw_lua_rules_leave(rules);
  bw_lua_rules_leave(defer);
  lua_pop(L, 2); /* defer, judge: the entries' table on top again */
  bw_lua_push_nested(L, &nest);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushinteger(L, (lua_Integer)omitted);
  lua_pushinteger(L, (lua_Integer)skipped);
  lua_rotate(L, -3, -1); /* entries, omitted, skipped, nested */
  return 4;
}

/* ---- core.grep_lines: the text of match tables ---- */

#define GTEXT_MT "burrow.grep_text"

typedef struct gtext_box {
  bw_gtext t;
  bw_gstr *lines;
  size_t cap;
} gtext_box;

static int gtext_gc(lua_State *L) {
  gtext_box *b = luaL_checkudata(L, 1, GTEXT_MT);
  bw_gtext_free(&b->t);
  free(b->lines);
  b->lines = NULL, b->cap = 0;
  return 0;
}

/* The strings of the array at t (absent: none) into b->lines from at,
 * with room for one more after them; how many, or -1 when t is not an
 * array of strings. The table keeps them alive. */
static lua_Integer take_lines(lua_State *L, int t, gtext_box *b, size_t at) {
  lua_Integer n = lua_isnil(L, t) ? 0 : lua_istable(L, t) ? luaL_len(L, t) : -1;
  if (n < 0 || (size_t)n > ((size_t)-1) / sizeof *b->lines / 4) return -1;
  if (at + (size_t)n + 1 > b->cap) {
    size_t cap = (at + (size_t)n + 1) * 2;
    bw_gstr *p = realloc(b->lines, cap * sizeof *p);
    if (!p) luaL_error(L, "grep_lines: out of memory");
    b->lines = p, b->cap = cap;
  }
  for (lua_Integer k = 1; k <= n; k++) {
    int ok = lua_geti(L, t, k) == LUA_TSTRING;
    if (ok) b->lines[at + (size_t)k - 1].s = lua_tolstring(L, -1, &b->lines[at + (size_t)k - 1].len);
    lua_pop(L, 1);
    if (!ok) return -1;
  }
  return n;
}

/* core.grep_lines(matches) -> text: the lines a grep result shows for its
 * match tables ({path =, line =, text =, before =, after =}, as roots:grep
 * gives them), written by grepwire.c's renderer, the one that writes a
 * search's own picks for the wire: a result has one way to look. */
static int l_grep_lines(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  gtext_box *b = lua_newuserdatauv(L, sizeof *b, 0); /* freed by its __gc on any error */
  memset(b, 0, sizeof *b);
  bw_gtext_init(&b->t, 0);
  luaL_setmetatable(L, GTEXT_MT);
  lua_Integer n = luaL_len(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_geti(L, 1, i) != LUA_TTABLE) return luaL_error(L, "grep_lines: match %d is not a table", (int)i);
    int m = lua_gettop(L);
    lua_getfield(L, m, "path");   /* m + 1 */
    lua_getfield(L, m, "line");   /* m + 2 */
    lua_getfield(L, m, "text");   /* m + 3 */
    lua_getfield(L, m, "before"); /* m + 4 */
    lua_getfield(L, m, "after");  /* m + 5 */
    int isnum = 0;
    lua_Integer line = lua_tointegerx(L, m + 2, &isnum);
    int ok = isnum && lua_type(L, m + 1) == LUA_TSTRING && lua_type(L, m + 3) == LUA_TSTRING;
    size_t plen = 0, tlen = 0;
    const char *path = ok ? lua_tolstring(L, m + 1, &plen) : NULL;
    const char *text = ok ? lua_tolstring(L, m + 3, &tlen) : NULL;
    int context = !lua_isnil(L, m + 4) || !lua_isnil(L, m + 5);
    lua_Integer nb = ok ? take_lines(L, m + 4, b, 0) : -1;
    if (nb >= 0) b->lines[nb].s = text, b->lines[nb].len = tlen;
    lua_Integer na = nb >= 0 ? take_lines(L, m + 5, b, (size_t)nb + 1) : -1;
    if (na < 0) return luaL_error(L, "grep_lines: match %d needs path, line, text (and string arrays before, after)", (int)i);
    if (bw_gtext_match(&b->t, path, plen, (long long)line, b->lines, (size_t)nb, (size_t)na, context))
      return luaL_error(L, "grep_lines: out of memory");
    lua_settop(L, m - 1);
  }
  lua_pushlstring(L, b->t.buf.n ? b->t.buf.p : "", b->t.buf.n); /* the box frees the text */
  return 1;
}

/* The summed costs of the strings of the array at t (absent: none), each
 * a line of path length plen, added to *cost; how many, or -1 when t is
 * not an array of strings. */
static lua_Integer lines_cost(lua_State *L, int t, size_t plen, size_t *cost) {
  if (lua_isnil(L, t)) return 0;
  if (!lua_istable(L, t)) return -1;
  lua_Integer n = luaL_len(L, t);
  for (lua_Integer k = 1; k <= n; k++) {
    size_t len = 0;
    int ok = lua_geti(L, t, k) == LUA_TSTRING;
    if (ok) lua_tolstring(L, -1, &len);
    lua_pop(L, 1);
    if (!ok) return -1;
    *cost += bw_gline_cost(plen, len);
  }
  return n;
}

/* core.grep_cut(matches, max_bytes) -> i or nil: the first of the match
 * tables that does not fit in max_bytes, each costed as a search's own
 * picks are (bw_gline_cost: one rule), never the very first; nil when
 * all fit. grep.lua cuts by it the matches a policy has judged. */
static int l_grep_cut(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  lua_Integer max = luaL_checkinteger(L, 2);
  size_t cap = max < 0 ? 0 : (size_t)max, used = 0;
  lua_Integer n = luaL_len(L, 1);
  for (lua_Integer i = 1; i <= n; i++) {
    if (lua_geti(L, 1, i) != LUA_TTABLE) return luaL_error(L, "grep_cut: match %d is not a table", (int)i);
    int m = lua_gettop(L);
    lua_getfield(L, m, "path");   /* m + 1 */
    lua_getfield(L, m, "text");   /* m + 2 */
    lua_getfield(L, m, "before"); /* m + 3 */
    lua_getfield(L, m, "after");  /* m + 4 */
    size_t plen = 0, tlen = 0, cost = 0;
    int ok = lua_type(L, m + 1) == LUA_TSTRING && lua_type(L, m + 2) == LUA_TSTRING;
    if (ok) {
      lua_tolstring(L, m + 1, &plen);
      lua_tolstring(L, m + 2, &tlen);
      cost = bw_gline_cost(plen, tlen);
      ok = lines_cost(L, m + 3, plen, &cost) >= 0 && lines_cost(L, m + 4, plen, &cost) >= 0;
    }
    if (!ok) return luaL_error(L, "grep_cut: match %d needs path and text (and string arrays before, after)", (int)i);
    lua_settop(L, m - 1);
    used += cost;
    if (used > cap && i > 1) {
      lua_pushinteger(L, i);
      return 1;
    }
  }
  lua_pushnil(L);
  return 1;
}

static const luaL_Reg methods[] = {
    {"grep", roots_grep}, {"glob", roots_glob}, {"list", roots_list}, {NULL, NULL}};

void bw_search_register(lua_State *L) {
  bw_lua_roots_methods(L, methods);
  luaL_newmetatable(L, GTEXT_MT);
  lua_pushcfunction(L, gtext_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_grep_lines);
  lua_setfield(L, -2, "grep_lines");
  lua_pushcfunction(L, l_grep_cut);
  lua_setfield(L, -2, "grep_cut");
}
