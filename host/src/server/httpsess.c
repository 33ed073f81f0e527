/*
 * httpsess.c - the state behind `burrow mcp --http` (http.c is the
 * listener): sessions (bound to a token, reaped when idle), their SSE
 * streams with bounded replay buffers, each session's queue of items (run
 * by the scheduler, httpsched.c, on any free worker, tenant by tenant),
 * the reaper and the watch poller, and what the Lua workers call
 * (lhttp.c): next, record, release, begin, finish (send and done: httpsend.c). Everything
 * here runs under the listener's one lock.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <unistd.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "clock.h"
#include "httpint.h"

double bwh_now(void) { return bw_now_mono(); }

/* Every condition variable of the listener runs on the monotonic clock
 * (http.c: bw_cond_init_mono): a change of the wall clock moves no timeout. */
void bwh_deadline(struct timespec *ts, double secs) { bw_deadline_mono(ts, secs); }

/* ------------------------------------------------------------ streams */

/* The bytes a stream's kept events hold count against its session's
 * tenant (http.max_kept_bytes). */
static void charge(bw_http *h, stream *t, long long n) {
  t->bytes += n;
  if (t->owner) h->ten_kept[bwh_tenant(h, t->owner->tenant)] += n;
}

static void bwh_stream_free(bw_http *h, stream *t) {
  charge(h, t, -(long long)t->bytes);
  for (event *e = t->head, *n; e; e = n) {
    n = e->next;
    free(e->data);
    free(e);
  }
  free(t);
}

/* The oldest finished stream of s nobody reads goes (the list is newest
 * first) until the tenant's kept bytes fit cap. */
static void evict_from(bw_http *h, session *s, int slot, size_t cap) {
  while (h->ten_kept[slot] > cap) {
    stream **victim = NULL;
    for (stream **p = &s->streams; *p; p = &(*p)->next)
      if ((*p)->id != 0 && (*p)->done && !(*p)->readers) victim = p;
    if (!victim) return;
    stream *x = *victim;
    *victim = x->next;
    bwh_stream_free(h, x);
  }
}

/* Past the tenant's budget of kept bytes (http.max_kept_bytes), finished
 * streams nobody reads go: the session's own first, then its tenant's
 * other sessions'. Streams still answering are never dropped. */
static void evict_kept(bw_http *h, session *own) {
  int slot = bwh_tenant(h, own->tenant);
  size_t cap = h->o.max_kept_bytes;
  if (slot < h->o.n_tenants && h->o.tenants[slot].max_kept_bytes) cap = h->o.tenants[slot].max_kept_bytes;
  if (h->ten_kept[slot] <= cap) return;
  evict_from(h, own, slot, cap);
  for (session *s = h->sessions; s && h->ten_kept[slot] > cap; s = s->next)
    if (s != own && bwh_tenant(h, s->tenant) == slot) evict_from(h, s, slot, cap);
}

stream *bwh_stream_find(session *s, long id) {
  for (stream *t = s->streams; t; t = t->next)
    if (t->id == id) return t;
  return NULL;
}

/* A new stream; done streams nobody reads beyond the newest KEEP_DONE go. */
stream *bwh_stream_new(bw_http *h, session *s, long id) {
  stream *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->id = id;
  t->owner = s;
  t->next = s->streams;
  s->streams = t;
  int kept = 0;
  for (stream **p = &t->next; *p;) {
    stream *x = *p;
    if (x->id != 0 && x->done && !x->readers && ++kept > KEEP_DONE) {
      *p = x->next;
      bwh_stream_free(h, x);
    } else {
      p = &x->next;
    }
  }
  return t;
}

int bwh_stream_push(bw_http *h, stream *t, const char *text, size_t n) {
  return bwh_stream_put(h, t, 0, text, n);
}

/* Events are kept in order of their numbers: one from the store's log
 * (httpevlog.c) may come after a later one. */
int bwh_stream_put(bw_http *h, stream *t, long seq, const char *text, size_t n) {
  event **at = &t->head;
  if (seq <= 0) {
    seq = t->seq + 1;
    at = t->tail ? &t->tail->next : &t->head;
  } else {
    for (; *at && (*at)->seq < seq; at = &(*at)->next) {}
    if (*at && (*at)->seq == seq) return 0; /* had it */
  }
  event *e = malloc(sizeof *e);
  char *d = malloc(n + 1);
  if (!e || !d) {
    free(e);
    free(d);
    return -1;
  }
  memcpy(d, text, n);
  d[n] = '\0';
  e->seq = seq;
  e->len = n;
  e->data = d;
  e->next = *at;
  *at = e;
  if (!e->next) t->tail = e;
  if (seq > t->seq) t->seq = seq;
  charge(h, t, (long long)n);
  if (++t->count > h->o.replay) { /* the oldest goes: replay is bounded */
    event *old = t->head;
    t->head = old->next;
    if (!t->head) t->tail = NULL;
    t->count--;
    charge(h, t, -(long long)old->len);
    free(old->data);
    free(old);
  }
  if (t->owner) evict_kept(h, t->owner);
  return 0;
}

/* The stream's request is answered (or its session ended): its call
 * counts no more against the token's max_calls. */
void bwh_stream_release(bw_http *h, stream *t) {
  if (!t->calls) return;
  t->calls = 0;
  if (t->token >= 0) h->tok_calls[t->token]--;
  else h->open_calls--;
  if (t->tenant < h->o.n_tenants) h->ten_calls[t->tenant]--;
}

/* ----------------------------------------------------------- sessions */

void bwh_session_unref(bw_http *h, session *s) {
  if (--s->refs > 0 || !s->closed) return;
  for (stream *t = s->streams, *n; t; t = n) {
    n = t->next;
    bwh_stream_free(h, t);
  }
  bw_rpcgone_clear(&s->gone);
  if (s->watch_fd >= 0) close(s->watch_fd);
  free(s->listen);
  free(s->record);
  free(s);
}

/* A new session of the token's tenant, in the list (lock held). A
 * stateless one (one request of MCP 2026-07-28) counts against no session
 * limit: it holds one call, which counts as calls do, and ends when the
 * worker lets go of it. */
session *bwh_session_new(bw_http *h, int token, const bw_oauth_who *who, const char *addr,
                         int stateless) {
  session *s = calloc(1, sizeof *s);
  unsigned char rnd[16];
  if (!s || getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
    free(s);
    return NULL;
  }
  for (int i = 0; i < 16; i++) sprintf(s->id + 2 * i, "%02x", rnd[i]);
  s->token = token;
  s->who = *who;
  s->tenant = token >= 0 ? h->o.tokens[token].tenant : 0;
  snprintf(s->addr, sizeof s->addr, "%s", addr);
  s->running = s->home = s->served_by = -1; /* any worker takes it */
  s->watch_fd = -1;
  s->refs = 1; /* the list's */
  s->next_stream = stateless || !h->stream_base ? 1 : h->stream_base; /* shared: ids no other instance makes */
  s->stateless = stateless;
  s->next = h->sessions;
  h->sessions = s;
  if (stateless) return s;
  h->nsessions++;
  if (token >= 0) h->tok_sessions[token]++;
  if (s->tenant < h->o.n_tenants) h->ten_sessions[s->tenant]++;
  return s;
}

int bwh_session_owned(const session *s, int token, const bw_oauth_who *who) {
  return s->token == token && bw_oauth_same(&s->who, who);
}

session *bwh_session_find(bw_http *h, const char *id) {
  if (!id) return NULL;
  for (session *s = h->sessions; s; s = s->next)
    if (!strcmp(s->id, id)) return s;
  return NULL;
}

/* w lets go of its session (caller holds the lock): the scheduler's
 * half (httpsched.c), then a stateless session ends, another is runnable
 * again. */
static void release(bw_http *h, int w, int home) {
  session *s = h->w[w].cur;
  if (!s) return;
  if (s->watch_fd >= 0) bwh_poll_wake(h); /* it may fire again: poll it */
  bwh_sched_let_go(h, w, home);
  if (s->stateless) bwh_session_end(h, s); /* its one request is answered */
  else bwh_sched_runnable(h, s);
  bwh_session_unref(h, s);
}

const char *bwh_tenant_name(const bw_http *h, int t) {
  return t >= 0 && t < h->o.n_tenants && h->o.tenant_names && h->o.tenant_names[t]
             ? h->o.tenant_names[t] : "default";
}

static void unlink_session(bw_http *h, session *s) {
  for (session **p = &h->sessions; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  s->closed = 1;
  for (stream *t = s->streams; t; t = t->next) bwh_stream_release(h, t);
}

void bwh_session_end(bw_http *h, session *s) {
  if (s->closed) return;
  unlink_session(h, s);
  pthread_cond_broadcast(&h->ev);
  bwh_wake_session(h, s); /* its parked readers see it closed */
  bwh_session_unref(h, s); /* the list's reference */
}

/* Unlink a session; its close is queued behind its items (caller holds
 * the lock). why: deleted, expired, stopped (the access log's word). */
void bwh_session_close(bw_http *h, session *s, const char *why) {
  if (s->stateless) return bwh_session_end(h, s);
  bwh_log(h, "%s %.8s closed (%s) tenant=%s", s->listen ? "listen" : "session", s->id, why,
          bwh_tenant_name(h, s->tenant));
  unlink_session(h, s);
  h->nsessions--;
  if (s->token >= 0) h->tok_sessions[s->token]--;
  if (s->tenant < h->o.n_tenants) h->ten_sessions[s->tenant]--;
  if (s->counted) { /* a listen: its slots are free again */
    s->counted = 0;
    h->ten_listens[bwh_tenant(h, s->tenant)]--;
    h->ten_streams[bwh_tenant(h, s->tenant)]--;
  }
  bwh_wake_session(h, s);
  bw_http_item *it = calloc(1, sizeof *it);
  if (it) {
    it->kind = BW_HTTP_CLOSE;
    snprintf(it->sid, sizeof it->sid, "%s", s->id);
    it->tenant = s->tenant;
    it->session = s; /* its reference: the session stays until it is handled */
    s->refs++;
    s->inflight++;
    bwh_queue_item(h, s, it);
  }
  pthread_cond_broadcast(&h->ev);
  bwh_session_unref(h, s); /* the list's reference */
}

void *bwh_reaper(void *arg) {
  bw_http *h = arg;
  pthread_mutex_lock(&h->mu);
  while (!h->stopped) {
    struct timespec ts;
    /* a quarter second at most: parked connections come due (bwh_probe) */
    double tick = h->o.session_ttl / 4;
    bwh_deadline(&ts, tick < 0.05 ? 0.05 : tick > 0.25 ? 0.25 : tick);
    pthread_cond_timedwait(&h->reap_cv, &h->mu, &ts);
    if (h->stopped) break;
    bwh_probe(h);
    double t = bwh_now();
    for (session *s = h->sessions, *n; s; s = n) {
      n = s->next;
      int reading = 0;
      for (stream *x = s->streams; x; x = x->next) reading += x->readers;
      if (!reading && !s->inflight && t - s->last > h->o.session_ttl)
        bwh_session_close(h, s, "expired");
    }
  }
  pthread_mutex_unlock(&h->mu);
  return NULL;
}

/* ------------------------------------------------------ watch poller */

void bwh_poll_wake(bw_http *h) {
  uint64_t one = 1;
  if (write(h->poll_wake, &one, sizeof one) < 0) { /* full: awake anyway */ }
}

/* A WATCH item for s (caller holds the lock): a worker pumps its watches. */
static void queue_watch(bw_http *h, session *s) {
  bw_http_item *it = calloc(1, sizeof *it);
  if (!it) return; /* tried again at the next wake */
  it->kind = BW_HTTP_WATCH;
  snprintf(it->sid, sizeof it->sid, "%s", s->id);
  it->tenant = s->tenant;
  it->stream = -1;
  it->session = s;
  s->refs++;
  s->inflight++;
  s->watch_queued = 1;
  bwh_queue_item(h, s, it);
}

/* The sessions with file watches, polled while no worker holds them and
 * no WATCH item of theirs waits: a readable fd, or a held change come due,
 * queues one. So any worker serves a session's subscriptions, and the
 * changes go out as soon as they come, not on a worker's timer. */
void *bwh_poller(void *arg) {
  bw_http *h = arg;
  struct pollfd *pfd = NULL;
  session **ps = NULL;
  size_t cap = 0;
  pthread_mutex_lock(&h->mu);
  while (!h->stopped) {
    size_t n = 0;
    double now = bwh_now(), next = -1;
    for (session *s = h->sessions; s; s = s->next) {
      if (s->watch_fd < 0 || s->watch_queued || s->running >= 0) continue;
      if (n + 1 >= cap) {
        size_t c = cap ? cap * 2 : 64;
        struct pollfd *np = realloc(pfd, c * sizeof *np);
        if (np) pfd = np;
        session **nps = np ? realloc(ps, c * sizeof *nps) : NULL;
        if (nps) ps = nps;
        if (!np || !nps) break; /* out of memory: these for now */
        cap = c;
      }
      pfd[n] = (struct pollfd){.fd = s->watch_fd, .events = POLLIN};
      ps[n++] = s;
      s->refs++;
      if (s->watch_due > 0 && (next < 0 || s->watch_due - now < next)) next = s->watch_due - now;
    }
    if (n + 1 > cap) { /* room for the wake fd */
      struct pollfd *np = realloc(pfd, (n + 1) * sizeof *np);
      if (!np) { /* give them back, look again later */
        for (size_t i = 0; i < n; i++) bwh_session_unref(h, ps[i]);
        struct timespec ts;
        bwh_deadline(&ts, 0.1);
        pthread_cond_timedwait(&h->reap_cv, &h->mu, &ts);
        continue;
      }
      pfd = np;
      cap = n + 1;
    }
    pfd[n] = (struct pollfd){.fd = h->poll_wake, .events = POLLIN};
    pthread_mutex_unlock(&h->mu);
    int ms = next < 0 ? -1 : next * 1000 > 1e9 ? 1000000000 : (int)(next * 1000) + 1;
    int got = poll(pfd, n + 1, ms);
    if (got > 0 && (pfd[n].revents & POLLIN)) {
      uint64_t v;
      if (read(h->poll_wake, &v, sizeof v) < 0) { /* raced with another read: fine */ }
    }
    pthread_mutex_lock(&h->mu);
    now = bwh_now();
    for (size_t i = 0; i < n; i++) {
      session *s = ps[i];
      int ready = got > 0 && (pfd[i].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL));
      int due = s->watch_due > 0 && s->watch_due <= now;
      if (!s->closed && s->watch_fd == pfd[i].fd && !s->watch_queued && s->running < 0 &&
          (ready || due)) {
        s->watch_due = 0;
        queue_watch(h, s);
      }
      bwh_session_unref(h, s);
    }
  }
  pthread_mutex_unlock(&h->mu);
  free(pfd);
  free(ps);
  return NULL;
}

/* -------------------------------------------------------- worker side */

static void item_done(bw_http *h, bw_http_item *it);

/* One lock for the item done, the session let go of and the next item
 * taken (they were three: each a chance for the listener's thread, woken
 * by the answer just sent, to find the lock held and sleep again); the
 * wakes they make are done after it (bwh_defer_begin). */
bw_http_item *bw_http_next(bw_http *h, int w, bw_http_item *done, double timeout) {
  struct timespec ts;
  bwh_wakes wk;
  if (timeout >= 0) bwh_deadline(&ts, timeout);
  pthread_mutex_lock(&h->mu);
  bwh_defer_begin(h, &wk);
  if (done) item_done(h, done);
  release(h, w, 1); /* not released by the Lua side: its state stays here */
  bw_http_item *it = bwh_sched_next(h, w, timeout >= 0 ? &ts : NULL);
  bwh_defer_end(h);
  pthread_mutex_unlock(&h->mu);
  bwh_defer_run(h, &wk);
  if (done) bw_http_item_free(h, done); /* its session's part done above: only its memory */
  return it;
}

char *bw_http_record(bw_http *h, int w, size_t *len) {
  pthread_mutex_lock(&h->mu);
  session *s = h->w[w].cur;
  char *r = s && s->record ? malloc(s->record_len + 1) : NULL;
  if (r) {
    memcpy(r, s->record, s->record_len);
    r[s->record_len] = '\0';
    *len = s->record_len;
  }
  pthread_mutex_unlock(&h->mu);
  return r;
}

void bw_http_release(bw_http *h, int w, const char *record, size_t n, int home,
                     int watch_fd, double watch_in) {
  char *copy = record ? malloc(n + 1) : NULL;
  if (copy) {
    memcpy(copy, record, n);
    copy[n] = '\0';
  }
  int fd = watch_fd >= 0 ? fcntl(watch_fd, F_DUPFD_CLOEXEC, 0) : -1;
  pthread_mutex_lock(&h->mu);
  session *s = h->w[w].cur;
  if (s && copy) {
    free(s->record);
    s->record = copy;
    s->record_len = n;
    copy = NULL;
  } else if (s && record) {
    home = 1; /* no memory for the copy: the state stays where it is */
  }
  if (s) {
    int old = s->watch_fd;
    s->watch_fd = fd;
    fd = old; /* closed below, outside the lock */
    s->watch_due = watch_fd >= 0 && watch_in >= 0 ? bwh_now() + watch_in : 0;
  }
  bwh_wakes wk;
  bwh_defer_begin(h, &wk);
  release(h, w, home);
  bwh_defer_end(h);
  pthread_mutex_unlock(&h->mu);
  bwh_defer_run(h, &wk);
  if (fd >= 0) close(fd);
  free(copy);
}

bw_http_item *bw_http_next_of(bw_http *h, int w, const char *sid, double timeout) {
  worker *k = &h->w[w];
  struct timespec ts;
  if (timeout >= 0) bwh_deadline(&ts, timeout);
  pthread_mutex_lock(&h->mu);
  session *s = k->cur;
  bw_http_item *it = NULL, *prev = NULL;
  while (s && !strcmp(s->id, sid) && !h->stopped) {
    prev = NULL;
    for (it = s->head; it; prev = it, it = it->next)
      if (it->kind == BW_HTTP_CLOSE || (it->kind == BW_HTTP_MSG && it->stream < 0)) break;
    if (it) break;
    if (timeout < 0) pthread_cond_wait(&k->cv, &h->mu);
    else if (pthread_cond_timedwait(&k->cv, &h->mu, &ts) == ETIMEDOUT) break;
  }
  if (h->stopped) it = NULL;
  if (it) { /* unlinked where it stands */
    if (prev) prev->next = it->next;
    else s->head = it->next;
    if (s->tail == it) s->tail = prev;
    it->next = NULL;
    it->version = s->version;
  }
  pthread_mutex_unlock(&h->mu);
  return it;
}

void bw_http_gone(bw_http *h, int w) {
  pthread_mutex_lock(&h->mu);
  session *s = h->w[w].cur;
  if (s && !s->closed) bwh_session_close(h, s, "gone from the store");
  pthread_mutex_unlock(&h->mu);
}

int bw_http_stopped(bw_http *h) {
  pthread_mutex_lock(&h->mu);
  int s = h->stopped;
  pthread_mutex_unlock(&h->mu);
  return s;
}

int bw_http_begin(bw_http *h, int w, const char *sid, const char *id) {
  worker *k = &h->w[w];
  bw_rpcid r = {0};
  bw_rpcid_from_text(&r, id); /* as a value: the cancel's JSON text may differ */
  pthread_mutex_lock(&h->mu);
  int gone = k->cur && !strcmp(k->cur->id, sid) &&
             (k->cur->abandoned || bw_rpcgone_take(&k->cur->gone, &r));
  bw_rpcid_move(&k->cur_id, &r);
  atomic_store(&k->cancelled, gone);
  pthread_mutex_unlock(&h->mu);
  return gone;
}

void bw_http_finish(bw_http *h, int w) {
  worker *k = &h->w[w];
  pthread_mutex_lock(&h->mu);
  bw_rpcid_clear(&k->cur_id);
  atomic_store(&k->cancelled, 0);
  k->task[0] = '\0';
  pthread_mutex_unlock(&h->mu);
}

int bw_http_task_begin(bw_http *h, int w, const char *task) {
  if (strlen(task) >= sizeof h->w[w].task) return 0;
  pthread_mutex_lock(&h->mu);
  int busy = 0;
  for (int i = 0; i < h->o.workers; i++) busy += i == w || h->w[i].task[0];
  int ok = busy < h->o.workers;
  if (ok) snprintf(h->w[w].task, sizeof h->w[w].task, "%s", task);
  pthread_mutex_unlock(&h->mu);
  return ok;
}

int bw_http_task_cancel(bw_http *h, const char *task) {
  int found = 0;
  pthread_mutex_lock(&h->mu);
  for (int i = 0; i < h->o.workers; i++)
    if (h->w[i].task[0] && !strcmp(h->w[i].task, task)) {
      atomic_store(&h->w[i].cancelled, 1);
      found = 1;
    }
  pthread_mutex_unlock(&h->mu);
  return found;
}

const _Atomic int *bw_http_cancel_flag(bw_http *h, int w) {
  return &h->w[w].cancelled;
}

/* notifications/cancelled: the call running stops at its next check; a
 * request not begun yet is remembered by its session and never runs. */
void bwh_note_cancel(bw_http *h, session *s, const json_t *id) {
  bw_rpcid r = {0};
  bw_rpcid_from_json(&r, id);
  if (r.type == BW_RPCID_NONE) return;
  worker *k = s->running >= 0 ? &h->w[s->running] : NULL;
  if (k && bw_rpcid_equal(&k->cur_id, &r)) {
    atomic_store(&k->cancelled, 1);
    bw_rpcid_clear(&r);
    return;
  }
  bw_rpcgone_add(&s->gone, &r);
}

int bw_http_item_stateless(const bw_http_item *it) {
  const session *s = it->session; /* both set before it was queued, never changed */
  return !s ? 0 : s->stateless ? 1 : s->listen ? 2 : 0;
}

const char *bw_http_item_token(const bw_http *h, const bw_http_item *it) {
  const session *s = it->session; /* set when it was made, never changed */
  if (s && s->who.set) return s->who.id; /* an OAuth principal's: sha256 of iss and sub */
  return s && s->token >= 0 ? h->o.tokens[s->token].sha256 : NULL;
}

int bw_http_item_read_only(const bw_http_item *it) {
  return it->session && it->session->who.read_only;
}

/* The item's part of its session given back (lock held): the session is
 * free to expire again. */
static void item_done(bw_http *h, bw_http_item *it) {
  session *s = it->session;
  if (!s) return;
  it->session = NULL;
  s->queued -= it->len;
  h->queued -= it->len;
  h->ten_queued[bwh_tenant(h, s->tenant)] -= it->len;
  s->inflight--;
  if (it->kind != BW_HTTP_WATCH) s->last = bwh_now(); /* file changes keep no session alive */
  bwh_session_unref(h, s);
}

void bw_http_item_free(bw_http *h, bw_http_item *it) {
  if (!it) return;
  if (it->session) {
    pthread_mutex_lock(&h->mu);
    item_done(h, it);
    pthread_mutex_unlock(&h->mu);
  }
  free(it->body);
  free(it->params);
  free(it);
}
