/*
 * lserver.c - stdio plumbing of `burrow mcp`, as burrow.server.stdio().
 *
 * stdin is split into lines and queued by one reader at a time. Between
 * calls, and whenever it waits in io:next, the Lua thread reads it itself:
 * a small call costs no hand-off between threads (a wake-up each way was a
 * fifth of a small read's CPU). A tool call that runs past TAKEOVER_MS
 * hands stdin to the reader thread (a timer armed by io:begin wakes it),
 * so the next messages keep arriving during a long call; they are answered
 * in order once it ends (io:finish takes stdin back), or, while a
 * read-only call waits on its walk, by the Lua loop meanwhile (burrow.mcp:
 * one call deep, so io:begin keeps two calls' ids and cancel flags). Two
 * kinds of message whoever reads handles at once, because they matter
 * during a call and need no Lua: a
 * notifications/cancelled for the call in flight raises its cancel flag
 * (which long operations poll; one for a request still queued is kept, and
 * that request never runs), and a ping that arrives while a tool call runs
 * is answered here at once. Output goes through one lock, one whole
 * message per hold, so progress notifications, pings and results never
 * interleave. Events (SIGHUP, a dropped line, a file watch's fd turning
 * readable) travel apart from the text, so no byte on stdin can look like
 * one.
 */
#include <errno.h>
#include <jansson.h>
#include <lauxlib.h>
#include <lua.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "core.h"
#include "ljson.h"
#include "clock.h"
#include "lserver.h"
#include "rpcid.h"

#define STDIO_MT "burrow.Stdio"

enum {
  FAST_MAX = 64 * 1024, /* longer lines are never a ping or a cancel we read */
  CALLS_MAX = 2,        /* a call, and one run while it waits on its walk */
  TAKEOVER_MS = 2,      /* a call this long gets the reader thread on stdin */
};

enum { OWN_MAIN, OWN_READER }; /* who reads stdin (stdio_state.owner) */

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
  int busy;    /* tool calls in flight (io:begin .. io:finish): 0, 1, or 2
                  when one runs while another waits on its walk */
  bw_rpcid current[CALLS_MAX]; /* their ids, outermost first */
  bw_rpcgone gone;    /* cancelled before they began */
  _Atomic int cancelled[CALLS_MAX]; /* each call's own flag */
  pthread_mutex_t out_mu;
  int watch_fd;    /* a file watch's fd the loop wakes for, -1 = none */
  int watch_ready; /* it is readable; cleared by io:watch_done */
  pthread_cond_t wcv; /* the watch poller waits here for watch_done */
  int owner;          /* OWN_MAIN or OWN_READER: the one that may read stdin */
  int main_reading;   /* the Lua thread is in poll/read on stdin */
  int takeover;       /* the timer fired while the Lua thread read: hand over after */
  int handback;       /* io:finish asks the reader thread for stdin back */
  int tfd;            /* the takeover timer (timerfd) */
  int armed;          /* it is set; the reader thread clears this when it fires */
  struct timespec long_at; /* when the outermost call in flight has run TAKEOVER_MS (monotonic) */
  int rfd, mfd;       /* eventfds that wake the reader thread, the Lua thread */
  char *buf;          /* the line splitter's, used by the owner only */
  size_t len, cap, scanned;
  int oversize;
} stdio_state;

static stdio_state S = {.mu = PTHREAD_MUTEX_INITIALIZER,
                        .cv = PTHREAD_COND_INITIALIZER,
                        .out_mu = PTHREAD_MUTEX_INITIALIZER,
                        .watch_fd = -1,
                        .wcv = PTHREAD_COND_INITIALIZER};
static int started;

/* notifications/cancelled: the call in flight stops at its next check; a
 * request still queued is remembered, and io:begin refuses it. */
static void note_cancel(const json_t *id) {
  bw_rpcid r = {0};
  bw_rpcid_from_json(&r, id);
  if (r.type == BW_RPCID_NONE) return;
  pthread_mutex_lock(&S.mu);
  int found = 0;
  for (int i = 0; i < S.busy; i++)
    if (bw_rpcid_equal(&S.current[i], &r)) {
      atomic_store(&S.cancelled[i], 1);
      found = 1;
    }
  if (!found) bw_rpcgone_add(&S.gone, &r);
  pthread_mutex_unlock(&S.mu);
  bw_rpcid_clear(&r);
}

/* A well-formed ping during a tool call, answered from this thread.
 * 1 if answered; 0 leaves it to the Lua loop (in its turn). */
static int answer_ping(const json_t *m) {
  const json_t *id = json_object_get(m, "id");
  const json_t *params = json_object_get(m, "params");
  const char *v = json_string_value(json_object_get(m, "jsonrpc"));
  if (!v || strcmp(v, "2.0") || (params && !json_is_object(params))) return 0;
  if (!json_is_integer(id) && !json_is_string(id)) return 0;
  /* MCP 2026-07-28 has no ping: the Lua loop says so */
  if (json_object_get(json_object_get(params, "_meta"), "io.modelcontextprotocol/protocolVersion"))
    return 0;
  pthread_mutex_lock(&S.mu);
  int busy = S.busy;
  pthread_mutex_unlock(&S.mu);
  if (!busy) return 0; /* idle: the Lua loop answers it in order */
  size_t n;
  char *reply = bw_rpc_pong(id, &n);
  if (!reply) return 0;
  bw_stdout_line(reply, n);
  free(reply);
  return 1;
}

/* The messages this thread acts on itself; 1 if the line is used up. A
 * cancel is still queued: the Lua loop, waiting for a client's answer,
 * wakes on it. Only short lines are decoded here, and only those that
 * name one of the two methods. */
static int intercept(const char *s, size_t n) {
  if (n > FAST_MAX) return 0;
  int cancel = memmem(s, n, "notifications/cancelled", 23) != NULL;
  if (!cancel && !memmem(s, n, "\"ping\"", 6)) return 0;
  json_t *m = json_loadb(s, n, 0, NULL);
  if (!m) return 0;
  const char *method = json_string_value(json_object_get(m, "method"));
  int used = 0;
  if (method && cancel && !strcmp(method, "notifications/cancelled") &&
      !json_object_get(m, "id"))
    note_cancel(json_object_get(json_object_get(m, "params"), "requestId"));
  else if (method && !strcmp(method, "ping"))
    used = answer_ping(m);
  json_decref(m);
  return used;
}

static void push_line(const char *s, size_t n, int oversize) {
  if (n > 0 && s[n - 1] == '\r') n--;
  if (!oversize && intercept(s, n)) return;
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

static void wake(int fd) {
  uint64_t one = 1;
  ssize_t w = write(fd, &one, sizeof one);
  (void)w; /* a full counter is a wake-up already pending */
}

static void drain(int fd) {
  uint64_t n;
  ssize_t r = read(fd, &n, sizeof n);
  (void)r;
}

/* A monotonic time (clock.c's) in seconds. */
static double secs(const struct timespec *t) { return (double)t->tv_sec + (double)t->tv_nsec / 1e9; }

/* Set the takeover timer to fire at long_at (S.mu held). It is never
 * disarmed: a call that ends first leaves it to fire once for nothing, so
 * back-to-back small calls cost one wake-up of the reader thread per
 * TAKEOVER_MS, not a timer call each. */
static void arm(void) {
  struct itimerspec t = {.it_value = S.long_at};
  S.armed = timerfd_settime(S.tfd, TFD_TIMER_ABSTIME, &t, NULL) == 0;
}

/* Has the call in flight run TAKEOVER_MS? (S.mu held) Else the timer is
 * set for when it will have. */
static int call_is_long(void) {
  if (bw_now_mono() >= secs(&S.long_at)) return 1;
  arm();
  return 0;
}

/* Read stdin once (the owner only) and queue its whole lines. A line
 * longer than max_line is dropped as it streams in (memory stays bounded)
 * and replaced by an oversize entry the Lua loop answers with an error.
 * -1 at the end of input (then eof is set). */
static int read_some(void) {
  if (S.len == S.cap) {
    size_t c = S.cap ? S.cap * 2 : 1 << 16;
    char *n = realloc(S.buf, c);
    if (n) S.buf = n, S.cap = c;
  }
  ssize_t got = S.len < S.cap ? read(0, S.buf + S.len, S.cap - S.len) : 0;
  if (got < 0 && (errno == EINTR || errno == EAGAIN)) return 0;
  if (got <= 0) {
    if (S.len > 0 && !S.oversize) push_line(S.buf, S.len, 0);
    S.len = 0;
    pthread_mutex_lock(&S.mu);
    S.eof = 1;
    pthread_cond_broadcast(&S.cv);
    pthread_mutex_unlock(&S.mu);
    return -1;
  }
  S.len += (size_t)got;
  char *start = S.buf, *nl;
  while ((nl = memchr(S.buf + S.scanned, '\n', S.len - S.scanned))) {
    size_t n = (size_t)(nl - start);
    if (S.oversize || n > S.max_line) push_line("", 0, 1);
    else push_line(start, n, 0);
    S.oversize = 0;
    start = nl + 1;
    S.scanned = (size_t)(start - S.buf);
  }
  size_t rest = S.len - (size_t)(start - S.buf);
  if (rest > S.max_line) { /* too long already: keep nothing of it */
    S.oversize = 1;
    rest = 0;
  }
  memmove(S.buf, start, rest);
  S.len = S.scanned = rest;
  return 0;
}

/* The reader thread: asleep until a call has run TAKEOVER_MS (or the Lua
 * thread hands stdin over), then reads stdin until io:finish asks for it
 * back. */
static void *reader(void *arg) {
  (void)arg;
  for (;;) {
    struct pollfd p[2] = {{.fd = S.tfd, .events = POLLIN}, {.fd = S.rfd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) { /* never give up: io:finish may wait on us */
      struct timespec ms = {0, 1000000L};
      if (errno != EINTR) nanosleep(&ms, NULL);
      continue;
    }
    if (p[0].revents) drain(S.tfd);
    if (p[1].revents) drain(S.rfd);
    pthread_mutex_lock(&S.mu);
    if (p[0].revents) S.armed = 0;
    if (S.busy && S.owner == OWN_MAIN && (!p[0].revents || call_is_long())) {
      if (S.main_reading) S.takeover = 1; /* it hands over when it stops */
      else S.owner = OWN_READER;
    }
    if (S.handback) { /* handed over and asked back before we woke */
      S.handback = 0;
      S.owner = OWN_MAIN;
      pthread_cond_broadcast(&S.cv);
    }
    int mine = S.owner == OWN_READER && !S.eof;
    pthread_mutex_unlock(&S.mu);
    while (mine) {
      struct pollfd q[2] = {{.fd = 0, .events = POLLIN}, {.fd = S.rfd, .events = POLLIN}};
      if (poll(q, 2, -1) < 0 && errno != EINTR) q[0].revents = POLLERR; /* as the end */
      if (q[0].revents && read_some() < 0) mine = 0;
      if (q[1].revents) drain(S.rfd);
      pthread_mutex_lock(&S.mu);
      if (S.handback) {
        S.handback = 0;
        S.owner = OWN_MAIN;
        pthread_cond_broadcast(&S.cv);
        mine = 0;
      }
      pthread_mutex_unlock(&S.mu);
    }
  }
  return NULL;
}

/* The Lua thread reads stdin itself (S.mu not held): 1 when something may
 * have changed (lines, the end, an event), 0 when until passed first. An
 * until already past still takes what is waiting (io:next(0): a look). */
static int main_read(const struct timespec *until) {
  int ms = -1;
  if (until) {
    double left_ms = (secs(until) - bw_now_mono()) * 1000;
    long long left = left_ms > (double)(1 << 30) ? 1 << 30 : (long long)left_ms;
    if (left < left_ms) left++; /* rounded up: poll must not wake before until */
    ms = left <= 0 ? 0 : left > 1 << 30 ? 1 << 30 : (int)left; /* 0: what is waiting now */
  }
  struct pollfd p[2] = {{.fd = 0, .events = POLLIN}, {.fd = S.mfd, .events = POLLIN}};
  int n = poll(p, 2, ms);
  if (n < 0 && errno != EINTR) p[0].revents = POLLIN; /* read: blocks at worst */
  else if (n < 0) return 1;
  else if (n == 0) return 0;
  if (p[1].revents) drain(S.mfd);
  if (p[0].revents) read_some();
  return 1;
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
    wake(S.mfd); /* the Lua thread may be reading stdin */
  }
  return NULL;
}

static sigset_t hup; /* SIGHUP, blocked in every thread but the watcher's sigwait */
static int have_reader, have_watcher;

/* io:start() -> true | nil, message: the reader thread and the SIGHUP
 * watcher, which burrow.mcp starts with the first tool call or once the
 * first message is answered, not before: a start to the initialize answer
 * makes no thread (~0.05 ms of it; docs/benchmarks.md, Start-up). Until
 * then stdin is the Lua thread's, as between calls, and a SIGHUP stays
 * pending (blocked since stdio()) until the watcher takes it. A thread
 * that could not start is tried again by the next io:start. */
static int io_start(lua_State *L) {
  int e = 0;
  const char *which = NULL;
  if (!have_reader) {
    pthread_t t;
    if ((e = pthread_create(&t, NULL, reader, NULL)) != 0) which = "the stdin reader";
    else pthread_detach(t), have_reader = 1;
  }
  if (!which && !have_watcher) {
    pthread_t h;
    if ((e = pthread_create(&h, NULL, hangups, &hup)) != 0) which = "the SIGHUP watcher";
    else pthread_detach(h), have_watcher = 1;
  }
  if (!which) {
    lua_pushboolean(L, 1);
    return 1;
  }
  lua_pushnil(L);
  lua_pushfstring(L, "cannot start %s: %s", which, strerror(e));
  return 2;
}

/* burrow.server.stdio(max_line) -> the Stdio object (one per process) */
static int l_stdio(lua_State *L) {
  lua_Integer max = luaL_optinteger(L, 1, (lua_Integer)1 << 30);
  if (!started) {
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &hup, NULL);
    S.max_line = (size_t)max;
    bw_cond_init_mono(&S.cv); /* before any thread waits on it */
    S.tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    S.rfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    S.mfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (S.tfd < 0 || S.rfd < 0 || S.mfd < 0)
      return luaL_error(L, "cannot start the stdin reader: %s", strerror(errno));
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
    bw_deadline_mono(&until, timeout); /* S.cv runs on the monotonic clock */
  }
  pthread_mutex_lock(&S.mu);
  while (!S.head && !S.eof && !S.hangup && !S.watch_ready) {
    if (S.owner == OWN_MAIN) { /* read it ourselves: no hand-off */
      S.main_reading = 1;
      pthread_mutex_unlock(&S.mu);
      int more = main_read(timeout >= 0 ? &until : NULL);
      pthread_mutex_lock(&S.mu);
      S.main_reading = 0;
      if (S.takeover && S.busy) { /* a long call: the reader thread reads on */
        S.takeover = 0;
        S.owner = OWN_READER;
        wake(S.rfd);
      }
      if (!more && !S.head && !S.eof && !S.hangup && !S.watch_ready) {
        pthread_mutex_unlock(&S.mu);
        lua_pushnil(L);
        lua_pushliteral(L, "timeout");
        return 2;
      }
    } else if (timeout < 0) {
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
  if (S.watch_ready && !S.head) { /* lines first: a request is never late */
    pthread_mutex_unlock(&S.mu);
    lua_pushboolean(L, 0);
    lua_pushliteral(L, "watch");
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

/* A message and its newline in one system call where the pipe takes them
 * (two writes woke the client twice). */
int bw_stdout_line(const char *s, size_t n) {
  struct iovec iov[2] = {{(void *)s, n}, {"\n", 1}};
  pthread_mutex_lock(&S.out_mu);
  int rc = bw_writev_all(1, iov, 2);
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
 * without making a Lua string of it (results can be tens of MiB); a big
 * prepared fragment (read_file's text) is written from its own buffer,
 * not copied into the message. Returns the number of bytes written. */
static int io_send(lua_State *L) {
  size_t n, total;
  const char *err = NULL;
  bw_json_splice sp[BW_JSON_SPLICES];
  int nsp = 0;
  char *buf = bw_json_encode_spliced(L, 2, &n, &err, sp, &nsp);
  if (!buf) return luaL_error(L, "cannot encode the reply: %s", err ? err : "?");
  buf[n] = '\n'; /* over the terminating NUL: the line's end in the last piece */
  struct iovec iov[2 * BW_JSON_SPLICES + 1];
  int cnt = 0;
  size_t at = 0;
  total = n;
  for (int i = 0; i < nsp; i++) {
    iov[cnt++] = (struct iovec){buf + at, sp[i].at - at};
    iov[cnt++] = (struct iovec){(void *)sp[i].p, sp[i].n};
    at = sp[i].at;
    total += sp[i].n;
  }
  iov[cnt++] = (struct iovec){buf + at, n - at + 1};
  pthread_mutex_lock(&S.out_mu);
  int rc = bw_writev_all(1, iov, cnt);
  pthread_mutex_unlock(&S.out_mu);
  free(buf);
  if (rc < 0) return luaL_error(L, "stdout closed");
  lua_pushinteger(L, (lua_Integer)total);
  return 1;
}

/* io:begin(id) -> cancelled?: the tool call in flight, whose cancel
 * raises the flag and during which the reader answers pings. true if the
 * client cancelled it while it was queued: do not run it. */
static int io_begin(lua_State *L) {
  bw_rpcid r = {0};
  size_t n;
  if (lua_isinteger(L, 2)) {
    bw_rpcid_from_int(&r, (long long)lua_tointeger(L, 2));
  } else if (lua_type(L, 2) == LUA_TNUMBER) {
    bw_rpcid_from_real(&r, (double)lua_tonumber(L, 2));
  } else if (lua_type(L, 2) == LUA_TSTRING) {
    const char *s = lua_tolstring(L, 2, &n);
    bw_rpcid_from_string(&r, s, n);
  }
  pthread_mutex_lock(&S.mu);
  int gone = bw_rpcgone_take(&S.gone, &r);
  if (S.busy == CALLS_MAX) {
    pthread_mutex_unlock(&S.mu);
    bw_rpcid_clear(&r);
    return luaL_error(L, "io:begin: %d calls in flight already", CALLS_MAX);
  }
  bw_rpcid_move(&S.current[S.busy], &r);
  atomic_store(&S.cancelled[S.busy], gone);
  if (S.busy++ == 0 && S.owner == OWN_MAIN) {
    bw_deadline_mono(&S.long_at, TAKEOVER_MS / 1000.0);
    if (!S.armed) arm();
  }
  pthread_mutex_unlock(&S.mu);
  lua_pushboolean(L, gone);
  return 1;
}

static int io_finish(lua_State *L) {
  (void)L;
  pthread_mutex_lock(&S.mu);
  if (S.busy > 0) {
    S.busy--;
    bw_rpcid_clear(&S.current[S.busy]);
    atomic_store(&S.cancelled[S.busy], 0);
  }
  if (S.busy == 0) { /* stdin back to this thread */
    S.takeover = 0;
    if (S.owner == OWN_READER) {
      S.handback = 1;
      wake(S.rfd);
      while (S.owner == OWN_READER && !S.eof) pthread_cond_wait(&S.cv, &S.mu);
      S.handback = 0;
    }
  }
  pthread_mutex_unlock(&S.mu);
  return 0;
}

static int io_cancelled(lua_State *L) {
  pthread_mutex_lock(&S.mu);
  int top = S.busy > 0 ? S.busy - 1 : 0;
  pthread_mutex_unlock(&S.mu);
  lua_pushboolean(L, atomic_load(&S.cancelled[top]));
  return 1;
}

/* The stdio server's innermost call's flag, the process's cancel source
 * (core/stop.c: a thread with a flag of its own, an HTTP worker or a
 * submitted call, uses that): a walk takes it when it starts, so an outer
 * call's walk keeps its own while another call runs meanwhile. */
static const _Atomic int *stdio_flag(void) {
  pthread_mutex_lock(&S.mu);
  int top = S.busy > 0 ? S.busy - 1 : 0;
  pthread_mutex_unlock(&S.mu);
  return &S.cancelled[top];
}

/* The watch poller: when the watch fd turns readable, wake io:next (which
 * returns false, "watch") and wait until the loop has drained it
 * (io:watch_done), so a readable fd is one wake-up, not a spin. */
static void *watch_poller(void *arg) {
  (void)arg;
  for (;;) {
    pthread_mutex_lock(&S.mu);
    int fd = S.watch_fd;
    pthread_mutex_unlock(&S.mu);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int n = poll(&p, 1, -1);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || (p.revents & POLLNVAL)) return NULL;
    pthread_mutex_lock(&S.mu);
    S.watch_ready = 1;
    pthread_cond_signal(&S.cv);
    wake(S.mfd);
    while (S.watch_ready) pthread_cond_wait(&S.wcv, &S.mu);
    pthread_mutex_unlock(&S.mu);
  }
  return NULL;
}

/* io:watch(fd): wake io:next when fd is readable (once per process; the
 * fd must stay open while the process serves). */
static int io_watch(lua_State *L) {
  int fd = (int)luaL_checkinteger(L, 2);
  pthread_mutex_lock(&S.mu);
  int had = S.watch_fd >= 0;
  if (!had) S.watch_fd = fd;
  pthread_mutex_unlock(&S.mu);
  if (had) return luaL_error(L, "the stdio loop already wakes for a watch");
  pthread_t t;
  if (pthread_create(&t, NULL, watch_poller, NULL) != 0)
    return luaL_error(L, "cannot start the watch poller");
  pthread_detach(t);
  return 0;
}

/* io:watch_done(): the watch fd was drained; poll it again */
static int io_watch_done(lua_State *L) {
  (void)L;
  pthread_mutex_lock(&S.mu);
  S.watch_ready = 0;
  pthread_cond_signal(&S.wcv);
  pthread_mutex_unlock(&S.mu);
  return 0;
}

static const luaL_Reg io_methods[] = {
    {"next", io_next},     {"write", io_write},         {"send", io_send},
    {"begin", io_begin},   {"start", io_start},
    {"finish", io_finish}, {"cancelled", io_cancelled},
    {"watch", io_watch},   {"watch_done", io_watch_done}, {NULL, NULL}};

void bw_stdio_register(lua_State *L) {
  bw_set_cancel_source(stdio_flag);
  luaL_newmetatable(L, STDIO_MT);
  luaL_newlib(L, io_methods);
  lua_setfield(L, -2, "__index");
  lua_pop(L, 1);
  lua_pushcfunction(L, l_stdio);
  lua_setfield(L, -2, "stdio");
}
