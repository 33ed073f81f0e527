/*
 * httppark.c - connections suspended on a stream (MHD_suspend_connection)
 * until it moves: an SSE reader with nothing to send (httpsse.c), a
 * stateless POST waiting for the first word of its answer (httppost.c).
 * Each is linked on its stream and resumed exactly once: by bwh_wake (an
 * event, the stream's end, the session's close, the stop) or by bwh_probe
 * at its due time, which the sessions' reaper runs (httpsess.c). And the
 * wakes a lock holder defers (bwh_defer_begin): these resumes and a
 * worker's condition variable (the scheduler's bwh_signal_worker), done
 * by bwh_defer_run once it has let go of the lock. Below the sessions, the
 * scheduler, the reader and the events log, which all wake streams or
 * workers; it calls none of them. Lock held throughout, bwh_defer_run
 * excepted.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "clock.h"
#include "httpint.h"
#include "mhd.h"

void bwh_park_on(bw_http *h, bwh_park *p, stream *t, struct MHD_Connection *c, double due) {
  (void)h;
  p->c = c;
  p->due = due;
  p->ticked = 0;
  p->next = t->parked;
  if (t->parked) t->parked->pprev = &p->next;
  p->pprev = &t->parked;
  t->parked = p;
  MHD_suspend_connection(c); /* under our lock: no wake can come before it */
}

void bwh_unpark(bwh_park *p) {
  if (!p->pprev) return;
  *p->pprev = p->next;
  if (p->next) p->next->pprev = p->pprev;
  p->next = NULL;
  p->pprev = NULL;
}

/* Off its stream and resumed, exactly once: now, or, held by the lock's
 * holder (bwh_defer_begin), once it has let go of the lock. A held one
 * stays suspended until then, so libmicrohttpd keeps it (a suspended
 * connection is neither read nor closed); h->resuming counts it, and
 * bw_http_stop waits for it before the daemon stops. */
static void resume(bw_http *h, bwh_park *p) {
  bwh_unpark(p);
  bwh_wakes *wk = h->stopped ? NULL : h->defer; /* stopped: the daemon's stop must not outrun it */
  if (wk && wk->nc < BWH_DEFERRED) {
    wk->c[wk->nc++] = p->c;
    atomic_fetch_add(&h->resuming, 1);
    return;
  }
  MHD_resume_connection(p->c);
}

void bwh_wake(bw_http *h, stream *t) {
  while (t->parked) resume(h, t->parked);
}

void bwh_signal_worker(bw_http *h, int i) {
  bwh_wakes *wk = h->defer;
  for (int j = 0; wk && j < wk->nw; j++)
    if (wk->w[j] == i) return; /* held already */
  if (wk && wk->nw < BWH_DEFERRED) wk->w[wk->nw++] = i;
  else pthread_cond_signal(&h->w[i].cv);
}

void bwh_defer_begin(bw_http *h, bwh_wakes *wk) {
  wk->nw = wk->nc = 0;
  h->defer = wk;
}

void bwh_defer_end(bw_http *h) { h->defer = NULL; }

/* Without the lock: each worker signalled (its loop looks at the queues
 * under the lock, so a wake that comes late or for nothing is harmless),
 * each connection resumed (it was suspended throughout: still alive). */
void bwh_defer_run(bw_http *h, bwh_wakes *wk) {
  for (int j = 0; j < wk->nw; j++) pthread_cond_signal(&h->w[wk->w[j]].cv);
  for (int j = 0; j < wk->nc; j++) {
    MHD_resume_connection(wk->c[j]);
    atomic_fetch_sub(&h->resuming, 1);
  }
  wk->nw = wk->nc = 0;
}

void bwh_defer_flush_locked(bw_http *h) {
  bwh_wakes *wk = h->defer;
  h->defer = NULL;
  if (wk) bwh_defer_run(h, wk); /* under the lock: as without */
}

void bwh_wake_session(bw_http *h, session *s) {
  for (stream *t = s->streams; t; t = t->next) bwh_wake(h, t);
}

void bwh_wake_all(bw_http *h) {
  for (session *s = h->sessions; s; s = s->next) bwh_wake_session(h, s);
}

void bwh_probe(bw_http *h) {
  double now = bw_now_mono(); /* bwh_now: the sessions' clock, above this file */
  for (session *s = h->sessions; s; s = s->next)
    for (stream *t = s->streams; t; t = t->next)
      for (bwh_park *p = t->parked, *n; p; p = n) {
        n = p->next;
        if (p->due > now) continue;
        p->ticked = 1;
        resume(h, p);
      }
}
