/*
 * llines.c - a page of a text's lines as a Lua table, for read_file when a
 * pack calls it: f:lines_table on a File (the methods lfile.c's class
 * takes from bw_lua_file_methods) and core.lines_table on a string (a
 * decoded text). The page is text.c's bw_page_lines: the lines f:lines
 * and core.number_lines would number, cut and capped the same, without
 * their numbers, so a pack writes its own rows and parses none.
 */
#include <lauxlib.h>
#include <limits.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "lcore.h"

/* Boxes for the page's two buffers (lcore.c's: freed by __gc if Lua raises
 * first), made before the buffers exist; at top-1 (text) and top (ends). */
static void new_boxes(lua_State *L) {
  bw_lua_new_box(L);
  bw_lua_new_box(L);
}

static void fill_boxes(lua_State *L, bw_lines *r) {
  *(char **)lua_touserdata(L, -2) = r->out;
  *(char **)lua_touserdata(L, -1) = (char *)r->ends;
}

/* Push the lines of a page filled into the boxes at top-1, top, then free
 * the buffers (the boxes stay, empty, under the table). */
static void push_table(lua_State *L, const bw_lines *r) {
  char **text = lua_touserdata(L, -2), **ends = lua_touserdata(L, -1);
  lua_createtable(L, r->rows < INT_MAX ? (int)r->rows : 0, 0);
  for (size_t k = 0, from = 0; k < r->rows; k++) {
    size_t to = ((size_t *)*ends)[k];
    lua_pushlstring(L, *text + from, to - from);
    lua_rawseti(L, -2, (lua_Integer)k + 1);
    from = to;
  }
  free(*text);
  *text = NULL;
  free(*ends);
  *ends = NULL;
}

typedef struct page_job {
  const bw_buf *b;
  size_t first, limit, max_line, max_bytes;
  bw_lines lines;
} page_job;

static int page_run(void *arg) {
  page_job *j = arg;
  return bw_page_lines(j->b->data, j->b->len, j->first, j->limit, j->max_line,
                       j->max_bytes, &j->lines);
}

/* f:lines_table(first, limit, max_line, max_bytes [, last_use]) -> lines,
 * info: f:lines's page (its info the same) as a table of strings, line
 * info.first first. With last_use the file is closed before the table is
 * made. */
static int file_lines_table(lua_State *L) {
  page_job j;
  memset(&j, 0, sizeof j);
  j.b = bw_lua_file_buf(L, 1);
  size_t at;
  int last_use = bw_lua_page_args(L, &j.first, &j.limit, &j.max_line, &j.max_bytes, &at);
  luaL_argcheck(L, at == BW_LINES_BY_LINE, 7, "a pack's page is by line");
  new_boxes(L);
  int rc = bw_lua_file_run(j.b, page_run, &j);
  fill_boxes(L, &j.lines);
  if (last_use) bw_lua_file_close(L, 1);
  if (rc) return bw_lua_fail(L, rc);
  push_table(L, &j.lines);
  bw_lua_push_lines_info(L, &j.lines);
  return 2;
}

/* core.lines_table(text, first, limit, max_line, max_bytes) -> lines, info:
 * core.number_lines's page as a table of strings; info as f:lines_table's
 * plus total (the text's lines) and newline (lf|crlf|mixed|none). */
static int l_lines_table(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 1, &n);
  bw_lines r;
  memset(&r, 0, sizeof r);
  new_boxes(L);
  int rc = bw_page_lines(s, n, (size_t)luaL_checkinteger(L, 2), (size_t)luaL_checkinteger(L, 3),
                         (size_t)luaL_checkinteger(L, 4), (size_t)luaL_checkinteger(L, 5), &r);
  fill_boxes(L, &r);
  if (rc) return bw_lua_fail(L, rc);
  push_table(L, &r);
  bw_lua_push_lines_info(L, &r);
  bw_text_info in;
  bw_text_scan(s, n, &in);
  lua_pushinteger(L, (lua_Integer)in.lines);
  lua_setfield(L, -2, "total");
  lua_pushstring(L, bw_newline_kind(&in));
  lua_setfield(L, -2, "newline");
  lua_pushinteger(L, (lua_Integer)n);
  lua_setfield(L, -2, "text_bytes");
  return 2;
}

static const luaL_Reg file_methods[] = {{"lines_table", file_lines_table}, {NULL, NULL}};

static const luaL_Reg funcs[] = {{"lines_table", l_lines_table}, {NULL, NULL}};

void bw_lines_register(lua_State *L) {
  bw_lua_file_methods(L, file_methods);
  luaL_setfuncs(L, funcs, 0);
}
