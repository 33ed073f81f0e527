/*
 * lfile.c - the burrow.File class: a file's bytes as roots:read gives
 * them (mapped lazily when large), and what reads them: hash, scan,
 * numbered lines and a tail, base64, charset and decode (charset.c),
 * identity, size, each run under the SIGBUS guard when mapped; and
 * bw_lua_file_methods with the File helpers other binding files add
 * methods with (ljsonfrag.c, llines.c). Above lroots.c: roots:read is
 * added to the Roots class from here.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>

#include "charset.h"
#include "core.h"
#include "lcore.h"

#define FILE_MT "burrow.File"

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
  if (rc) return bw_lua_fail(L, rc);
  f->open = 1;
  f->st = st;
  bw_lua_push_stat(L, &st);
  return 2;
}

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

/* For the binding files that add File methods (lpage.c: f:page; llines.c: f:lines_table). */
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
  if (rc) return bw_lua_fail(L, rc);
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
  if (!bw_charset_known(j.want)) return bw_lua_fail(L, bw_fail(BW_INVALID_ARGUMENT, "unknown charset"));
  char **box = bw_lua_new_box(L);
  int rc = run_job(&j);
  *box = j.b64;
  if (rc) return bw_lua_fail(L, rc);
  bw_lua_push_boxed(L, box, j.b64_len);
  return 1;
}

static int file_hash(lua_State *L) {
  job j = {.b = &check_file(L)->b, .run = do_hash, .whole = 1};
  int rc = run_job(&j);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushstring(L, j.hash);
  return 1;
}

static int file_scan(lua_State *L) {
  job j = {.b = &check_file(L)->b, .run = do_scan, .whole = 1};
  int rc = run_job(&j);
  if (rc) return bw_lua_fail(L, rc);
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
 * (f:page, the same page held until its form is chosen: lpage.c.) */
static int file_lines(lua_State *L) {
  file *f = check_file(L);
  job j = {.b = &f->b, .run = do_lines};
  int last_use = bw_lua_page_args(L, &j.first, &j.limit, &j.max_line, &j.max_bytes, &j.at);
  char **box = bw_lua_new_box(L);
  int rc = run_job(&j);
  *box = j.lines.out;
  if (last_use) file_gc(L);
  if (rc) return bw_lua_fail(L, rc); /* the box frees the buffer */
  bw_lua_push_boxed(L, box, j.lines.out_len);
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
  char **box = bw_lua_new_box(L);
  int rc = run_job(&j);
  *box = j.lines.out;
  if (last_use) file_gc(L);
  if (rc) return bw_lua_fail(L, rc);
  bw_lua_push_boxed(L, box, j.lines.out_len);
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
  char **box = bw_lua_new_box(L);
  int rc = run_job(&j);
  *box = j.b64;
  if (rc) return bw_lua_fail(L, rc);
  bw_lua_push_boxed(L, box, j.b64_len);
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

void bw_lua_file_methods(lua_State *L, const luaL_Reg *m) { bw_lua_add_methods(L, FILE_MT, m); }

void bw_lua_file_push_methods(lua_State *L) {
  luaL_getmetatable(L, FILE_MT);
  lua_getfield(L, -1, "__index");
  lua_remove(L, -2);
}

static const luaL_Reg file_methods[] = {
    {"hash", file_hash},     {"scan", file_scan}, {"lines", file_lines}, {"tail", file_tail},
    {"base64", file_base64}, {"size", file_size}, {"identity", file_identity},
    {"charset", file_charset}, {"decode", file_decode},
    {"close", file_gc},
    {NULL, NULL}};


static const luaL_Reg roots_methods[] = {{"read", roots_read}, {NULL, NULL}};

void bw_file_register(lua_State *L) {
  bw_lua_new_class(L, FILE_MT, file_methods, file_gc, 3); /* llines.c, lpage.c */
  bw_lua_roots_methods(L, roots_methods);
}
