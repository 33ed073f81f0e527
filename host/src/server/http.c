/*
 * http.c - MCP Streamable HTTP (spec 2025-06-18, 2025-11-25) on
 * libmicrohttpd: one endpoint, /mcp. POST carries one JSON-RPC message
 * (a batch for the revisions that have them); GET opens the session's
 * server-to-client SSE stream; DELETE ends the session.
 *
 * Every request is checked before its body is read: Host and Origin
 * (DNS rebinding), the bearer token (its sha256 against the config's), the
 * method, the body size. A session is made by initialize, bound to the
 * token that made it (another token gets 404, as if it did not exist) and
 * queued for the scheduler (httpsess.c); a Lua worker (lhttp.c) answers its
 * messages and sends back whole messages, which land on the POST's SSE
 * stream (or, outside a request, the GET stream). Each stream keeps its
 * last events for Last-Event-ID; ping and notifications/cancelled are
 * answered here, so they work while the session's worker is busy.
 *
 * Threads: libmicrohttpd runs a fixed pool of epoll threads (one a CPU,
 * 2 to 8) for every connection, so nothing here may wait: a connection
 * with nothing to answer yet (an SSE reader between events, a stateless
 * POST waiting for the first word of its answer) is suspended, parked on
 * its stream, and resumed when the stream moves (httpsse.c); a reaper
 * thread ends idle sessions and resumes the parked connections that come
 * due, so closed clients are found. One lock guards sessions, streams and
 * queues (httpsess.c). Long streams are capped per tenant at admission
 * (http.max_streams, http.max_listens), open connections in all and per
 * address (http.max_connections, max_connections_per_address).
 */
#include "http.h"
#include "clock.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <sys/eventfd.h>
#include <jansson.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "burrow.h" /* BURROW_VERSION_STRING: a listen's last answer names the server */
#include "core.h"
#include "httpint.h"
#include "mhd.h"
#include "oauth.h"
#include "state.h"


void bw_http_token_hash(const char *token, char out[65]) {
  char h[BW_HASH_STR];
  bw_sha256(token, strlen(token), h);
  memcpy(out, h + 7, 64); /* past "sha256:" */
  out[64] = '\0';
}

/* ------------------------------------------------------------ answers */

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

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
                             const char *ctype, const char *body,
                             const char *hname, const char *hval) {
  struct MHD_Response *r = MHD_create_response_from_buffer(
      strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  if (ctype) MHD_add_response_header(r, "Content-Type", ctype);
  if (hname) MHD_add_response_header(r, hname, hval);
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

/* A JSON-RPC error body (id null), as the transport answers refusals. */
/* The connection state of the request this thread answers (set by each
 * call of the handler): the access log's tenant of a refusal. */
static _Thread_local const conn *current;

static const char *tenant_of_token(const bw_http *h, int token) {
  return token >= 0 ? bwh_tenant_name(h, h->o.tokens[token].tenant)
                    : h->o.n_tokens ? "-" : bwh_tenant_name(h, 0);
}

static void client_address(struct MHD_Connection *c, char out[INET6_ADDRSTRLEN]);

/* A JSON-RPC error answered by the transport: the request's id when it
 * has a usable one (else null), data when given (stolen). */
static enum MHD_Result refuse_rpc(bw_http *h, struct MHD_Connection *c, unsigned status,
                                  const json_t *id, int code, const char *msg, json_t *data,
                                  const char *hname, const char *hval) {
  if (h && h->log) { /* every refusal: status, reason, tenant, address */
    char addr[INET6_ADDRSTRLEN];
    client_address(c, addr);
    bwh_log(h, "refused %u addr=%s tenant=%s: %s", status, addr,
            current && current->checked ? tenant_of_token(h, current->token) : "-", msg);
  }
  int usable = json_is_string(id) || json_is_integer(id);
  json_t *err = json_pack("{s:i,s:s}", "code", code, "message", msg);
  if (err && data) json_object_set(err, "data", data);
  json_decref(data);
  json_t *j = err ? json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id",
                              usable ? (json_t *)id : json_null(), "error", err)
                  : NULL;
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  enum MHD_Result rc = reply(c, status, "application/json",
                             text ? text : "{}", hname, hval);
  free(text);
  return rc;
}

static enum MHD_Result refuse_(bw_http *h, struct MHD_Connection *c, unsigned status,
                               int code, const char *msg, const char *hname,
                               const char *hval) {
  return refuse_rpc(h, c, status, NULL, code, msg, NULL, hname, hval);
}
#define refuse(...) refuse_(h, __VA_ARGS__)

/* Host without its port; a bracketed IPv6 literal keeps its brackets. */
void bwh_host_name(const char *v, char *out, size_t n) {
  size_t len = strlen(v);
  if (v[0] == '[') {
    const char *e = strchr(v, ']');
    len = e ? (size_t)(e - v) + 1 : len;
  } else {
    const char *e = strchr(v, ':');
    if (e) len = (size_t)(e - v);
  }
  if (len >= n) len = n - 1;
  memcpy(out, v, len);
  out[len] = '\0';
}

static int host_allowed(bw_http *h, const char *name) {
  if (bw_http_loopback(name)) return 1;
  if (!bw_http_loopback(h->o.host) && strcmp(h->o.host, "0.0.0.0") &&
      strcmp(h->o.host, "::") && !strcasecmp(name, h->o.host))
    return 1;
  for (int i = 0; i < h->o.n_hosts; i++)
    if (!strcasecmp(name, h->o.allowed_hosts[i])) return 1;
  return 0;
}

/* DNS rebinding: the Host must name us; an Origin, when a browser sends
 * one, must be an allowed origin or an http(s) origin on an allowed host. */
static int origin_ok(bw_http *h, struct MHD_Connection *c) {
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
  char name[256];
  if (!host) return 0;
  bwh_host_name(host, name, sizeof name);
  if (!host_allowed(h, name)) return 0;
  const char *origin =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
  if (!origin) return 1;
  for (int i = 0; i < h->o.n_origins; i++)
    if (!strcasecmp(origin, h->o.allowed_origins[i])) return 1;
  const char *rest = !strncasecmp(origin, "http://", 7)    ? origin + 7
                     : !strncasecmp(origin, "https://", 8) ? origin + 8
                                                           : NULL;
  if (!rest || strchr(rest, '/')) return 0;
  bwh_host_name(rest, name, sizeof name);
  return host_allowed(h, name);
}

/* The config's token a bearer token is: its index, or -2. */
static int authenticate_static(bw_http *h, const char *a) {
  if (!a || strncasecmp(a, "Bearer ", 7)) return -2;
  char hex[65];
  bw_http_token_hash(a + 7, hex);
  int found = -2;
  for (int i = 0; i < h->o.n_tokens; i++) { /* every one compared, in full */
    unsigned char diff = 0;
    for (int j = 0; j < 64; j++)
      diff |= (unsigned char)(hex[j] ^ h->o.tokens[i].sha256[j]);
    if (!diff) found = i;
  }
  return found;
}

/* The token index, -1 when none are configured, -2 when refused (why in
 * d). A token that is none of the config's may be an OAuth access token
 * (oauth.c): its principal goes in who, its tenant's slot is the index. */
static int authenticate(bw_http *h, struct MHD_Connection *c, bw_oauth_who *who, bw_oauth_deny *d) {
  if (h->o.n_tokens == 0) return -1;
  const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  int found = authenticate_static(h, a);
  if (found == -2 && h->o.oauth) return bw_oauth_admit(h->o.oauth, a, who, d) ? -2 : who->slot;
  if (found == -2) bw_oauth_plain_deny(d);
  return found;
}

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
static int stream_cap(const bw_http *h, int slot, int listens) {
  if (slot < h->o.n_tenants && h->o.tenants) {
    int v = listens ? h->o.tenants[slot].max_listens : h->o.tenants[slot].max_streams;
    if (v > 0) return v;
  }
  return listens ? h->o.max_listens : h->o.max_streams;
}

static int accepts(struct MHD_Connection *c, const char *type) {
  const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
  return a && (strstr(a, type) || strstr(a, "*/*"));
}

/* ---------------------------------------------------------- handlers */

static enum MHD_Result do_get(bw_http *h, struct MHD_Connection *c,
                              session *s, struct bwh_evrec *logged) {
  if (!accepts(c, "text/event-stream"))
    return refuse(c, MHD_HTTP_NOT_ACCEPTABLE, -32000,
                  "Not Acceptable: GET needs Accept: text/event-stream", NULL,
                  NULL);
  const char *last =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID");
  long sid = 0, pos = -1;
  if (last && bwh_event_id(last, &sid, &pos))
    return refuse(c, MHD_HTTP_BAD_REQUEST, -32000,
                  "Bad Request: Last-Event-ID is not one of this server's",
                  NULL, NULL);
  bwh_evlog_fill(h, s, logged, sid, pos); /* a stream the store keeps: here too (httpevlog.c) */
  stream *t = bwh_stream_find(s, sid);
  if (!t && sid == 0) t = bwh_stream_new(h, s, 0);
  if (!t)
    return refuse(c, MHD_HTTP_NOT_FOUND, -32000,
                  "Not Found: that stream is no longer kept", NULL, NULL);
  if (t->id == 0 && t->readers > 0)
    return refuse(c, MHD_HTTP_CONFLICT, -32000,
                  "Conflict: this session's GET stream is already open", NULL,
                  NULL);
  int slot = bwh_tenant(h, s->tenant);
  if (h->ten_streams[slot] >= stream_cap(h, slot, 0))
    return refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                  "Too Many Requests: this tenant has its most streams open "
                  "(http.max_streams, http.tenants.NAME.max_streams)",
                  "Retry-After", "5");
  /* a new GET stream: what no reader has had yet (a request the server
   * sent before the client opened it, kept within the replay bound) */
  if (pos < 0) pos = t->sent;
  return bwh_stream_answer(h, c, s, t, pos, 0, t->id ? -1 : 0, 1);
}

/* The client's address as text ("" if unknown). */
static void client_address(struct MHD_Connection *c, char out[INET6_ADDRSTRLEN]) {
  out[0] = '\0';
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  const struct sockaddr *sa = i ? i->client_addr : NULL;
  if (sa && sa->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, out, INET6_ADDRSTRLEN);
  else if (sa && sa->sa_family == AF_INET6)
    inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, out, INET6_ADDRSTRLEN);
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
  *rc = reply(c, MHD_HTTP_BAD_REQUEST, "application/json", body, NULL, NULL);
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
/* The deployment's store did not answer a question about a session. */
static enum MHD_Result store_down(bw_http *h, struct MHD_Connection *c) {
  return refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, -32000,
                "Service Unavailable: STORE_UNAVAILABLE: the shared state store (Redis/Valkey), which "
                "holds this session, does not answer; retry",
                "Retry-After", "1");
}

static enum MHD_Result do_post(bw_http *h, struct MHD_Connection *c, conn *k) {
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
    enum MHD_Result r = refuse_rpc(h, c, v.status, one ? json_object_get(one, "id") : NULL,
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
    enum MHD_Result r = refuse_rpc(h, c, MHD_HTTP_SERVICE_UNAVAILABLE, one ? json_object_get(one, "id") : NULL,
                                   -32000, "Service Unavailable: the server is shutting down", NULL,
                                   "Retry-After", "1");
    json_decref(m);
    return r;
  }
  bw_oauth_deny deny; /* a read-only token's write call */
  if (bw_oauth_scope_refused(h->o.oauth, &k->who, m, &deny)) {
    enum MHD_Result r = refuse_rpc(h, c, deny.status, one ? json_object_get(one, "id") : NULL, -32000,
                                   deny.msg, NULL, deny.hname, deny.hval);
    json_decref(m);
    return r;
  }
  if (v.modern && !request) { /* 2026-07-28 has no notifications to act on */
    json_decref(m);
    return reply(c, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
  }
  if (listen && !accepts(c, "text/event-stream")) {
    enum MHD_Result r = refuse_rpc(h, c, MHD_HTTP_NOT_ACCEPTABLE, json_object_get(one, "id"), -32600,
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
    client_address(c, addr);
    int why = bwh_share_check(h, k->token, &k->who, addr, sidh, &shared_version);
    if (why) {
      json_decref(m);
      return why == 503 ? store_down(h, c) : refuse(c, MHD_HTTP_NOT_FOUND, -32001, "Session not found", NULL, NULL);
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
    client_address(c, addr);
    int from = 0; /* live sessions made from this address */
    if (h->o.max_sessions_per_address > 0)
      for (session *x = h->sessions; x; x = x->next) from += !strcmp(x->addr, addr);
    int by_addr = h->o.max_sessions_per_address > 0 && from >= h->o.max_sessions_per_address;
    int slot = bwh_tenant(h, tenant);
    const char *capped = !listen ? NULL
        : h->ten_listens[slot] >= stream_cap(h, slot, 1)
            ? "Too Many Requests: this tenant has its most listens open "
              "(http.max_listens, http.tenants.NAME.max_listens)"
        : h->ten_streams[slot] >= stream_cap(h, slot, 0)
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
    client_address(c, addr);
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
    enum MHD_Result r = reply(c, MHD_HTTP_OK, "application/json", b, NULL, NULL);
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
      return reply(c, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
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
    return reply(c, MHD_HTTP_ACCEPTED, NULL, "", NULL, NULL);
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
    rc = bwh_stream_answer(h, c, s, t, 0, !k->listen && !accepts(c, "text/event-stream"), k->init, 0);
  bwh_session_unref(h, s);
  return rc;
}

/* A parked POST resumed: its answer moved, its second is up, or the
 * listener stops; parked again if none of them. */
static enum MHD_Result resume_post(bw_http *h, struct MHD_Connection *c, conn *k) {
  enum MHD_Result rc = MHD_YES;
  pthread_mutex_lock(&h->mu);
  if (!early_ready(h, k->ws, k->wt) && bwh_now() < k->until)
    bwh_park_on(h, &k->park, k->wt, c, k->until);
  else
    rc = answer_post(h, c, k);
  pthread_mutex_unlock(&h->mu);
  return rc;
}

/* A connection opens unauthenticated: until a request of it passes the
 * token, Host and Origin checks it counts against max_unauthenticated and
 * may stay silent auth_timeout seconds (not the 120 s of the others), so
 * connections that never send a request (half-open, slowloris) cannot
 * hold every thread for long, nor lock out clients that have passed. */
typedef struct sock {
  int authed;
} sock;

static enum MHD_Result accept_new(void *cls, const struct sockaddr *addr,
                                  socklen_t addrlen) {
  (void)addr;
  (void)addrlen;
  bw_http *h = cls;
  pthread_mutex_lock(&h->mu);
  /* http.max_connections counted here, in all: libmicrohttpd's own limit
   * is shared out among its pool's threads, each refusing at its share */
  int ok = h->unauth < h->o.max_unauthenticated && h->conns < h->o.max_connections;
  pthread_mutex_unlock(&h->mu);
  return ok ? MHD_YES : MHD_NO;
}

static void passed_checks(bw_http *h, struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  sock *k = i ? i->socket_context : NULL;
  if (!k || k->authed) return;
  k->authed = 1;
  pthread_mutex_lock(&h->mu);
  h->unauth--;
  pthread_mutex_unlock(&h->mu);
  MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)IDLE_TIMEOUT);
}

/* /healthz and /readyz: for a load balancer or an orchestrator, no
 * token (a probe has none), after the Host and Origin checks. Their
 * bodies say the state and nothing else: no version, no tenant, no
 * count. Answered here on the pool thread from flags: nothing waits, no
 * Lua runs. */
static const char *not_ready(bw_http *h) {
  if (atomic_load(&h->draining)) return "draining";
  if (!atomic_load(&h->ready)) return "starting";
  pthread_mutex_lock(&h->mu);
  int up = h->workers_up;
  pthread_mutex_unlock(&h->mu);
  if (up < h->o.workers) return "starting";
  int store = h->checker ? atomic_load(&h->checker->ok) : 1;
  if (store < 0) return "starting";
  if (!store) return "state store unreachable";
  return NULL;
}

static enum MHD_Result probe(bw_http *h, struct MHD_Connection *c, const char *url,
                             const char *method) {
  if (strcmp(method, "GET") && strcmp(method, "HEAD"))
    return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "GET or HEAD\n", "Allow", "GET, HEAD");
  const char *why = strcmp(url, "/readyz") ? NULL : not_ready(h);
  char body[64];
  snprintf(body, sizeof body, why ? "not ready: %s\n" : "ok\n", why);
  struct MHD_Response *r = MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "text/plain");
  MHD_add_response_header(r, "Cache-Control", "no-store");
  if (why) MHD_add_response_header(r, "Retry-After", "1");
  enum MHD_Result rc = MHD_queue_response(c, why ? MHD_HTTP_SERVICE_UNAVAILABLE : MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  bw_http *h = cls;
  conn *k = *con_cls;
  current = k;
  if (k && k->waiting) return resume_post(h, c, k);
  if (!k) {
    k = calloc(1, sizeof *k);
    if (!k) return MHD_NO;
    *con_cls = k;
    current = k;
    k->rejected = 1; /* until every check passed */
    if (!origin_ok(h, c))
      return refuse(c, MHD_HTTP_FORBIDDEN, -32000,
                    "Forbidden: Host or Origin not allowed", NULL, NULL);
    if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz")) return probe(h, c, url, method);
    const char *meta = bw_oauth_metadata(h->o.oauth, url); /* RFC 9728: no token */
    if (meta) return reply(c, MHD_HTTP_OK, "application/json", meta, "Cache-Control", "max-age=300");
    bw_oauth_deny deny;
    k->token = authenticate(h, c, &k->who, &deny);
    if (k->token == -2) return refuse(c, deny.status, -32000, deny.msg, deny.hname, deny.hval);
    k->checked = 1; /* its token (the access log's tenant) is known */
    passed_checks(h, c);
    if (strcmp(url, "/mcp"))
      return refuse(c, MHD_HTTP_NOT_FOUND, -32000, "Not Found: the endpoint is /mcp",
                    NULL, NULL);
    int post = !strcmp(method, "POST");
    if (!post && strcmp(method, "GET") && strcmp(method, "DELETE"))
      return refuse(c, MHD_HTTP_METHOD_NOT_ALLOWED, -32000,
                    "Method Not Allowed", "Allow", "GET, POST, DELETE");
    /* a POST's version is checked with its body (do_post: the answer
     * names the request's id) */
    const char *pv = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version");
    if (!post && pv && !bwh_version_known(pv))
      return refuse_rpc(h, c, MHD_HTTP_BAD_REQUEST, NULL, -32022,
                        "Unsupported protocol version (MCP-Protocol-Version)",
                        json_pack("{s:o,s:s}", "supported", bwh_versions(), "requested", pv),
                        NULL, NULL);
    const bw_http_token *t = k->token >= 0 ? &h->o.tokens[k->token] : NULL;
    k->limit = t && t->max_body ? t->max_body : h->o.max_body;
    if (post) {
      const char *ct =
          MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
      if (!ct || strncasecmp(ct, "application/json", 16))
        return refuse(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, -32000,
                      "Unsupported Media Type: POST needs application/json",
                      NULL, NULL);
      if (!accepts(c, "application/json") && !accepts(c, "text/event-stream"))
        return refuse(c, MHD_HTTP_NOT_ACCEPTABLE, -32000,
                      "Not Acceptable: accept application/json or "
                      "text/event-stream",
                      NULL, NULL);
      const char *cl =
          MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
      if (cl && strtoull(cl, NULL, 10) > k->limit)
        return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, -32000,
                      "Content Too Large: the body is over the limit", NULL,
                      NULL);
    }
    k->rejected = 0;
    return MHD_YES;
  }
  if (k->rejected) { /* answered already: drop what else arrives */
    *upload_size = 0;
    return MHD_YES;
  }
  if (*upload_size > 0) {
    /* over the limit: the rest is read and dropped (a response can only
     * be queued once the upload is over), and past another MiB the
     * connection is closed */
    if (k->too_big || k->len + *upload_size > k->limit) {
      k->too_big += *upload_size > (1 << 20) ? (1 << 20) : (int)*upload_size;
      *upload_size = 0;
      return k->too_big > (1 << 20) ? MHD_NO : MHD_YES;
    }
    if (k->len + *upload_size > k->cap) {
      size_t cap = (k->len + *upload_size) * 2;
      char *b = realloc(k->body, cap);
      if (!b) return MHD_NO;
      k->body = b;
      k->cap = cap;
    }
    memcpy(k->body + k->len, upload, *upload_size);
    k->len += *upload_size;
    *upload_size = 0;
    return MHD_YES;
  }
  k->rejected = 1; /* one answer per request */
  if (k->too_big)
    return refuse(c, MHD_HTTP_CONTENT_TOO_LARGE, -32000,
                  "Content Too Large: the body is over the limit", NULL, NULL);
  if (!strcmp(method, "POST")) return do_post(h, c, k);
  const char *sidh =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
  if (!sidh)
    return refuse(c, MHD_HTTP_BAD_REQUEST, -32000,
                  "Bad Request: Mcp-Session-Id header is required", NULL,
                  NULL);
  char addr[INET6_ADDRSTRLEN];
  client_address(c, addr);
  uint64_t shared_version;
  int why = bwh_share_check(h, k->token, &k->who, addr, sidh, &shared_version); /* httpshare.c */
  if (why == 503) return store_down(h, c);
  struct bwh_evrec *logged = NULL; /* a GET's stream as the store keeps it (httpevlog.c) */
  if (!strcmp(method, "GET") && !why &&
      bwh_evlog_fetch(h, k->token, &k->who, sidh, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID"), &logged))
    return store_down(h, c);
  pthread_mutex_lock(&h->mu);
  session *s = bwh_session_find(h, sidh);
  enum MHD_Result rc;
  if (!s || !bwh_session_owned(s, k->token, &k->who)) {
    rc = refuse(c, MHD_HTTP_NOT_FOUND, -32001, "Session not found", NULL, NULL);
  } else if (!strcmp(method, "DELETE")) {
    bwh_session_close(h, s, "deleted");
    pthread_mutex_unlock(&h->mu);
    bwh_evlog_done(h, sidh, logged);
    bwh_share_forget(h, k->token, sidh); /* on every instance: the store's record goes */
    if (bwh_shared(h)) bwh_tokens_release(h, k->token, &k->who, sidh); /* and its place in the token's count */
    return reply(c, MHD_HTTP_OK, NULL, "", NULL, NULL);
  } else if (atomic_load(&h->draining)) { /* no new stream while shutting down */
    rc = refuse(c, MHD_HTTP_SERVICE_UNAVAILABLE, -32000,
                "Service Unavailable: the server is shutting down", "Retry-After", "1");
  } else {
    s->last = bwh_now();
    rc = do_get(h, c, s, logged);
  }
  pthread_mutex_unlock(&h->mu);
  bwh_evlog_done(h, sidh, logged);
  return rc;
}

/* A request is over: its body goes, and what a POST that never answered
 * held (its client went while it was parked, or the listener stopped). */
static void completed(void *cls, struct MHD_Connection *c, void **con_cls,
                      enum MHD_RequestTerminationCode toe) {
  (void)c;
  (void)toe;
  bw_http *h = cls;
  conn *k = *con_cls;
  if (!k) return;
  if (k->ws) {
    pthread_mutex_lock(&h->mu);
    bwh_unpark(&k->park);
    k->wt->readers--;
    if (k->ws->stateless && !k->wt->done) { /* as a closed stream: its call is cancelled */
      k->ws->abandoned = 1;
      if (k->ws->running >= 0) atomic_store(&h->w[k->ws->running].cancelled, 1);
    }
    bwh_session_unref(h, k->ws);
    pthread_mutex_unlock(&h->mu);
  }
  free(k->body);
  free(k);
  *con_cls = NULL;
}

/* Small SSE frames go out at once: without TCP_NODELAY a frame written
 * behind an unacknowledged one waits for the peer's delayed ACK (~40 ms a
 * call behind a proxy). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
  bw_http *h = cls;
  if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    sock *k = *socket_ctx;
    *socket_ctx = NULL;
    pthread_mutex_lock(&h->mu);
    h->conns--;
    if (k && !k->authed) h->unauth--;
    pthread_mutex_unlock(&h->mu);
    free(k);
    return;
  }
  if (code != MHD_CONNECTION_NOTIFY_STARTED) return;
  pthread_mutex_lock(&h->mu);
  h->conns++;
  pthread_mutex_unlock(&h->mu);
  sock *k = calloc(1, sizeof *k);
  if (k) { /* without one the connection counts as passed: never locked out by us */
    *socket_ctx = k;
    pthread_mutex_lock(&h->mu);
    h->unauth++;
    pthread_mutex_unlock(&h->mu);
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, (unsigned)h->o.auth_timeout);
  }
  const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  int one = 1;
  if (i) setsockopt(i->connect_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ------------------------------------------------------------ start */

static bwh_checker *checker_start(struct bw_state *store);

/* What bw_http_start allocated besides the daemon, the threads and the
 * sessions: its arrays, the access log it opened, h itself. */
static void free_parts(bw_http *h) {
  bwh_evlog_stop(h); /* if bw_http_stop did not */
  free(h->w);
  free(h->tok_calls);
  free(h->tok_sessions);
  free(h->ten_calls);
  free(h->ten_sessions);
  free(h->run_head);
  free(h->run_tail);
  free(h->ten_running);
  free(h->ten_kept);
  free(h->ten_queued);
  free(h->ten_listens);
  free(h->ten_streams);
  if (!bwh_log_free(h) && h->log && h->log != stderr) fclose(h->log);
  free(h);
}

bw_http *bw_http_start(const bw_http_opts *o, char *err, size_t errlen) {
  if (bw_mhd_load(err, errlen)) return NULL;
  if (o->n_tokens == 0 && !bw_http_loopback(o->host)) {
    snprintf(err, errlen,
             "refusing to listen on %s without tokens: a non-loopback "
             "address needs http.tokens (docs/security.md)",
             o->host);
    return NULL;
  }
  struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
                           .ai_socktype = SOCK_STREAM},
                  *ai = NULL;
  char port[16];
  snprintf(port, sizeof port, "%d", o->port);
  int gai = getaddrinfo(o->host, port, &hints, &ai);
  if (gai) {
    snprintf(err, errlen, "cannot resolve %s: %s", o->host, gai_strerror(gai));
    return NULL;
  }
  bw_http *h = calloc(1, sizeof *h);
  if (!h) {
    freeaddrinfo(ai);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  h->o = *o;
  if (h->o.workers < 1) h->o.workers = 1;
  /* the access log: stderr unless told (a path, appended to; "off") */
  if (!o->access_log || !strcmp(o->access_log, "stderr")) h->log = stderr;
  else if (strcmp(o->access_log, "off") && !(h->log = fopen(o->access_log, "ae"))) {
    snprintf(err, errlen, "cannot open the access log %s: %s", o->access_log, strerror(errno));
    free(h);
    return NULL;
  }
  (void)bwh_log_start(h); /* failing, lines are written in place: the log still works */
  if (h->o.max_unauthenticated < 1) h->o.max_unauthenticated = 128;
  if (h->o.auth_timeout < 1) h->o.auth_timeout = 10;
  if (h->o.replay < 1) h->o.replay = 1;
  if (h->o.max_streams < 1) h->o.max_streams = 2048;
  if (h->o.max_listens < 1) h->o.max_listens = 1024;
  if (h->o.max_connections < 1) h->o.max_connections = CONN_LIMIT;
  pthread_mutex_init(&h->mu, NULL);
  bw_cond_init_mono(&h->ev); /* timeouts (bwh_deadline) on the monotonic clock */
  bw_cond_init_mono(&h->reap_cv);
  if (h->o.max_running < 1) /* one tenant never holds every worker of several */
    h->o.max_running = h->o.n_tenants > 1 && h->o.workers > 1 ? h->o.workers - 1 : h->o.workers;
  h->w = calloc((size_t)h->o.workers, sizeof *h->w);
  h->run_head = calloc((size_t)o->n_tenants + 1, sizeof *h->run_head);
  h->run_tail = calloc((size_t)o->n_tenants + 1, sizeof *h->run_tail);
  h->ten_running = calloc((size_t)o->n_tenants + 1, sizeof(int));
  h->ten_kept = calloc((size_t)o->n_tenants + 1, sizeof(size_t));
  h->ten_queued = calloc((size_t)o->n_tenants + 1, sizeof(size_t));
  h->ten_listens = calloc((size_t)o->n_tenants + 1, sizeof(int));
  h->ten_streams = calloc((size_t)o->n_tenants + 1, sizeof(int));
  if (h->o.max_kept_bytes < 1) h->o.max_kept_bytes = (size_t)64 << 20;
  h->tok_calls = calloc((size_t)o->n_tokens + 1, sizeof(int));
  h->tok_sessions = calloc((size_t)o->n_tokens + 1, sizeof(int));
  h->ten_calls = calloc((size_t)o->n_tenants + 1, sizeof(int));
  h->ten_sessions = calloc((size_t)o->n_tenants + 1, sizeof(int));
  for (int i = 0; h->w && i < h->o.workers; i++)
    bw_cond_init_mono(&h->w[i].cv);
  /* a fixed pool of epoll threads serves every connection (a suspended
   * one costs its socket and a little memory, no thread), one a CPU */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  unsigned pool = cpus < 2 ? 2 : cpus > 8 ? 8 : (unsigned)cpus;
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL |
                   MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                   (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0);
  /* before the first request: a session's stream ids start at its base */
  if (bwh_evlog_start(h)) /* shared streams: without it, each instance's own (as without a store) */
    bwh_log(h, "cannot follow the store's stream events: streams resume on this instance only");
  if (h->w && h->tok_calls && h->tok_sessions && h->ten_calls && h->ten_sessions &&
      h->run_head && h->run_tail && h->ten_running && h->ten_kept && h->ten_queued &&
      h->ten_listens && h->ten_streams)
    h->d = MHD_start_daemon(
        flags, (uint16_t)o->port, accept_new, h, handler, h, MHD_OPTION_SOCK_ADDR,
        ai->ai_addr, MHD_OPTION_NOTIFY_COMPLETED, completed, h,
        MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
        MHD_OPTION_THREAD_POOL_SIZE, pool,
        /* each pool thread's share: max_connections itself is counted in
         * all by accept_new */
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)h->o.max_connections > UINT_MAX / pool
                                          ? UINT_MAX : (unsigned)h->o.max_connections * pool,
        /* one address cannot hold every connection */
        MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)(o->max_connections_per_address > 0
                                                          ? o->max_connections_per_address : 0),
        MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)IDLE_TIMEOUT, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!h->d) {
    snprintf(err, errlen, "cannot listen on %s:%d: %s", o->host, o->port,
             strerror(errno));
    free_parts(h);
    return NULL;
  }
  h->poll_wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (h->poll_wake < 0 || pthread_create(&h->reaper, NULL, bwh_reaper, h) != 0) {
    MHD_stop_daemon(h->d);
    snprintf(err, errlen, "cannot start the session reaper");
    if (h->poll_wake >= 0) close(h->poll_wake);
    free_parts(h);
    return NULL;
  }
  if (pthread_create(&h->poller, NULL, bwh_poller, h) != 0) {
    pthread_mutex_lock(&h->mu);
    h->stopped = 1;
    pthread_cond_broadcast(&h->reap_cv);
    pthread_mutex_unlock(&h->mu);
    pthread_join(h->reaper, NULL);
    MHD_stop_daemon(h->d);
    close(h->poll_wake);
    snprintf(err, errlen, "cannot start the watch poller");
    free_parts(h);
    return NULL;
  }
  if (o->store && !(h->checker = checker_start(o->store))) {
    pthread_mutex_lock(&h->mu);
    h->stopped = 1;
    pthread_cond_broadcast(&h->reap_cv);
    pthread_mutex_unlock(&h->mu);
    bwh_poll_wake(h);
    pthread_join(h->reaper, NULL);
    pthread_join(h->poller, NULL);
    MHD_stop_daemon(h->d);
    close(h->poll_wake);
    snprintf(err, errlen, "cannot start the state store check");
    free_parts(h);
    return NULL;
  }
  return h;
}

int bw_http_port(const bw_http *h) {
  const union MHD_DaemonInfo *i =
      MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
  return i ? i->port : h->o.port;
}

/* MCP 2026-07-28: a listen the server ends gets its response (empty, its
 * id in _meta) as the last event of its stream (lock held). */
static void end_listens(bw_http *h) {
  for (session *s = h->sessions; s; s = s->next) {
    stream *t = s->listen ? bwh_stream_find(s, 0) : NULL;
    if (!t || t->done) continue;
    char *b = NULL;
    int n = asprintf(&b, "{\"jsonrpc\":\"2.0\",\"id\":%s,\"result\":{\"resultType\":\"complete\","
                     "\"_meta\":{\"io.modelcontextprotocol/subscriptionId\":%s,"
                     "\"io.modelcontextprotocol/serverInfo\":{\"name\":\"burrow\",\"version\":\"%s\"}}}}",
                     s->listen, s->listen, BURROW_VERSION_STRING);
    if (n > 0) bwh_stream_push(h, t, b, (size_t)n);
    free(b);
    t->done = 1;
  }
}

/* Connections still reading a stream (lock held). */
static int readers(const bw_http *h) {
  int n = 0;
  for (const session *s = h->sessions; s; s = s->next)
    for (const stream *t = s->streams; t; t = t->next) n += t->readers;
  return n;
}

static void checker_stop(bwh_checker *k);

void bw_http_stop(bw_http *h) {
  pthread_mutex_lock(&h->mu);
  end_listens(h);
  h->stopped = 1;
  pthread_cond_broadcast(&h->ev);
  pthread_cond_broadcast(&h->reap_cv);
  for (int i = 0; i < h->o.workers; i++) {
    pthread_cond_broadcast(&h->w[i].cv);
    atomic_store(&h->w[i].cancelled, 1); /* calls running stop now */
  }
  /* no connection may be suspended when the daemon stops: each parked
   * one is resumed, and none parks again once stopped is set; each reader
   * writes what it holds and a last comment, and ends its response, which
   * the daemon's stop would cut: waited for, a second at most (less when
   * a graceful stop's deadline is near: bw_http_shutdown) */
  bwh_wake_all(h);
  struct timespec ts;
  double by = h->stop_by > 0 ? h->stop_by : bwh_now() + 1.0;
  bwh_deadline(&ts, by - bwh_now() > 0 ? by - bwh_now() : 0);
  while (readers(h) && pthread_cond_timedwait(&h->ev, &h->mu, &ts) != ETIMEDOUT) {}
  pthread_mutex_unlock(&h->mu);
  bwh_poll_wake(h);
  MHD_stop_daemon(h->d); /* waits for the connection threads */
  pthread_join(h->reaper, NULL);
  pthread_join(h->poller, NULL);
  if (h->checker) checker_stop(h->checker);
  h->checker = NULL;
  bwh_evlog_stop(h); /* the follower (httpevlog.c) */
  bwh_log_stop(h); /* its queue written; the sessions' last lines go in place */
}

void bw_http_ready(bw_http *h) { atomic_store(&h->ready, 1); }

/* Calls not yet answered: POST streams not done, queued or running (a
 * listen's stream is stream 0; lock held). */
static int unanswered(const bw_http *h) {
  int n = 0;
  for (const session *s = h->sessions; s; s = s->next)
    for (const stream *t = s->streams; t; t = t->next) n += t->id != 0 && !t->done;
  return n;
}

enum { STOP_MS = 40 /* the stop's own waits past the deadline: readers writing their end */ };

void bw_http_shutdown(bw_http *h, double grace, bw_http_cut *cut) {
  double t0 = bwh_now(), by = t0 + (grace > 0 ? grace : 0);
  struct timespec ts;
  bwh_deadline(&ts, by - t0);
  pthread_mutex_lock(&h->mu);
  atomic_store(&h->draining, 1); /* not ready, and no new request, from now */
  while (unanswered(h) && pthread_cond_timedwait(&h->ev, &h->mu, &ts) != ETIMEDOUT) {}
  cut->calls = unanswered(h);
  cut->streams = 0;
  for (int i = 0; i <= h->o.n_tenants; i++) cut->streams += h->ten_streams[i];
  /* idle early, the streams get a second to end as before; never past the
   * deadline by more than STOP_MS */
  double now = bwh_now();
  h->stop_by = (now + 1.0 < by ? now + 1.0 : by > now ? by : now) + STOP_MS / 1000.0;
  pthread_mutex_unlock(&h->mu);
  bw_http_stop(h);
}

/* ------------------------------------------------------- store check */

static void checker_unref(bwh_checker *k) {
  pthread_mutex_lock(&k->mu);
  int last = --k->refs == 0;
  pthread_mutex_unlock(&k->mu);
  if (!last) return;
  bw_state_close(k->store);
  pthread_mutex_destroy(&k->mu);
  pthread_cond_destroy(&k->cv);
  free(k);
}

static void *checker_main(void *arg) {
  bwh_checker *k = arg;
  pthread_mutex_lock(&k->mu);
  while (!k->stop) {
    pthread_mutex_unlock(&k->mu);
    size_t n;
    atomic_store(&k->ok, bw_state_count(k->store, "burrow-readyz", &n) == BW_OK);
    pthread_mutex_lock(&k->mu);
    struct timespec ts;
    bwh_deadline(&ts, 1.0);
    if (!k->stop) pthread_cond_timedwait(&k->cv, &k->mu, &ts);
  }
  pthread_mutex_unlock(&k->mu);
  checker_unref(k);
  return NULL;
}

static bwh_checker *checker_start(struct bw_state *store) {
  bwh_checker *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  pthread_mutex_init(&k->mu, NULL);
  bw_cond_init_mono(&k->cv);
  k->refs = 2;
  atomic_store(&k->ok, -1); /* not asked yet: /readyz says starting */
  k->store = bw_state_ref(store);
  if (pthread_create(&k->th, NULL, checker_main, k) != 0) {
    k->refs = 1;
    checker_unref(k);
    return NULL;
  }
  return k;
}

/* Told to stop; joined if it ends within 10 ms, else left to end by
 * itself (a check in flight waits for the store's timeout). */
static void checker_stop(bwh_checker *k) {
  pthread_mutex_lock(&k->mu);
  k->stop = 1;
  pthread_cond_signal(&k->cv);
  pthread_mutex_unlock(&k->mu);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  ts.tv_nsec += 10 * 1000 * 1000;
  if (ts.tv_nsec >= 1000000000L) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000L;
  }
  if (pthread_timedjoin_np(k->th, NULL, &ts) != 0) pthread_detach(k->th);
  checker_unref(k);
}

/* Free the items a session still has queued (the workers are gone). */
static void drain(bw_http *h, session *s) {
  s->refs++; /* its items' references go first */
  for (bw_http_item *it = s->head, *n; it; it = n) {
    n = it->next;
    h->queued -= it->len;
    h->ten_queued[bwh_tenant(h, s->tenant)] -= it->len;
    free(it->body);
    free(it);
    s->refs--;
  }
  s->head = s->tail = NULL;
  bwh_session_unref(h, s);
}

void bw_http_free(bw_http *h) {
  for (int i = 0; i < h->o.workers; i++) { /* a session a stopped worker held */
    session *s = h->w[i].cur;
    h->w[i].cur = NULL;
    if (s) {
      s->running = -1;
      drain(h, s);
      bwh_session_unref(h, s);
    }
    bw_rpcid_clear(&h->w[i].cur_id);
  }
  while (h->sessions) bwh_session_close(h, h->sessions, "stopped"); /* queues its close */
  for (int t = 0; t <= h->o.n_tenants; t++)
    for (session *s = h->run_head[t], *n; s; s = n) {
      n = s->run_next;
      drain(h, s);
    }
  close(h->poll_wake);
  free_parts(h);
}
