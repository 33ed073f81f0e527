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
 * queued for the scheduler (httpsched.c); a Lua worker (lhttp.c) answers its
 * messages and sends back whole messages, which land on the POST's SSE
 * stream (or, outside a request, the GET stream). Each stream keeps its
 * last events for Last-Event-ID; ping and notifications/cancelled are
 * answered on the pool's thread, so they work while the session's worker
 * is busy.
 *
 * This file is the handler: the checks before a body is read, the body
 * gathered, GET and DELETE, the probes, the connection callbacks. A
 * complete POST is httppost.c's, the answers httpanswer.c's, start and
 * stop httpstart.c's.
 *
 * Threads: libmicrohttpd runs a fixed pool of epoll threads (one a CPU,
 * 2 to 8) for every connection, so nothing here may wait: a connection
 * with nothing to answer yet (an SSE reader between events, a stateless
 * POST waiting for the first word of its answer) is suspended, parked on
 * its stream, and resumed when the stream moves (httppark.c); a reaper
 * thread ends idle sessions and resumes the parked connections that come
 * due, so closed clients are found. One lock guards sessions, streams and
 * queues (httpsess.c). Long streams are capped per tenant at admission
 * (http.max_streams, http.max_listens), open connections in all and per
 * address (http.max_connections, max_connections_per_address).
 */
#include <jansson.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "core.h"
#include "httpint.h"
#include "mhd.h"
#include "oauth.h"

#define refuse(...) bwh_refuse(h, __VA_ARGS__)

void bw_http_token_hash(const char *token, char out[65]) {
  char h[BW_HASH_STR];
  bw_sha256(token, strlen(token), h);
  memcpy(out, h + 7, 64); /* past "sha256:" */
  out[64] = '\0';
}

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

/* ---------------------------------------------------------- handlers */

static enum MHD_Result do_get(bw_http *h, struct MHD_Connection *c,
                              session *s, struct bwh_evrec *logged) {
  if (!bwh_accepts(c, "text/event-stream"))
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
  if (h->ten_streams[slot] >= bwh_stream_cap(h, slot, 0))
    return refuse(c, MHD_HTTP_TOO_MANY_REQUESTS, -32000,
                  "Too Many Requests: this tenant has its most streams open "
                  "(http.max_streams, http.tenants.NAME.max_streams)",
                  "Retry-After", "5");
  /* a new GET stream: what no reader has had yet (a request the server
   * sent before the client opened it, kept within the replay bound) */
  if (pos < 0) pos = t->sent;
  return bwh_stream_answer(h, c, s, t, pos, 0, t->id ? -1 : 0, 1);
}


/* A connection opens unauthenticated: until a request of it passes the
 * token, Host and Origin checks it counts against max_unauthenticated and
 * may stay silent auth_timeout seconds (not the 120 s of the others), so
 * connections that never send a request (half-open, slowloris) cannot
 * hold every thread for long, nor lock out clients that have passed. */
typedef struct sock {
  int authed;
} sock;

enum MHD_Result bwh_accept_new(void *cls, const struct sockaddr *addr,
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
    return bwh_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "GET or HEAD\n", "Allow", "GET, HEAD");
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

enum MHD_Result bwh_handler(void *cls, struct MHD_Connection *c,
                               const char *url, const char *method,
                               const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  bw_http *h = cls;
  conn *k = *con_cls;
  bwh_current = k;
  if (k && k->waiting) return bwh_post_resume(h, c, k);
  if (!k) {
    k = calloc(1, sizeof *k);
    if (!k) return MHD_NO;
    *con_cls = k;
    bwh_current = k;
    k->rejected = 1; /* until every check passed */
    if (!origin_ok(h, c))
      return refuse(c, MHD_HTTP_FORBIDDEN, -32000,
                    "Forbidden: Host or Origin not allowed", NULL, NULL);
    if (!strcmp(url, "/healthz") || !strcmp(url, "/readyz")) return probe(h, c, url, method);
    const char *meta = bw_oauth_metadata(h->o.oauth, url); /* RFC 9728: no token */
    if (meta) return bwh_reply(c, MHD_HTTP_OK, "application/json", meta, "Cache-Control", "max-age=300");
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
    /* a POST's version is checked with its body (httppost.c: the answer
     * names the request's id) */
    const char *pv = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "MCP-Protocol-Version");
    if (!post && pv && !bwh_version_known(pv))
      return bwh_refuse_rpc(h, c, MHD_HTTP_BAD_REQUEST, NULL, -32022,
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
      if (!bwh_accepts(c, "application/json") && !bwh_accepts(c, "text/event-stream"))
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
  if (!strcmp(method, "POST")) return bwh_post(h, c, k);
  const char *sidh =
      MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Mcp-Session-Id");
  if (!sidh)
    return refuse(c, MHD_HTTP_BAD_REQUEST, -32000,
                  "Bad Request: Mcp-Session-Id header is required", NULL,
                  NULL);
  char addr[INET6_ADDRSTRLEN];
  bwh_client_address(c, addr);
  uint64_t shared_version;
  int why = bwh_share_check(h, k->token, &k->who, addr, sidh, &shared_version); /* httpshare.c */
  if (why == 503) return bwh_store_down(h, c);
  struct bwh_evrec *logged = NULL; /* a GET's stream as the store keeps it (httpevlog.c) */
  if (!strcmp(method, "GET") && !why &&
      bwh_evlog_fetch(h, k->token, &k->who, sidh, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Last-Event-ID"), &logged))
    return bwh_store_down(h, c);
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
    return bwh_reply(c, MHD_HTTP_OK, NULL, "", NULL, NULL);
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
void bwh_completed(void *cls, struct MHD_Connection *c, void **con_cls,
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
void bwh_on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
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

