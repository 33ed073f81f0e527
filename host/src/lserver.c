/*
 * lserver.c - stdio plumbing of `burrow mcp`, as burrow.core.stdio().
 *
 * A reader thread splits stdin into lines and queues them, so the Lua loop
 * can run a long tool call while the next messages keep arriving. The
 * reader notices notifications/cancelled for the request in flight at once
 * and raises its cancel flag, which long operations poll. Output goes
 * through one lock so progress notifications and results never interleave.
 * Events (SIGHUP, a dropped line) travel apart from the text, so no byte
 * on stdin can look like one.
 */
#include <errno.h>
#include <lauxlib.h>
#include <lua.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ljson.h"
#include "lserver.h"

#define STDIO_MT "burrow.Stdio"

typedef struct line {
  struct line *next;
  int oversize; /* a line over max_line stood here, dropped */
  size_t len;
  char text[];
} line;

typedef struct stdio_state {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  line *head, *tail;
  int eof;
  int hangup; /* a SIGHUP not yet reported by io:next */
  size_t max_line;
  char current[64]; /* JSON text of the request id in flight, "" if none */
  _Atomic int cancelled;
  pthread_mutex_t out_mu;
} stdio_state;

static stdio_state S = {.mu = PTHREAD_MUTEX_INITIALIZER,
                        .cv = PTHREAD_COND_INITIALIZER,
                        .out_mu = PTHREAD_MUTEX_INITIALIZER};
static int started;

/* The JSON text of "requestId" in a cancel notification, crudely but
 * safely: only compared byte for byte with the id in flight. */
static void note_cancel(const char *s, size_t n) {
  static const char key[] = "\"requestId\"";
  const char *k = memmem(s, n, key, sizeof key - 1);
  if (!k) return;
  const char *p = k + sizeof key - 1, *end = s + n;
  while (p < end && (*p == ' ' || *p == ':' || *p == '\t')) p++;
  const char *q = p;
  if (q < end && *q == '"') {
    for (q++; q < end && *q != '"'; q++)
      if (*q == '\\') q++;
    q++;
  } else {
    while (q < end && (*q == '-' || (*q >= '0' && *q <= '9'))) q++;
  }
  if (q > end || q == p) return;
  pthread_mutex_lock(&S.mu);
  if (S.current[0] && strlen(S.current) == (size_t)(q - p) &&
      !memcmp(S.current, p, (size_t)(q - p)))
    atomic_store(&S.cancelled, 1);
  pthread_mutex_unlock(&S.mu);
}

static void push_line(const char *s, size_t n, int oversize) {
  if (n > 0 && s[n - 1] == '\r') n--;
  if (memmem(s, n, "notifications/cancelled", 23)) note_cancel(s, n);
  line *l = malloc(sizeof *l + n + 1);
  if (!l) return; /* dropped: the client times out rather than we crash */
  l->next = NULL;
  l->oversize = oversize;
  l->len = n;
  memcpy(l->text, s, n);
  l->text[n] = '\0';
  pthread_mutex_lock(&S.mu);
  if (S.tail) S.tail->next = l;
  else S.head = l;
  S.tail = l;
  pthread_cond_signal(&S.cv);
  pthread_mutex_unlock(&S.mu);
}

/* Split stdin into lines. A line longer than max_line is dropped as it
 * streams in (memory stays bounded) and replaced by an oversize entry the
 * Lua loop answers with an error. */
static void *reader(void *arg) {
  (void)arg;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  int oversize = 0;
  while (buf) {
    if (len == cap) {
      char *n = realloc(buf, cap * 2);
      if (!n) break;
      buf = n;
      cap *= 2;
    }
    ssize_t got = read(0, buf + len, cap - len);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    size_t scanned = len;
    len += (size_t)got;
    char *start = buf, *nl;
    while ((nl = memchr(buf + scanned, '\n', len - scanned))) {
      size_t n = (size_t)(nl - start);
      if (oversize || n > S.max_line) push_line("", 0, 1);
      else push_line(start, n, 0);
      oversize = 0;
      start = nl + 1;
      scanned = (size_t)(start - buf);
    }
    size_t rest = len - (size_t)(start - buf);
    if (rest > S.max_line) { /* too long already: keep nothing of it */
      oversize = 1;
      rest = 0;
    }
    memmove(buf, start, rest);
    len = rest;
  }
  if (buf && len > 0 && !oversize) push_line(buf, len, 0);
  free(buf);
  pthread_mutex_lock(&S.mu);
  S.eof = 1;
  pthread_cond_broadcast(&S.cv);
  pthread_mutex_unlock(&S.mu);
  return NULL;
}

/* SIGHUP raises the hangup flag, never a line: only the signal can ask
 * for a reload, which the Lua loop does between messages. The signal is
 * blocked in every thread but this one's sigwait (the mask is set before
 * any thread is created). */
static void *hangups(void *arg) {
  sigset_t *set = arg;
  for (;;) {
    int sig;
    if (sigwait(set, &sig) != 0 || sig != SIGHUP) continue;
    pthread_mutex_lock(&S.mu);
    S.hangup = 1;
    pthread_cond_signal(&S.cv);
    pthread_mutex_unlock(&S.mu);
  }
  return NULL;
}

/* core.stdio(max_line) -> the Stdio object (one per process) */
static int l_stdio(lua_State *L) {
  lua_Integer max = luaL_optinteger(L, 1, (lua_Integer)1 << 30);
  if (!started) {
    static sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hup, NULL);
    S.max_line = (size_t)max;
    pthread_t t, h;
    if (pthread_create(&t, NULL, reader, NULL) != 0 ||
        pthread_create(&h, NULL, hangups, &hup) != 0)
      return luaL_error(L, "cannot start the stdin reader");
    pthread_detach(t);
    pthread_detach(h);
    started = 1;
  }
  lua_newuserdatauv(L, 1, 0);
  luaL_setmetatable(L, STDIO_MT);
  return 1;
}

/* io:next([timeout]) -> line; false, "reload" after a SIGHUP (before the
 * lines queued); false, "oversize" where a line was dropped; nil at end of
 * input (nil, "timeout" when timeout seconds passed first) */
static int io_next(lua_State *L) {
  double timeout = luaL_optnumber(L, 2, -1);
  struct timespec until;
  if (timeout >= 0) {
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)timeout;
    until.tv_nsec += (long)((timeout - (double)(time_t)timeout) * 1e9);
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
  }
  pthread_mutex_lock(&S.mu);
  while (!S.head && !S.eof && !S.hangup) {
    if (timeout < 0) {
      pthread_cond_wait(&S.cv, &S.mu);
    } else if (pthread_cond_timedwait(&S.cv, &S.mu, &until) == ETIMEDOUT) {
      pthread_mutex_unlock(&S.mu);
      lua_pushnil(L);
      lua_pushliteral(L, "timeout");
      return 2;
    }
  }
  if (S.hangup) {
    S.hangup = 0;
    pthread_mutex_unlock(&S.mu);
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "reload");
    return 2;
  }
  line *l = S.head;
  if (l) {
    S.head = l->next;
    if (!S.head) S.tail = NULL;
  }
  pthread_mutex_unlock(&S.mu);
  if (!l) return 0;
  if (l->oversize) {
    free(l);
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "oversize");
    return 2;
  }
  lua_pushlstring(L, l->text, l->len);
  free(l);
  return 1;
}

static int write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(1, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w < 0) return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

int bw_stdout_line(const char *s, size_t n) {
  pthread_mutex_lock(&S.out_mu);
  int rc = write_all(s, n);
  if (rc == 0) rc = write_all("\n", 1);
  pthread_mutex_unlock(&S.out_mu);
  return rc;
}

/* io:write(text): one message line on stdout */
static int io_write(lua_State *L) {
  size_t n;
  const char *s = luaL_checklstring(L, 2, &n);
  if (bw_stdout_line(s, n) < 0) return luaL_error(L, "stdout closed");
  return 0;
}

/* io:send(value): encode a message straight into one buffer and write it,
 * without making a Lua string of it (results can be tens of MiB).
 * Returns the number of bytes written. */
static int io_send(lua_State *L) {
  size_t n;
  const char *err = NULL;
  char *buf = bw_json_encode_value(L, 2, &n, &err);
  if (!buf) return luaL_error(L, "cannot encode the reply: %s", err ? err : "?");
  int rc = bw_stdout_line(buf, n);
  free(buf);
  if (rc < 0) return luaL_error(L, "stdout closed");
  lua_pushinteger(L, (lua_Integer)n);
  return 1;
}

/* io:begin(id_json) / io:finish(): the request in flight */
static int io_begin(lua_State *L) {
  size_t n;
  const char *id = luaL_checklstring(L, 2, &n);
  pthread_mutex_lock(&S.mu);
  if (n < sizeof S.current) memcpy(S.current, id, n + 1);
  else S.current[0] = '\0';
  atomic_store(&S.cancelled, 0);
  pthread_mutex_unlock(&S.mu);
  return 0;
}

static int io_finish(lua_State *L) {
  (void)L;
  pthread_mutex_lock(&S.mu);
  S.current[0] = '\0';
  atomic_store(&S.cancelled, 0);
  pthread_mutex_unlock(&S.mu);
  return 0;
}

static int io_cancelled(lua_State *L) {
  lua_pushboolean(L, atomic_load(&S.cancelled));
  return 1;
}

const _Atomic int *bw_cancel_flag(void) { return &S.cancelled; }

static const luaL_Reg io_methods[] = {
    {"next", io_next},     {"write", io_write},         {"send", io_send},
    {"begin", io_begin},
    {"finish", io_finish}, {"cancelled", io_cancelled}, {NULL, NULL}};

void bw_stdio_register(lua_State *L) {
  luaL_newmetatable(L, STDIO_MT);
  luaL_newlib(L, io_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_stdio);
  lua_setfield(L, -2, "stdio");
}
