/*
 * ledit.c - the edit engine and the other mutations as methods of
 * burrow.core's Roots: edit, insert, append, mkdir, remove, move, copy,
 * and content (a file's bytes and hash, for undo). Expected failures
 * return nil, detail, CODE and, where there is more to say, a fourth
 * value: the diagnosis of a failed edit or the current hash.
 */
#include <lauxlib.h>
#include <lua.h>
#include <stdlib.h>
#include <string.h>

#include "edit.h"
#include "lcore.h"
#include "ledit.h"
#include "txn.h"

size_t bw_lua_opt_size(lua_State *L, int t, const char *k, size_t dflt) {
  if (!lua_istable(L, t)) return dflt;
  lua_getfield(L, t, k);
  lua_Integer v = luaL_optinteger(L, -1, (lua_Integer)dflt);
  lua_pop(L, 1);
  return v < 0 ? 0 : (size_t)v;
}

int bw_lua_opt_bool(lua_State *L, int t, const char *k) {
  if (!lua_istable(L, t)) return 0;
  lua_getfield(L, t, k);
  int b = lua_toboolean(L, -1);
  lua_pop(L, 1);
  return b;
}

/* A string option; it stays alive in the options table. */
static const char *opt_str(lua_State *L, int t, const char *k) {
  if (!lua_istable(L, t)) return NULL;
  lua_getfield(L, t, k);
  const char *s = lua_tostring(L, -1);
  lua_pop(L, 1);
  return s;
}

static void set_int(lua_State *L, const char *k, size_t v) {
  lua_pushinteger(L, (lua_Integer)v);
  lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v) {
  lua_pushstring(L, v);
  lua_setfield(L, -2, k);
}

static void set_bool(lua_State *L, const char *k, int v) {
  lua_pushboolean(L, v);
  lua_setfield(L, -2, k);
}

/* nil, detail, CODE, extra: the extra value is on the top of the stack. */
static int fail_with(lua_State *L, int code) {
  int n = bw_lua_fail(L, code);
  lua_rotate(L, -(n + 1), -1); /* move the extra above the triple */
  return n + 1;
}

static void push_diag(lua_State *L, const bw_edit_diag *d, int code) {
  lua_createtable(L, 0, 12);
  set_int(L, "edit", d->edit + 1);
  if (code == BW_OVERLAPPING_EDITS) {
    set_int(L, "other", d->other + 1);
    set_int(L, "line", d->near_line);
  }
  if (code == BW_AMBIGUOUS_TEXT) {
    set_str(L, "level", bw_level_name(d->level));
    set_int(L, "matches", d->matches);
    lua_createtable(L, (int)d->nlines, 0);
    for (size_t i = 0; i < d->nlines; i++) {
      lua_pushinteger(L, (lua_Integer)d->lines[i]);
      lua_rawseti(L, -2, (lua_Integer)i + 1);
    }
    lua_setfield(L, -2, "lines");
    if (d->found_line) {
      set_int(L, "found_line", d->found_line);
      set_str(L, "found_level", bw_level_name(d->found_level));
    }
    if (d->reindent_line) {
      set_int(L, "reindent_line", d->reindent_line);
      set_str(L, "new_line_text", d->near_text);
      if (d->after_indent) {
        lua_pushboolean(L, 1);
        lua_setfield(L, -2, "after_indent");
        set_str(L, "have_text", d->have_text);
      }
      if (d->diverge_line) {
        set_int(L, "diverge_line", d->diverge_line);
        set_str(L, "want_text", d->want_text);
        set_str(L, "have_text", d->have_text);
      }
    }
  }
  if (code == BW_NOT_FOUND_TEXT && d->near_line) {
    set_int(L, "near_line", d->near_line);
    set_int(L, "near_percent", (size_t)d->near_percent);
    set_str(L, "near_text", d->near_text);
    if (d->near_level >= 0) set_str(L, "near_level", bw_level_name(d->near_level));
  }
  if (code == BW_NOT_FOUND_TEXT && d->diverge_line) {
    set_int(L, "diverge_line", d->diverge_line);
    set_str(L, "want_text", d->want_text);
    set_str(L, "have_text", d->have_text);
    if (d->differs) set_str(L, "differs", d->differs);
  }
}

/* The edit options shared by edit and insert: opts at index t. */
/* opts.commit = function(bytes) -> true | nil, message, code: asked by the
 * core between computing an edit and writing it (the size policies see is
 * the size the core writes). Called on the Lua thread, under pcall. */
typedef struct commit_ud {
  lua_State *L;
  int fn;       /* stack index of the function */
  int msg;      /* stack index of the refusal's message once refused, or 0 */
  int code;
} commit_ud;

static int commit_call(void *ud, size_t bytes) {
  commit_ud *c = ud;
  lua_State *L = c->L;
  lua_pushvalue(L, c->fn);
  lua_pushinteger(L, (lua_Integer)bytes);
  if (lua_pcall(L, 1, 3, 0) != LUA_OK) {
    c->code = BW_EIO;
    c->msg = lua_gettop(L);
    lua_pushnil(L);
    lua_pushnil(L);
    return BW_EIO;
  }
  if (lua_toboolean(L, -3)) {
    lua_pop(L, 3);
    return BW_OK;
  }
  const char *code = lua_tostring(L, -1);
  c->code = BW_POLICY_DENIED;
  for (int k = 1; code && k < BW_CODE_COUNT; k++)
    if (!strcmp(code, bw_code_name(k))) c->code = k;
  c->msg = lua_gettop(L) - 1;
  return c->code;
}

/* nil, message, CODE of a refused commit */
static int commit_refused(lua_State *L, const commit_ud *c) {
  lua_pushnil(L);
  lua_pushvalue(L, c->msg);
  lua_pushstring(L, bw_code_name(c->code));
  return 3;
}

static bw_edit_file_opts file_opts(lua_State *L, int t, bw_stop *stop) {
  bw_edit_file_opts o = {0};
  size_t ms = bw_lua_opt_size(L, t, "max_ms", 0);
  stop->cancel = bw_cancel_flag(); /* the call's own, where it has one */
  stop->until_ms = ms ? bw_now_ms() + (int64_t)ms : 0;
  o.e.stop = stop;
  const char *m = opt_str(L, t, "match");
  o.e.loose = m && !strcmp(m, "loose");
  o.e.context = bw_lua_opt_size(L, t, "context", 3);
  o.e.max_diff = bw_lua_opt_size(L, t, "max_diff", 64 * 1024);
  o.expected_hash = opt_str(L, t, "expected_hash");
  o.dry_run = bw_lua_opt_bool(L, t, "dry_run");
  o.max_bytes = bw_lua_opt_size(L, t, "max_bytes", 0);
  o.keep_original = bw_lua_opt_size(L, t, "keep_original", 0);
  o.charset = opt_str(L, t, "charset");
  o.charsets = opt_str(L, t, "charsets");
  return o;
}

static int edit_result(lua_State *L, int rc, bw_edit_file_res *res,
                       const bw_edit *e, size_t n, int text) {
  if (rc == BW_HASH_MISMATCH) {
    lua_pushstring(L, res->current_hash);
    return fail_with(L, rc);
  }
  if (rc && res->charset_failed) return bw_lua_fail(L, rc);
  if (rc == BW_NOT_FOUND_TEXT || rc == BW_AMBIGUOUS_TEXT ||
      rc == BW_OVERLAPPING_EDITS || (rc == BW_INVALID_ARGUMENT && e)) {
    push_diag(L, &res->out.diag, rc);
    return fail_with(L, rc);
  }
  if (rc == BW_INVALID_ARGUMENT) { /* insert: say how many lines there are */
    lua_createtable(L, 0, 1);
    set_int(L, "total_lines", res->out.total_lines);
    return fail_with(L, rc);
  }
  if (rc) return bw_lua_fail(L, rc);
  lua_createtable(L, 0, 14);
  set_str(L, "content_hash", res->hash);
  set_str(L, "previous_content_hash", res->old_hash);
  set_int(L, "size", res->out.len);
  set_int(L, "old_size", res->old_size);
  set_int(L, "total_lines", res->out.total_lines);
  set_int(L, "first_line", res->out.first_line);
  set_int(L, "added", res->out.added);
  set_int(L, "removed", res->out.removed);
  lua_pushlstring(L, res->out.diff ? res->out.diff : "", res->out.diff_len);
  lua_setfield(L, -2, "diff");
  set_bool(L, "diff_truncated", res->out.diff_truncated);
  set_str(L, "charset", res->charset);
  set_int(L, "placed", res->out.placed);
  if (text) { /* the new content itself (a dry run's, for edit_files) */
    lua_pushlstring(L, res->out.text ? res->out.text : "", res->out.len);
    lua_setfield(L, -2, "text");
  }
  if (res->original) {
    lua_pushlstring(L, res->original, res->original_len);
    lua_setfield(L, -2, "original");
  }
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 3);
    set_int(L, "count", e[i].count);
    set_str(L, "level", bw_level_name(e[i].level));
    set_int(L, "line", e[i].line);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  lua_setfield(L, -2, "edits");
  return 1;
}

static const char *field_str(lua_State *L, int t, const char *k, size_t *len) {
  lua_getfield(L, t, k);
  const char *s = lua_tolstring(L, -1, len);
  if (!s) luaL_error(L, "edit: field '%s' must be a string", k);
  lua_pop(L, 1); /* the string stays alive in the edit's table */
  return s;
}

/* roots:edit(i, rel, {{old_text=, new_text=, replace_all=}...}, opts) */
static int roots_edit(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  luaL_checktype(L, 4, LUA_TTABLE);
  size_t n = (size_t)luaL_len(L, 4);
  bw_edit *e = lua_newuserdatauv(L, (n ? n : 1) * sizeof *e, 0); /* freed by the GC */
  for (size_t i = 0; i < n; i++) {
    lua_geti(L, 4, (lua_Integer)i + 1);
    luaL_checktype(L, -1, LUA_TTABLE);
    int t = lua_gettop(L);
    memset(&e[i], 0, sizeof e[i]);
    e[i].old_text = field_str(L, t, "old_text", &e[i].old_len);
    e[i].new_text = field_str(L, t, "new_text", &e[i].new_len);
    e[i].replace_all = bw_lua_opt_bool(L, t, "replace_all");
    lua_pop(L, 1);
  }
  bw_stop stop;
  bw_edit_file_opts o = file_opts(L, 5, &stop);
  commit_ud c = {L, 0, 0, 0};
  if (lua_istable(L, 5)) {
    lua_getfield(L, 5, "commit");
    if (lua_isfunction(L, -1)) {
      c.fn = lua_gettop(L);
      o.commit = commit_call;
      o.commit_ud = &c;
    }
  }
  bw_edit_file_res res;
  int rc = bw_edit_file(r, rel, e, n, &o, &res);
  if (rc && c.msg) {
    bw_edit_file_res_free(&res);
    return commit_refused(L, &c);
  }
  int ret = edit_result(L, rc, &res, e, n, bw_lua_opt_bool(L, 5, "text"));
  bw_edit_file_res_free(&res);
  return ret;
}

/* roots:insert(i, rel, line, text, opts) */
static int roots_insert(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  lua_Integer line = luaL_checkinteger(L, 4);
  size_t tlen;
  const char *text = luaL_checklstring(L, 5, &tlen);
  bw_stop stop;
  bw_edit_file_opts o = file_opts(L, 6, &stop);
  bw_edit_file_res res;
  int rc = bw_insert_file(r, rel, line < 0 ? 0 : (size_t)line, text, tlen, &o, &res);
  int ret = edit_result(L, rc, &res, NULL, 0, 0);
  bw_edit_file_res_free(&res);
  return ret;
}

/* roots:append(i, rel, data, {create_dirs=, max_bytes=}) */
static int roots_append(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  size_t len;
  const char *data = luaL_checklstring(L, 4, &len);
  bw_append_res res;
  int rc = bw_append(r, rel, data, len, bw_lua_opt_bool(L, 5, "create_dirs"),
                     bw_lua_opt_size(L, 5, "max_bytes", 0), &res);
  if (rc) return bw_lua_fail(L, rc);
  lua_createtable(L, 0, 4);
  set_bool(L, "created", res.created);
  set_int(L, "old_size", res.old_size);
  set_int(L, "size", res.size);
  set_str(L, "content_hash", res.hash);
  return 1;
}

/* roots:mkdir(i, rel, parents) -> {created=} */
static int roots_mkdir(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  int created, rc = bw_mkdir(r, rel, lua_toboolean(L, 4), &created);
  if (rc) return bw_lua_fail(L, rc);
  lua_createtable(L, 0, 1);
  set_bool(L, "created", created);
  return 1;
}

/* A tree operation's stop: the MCP cancel flag, and opts.max_ms (0: no
 * deadline) from now. */
static const bw_stop *stop_opt(lua_State *L, int t, bw_stop *s) {
  size_t ms = bw_lua_opt_size(L, t, "max_ms", 0);
  s->cancel = bw_cancel_flag();
  s->until_ms = ms ? bw_now_ms() + (int64_t)ms : 0;
  return s;
}

/* nil, detail, CODE of a tree operation that stopped part-way: the detail
 * says what it had done, so the agent knows what is left. */
int bw_lua_fail_partial(lua_State *L, int rc, const char *done, size_t files,
                        size_t dirs) {
  const char *d = bw_detail();
  /* nothing done, or all of it done but not made durable: the core's word */
  if ((!files && !dirs) || bw_fail_subject(NULL) == BW_ON_SYNC) return bw_lua_fail(L, rc);
  lua_pushnil(L);
  lua_pushfstring(L, "%s; it stopped after %s %d file(s) or link(s) and %d director%s",
                  d ? d : "stopped", done, (int)files, (int)dirs, dirs == 1 ? "y" : "ies");
  lua_pushstring(L, bw_code_name(rc));
  bw_clear_detail();
  return 3;
}

/* roots:remove(i, rel, {recursive=, expected_hash=, max_ms=}) -> {files=, dirs=} */
static int roots_remove(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  bw_remove_res res;
  bw_stop stop;
  int rc = bw_remove(r, rel, bw_lua_opt_bool(L, 4, "recursive"),
                     opt_str(L, 4, "expected_hash"), stop_opt(L, 4, &stop), &res);
  if (rc) return bw_lua_fail_partial(L, rc, "removing", res.files, res.dirs);
  lua_createtable(L, 0, 2);
  set_int(L, "files", res.files);
  set_int(L, "dirs", res.dirs);
  return 1;
}

/* roots:move(i, rel, j, rel2, overwrite) -> true */
static int roots_move(lua_State *L) {
  const char *src, *dst;
  const bw_root *rs = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &src);
  const bw_root *rd = bw_lua_target(L, 1, 4, BW_VIEW_WRITE, &dst);
  int rc = bw_move(rs, src, rd, dst, lua_toboolean(L, 6));
  if (rc) return bw_lua_fail(L, rc);
  lua_pushboolean(L, 1);
  return 1;
}

/* roots:copy(i, rel, j, rel2, {overwrite=, recursive=, max_bytes=, max_ms=}) */
static int roots_copy(lua_State *L) {
  const char *src, *dst;
  const bw_root *rs = bw_lua_target(L, 1, 2, BW_VIEW_READ, &src);
  const bw_root *rd = bw_lua_target(L, 1, 4, BW_VIEW_WRITE, &dst);
  bw_stop stop;
  bw_copy_opts o = {bw_lua_opt_bool(L, 6, "overwrite"), bw_lua_opt_bool(L, 6, "recursive"),
                    bw_lua_opt_size(L, 6, "max_bytes", 0), stop_opt(L, 6, &stop)};
  bw_copy_res res;
  int rc = bw_copy(rs, src, rd, dst, &o, &res);
  if (rc) return bw_lua_fail_partial(L, rc, "copying", res.files + res.links, res.dirs);
  lua_createtable(L, 0, 6);
  set_int(L, "files", res.files);
  set_int(L, "dirs", res.dirs);
  set_int(L, "links", res.links);
  set_int(L, "skipped", res.skipped);
  set_int(L, "bytes", res.bytes);
  if (res.hash[0]) set_str(L, "content_hash", res.hash);
  return 1;
}

/* roots:content(i, rel, max_bytes) -> bytes, content_hash */
static int roots_content(lua_State *L) {
  const char *rel;
  const bw_root *r = bw_lua_target(L, 1, 2, BW_VIEW_WRITE, &rel);
  lua_Integer max = luaL_checkinteger(L, 4);
  char *data, hash[BW_HASH_STR];
  size_t len;
  int rc = bw_read_copy(r, rel, (size_t)(max > 0 ? max : 0), &data, &len);
  if (rc) return bw_lua_fail(L, rc);
  rc = bw_sha256(data, len, hash);
  if (!rc) lua_pushlstring(L, data, len);
  free(data);
  if (rc) return bw_lua_fail(L, rc);
  lua_pushstring(L, hash);
  return 2;
}

/* roots:commit_files({{target, rel, data = bytes | nil (remove),
 * expected = "sha256:..." | "absent", create_dirs =}...}, {max_compare =,
 * max_ms =}) -> {{content_hash =, created =}...}, or nil, detail, CODE,
 * {index = the file it is about (1-based; none: the change as a whole),
 * current = its hash on HASH_MISMATCH, committed = true when it failed
 * past the commit point (it stands, finished now or at the next open)}.
 * All the files or none (txn.c).
 * target: a handle (its write view) or a root index and the rel after it. */
static int roots_commit_files(lua_State *L) {
  luaL_checktype(L, 2, LUA_TTABLE);
  size_t n = (size_t)luaL_len(L, 2);
  if (n == 0) return luaL_argerror(L, 2, "no files");
  bw_txn_file *f = lua_newuserdatauv(L, n * sizeof *f, 0); /* freed by the GC */
  memset(f, 0, n * sizeof *f);
  for (size_t i = 0; i < n; i++) {
    lua_geti(L, 2, (lua_Integer)i + 1);
    luaL_checktype(L, -1, LUA_TTABLE);
    int t = lua_gettop(L);
    lua_geti(L, t, 1);
    lua_geti(L, t, 2);
    /* the view lives in the handle, the strings in the item: all held by the list */
    f[i].r = bw_lua_target(L, 1, t + 1, BW_VIEW_WRITE, &f[i].rel);
    lua_pop(L, 2);
    lua_getfield(L, t, "data");
    f[i].data = lua_tolstring(L, -1, &f[i].len);
    lua_pop(L, 1);
    f[i].expected = opt_str(L, t, "expected");
    f[i].create_dirs = bw_lua_opt_bool(L, t, "create_dirs");
    lua_pop(L, 1);
  }
  bw_stop stop;
  bw_txn_opts o = {stop_opt(L, 3, &stop), bw_lua_opt_size(L, 3, "max_compare", 0), 0};
  size_t failed;
  int committed;
  bw_clear_detail();
  int rc = bw_txn_commit(f, n, &o, &failed, &committed);
  if (rc) {
    lua_createtable(L, 0, 3);
    if (failed < n) set_int(L, "index", failed + 1);
    if (committed) set_bool(L, "committed", 1);
    if (rc == BW_HASH_MISMATCH && failed < n) set_str(L, "current", f[failed].current);
    return fail_with(L, rc);
  }
  lua_createtable(L, (int)n, 0);
  for (size_t i = 0; i < n; i++) {
    lua_createtable(L, 0, 2);
    set_str(L, "content_hash", f[i].hash);
    set_bool(L, "created", f[i].created);
    lua_rawseti(L, -2, (lua_Integer)i + 1);
  }
  return 1;
}

static const luaL_Reg methods[] = {
    {"commit_files", roots_commit_files},
    {"edit", roots_edit},     {"insert", roots_insert}, {"append", roots_append},
    {"mkdir", roots_mkdir},   {"remove", roots_remove}, {"move", roots_move},
    {"copy", roots_copy},     {"content", roots_content}, {NULL, NULL}};

void bw_edit_register(lua_State *L) { bw_lua_roots_methods(L, methods); }
