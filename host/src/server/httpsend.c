/*
 * httpsend.c - what a worker sends (lhttp.c's w:send, w:done): a message
 * onto its session's stream (a POST's, or outside a request the GET
 * stream), its readers woken (httppark.c), and for a shared session
 * written through to the streams' log in the deployment's store
 * (httpevlog.c), which numbers the GET stream's messages on every
 * instance. Above the sessions and the log, so neither calls the other
 * round.
 */
#include <pthread.h>
#include <string.h>

#include "httpint.h"

/* The stream a message for stream_id lands on: its POST's, or outside a
 * request (or after its answer) the GET stream; NULL: none (lock held). */
static stream *send_target(session *s, long stream_id) {
  stream *t = bwh_stream_find(s, stream_id);
  return !t || t->done ? bwh_stream_find(s, 0) : t;
}

/* A shared session's message for its GET stream: numbered by the store's
 * log, where every instance's go (-1: the store did not answer, numbered
 * here then). Lock held, let go of meanwhile; -2: not such a message, the
 * lock kept. */
static long send_logged(bw_http *h, session *s, long stream_id, const char *text, size_t n) {
  stream *t = send_target(s, stream_id);
  if (!bwh_evlog_on(h, s) || (t && t->id != 0)) return -2;
  char sid[sizeof s->id];
  memcpy(sid, s->id, sizeof sid);
  int tenant = s->tenant;
  s->refs++;
  pthread_mutex_unlock(&h->mu);
  long seq = bwh_evlog_append(h, tenant, sid, 0, 0, text, n, 0);
  pthread_mutex_lock(&h->mu);
  bwh_session_unref(h, s);
  return seq;
}

int bw_http_send(bw_http *h, const char *sid, long stream_id, const char *text,
                 size_t n, int final) {
  pthread_mutex_lock(&h->mu);
  session *s = bwh_session_find(h, sid);
  int rc = -1;
  long seq = s ? send_logged(h, s, stream_id, text, n) : -2, logged = 0, at = 0;
  int tenant = 0, end = 0;
  if (seq != -2) s = bwh_session_find(h, sid); /* the lock was let go of */
  bwh_wakes wk; /* its readers resumed once the lock is given back */
  bwh_defer_begin(h, &wk);
  if (s) {
    stream *t = bwh_stream_find(s, stream_id);
    /* the answer: the call is over before the client can see it end */
    if (t && final) {
      bwh_stream_release(h, t);
      t->answered = 1;
    }
    stream *req = t; /* its readers may wait for the answered mark */
    if (!t || t->done) t = bwh_stream_find(s, 0); /* outside a request: GET */
    if (!t) t = bwh_stream_new(h, s, 0);
    if (t) rc = bwh_stream_put(h, t, seq > 0 ? seq : 0, text, n);
    if (t && t->id != 0 && bwh_evlog_on(h, s)) { /* written through below, numbered here */
      logged = t->id;
      at = t->seq;
      tenant = s->tenant;
      end = t == req && final; /* its answer is its last: logged as its end too */
    }
    /* a stateless request's stream ends with its answer (MCP 2026-07-28:
     * the response is the request's last message): its POST, parked until
     * the stream is done (httppost.c), is answered at this wake instead of
     * parking again until the worker's w:done, a second wake (four in ten
     * calls on two cores took it) */
    if (req && req == t && final && s->stateless) req->done = 1;
    pthread_cond_broadcast(&h->ev);
    if (t) bwh_wake(h, t);
    if (req && req != t) bwh_wake(h, req);
  }
  bwh_defer_end(h);
  pthread_mutex_unlock(&h->mu);
  bwh_defer_run(h, &wk);
  if (logged) (void)bwh_evlog_append(h, tenant, sid, logged, at, text, n, end);
  return rc;
}

void bw_http_done(bw_http *h, const char *sid, long stream_id) {
  pthread_mutex_lock(&h->mu);
  session *s = bwh_session_find(h, sid);
  stream *t = s ? bwh_stream_find(s, stream_id) : NULL;
  /* an answered stream's end went with its answer (bw_http_send) */
  int logged = t && t->id != 0 && !t->done && !t->answered && bwh_evlog_on(h, s);
  int tenant = s ? s->tenant : 0;
  bwh_wakes wk;
  bwh_defer_begin(h, &wk);
  if (t) {
    t->done = 1;
    bwh_stream_release(h, t);
    bwh_wake(h, t);
  }
  pthread_cond_broadcast(&h->ev);
  bwh_defer_end(h);
  pthread_mutex_unlock(&h->mu);
  bwh_defer_run(h, &wk);
  if (logged) (void)bwh_evlog_append(h, tenant, sid, stream_id, 0, NULL, 0, 1); /* its end */
}
