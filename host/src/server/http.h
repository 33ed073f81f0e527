/*
 * http.h - MCP Streamable HTTP transport (http.c): the listener, its
 * checks (Host, Origin, bearer tokens, limits), sessions and their SSE
 * streams. Plain C, no Lua: complete JSON-RPC bodies are handed to worker
 * queues, and what a worker sends comes back as whole messages.
 */
#ifndef BURROW_HTTP_H
#define BURROW_HTTP_H

#include <stdatomic.h>
#include <stddef.h>

typedef struct bw_http bw_http;
struct bw_state; /* core/state.h: the deployment's store, asked by /readyz */
struct bw_oauth; /* oauth.h: the OAuth resource server, when http.oauth is set */

/* A bearer token: the sha256 (64 hex) of its text, the tenant it opens,
 * and its limits (0: the listener's). */
typedef struct bw_http_token {
  char sha256[65];
  int tenant;
  int max_calls;    /* requests in flight at once */
  size_t max_body;  /* request body bytes */
  int max_sessions; /* live sessions */
} bw_http_token;

/* A tenant's limits (0: none of its own); per-token limits apply too, the
 * lower wins. */
typedef struct bw_http_tenant {
  int max_calls;    /* requests in flight at once, all its tokens' sessions */
  int max_sessions; /* live sessions */
  int max_running;  /* calls running on workers at once (0: the listener's) */
  size_t max_kept_bytes; /* bytes of answers kept for resumption (0: the listener's) */
  size_t max_queued; /* body bytes waiting for the workers, all its sessions (0: the listener's) */
  int max_streams;  /* long streams open (GET streams and listens) (0: the listener's) */
  int max_listens;  /* subscriptions/listen streams open (0: the listener's) */
} bw_http_tenant;

typedef struct bw_http_opts {
  const char *host; /* address to bind: 127.0.0.1 unless told */
  int port;         /* 0: any free port (bw_http_port says which) */
  int workers;      /* Lua worker threads; any of them takes any session */
  int max_running;  /* default per-tenant cap on calls running at once
                       (0: workers, less one when there are several tenants) */
  double session_ttl;  /* seconds idle before a session is reaped */
  size_t max_body;     /* default request body cap */
  int max_sessions;    /* default live sessions per token (or in all) */
  int max_sessions_per_address; /* live sessions made from one address (0: no share) */
  int max_calls;       /* default requests in flight per token */
  int replay;          /* events kept per SSE stream for Last-Event-ID */
  size_t events_budget; /* with a shared store: bytes of events a tenant's
                           streams' logs there may hold (0: no budget) */
  size_t max_kept_bytes; /* their bytes, per tenant, all its sessions (0: 64 MiB) */
  size_t max_queued;   /* body bytes waiting for the workers, in all */
  int max_streams;     /* default per-tenant cap on long streams open: GET
                          streams and listens (0: 2048) */
  int max_listens;     /* default per-tenant cap on subscriptions/listen
                          streams open (0: 1024) */
  int max_connections; /* open connections, in all */
  int max_connections_per_address; /* open connections from one client address */
  int max_unauthenticated; /* open connections that have not yet passed the
                              checks (token, Host, Origin): past it a new
                              connection is closed at once (0: 128) */
  int auth_timeout;        /* seconds such a connection may stay silent (0: 10) */
  size_t max_session_queued; /* body bytes waiting for one session's worker */
  size_t max_tenant_queued;  /* ... for one tenant's sessions together (0: max_queued) */
  int retry_ms;        /* the SSE retry hint */
  const char *const *allowed_hosts; /* Host names besides loopback's */
  int n_hosts;
  const char *const *allowed_origins; /* Origin values besides loopback's */
  int n_origins;
  const bw_http_token *tokens; /* none: no authentication (loopback only) */
  int n_tokens;
  const bw_http_tenant *tenants; /* by tenant index (0: the default); may be NULL */
  const char *const *tenant_names; /* by tenant index, for the access log; may be NULL */
  const char *access_log; /* NULL or "stderr", "off", or a file appended to */
  int n_tenants;
  struct bw_oauth *oauth; /* NULL, or the OAuth resource server (the caller's):
                             its principals' tokens are o.tokens' slots it names */
  struct bw_state *store; /* NULL, or the deployment's store (a reference the
                             listener takes): /readyz is 503 while it cannot
                             answer, asked once a second by a thread of its own */
} bw_http_opts;

/* WATCH: the session's file watches have changes to send (its watch fd
 * turned readable, or a held change is due): the worker pumps them. */
enum { BW_HTTP_MSG = 1, BW_HTTP_CLOSE = 2, BW_HTTP_WATCH = 3 };

/* One unit of work for a worker: a POST body of a session (stream is the
 * POST's SSE stream, or -1 for a body that needs no answer: notifications
 * and responses), or the end of a session (expired or deleted). version:
 * the session's state version when the worker took it (bw_http_record). */
typedef struct bw_http_item {
  struct bw_http_item *next;
  int kind;
  char sid[40];
  int tenant;
  long stream;
  size_t len;
  char *body;
  long version;
  struct session *session; /* held until the item is freed */
  char *params; /* a stateless request's Mcp-Param-* headers, a JSON object (NULL: none) */
  unsigned long long shared_version; /* its session's record in the deployment's store
                                        when it was admitted (0: none, or not shared) */
} bw_http_item;

/* 1: the item is the one request of MCP 2026-07-28 that its session is
 * made for (nothing of it is kept once it is answered); 2: its session is a
 * subscriptions/listen (kept until the client closes its stream); 0: a
 * session's. */
int bw_http_item_stateless(const bw_http_item *it);
/* The token its session was opened with, as the config names it (its
 * sha256, 64 hex digits), or NULL without authentication. */
const char *bw_http_item_token(const bw_http *h, const bw_http_item *it);
/* 1: its session's OAuth token has the read-only scope (http.oauth.scopes). */
int bw_http_item_read_only(const bw_http_item *it);

/* Start listening; NULL and a message in err on failure. */
bw_http *bw_http_start(const bw_http_opts *o, char *err, size_t errlen);
int bw_http_port(const bw_http *h);
/* Stop listening, end every stream, wake the workers (bw_http_next gives
 * NULL from then on). The object stays valid until bw_http_free. */
void bw_http_stop(bw_http *h);
void bw_http_free(bw_http *h);

/* The probes (/healthz, /readyz; no token, Host and Origin checked):
 * /readyz is 200 once the caller says its start-up checks passed
 * (bw_http_ready), 503 before, while draining, and while the store
 * (opts.store) does not answer. */
void bw_http_ready(bw_http *h);

/* What a graceful stop found at its end. */
typedef struct bw_http_cut {
  int calls;   /* requests still unanswered at the deadline (their calls cancelled) */
  int streams; /* long streams open then (GET streams and listens), ended */
} bw_http_cut;
/* SIGTERM: not ready at once, every new request 503 (Retry-After), the
 * calls in flight (queued or running) given until grace seconds from now
 * to answer, then bw_http_stop: the calls still running cancelled, the
 * streams ended after a last event or comment. Within grace plus a few
 * tens of ms, whatever the clients do. */
void bw_http_shutdown(bw_http *h, double grace, bw_http_cut *cut);

/* Worker side. The scheduler: each tenant has a queue of its runnable
 * sessions (a session with items that no worker holds); a free worker
 * serves the tenants in turn, skipping one with max_running calls running,
 * and takes the first item of the first session in that tenant's queue,
 * holding the session until bw_http_release: a session's items run one at
 * a time and in order, on any worker (on its home worker only while it has
 * one). The next item for worker w (NULL after timeout seconds, or once
 * stopped: bw_http_stopped tells which); a session w still holds is
 * released first, kept on w; done (NULL: none), the item w handled last,
 * is freed (bw_http_item_free). */
bw_http_item *bw_http_next(bw_http *h, int w, bw_http_item *done, double timeout);
/* The state of the session w holds, as the last release left it (NULL:
 * none yet), malloc'd; its length in *len. */
char *bw_http_record(bw_http *h, int w, size_t *len);
/* w is done with the session it holds: record (n bytes, copied; NULL:
 * keep none) is its state for the worker that takes it next, and its
 * version goes up by one; home: it stays on w (state that cannot travel).
 * watch_fd (-1: none): the fd of its file watches, which the listener
 * polls (a dup of it) and answers with a WATCH item when it turns
 * readable, or watch_in seconds from now (< 0: not) when a held change is
 * due. Its next item, if any, is runnable again. */
void bw_http_release(bw_http *h, int w, const char *record, size_t n, int home,
                     int watch_fd, double watch_in);
/* The next item of the session w holds (sid) that answers nothing itself
 * (a response to the server's request, a notification), or its close:
 * what a call waiting for the client's answer takes. The other items stay
 * queued, in order, and counted against the bounds. */
bw_http_item *bw_http_next_of(bw_http *h, int w, const char *sid, double timeout);
/* The session worker w holds is over elsewhere (the deployment's store no
 * longer has it, httpshare.c): it ends here too, its close queued. */
void bw_http_gone(bw_http *h, int w);
int bw_http_stopped(bw_http *h);
/* The item is handled: its session may expire again. */
void bw_http_item_free(bw_http *h, bw_http_item *it);
/* One message of session sid on stream (0: the session's GET stream);
 * final: the answer to the POST's request(s), which ends its call. */
int bw_http_send(bw_http *h, const char *sid, long stream, const char *text,
                 size_t n, int final);
/* The POST behind stream has all its answers: its stream ends. */
void bw_http_done(bw_http *h, const char *sid, long stream);
/* A request of the session w holds (sid) runs on w (id as compact JSON):
 * a cancel for it raises the worker's flag. 1 if it was cancelled while
 * queued. */
int bw_http_begin(bw_http *h, int w, const char *sid, const char *id);
void bw_http_finish(bw_http *h, int w);
const _Atomic int *bw_http_cancel_flag(bw_http *h, int w);
/* MCP tasks: w's call goes on as task (its answer sent) until
 * bw_http_finish. 0 when it may not: one worker always stays free for
 * requests, so no more than all but one run tasks at once. */
int bw_http_task_begin(bw_http *h, int w, const char *task);
/* The call running as task stops at its next check (its worker's flag):
 * 1 if a worker runs it. */
int bw_http_task_cancel(bw_http *h, const char *task);

/* sha256 hex of a token's text (the form the config stores). */
void bw_http_token_hash(const char *token, char out[65]);
/* 1 if host (a name or address literal) is a loopback one (loopback.c). */
int bw_http_loopback(const char *host);

#endif
