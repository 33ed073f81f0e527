/*
 * httpmetrics.c - /metrics for Prometheus on a listener of its own
 * (http.metrics.listen; httpmetrics.h). A second libmicrohttpd daemon
 * with one thread and a few connections: the MCP listener never answers
 * /metrics, and a scrape never waits for an MCP connection.
 *
 * Two sources, one exposition (promtext.c): the listener's own counts
 * (sessions, streams, listens, queued requests and bytes, calls running,
 * connections, busy workers) read under its lock at each scrape, no copy
 * kept; the workers' reports (a call's tool, outcome and latency, a
 * policy's denial, an approval's end) added up here under a lock of
 * this file's, from lua/burrow/init.lua's one point after a call (beside
 * its audit line). Labels are bounded: a tenant or a tool only from the
 * configuration (a call of another name counts as unknown, unlabelled), a
 * policy from the configured labels (else "other"), a code of the form
 * of burrow's stable codes and at most MAX_CODES of them (else "OTHER").
 */
#include "httpmetrics.h"

#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "burrow.h" /* BURROW_VERSION_STRING: burrow_build_info */
#include "httpint.h"
#include "mhd.h"
#include "promtext.h"
#include "state.h"

enum { MAX_CODES = 32, CODE_LEN = 40, NB = 14, CONN_MAX = 16, CONN_TIMEOUT = 10 };
enum { OUT_OK, OUT_DENIED, OUT_ERROR };
static const char *const OUTCOMES[] = {"ok", "denied", "error"};
enum { NAPPROVALS = 4 };
static const char *const APPROVALS[NAPPROVALS] = {"approved", "denied", "unavailable", "not_asked"};
/* seconds: a read of a small file is well under a millisecond, a grep of
 * a large tree seconds */
static const double BOUNDS[NB] = {0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                  0.1,    0.25,  0.5,    1,     2.5,  5,    10};

/* One tenant's calls of one tool: by (code, outcome) slot, and their latency. */
typedef struct toolstat {
  uint64_t by_code[MAX_CODES];
  uint64_t buckets[NB + 1]; /* the last: above every bound */
  double sum;
} toolstat;

struct bw_metrics {
  bw_http *h;
  struct MHD_Daemon *d;
  int allow_remote;
  int n_tenants, n_tools, n_policies;
  char **tools, **policies; /* copies of the configured names */
  pthread_mutex_t mu;       /* what follows */
  toolstat **calls;         /* [tenant * n_tools + tool], made at its first call */
  char codes[MAX_CODES][CODE_LEN]; /* slot 0: ok (no code label); 1, 2: OTHER denied, error */
  int code_out[MAX_CODES];
  int n_codes;
  uint64_t *unknown;   /* [tenant] */
  uint64_t *denials;   /* [tenant * (n_policies + 1) + policy]; the last: "other" */
  uint64_t *approvals; /* [tenant * NAPPROVALS + result] */
};

/* ------------------------------------------------------- the reports */

static int index_of(char *const *names, int n, const char *name) {
  for (int i = 0; name && i < n; i++)
    if (!strcmp(names[i], name)) return i;
  return -1;
}

/* The slot of (code, outcome), taken at its first use (lock held). A code
 * is burrow's form, CAPITALS_AND_DIGITS, else OTHER: a tool's code is
 * the operator's, but nothing lets one grow the series without bound. */
static int code_slot(bw_metrics *m, const char *code, int out) {
  if (out == OUT_OK) return 0;
  size_t n = code ? strlen(code) : 0;
  int ok = n > 0 && n < CODE_LEN;
  for (size_t i = 0; ok && i < n; i++)
    ok = (code[i] >= 'A' && code[i] <= 'Z') || code[i] == '_' || (i > 0 && code[i] >= '0' && code[i] <= '9');
  int other = out == OUT_DENIED ? 1 : 2;
  if (!ok) return other;
  for (int i = 3; i < m->n_codes; i++)
    if (m->code_out[i] == out && !strcmp(m->codes[i], code)) return i;
  if (m->n_codes == MAX_CODES) return other;
  memcpy(m->codes[m->n_codes], code, n + 1);
  m->code_out[m->n_codes] = out;
  return m->n_codes++;
}

void bw_metrics_call(bw_metrics *m, int tenant, const char *tool, const char *outcome,
                     const char *code, double seconds) {
  if (!m || tenant < 0 || tenant >= m->n_tenants) return;
  int t = index_of(m->tools, m->n_tools, tool);
  if (t < 0) return bw_metrics_unknown_tool(m, tenant);
  int out = outcome && !strcmp(outcome, "ok") ? OUT_OK
            : outcome && !strcmp(outcome, "denied") ? OUT_DENIED : OUT_ERROR;
  int b = 0;
  while (b < NB && !(seconds <= BOUNDS[b])) b++; /* le: at most the bound (NaN: above all) */
  pthread_mutex_lock(&m->mu);
  toolstat **slot = &m->calls[(size_t)tenant * (size_t)m->n_tools + (size_t)t];
  if (!*slot) *slot = calloc(1, sizeof **slot);
  if (*slot) {
    (*slot)->by_code[code_slot(m, code, out)]++;
    (*slot)->buckets[b]++;
    if (seconds > 0) (*slot)->sum += seconds;
  }
  pthread_mutex_unlock(&m->mu);
}

void bw_metrics_unknown_tool(bw_metrics *m, int tenant) {
  if (!m || tenant < 0 || tenant >= m->n_tenants) return;
  pthread_mutex_lock(&m->mu);
  m->unknown[tenant]++;
  pthread_mutex_unlock(&m->mu);
}

void bw_metrics_denial(bw_metrics *m, int tenant, const char *policy) {
  if (!m || tenant < 0 || tenant >= m->n_tenants) return;
  int p = index_of(m->policies, m->n_policies, policy);
  if (p < 0) p = m->n_policies;
  pthread_mutex_lock(&m->mu);
  m->denials[(size_t)tenant * (size_t)(m->n_policies + 1) + (size_t)p]++;
  pthread_mutex_unlock(&m->mu);
}

void bw_metrics_approval(bw_metrics *m, int tenant, const char *result) {
  if (!m || tenant < 0 || tenant >= m->n_tenants) return;
  int r = index_of((char *const *)APPROVALS, NAPPROVALS, result);
  if (r < 0) return;
  pthread_mutex_lock(&m->mu);
  m->approvals[(size_t)tenant * NAPPROVALS + (size_t)r]++;
  pthread_mutex_unlock(&m->mu);
}

/* ------------------------------------------------------- the scrape */

/* What the listener counts per tenant, copied under its lock. */
typedef struct tenant_now {
  int sessions, streams, listens, running, inflight, queued;
  size_t queued_bytes;
} tenant_now;

typedef struct listener_now {
  int connections, workers, busy, draining;
} listener_now;

static void read_listener(bw_http *h, tenant_now *tn, int nt, listener_now *ln) {
  pthread_mutex_lock(&h->mu);
  for (int t = 0; t < nt; t++) {
    int slot = bwh_tenant(h, t);
    tn[t].sessions = h->ten_sessions[t];
    tn[t].inflight = h->ten_calls[t];
    tn[t].streams = h->ten_streams[slot];
    tn[t].listens = h->ten_listens[slot];
    tn[t].running = h->ten_running[slot];
    tn[t].queued_bytes = h->ten_queued[slot];
  }
  for (const session *s = h->sessions; s; s = s->next)
    if (s->tenant >= 0 && s->tenant < nt)
      for (const bw_http_item *it = s->head; it; it = it->next) tn[s->tenant].queued++;
  ln->connections = h->conns;
  ln->workers = h->o.workers;
  for (int i = 0; i < h->o.workers; i++) ln->busy += h->w[i].cur != NULL;
  pthread_mutex_unlock(&h->mu);
  ln->draining = atomic_load(&h->draining);
}

/* Open fds of the process (the entry of the listing's own fd left out). */
static int open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (!d) return -1;
  int n = 0;
  for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1;
}

typedef struct gauge {
  const char *name, *help;
  size_t off; /* in tenant_now */
  int is_size;
} gauge;

static const gauge TENANT_GAUGES[] = {
    {"burrow_http_sessions", "Live MCP sessions (a subscriptions/listen is one).",
     offsetof(tenant_now, sessions), 0},
    {"burrow_http_streams", "Long SSE streams open: GET streams and listens.", offsetof(tenant_now, streams), 0},
    {"burrow_http_listens", "subscriptions/listen streams open.", offsetof(tenant_now, listens), 0},
    {"burrow_http_queued_requests", "Requests queued for a worker, not yet taken (queue depth).",
     offsetof(tenant_now, queued), 0},
    {"burrow_http_queued_bytes", "Body bytes of the requests waiting for the workers.",
     offsetof(tenant_now, queued_bytes), 1},
    {"burrow_http_running_calls", "Requests running on a worker now.", offsetof(tenant_now, running), 0},
    {"burrow_http_requests_in_flight", "Requests admitted and not yet answered (queued or running).",
     offsetof(tenant_now, inflight), 0},
};

static void write_listener(FILE *f, bw_metrics *m, const tenant_now *tn, const listener_now *ln) {
  for (size_t g = 0; g < sizeof TENANT_GAUGES / sizeof *TENANT_GAUGES; g++) {
    bw_prom_family(f, TENANT_GAUGES[g].name, "gauge", TENANT_GAUGES[g].help);
    for (int t = 0; t < m->n_tenants; t++) {
      const char *p = (const char *)&tn[t] + TENANT_GAUGES[g].off;
      double v = TENANT_GAUGES[g].is_size ? (double)*(const size_t *)p : (double)*(const int *)p;
      bw_prom_label l = {"tenant", bwh_tenant_name(m->h, t)};
      bw_prom_sample(f, TENANT_GAUGES[g].name, &l, 1, v);
    }
  }
  bw_prom_family(f, "burrow_http_connections", "gauge", "Open connections to the MCP listener.");
  bw_prom_sample(f, "burrow_http_connections", NULL, 0, ln->connections);
  bw_prom_family(f, "burrow_http_workers", "gauge", "Worker threads.");
  bw_prom_sample(f, "burrow_http_workers", NULL, 0, ln->workers);
  bw_prom_family(f, "burrow_http_workers_busy", "gauge", "Worker threads holding a session now.");
  bw_prom_sample(f, "burrow_http_workers_busy", NULL, 0, ln->busy);
  bw_prom_family(f, "burrow_http_draining", "gauge", "1 from SIGTERM on: not ready, new requests refused.");
  bw_prom_sample(f, "burrow_http_draining", NULL, 0, ln->draining);
}

/* The workers' reports (lock m->mu held). */
static void write_reports(FILE *f, bw_metrics *m) {
  bw_prom_family(f, "burrow_tool_calls_total", "counter",
                 "Tool calls answered, by tenant, tool and outcome (ok, denied: a policy or the "
                 "sandbox refused, error: the code says which).");
  for (int t = 0; t < m->n_tenants; t++)
    for (int k = 0; k < m->n_tools; k++) {
      const toolstat *s = m->calls[(size_t)t * (size_t)m->n_tools + (size_t)k];
      for (int c = 0; s && c < m->n_codes; c++) {
        if (!s->by_code[c]) continue;
        bw_prom_label l[] = {{"tenant", bwh_tenant_name(m->h, t)}, {"tool", m->tools[k]},
                             {"outcome", OUTCOMES[m->code_out[c]]}, {"code", c ? m->codes[c] : NULL}};
        bw_prom_sample(f, "burrow_tool_calls_total", l, 4, (double)s->by_code[c]);
      }
    }
  bw_prom_family(f, "burrow_tool_call_duration_seconds", "histogram",
                 "Seconds from a tool call's start to its answer, by tenant and tool.");
  for (int t = 0; t < m->n_tenants; t++)
    for (int k = 0; k < m->n_tools; k++) {
      const toolstat *s = m->calls[(size_t)t * (size_t)m->n_tools + (size_t)k];
      if (!s) continue;
      bw_prom_label l[] = {{"tenant", bwh_tenant_name(m->h, t)}, {"tool", m->tools[k]}};
      bw_prom_histogram(f, "burrow_tool_call_duration_seconds", l, 2, BOUNDS, NB, s->buckets, s->sum);
    }
  bw_prom_family(f, "burrow_unknown_tool_calls_total", "counter",
                 "tools/call requests naming no tool the tenant serves (the name is not kept).");
  for (int t = 0; t < m->n_tenants; t++) {
    bw_prom_label l = {"tenant", bwh_tenant_name(m->h, t)};
    bw_prom_sample(f, "burrow_unknown_tool_calls_total", &l, 1, (double)m->unknown[t]);
  }
  bw_prom_family(f, "burrow_policy_denials_total", "counter",
                 "Requests a policy denied (each object a call touches is one), by tenant and policy.");
  for (int t = 0; t < m->n_tenants; t++)
    for (int p = 0; p <= m->n_policies; p++) {
      bw_prom_label l[] = {{"tenant", bwh_tenant_name(m->h, t)},
                           {"policy", p < m->n_policies ? m->policies[p] : "other"}};
      uint64_t v = m->denials[(size_t)t * (size_t)(m->n_policies + 1) + (size_t)p];
      if (p < m->n_policies || v) bw_prom_sample(f, "burrow_policy_denials_total", l, 2, (double)v);
    }
  bw_prom_family(f, "burrow_approvals_total", "counter",
                 "Policy asks and how they ended (approved, denied, unavailable: the client cannot be "
                 "asked, not_asked: an entry of a walk), by tenant.");
  for (int t = 0; t < m->n_tenants; t++)
    for (int r = 0; r < NAPPROVALS; r++) {
      bw_prom_label l[] = {{"tenant", bwh_tenant_name(m->h, t)}, {"result", APPROVALS[r]}};
      bw_prom_sample(f, "burrow_approvals_total", l, 2, (double)m->approvals[(size_t)t * NAPPROVALS + (size_t)r]);
    }
}

static void write_process(FILE *f) {
  bw_prom_family(f, "burrow_state_store_errors_total", "counter",
                 "State store operations that got no answer (STORE_UNAVAILABLE, EIO), by operation.");
  for (int op = 0; op < BW_STATE_NOPS; op++) {
    const char *name = "";
    uint64_t v = bw_state_failures(op, &name);
    bw_prom_label l = {"op", name};
    bw_prom_sample(f, "burrow_state_store_errors_total", &l, 1, (double)v);
  }
  int fds = open_fds();
  if (fds >= 0) {
    bw_prom_family(f, "process_open_fds", "gauge", "Open file descriptors.");
    bw_prom_sample(f, "process_open_fds", NULL, 0, fds);
  }
  struct rlimit rl;
  if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY) {
    bw_prom_family(f, "process_max_fds", "gauge", "The limit on open file descriptors.");
    bw_prom_sample(f, "process_max_fds", NULL, 0, (double)rl.rlim_cur);
  }
  bw_prom_family(f, "burrow_build_info", "gauge", "Always 1; the version in its label.");
  bw_prom_label l = {"version", BURROW_VERSION_STRING};
  bw_prom_sample(f, "burrow_build_info", &l, 1, 1);
}

/* The whole exposition, malloc'd (NULL: no memory). */
static char *render(bw_metrics *m, size_t *len) {
  tenant_now *tn = calloc((size_t)m->n_tenants + 1, sizeof *tn);
  if (!tn) return NULL;
  listener_now ln = {0};
  read_listener(m->h, tn, m->n_tenants, &ln);
  char *buf = NULL;
  size_t n = 0;
  FILE *f = open_memstream(&buf, &n);
  if (!f) {
    free(tn);
    return NULL;
  }
  write_listener(f, m, tn, &ln);
  free(tn);
  pthread_mutex_lock(&m->mu);
  write_reports(f, m);
  pthread_mutex_unlock(&m->mu);
  write_process(f);
  int bad = ferror(f);
  if (fclose(f) || bad) {
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

/* ---------------------------------------------------- the listener */

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *text,
                              const char *hname, const char *hval) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(text), (void *)text, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "text/plain; charset=utf-8");
  if (hname) MHD_add_response_header(r, hname, hval);
  enum MHD_Result rc = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return rc;
}

/* Bound to loopback, the Host must name loopback too: a web page whose
 * name an attacker rebinds to 127.0.0.1 reads nothing. */
static int host_ok(const bw_metrics *m, struct MHD_Connection *c) {
  if (m->allow_remote) return 1;
  const char *host = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
  char name[256];
  if (!host) return 0;
  bwh_host_name(host, name, sizeof name);
  return bw_http_loopback(name);
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **con_cls) {
  (void)version;
  (void)upload;
  (void)con_cls;
  bw_metrics *m = cls;
  if (*upload_size) { /* a body is read and dropped: the answer is queued already */
    *upload_size = 0;
    return MHD_YES;
  }
  if (!host_ok(m, c)) return answer(c, MHD_HTTP_FORBIDDEN, "Forbidden: Host not allowed\n", NULL, NULL);
  if (strcmp(url, "/metrics"))
    return answer(c, MHD_HTTP_NOT_FOUND, "Not Found: the endpoint is /metrics\n", NULL, NULL);
  if (strcmp(method, "GET") && strcmp(method, "HEAD"))
    return answer(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET or HEAD\n", "Allow", "GET, HEAD");
  size_t n = 0;
  char *body = render(m, &n);
  if (!body) return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "no memory\n", NULL, NULL);
  struct MHD_Response *r = MHD_create_response_from_buffer(n, body, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
  MHD_add_response_header(r, "Cache-Control", "no-store");
  enum MHD_Result rc = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return rc;
}

static char **copy_names(const char *const *v, int n) {
  char **out = calloc((size_t)n + 1, sizeof *out);
  for (int i = 0; out && i < n; i++)
    if (!(out[i] = strdup(v[i] ? v[i] : ""))) {
      while (i--) free(out[i]);
      free(out);
      return NULL;
    }
  return out;
}

static void free_names(char **v, int n) {
  for (int i = 0; v && i < n; i++) free(v[i]);
  free(v);
}

void bw_metrics_free(bw_metrics *m) {
  if (!m) return;
  for (size_t i = 0; m->calls && i < (size_t)m->n_tenants * (size_t)m->n_tools; i++) free(m->calls[i]);
  free(m->calls);
  free(m->unknown);
  free(m->denials);
  free(m->approvals);
  free_names(m->tools, m->n_tools);
  free_names(m->policies, m->n_policies);
  pthread_mutex_destroy(&m->mu);
  free(m);
}

bw_metrics *bw_metrics_start(bw_http *h, const bw_metrics_opts *o, char *err, size_t errlen) {
  if (!o->allow_remote && !bw_http_loopback(o->host)) {
    snprintf(err, errlen,
             "refusing to serve metrics on %s: a non-loopback address needs "
             "http.metrics.allow_remote: true (the metrics name tenants and tools; docs/config.md)",
             o->host);
    return NULL;
  }
  struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  char port[16];
  snprintf(port, sizeof port, "%d", o->port);
  int gai = getaddrinfo(o->host, port, &hints, &ai);
  if (gai) {
    snprintf(err, errlen, "http.metrics.listen: cannot resolve %s: %s", o->host, gai_strerror(gai));
    return NULL;
  }
  bw_metrics *m = calloc(1, sizeof *m);
  if (!m) {
    freeaddrinfo(ai);
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&m->mu, NULL);
  m->h = h;
  m->allow_remote = o->allow_remote;
  m->n_tenants = h->o.n_tenants > 0 ? h->o.n_tenants : 1;
  m->n_tools = o->n_tools;
  m->n_policies = o->n_policies;
  m->n_codes = 3;
  strcpy(m->codes[1], "OTHER");
  strcpy(m->codes[2], "OTHER");
  m->code_out[0] = OUT_OK;
  m->code_out[1] = OUT_DENIED;
  m->code_out[2] = OUT_ERROR;
  size_t nt = (size_t)m->n_tenants;
  m->tools = copy_names(o->tools, o->n_tools);
  m->policies = copy_names(o->policies, o->n_policies);
  m->calls = calloc(nt * (size_t)o->n_tools + 1, sizeof *m->calls);
  m->unknown = calloc(nt, sizeof *m->unknown);
  m->denials = calloc(nt * (size_t)(o->n_policies + 1), sizeof *m->denials);
  m->approvals = calloc(nt * NAPPROVALS, sizeof *m->approvals);
  if (m->tools && m->policies && m->calls && m->unknown && m->denials && m->approvals)
    m->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG |
                                (ai->ai_family == AF_INET6 ? MHD_USE_IPv6 : 0),
                            (uint16_t)o->port, NULL, NULL, handler, m, MHD_OPTION_SOCK_ADDR, ai->ai_addr,
                            MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONN_MAX,
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONN_TIMEOUT, MHD_OPTION_END);
  freeaddrinfo(ai);
  if (!m->d) {
    snprintf(err, errlen, "http.metrics.listen: cannot listen on %s:%d: %s", o->host, o->port,
             strerror(errno));
    bw_metrics_free(m);
    return NULL;
  }
  return m;
}

int bw_metrics_port(const bw_metrics *m) {
  const union MHD_DaemonInfo *i = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT);
  return i ? i->port : 0;
}

void bw_metrics_stop(bw_metrics *m) {
  if (!m || !m->d) return;
  MHD_stop_daemon(m->d);
  m->d = NULL;
}
