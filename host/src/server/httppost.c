/*
 * httppost.c - a POST to /mcp once its body is in (http.c has checked
 * Host, Origin, the token, the size): the JSON-RPC message parsed and its
 * era's checks (httpera.c), admission (the store's word on a shared
 * session, a token's sessions on every instance, the per-token, per-tenant
 * and per-address limits, the queued bytes), then answered here (ping,
 * notifications/cancelled) or queued for its session's worker (httpsess.c)
 * and its answer streamed (httpsse.c); a stateless request's answer waited
 * for, parked, up to a second for an early error's status.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "httpint.h"
#include "mhd.h"
#include "oauth.h"

#define refuse(...) bwh_refuse(h, __VA_ARGS__)

/* ---------------------------------------------------------- limits */

static int token_limit(bw_http *h, int tok, int which) {
  const bw_http_token *t = tok >= 0 ? &h->o.tokens[tok] : NULL;
  if (which == 0) return t && t->max_calls ? t->max_calls : h->o.max_calls;
  return t && t->max_sessions ? t->max_sessions : h->o.max_sessions;
}

/* The tenant's own limit (0: none), and whether it is reached. */
/* The body bytes a tenant's sessions may have waiting for the workers. */
static size_t tenant_queued_cap(const bw_http *h, int slot) {
  if (slot < h->o.n_tenants && h->o.tenants && h->o.tenants[slot].max_queued)
    return h->o.tenants[slot].max_queued;
  return h->o.max_tenant_queued ? h->o.max_tenant_queued : h->o.max_queued;
}

static int tenant_full(bw_http *h, int tenant, int which) {
  if (tenant < 0 || tenant >= h->o.n_tenants || !h->o.tenants) return 0;
  const bw_http_tenant *t = &h->o.tenants[tenant];
  int lim = which == 0 ? t->max_calls : t->max_sessions;
  int have = which == 0 ? h->ten_calls[tenant] : h->ten_sessions[tenant];
  return lim > 0 && have >= lim;
}

/* A tenant slot's cap on long streams open (GET streams and listens), or
 * on listens alone. */
int bwh_stream_cap(const bw_http *h, int slot, int listens) {
  if (slot < h->o.n_tenants && h->o.tenants) {
    int v = listens ? h->o.tenants[slot].max_listens : h->o.tenants[slot].max_streams;
    if (v > 0) return v;
  }
  return listens ? h->o.max_listens : h->o.max_streams;
}

/* MCP 2026-07-28 gives some errors an HTTP status of their own: a
 * request that needs a client capability the client did not declare
 * (-32021), or whose Mcp-Param-* headers differ from its arguments (-32020,
 * found by the worker, which knows the tool), is 400. Such an answer comes at once (before the call does
 * anything), so a stateless request's response waits (parked, post_enqueue) up
 * to a second for its call to end before its head is sent: ended with
 * such an error, the answer is that status and body; anything else (a
 * notification first, a result, a call still running) goes out as before.
 * early_ready: the wait is over; early_error: 1 and *rc when it answered
 * (lock held). */
static int early_ready(const bw_http *h, const session *s, const stream *t) {
  return t->done || (t->head && !t->answered) || s->closed || h->stopped;
}

static int early_error(bw_http *h, struct MHD_Connection *c, stream *t, enum MHD_Result *rc) {
  (void)h;
  if (!t->done || !t->tail) return 0;
  /* most answers are results: without the bytes "error" anywhere (a JSON
   * string holds a quote escaped) the text has no error member, and is
   * not parsed here on the listener's thread (a whole read_file answer
   * was, at every stateless call) */
  if (!memmem(t->tail->data, t->tail->len, "\"error\"", 7)) return 0;
  json_t *m = json_loadb(t->tail->data, t->tail->len, 0, NULL);
  json_int_t code = json_integer_value(json_object_get(json_object_get(m, "error"), "code"));
  json_decref(m);
  char *body = code == -32021 || code == -32020 ? strndup(t->tail->data, t->tail->len) : NULL;
  if (!body) return 0;
  *rc = bwh_reply(c, MHD_HTTP_BAD_REQUEST, "application/json", body, NULL, NULL);
  free(body);
  return 1;
}

/* A stateless request's Mcp-Param-* headers (SEP-2243: a tool's arguments
 * marked x-mcp-header, repeated where a proxy can see them), by their
 * lower-case name after the prefix; the worker checks them against the
 * arguments. A value that is not UTF-8 is null (it matches nothing). */
static enum MHD_Result param_header(void *cls, enum MHD_ValueKind kind, const char *key,
                                    const char *value) {
  (void)kind;
  json_t *o = cls;
  if (!key || strncasecmp(key, "Mcp-Param-", 10) || json_object_size(o) >= 64) return MHD_YES;
  char name[128];
  size_t n = 0;
  for (const char *p = key + 10; *p && n < sizeof name - 1; p++) name[n++] = (char)tolower((unsigned char)*p);
  name[n] = '\0';
  json_t *v = value ? json_string(value) : NULL;
  json_object_set_new(o, name, v ? v : json_null());
  return MHD_YES;
}

static enum MHD_Result answer_post(bw_http *h, struct MHD_Connection *c, conn *k);

/* A session made for a POST that is refused after all (lock held). */
static void drop_new(bw_http *h, session *s) {
  if (s->stateless) bwh_session_end(h, s);
  else if (s->listen && !s->inflight) bwh_session_close(h, s, "refused");
}

/* A POST on its way through its steps: what each finds out for the next. */
typedef struct post {
  json_t *m;         /* the parsed body */
  const json_t *one; /* m when it is one message (not a batch) */
  bwh_verdict v;     /* the era it speaks; 2026-07-28's header checks */
  int request, init, ping, listen;
  const char *sidh;  /* its Mcp-Session-Id (NULL: none) */
  uint64_t shared_version; /* the session's record in the store (httpshare.c) */
  char reserved[33]; /* an initialize's id reserved in the store (httptokens.c) */
  session *s;
} post;

/* Each step below answers the POST when it refuses (or answers it here):
 * 1 and *rc then, 0 to go on. The steps under the listener's lock give it
 * back when they answer. */

/* Step 1, parse and validate: the body as JSON, its era's checks
 * (httpera.c), what kind of message it is; refused while draining (a
 * request), for a read-only scope, a listen that cannot take a stream; a
 * 2026-07-28 notification accepted and dropped. */
static int post_parse(bw_http *h, struct MHD_Connection *c, conn *k, post *p, enum MHD_Result *rc) {
  json_error_t jerr;
  json_t *m = p->m = json_loadb(k->body ? k->body : "", k->len, 0, &jerr);
  if (!m) {
    *rc = refuse(c, MHD_HTTP_BAD_REQUEST, -32700, "Parse error: the body is not JSON", NULL, NULL);
    return 1;
  }
  const json_t *one = p->one = json_is_array(m) ? NULL : m;
  bwh_verdict *v = &p->v;
  if (!bwh_headers_once(c, v)) /* a routed header repeated: refused first */
    bwh_era(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version"),
          MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Method"),
          MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Name"), m, v);
  if (v->status) {
    json_t *data = v->code == -32022 ? json_pack("{s:o,s:s}", "supported", bwh_versions(),
                                                 "requested", v->requested)
                                     : NULL;
    *rc = bwh_refuse_rpc(h, c, v->status, one ? json_object_get(one, "id") : NULL,
                         v->code, v->msg, data, NULL, NULL);
    goto answered;
  }
  if (json_is_array(m)) {
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) if (json_object_get(x, "method") &&
                                    json_object_get(x, "id")) p->request = 1;
  } else if (json_is_object(m)) {
    const char *method = json_string_value(json_object_get(m, "method"));
    p->request = method && json_object_get(m, "id");
    p->init = p->request && !v->modern && !strcmp(method, "initialize");
    p->listen = p->request && v->modern && !strcmp(method, "subscriptions/listen");
    p->ping = p->request && !v->modern && !strcmp(method, "ping") &&
              (json_is_string(json_object_get(m, "id")) ||
               json_is_integer(json_object_get(m, "id")));
  }
  if (p->request && atomic_load(&h->draining)) { /* shutting down: answers and notifications still come in */
    *rc = bwh_refuse_rpc(h, c, MHD_HTTP_SERVICE_UNAVAILABLE, one ? json_object_get(one, "id") : NULL,
                         -32000, "Service Unavailable: the server is shutting down", NULL,
                         "Retry-After", "1");
    goto answered;
  }
  bw_oauth_deny deny; /* a read-only token's write call */
  if (bw_oauth_scope_refused(h->o.oauth, &k->who, m, &deny)) {
    *rc = bwh_refuse_rpc(h, c, deny.status, one ? json_object_get(one, "id") : NULL, -32000,
                         deny.msg, NULL, deny.hname, deny.hval);
    goto answered;
  }
  if (v->modern && !p->request) { /* 2026-07-28 has no notifications to act on */
    json_decref(m);
    p->m = NULL;
    *rc = bwh_reply(c, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
    return 1;
  }
  if (p->listen && !bwh_accepts(c, "text/event-stream")) {
    *rc = bwh_refuse_rpc(h, c, MHD_HTTP_NOT_ACCEPTABLE, json_object_get(one, "id"), -32600,
                         "Not Acceptable: subscriptions/listen answers with a stream; "
                         "send Accept: text/event-stream", NULL, NULL, NULL);
    goto answered;
  }
  p->sidh = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
  return 0;
answered:
  json_decref(m);
  p->m = NULL;
  return 1;
}

/* Step 2, the deployment's store, outside the lock: a session this
 * instance has not seen (httpshare.c), and an initialize's place in its
 * token's max_sessions on every instance together (httptokens.c). */
static int post_store(bw_http *h, struct MHD_Connection *c, conn *k, post *p, enum MHD_Result *rc) {
  if (!p->init && !p->listen && !p->v.modern && p->sidh) {
    char addr[INET6_ADDRSTRLEN];
    bwh_client_address(c, addr);
    int why = bwh_share_check(h, k->token, &k->who, addr, p->sidh, &p->shared_version);
    if (why) {
      json_decref(p->m);
      p->m = NULL;
      *rc = why == 503 ? bwh_store_down(h, c)
                       : refuse(c, MHD_HTTP_NOT_FOUND, -32001, "Session not found", NULL, NULL);
      return 1;
    }
  }
  if (p->init && !p->listen && bwh_shared(h) && k->token >= 0 && token_limit(h, k->token, 1) > 0) {
    int why = bwh_tokens_reserve(h, k->token, &k->who, token_limit(h, k->token, 1), p->reserved);
    if (why) {
      json_decref(p->m);
      p->m = NULL;
      *rc = why == 503 ? refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, -32000,
                                "Service Unavailable: STORE_UNAVAILABLE: the shared state store (Redis/Valkey), "
                                "which counts this token's sessions, does not answer; retry",
                                "Retry-After", "1")
                       : refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                                "Too Many Requests: this token has its most sessions open "
                                "(on all the deployment's instances together)",
                                "Retry-After", "5");
      return 1;
    }
  }
  return 0;
}

/* A step under the lock that answers: the lock given back, the body freed. */
static int give_back(bw_http *h, post *p) {
  pthread_mutex_unlock(&h->mu);
  json_decref(p->m);
  p->m = NULL;
  return 1;
}

/* Step 3a, admission of a new session (an initialize, or a listen, which
 * is one held by its stream): the tenant's caps on listens and long
 * streams, the token's, tenant's and address's sessions; made (lock
 * held). */
static int post_new_session(bw_http *h, struct MHD_Connection *c, conn *k, post *p,
                            enum MHD_Result *rc) {
  int lim = token_limit(h, k->token, 1);
  int have = k->token >= 0 ? h->tok_sessions[k->token] : h->nsessions;
  int tenant = k->token >= 0 ? h->o.tokens[k->token].tenant : 0;
  char addr[INET6_ADDRSTRLEN];
  bwh_client_address(c, addr);
  int from = 0; /* live sessions made from this address */
  if (h->o.max_sessions_per_address > 0)
    for (session *x = h->sessions; x; x = x->next) from += !strcmp(x->addr, addr);
  int by_addr = h->o.max_sessions_per_address > 0 && from >= h->o.max_sessions_per_address;
  int slot = bwh_tenant(h, tenant);
  const char *capped = !p->listen ? NULL
      : h->ten_listens[slot] >= bwh_stream_cap(h, slot, 1)
          ? "Too Many Requests: this tenant has its most listens open "
            "(http.max_listens, http.tenants.NAME.max_listens)"
      : h->ten_streams[slot] >= bwh_stream_cap(h, slot, 0)
          ? "Too Many Requests: this tenant has its most streams open "
            "(http.max_streams, http.tenants.NAME.max_streams)"
          : NULL;
  if (capped) { /* a listen's own caps first: they are what it hits */
    give_back(h, p);
    *rc = refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000, capped, "Retry-After", "5");
    return 1;
  }
  if ((lim > 0 && have >= lim) || tenant_full(h, tenant, 1) || by_addr) {
    int tok = lim > 0 && have >= lim;
    give_back(h, p);
    *rc = refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                 tok ? "Too Many Requests: this token has its most sessions open"
                 : by_addr ? "Too Many Requests: this client address has its share of the sessions open "
                             "(http.max_sessions_per_address)"
                     : "Too Many Requests: this tenant has its most sessions open "
                       "(http.tenants.NAME.max_sessions)",
                 "Retry-After", "5");
    return 1;
  }
  session *s = bwh_session_new(h, k->token, &k->who, addr, 0);
  if (s && p->reserved[0]) snprintf(s->id, sizeof s->id, "%s", p->reserved); /* the id the store counts */
  if (s && p->listen) { /* its id: the response shutdown sends names it */
    s->listen = json_dumps(json_object_get(p->one, "id"), JSON_ENCODE_ANY | JSON_COMPACT);
    if (!s->listen) {
      bwh_session_close(h, s, "no memory");
      s = NULL;
    } else { /* given back when it closes (bwh_session_close) */
      s->counted = 1;
      h->ten_listens[slot]++;
      h->ten_streams[slot]++;
    }
  }
  if (!s) {
    give_back(h, p);
    *rc = refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, -32603, "no memory", NULL, NULL);
    return 1;
  }
  bwh_log(h, "%s %.8s opened addr=%s tenant=%s", p->listen ? "listen" : "session", s->id, addr,
          bwh_tenant_name(h, s->tenant));
  p->s = s;
  return 0;
}

/* Step 3, the session (lock held): the bytes waiting for the workers in
 * all (checked before an initialize makes a session); then a new session,
 * a stateless request's own (which ends with it), or the one its
 * Mcp-Session-Id names, owned by its token. */
static int post_session(bw_http *h, struct MHD_Connection *c, conn *k, post *p, enum MHD_Result *rc) {
  if (h->queued + k->len > h->o.max_queued) {
    give_back(h, p);
    *rc = refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                 "Too Many Requests: the messages waiting for the workers reach http.max_queued",
                 "Retry-After", "1");
    return 1;
  }
  if (p->init || p->listen) {
    if (post_new_session(h, c, k, p, rc)) return 1;
  } else if (p->v.modern) { /* one request: a session of its own that ends with it */
    char addr[INET6_ADDRSTRLEN];
    bwh_client_address(c, addr);
    p->s = bwh_session_new(h, k->token, &k->who, addr, 1);
    if (!p->s) {
      give_back(h, p);
      *rc = refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, -32603, "no memory", NULL, NULL);
      return 1;
    }
    /* the method is one of httpera.c's list by now: nothing else reaches the line */
    bwh_log(h, "stateless %s addr=%s tenant=%s", json_string_value(json_object_get(p->one, "method")),
            addr, bwh_tenant_name(h, p->s->tenant));
  } else {
    session *s = p->s = bwh_session_find(h, p->sidh);
    unsigned status = !p->sidh ? MHD_HTTP_BAD_REQUEST
                      : !s || !bwh_session_owned(s, k->token, &k->who) ? MHD_HTTP_NOT_FOUND
                                                                       : 0;
    if (status) {
      give_back(h, p);
      *rc = status == MHD_HTTP_BAD_REQUEST
                ? refuse(c, status, -32000, "Bad Request: Mcp-Session-Id header is required",
                         NULL, NULL)
                : refuse(c, status, -32001, "Session not found", NULL, NULL);
      return 1;
    }
  }
  p->s->last = bwh_now();
  return 0;
}

/* Step 4, what is answered here whatever the worker is doing (lock held):
 * a ping, a notifications/cancelled. The body is done with after it. */
static int post_here(bw_http *h, struct MHD_Connection *c, post *p, enum MHD_Result *rc) {
  if (p->ping) {
    pthread_mutex_unlock(&h->mu);
    size_t n;
    char *b = bw_rpc_pong(json_object_get(p->m, "id"), &n); /* any length of id */
    json_decref(p->m);
    p->m = NULL;
    if (!b) {
      *rc = refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, -32603, "no memory", NULL, NULL);
      return 1;
    }
    *rc = bwh_reply(c, MHD_HTTP_OK, "application/json", b, NULL, NULL);
    free(b);
    return 1;
  }
  if (p->one && !p->request) {
    const char *method = json_string_value(json_object_get(p->one, "method"));
    if (method && !strcmp(method, "notifications/cancelled")) {
      bwh_note_cancel(h, p->s, json_object_get(json_object_get(p->one, "params"), "requestId"));
      give_back(h, p);
      *rc = bwh_reply(c, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
      return 1;
    }
  }
  json_decref(p->m);
  p->m = NULL;
  p->one = NULL;
  return 0;
}

/* Step 5, admission of the message (lock held): the session's waiting
 * bodies, then its tenant's, all its sessions together (one tenant cannot
 * fill the queue every tenant shares); a request's call under its token's
 * and tenant's limits (a listen counts as a session, not a call). */
static int post_admit(bw_http *h, struct MHD_Connection *c, conn *k, post *p, enum MHD_Result *rc) {
  session *s = p->s;
  int slot = bwh_tenant(h, s->tenant);
  const char *full = s->queued + k->len > h->o.max_session_queued
                         ? "Too Many Requests: this session's messages waiting for its worker reach "
                           "http.max_session_queued"
                     : h->ten_queued[slot] + k->len > tenant_queued_cap(h, slot)
                         ? "Too Many Requests: this tenant's messages waiting for the workers reach "
                           "http.max_tenant_queued (http.tenants.NAME.max_queued)"
                         : NULL;
  if (full) {
    drop_new(h, s);
    pthread_mutex_unlock(&h->mu);
    *rc = refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000, full, "Retry-After", "1");
    return 1;
  }
  if (p->request && !p->listen) {
    int lim = token_limit(h, k->token, 0);
    int calls = k->token >= 0 ? h->tok_calls[k->token] : h->open_calls;
    if ((lim > 0 && calls >= lim) || tenant_full(h, s->tenant, 0)) {
      int tok = lim > 0 && calls >= lim;
      drop_new(h, s);
      pthread_mutex_unlock(&h->mu);
      *rc = refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                   tok ? "Too Many Requests: this token has its most calls running"
                       : "Too Many Requests: this tenant has its most calls running "
                         "(http.tenants.NAME.max_calls)",
                   "Retry-After", "1");
      return 1;
    }
  }
  return 0;
}

/* Step 6, enqueue and answer (lock held, given back): the message queued
 * for its session's worker, a request with a stream of its own (a listen's
 * is its session's stream 0, where the session's watches send) holding one
 * call; a notification answered 202, a request's answer streamed, or a
 * stateless one's parked until its first word. */
static enum MHD_Result post_enqueue(bw_http *h, struct MHD_Connection *c, conn *k, post *p) {
  session *s = p->s;
  int request = p->request, listen = p->listen;
  bw_http_item *it = calloc(1, sizeof *it);
  stream *t = request ? bwh_stream_new(h, s, listen ? 0 : s->next_stream++) : NULL;
  if (!it || (request && !t)) {
    free(it);
    drop_new(h, s);
    pthread_mutex_unlock(&h->mu);
    return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, -32603, "no memory", NULL, NULL);
  }
  if (t && !listen) { /* one call in flight until the worker has answered it */
    t->calls = 1;
    t->token = k->token;
    t->tenant = s->tenant;
    if (k->token >= 0) h->tok_calls[k->token]++;
    else h->open_calls++;
    if (s->tenant < h->o.n_tenants) h->ten_calls[s->tenant]++;
  }
  it->kind = BW_HTTP_MSG;
  it->shared_version = p->shared_version;
  if (s->stateless) {
    json_t *ph = json_object();
    if (ph) MHD_get_connection_values(c, MHD_HEADER_KIND, param_header, ph);
    it->params = ph && json_object_size(ph) ? json_dumps(ph, JSON_COMPACT) : NULL;
    json_decref(ph);
  }
  snprintf(it->sid, sizeof it->sid, "%s", s->id);
  it->tenant = s->tenant;
  it->stream = t ? t->id : -1;
  it->body = k->body;
  it->len = k->len;
  k->body = NULL;
  s->queued += it->len;
  h->queued += it->len;
  h->ten_queued[bwh_tenant(h, s->tenant)] += it->len;
  s->inflight++;
  s->refs++;
  it->session = s;
  bwh_wakes wk; /* the worker woken once the lock is given back */
  bwh_defer_begin(h, &wk);
  bwh_queue_item(h, s, it);
  bwh_defer_end(h);
  if (!request) {
    pthread_mutex_unlock(&h->mu);
    bwh_defer_run(h, &wk);
    return bwh_reply(c, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
  }
  /* held meanwhile: a stateless session may end (and go), and its
   * finished stream be dropped for the tenant's kept bytes, while its
   * answer is waited for */
  s->refs++;
  t->readers++;
  k->ws = s;
  k->wt = t;
  k->listen = listen;
  k->init = p->init;
  if (s->stateless && !early_ready(h, s, t)) { /* parked: the handler is called again */
    k->until = bwh_now() + 1.0;
    k->waiting = 1;
    bwh_park_on(h, &k->park, t, c, k->until);
    pthread_mutex_unlock(&h->mu);
    bwh_defer_run(h, &wk);
    return MHD_YES;
  }
  enum MHD_Result rc = answer_post(h, c, k);
  pthread_mutex_unlock(&h->mu);
  bwh_defer_run(h, &wk);
  return rc;
}

/* A POST's body, complete: checked, then answered here (ping, a cancel)
 * or queued for the session's worker. A subscriptions/listen makes a
 * session whose stream 0 is the POST's answer: its worker acknowledges
 * it and returns the session, whose watches' changes (the poller's WATCH
 * items) then land on that stream until the client closes it. */
enum MHD_Result bwh_post(bw_http *h, struct MHD_Connection *c, conn *k) {
  post p = {0};
  enum MHD_Result rc;
  if (post_parse(h, c, k, &p, &rc) || post_store(h, c, k, &p, &rc)) return rc;
  pthread_mutex_lock(&h->mu);
  if (post_session(h, c, k, &p, &rc) || post_here(h, c, &p, &rc) || post_admit(h, c, k, &p, &rc))
    return rc;
  return post_enqueue(h, c, k, &p);
}

/* A stateless request's JSON answer, complete by the end of its wait: its
 * final message as one response with its length (lock held; let go of
 * around libmicrohttpd's calls, as bwh_stream_answer does). What the
 * stream reader would send (a JSON answer is only the last message), in
 * one write of head and body instead of a head and two chunks, and with
 * no reader to make, park and free. -1: no memory (the reader answers). */
static int whole_answer(bw_http *h, struct MHD_Connection *c, const stream *t, enum MHD_Result *rc) {
  size_t n = t->tail->len;
  char *body = malloc(n ? n : 1);
  if (!body) return -1;
  memcpy(body, t->tail->data, n);
  pthread_mutex_unlock(&h->mu);
  struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
  if (!r) free(body);
  else {
    MHD_add_response_header(r, "Content-Type", "application/json");
    *rc = MHD_queue_response(c, MHD_HTTP_OK, r);
    MHD_destroy_response(r);
  }
  pthread_mutex_lock(&h->mu);
  if (!r) *rc = MHD_NO;
  return 0;
}

/* The answer of the POST k holds: a stateless request's early error (its
 * status is the answer's) or its whole JSON answer, else its stream (lock
 * held). */
static enum MHD_Result answer_post(bw_http *h, struct MHD_Connection *c, conn *k) {
  session *s = k->ws;
  stream *t = k->wt;
  enum MHD_Result rc;
  k->ws = NULL;
  k->wt = NULL;
  k->waiting = 0;
  t->readers--;
  int json = !k->listen && !bwh_accepts(c, "text/event-stream");
  if (!(s->stateless && early_error(h, c, t, &rc)) &&
      !(s->stateless && json && t->done && t->tail && whole_answer(h, c, t, &rc) == 0))
    rc = bwh_stream_answer(h, c, s, t, 0, json, k->init, 0);
  bwh_session_unref(h, s);
  return rc;
}

/* A parked POST resumed: its answer moved, its second is up, or the
 * listener stops; parked again if none of them. */
enum MHD_Result bwh_post_resume(bw_http *h, struct MHD_Connection *c, conn *k) {
  enum MHD_Result rc = MHD_YES;
  pthread_mutex_lock(&h->mu);
  if (!early_ready(h, k->ws, k->wt) && bwh_now() < k->until)
    bwh_park_on(h, &k->park, k->wt, c, k->until);
  else
    rc = answer_post(h, c, k);
  pthread_mutex_unlock(&h->mu);
  return rc;
}

