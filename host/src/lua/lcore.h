/*
 * lcore.h - entry point of the burrow.core Lua module (lmodule.c) and
 * what the binding files share: lcore.c's helpers and module table, the
 * classes (lhandle.c, lroots.c, lfile.c).
 */
#ifndef BURROW_LCORE_H
#define BURROW_LCORE_H

#include <lauxlib.h>
#include <lua.h>

#include "burrow.h"
#include "core.h"

/* The module (lmodule.c): core.so's opener; besides it core.so exports only
 * the BW_SHARED functions server.so and host.so call (the build hides the
 * rest). */
__attribute__((visibility("default"))) int luaopen_burrow_core(lua_State *L);

/* The module table with lcore.c's functions pushed (lmodule.c then
 * makes the classes, and adds the other binding files' parts to it). */
void bw_core_open(lua_State *L);
/* The classes, in this order (each adds methods to the one before it):
 * burrow.Handle (lhandle.c); burrow.Roots and core.roots (lroots.c);
 * burrow.File and roots:read (lfile.c). Each on the module table on top. */
void bw_handle_register(lua_State *L);
void bw_roots_register(lua_State *L);
void bw_file_register(lua_State *L);
/* A class's metatable name with methods m (its __index, with room for
 * about `more` that other files add) and gc as __gc and __close; methods
 * added to a class made before (lcore.c). */
void bw_lua_new_class(lua_State *L, const char *name, const luaL_Reg *m, lua_CFunction gc,
                      int more);
void bw_lua_add_methods(lua_State *L, const char *mt, const luaL_Reg *m);
/* "file", "dir", "symlink" or "other" (lcore.c). */
const char *bw_lua_type_name(mode_t m);
/* What lroots.c asks of a Handle (lhandle.c), having checked the Roots
 * at roots_arg (its roots r, n of them): roots:handle's new Handle from
 * root at (pushes it and its info, or nil, detail, CODE); a Handle lent
 * as view (bw_lua_target); a Handle's resolution (bw_lua_handle). */
int bw_lua_handle_open(lua_State *L, int roots_arg, const bw_root *r, int n, int at,
                       const char *rel, int how);
const bw_root *bw_lua_handle_view(lua_State *L, int roots_arg, int arg, const bw_root *r, int n,
                                  int view, const char **rel);
const bw_handle *bw_lua_handle_check(lua_State *L, int roots_arg, int arg);

/* For the other binding files (one per concern, each adding its functions
 * in luaopen_burrow_core): */

/* The root roots[index] of the Roots object at roots_arg; raises on misuse. */
const bw_root *bw_lua_root(lua_State *L, int roots_arg, int index_arg);
/* A relative path argument as roots:map returned it; raises on misuse. */
const char *bw_lua_rel(lua_State *L, int arg);
/* The root and path a core function acts on, from arguments arg, arg+1:
 * a root index and a relative path (roots:map), or a Handle
 * (roots:handle; arg+1 is then ignored) lent as view BW_VIEW_READ or
 * BW_VIEW_WRITE. Raises on misuse; valid while arg stays on the stack. */
const bw_root *bw_lua_target(lua_State *L, int roots_arg, int arg, int view,
                             const char **rel);
/* The other roots of the Roots at roots_arg, by identity, for a walk of
 * r that may meet their directories (bw_nest; root: the Lua index). */
void bw_lua_nest(lua_State *L, int roots_arg, const bw_root *r, bw_nest *out);
/* Push where a walk met the nest's roots ({{path =, root =}...}, paths
 * below the walk's start) and clear it. */
void bw_lua_push_nested(lua_State *L, bw_nest *nest);
/* The resolved object of the Handle at arg, which must belong to the Roots
 * at roots_arg; raises on misuse. Valid while arg stays on the stack. */
const bw_handle *bw_lua_handle(lua_State *L, int roots_arg, int arg);
/* Push nil, detail, CODE for a failed core call; returns 3. */
int bw_lua_fail(lua_State *L, int code);
/* Push a stat as burrow's tables give it (type, size, mtime, mode, ...). */
void bw_lua_push_stat(lua_State *L, const struct stat *st);
/* A time as results give it: UTC, "2026-12-04T23:59:00Z". */
void bw_lua_push_time(lua_State *L, const struct timespec *t);
/* A box for a malloc'd buffer a core call fills (freed by __gc if Lua
 * raises first); then its content as a string in its place. */
char **bw_lua_new_box(lua_State *L);
void bw_lua_push_boxed(lua_State *L, char **box, size_t len);
/* lload.c: a Lua file loaded with one open (pushes the function or the
 * stock message; LUA_ERRFILE when it cannot be opened or read), require's searcher built on it (upvalue: the package table), and
 * core.loadfile's registration. */
int bw_lua_loadfile(lua_State *L, const char *file, const char *mode);
int bw_lua_search(lua_State *L);
/* package.preload[name] = open, unless something is there already: how a
 * layer above the binding offers its own module to a state (burrow.server,
 * burrow.host), the binding knowing nothing of it. */
BW_SHARED void bw_lua_preload_module(lua_State *L, const char *name, lua_CFunction open);
/* lmodule.c: a new state's require set up as burrow's (after
 * luaL_openlibs): burrow.core and LPeg preloaded, Lua files found by
 * bw_lua_search (one open each; the binary's built-in files). package.path
 * is the caller's. */
BW_SHARED void bw_lua_preload(lua_State *L);
/* LPeg, where it is linked in, as package.preload.lpeg unless the state
 * has one (loaded or preloaded). */
void bw_lua_preload_lpeg(lua_State *L);
void bw_load_register(lua_State *L);
/* Stages made and not yet freed or collected (lstage.c) */
size_t bw_lua_stages_live(void);
/* core.builtin, core.builtin_list, core.builtin_dir (lbuiltin.c) */
void bw_lua_builtin_register(lua_State *L);
/* Add methods to the Roots class (call from luaopen_burrow_core). */
void bw_lua_roots_methods(lua_State *L, const luaL_Reg *m);
/* The same for the File class (roots:read's), and what a File method
 * needs: its bytes (raises when closed), fn(ud) run over them (under the
 * SIGBUS guard when mapped), the file closed at its last use, f:lines's
 * info table {first, last, next, truncated, cut_lines} pushed. */
void bw_lua_file_methods(lua_State *L, const luaL_Reg *m);
/* Push the Roots (File) class's method table: lmodule.c hangs the
 * deferred groups' loader on it. */
void bw_lua_roots_push_methods(lua_State *L);
void bw_lua_file_push_methods(lua_State *L);
/* The arguments of a File's page readers (f:lines, f:page,
 * f:lines_table): first, limit, max_line, max_bytes [, last_use] at 2..6
 * of the File at 1, whose head is prefaulted for that page; last_use. */
int bw_lua_page_args(lua_State *L, size_t *first, size_t *limit, size_t *max_line, size_t *max_bytes,
                     size_t *at);
const bw_buf *bw_lua_file_buf(lua_State *L, int arg);
int bw_lua_file_run(const bw_buf *b, int (*fn)(void *), void *ud);
/* Before numbering lines from first: the head's pages at once (lfile.c). */
void bw_lua_file_prefault_head(const bw_buf *b, size_t first, size_t limit,
                               size_t max_bytes);
void bw_lua_file_close(lua_State *L, int arg);
void bw_lua_push_lines_info(lua_State *L, const bw_lines *lines);

/* core.lines_table and the File method f:lines_table (llines.c) */
void bw_lines_register(lua_State *L);
/* the File method f:page: read_file's page held until it leaves (lpage.c) */
void bw_page_register(lua_State *L);

/* core.sandbox (lsandbox.c) */
void bw_sandbox_register(lua_State *L);

/* core.undo_store, core.undo_find (lundo.c) */
void bw_undo_register(lua_State *L);

/* core.state_open, core.state (lstate.c) */
void bw_state_register(lua_State *L);
/* The store a state-store object at idx of L holds (NULL: not one, or
 * closed), and the table {add, once, get, cas, del} a policy's sandbox S
 * gets on store s (a reference of its own; wrap, if given, wraps each
 * function on top of S's stack: the sandbox charges its calls). */
typedef struct bw_state bw_state;
BW_SHARED bw_state *bw_lstate_at(lua_State *L, int idx);
void bw_lstate_push_api(lua_State *S, bw_state *s, void (*wrap)(lua_State *S));
/* How many of the state calls made in S (a policy sandbox's, through the
 * API above) the store did not answer (STORE_UNAVAILABLE), ever. */
lua_Integer bw_lstate_outages(lua_State *S);

/* core.watcher (lwatch.c) */
void bw_watch_register(lua_State *L);

#endif
