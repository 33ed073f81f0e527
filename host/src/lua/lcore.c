/*
 * lcore.c - the burrow.core Lua module: the core's roots, reads, writes,
 * listings and hashes as Lua values. Expected failures return
 * nil, detail, CODE (detail may be ""): the Lua side words the message with
 * the path as the agent wrote it. Misuse raises.
 */
#include <errno.h>
#include <fcntl.h>
#include <lauxlib.h>
#include <malloc.h>
#include <pthread.h>
#include <limits.h>
#include <lua.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "charset.h"
#include "clock.h"
#include "core.h"
#include "lcore.h"
#include "stage.h"

#define ROOTS_MT "burrow.Roots"
#define FILE_MT "burrow.File"
#define HANDLE_MT "burrow.Handle"

/* nil, detail, CODE[, {on =, index =}]: what the failure is about, as
 * data, when the core said (bw_fail_on) */
static int fail(lua_State *L, int code) {
  const char *d = bw_detail(), *why = bw_fail_why();
  int index = 0;
  const char *on = bw_on_name(bw_fail_subject(&index));
  lua_pushnil(L);
  lua_pushstring(L, d ? d : "");
  lua_pushstring(L, bw_code_name(code));
  if (!on) {
    bw_clear_detail();
    return 3;
  }
  lua_createtable(L, 0, 3);
  lua_pushstring(L, on);
  lua_setfield(L, -2, "on");
  if (index > 0) {
    lua_pushinteger(L, index);
    lua_setfield(L, -2, "index");
  }
  if (why) {
    lua_pushstring(L, why);
    lua_setfield(L, -2, "reason");
  }
  bw_clear_detail();
  return 4;
}

static size_t opt_size(lua_State *L, int t, const char *k, size_t dflt);

int bw_lua_fail(lua_State *L, int code) { return fail(L, code); }

/* ---- roots ---- */

typedef struct roots {
  int n;
  bw_root *r;
} roots;

static roots *check_roots(lua_State *L) {
  roots *rs = luaL_checkudata(L, 1, ROOTS_MT);
  bw_clear_detail();
  if (!rs->r) luaL_error(L, "attempt to use a closed workspace");
  return rs;
}

static const bw_root *check_root(lua_State *L, roots *rs, int arg) {
  lua_Integer i = luaL_checkinteger(L, arg);
  luaL_argcheck(L, i >= 1 && i <= rs->n, arg, "no such root");
  return &rs->r[i - 1];
}

static const char *check_rel(lua_State *L, int arg);

const bw_root *bw_lua_root(lua_State *L, int roots_arg, int index_arg) {
  roots *rs = luaL_checkudata(L, roots_arg, ROOTS_MT);
  if (!rs->r) luaL_error(L, "attempt to use a closed workspace");
  bw_clear_detail();
  return check_root(L, rs, index_arg);
}

const char *bw_lua_rel(lua_State *L, int arg) { return check_rel(L, arg); }

/* ---- handles: one resolution per object (bw_resolve_handle) ---- */

/* The resolution (bw_handle: ~12 KB of path buffers) lives outside the
 * Lua heap: as userdata, every call would add 12 KB to the collector's
 * debt and run a full cycle every few dozen calls. A few are kept for
 * reuse (a small malloc'd block of that size costs a consolidation of
 * glibc's fast bins each time). */
typedef struct lhandle {
  bw_handle *h; /* NULL once closed */
  int open;     /* h holds a resolution (its fds) */
  int root;     /* h->root, for h:root() after close */
  bw_root view[2]; /* what bw_lua_target lends the core, per view */
} lhandle;

enum { SPARE_HANDLES = 8 };
static pthread_mutex_t spare_mu = PTHREAD_MUTEX_INITIALIZER;
static bw_handle *spare[SPARE_HANDLES];
static int nspare;

static bw_handle *handle_alloc(void) {
  bw_handle *h = NULL;
  pthread_mutex_lock(&spare_mu);
  if (nspare > 0) h = spare[--nspare];
  pthread_mutex_unlock(&spare_mu);
  return h ? h : malloc(sizeof *h);
}

static void handle_free(bw_handle *h) {
  pthread_mutex_lock(&spare_mu);
  if (nspare < SPARE_HANDLES) {
    spare[nspare++] = h;
    h = NULL;
  }
  pthread_mutex_unlock(&spare_mu);
  free(h);
}

static int handle_gc(lua_State *L) {
  lhandle *lh = luaL_checkudata(L, 1, HANDLE_MT);
  if (lh->open) bw_handle_close(lh->h);
  lh->open = 0;
  if (lh->h) handle_free(lh->h);
  lh->h = NULL;
  return 0;
}

void bw_lua_nest(lua_State *L, int roots_arg, const bw_root *r, bw_nest *out) {
  roots *rs = luaL_checkudata(L, roots_arg, ROOTS_MT);
  memset(out, 0, sizeof *out);
  out->self = -1;
  for (int k = 0; rs->r && k < rs->n && out->n < BW_NEST_MAX; k++) {
    if (rs->r[k].dev == r->dev && rs->r[k].ino == r->ino) { /* the walk's own */
      out->self = k + 1;
      continue;
    }
    out->v[out->n].dev = rs->r[k].dev;
    out->v[out->n].ino = rs->r[k].ino;
    out->v[out->n++].root = k + 1;
  }
}

void bw_lua_push_nested(lua_State *L, bw_nest *nest) {
  lua_newtable(L);
  for (size_t i = 0, j = 0; i < nest->n; i++) {
    char *met = atomic_load(&nest->v[i].met);
    if (!met) continue;
    lua_createtable(L, 0, 2);
    lua_pushstring(L, met);
    lua_setfield(L, -2, "path");
    lua_pushinteger(L, nest->v[i].root);
    lua_setfield(L, -2, "root");
    lua_rawseti(L, -2, (lua_Integer)++j);
  }
  bw_nest_clear(nest);
}

const bw_root *bw_lua_target(lua_State *L, int roots_arg, int arg, int view,
                             const char **rel) {
  roots *rs = luaL_checkudata(L, roots_arg, ROOTS_MT);
  if (!rs->r) luaL_error(L, "attempt to use a closed workspace");
  bw_clear_detail();
  if (lua_type(L, arg) == LUA_TNUMBER) {
    const bw_root *r = check_root(L, rs, arg);
    *rel = check_rel(L, arg + 1);
    return r;
  }
  lhandle *lh = luaL_checkudata(L, arg, HANDLE_MT);
  if (!lh->open) luaL_argerror(L, arg, "closed handle");
  lua_getiuservalue(L, arg, 1);
  int mine = lua_rawequal(L, -1, roots_arg);
  lua_pop(L, 1);
  if (!mine || lh->h->root >= rs->n) luaL_argerror(L, arg, "handle of another workspace");
  bw_handle_view(lh->h, rs->r, view, &lh->view[view], rel);
  return &lh->view[view];
}

const bw_handle *bw_lua_handle(lua_State *L, int roots_arg, int arg) {
  roots *rs = luaL_checkudata(L, roots_arg, ROOTS_MT);
  if (!rs->r) luaL_error(L, "attempt to use a closed workspace");
  lhandle *lh = luaL_checkudata(L, arg, HANDLE_MT);
  if (!lh->open) luaL_argerror(L, arg, "closed handle");
  lua_getiuservalue(L, arg, 1);
  int mine = lua_rawequal(L, -1, roots_arg);
  lua_pop(L, 1);
  if (!mine) luaL_argerror(L, arg, "handle of another workspace");
  bw_clear_detail();
  return lh->h;
}

static void add_methods(lua_State *L, const char *mt, const luaL_Reg *m) {
  luaL_getmetatable(L, mt);
  lua_getfield(L, -1, "__index");
  luaL_setfuncs(L, m, 0);
  lua_pop(L, 2);
}

void bw_lua_roots_methods(lua_State *L, const luaL_Reg *m) { add_methods(L, ROOTS_MT, m); }
void bw_lua_file_methods(lua_State *L, const luaL_Reg *m) { add_methods(L, FILE_MT, m); }

/* A path argument: NUL bytes are kept so the core can refuse them. */
static const char *check_rel(lua_State *L, int arg) {
  size_t len;
  const char *s = luaL_checklstring(L, arg, &len);
  if (len > BW_PATH_MAX || strlen(s) != len)
    luaL_argerror(L, arg, "relative path must come from roots:map");
  return s;
}

static int roots_gc(lua_State *L) {
  roots *rs = luaL_checkudata(L, 1, ROOTS_MT);
  for (int i = 0; rs->r && i < rs->n; i++) {
    if (!rs->r[i].readonly) bw_intent_tidy(&rs->r[i]); /* the journal, when empty */
    bw_root_close(&rs->r[i]);
  }
  free(rs->r);
  rs->r = NULL;
  rs->n = 0;
  return 0;
}

/* core.roots{{path=, mount=, readonly=}, ...} */
static int l_roots(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)luaL_len(L, 1);
  roots *rs = lua_newuserdatauv(L, sizeof *rs, 0);
  rs->n = 0;
  rs->r = NULL; /* closed until filled, like liolib's newprefile */
  luaL_setmetatable(L, ROOTS_MT);
  rs->r = calloc((size_t)(n > 0 ? n : 1), sizeof *rs->r);
  if (!rs->r) return luaL_error(L, "out of memory");
  for (int i = 1; i <= n; i++) {
    lua_geti(L, 1, i);
    luaL_checktype(L, -1, LUA_TTABLE);
    lua_getfield(L, -1, "path");
    lua_getfield(L, -2, "mount");
    lua_getfield(L, -3, "readonly");
    lua_getfield(L, -4, "resolver");
    const char *path = luaL_checkstring(L, -4);
    const char *mount = luaL_optstring(L, -3, NULL);
    int ro = lua_toboolean(L, -2);
    const char *resolver = luaL_optstring(L, -1, NULL);
    int backend = -1;
    if (resolver && !strcmp(resolver, "walk")) backend = BW_WALK;
    else if (resolver && !strcmp(resolver, "openat2")) backend = BW_OPENAT2;
    else if (resolver) luaL_error(L, "root %d: resolver must be openat2 or walk", i);
    int rc = bw_root_open(&rs->r[i - 1], path, mount, ro);
    if (rc == BW_OK) rs->r[i - 1].backend = backend;
    lua_pop(L, 5);
    if (rc) {
      const char *d = bw_detail();
      lua_pushnil(L);
      lua_pushstring(L, d ? d : "");
      lua_pushstring(L, bw_code_name(rc));
      bw_clear_detail();
      lua_createtable(L, 0, 2); /* nil, detail, CODE, {on = "root", index = i} */
      lua_pushliteral(L, "root");
      lua_setfield(L, -2, "on");
      lua_pushinteger(L, i);
      lua_setfield(L, -2, "index");
      return 4;
    }
    rs->n = i;
    for (int k = 0; k < i - 1; k++) /* one directory has one mode and one mount */
      if (rs->r[k].dev == rs->r[i - 1].dev && rs->r[k].ino == rs->r[i - 1].ino) {
        lua_pushnil(L);
        lua_pushfstring(L, "the same directory as root %d; serve it once, with one mode", k + 1);
        lua_pushstring(L, bw_code_name(BW_INVALID_ARGUMENT));
        lua_createtable(L, 0, 2);
        lua_pushliteral(L, "root");
        lua_setfield(L, -2, "on");
        lua_pushinteger(L, i);
        lua_setfield(L, -2, "index");
        return 4;
      }
  }
  for (int i = 0; i < rs->n; i++) { /* leftovers of killed writers and staged changes */
    if (rs->r[i].readonly) continue;
    bw_intent_recover_root(&rs->r[i]); /* first: the sweep drops copy stages */
    bw_sweep_temps(rs->r[i].fd);
  }
  return 1;
}

/* roots:map(path) -> index, rel */
static int roots_map(lua_State *L) {
  roots *rs = check_roots(L);
  size_t len;
  const char *path = luaL_checklstring(L, 2, &len);
  char rel[BW_PATH_MAX + 1];
  int idx = 0, rc = bw_map_path(rs->r, rs->n, path, len, &idx, rel);
  if (rc) return fail(L, rc);
  lua_pushinteger(L, idx + 1);
  lua_pushstring(L, rel);
  return 2;
}

static int roots_info(lua_State *L) {
  roots *rs = check_roots(L);
  const bw_root *r = check_root(L, rs, 2);
  lua_createtable(L, 0, 3);
  lua_pushstring(L, r->mount);
  lua_setfield(L, -2, "mount");
  lua_pushboolean(L, r->readonly);
  lua_setfield(L, -2, "readonly");
  lua_pushstring(L, bw_root_backend(r) == BW_WALK ? "walk" : "openat2");
  lua_setfield(L, -2, "resolver");
  if (r->alias) {
    lua_pushstring(L, r->alias);
    lua_setfield(L, -2, "alias");
  }
  return 1;
}

/* roots:landlock({reads}, {log dirs}) -> abi (0: no Landlock here)
 * Restricts the process to the roots (by their modes), files to read
 * (each a file, or a directory whose files may be read: Lua code, config,
 * tool and policy files) and directories to log into (the audit log). */
static int roots_landlock(lua_State *L) {
  roots *rs = check_roots(L);
  int nr = lua_istable(L, 2) ? (int)luaL_len(L, 2) : 0;
  int nw = lua_istable(L, 3) ? (int)luaL_len(L, 3) : 0;
  bw_landlock_rule *rules = calloc((size_t)(rs->n + nr + nw) + 1, sizeof *rules);
  if (!rules) return luaL_error(L, "out of memory");
  int n = 0, rc = BW_OK;
  for (int i = 0; i < rs->n; i++, n++) {
    rules[n].fd = rs->r[i].fd;
    rules[n].access = rs->r[i].readonly ? BW_LANDLOCK_READ : BW_LANDLOCK_ALL;
  }
  for (int t = 2; t <= 3 && rc == BW_OK; t++) {
    for (int i = 1; i <= (t == 2 ? nr : nw); i++) {
      lua_geti(L, t, i);
      const char *path = lua_tostring(L, -1);
      int fd = path ? open(path, O_PATH | O_CLOEXEC) : -1;
      lua_pop(L, 1);
      if (fd < 0) continue; /* a path that is not there needs no rule */
      rules[n].fd = fd;
      rules[n++].access = t == 3 ? BW_LANDLOCK_LOG : BW_LANDLOCK_FILES;
    }
  }
  int abi = 0;
  rc = bw_landlock(rules, n, &abi);
  for (int i = rs->n; i < n; i++) close(rules[i].fd);
  free(rules);
  if (rc) return fail(L, rc);
  lua_pushinteger(L, abi);
  return 1;
}

/* roots:canonical(i, rel) -> the in-root path after following links */
static int roots_canonical(lua_State *L) {
  roots *rs = check_roots(L);
  const bw_root *r = check_root(L, rs, 2);
  char out[BW_PATH_MAX + 1];
  int rc = bw_canonical(r, check_rel(L, 3), out, sizeof out);
  if (rc) return fail(L, rc);
  lua_pushstring(L, out);
  return 1;
}

static int roots_count(lua_State *L) {
  lua_pushinteger(L, check_roots(L)->n);
  return 1;
}

static const char *type_name(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "dir";
  if (S_ISLNK(m)) return "symlink";
  return "other";
}

static void push_time(lua_State *L, const struct timespec *t) {
  struct tm tm;
  char buf[40];
  time_t s = t->tv_sec;
  gmtime_r(&s, &tm);
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  lua_pushstring(L, buf);
}

void bw_lua_push_stat(lua_State *L, const struct stat *st) {
  lua_createtable(L, 0, 10);
  lua_pushinteger(L, (lua_Integer)st->st_dev);
  lua_setfield(L, -2, "dev");
  lua_pushinteger(L, (lua_Integer)st->st_ino);
  lua_setfield(L, -2, "ino");
  lua_pushstring(L, type_name(st->st_mode));
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)st->st_size);
  lua_setfield(L, -2, "size");
  push_time(L, &st->st_mtim);
  lua_setfield(L, -2, "mtime");
  lua_pushinteger(L, (lua_Integer)(st->st_mode & 07777));
  lua_setfield(L, -2, "mode");
  lua_pushinteger(L, (lua_Integer)st->st_nlink);
  lua_setfield(L, -2, "nlink");
  lua_pushinteger(L, (lua_Integer)st->st_uid);
  lua_setfield(L, -2, "uid");
  lua_pushinteger(L, (lua_Integer)st->st_gid);
  lua_setfield(L, -2, "gid");
}

/* roots:stat(i, rel) -> table (lstat semantics) */
static int roots_stat(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_READ, &rel);
  struct stat st;
  char target[BW_PATH_MAX + 1];
  int rc = bw_stat(r, rel, &st, target, sizeof target);
  if (rc) return fail(L, rc);
  bw_lua_push_stat(L, &st);
  if (S_ISLNK(st.st_mode)) {
    lua_pushstring(L, target);
    lua_setfield(L, -2, "target");
  }
  return 1;
}

/* roots:handle(i, rel, nofollow) -> Handle, info | nil, detail, CODE
 * info: {root = index of the innermost root, rel = in-root path there,
 * exists, and the lstat/stat fields when it exists}. */
static int roots_handle(lua_State *L) {
  roots *rs = check_roots(L);
  lua_Integer i = luaL_checkinteger(L, 2);
  luaL_argcheck(L, i >= 1 && i <= rs->n, 2, "no such root");
  const char *rel = check_rel(L, 3);
  int how = lua_toboolean(L, 4) ? BW_NOFOLLOW : 0;
  lhandle *lh = lua_newuserdatauv(L, sizeof *lh, 1);
  lh->open = lh->root = 0;
  lh->h = NULL;
  luaL_setmetatable(L, HANDLE_MT);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1); /* the roots outlive the handle */
  bw_handle *h = lh->h = handle_alloc();
  if (!h) return luaL_error(L, "not enough memory");
  int rc = bw_resolve_handle(rs->r, rs->n, (int)i - 1, rel, how, h);
  if (rc) return fail(L, rc);
  lh->open = 1;
  lh->root = h->root;
  /* what policies and subtree checks use; stat gives the rest */
  lua_createtable(L, 0, 10);
  if (h->exists) {
    const struct stat *st = &h->st;
    lua_pushstring(L, type_name(st->st_mode));
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, (lua_Integer)st->st_size);
    lua_setfield(L, -2, "size");
    lua_pushinteger(L, (lua_Integer)st->st_nlink);
    lua_setfield(L, -2, "nlink");
    lua_pushinteger(L, (lua_Integer)st->st_dev);
    lua_setfield(L, -2, "dev");
    lua_pushinteger(L, (lua_Integer)st->st_ino);
    lua_setfield(L, -2, "ino");
  }
  lua_pushinteger(L, h->root + 1);
  lua_setfield(L, -2, "root");
  lua_pushstring(L, h->rel);
  lua_setfield(L, -2, "rel");
  lua_pushboolean(L, h->exists);
  lua_setfield(L, -2, "exists");
  if (h->dangling) {
    lua_pushboolean(L, 1);
    lua_setfield(L, -2, "dangling");
  }
  lua_pushboolean(L, rs->r[h->root].readonly);
  lua_setfield(L, -2, "readonly");
  return 2;
}

/* ---- files ---- */

typedef struct file {
  bw_buf b;
  struct stat st;
  int open;
} file;

static file *check_file(lua_State *L) {
  file *f = luaL_checkudata(L, 1, FILE_MT);
  if (!f->open) luaL_error(L, "attempt to use a closed file");
  return f;
}

static int file_gc(lua_State *L) {
  file *f = luaL_checkudata(L, 1, FILE_MT);
  if (f->open) bw_buf_free(&f->b);
  f->open = 0;
  return 0;
}

/* roots:read(i, rel, max_bytes) -> File, stat. A large file is mapped
 * lazily: a read of its head or tail touches those pages, and what reads
 * all of it asks for every page first (run_job, bw_buf_prefault). */
static int roots_read(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_READ, &rel);
  lua_Integer max = luaL_checkinteger(L, 4);
  file *f = lua_newuserdatauv(L, sizeof *f, 0);
  f->open = 0;
  luaL_setmetatable(L, FILE_MT);
  struct stat st;
  int rc = bw_map_file(r, rel, (size_t)(max > 0 ? max : 0), &f->b, &st);
  if (rc) return fail(L, rc);
  f->open = 1;
  f->st = st;
  bw_lua_push_stat(L, &st);
  return 2;
}

/* A malloc'd result on its way to becoming a Lua string: a box the
 * collector frees owns it, so running out of memory in lua_pushlstring
 * cannot leak it. Make the box before the buffer exists. */
#define BOX_MT "burrow.Box"

static int box_gc(lua_State *L) {
  char **b = luaL_checkudata(L, 1, BOX_MT);
  free(*b);
  *b = NULL;
  return 0;
}

static char **new_box(lua_State *L) {
  char **b = lua_newuserdatauv(L, sizeof *b, 0);
  *b = NULL;
  if (luaL_newmetatable(L, BOX_MT)) {
    lua_pushcfunction(L, box_gc);
    lua_setfield(L, -2, "__gc");
  }
  lua_setmetatable(L, -2);
  return b;
}

/* Replace the box on top of the stack by its content as a string. */
static void push_boxed(lua_State *L, char **box, size_t len) {
  lua_pushlstring(L, *box ? *box : "", len);
  free(*box);
  *box = NULL;
  lua_remove(L, -2);
}

char **bw_lua_new_box(lua_State *L) { return new_box(L); }
void bw_lua_push_boxed(lua_State *L, char **box, size_t len) { push_boxed(L, box, len); }

/* Work on a file's bytes, guarded when they are mapped. */
typedef struct job {
  const bw_buf *b;
  int (*run)(struct job *);
  bw_text_info info;
  bw_lines lines;
  size_t first, limit, max_line, max_bytes, at;
  char hash[BW_HASH_STR];
  char *b64;
  size_t b64_len;
  bw_charset cs;
  const char *want; /* decode: the encoding */
  int whole;        /* it reads every byte */
} job;

static int job_run(void *arg) {
  job *j = arg;
  return j->run(j);
}

/* A job over the whole file (hash, scan, base64, charset) asks for its
 * pages first: the file is mapped lazily (roots_read) */
static int run_job(job *j) {
  if (j->whole) bw_buf_prefault(j->b, 0, j->b->len);
  return j->b->mapped ? bw_guard(job_run, j) : j->run(j);
}

/* For the binding files that add File methods (ljson.c: f:lines_json). */
int bw_lua_page_args(lua_State *L, size_t *first, size_t *limit, size_t *max_line, size_t *max_bytes,
                     size_t *at) {
  const bw_buf *b = &check_file(L)->b;
  *first = (size_t)luaL_checkinteger(L, 2);
  *limit = (size_t)luaL_checkinteger(L, 3);
  *max_line = (size_t)luaL_checkinteger(L, 4);
  *max_bytes = (size_t)luaL_checkinteger(L, 5);
  int last_use = lua_toboolean(L, 6);
  /* a cursor's byte (bw_lines_at), or nil: by line */
  lua_Integer a = luaL_optinteger(L, 7, -1);
  *at = a < 0 ? BW_LINES_BY_LINE : (size_t)a;
  lua_settop(L, 7);
  if (*at == BW_LINES_BY_LINE) bw_lua_file_prefault_head(b, *first, *limit, *max_bytes);
  return last_use;
}

const bw_buf *bw_lua_file_buf(lua_State *L, int arg) {
  file *f = luaL_checkudata(L, arg, FILE_MT);
  if (!f->open) luaL_error(L, "attempt to use a closed file");
  return &f->b;
}

void bw_lua_file_close(lua_State *L, int arg) {
  file *f = luaL_checkudata(L, arg, FILE_MT);
  if (f->open) bw_buf_free(&f->b);
  f->open = 0;
}

/* Numbered lines from the first: the pages limit lines take at 512 bytes a
 * line (no more than max_bytes of output needs, truncated lines aside),
 * asked for at once; past that, or from further in, they fault in as the
 * numbering touches them. A head of 100 lines maps no more than it reads. */
void bw_lua_file_prefault_head(const bw_buf *b, size_t first, size_t limit,
                               size_t max_bytes) {
  size_t n = limit < ((size_t)-1) / 512 ? limit * 512 : (size_t)-1;
  if (max_bytes && n > max_bytes) n = max_bytes;
  if (first <= 1) bw_buf_prefault(b, 0, n);
}

int bw_lua_file_run(const bw_buf *b, int (*fn)(void *), void *ud) {
  return b->mapped ? bw_guard(fn, ud) : fn(ud);
}

static int do_hash(job *j) { return bw_sha256(j->b->data, j->b->len, j->hash); }

static int do_scan(job *j) {
  bw_text_scan(j->b->data, j->b->len, &j->info);
  return BW_OK;
}

static int do_lines(job *j) {
  if (j->at != BW_LINES_BY_LINE)
    return bw_lines_at(j->b->data, j->b->len, j->at, j->first, j->limit,
                       j->max_line, j->max_bytes, 0, &j->lines);
  return bw_number_lines(j->b->data, j->b->len, j->first, j->limit,
                         j->max_line, j->max_bytes, &j->lines);
}

static int do_tail(job *j) {
  return bw_tail_lines(j->b->data, j->b->len, j->limit, j->max_line,
                       j->max_bytes, &j->lines);
}

static int do_b64(job *j) {
  return bw_base64_encode(j->b->data, j->b->len, &j->b64, &j->b64_len);
}

static int do_charset(job *j) { return bw_charset_detect(j->b->data, j->b->len, j->want, &j->cs); }

static int do_decode(job *j) {
  size_t bom = j->cs.bom;
  return bw_charset_decode(j->want, j->b->data + bom, j->b->len - bom, &j->b64, &j->b64_len);
}

/* f:charset([fallback]) -> name, bom bytes, is_utf8 (BOM, UTF-8
 * validity, libuchardet, then the fallback list, "a,b": charset.c) */
static int file_charset(lua_State *L) {
  job j = {.b = &check_file(L)->b, .run = do_charset, .whole = 1};
  j.want = luaL_optstring(L, 2, NULL);
  int rc = run_job(&j);
  if (rc) return fail(L, rc);
  lua_pushstring(L, j.cs.name);
  lua_pushinteger(L, (lua_Integer)j.cs.bom);
  lua_pushboolean(L, j.cs.utf8);
  return 3;
}

/* f:decode(charset, bom) -> the text after bom bytes, as UTF-8 */
static int file_decode(lua_State *L) {
  job j = {.b = &check_file(L)->b, .run = do_decode, .whole = 1};
  j.want = luaL_checkstring(L, 2);
  j.cs.bom = (size_t)luaL_optinteger(L, 3, 0);
  if (j.cs.bom > j.b->len) j.cs.bom = j.b->len;
  if (!bw_charset_known(j.want)) return fail(L, bw_fail(BW_INVALID_ARGUMENT, "unknown charset"));
  char **box = new_box(L);
  int rc = run_job(&j);
  *box = j.b64;
  if (rc) return fail(L, rc);
  push_boxed(L, box, j.b64_len);
  return 1;
}

static int file_hash(lua_State *L) {
  job j = {.b = &check_file(L)->b, .run = do_hash, .whole = 1};
  int rc = run_job(&j);
  if (rc) return fail(L, rc);
  lua_pushstring(L, j.hash);
  return 1;
}

static int file_scan(lua_State *L) {
  job j = {.b = &check_file(L)->b, .run = do_scan, .whole = 1};
  int rc = run_job(&j);
  if (rc) return fail(L, rc);
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, (lua_Integer)j.info.lines);
  lua_setfield(L, -2, "lines");
  lua_pushstring(L, bw_newline_kind(&j.info));
  lua_setfield(L, -2, "newline");
  lua_pushboolean(L, j.info.bom);
  lua_setfield(L, -2, "bom");
  lua_pushboolean(L, j.info.binary);
  lua_setfield(L, -2, "binary");
  return 1;
}

/* f:lines(first, limit, max_line, max_bytes [, last_use [, at]]) -> text, info
 * (at: a cursor's byte, on line first: bw_lines_at)
 * With last_use the file is closed before the text becomes a Lua string,
 * so a big file's pages and its numbered copy are not all held at once.
 * (f:lines_json, the same as a prepared JSON fragment: ljson.c.) */
static int file_lines(lua_State *L) {
  file *f = check_file(L);
  job j = {.b = &f->b, .run = do_lines};
  int last_use = bw_lua_page_args(L, &j.first, &j.limit, &j.max_line, &j.max_bytes, &j.at);
  char **box = new_box(L);
  int rc = run_job(&j);
  *box = j.lines.out;
  if (last_use) file_gc(L);
  if (rc) return fail(L, rc); /* the box frees the buffer */
  push_boxed(L, box, j.lines.out_len);
  bw_lua_push_lines_info(L, &j.lines);
  return 2;
}

void bw_lua_push_lines_info(lua_State *L, const bw_lines *lines) {
  lua_createtable(L, 0, 5);
  lua_pushinteger(L, (lua_Integer)lines->first);
  lua_setfield(L, -2, "first");
  lua_pushinteger(L, (lua_Integer)lines->last);
  lua_setfield(L, -2, "last");
  lua_pushinteger(L, (lua_Integer)lines->next);
  lua_setfield(L, -2, "next");
  lua_pushboolean(L, lines->truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushinteger(L, (lua_Integer)lines->cut_lines);
  lua_setfield(L, -2, "cut_lines");
  lua_pushinteger(L, (lua_Integer)lines->raw_len); /* the page's numbered text */
  lua_setfield(L, -2, "bytes");
  lua_pushinteger(L, (lua_Integer)lines->next_byte);
  lua_setfield(L, -2, "next_byte");
  lua_pushboolean(L, lines->mid_line);
  lua_setfield(L, -2, "mid_line");
}

/* f:tail(n, max_line, max_bytes [, last_use]) -> text, info: the last n
 * lines, found from the end (bw_tail_lines); info.lines is how many,
 * info.whole whether they are the whole file. */
static int file_tail(lua_State *L) {
  file *f = check_file(L);
  job j = {.b = &f->b, .run = do_tail};
  j.limit = (size_t)luaL_checkinteger(L, 2);
  j.max_line = (size_t)luaL_checkinteger(L, 3);
  j.max_bytes = (size_t)luaL_checkinteger(L, 4);
  int last_use = lua_toboolean(L, 5);
  char **box = new_box(L);
  int rc = run_job(&j);
  *box = j.lines.out;
  if (last_use) file_gc(L);
  if (rc) return fail(L, rc);
  push_boxed(L, box, j.lines.out_len);
  lua_createtable(L, 0, 4);
  lua_pushinteger(L, (lua_Integer)j.lines.last);
  lua_setfield(L, -2, "lines");
  lua_pushboolean(L, j.lines.first == 1);
  lua_setfield(L, -2, "whole");
  lua_pushboolean(L, j.lines.truncated);
  lua_setfield(L, -2, "truncated");
  lua_pushinteger(L, (lua_Integer)j.lines.cut_lines);
  lua_setfield(L, -2, "cut_lines");
  return 2;
}

static int file_base64(lua_State *L) {
  job j = {.b = &check_file(L)->b, .run = do_b64, .whole = 1};
  char **box = new_box(L);
  int rc = run_job(&j);
  *box = j.b64;
  if (rc) return fail(L, rc);
  push_boxed(L, box, j.b64_len);
  return 1;
}

/* f:identity(): a key that changes whenever the content can have changed
 * (inode, size, mtime and ctime to the nanosecond) */
static int file_identity(lua_State *L) {
  const struct stat *st = &check_file(L)->st;
  lua_pushfstring(L, "%I:%I:%I:%I.%I:%I.%I", (lua_Integer)st->st_dev,
                  (lua_Integer)st->st_ino, (lua_Integer)st->st_size,
                  (lua_Integer)st->st_mtim.tv_sec,
                  (lua_Integer)st->st_mtim.tv_nsec,
                  (lua_Integer)st->st_ctim.tv_sec,
                  (lua_Integer)st->st_ctim.tv_nsec);
  return 1;
}

static int file_size(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_file(L)->b.len);
  return 1;
}

/* ---- writes and listings ---- */

/* roots:write(i, rel, data, {create_dirs=, expected_hash=}) */
static int roots_write(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  size_t len;
  const char *data = luaL_checklstring(L, 4, &len);
  bw_write_opts o = {0};
  if (lua_istable(L, 5)) {
    lua_getfield(L, 5, "create_dirs");
    o.create_dirs = lua_toboolean(L, -1);
    lua_getfield(L, 5, "expected_hash");
    o.expected_hash = lua_tostring(L, -1);
    lua_pop(L, 2); /* the string stays alive in the options table */
    o.max_compare = opt_size(L, 5, "max_compare", 0);
  }
  bw_write_res res;
  int rc = bw_write_file(r, rel, data, len, &o, &res);
  if (rc == BW_HASH_MISMATCH) {
    int n = fail(L, rc);
    lua_pushstring(L, res.current_hash);
    return n + 1;
  }
  if (rc) return fail(L, rc);
  lua_createtable(L, 0, 2);
  lua_pushboolean(L, res.created);
  lua_setfield(L, -2, "created");
  lua_pushstring(L, res.hash);
  lua_setfield(L, -2, "content_hash");
  return 1;
}

static size_t opt_size(lua_State *L, int t, const char *k, size_t dflt) {
  lua_getfield(L, t, k);
  lua_Integer v = luaL_optinteger(L, -1, (lua_Integer)dflt);
  lua_pop(L, 1);
  return v < 0 ? 0 : (size_t)v;
}

/* ---- module functions ---- */

/* core.random_hex(n) -> 2n hex digits from the kernel's random source
 * (getrandom), for ids a client must not guess: 1 <= n <= 64. */
static int l_random_hex(lua_State *L) {
  lua_Integer n = luaL_checkinteger(L, 1);
  luaL_argcheck(L, n >= 1 && n <= 64, 1, "1 to 64 bytes");
  size_t k = n < 1 ? 1 : n > 64 ? 64 : (size_t)n; /* (checked above) */
  unsigned char b[64];
  char hex[129];
  if (getrandom(b, k, 0) != (ssize_t)k) return fail(L, bw_code_from_errno(errno));
  for (size_t i = 0; i < k; i++) snprintf(hex + 2 * i, 3, "%02x", b[i]);
  lua_pushlstring(L, hex, 2 * k);
  return 1;
}

static int l_sha256(lua_State *L) {
  size_t len;
  const char *s = luaL_checklstring(L, 1, &len);
  char out[BW_HASH_STR];
  int rc = bw_sha256(s, len, out);
  if (rc) return fail(L, rc);
  lua_pushstring(L, out);
  return 1;
}

/* core.hmac_sha256(key, message) -> 64 hex digits */
static int l_hmac_sha256(lua_State *L) {
  size_t klen, len;
  const char *k = luaL_checklstring(L, 1, &klen);
  const char *m = luaL_checklstring(L, 2, &len);
  unsigned char mac[32];
  int rc = bw_hmac_sha256(k, klen, m, len, mac);
  if (rc) return fail(L, rc);
  char hex[65];
  for (int i = 0; i < 32; i++) snprintf(hex + 2 * i, 3, "%02x", mac[i]);
  lua_pushlstring(L, hex, 64);
  return 1;
}

/* core.equal_ct(a, b): a == b in time that depends only on the lengths */
static int l_equal_ct(lua_State *L) {
  size_t alen, blen;
  const char *a = luaL_checklstring(L, 1, &alen);
  const char *b = luaL_checklstring(L, 2, &blen);
  lua_pushboolean(L, bw_equal_ct(a, alen, b, blen));
  return 1;
}

static int l_base64_decode(lua_State *L) {
  size_t len, out_len;
  const char *s = luaL_checklstring(L, 1, &len);
  char *out;
  int rc = bw_base64_decode(s, len, &out, &out_len);
  if (rc) return fail(L, rc);
  lua_pushlstring(L, out, out_len);
  free(out);
  return 1;
}

/* core.base64_size(s) -> decoded length, or nil, msg, "INVALID_ARGUMENT":
 * the strict check of base64_decode without building the bytes. */
static int l_base64_size(lua_State *L) {
  size_t len, n;
  const char *s = luaL_checklstring(L, 1, &len);
  int rc = bw_base64_size(s, len, &n);
  if (rc) return fail(L, rc);
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

static int l_base64_encode(lua_State *L) {
  size_t len, out_len;
  const char *s = luaL_checklstring(L, 1, &len);
  char *out;
  int rc = bw_base64_encode(s, len, &out, &out_len);
  if (rc) return fail(L, rc);
  lua_pushlstring(L, out, out_len);
  free(out);
  return 1;
}

/* core.now() -> seconds on a monotonic clock, for durations */
static int l_now(lua_State *L) {
  lua_pushnumber(L, (lua_Number)bw_now_mono());
  return 1;
}

/* core.sleep(seconds): this thread waits (at most 1 s a call; a tool's
 * ctx:wait sleeps in short steps and looks at its cancel between them) */
static int l_sleep(lua_State *L) {
  lua_Number s = luaL_checknumber(L, 1);
  if (!(s > 0)) return 0;
  if (s > 1) s = 1;
  struct timespec ts = {(time_t)s, (long)((s - (lua_Number)(time_t)s) * 1e9)};
  while (nanosleep(&ts, &ts) && errno == EINTR) {}
  return 0;
}

/* core.trim(): give the heap's free memory back to the system
 * (malloc_trim), after a full collection while the server is idle */
static int l_trim(lua_State *L) {
  lua_pushboolean(L, malloc_trim(0));
  return 1;
}

/* core.backend() -> "openat2", or "walk" once the kernel is known to lack
 * openat2 (probed now): what a root that names no resolver gets. */
static int l_backend(lua_State *L) {
  if (!lua_isnoneornil(L, 1))
    return luaL_argerror(L, 1, "the resolver is a workspace's own: burrow.open{resolver = \"walk\"}");
  bw_probe_backend();
  lua_pushstring(L, bw_backend_name());
  return 1;
}

static const luaL_Reg roots_methods[] = {
    {"map", roots_map},     {"info", roots_info},   {"count", roots_count},
    {"stat", roots_stat},   {"read", roots_read},   {"write", roots_write},
    {"canonical", roots_canonical},
    {"landlock", roots_landlock}, {"handle", roots_handle},
    {"close", roots_gc},    {NULL, NULL}};

/* h:root() -> the index of the innermost root holding the object */
static int handle_root(lua_State *L) {
  lhandle *lh = luaL_checkudata(L, 1, HANDLE_MT);
  lua_pushinteger(L, lh->root + 1);
  return 1;
}

static const luaL_Reg handle_methods[] = {
    {"close", handle_gc}, {"root", handle_root}, {NULL, NULL}};

static const luaL_Reg file_methods[] = {
    {"hash", file_hash},     {"scan", file_scan}, {"lines", file_lines}, {"tail", file_tail},
    {"base64", file_base64}, {"size", file_size}, {"identity", file_identity},
    {"charset", file_charset}, {"decode", file_decode},
    {"close", file_gc},
    {NULL, NULL}};

static const luaL_Reg funcs[] = {{"roots", l_roots},
                                 {"sha256", l_sha256},
                                 {"hmac_sha256", l_hmac_sha256}, {"equal_ct", l_equal_ct},
                                 {"random_hex", l_random_hex},
                                 {"base64_decode", l_base64_decode},
                                 {"base64_size", l_base64_size},
                                 {"base64_encode", l_base64_encode},
                                 {"backend", l_backend},
                                 {"now", l_now},
                                 {"sleep", l_sleep},
                                 {"trim", l_trim},
                                 {NULL, NULL}};

static void new_class(lua_State *L, const char *name, const luaL_Reg *m,
                      lua_CFunction gc) {
  luaL_newmetatable(L, name);
  lua_newtable(L);
  luaL_setfuncs(L, m, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
}

void bw_core_open(lua_State *L) {
  new_class(L, ROOTS_MT, roots_methods, roots_gc);
  new_class(L, FILE_MT, file_methods, file_gc);
  new_class(L, HANDLE_MT, handle_methods, handle_gc);
  luaL_newlib(L, funcs);
}
