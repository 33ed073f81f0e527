/*
 * lstage.c - the staged subtree operations (core/stage.c) as a Stage
 * class: roots:stage_copy / stage_move / stage_remove stage the tree and
 * return a Stage; the caller judges its entries (stage:match against the
 * policies' declared rules in C, stage:entries for check() policies),
 * then stage:commit() or stage:abort(). A Stage collected while pending
 * is aborted: nothing unjudged is ever left in place.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "lcore.h"
#include "ledit.h"
#include "lrules.h"
#include "stage.h"

#define STAGE_MT "burrow.Stage"

/* Stages made and not yet freed, in every state of the process: the
 * command may end without lua_close only when none is left (main.c), as
 * a pending one's finalizer aborts it. Its user value says it counts. */
static _Atomic size_t live;

size_t bw_lua_stages_live(void) { return live; }

static bw_stage *check_stage(lua_State *L) {
  bw_stage *s = luaL_checkudata(L, 1, STAGE_MT);
  bw_clear_detail();
  return s;
}

static void set_int(lua_State *L, const char *k, uint64_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

/* opts.progress(entries), called while staging: true stops it as a cancel
 * does (ctx:cancelled: a task cancelled through the store, or escalated
 * here, burrow.mcp.tasks); its errors are dropped (a progress report never
 * fails the call). */
typedef struct progress_fn {
  lua_State *L;
  int idx;
} progress_fn;

static int on_progress(void *arg, size_t entries) {
  progress_fn *p = arg;
  lua_pushvalue(p->L, p->idx);
  lua_pushinteger(p->L, (lua_Integer)entries);
  int stop = lua_pcall(p->L, 1, 1, 0) == LUA_OK && lua_toboolean(p->L, -1);
  lua_pop(p->L, 1);
  return stop;
}

/* A new Stage on the stack, set up from the options table at t:
 * {overwrite=, max_bytes=, max_entries=, max_ms=, progress=}. */
static bw_stage *new_stage(lua_State *L, int t, progress_fn *p) {
  bw_stage *s = lua_newuserdatauv(L, sizeof *s, 1);
  bw_stop stop = {.cancel = bw_cancel_flag()};
  size_t ms = bw_lua_opt_size(L, t, "max_ms", 0);
  stop.until_ms = ms ? bw_now_ms() + (int64_t)ms : 0;
  bw_stage_init(s, bw_lua_opt_bool(L, t, "overwrite"), bw_lua_opt_size(L, t, "max_bytes", 0),
                bw_lua_opt_size(L, t, "max_entries", 0), &stop);
  luaL_setmetatable(L, STAGE_MT);
  lua_pushboolean(L, 1);
  lua_setiuservalue(L, -2, 1);
  live++;
  if (lua_istable(L, t) && lua_getfield(L, t, "progress") == LUA_TFUNCTION) {
    p->L = L;
    p->idx = lua_gettop(L);
    s->progress = on_progress;
    s->progress_arg = p;
  } else if (lua_istable(L, t)) {
    lua_pop(L, 1);
  }
  return s;
}

/* The Stage below the progress function (if any), or nil, detail, CODE
 * (the stage, aborted, is left to the collector). */
static int staged(lua_State *L, bw_stage *s, int rc, int sidx) {
  s->progress = NULL;
  if (rc) {
    bw_err_saved e;
    bw_err_save(&e);
    bw_stage_abort(s);
    bw_err_restore(rc, &e); /* the staging's reason, not the abort's */
    return bw_lua_fail(L, rc);
  }
  lua_pushvalue(L, sidx);
  return 1;
}

/* roots:stage_copy(i, rel, j, rel2, {recursive=, overwrite=, max_bytes=, max_ms=, progress=}) */
static int roots_stage_copy(lua_State *L) {
  const char *src, *dst;
  const bw_root *rs = bw_lua_target(L, 1, 2, BW_VIEW_READ, &src);
  const bw_root *rd = bw_lua_target(L, 1, 4, BW_VIEW_WRITE, &dst);
  progress_fn p;
  bw_stage *s = new_stage(L, 6, &p);
  int sidx = lua_gettop(L) - (s->progress ? 1 : 0);
  return staged(L, s, bw_stage_copy(rs, src, rd, dst, bw_lua_opt_bool(L, 6, "recursive"), s), sidx);
}

/* roots:stage_move(i, rel, j, rel2, {overwrite=, max_ms=, progress=}) */
static int roots_stage_move(lua_State *L) {
  const char *src, *dst;
  const bw_root *rs = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &src);
  const bw_root *rd = bw_lua_target(L, 1, 4, BW_VIEW_WRITE, &dst);
  progress_fn p;
  bw_stage *s = new_stage(L, 6, &p);
  int sidx = lua_gettop(L) - (s->progress ? 1 : 0);
  return staged(L, s, bw_stage_move(rs, src, rd, dst, s), sidx);
}

/* roots:stage_remove(i, rel, {recursive=, expected_hash=, max_ms=, progress=}) */
static int roots_stage_remove(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  const char *hash = NULL;
  if (lua_istable(L, 4)) {
    lua_getfield(L, 4, "expected_hash");
    hash = lua_tostring(L, -1); /* stays alive in the options table */
    lua_pop(L, 1);
  }
  progress_fn p;
  bw_stage *s = new_stage(L, 4, &p);
  int sidx = lua_gettop(L) - (s->progress ? 1 : 0);
  return staged(L, s, bw_stage_remove(r, rel, bw_lua_opt_bool(L, 4, "recursive"), hash, s), sidx);
}

/* stage:pending() -> true while it waits for commit or abort */
static int stage_pending(lua_State *L) {
  lua_pushboolean(L, check_stage(L)->state == BW_STAGE_PENDING);
  return 1;
}

/* stage:count() -> the number of entries */
static int stage_count(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_stage(L)->n);
  return 1;
}

static const char *type_name(char t) {
  return t == 'f' ? "file" : t == 'd' ? "dir" : t == 'l' ? "symlink" : "other";
}

/* stage:entries() -> {{path=, type=, size=, nlink=}...} in the order listed */
static int stage_entries(lua_State *L) {
  bw_stage *s = check_stage(L);
  lua_createtable(L, (int)s->n, 0);
  for (size_t i = 0; i < s->n; i++) {
    const bw_stage_entry *e = &s->v[i];
    lua_createtable(L, 0, 4);
    lua_pushstring(L, s->paths + e->off);
    lua_setfield(L, -2, "path");
    lua_pushstring(L, type_name(e->type));
    lua_setfield(L, -2, "type");
    set_int(L, "size", e->size);
    set_int(L, "nlink", e->nlink);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

/* The staged entry that is the directory dirs[k] ({dev=, ino=} at index
 * dirs of the stack) names, by identity: its index, or -1. */
static long dir_entry(lua_State *L, const bw_stage *s, int dirs, lua_Integer k) {
  lua_geti(L, dirs, k);
  lua_getfield(L, -1, "dev");
  lua_getfield(L, -2, "ino");
  uint64_t dev = (uint64_t)lua_tointeger(L, -2), ino = (uint64_t)lua_tointeger(L, -1);
  lua_pop(L, 3);
  for (size_t i = 0; i < s->n; i++)
    if (s->v[i].type == 'd' && s->v[i].dev == dev && s->v[i].ino == ino) return (long)i;
  return -1;
}

/* stage:roots_in({{dev=, ino=}...}) -> {{path =, root = k}...}: where the
 * staged tree holds the directories named there (k their index), by
 * identity: below one, entries are that root's (a copy's source judged
 * under a nested root's own rules) */
static int stage_roots_in(lua_State *L) {
  bw_stage *s = check_stage(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  lua_Integer n = luaL_len(L, 2);
  lua_newtable(L);
  lua_Integer j = 0;
  for (lua_Integer k = 1; k <= n; k++) {
    long i = dir_entry(L, s, 2, k);
    if (i < 0) continue;
    lua_createtable(L, 0, 2);
    lua_pushstring(L, s->paths + s->v[i].off);
    lua_setfield(L, -2, "path");
    lua_pushinteger(L, k);
    lua_setfield(L, -2, "root");
    lua_rawseti(L, -2, ++j);
  }
  return 1;
}

/* The longest of the nested paths ({{path =}...} at index t, or none)
 * that p lies below: the offset of p's path inside it, else 0. */
static size_t nested_at(lua_State *L, int t, const char *p) {
  if (!t) return 0;
  size_t best = 0, pl = strlen(p);
  lua_Integer n = luaL_len(L, t);
  for (lua_Integer k = 1; k <= n; k++) {
    lua_geti(L, t, k);
    lua_getfield(L, -1, "path");
    size_t l;
    const char *q = lua_tolstring(L, -1, &l);
    if (q && l + 1 < pl && !memcmp(p, q, l) && p[l] == '/' && l + 1 > best) best = l + 1;
    lua_pop(L, 2);
  }
  return best;
}

/* base + "/" + sub into buf ("." + sub = sub); 0 when too long */
static size_t under(char *buf, size_t size, const char *base, const char *sub) {
  int n = !strcmp(base, ".") ? snprintf(buf, size, "%s", sub)
                             : snprintf(buf, size, "%s/%s", base, sub);
  return n < 0 || (size_t)n >= size ? 0 : (size_t)n;
}

/* stage:match({rules=, op=, rel=, lexical=, nested=}) -> refused, first,
 * id: the entries a declared rule denies op on, each at rel/PATH (the
 * in-root path the resolver saw) and lexical/PATH (as mapped), or below
 * one of nested ({{path =}...}, stage:roots_in) at its path inside it;
 * the first refused entry's index and the rule's id. Paths too long to
 * match are refused. */
static int stage_match(lua_State *L) {
  bw_stage *s = check_stage(L);
  luaL_checktype(L, 2, LUA_TTABLE);
  bw_lrules *u = bw_lua_rules_opt(L, 2, "rules");
  lua_getfield(L, 2, "op");
  const char *ops = luaL_checkstring(L, -1);
  int op = !strcmp(ops, "read")    ? BW_OP_READ
           : !strcmp(ops, "list")  ? BW_OP_LIST
           : !strcmp(ops, "write") ? BW_OP_WRITE
           : !strcmp(ops, "delete") ? BW_OP_DELETE : 0;
  if (!op) return luaL_argerror(L, 2, "op: expected read, list, write or delete");
  lua_getfield(L, 2, "rel");
  const char *rel = luaL_checkstring(L, -1);
  lua_getfield(L, 2, "lexical");
  const char *lex = luaL_optstring(L, -1, rel);
  lua_getfield(L, 2, "nested");
  int nt = lua_istable(L, -1) ? lua_gettop(L) : 0;
  const bw_rules *rs = bw_lua_rules_enter(u);
  size_t refused = 0, first = 0;
  int first_id = -1;
  char *a = malloc(BW_PATH_MAX + 1), *b = malloc(BW_PATH_MAX + 1);
  for (size_t i = 0; rs && a && b && i < s->n; i++) {
    const char *p = s->paths + s->v[i].off;
    size_t at = nested_at(L, nt, p); /* a nested root's entry: its own path */
    size_t al = at ? under(a, BW_PATH_MAX + 1, ".", p + at) : under(a, BW_PATH_MAX + 1, rel, p);
    size_t bl = at ? under(b, BW_PATH_MAX + 1, ".", p + at) : under(b, BW_PATH_MAX + 1, lex, p);
    int id = !al || !bl ? -2 : bw_rules_match(rs, a, al, op);
    if (id == -1 && strcmp(a, b)) id = bw_rules_match(rs, b, bl, op);
    if (id != -1) {
      if (!refused++) first = i, first_id = id;
    }
  }
  bw_lua_rules_leave(u);
  int oom = rs && (!a || !b);
  free(a);
  free(b);
  if (oom) return bw_lua_fail(L, BW_ENOMEM);
  lua_pushinteger(L, (lua_Integer)refused);
  if (!refused) return 1;
  lua_pushinteger(L, (lua_Integer)first + 1);
  if (first_id >= 0) lua_pushinteger(L, first_id);
  else lua_pushnil(L);
  return 3;
}

static void push_totals(lua_State *L, const bw_stage *s) {
  lua_createtable(L, 0, 7);
  set_int(L, "files", s->files);
  set_int(L, "dirs", s->dirs);
  set_int(L, "links", s->links);
  set_int(L, "skipped", s->skipped);
  set_int(L, "bytes", s->bytes);
  set_int(L, "entries", s->n);
  if (s->hash[0]) {
    lua_pushstring(L, s->hash);
    lua_setfield(L, -2, "content_hash");
  }
}

/* stage:totals() -> {files=, dirs=, links=, skipped=, bytes=, entries=[, content_hash=]} */
static int stage_totals(lua_State *L) {
  push_totals(L, check_stage(L));
  return 1;
}

/* stage:commit() -> totals, or nil, detail, CODE (put back where it can be) */
static int stage_commit(lua_State *L) {
  bw_stage *s = check_stage(L);
  int rc = bw_stage_commit(s);
  if (rc && s->kind == BW_STAGE_REMOVE) return bw_lua_fail_partial(L, rc, "removing", s->files, s->dirs);
  if (rc) return bw_lua_fail(L, rc);
  push_totals(L, s);
  return 1;
}

/* stage:abort() -> true[, restored name], or nil, detail, CODE */
static int stage_abort(lua_State *L) {
  bw_stage *s = check_stage(L);
  int rc = bw_stage_abort(s);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushboolean(L, 1);
  if (!s->restored[0]) return 1;
  lua_pushstring(L, s->restored);
  return 2;
}

/* stage:close(), __close and __gc: abort if pending, free (once counted) */
static int stage_gc(lua_State *L) {
  bw_stage_free(luaL_checkudata(L, 1, STAGE_MT));
  if (lua_getiuservalue(L, 1, 1) == LUA_TBOOLEAN && lua_toboolean(L, -1)) {
    live--;
    lua_pushboolean(L, 0);
    lua_setiuservalue(L, 1, 1);
  }
  lua_pop(L, 1);
  return 0;
}

static const luaL_Reg stage_methods[] = {
    {"pending", stage_pending}, {"count", stage_count},   {"entries", stage_entries},
    {"roots_in", stage_roots_in},
    {"match", stage_match},   {"totals", stage_totals},
    {"commit", stage_commit},   {"abort", stage_abort},   {"close", stage_gc},
    {NULL, NULL}};

static const luaL_Reg roots_methods[] = {{"stage_copy", roots_stage_copy},
                                         {"stage_move", roots_stage_move},
                                         {"stage_remove", roots_stage_remove},
                                         {NULL, NULL}};

void bw_stage_register(lua_State *L) {
  luaL_newmetatable(L, STAGE_MT);
  lua_newtable(L);
  luaL_setfuncs(L, stage_methods, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, stage_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, stage_gc);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
  bw_lua_roots_methods(L, roots_methods);
}
