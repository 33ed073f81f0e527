/*
 * httppark.c - connections suspended on a stream (MHD_suspend_connection)
 * until it moves: an SSE reader with nothing to send (httpsse.c), a
 * stateless POST waiting for the first word of its answer (httppost.c).
 * Each is linked on its stream and resumed exactly once: by bwh_wake (an
 * event, the stream's end, the session's close, the stop) or by bwh_probe
 * at its due time, which the sessions' reaper runs (httpsess.c). Below the
 * sessions, the reader and the events log, which all wake streams; it
 * calls none of them. Lock held throughout.
 */
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

static void resume(bwh_park *p) {
  bwh_unpark(p);
  MHD_resume_connection(p->c);
}

void bwh_wake(bw_http *h, stream *t) {
  (void)h;
  while (t->parked) resume(t->parked);
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
        resume(p);
      }
}
