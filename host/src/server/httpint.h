/*
 * httpint.h - what http.c (the listener, its checks and answers) and
 * httpsess.c (sessions, streams, the worker queues) share: the types of
 * a session and its streams, and the functions both sides call under the
 * listener's one lock. Not part of burrow's API.
 */
#ifndef BURROW_HTTPINT_H
#define BURROW_HTTPINT_H

#include <jansson.h>
#include <pthread.h>
#include <time.h>

#include "http.h"
#include "rpcid.h"

enum { GONE_MAX = 64, KEEP_DONE = 16, CONN_LIMIT = 1024 };

typedef struct event {
  struct event *next;
  long seq;
  size_t len;
  char *data;
} event;

typedef struct stream {
  struct stream *next;
  long id;     /* 0: the GET stream */
  int done;    /* the POST has all its answers */
  int readers; /* connections reading it */
  int calls;   /* holds a call of its token (or of the open count) and tenant */
  int token;
  int tenant;
  long seq;    /* last event's number */
  long sent;   /* last event written to any reader */
  int count;   /* events kept */
  event *head, *tail;
} stream;

typedef struct session {
  struct session *next;
  char id[40];
  int token; /* -1: no authentication */
  int tenant, worker;
  int refs;     /* connections and queued items holding it */
  int closed;   /* deleted or expired: unlinked, freed at refs 0 */
  int inflight; /* queued or running items */
  double last;
  long next_stream;
  stream *streams;
  size_t queued; /* body bytes of its items not yet handled */
} session;

typedef struct worker {
  pthread_cond_t cv;
  bw_http_item *head, *tail;
  char cur_sid[40];
  bw_rpcid cur_id; /* the call in flight (NONE: none) */
  _Atomic int cancelled;
  struct { char sid[40]; bw_rpcid id; } gone[GONE_MAX];
  int next_gone;
  int sessions;
} worker;

struct bw_http {
  bw_http_opts o;
  struct MHD_Daemon *d;
  pthread_mutex_t mu;
  pthread_cond_t ev; /* any stream got an event, ended, or a session closed */
  pthread_cond_t reap_cv;
  pthread_t reaper;
  int stopped;
  session *sessions;
  int nsessions;
  worker *w;
  int *tok_calls, *tok_sessions;
  int *ten_calls, *ten_sessions; /* by tenant index, o.n_tenants of them */
  int open_calls; /* without tokens */
  size_t queued;  /* body bytes of every session's items not yet handled */
};

double bwh_now(void);
void bwh_deadline(struct timespec *ts, double secs);
/* with h->mu held: */
stream *bwh_stream_find(session *s, long id);
stream *bwh_stream_new(session *s, long id);
int bwh_stream_push(bw_http *h, stream *t, const char *text, size_t n);
void bwh_stream_release(bw_http *h, stream *t);
void bwh_session_unref(bw_http *h, session *s);
session *bwh_session_find(bw_http *h, const char *id);
void bwh_queue_item(bw_http *h, int w, bw_http_item *it);
void bwh_session_close(bw_http *h, session *s);
void bwh_note_cancel(bw_http *h, session *s, const json_t *id);
/* the reaper thread (arg: the bw_http) */
void *bwh_reaper(void *arg);

#endif
