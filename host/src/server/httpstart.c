/*
 * httpstart.c - the listener's life: bw_http_start (the options checked,
 * the socket bound, libmicrohttpd's daemon, the reaper, poller, access log,
 * events log and store-check threads), the drain at SIGTERM
 * (bw_http_shutdown), bw_http_stop (every parked connection resumed, each
 * reader's last comment written, before the daemon stops) and
 * bw_http_free; the store check behind /readyz. The requests themselves
 * are http.c's.
 */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "burrow.h" /* BURROW_VERSION_STRING: a listen's last answer names the server */
#include "clock.h"
#include "core.h"
#include "httpint.h"
#include "mhd.h"
#include "state.h"

static bwh_checker *checker_start(struct bw_state *store);

/* What bw_http_start allocated besides the daemon, the threads and the
 * sessions: its arrays, the access log it opened, h itself. */
static void free_parts(bw_http *h) {
  bwh_evlog_stop(h); /* if bw_http_stop did not */
  free(h->w);
  free(h->tok_calls);
  free(h->tok_sessions);
  free(h->ten_calls);
  free(h->ten_sessions);
  free(h->run_head);
  free(h->run_tail);
  free(h->ten_running);
  free(h->ten_kept);
  free(h->ten_queued);
  free(h->ten_listens);
  free(h->ten_streams);
  if (!bwh_log_free(h) && h->log && h->log != stderr) fclose(h->log);
  free(h);
}

bw_http *bw_http_start(const bw_http_opts *o, char *err, size_t errlen) {
  if (bw_mhd_load(err, errlen)) return NULL;
  if (o->n_tokens == 0 && !bw_http_loopback(o->host)) {
    snprintf(err, errlen,
             "refusing to listen on %s without tokens: a non-loopback "
             "address needs http.tokens (docs/security.md)",
             o->host);
    return NULL;
  }
  struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                           .ai_socktype = SOCK_STREAM},
                  *ai = NULL;
  char port[16];
  snprintf(port, sizeof port, "%d", o->port);
  int gai = getaddrinfo(o->host, port, &hints, &ai);
  if (gai) {
    snprintf(err, errlen, "cannot resolve %s: %s", o->host, gai_strerror(gai));
    return NULL;
  }
  bw_http *h = calloc(1, sizeof *h);
  if (!h) {
    freeaddrinfo(ai);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  h->o = *o;
  if (h->o.workers < 1) h->o.workers = 1;
  /* the access log: stderr unless told (a path, appended to; "off") */
  if (!o->access_log || !strcmp(o->access_log, "stderr")) h->log = stderr;
  else if (strcmp(o->access_log, "off") && !(h->log = fopen(o->access_log, "ae"))) {
    snprintf(err, errlen, "cannot open the access log %s: %s", o->access_log, strerror(errno));
    free(h);
    return NULL;
  }
  (void)bwh_log_start(h); /* failing, lines are written in place: the log still works */
  if (h->o.max_unauthenticated < 1) h->o.max_unauthenticated = 128;
  if (h->o.auth_timeout < 1) h->o.auth_timeout = 10;
  if (h->o.replay < 1) h->o.replay = 1;
  if (h->o.max_streams < 1) h->o.max_streams = 2048;
  if (h->o.max_listens < 1) h->o.max_listens = 1024;
  if (h->o.max_connections < 1) h->o.max_connections = CONN_LIMIT;
  pthread_mutex_init(&h->mu, NULL);
  bw_cond_init_mono(&h->ev); /* timeouts (bwh_deadline) on the monotonic clock */
  bw_cond_init_mono(&h->reap_cv);
  if (h->o.max_running < 1) /* one tenant never holds every worker of several */
    h->o.max_running = h->o.n_tenants > 1 && h->o.workers > 1 ? h->o.workers - 1 : h->o.workers;
  h->w = calloc((size_t)h->o.workers, sizeof *h->w);
  h->run_head = calloc((size_t)o->n_tenants + 1, sizeof *h->run_head);
  h->run_tail = calloc((size_t)o->n_tenants + 1, sizeof *h->run_tail);
  h->ten_running = calloc((size_t)o->n_tenants + 1, sizeof(int));
  h->ten_kept = calloc((size_t)o->n_tenants + 1, sizeof(size_t));
  h->ten_queued = calloc((size_t)o->n_tenants + 1, sizeof(size_t));
  h->ten_listens = calloc((size_t)o->n_tenants + 1, sizeof(int));
  h->ten_streams = calloc((size_t)o->n_tenants + 1, sizeof(int));
  if (h->o.max_kept_bytes < 1) h->o.max_kept_bytes = (size_t)64 << 20;
  h->tok_calls = calloc((size_t)o->n_tokens + 1, sizeof(int));
  h->tok_sessions = calloc((size_t)o->n_tokens + 1, sizeof(int));
  h->ten_calls = calloc((size_t)o->n_tenants + 1, sizeof(int));
  h->ten_sessions = calloc((size_t)o->n_tenants + 1, sizeof(int));
  for (int i = 0; h->w && i < h->o.workers; i++)
    bw_cond_init_mono(&h->w[i].cv);
  /* a fixed pool of epoll threads serves every connection (a suspended
   * one costs its socket and a little memory, no thread), one a CPU */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned pool = cpus < 2 ? 2 : cpus > 8 ? 8 : (unsigned)cpus;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                   MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                   (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  /* before the first request: a session's stream ids start at its base */
  if (bwh_evlog_start(h)) /* shared streams: without it, each instance's own (as without a store) */
    bwh_log(h, "cannot follow the store's stream events: streams resume on this instance only");
  if (h->w && h->tok_calls && h->tok_sessions && h->ten_calls && h->ten_sessions &&
      h->run_head && h->run_tail && h->ten_running && h->ten_kept && h->ten_queued &&
      h->ten_listens && h->ten_streams)
    h->d = MHD_start_daemon(
        flags, (uint16_t)o->port, bwh_accept_new, h, bwh_handler, h, MHD_OPTION_SOCK_ADDR,
        ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED, bwh_completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, bwh_on_connection, h,
        MHD_OPTION_THREAD_POOL_SIZE, pool,
        /* each pool thread's share: max_connections itself is counted in
         * all by accept_new */
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->o.max_connections > UINT_MAX / pool
                                          ? UINT_MAX : (unsigned)h->o.max_connections * pool,
        /* one address cannot hold every connection */
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)(o->max_connections_per_address > 0
                                                          ? o->max_connections_per_address : 0),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!h->d) {
    snprintf(err, errlen, "cannot listen on %s:%d: %s", o->host, o->port,
             strerror(errno));
    free_parts(h);
    return NULL;
  }
  h->poll_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (h->poll_wake < 0 || pthread_create(&h->reaper, NULL, bwh_reaper, h) != 0) {
    MHD_stop_daemon(h->d);
    snprintf(err, errlen, "cannot start the session reaper");
    if (h->poll_wake >= 0) close(h->poll_wake);
    free_parts(h);
    return NULL;
  }
  if (pthread_create(&h->poller, NULL, bwh_poller, h) != 0) {
    pthread_mutex_lock(&h->mu);
    h->stopped = 1;
    pthread_cond_broadcast(&h->reap_cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->reaper, NULL);
    MHD_stop_daemon(h->d);
    close(h->poll_wake);
    snprintf(err, errlen, "cannot start the watch poller");
    free_parts(h);
    return NULL;
  }
  if (o->store && !(h->checker = checker_start(o->store))) {
    pthread_mutex_lock(&h->mu);
    h->stopped = 1;
    pthread_cond_broadcast(&h->reap_cv);
    pthread_mutex_unlock(&h->mu);
    bwh_poll_wake(h);
    pthread_join(h->reaper, NULL);
    pthread_join(h->poller, NULL);
    MHD_stop_daemon(h->d);
    close(h->poll_wake);
    snprintf(err, errlen, "cannot start the state store check");
    free_parts(h);
    return NULL;
  }
  return h;
}

int bw_http_port(const bw_http *h) {
  const union MHD_DaemonInfo *i =
      MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  return i ? i->port : h->o.port;
}

/* MCP 2026-07-28: a listen the server ends gets its response (empty, its
 * id in _meta) as the last event of its stream (lock held). */
static void end_listens(bw_http *h) {
  for (session *s = h->sessions; s; s = s->next) {
    stream *t = s->listen ? bwh_stream_find(s, 0) : NULL;
    if (!t || t->done) continue;
    char *b = NULL;
    int n = asprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\","
                     "\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s,"
                     "\"io.modelcontextprotocol/serverInfo\":{\"name\":\"burrow\",\"version\":\"%s\"}}}}",
                     s->listen, s->listen, BURROW_VERSION_STRING);
    if (n > 0) bwh_stream_push(h, t, b, (size_t)n);
    free(b);
    t->done = 1;
  }
}

/* Connections still reading a stream (lock held). */
static int readers(const bw_http *h) {
  int n = 0;
  for (const session *s = h->sessions; s; s = s->next)
    for (const stream *t = s->streams; t; t = t->next) n += t->readers;
  return n;
}

static void checker_stop(bwh_checker *k);

void bw_http_stop(bw_http *h) {
  pthread_mutex_lock(&h->mu);
  end_listens(h);
  h->stopped = 1;
  pthread_cond_broadcast(&h->ev);
  pthread_cond_broadcast(&h->reap_cv);
  for (int i = 0; i < h->o.workers; i++) {
    pthread_cond_broadcast(&h->w[i].cv);
    atomic_store(&h->w[i].cancelled, 1); /* calls running stop now */
  }
  /* no connection may be suspended when the daemon stops: each parked
   * one is resumed, and none parks again once stopped is set; each reader
   * writes what it holds and a last comment, and ends its response, which
   * the daemon's stop would cut: waited for, a second at most (less when
   * a graceful stop's deadline is near: bw_http_shutdown) */
  bwh_wake_all(h);
  struct timespec ts;
  double by = h->stop_by > 0 ? h->stop_by : bwh_now() + 1.0;
  bwh_deadline(&ts, by - bwh_now() > 0 ? by - bwh_now() : 0);
  while (readers(h) && pthread_cond_timedwait(&h->ev, &h->mu, &ts) != ETIMEDOUT) {}
  pthread_mutex_unlock(&h->mu);
  /* a connection a worker took off its stream before the stop, to resume
   * once it had let go of the lock (httppark.c): resumed before the daemon
   * goes (none is held from the stop on) */
  while (atomic_load(&h->resuming) > 0) {
    struct timespec nap = {0, 100 * 1000};
    nanosleep(&nap, NULL);
  }
  bwh_poll_wake(h);
  MHD_stop_daemon(h->d); /* waits for the connection threads */
  pthread_join(h->reaper, NULL);
  pthread_join(h->poller, NULL);
  if (h->checker) checker_stop(h->checker);
  h->checker = NULL;
  bwh_evlog_stop(h); /* the follower (httpevlog.c) */
  bwh_log_stop(h); /* its queue written; the sessions' last lines go in place */
}

void bw_http_ready(bw_http *h) { atomic_store(&h->ready, 1); }

/* Calls not yet answered: POST streams not done, queued or running (a
 * listen's stream is stream 0; lock held). */
static int unanswered(const bw_http *h) {
  int n = 0;
  for (const session *s = h->sessions; s; s = s->next)
    for (const stream *t = s->streams; t; t = t->next) n += t->id != 0 && !t->done;
  return n;
}

enum { STOP_MS = 40 /* the stop's own waits past the deadline: readers writing their end */ };

void bw_http_shutdown(bw_http *h, double grace, bw_http_cut *cut) {
  double t0 = bwh_now(), by = t0 + (grace > 0 ? grace : 0);
  struct timespec ts;
  bwh_deadline(&ts, by - t0);
  pthread_mutex_lock(&h->mu);
  atomic_store(&h->draining, 1); /* not ready, and no new request, from now */
  while (unanswered(h) && pthread_cond_timedwait(&h->ev, &h->mu, &ts) != ETIMEDOUT) {}
  cut->calls = unanswered(h);
  cut->streams = 0;
  for (int i = 0; i <= h->o.n_tenants; i++) cut->streams += h->ten_streams[i];
  /* idle early, the streams get a second to end as before; never past the
   * deadline by more than STOP_MS */
  double now = bwh_now();
  h->stop_by = (now + 1.0 < by ? now + 1.0 : by > now ? by : now) + STOP_MS / 1000.0;
  pthread_mutex_unlock(&h->mu);
  bw_http_stop(h);
}

/* ------------------------------------------------------- store check */

static void checker_unref(bwh_checker *k) {
  pthread_mutex_lock(&k->mu);
  int last = --k->refs == 0;
  pthread_mutex_unlock(&k->mu);
  if (!last) return;
  bw_state_close(k->store);
  pthread_mutex_destroy(&k->mu);
  pthread_cond_destroy(&k->cv);
  free(k);
}

static void *checker_main(void *arg) {
  bwh_checker *k = arg;
  pthread_mutex_lock(&k->mu);
  while (!k->stop) {
    pthread_mutex_unlock(&k->mu);
    size_t n;
    atomic_store(&k->ok, bw_state_count(k->store, "burrow-readyz", &n) == BW_OK);
    pthread_mutex_lock(&k->mu);
    struct timespec ts;
    bwh_deadline(&ts, 1.0);
    if (!k->stop) pthread_cond_timedwait(&k->cv, &k->mu, &ts);
  }
  pthread_mutex_unlock(&k->mu);
  checker_unref(k);
  return NULL;
}

static bwh_checker *checker_start(struct bw_state *store) {
  bwh_checker *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  pthread_mutex_init(&k->mu, NULL);
  bw_cond_init_mono(&k->cv);
  k->refs = 2;
  atomic_store(&k->ok, -1); /* not asked yet: /readyz says starting */
  k->store = bw_state_ref(store);
  if (pthread_create(&k->th, NULL, checker_main, k) != 0) {
    k->refs = 1;
    checker_unref(k);
    return NULL;
  }
  return k;
}

/* Told to stop; joined if it ends within 10 ms, else left to end by
 * itself (a check in flight waits for the store's timeout). */
static void checker_stop(bwh_checker *k) {
  pthread_mutex_lock(&k->mu);
  k->stop = 1;
  pthread_cond_signal(&k->cv);
  pthread_mutex_unlock(&k->mu);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 10 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  if (pthread_timedjoin_np(k->th, NULL, &ts) != 0) pthread_detach(k->th);
  checker_unref(k);
}

/* Free the items a session still has queued (the workers are gone). */
static void drain(bw_http *h, session *s) {
  s->refs++; /* its items' references go first */
  for (bw_http_item *it = s->head, *n; it; it = n) {
    n = it->next;
    h->queued -= it->len;
    h->ten_queued[bwh_tenant(h, s->tenant)] -= it->len;
    free(it->body);
    free(it);
    s->refs--;
  }
  s->head = s->tail = NULL;
  bwh_session_unref(h, s);
}

void bw_http_free(bw_http *h) {
  for (int i = 0; i < h->o.workers; i++) { /* a session a stopped worker held */
    session *s = h->w[i].cur;
    h->w[i].cur = NULL;
    if (s) {
      s->running = -1;
      drain(h, s);
      bwh_session_unref(h, s);
    }
    bw_rpcid_clear(&h->w[i].cur_id);
  }
  while (h->sessions) bwh_session_close(h, h->sessions, "stopped"); /* queues its close */
  for (int t = 0; t <= h->o.n_tenants; t++)
    for (session *s = h->run_head[t], *n; s; s = n) {
      n = s->run_next;
      drain(h, s);
    }
  close(h->poll_wake);
  free_parts(h);
}
