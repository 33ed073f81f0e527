/*
 * httpint.h - what the HTTP transport's files share (http.c the handler,
 * httppost.c a POST, httpanswer.c the answers, httpstart.c start and stop,
 * httpsess.c sessions, streams and the worker queues, and the others):
 * the types of a session, its streams and a request's connection state,
 * and the functions they call under the listener's one lock. Not part of
 * burrow's API.
 */
#ifndef BURROW_HTTPINT_H
#define BURROW_HTTPINT_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "http.h"
#include "mhd.h" /* the types of libmicrohttpd's callbacks */
#include "oauth.h"
#include "rpcid.h"

enum { KEEP_DONE = 16, CONN_LIMIT = 1024, IDLE_TIMEOUT = 120 /* s: a connection past the checks */ };

typedef struct event {
  struct event *next;
  long seq;
  size_t len;
  char *data;
} event;

/* A connection suspended (MHD_suspend_connection) until its stream moves:
 * an SSE reader with nothing to send, or a stateless POST waiting for the
 * first word of its answer. Linked on its stream while suspended, resumed
 * exactly once (bwh_wake, or bwh_probe at its due time), so no pool
 * thread ever waits for a worker. */
typedef struct bwh_park {
  struct bwh_park *next, **pprev; /* on its stream's list; pprev NULL: not parked */
  struct MHD_Connection *c;
  double due;  /* monotonic s: resumed then even if nothing came (probe, deadline) */
  int ticked;  /* resumed by its due time, not by its stream */
} bwh_park;

typedef struct stream {
  struct stream *next;
  long id;     /* 0: the GET stream */
  int done;    /* the POST has all its answers */
  int answered; /* its response (the final message) is in it */
  int readers; /* connections reading it */
  int calls;   /* holds a call of its token (or of the open count) and tenant */
  int token;
  int tenant;
  long seq;    /* last event's number */
  long sent;   /* last event written to any reader */
  int count;   /* events kept */
  size_t bytes; /* their bytes (charged to the owner's tenant) */
  struct session *owner;
  event *head, *tail;
  bwh_park *parked; /* connections suspended until it moves */
  int mirror;  /* kept by another instance: its events come from the store's log (httpevlog.c) */
  long floor;  /* the log's events up to this one are not merged (a GET stream's reader came after them) */
} stream;

typedef struct session {
  struct session *next;     /* the listener's list */
  struct session *run_next; /* its tenant's run queue */
  char id[40];
  char addr[46]; /* the client address that made it (INET6_ADDRSTRLEN) */
  int token; /* -1: no authentication */
  bw_oauth_who who; /* the OAuth principal that made it (who.set 0: a config token's) */
  int tenant;   /* its slot in the tenant arrays (bwh_tenant) */
  int refs;     /* connections, queued items and a worker holding it */
  int closed;   /* deleted or expired: unlinked, freed at refs 0 */
  int inflight; /* queued or running items */
  double last;
  long next_stream;
  stream *streams;
  size_t queued; /* body bytes of its items not yet handled */
  bw_http_item *head, *tail; /* its items not yet taken, in order */
  int running;  /* the worker that holds it (its item runs there), -1: none */
  int home;     /* the one worker its state lives on (-1: any worker) */
  int served_by;    /* the worker that served it last (-1: none): its Server is current there */
  int in_run;   /* in its tenant's run queue */
  int stateless; /* one request of MCP 2026-07-28: ends when its worker lets go */
  int abandoned; /* stateless: its client closed the stream (the call is cancelled) */
  char *listen;  /* a subscriptions/listen of MCP 2026-07-28: the JSON text of its
                  * request's id. Its stream 0 is the POST's answer; the session
                  * counts as one and ends when that stream's reader goes. */
  int counted; /* a listen: holds one of its tenant's listens and streams until it closes */
  bw_rpcgone gone; /* requests cancelled before they began */
  int watch_fd;    /* a dup of its file watches' fd (-1: none), polled by the poller */
  double watch_due; /* when a held change is due (monotonic s; 0: none) */
  int watch_queued; /* a WATCH item of it waits */
  char *record;    /* its state between calls (the Lua worker's snapshot) */
  size_t record_len;
  long version;    /* bumped by every release */
} session;

/* A request's state on its connection (MHD's con_cls), from its checks to
 * its answer (http.c's handler, httppost.c's POST). */
typedef struct conn {
  int checked;
  int token;
  bw_oauth_who who; /* an OAuth token's principal (token: its tenant's slot) */
  size_t limit, len, cap;
  char *body;
  int rejected;
  int too_big; /* bytes dropped past the limit */
  /* a POST's request queued, its answer not begun (held: a reference on
   * ws, a reader on wt); waiting: parked until its first word or until */
  session *ws;
  stream *wt;
  int listen, init, waiting;
  double until;
  bwh_park park;
} conn;

typedef struct worker {
  pthread_cond_t cv; /* an item came for the session it holds; idle: a session to pick */
  session *cur;      /* the session it holds (one item of it runs), or NULL */
  bw_rpcid cur_id;   /* the call in flight (NONE: none) */
  _Atomic int cancelled;
  int idle;          /* waiting in bw_http_next for a session */
  char task[72];     /* the task its call runs as after answering ("": none) */
  int up;            /* its loop has asked for work once: it can serve (/readyz) */
} worker;

/* The store check behind /readyz: a thread asks the deployment's store
 * once a second (a count on a fixed tenant), so a probe reads a flag and
 * any number of probes costs the store nothing. Its own refs: a check
 * stuck past the stop is left to end by itself, never waited for. */
typedef struct bwh_checker {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int stop, refs; /* refs: the listener's and the thread's */
  _Atomic int ok; /* the last check answered (1), did not (0), none yet (-1) */
  struct bw_state *store;
  pthread_t th;
} bwh_checker;

/* Wakes a lock holder owes (httppark.c, bwh_defer_begin): workers' condition
 * variables to signal and parked connections to resume once it has given
 * the lock back, so the thread woken does not run into the lock its waker
 * still holds (on two cores it then sleeps again at once, and the waker
 * must wake it a second time: two wakes a hop instead of one). */
enum { BWH_DEFERRED = 8 };
typedef struct bwh_wakes {
  int nw, nc;
  int w[BWH_DEFERRED];
  struct MHD_Connection *c[BWH_DEFERRED];
} bwh_wakes;

struct bw_http {
  bw_http_opts o;
  struct MHD_Daemon *d;
  pthread_mutex_t mu;
  pthread_cond_t ev; /* any stream got an event, ended, or a session closed */
  pthread_cond_t reap_cv;
  pthread_t reaper;
  pthread_t poller; /* polls the sessions' watch fds (bwh_poller) */
  int poll_wake;    /* an eventfd that makes it look again */
  int stopped;
  session *sessions;
  int nsessions;
  worker *w;
  int *tok_calls, *tok_sessions;
  int *ten_calls, *ten_sessions; /* by tenant index, o.n_tenants of them */
  int open_calls; /* without tokens */
  int unauth;     /* open connections not yet past the checks (on_connection) */
  int conns;      /* open connections (on_connection): http.max_connections */
  FILE *log;      /* the access log (NULL: off) */
  struct bwh_logq *logq; /* its queue and writer thread (httplog.c) */
  /* the scheduler: per tenant slot (o.n_tenants + 1: the last one for a
   * tenant without limits of its own), the runnable sessions in order and
   * the calls running; rr: the slot served next */
  session **run_head, **run_tail;
  int *ten_running;
  size_t *ten_kept; /* bytes of the events every session of the tenant keeps */
  size_t *ten_queued; /* body bytes of the tenant's sessions waiting for the workers */
  int *ten_listens;  /* open subscriptions/listen streams, per tenant slot */
  int *ten_streams;  /* open long streams (GET streams and listens), per tenant slot */
  int rr;
  size_t queued;  /* body bytes of every session's items not yet handled */
  int workers_up; /* workers whose loop has asked for work (worker.up) */
  _Atomic int ready;    /* the caller's start-up checks passed (bw_http_ready) */
  _Atomic int draining; /* SIGTERM: /readyz 503, new requests 503 (bw_http_shutdown) */
  double stop_by;       /* monotonic s: bw_http_stop's waits end then (0: a second) */
  bwh_checker *checker; /* NULL: no store to ask */
  struct bwh_evlog *evlog; /* NULL: no shared store, streams are this instance's alone */
  bwh_wakes *defer; /* the lock holder's wakes held for after its unlock (NULL: wake now) */
  _Atomic int resuming; /* connections unparked under the lock, not yet resumed (bw_http_stop waits) */
  long stream_base; /* a session's first POST stream id (0: 1); with the log, a random base
                     * per process so no two instances make the same ids (httpevlog.c) */
};

double bwh_now(void);
void bwh_deadline(struct timespec *ts, double secs);
/* with h->mu held: */
stream *bwh_stream_find(session *s, long id);
stream *bwh_stream_new(bw_http *h, session *s, long id);
int bwh_stream_push(bw_http *h, stream *t, const char *text, size_t n);
/* The event numbered seq (0: the next one) in its place, unless t has it. */
int bwh_stream_put(bw_http *h, stream *t, long seq, const char *text, size_t n);
void bwh_stream_release(bw_http *h, stream *t);
void bwh_session_unref(bw_http *h, session *s);
session *bwh_session_find(bw_http *h, const char *id);
/* A new session of the token's tenant, in the list: a stateless one (one
 * request of MCP 2026-07-28) counts against no session limit. NULL: no
 * memory or no randomness. */
session *bwh_session_new(bw_http *h, int token, const bw_oauth_who *who, const char *addr,
                         int stateless);
/* Whether a request of token (and OAuth principal who) may use s. */
int bwh_session_owned(const session *s, int token, const bw_oauth_who *who);
/* httpsched.c, the scheduler (lock held). Queue it on its session: the
 * worker holding the session is woken, or the session becomes runnable. */
void bwh_queue_item(bw_http *h, session *s, bw_http_item *it);
/* The tenant slot of tenant index t; its cap on calls running at once. */
int bwh_tenant(const bw_http *h, int t);
int bwh_running_cap(const bw_http *h, int slot);
/* A session with items and no worker joins its tenant's run queue. */
void bwh_sched_runnable(bw_http *h, session *s);
/* Worker w lets go of the session it holds (the scheduler's half). */
void bwh_sched_let_go(bw_http *h, int w, int home);
/* Worker w waits (until ts; NULL: no deadline) for a session it may run
 * and takes its first item (NULL: none, or stopped). */
bw_http_item *bwh_sched_next(bw_http *h, int w, const struct timespec *ts);
void bwh_session_close(bw_http *h, session *s, const char *why);
/* A stateless session's end: unlinked, freed once nothing holds it. */
void bwh_session_end(bw_http *h, session *s);
/* The access log (h->log, if any): one line, a UTC time before it,
 * queued for httplog.c's writer thread (any lock may be held). */
void bwh_log(bw_http *h, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
typedef struct bwh_logq bwh_logq;
int bwh_log_start(bw_http *h); /* the writer thread; -1: cannot (lines are then written in place) */
void bwh_log_stop(bw_http *h); /* what is queued is written; later lines are written in place */
int bwh_log_free(bw_http *h); /* 1: its thread is stuck writing and keeps the log (leave it open) */
const char *bwh_tenant_name(const bw_http *h, int t);
/* A Host header's name without its port (a bracketed IPv6 literal keeps
 * its brackets), cut to n - 1 bytes. */
void bwh_host_name(const char *v, char *out, size_t n);
void bwh_note_cancel(bw_http *h, session *s, const json_t *id);
/* the reaper thread (arg: the bw_http) */
void *bwh_reaper(void *arg);
/* the watch poller thread (arg: the bw_http); wake it with bwh_poll_wake */
void *bwh_poller(void *arg);
void bwh_poll_wake(bw_http *h);

/* httpshare.c: sessions in the deployment's store (opts.store), so any
 * instance serves any of them. Both are called without the lock. */
int bwh_shared(const bw_http *h);
/* Every request naming session sid (not an initialize): when the store
 * holds it for this token, 0 and its record's version in *version (a
 * session here from now on, if it was not); 404 when the store does not
 * hold it (or not for this token: a session here ends too), 503 when the
 * store does not answer. 0 and version 0 when sessions are not shared. */
int bwh_share_check(bw_http *h, int token, const bw_oauth_who *who, const char *addr,
                    const char *sid, uint64_t *version);
/* A DELETE: the store's record goes (every instance then drops the session). */
void bwh_share_forget(bw_http *h, int token, const char *sid);
/* The token id a session record names (16 hex digits of the token's
 * sha256, an OAuth principal's; "-" without a token). */
void bwh_token_id(const bw_http *h, int token, const bw_oauth_who *who, char out[17]);

/* httptokens.c: a token's max_sessions across the instances of a shared
 * store (without the lock). An initialize reserves a new session id in
 * sid: 0, 429 when the token has its limit of live sessions on all the
 * instances together, 503 when the store does not answer. A DELETE
 * releases it. */
int bwh_tokens_reserve(bw_http *h, int token, const bw_oauth_who *who, int limit, char sid[33]);
void bwh_tokens_release(bw_http *h, int token, const bw_oauth_who *who, const char *sid);

/* httpevlog.c: the events of shared sessions' streams in the store, for
 * Last-Event-ID on any instance and the GET stream wherever it is held.
 * Nothing runs without a Redis/Valkey store (h->evlog NULL). */
struct bwh_evrec;
int bwh_evlog_start(bw_http *h); /* -1: cannot (no memory, no thread) */
void bwh_evlog_stop(bw_http *h);
/* Whether s's streams are logged (where its stream ids start:
 * h->stream_base, set by bwh_evlog_start). */
int bwh_evlog_on(const bw_http *h, const session *s);
/* Without the lock: log an event (data NULL: none) of stream_id, numbered
 * seq (0: the log numbers it), and/or its end; publish it. The number
 * logged (0: none, too big to keep), -1: the store did not answer. */
long bwh_evlog_append(bw_http *h, int tenant, const char *sid, long stream_id, long seq,
                      const char *data, size_t n, int done);
/* DELETE: the session's log goes. */
void bwh_evlog_forget(bw_http *h, int tenant, const char *sid);
/* A GET (last: its Last-Event-ID or NULL), without the lock: the log in
 * *out when the stream it reads is kept in the store; 503 when that stream
 * is nowhere here and the store does not answer. */
int bwh_evlog_fetch(bw_http *h, int token, const bw_oauth_who *who, const char *sid, const char *last,
                    struct bwh_evrec **out);
/* Lock held: the fetched log merged into stream id of s (made here, a
 * mirror, when only the log has it); pos: the client's last event (-1:
 * none). */
void bwh_evlog_fill(bw_http *h, session *s, struct bwh_evrec *r, long id, long pos);
/* Without the lock: r freed, the session read again by the follower. */
void bwh_evlog_done(bw_http *h, const char *sid, struct bwh_evrec *r);
/* A Last-Event-ID "N-k": 0 and both numbers, -1 for anything else. */
int bwh_event_id(const char *v, long *stream_id, long *seq);

/* httpsse.c: answer c with stream t of session s from event pos on, as SSE
 * (json: only the final message, as application/json); fresh > 0 names the
 * new session in Mcp-Session-Id, fresh < 0 keeps a resumed stream open
 * after its end; counted: the reader holds one of its tenant's streams
 * (h->ten_streams), given back when it goes (lock held). */
struct MHD_Connection;
enum MHD_Result bwh_stream_answer(bw_http *h, struct MHD_Connection *c, session *s,
                                  stream *t, long pos, int json, int fresh, int counted);
/* httppark.c: suspend c (from its handler or content reader callback)
 * until t moves or due (monotonic s) comes; lock held. */
void bwh_park_on(bw_http *h, bwh_park *p, stream *t, struct MHD_Connection *c, double due);
/* Off its stream's list without a resume (its connection is gone). */
void bwh_unpark(bwh_park *p);
/* Resume the connections parked on t / on every stream of s / on every
 * stream (lock held). */
void bwh_wake(bw_http *h, stream *t);
void bwh_wake_session(bw_http *h, session *s);
void bwh_wake_all(bw_http *h);
/* Resume the parked connections whose due time has come (lock held): a
 * reader then probes its client, a stateless POST answers as it stands. */
void bwh_probe(bw_http *h);
/* Wakes held until the lock is given back (lock held): from begin to end
 * the lock must be kept throughout (a wait that lets go of it calls
 * bwh_defer_flush_locked first); after the unlock, bwh_defer_run does
 * them. A wake past BWH_DEFERRED is done at once, as without. */
void bwh_defer_begin(bw_http *h, bwh_wakes *wk);
void bwh_defer_end(bw_http *h);
void bwh_defer_run(bw_http *h, bwh_wakes *wk); /* without the lock */
/* Lock held, about to be let go of (a wait): what is held, done now. */
void bwh_defer_flush_locked(bw_http *h);
/* Signal worker i's condition variable, or hold it (lock held). */
void bwh_signal_worker(bw_http *h, int i);

/* httpera.c: the era of a POST and the checks of MCP 2026-07-28 */
typedef struct bwh_verdict {
  int modern;       /* served statelessly (2026-07-28), without a session */
  unsigned status;  /* 0: go on; else the HTTP status of the refusal */
  int code;         /* its JSON-RPC error code */
  char msg[240];
  char requested[64]; /* -32022: the version asked for */
} bwh_verdict;
/* 1 and a refusal (400, -32020) in v when a POST repeats a header a proxy
 * routes on (MCP-Protocol-Version, Mcp-Method, Mcp-Name, Mcp-Param-*). */
int bwh_headers_once(struct MHD_Connection *c, bwh_verdict *v);
/* From the headers MCP-Protocol-Version, Mcp-Method, Mcp-Name (NULL when
 * absent) and the parsed body. */
void bwh_era(const char *version_h, const char *method_h, const char *name_h,
             const json_t *body, bwh_verdict *v);
int bwh_version_known(const char *v);
int bwh_version_stateless(const char *v);
json_t *bwh_versions(void); /* every revision served, newest first (new reference) */

/* httpanswer.c: the listener's answers (below http.c and httppost.c) */
struct MHD_Connection;
/* The request this thread answers (set by the handler): the access log's
 * tenant of a refusal. */
extern _Thread_local const conn *bwh_current;
/* A whole response: body copied, one header besides Content-Type. */
enum MHD_Result bwh_reply(struct MHD_Connection *c, unsigned status, const char *ctype,
                          const char *body, const char *hname, const char *hval);
/* A JSON-RPC error answered by the transport: the request's id when it
 * has a usable one (else null), data when given (stolen); logged. */
enum MHD_Result bwh_refuse_rpc(bw_http *h, struct MHD_Connection *c, unsigned status,
                               const json_t *id, int code, const char *msg, json_t *data,
                               const char *hname, const char *hval);
enum MHD_Result bwh_refuse(bw_http *h, struct MHD_Connection *c, unsigned status, int code,
                           const char *msg, const char *hname, const char *hval);
void bwh_client_address(struct MHD_Connection *c, char out[46]); /* INET6_ADDRSTRLEN */
int bwh_accepts(struct MHD_Connection *c, const char *type);
/* 503: the deployment's store did not answer a question about a session. */
enum MHD_Result bwh_store_down(bw_http *h, struct MHD_Connection *c);

/* httppost.c: a POST's body, complete: checked, admitted, answered here
 * (ping, a cancel) or queued for its session's worker; a parked one
 * resumed. And the tenant's cap on long streams (listens: on those alone),
 * which a GET's admission checks too. */
enum MHD_Result bwh_post(bw_http *h, struct MHD_Connection *c, conn *k);
enum MHD_Result bwh_post_resume(bw_http *h, struct MHD_Connection *c, conn *k);
int bwh_stream_cap(const bw_http *h, int slot, int listens);

/* http.c: libmicrohttpd's callbacks, which httpstart.c hands the daemon */
enum MHD_Result bwh_handler(void *cls, struct MHD_Connection *c, const char *url,
                            const char *method, const char *version, const char *upload,
                            size_t *upload_size, void **con_cls);
void bwh_completed(void *cls, struct MHD_Connection *c, void **con_cls,
                   enum MHD_RequestTerminationCode toe);
void bwh_on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                       enum MHD_ConnectionNotificationCode code);
enum MHD_Result bwh_accept_new(void *cls, const struct sockaddr *addr, socklen_t addrlen);

#endif
