/*
 * fuzz.h - what the libFuzzer targets of host/fuzz/ share: splitting one
 * input into parts, a check that aborts (libFuzzer saves the input and
 * reports it), and a Lua state with burrow.core preloaded for the targets
 * that go through the binding. Header-only: each target is one binary.
 */
#ifndef BURROW_FUZZ_H
#define BURROW_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A broken invariant: say which and abort, so libFuzzer keeps the input. */
#define FZ_CHECK(cond, ...)                                                 \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "FUZZ CHECK FAILED %s:%d: %s: ", __FILE__, __LINE__,  \
              #cond);                                                       \
      fprintf(stderr, __VA_ARGS__);                                         \
      fprintf(stderr, "\n");                                                \
      abort();                                                              \
    }                                                                       \
  } while (0)

/* One part of an input: bytes and length (not NUL-terminated). */
typedef struct fz_part {
  const char *p;
  size_t n;
} fz_part;

/* Split data at NUL bytes into at most max parts (the last takes the rest,
 * NULs included); returns how many. The seed corpora are written so. */
static inline int fz_split(const uint8_t *data, size_t size, fz_part *out,
                           int max) {
  const char *p = (const char *)data, *end = p + size;
  int n = 0;
  while (n < max - 1) {
    const char *z = memchr(p, '\0', (size_t)(end - p));
    if (!z) break;
    out[n++] = (fz_part){p, (size_t)(z - p)};
    p = z + 1;
  }
  out[n++] = (fz_part){p, (size_t)(end - p)};
  return n;
}

/* A malloc'd NUL-terminated copy (the core's string arguments). */
static inline char *fz_str(fz_part x) {
  char *s = malloc(x.n + 1);
  if (!s) abort();
  memcpy(s, x.p, x.n);
  s[x.n] = '\0';
  return s;
}

/* An in-root path as a walk makes them: names separated by single "/",
 * none empty, "." or "..", and no NUL. */
static inline int fz_walk_path(const char *s, size_t n) {
  if (!n || memchr(s, '\0', n)) return 0;
  for (size_t i = 0, start = 0; i <= n; i++) {
    if (i < n && s[i] != '/') continue;
    size_t l = i - start;
    if (!l || (l == 1 && s[start] == '.') ||
        (l == 2 && s[start] == '.' && s[start + 1] == '.'))
      return 0;
    start = i + 1;
  }
  return 1;
}

#ifdef FUZZ_WITH_LUA
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>

#include "api.h"

/* This checkout's lua/ and host/fuzz/ (the Makefile passes both). */
#ifndef FUZZ_LUA_DIR
#define FUZZ_LUA_DIR "lua"
#endif
#ifndef FUZZ_DIR
#define FUZZ_DIR "host/fuzz"
#endif

/* A state as the CLI makes one: standard libraries, burrow.core
 * preloaded, package.path on this checkout's lua/. */
static inline lua_State *fz_lua(void) {
  setenv("BURROW_LUA_DIR", FUZZ_LUA_DIR, 0);
  lua_State *L = luaL_newstate();
  if (!L) abort();
  bw_lua_prepare(L);
  return L;
}

/* Load host/fuzz/NAME.lua, a driver: a chunk that, called with arg (or
 * nothing), returns the function run on each input. Its registry ref. */
static inline int fz_driver(lua_State *L, const char *name, const char *arg) {
  char file[4096];
  snprintf(file, sizeof file, "%s/%s.lua", FUZZ_DIR, name);
  int rc = luaL_loadfile(L, file);
  if (rc == LUA_OK) {
    if (arg) lua_pushstring(L, arg);
    rc = lua_pcall(L, arg ? 1 : 0, 1, 0);
  }
  if (rc != LUA_OK || !lua_isfunction(L, -1)) {
    fprintf(stderr, "fuzz driver %s: %s\n", file,
            lua_isstring(L, -1) ? lua_tostring(L, -1) : "returns no function");
    abort();
  }
  return luaL_ref(L, LUA_REGISTRYINDEX);
}

static inline int fz_traceback(lua_State *L) {
  luaL_traceback(L, L, lua_tostring(L, 1), 1);
  return 1;
}

/* Call the driver on one input, leaving nres results on the stack; a Lua
 * error is a broken invariant: report it and abort. */
static inline void fz_call(lua_State *L, int ref, const uint8_t *data,
                           size_t size, int nres) {
  lua_pushcfunction(L, fz_traceback);
  lua_rawgeti(L, LUA_REGISTRYINDEX, ref);
  lua_pushlstring(L, (const char *)data, size);
  if (lua_pcall(L, 1, nres, -3) != LUA_OK) {
    fprintf(stderr, "FUZZ CHECK FAILED: %s\n", lua_tostring(L, -1));
    abort();
  }
  lua_remove(L, -nres - 1); /* the traceback function */
}

/* A temp directory with a few files for the targets that open a workspace
 * (removed at exit). Returns its path. */
static char fz_tree_dir[512];

static inline void fz_tree_remove(void) {
  char cmd[640];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", fz_tree_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", fz_tree_dir);
}

static inline const char *fz_tree(void) {
  snprintf(fz_tree_dir, sizeof fz_tree_dir, "%s/burrow-fuzz.XXXXXX",
           getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(fz_tree_dir)) abort();
  char cmd[1536];
  snprintf(cmd, sizeof cmd,
           "cd '%s' && mkdir -p src docs && printf 'one\\ntwo\\nthree\\n' > a.txt && "
           "printf 'int main(void) {\\n  return 0;\\n}\\n' > src/main.c && "
           "printf '# Title\\r\\n\\r\\nText\\r\\n' > docs/crlf.md && "
           "printf 'x = 1\\n' > .env && ln -s a.txt link",
           fz_tree_dir);
  if (system(cmd) != 0) abort();
  atexit(fz_tree_remove);
  return fz_tree_dir;
}
#endif

#endif
