/*
 * httpsse.c - the SSE reader: one HTTP response that streams a session's
 * stream (a POST's answers, the GET stream) as events. libmicrohttpd runs
 * a small pool of epoll threads for every connection, so the reader never
 * waits: with nothing to send it suspends its connection (parked on its
 * stream) and returns 0; an event, the stream's end, the session's close
 * or the stop resumes it (bwh_wake, httppark.c), and so does its due time
 * (bwh_probe, every second), when the socket's hang-up is checked (a suspended
 * connection is not told its client went; a JSON answer writes nothing
 * until its end) and a comment written now and then, so the fds of closed
 * streams go within a second or two. Not part of burrow's API.
 */
#include <errno.h>
#include <poll.h>
#include "mhd.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpint.h"

enum { PROBE_S = 1 /* s between probes of a parked reader's client */ };

typedef struct reader {
  bw_http *h;
  session *s;
  stream *t;
  long pos;   /* last event sent */
  int json;   /* a JSON answer, not SSE: only the final message */
  int linger; /* a resumed stream: open after its end, as the SDK expects */
  int primed; /* the first event (id, retry, no data) is out */
  int sock;   /* the connection's socket (-1: unknown), watched for the client's hang-up */
  int counted; /* holds one of its tenant's streams (h->ten_streams) */
  int bye;     /* the listener stops: its last comment is out */
  double wrote; /* when it last wrote (monotonic s): a comment after a quiet while */
  struct MHD_Connection *c;
  bwh_park park; /* suspended while it has nothing to send */
  char *pend;
  size_t plen, poff;
} reader;

/* ------------------------------------------------------------ reading */

static void reader_free(void *cls) {
  reader *r = cls;
  bw_http *h = r->h;
  pthread_mutex_lock(&h->mu);
  bwh_unpark(&r->park); /* never parked by now: its connection was resumed to end */
  if (r->counted) h->ten_streams[bwh_tenant(h, r->s->tenant)]--;
  r->t->readers--;
  /* a stateless request's stream closed before its answer: MCP 2026-07-28
   * says that cancels it (the call stops at its next check, or never
   * begins) */
  if (r->s->stateless && !r->t->done) {
    r->s->abandoned = 1;
    if (r->s->running >= 0) atomic_store(&h->w[r->s->running].cancelled, 1);
  }
  /* a listen's stream closed: the listen is over (its watches go) */
  if (r->s->listen && r->t->id == 0 && !r->t->readers && !r->s->closed)
    bwh_session_close(h, r->s, "its stream closed");
  pthread_cond_broadcast(&h->ev); /* bw_http_stop waits for the readers to go */
  bwh_session_unref(h, r->s);
  pthread_mutex_unlock(&h->mu);
  free(r->pend);
  free(r);
}

/* SSE framing of one message: its data is one line (JSON has no raw
 * newlines), its id names the stream and the event's place in it. */
static char *frame(const reader *r, const event *e, size_t *n) {
  size_t cap = e->len + 128;
  char *b = malloc(cap);
  if (!b) return NULL;
  int k = snprintf(b, cap, "id: %ld-%ld\nevent: message\ndata: ", r->t->id,
                   e->seq);
  memcpy(b + k, e->data, e->len);
  memcpy(b + k + e->len, "\n\n", 2);
  *n = (size_t)k + e->len + 2;
  return b;
}

/* The client closed its end (or the connection broke): a JSON answer
 * writes nothing before the end, so no failed write would show it. */
static int peer_gone(int sock) {
  if (sock < 0) return 0;
  struct pollfd p = {.fd = sock, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL));
}

static ssize_t read_sse(void *cls, uint64_t pos, char *buf, size_t max) {
  (void)pos;
  reader *r = cls;
  bw_http *h = r->h;
  if (!r->pend) {
    pthread_mutex_lock(&h->mu);
    int ticked = r->park.ticked;
    r->park.ticked = 0;
    double now = bwh_now();
    event *e = NULL;
    int made = 1; /* something to send (its copy may have failed) */
    if (!r->primed && !r->json) { /* the priming event: resumable from here */
      char b[160];
      int k = snprintf(b, sizeof b, "id: %ld-%ld\nretry: %d\ndata: \n\n",
                       r->t->id, r->pos, h->o.retry_ms);
      r->pend = strdup(b);
      r->plen = (size_t)k;
      r->primed = 1;
    } else {
      e = r->t->head;
      while (e && e->seq <= r->pos) e = e->next;
      if (e && r->json) { /* only the last message: the response */
        if (!r->t->done) {
          e = NULL;
          made = 0;
        } else {
          while (e->next) e = e->next;
          r->pend = strdup(e->data);
          r->plen = e->len;
          r->pos = e->seq;
        }
      } else if (e) {
        r->pend = frame(r, e, &r->plen);
        r->pos = e->seq;
        if (e->seq > r->t->sent) r->t->sent = e->seq;
      } else {
        made = 0;
      }
    }
    if (made && !r->pend) { /* no memory for it */
      pthread_mutex_unlock(&h->mu);
      return MHD_CONTENT_READER_END_WITH_ERROR;
    }
    int end = !r->pend && ((r->t->done && (!e || r->json) && !r->linger) || r->s->closed || h->stopped);
    if (end && h->stopped && !r->json && !r->bye) { /* the client sees the end is the server's */
      r->bye = 1;
      r->pend = strdup(": the server is shutting down\n\n");
      r->plen = r->pend ? strlen(r->pend) : 0;
      end = !r->pend;
    }
    if (end) {
      pthread_mutex_unlock(&h->mu);
      return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (!r->pend) {
      if (ticked && peer_gone(r->sock)) { /* ends the response: reader_free sees it */
        pthread_mutex_unlock(&h->mu);
        return MHD_CONTENT_READER_END_WITH_ERROR;
      }
      /* a comment now and then shows a dead client a hang-up does not:
       * every probe for a stateless request, whose closed stream cancels
       * its call, and a listen, whose closed stream ends it; after 15 s
       * of quiet for the others */
      if (ticked && !r->json &&
          (r->s->stateless || r->s->listen || now - r->wrote >= 15)) {
        r->pend = strdup(": keep-alive\n\n");
        r->plen = r->pend ? strlen(r->pend) : 0;
      }
    }
    r->s->last = now;
    if (!r->pend) { /* nothing to send: resumed when the stream moves, or in a second */
      bwh_park_on(h, &r->park, r->t, r->c, now + PROBE_S);
      pthread_mutex_unlock(&h->mu);
      return 0;
    }
    r->wrote = now;
    pthread_mutex_unlock(&h->mu);
  }
  size_t n = r->plen - r->poff;
  if (n > max) n = max;
  memcpy(buf, r->pend + r->poff, n);
  r->poff += n;
  if (r->poff == r->plen) {
    free(r->pend);
    r->pend = NULL;
    r->plen = r->poff = 0;
  }
  return (ssize_t)n;
}

/* Answer with stream t of session s from event pos on (lock held; let go
 * of meanwhile, held again on return). */
enum MHD_Result bwh_stream_answer(bw_http *h, struct MHD_Connection *c,
                                     session *s, stream *t, long pos,
                                     int json, int fresh, int counted) {
  reader *r = calloc(1, sizeof *r);
  if (!r) return MHD_NO;
  r->c = c;
  r->wrote = bwh_now();
  if (counted) { /* given back by reader_free, or below */
    r->counted = 1;
    h->ten_streams[bwh_tenant(h, s->tenant)]++;
  }
  r->linger = fresh < 0;
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  r->sock = ci ? ci->connect_fd : -1;
  r->h = h;
  r->s = s;
  r->t = t;
  r->pos = pos;
  r->json = json;
  s->refs++;
  t->readers++;
  char sid[sizeof s->id];
  memcpy(sid, s->id, sizeof sid);
  /* libmicrohttpd's calls go without the listener's lock (the reader's
   * references keep s and t): it holds a response's own mutex around
   * read_sse, which takes ours, so taking its mutex under ours was the
   * other order (TSan's lock-order reports); and a response it frees at
   * once (a queue that fails) runs reader_free, which takes ours too */
  pthread_mutex_unlock(&h->mu);
  struct MHD_Response *resp = MHD_create_response_from_callback(
      MHD_SIZE_UNKNOWN, 64 * 1024, read_sse, r, reader_free);
  if (!resp) {
    pthread_mutex_lock(&h->mu);
    t->readers--;
    s->refs--;
    if (counted) h->ten_streams[bwh_tenant(h, s->tenant)]--;
    free(r);
    return MHD_NO;
  }
  MHD_add_response_header(resp, "Content-Type",
                          json ? "application/json" : "text/event-stream");
  if (!json) {
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no"); /* nginx: pass events on at once */
  }
  if (fresh > 0) MHD_add_response_header(resp, "Mcp-Session-Id", sid);
  enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, resp);
  MHD_destroy_response(resp);
  pthread_mutex_lock(&h->mu);
  return rc;
}

