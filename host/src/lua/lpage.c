/*
 * lpage.c - read_file's page of a file, held as data until it leaves
 * (lua/burrow/toolkit/printer.lua), as lheld.c holds grep's matches: the
 * tool tells the page (its lines, bytes, cursor, cut: text.c's
 * bw_lines_count, nothing written) and the edge chooses its form.
 *
 *   f:page(first, limit, max_line, max_bytes [, _ [, at]]) -> page, info
 *                   f:lines's arguments and info; the page holds the File
 *   page:text()   -> the numbered lines as a JSON string fragment, numbered
 *                   and escaped in one pass (bw_lines_at with json): what
 *                   an MCP reply's text splices
 *   page:json()   -> the same fragment (the encoder writes it between
 *                   quotes: `burrow call`)
 *   page:tables() -> the numbered lines as a Lua string (ws:call, a pack's
 *                   ctx:call, the C API)
 *   #page         -> the numbered text's bytes
 *   page:close()  -> the File closed now; a fragment written stays
 *
 * Every form is the page counted: text.c's modes cut and cap by the same
 * raw bytes (spec/tools/read_file_wire_spec.lua compares them).
 * Uservalue 1 is the File, 2 the fragment once written. Added to lfile.c's
 * class through bw_lua_file_methods, so lfile.c knows nothing of JSON.
 */
#include <lauxlib.h>
#include <lua.h>
#include <string.h>

#include "core.h"
#include "lcore.h"
#include "ljson.h"

#define PAGE_MT "burrow.read.page"

typedef struct page {
  size_t first, limit, max_line, max_bytes, at; /* at: BW_LINES_BY_LINE or a cursor's byte */
  bw_lines told;                                /* the page as counted (no buffers) */
  int live;                                     /* the File is still the page's */
} page;

typedef struct page_job {
  const bw_buf *b;
  const page *p;
  int mode; /* 0 text, 1 json, 2 count */
  bw_lines lines;
} page_job;

static int page_run(void *arg) {
  page_job *j = arg;
  const page *p = j->p;
  if (j->mode == 2)
    return bw_lines_count(j->b->data, j->b->len, p->at, p->first, p->limit, p->max_line,
                          p->max_bytes, &j->lines);
  return bw_lines_at(j->b->data, j->b->len, p->at, p->first, p->limit, p->max_line,
                     p->max_bytes, j->mode, &j->lines);
}

static page *check_page(lua_State *L) {
  page *p = luaL_checkudata(L, 1, PAGE_MT);
  if (!p->live) luaL_error(L, "read_file's page used after page:close()");
  return p;
}

/* The page's buffer (its File pushed, to keep it while the job runs). */
static const bw_buf *page_buf(lua_State *L) {
  lua_getiuservalue(L, 1, 1);
  return bw_lua_file_buf(L, lua_gettop(L));
}

/* A write that failed (the file cut under its mapping: SIGBUS, EIO)
 * raises {code =, message =}: the result was told already, so the edge
 * that prints it answers the call with that error instead
 * (printer.guard). */
static int page_raise(lua_State *L, int rc) {
  const char *d = bw_detail();
  lua_createtable(L, 0, 2);
  lua_pushstring(L, bw_code_name(rc));
  lua_setfield(L, -2, "code");
  lua_pushstring(L, d ? d : "");
  lua_setfield(L, -2, "message");
  bw_clear_detail();
  return lua_error(L);
}

/* The page written is the page told: a mapped file changed in place
 * between the count and the write could give text that the result's
 * lines, cursor and cut do not describe (a gap or a repeat for an agent
 * paging it); that raises rather than goes out. */
static void page_check(lua_State *L, const page *p, const bw_lines *w) {
  const bw_lines *t = &p->told;
  if (t->first != w->first || t->last != w->last || t->next != w->next ||
      t->next_byte != w->next_byte || t->mid_line != w->mid_line ||
      t->truncated != w->truncated || t->cut_lines != w->cut_lines || t->raw_len != w->raw_len)
    page_raise(L, bw_fail(BW_EAGAIN, "the file changed while read_file wrote its page; read it again"));
}

/* page:text() -> the lines, a string fragment, written once */
static int page_text(lua_State *L) {
  if (lua_getiuservalue(L, 1, 2) != LUA_TNIL) return 1;
  lua_pop(L, 1);
  page *p = check_page(L);
  page_job j = {.b = page_buf(L), .p = p, .mode = 1};
  bw_json_frag *f = bw_json_new_fragment(L); /* frees the text if we fail */
  int rc = bw_lua_file_run(j.b, page_run, &j);
  f->buf = j.lines.out, f->len = j.lines.out_len, f->raw_len = j.lines.raw_len;
  if (rc) return page_raise(L, rc);
  page_check(L, p, &j.lines); /* the fragment frees the text if it raises */
  lua_pushvalue(L, -1);
  lua_setiuservalue(L, 1, 2);
  return 1;
}

/* page:tables() -> the lines, a Lua string */
static int page_tables(lua_State *L) {
  page *p = check_page(L);
  page_job j = {.b = page_buf(L), .p = p, .mode = 0};
  char **box = bw_lua_new_box(L);
  int rc = bw_lua_file_run(j.b, page_run, &j);
  *box = j.lines.out;
  if (rc) return page_raise(L, rc);
  page_check(L, p, &j.lines); /* the box frees the text if it raises */
  bw_lua_push_boxed(L, box, j.lines.out_len);
  return 1;
}

/* page:close(): the File closed now (its mapping unmapped), not when Lua
 * collects the page */
static int page_close(lua_State *L) {
  page *p = luaL_checkudata(L, 1, PAGE_MT);
  if (!p->live) return 0;
  p->live = 0;
  lua_getiuservalue(L, 1, 1);
  bw_lua_file_close(L, lua_gettop(L));
  return 0;
}

static int page_len(lua_State *L) {
  lua_pushinteger(L, (lua_Integer)((page *)luaL_checkudata(L, 1, PAGE_MT))->told.raw_len);
  return 1;
}

static const luaL_Reg page_methods[] = {
    {"text", page_text}, {"json", page_text}, {"tables", page_tables}, {"close", page_close},
    {NULL, NULL}};

static void page_class(lua_State *L) {
  if (!luaL_newmetatable(L, PAGE_MT)) return;
  luaL_newlib(L, page_methods);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, page_len);
  lua_setfield(L, -2, "__len");
  lua_pushboolean(L, 1); /* what printer.lua knows a held result by */
  lua_setfield(L, -2, "__held");
}

/* f:page(first, limit, max_line, max_bytes [, _ [, at]]) -> page, info:
 * the page counted; the page keeps f (closed with it) */
static int file_page(lua_State *L) {
  page pg;
  memset(&pg, 0, sizeof pg);
  const bw_buf *b = bw_lua_file_buf(L, 1);
  bw_lua_page_args(L, &pg.first, &pg.limit, &pg.max_line, &pg.max_bytes, &pg.at);
  page_job j = {.b = b, .p = &pg, .mode = 2};
  int rc = bw_lua_file_run(b, page_run, &j); /* writes nothing: no buffer to free */
  if (rc) return bw_lua_fail(L, rc);
  pg.told = j.lines, pg.live = 1;
  page *p = lua_newuserdatauv(L, sizeof *p, 2);
  *p = pg;
  page_class(L);
  lua_setmetatable(L, -2);
  lua_pushvalue(L, 1);
  lua_setiuservalue(L, -2, 1);
  bw_lua_push_lines_info(L, &j.lines);
  return 2;
}

static const luaL_Reg file_methods[] = {{"page", file_page}, {NULL, NULL}};

void bw_page_register(lua_State *L) { bw_lua_file_methods(L, file_methods); }
