/*
 * httpsched.c - the scheduler of `burrow mcp --http`: which session's item
 * a free worker runs next. A session with items and no worker joins its
 * tenant's run queue; a worker takes the first session it may run from
 * the tenants in turn, each under its max_running, preferring the worker
 * its state lives on or that served it last (its Server is current
 * there); an idle worker waits on its own condition variable, so a
 * runnable session wakes one worker, not all. Below the sessions
 * (httpsess.c), which queue items here and let go of a worker's session
 * through bwh_sched_let_go; everything under the listener's one lock.
 */
#include <errno.h>
#include <pthread.h>
#include <time.h>

#include "httpint.h"

int bwh_tenant(const bw_http *h, int t) {
  return t >= 0 && t < h->o.n_tenants ? t : h->o.n_tenants;
}

int bwh_running_cap(const bw_http *h, int slot) {
  if (slot < h->o.n_tenants && h->o.tenants[slot].max_running > 0)
    return h->o.tenants[slot].max_running;
  return h->o.max_running;
}

/* An idle worker waits on its own condition variable, so a session
 * that becomes runnable wakes one worker, not all: its home (the worker
 * its state lives on), else the idle worker that served it last (its
 * Server is current there), else any idle one. s NULL: every idle worker
 * (queued sessions another worker may take now). A busy worker looks at
 * the queues when it is done. */
static void wake_for(bw_http *h, const session *s) {
  if (s && s->home >= 0) {
    if (h->w[s->home].idle) bwh_signal_worker(h, s->home);
    return;
  }
  if (s && s->served_by >= 0 && h->w[s->served_by].idle) {
    bwh_signal_worker(h, s->served_by);
    return;
  }
  for (int i = 0; i < h->o.workers; i++)
    if (h->w[i].idle) {
      bwh_signal_worker(h, i);
      if (s) return;
    }
}

static int any_queued(const bw_http *h) {
  for (int t = 0; t <= h->o.n_tenants; t++)
    if (h->run_head[t]) return 1;
  return 0;
}

/* A session with items that no worker holds joins its tenant's queue. */
void bwh_sched_runnable(bw_http *h, session *s) {
  if (s->in_run || s->running >= 0 || !s->head) return;
  int t = bwh_tenant(h, s->tenant);
  s->run_next = NULL;
  if (h->run_tail[t]) h->run_tail[t]->run_next = s;
  else h->run_head[t] = s;
  h->run_tail[t] = s;
  s->in_run = 1;
  wake_for(h, s);
}

void bwh_queue_item(bw_http *h, session *s, bw_http_item *it) {
  it->next = NULL;
  if (s->tail) s->tail->next = it;
  else s->head = it;
  s->tail = it;
  if (s->running >= 0) pthread_cond_broadcast(&h->w[s->running].cv);
  else bwh_sched_runnable(h, s);
}

/* The session worker w serves next, out of its tenant's queue: tenants in
 * turn from h->rr, one at its cap skipped, the first session in the
 * tenant's order that may run on w. */
static session *pick(bw_http *h, int w) {
  int n = h->o.n_tenants + 1;
  for (int i = 0; i < n; i++) {
    int t = (h->rr + i) % n;
    if (!h->run_head[t] || h->ten_running[t] >= bwh_running_cap(h, t)) continue;
    session *prev = NULL;
    for (session *s = h->run_head[t]; s; prev = s, s = s->run_next) {
      if (s->home >= 0 && s->home != w) continue;
      /* the worker that served it last, idle, takes it: its Server is
       * current there, another would build one from the snapshot */
      if (s->served_by >= 0 && s->served_by != w && h->w[s->served_by].idle) continue;
      if (prev) prev->run_next = s->run_next;
      else h->run_head[t] = s->run_next;
      if (h->run_tail[t] == s) h->run_tail[t] = prev;
      s->run_next = NULL;
      s->in_run = 0;
      h->rr = (t + 1) % n;
      return s;
    }
  }
  return NULL;
}

/* The scheduler's half of a worker letting go of its session (lock
 * held; w holds one): the worker idle, the session on no worker (its
 * state at home on w or anywhere), its tenant's running count given back
 * and, others of the tenant queued, idle workers woken. */
void bwh_sched_let_go(bw_http *h, int w, int home) {
  worker *k = &h->w[w];
  session *s = k->cur;
  k->cur = NULL;
  k->idle = 1; /* it looks at the queues next (bw_http_next), its own sessions first */
  s->running = -1;
  s->home = home ? w : -1;
  s->served_by = w;
  s->version++;
  int t = bwh_tenant(h, s->tenant);
  /* others of its tenant queued: one may have waited for the tenant's cap */
  if (h->run_head[t]) wake_for(h, NULL);
  h->ten_running[t]--;
}

/* The next item for worker w (lock held): it waits, idle, until a session
 * it may run comes up (pick) or ts passes (NULL: no deadline) or the
 * listener stops; the session is then w's, its first item taken. */
bw_http_item *bwh_sched_next(bw_http *h, int w, const struct timespec *ts) {
  worker *k = &h->w[w];
  session *s = NULL;
  if (!k->up) { /* its Lua state is loaded and asks for work: /readyz counts it */
    k->up = 1;
    h->workers_up++;
  }
  k->idle = 1;
  while (!h->stopped && !(s = pick(h, w))) {
    bwh_defer_flush_locked(h); /* the wait lets go of the lock */
    if (!ts) pthread_cond_wait(&k->cv, &h->mu);
    else if (pthread_cond_timedwait(&k->cv, &h->mu, ts) == ETIMEDOUT) break;
  }
  k->idle = 0;
  /* busy now: a session left to this worker, or a wake this worker took
   * for another session (signals merge), is another idle worker's */
  if (any_queued(h)) wake_for(h, NULL);
  bw_http_item *it = NULL;
  if (s && h->stopped) bwh_sched_runnable(h, s); /* stays queued: freed at the end */
  else if (s) {
    s->running = w;
    s->refs++;
    k->cur = s;
    h->ten_running[bwh_tenant(h, s->tenant)]++;
    it = s->head;
    s->head = it->next;
    if (!s->head) s->tail = NULL;
    it->next = NULL;
    it->version = s->version;
    if (it->kind == BW_HTTP_WATCH) s->watch_queued = 0;
  }
  return it;
}
