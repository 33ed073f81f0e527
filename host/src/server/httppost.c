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
 * anything), so a stateless request's response waits (parked, do_post) up
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

/* A POST's body, complete: checked, then answered here (ping, a cancel)
 * or queued for the session's worker. A subscriptions/listen makes a
 * session whose stream 0 is the POST's answer: its worker acknowledges
 * it and returns the session, whose watches' changes (the poller's WATCH
 * items) then land on that stream until the client closes it. */
enum MHD_Result bwh_post(bw_http *h, struct MHD_Connection *c, conn *k) {
  json_error_t jerr;
  json_t *m = json_loadb(k->body ? k->body : "", k->len, 0, &jerr);
  if (!m)
    return refuse(c, MHD_HTTP_BAD_REQUEST, -32700, "Parse error: the body is not JSON",
                  NULL, NULL);
  int request = 0, init = 0, ping = 0, listen = 0;
  const json_t *one = json_is_array(m) ? NULL : m;
  bwh_verdict v; /* the era it speaks; 2026-07-28's header checks */
  if (!bwh_headers_once(c, &v)) /* a routed header repeated: refused first */
    bwh_era(MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version"),
          MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Method"),
          MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Name"), m, &v);
  if (v.status) {
    json_t *data = v.code == -32022 ? json_pack("{s:o,s:s}", "supported", bwh_versions(),
                                                "requested", v.requested)
                                    : NULL;
    enum MHD_Result r = bwh_refuse_rpc(h, c, v.status, one ? json_object_get(one, "id") : NULL,
                                   v.code, v.msg, data, NULL, NULL);
    json_decref(m);
    return r;
  }
  if (json_is_array(m)) {
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) if (json_object_get(x, "method") &&
                                    json_object_get(x, "id")) request = 1;
  } else if (json_is_object(m)) {
    const char *method = json_string_value(json_object_get(m, "method"));
    request = method && json_object_get(m, "id");
    init = request && !v.modern && !strcmp(method, "initialize");
    listen = request && v.modern && !strcmp(method, "subscriptions/listen");
    ping = request && !v.modern && !strcmp(method, "ping") &&
           (json_is_string(json_object_get(m, "id")) ||
            json_is_integer(json_object_get(m, "id")));
  }
  if (request && atomic_load(&h->draining)) { /* shutting down: answers and notifications still come in */
    enum MHD_Result r = bwh_refuse_rpc(h, c, MHD_HTTP_SERVICE_UNAVAILABLE, one ? json_object_get(one, "id") : NULL,
                                   -32000, "Service Unavailable: the server is shutting down", NULL,
                                   "Retry-After", "1");
    json_decref(m);
    return r;
  }
  bw_oauth_deny deny; /* a read-only token's write call */
  if (bw_oauth_scope_refused(h->o.oauth, &k->who, m, &deny)) {
    enum MHD_Result r = bwh_refuse_rpc(h, c, deny.status, one ? json_object_get(one, "id") : NULL, -32000,
                                   deny.msg, NULL, deny.hname, deny.hval);
    json_decref(m);
    return r;
  }
  if (v.modern && !request) { /* 2026-07-28 has no notifications to act on */
    json_decref(m);
    return bwh_reply(c, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
  }
  if (listen && !bwh_accepts(c, "text/event-stream")) {
    enum MHD_Result r = bwh_refuse_rpc(h, c, MHD_HTTP_NOT_ACCEPTABLE, json_object_get(one, "id"), -32600,
                                   "Not Acceptable: subscriptions/listen answers with a stream; "
                                   "send Accept: text/event-stream", NULL, NULL, NULL);
    json_decref(m);
    return r;
  }
  const char *sidh =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
  uint64_t shared_version = 0; /* the session's record in the store (httpshare.c) */
  if (!init && !listen && !v.modern && sidh) {
    char addr[INET6_ADDRSTRLEN];
    bwh_client_address(c, addr);
    int why = bwh_share_check(h, k->token, &k->who, addr, sidh, &shared_version);
    if (why) {
      json_decref(m);
      return why == 503 ? bwh_store_down(h, c) : refuse(c, MHD_HTTP_NOT_FOUND, -32001, "Session not found", NULL, NULL);
    }
  }
  /* a token's max_sessions on every instance together: its new session's
   * id reserved in the store first (httptokens.c), outside the lock */
  char reserved[33] = "";
  if (init && !listen && bwh_shared(h) && k->token >= 0 && token_limit(h, k->token, 1) > 0) {
    int why = bwh_tokens_reserve(h, k->token, &k->who, token_limit(h, k->token, 1), reserved);
    if (why) {
      json_decref(m);
      return why == 503 ? refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, -32000,
                                 "Service Unavailable: STORE_UNAVAILABLE: the shared state store (Redis/Valkey), "
                                 "which counts this token's sessions, does not answer; retry",
                                 "Retry-After", "1")
                        : refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                                 "Too Many Requests: this token has its most sessions open "
                                 "(on all the deployment's instances together)",
                                 "Retry-After", "5");
    }
  }
  enum MHD_Result rc;
  pthread_mutex_lock(&h->mu);
  /* bounded: the bytes waiting for the workers in all (checked before an
   * initialize makes a session), then the session's own (below) */
  if (h->queued + k->len > h->o.max_queued) {
    pthread_mutex_unlock(&h->mu);
    json_decref(m);
    return refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                  "Too Many Requests: the messages waiting for the workers reach http.max_queued",
                  "Retry-After", "1");
  }
  session *s = NULL;
  if (init || listen) { /* a session: a listen is one, held by its stream */
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
    const char *capped = !listen ? NULL
        : h->ten_listens[slot] >= bwh_stream_cap(h, slot, 1)
            ? "Too Many Requests: this tenant has its most listens open "
              "(http.max_listens, http.tenants.NAME.max_listens)"
        : h->ten_streams[slot] >= bwh_stream_cap(h, slot, 0)
            ? "Too Many Requests: this tenant has its most streams open "
              "(http.max_streams, http.tenants.NAME.max_streams)"
            : NULL;
    if (capped) { /* a listen's own caps first: they are what it hits */
      pthread_mutex_unlock(&h->mu);
      json_decref(m);
      return refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000, capped, "Retry-After", "5");
    }
    if ((lim > 0 && have >= lim) || tenant_full(h, tenant, 1) || by_addr) {
      int tok = lim > 0 && have >= lim;
      pthread_mutex_unlock(&h->mu);
      json_decref(m);
      return refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                    tok ? "Too Many Requests: this token has its most sessions open"
                    : by_addr ? "Too Many Requests: this client address has its share of the sessions open "
                                "(http.max_sessions_per_address)"
                        : "Too Many Requests: this tenant has its most sessions open "
                          "(http.tenants.NAME.max_sessions)",
                    "Retry-After", "5");
    }
    s = bwh_session_new(h, k->token, &k->who, addr, 0);
    if (s && reserved[0]) snprintf(s->id, sizeof s->id, "%s", reserved); /* the id the store counts */
    if (s && listen) { /* its id: the response shutdown sends names it */
      s->listen = json_dumps(json_object_get(one, "id"), JSON_ENCODE_ANY | JSON_COMPACT);
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
      pthread_mutex_unlock(&h->mu);
      json_decref(m);
      return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, -32603, "no memory",
                    NULL, NULL);
    }
    bwh_log(h, "%s %.8s opened addr=%s tenant=%s", listen ? "listen" : "session", s->id, addr,
            bwh_tenant_name(h, s->tenant));
  } else if (v.modern) { /* one request: a session of its own that ends with it */
    char addr[INET6_ADDRSTRLEN];
    bwh_client_address(c, addr);
    s = bwh_session_new(h, k->token, &k->who, addr, 1);
    if (!s) {
      pthread_mutex_unlock(&h->mu);
      json_decref(m);
      return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, -32603, "no memory",
                    NULL, NULL);
    }
    /* the method is one of httpera.c's list by now: nothing else reaches the line */
    bwh_log(h, "stateless %s addr=%s tenant=%s", json_string_value(json_object_get(one, "method")),
            addr, bwh_tenant_name(h, s->tenant));
  } else {
    s = bwh_session_find(h, sidh);
    if (!sidh) rc = MHD_HTTP_BAD_REQUEST;
    else if (!s || !bwh_session_owned(s, k->token, &k->who)) rc = MHD_HTTP_NOT_FOUND;
    else rc = 0;
    if (rc) {
      pthread_mutex_unlock(&h->mu);
      json_decref(m);
      return rc == MHD_HTTP_BAD_REQUEST
                 ? refuse(c, rc, -32000,
                          "Bad Request: Mcp-Session-Id header is required",
                          NULL, NULL)
                 : refuse(c, rc, -32001, "Session not found", NULL, NULL);
    }
  }
  s->last = bwh_now();
  if (ping) { /* answered here, whatever the worker is doing */
    pthread_mutex_unlock(&h->mu);
    size_t n;
    char *b = bw_rpc_pong(json_object_get(m, "id"), &n); /* any length of id */
    json_decref(m);
    if (!b) return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, -32603, "no memory", NULL, NULL);
    enum MHD_Result r = bwh_reply(c, MHD_HTTP_OK, "application/json", b, NULL, NULL);
    free(b);
    return r;
  }
  if (one && !request) {
    const char *method = json_string_value(json_object_get(one, "method"));
    if (method && !strcmp(method, "notifications/cancelled")) {
      bwh_note_cancel(h, s, json_object_get(json_object_get(one, "params"),
                                        "requestId"));
      pthread_mutex_unlock(&h->mu);
      json_decref(m);
      return bwh_reply(c, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
    }
  }
  json_decref(m);
  /* the session's waiting bodies, then its tenant's, all its sessions
     together: one tenant cannot fill the queue every tenant shares */
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
    return refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000, full, "Retry-After", "1");
  }
  if (request && !listen) { /* a listen counts as a session, not a call */
    int lim = token_limit(h, k->token, 0);
    int calls = k->token >= 0 ? h->tok_calls[k->token] : h->open_calls;
    if ((lim > 0 && calls >= lim) || tenant_full(h, s->tenant, 0)) {
      int tok = lim > 0 && calls >= lim;
      drop_new(h, s);
      pthread_mutex_unlock(&h->mu);
      return refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                    tok ? "Too Many Requests: this token has its most calls running"
                        : "Too Many Requests: this tenant has its most calls running "
                          "(http.tenants.NAME.max_calls)",
                    "Retry-After", "1");
    }
  }
  bw_http_item *it = calloc(1, sizeof *it);
  /* a listen's stream is its session's stream 0: what the session's
   * watches send outside a request lands there */
  stream *t = request ? bwh_stream_new(h, s, listen ? 0 : s->next_stream++) : NULL;
  if (!it || (request && !t)) {
    free(it);
    drop_new(h, s);
    pthread_mutex_unlock(&h->mu);
    return refuse(c, MHD_HTTP_INTERNAL_SERVER_ERROR, -32603, "no memory", NULL,
                  NULL);
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
  it->shared_version = shared_version;
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
  bwh_queue_item(h, s, it);
  if (!request) {
    pthread_mutex_unlock(&h->mu);
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
  k->init = init;
  if (s->stateless && !early_ready(h, s, t)) { /* parked: the handler is called again */
    k->until = bwh_now() + 1.0;
    k->waiting = 1;
    bwh_park_on(h, &k->park, t, c, k->until);
    pthread_mutex_unlock(&h->mu);
    return MHD_YES;
  }
  rc = answer_post(h, c, k);
  pthread_mutex_unlock(&h->mu);
  return rc;
}

/* The answer of the POST k holds: a stateless request's early error (its
 * status is the answer's), else its stream (lock held). */
static enum MHD_Result answer_post(bw_http *h, struct MHD_Connection *c, conn *k) {
  session *s = k->ws;
  stream *t = k->wt;
  enum MHD_Result rc;
  k->ws = NULL;
  k->wt = NULL;
  k->waiting = 0;
  t->readers--;
  if (!(s->stateless && early_error(h, c, t, &rc)))
    rc = bwh_stream_answer(h, c, s, t, 0, !k->listen && !bwh_accepts(c, "text/event-stream"), k->init, 0);
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

