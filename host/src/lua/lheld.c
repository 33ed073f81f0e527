/*
 * lheld.c - a search's results held as the core made them, printed where
 * they leave (lua/burrow/toolkit/printer.lua), as ripgrep's printer is chosen by
 * its caller: grep's content matches (a match set), grep's files or counts
 * list (a list set: its own copy of the names and counts, cut when made)
 * and glob's entries (an entry set), each a userdata owning what it prints.
 *
 *   set:json()   -> the array as one JSON value fragment (ljson.h): the
 *                   bytes the encoder gives set:tables() (an MCP reply's
 *                   structuredContent, `burrow call`)
 *   set:text()   -> the lines the tool's render shows, escaped, a string
 *                   fragment (an MCP reply's text)
 *   set:tables() -> the array of tables, a new one each call (the Lua
 *                   API, a pack's ctx:call)
 *   #set         -> how many the result gives
 *   set:close()  -> the core's result freed now (Lua does not see its
 *                   size); what json and text wrote stays
 *
 * Which and how many are chosen once, when the set is made (grep: bw_gsel,
 * max_results and max_result_bytes by bw_gline_cost; a list: bw_glist_cost,
 * as grep.lua cut the tables; glob: a path's length + 1 against
 * max_result_bytes, as globwire.c cuts), and every form writes
 * that choice. json and text are written at most once each and kept with
 * the set, so a fragment spliced into a reply lives as long as the set.
 * The table forms lsearch.c gives when nothing is held are these too.
 */
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lcore.h"
#include "lheld.h"
#include "ljson.h"

#define ARRAY_MT "burrow.json.array"
#define GSET_MT "burrow.grep.matches"
#define ESET_MT "burrow.glob.entries"
#define LSET_MT "burrow.grep.list"

static void new_array(lua_State *L, int n) {
  lua_createtable(L, n, 0);
  luaL_setmetatable(L, ARRAY_MT);
}

void bw_held_path(lua_State *L, const char *prefix, const char *path) {
  luaL_Buffer b;
  size_t n = bw_grep_path(prefix, path, NULL);
  bw_grep_path(prefix, path, luaL_buffinitsize(L, &b, n));
  luaL_pushresultsize(&b, n);
}

static void push_lines(lua_State *L, const bw_gfile *f, size_t from, size_t to) {
  new_array(L, (int)(to - from));
  for (size_t i = from; i < to; i++) {
    lua_pushlstring(L, bw_gline_text(f, &f->lines[i]), f->lines[i].len);
    lua_seti(L, -2, (lua_Integer)(i - from) + 1);
  }
}

size_t bw_held_matches(lua_State *L, const bw_grep_res *r, const char *prefix, size_t limit,
                       int context, size_t max_bytes, int *cut) {
  size_t want = 0;
  for (size_t i = 0; i < r->nfiles; i++) want += r->files[i]->count;
  if (limit && want > limit) want = limit;
  new_array(L, want < INT_MAX ? (int)want : INT_MAX);
  bw_gsel s;
  bw_gpick p;
  bw_gsel_init(&s, r, prefix, limit, max_bytes);
  int have_path = 0; /* the path string made once per file */
  while (bw_gsel_next(&s, &p)) {
    const bw_gfile *f = p.f;
    if (p.first_of_file) {
      if (have_path) lua_pop(L, 1);
      bw_held_path(L, prefix, f->item.path);
      have_path = 1;
    }
    lua_createtable(L, 0, context ? 5 : 3);
    lua_pushvalue(L, -2);
    lua_setfield(L, -2, "path");
    lua_pushinteger(L, (lua_Integer)f->lines[p.m].line);
    lua_setfield(L, -2, "line");
    lua_pushlstring(L, bw_gline_text(f, &f->lines[p.m]), f->lines[p.m].len);
    lua_setfield(L, -2, "text");
    if (context) {
      push_lines(L, f, p.b, p.m);
      lua_setfield(L, -2, "before");
      push_lines(L, f, p.m + 1, p.a);
      lua_setfield(L, -2, "after");
    }
    lua_seti(L, -3, (lua_Integer)s.n);
  }
  if (have_path) lua_pop(L, 1);
  *cut = s.cut;
  return s.n;
}

static const char *type_name(char t) {
  return t == 'f' ? "file" : t == 'd' ? "dir" : t == 'l' ? "symlink" : "other";
}

void bw_held_entries(lua_State *L, const bw_glob_res *res, const char *prefix, size_t n) {
  new_array(L, (int)n);
  for (size_t i = 0; i < n; i++) {
    const bw_gitem *it = res->items[i];
    lua_createtable(L, 0, 4);
    lua_pushfstring(L, "%s%s", prefix, it->item.path);
    lua_setfield(L, -2, "path");
    lua_pushstring(L, type_name(it->type));
    lua_setfield(L, -2, "type");
    lua_pushinteger(L, (lua_Integer)it->size);
    lua_setfield(L, -2, "size");
    bw_lua_push_time(L, &it->mtime);
    lua_setfield(L, -2, "mtime");
    lua_seti(L, -2, (lua_Integer)i + 1);
  }
}

/* ---- the sets ---- */

/* What both kinds hold beside the core's result: the choice made when
 * the set was, and how to write it. Uservalue 1 is the json fragment,
 * 2 the text, once written. */
typedef struct held {
  char *prefix;
  size_t limit, max_bytes; /* limit: grep's max_results (0: all) */
  int context;             /* grep: the matches carry before/after */
  size_t n;                /* how many the result gives */
  int cut;                 /* max_bytes ended them */
  int live;                /* res is the set's to free */
} held;

typedef struct gset {
  held h;
  bw_grep_res res;
} gset;

typedef struct eset {
  held h;
  bw_glob_res res;
} eset;

/* grep's files or counts list (files and count modes): the names as shown
 * (prefixed) and their counts, copied into one block, the cut made */
typedef struct lset {
  held h;
  char **paths; /* the block: paths, lens, counts, the names */
  size_t *lens;
  long long *counts; /* NULL: the files list */
} lset;

static int gset_gc(lua_State *L) {
  gset *s = luaL_checkudata(L, 1, GSET_MT);
  if (s->h.live) bw_grep_res_free(&s->res);
  s->h.live = 0;
  free(s->h.prefix);
  s->h.prefix = NULL;
  return 0;
}

static int eset_gc(lua_State *L) {
  eset *s = luaL_checkudata(L, 1, ESET_MT);
  if (s->h.live) bw_glob_res_free(&s->res);
  s->h.live = 0;
  free(s->h.prefix);
  s->h.prefix = NULL;
  return 0;
}

static int lset_gc(lua_State *L) {
  lset *s = luaL_checkudata(L, 1, LSET_MT);
  free(s->paths);
  s->paths = NULL;
  s->h.live = 0;
  free(s->h.prefix);
  s->h.prefix = NULL;
  return 0;
}

static held *any_held(lua_State *L) {
  held *h = luaL_testudata(L, 1, GSET_MT);
  if (!h) h = luaL_testudata(L, 1, LSET_MT);
  return h ? h : luaL_checkudata(L, 1, ESET_MT);
}

static held *check_held(lua_State *L) {
  held *h = any_held(L);
  if (!h->live) luaL_error(L, "a search's result used after set:close()");
  return h;
}

/* set:close(): the core's result freed now, not when the set is collected
 * (Lua does not see its size); what was written (json, text) stays */
static int held_close(lua_State *L) {
  if (luaL_testudata(L, 1, LSET_MT)) return lset_gc(L);
  return luaL_testudata(L, 1, GSET_MT) ? gset_gc(L) : eset_gc(L);
}

static int held_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)check_held(L)->n);
  return 1;
}

/* Writes the set at 1 as a reply (grepwire.c, globwire.c), with text or
 * not; keeps json (unless kept already) and text as uservalues. The
 * fragments are made first, so nothing raises while a buffer is loose. */
static void write_wire(lua_State *L, held *h, int want_text) {
  bw_json_frag *f = bw_json_new_fragment(L);
  bw_json_frag *t = want_text ? bw_json_new_fragment(L) : NULL;
  char *text;
  size_t text_len, text_raw;
  int rc;
  if (luaL_testudata(L, 1, GSET_MT)) {
    bw_grep_wire_out w;
    rc = bw_grep_wire(&((gset *)h)->res, h->prefix, h->limit, h->max_bytes, h->context, want_text, &w);
    f->buf = w.json, f->len = f->raw_len = w.json_len;
    text = w.text, text_len = w.text_len, text_raw = w.text_raw;
  } else if (luaL_testudata(L, 1, LSET_MT)) {
    lset *s = (lset *)h;
    bw_grep_wire_out w;
    rc = bw_grep_list_wire(s->paths, s->lens, s->counts, h->n, want_text, &w);
    f->buf = w.json, f->len = f->raw_len = w.json_len;
    text = w.text, text_len = w.text_len, text_raw = w.text_raw;
  } else {
    bw_glob_wire_out w;
    rc = bw_glob_wire(&((eset *)h)->res, h->prefix, h->max_bytes, want_text, &w);
    f->buf = w.json, f->len = f->raw_len = w.json_len;
    text = w.text, text_len = w.text_len, text_raw = w.text_raw;
  }
  if (rc) luaL_error(L, "a search's result: out of memory");
  f->value = 1;
  if (t) {
    t->buf = text, t->len = text_len, t->raw_len = text_raw;
    lua_setiuservalue(L, 1, 2);
  } else free(text);
  if (lua_getiuservalue(L, 1, 1) == LUA_TNIL) {
    lua_pop(L, 1);
    lua_setiuservalue(L, 1, 1);
  } else lua_pop(L, 2); /* kept already: this one is collected */
}

/* set:json() -> the array, a JSON value fragment */
static int held_json(lua_State *L) {
  any_held(L);
  if (lua_getiuservalue(L, 1, 1) != LUA_TNIL) return 1;
  write_wire(L, check_held(L), 0);
  lua_getiuservalue(L, 1, 1);
  return 1;
}

/* set:text() -> the lines, a string fragment */
static int held_text(lua_State *L) {
  any_held(L);
  if (lua_getiuservalue(L, 1, 2) != LUA_TNIL) return 1;
  write_wire(L, check_held(L), 1);
  lua_getiuservalue(L, 1, 2);
  return 1;
}

/* set:tables() -> the array of tables */
static int held_tables(lua_State *L) {
  held *h = check_held(L);
  int cut;
  lset *ls = luaL_testudata(L, 1, LSET_MT);
  if (ls) { /* lsearch.c's table forms of files and counts */
    new_array(L, (int)h->n);
    for (size_t i = 0; i < h->n; i++) {
      if (ls->counts) lua_createtable(L, 0, 2);
      lua_pushlstring(L, ls->paths[i], ls->lens[i]);
      if (ls->counts) {
        lua_setfield(L, -2, "path");
        lua_pushinteger(L, (lua_Integer)ls->counts[i]);
        lua_setfield(L, -2, "count");
      }
      lua_seti(L, -2, (lua_Integer)i + 1);
    }
  } else if (luaL_testudata(L, 1, GSET_MT))
    bw_held_matches(L, &((gset *)h)->res, h->prefix, h->limit, h->context, h->max_bytes, &cut);
  else
    bw_held_entries(L, &((eset *)h)->res, h->prefix, h->n);
  return 1;
}

static const luaL_Reg held_methods[] = {
    {"json", held_json}, {"text", held_text}, {"tables", held_tables}, {"close", held_close},
    {NULL, NULL}};

static void new_set_class(lua_State *L, const char *name, lua_CFunction gc) {
  if (!luaL_newmetatable(L, name)) return;
  luaL_newlib(L, held_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, held_len);
  lua_setfield(L, -2, "__len");
  lua_pushboolean(L, 1); /* what printer.lua knows a set by */
  lua_setfield(L, -2, "__held");
}

/* A new set of kind name at the top, its prefix copied; the caller moves
 * its result in and sets live. */
static void *new_set(lua_State *L, size_t size, const char *name, lua_CFunction gc,
                     const char *prefix) {
  held *h = lua_newuserdatauv(L, size, 2);
  memset(h, 0, size);
  new_set_class(L, name, gc);
  lua_setmetatable(L, -2);
  h->prefix = strdup(prefix);
  if (!h->prefix) luaL_error(L, "a search's result: out of memory");
  return h;
}

const bw_grep_res *bw_held_grep(lua_State *L, bw_grep_res *res, const char *prefix, size_t limit,
                                int context, size_t max_bytes, size_t *n, int *cut) {
  gset *s = new_set(L, sizeof *s, GSET_MT, gset_gc, prefix);
  s->res = *res, s->h.live = 1;
  memset(res, 0, sizeof *res);
  s->h.limit = limit, s->h.context = context, s->h.max_bytes = max_bytes;
  bw_gsel sel; /* the choice, without writing it */
  bw_gpick p;
  bw_gsel_init(&sel, &s->res, s->h.prefix, limit, max_bytes);
  while (bw_gsel_next(&sel, &p)) {
  }
  s->h.n = *n = sel.n;
  s->h.cut = *cut = sel.cut;
  return &s->res;
}

const bw_glob_res *bw_held_glob(lua_State *L, bw_glob_res *res, const char *prefix,
                                size_t max_bytes, size_t *n, int *cut) {
  eset *s = new_set(L, sizeof *s, ESET_MT, eset_gc, prefix);
  s->res = *res, s->h.live = 1;
  memset(res, 0, sizeof *res);
  s->h.max_bytes = max_bytes;
  size_t pl = strlen(prefix), used = 0, i;
  for (i = 0; i < s->res.n; i++) { /* globwire.c's cut */
    used += pl + strlen(s->res.items[i]->item.path) + 1;
    if (used > max_bytes && i > 0) {
      s->h.cut = 1;
      break;
    }
  }
  s->h.n = *n = i;
  *cut = s->h.cut;
  return &s->res;
}

void bw_held_list(lua_State *L, const bw_grep_res *r, const char *prefix, int counted,
                  size_t max_bytes, int *cut) {
  lset *s = new_set(L, sizeof *s, LSET_MT, lset_gc, prefix);
  size_t n = r->nfiles, used = 0, names = 0, i;
  *cut = 0;
  for (i = 0; i < n; i++) { /* grep.lua's cut of the tables (cap_bytes) */
    size_t l = bw_grep_path(prefix, r->files[i]->item.path, NULL);
    used += bw_glist_cost(l, counted);
    if (max_bytes && used > max_bytes && i > 0) {
      *cut = 1;
      break;
    }
    names += l;
  }
  n = i;
  size_t per = sizeof(char *) + sizeof(size_t) + (counted ? sizeof(long long) : 0);
  s->h.live = 1;
  if (!n) return;
  char *block = malloc(n * per + names);
  if (!block) luaL_error(L, "a search's result: out of memory");
  s->paths = (char **)block;
  s->lens = (size_t *)(block + n * sizeof(char *));
  s->counts = counted ? (long long *)(block + n * (sizeof(char *) + sizeof(size_t))) : NULL;
  char *at = block + n * per;
  for (i = 0; i < n; i++) {
    s->paths[i] = at;
    s->lens[i] = bw_grep_path(prefix, r->files[i]->item.path, at);
    at += s->lens[i];
    if (counted) s->counts[i] = (long long)r->files[i]->count;
  }
  s->h.n = n, s->h.cut = *cut, s->h.max_bytes = max_bytes;
}
