/*
 * lcore.c - the burrow.core module table and what every binding file
 * shares: a failure as nil, detail, CODE (detail may be ""): the Lua side
 * words the message with the path as the agent wrote it; misuse raises),
 * boxes for malloc'd results, a class's metatable, a stat as a table; and
 * the module's own functions (hashes, base64, random ids, the clock,
 * sleep, trim, the resolver's name). The classes are lhandle.c (Handle),
 * lroots.c (Roots) and lfile.c (File), each above this file and above the
 * one before it; lmodule.c registers them in that order.
 */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock.h"
#include "core.h"
#include "lcore.h"

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

int bw_lua_fail(lua_State *L, int code) { return fail(L, code); }

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

/* ---- classes ---- */

/* A class's method table is made with room for the methods other binding
 * files add to it (more), and the core table for every file's fields: a
 * table grown one power of two at a time rehashes each time, a part of
 * every start (docs/benchmarks.md, Start-up). Only sizes: a table still
 * grows past them. */
enum { CORE_FIELDS = 48 };

void bw_lua_new_class(lua_State *L, const char *name, const luaL_Reg *m,
                      lua_CFunction gc, int more) {
  luaL_newmetatable(L, name);
  int n = 0;
  while (m[n].name) n++;
  lua_createtable(L, 0, n + more);
  luaL_setfuncs(L, m, 0);
  lua_setfield(L, -2, "__index");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, gc);
  lua_setfield(L, -2, "__close");
  lua_pop(L, 1);
}


void bw_lua_add_methods(lua_State *L, const char *mt, const luaL_Reg *m) {
  luaL_getmetatable(L, mt);
  lua_getfield(L, -1, "__index");
  luaL_setfuncs(L, m, 0);
  lua_pop(L, 2);
}


/* ---- stat tables (roots:stat, roots:handle, the walks) ---- */

const char *bw_lua_type_name(mode_t m) {
  if (S_ISREG(m)) return "file";
  if (S_ISDIR(m)) return "dir";
  if (S_ISLNK(m)) return "symlink";
  return "other";
}

void bw_lua_push_time(lua_State *L, const struct timespec *t) {
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
  lua_pushstring(L, bw_lua_type_name(st->st_mode));
  lua_setfield(L, -2, "type");
  lua_pushinteger(L, (lua_Integer)st->st_size);
  lua_setfield(L, -2, "size");
  bw_lua_push_time(L, &st->st_mtim);
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

static const luaL_Reg funcs[] = {{"sha256", l_sha256},
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

void bw_core_open(lua_State *L) {
  lua_createtable(L, 0, CORE_FIELDS);
  luaL_setfuncs(L, funcs, 0);
}
