/*
 * oauth.c - the OAuth 2.1 resource server of the HTTP listener (oauth.h).
 *
 * Keys: the issuer's JWKS, found through its metadata (OpenID discovery,
 * else RFC 8414's oauth-authorization-server; http.oauth.jwks_uri skips
 * it), fetched on the first token, kept for jwks_ttl (or the answer's
 * max-age, not under refetch_interval), fetched again when a token names
 * a kid the set lacks (at most once per refetch_interval: a stream of
 * made-up kids cannot turn into a stream of fetches) and when they
 * expire. A fetch that fails keeps the keys while they live; once they
 * have expired every JWT is refused (503) until a fetch succeeds: fail
 * closed, with a log line per failed fetch. One fetch at a time; the
 * checks themselves take a read lock only.
 *
 * A fetch blocks the pool thread that needs it (at most timeout_ms), as
 * does introspection, which is asked for every request with an opaque
 * token (its answers are not kept: a revoked token stops at once).
 */
#include "oauth.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "core.h"
#include "fetch.h"
#include "http.h" /* bw_http_loopback */
#include "jwt.h"

struct bw_oauth {
  json_t *cfg;
  char *metadata; /* the RFC 9728 document */
  const char *issuer, *audience, *resource_metadata;
  const char *read_scope, *write_scope, *tenant_claim;
  json_t *paths, *tenants, *slots, *read_tools, *introspection;
  int default_tenant;
  double ttl, refetch, timeout_ms;
  int max_introspections; /* at once: each holds a pool thread for a round trip
                           */
  _Atomic int introspecting;
  int skew;
  pthread_rwlock_t keys_lock;
  bw_jwks *keys;     /* NULL: none yet */
  double keys_until; /* monotonic: when they expire */
  pthread_mutex_t fetch_lock;
  double last_try; /* monotonic: the last fetch begun (0: none) */
  char *jwks_uri;  /* known once discovered (or configured) */
};

static const char *str(json_t *o, const char *k) {
  return json_string_value(json_object_get(o, k));
}

static double num(json_t *o, const char *k, double dflt) {
  json_t *v = json_object_get(o, k);
  return json_is_number(v) ? json_number_value(v) : dflt;
}

/* https, or http to a loopback host (a test's or a sidecar's issuer) */
static int url_ok(const char *u) {
  if (!strncmp(u, "https://", 8))
    return 1;
  if (strncmp(u, "http://", 7))
    return 0;
  char host[256];
  const char *p = u + 7, *e = p + strcspn(p, "/?#");
  if (*p == '[') { /* [::1]:port */
    const char *b = memchr(p, ']', (size_t)(e - p));
    if (!b)
      return 0;
    snprintf(host, sizeof host, "%.*s", (int)(b - p + 1), p);
  } else {
    snprintf(host, sizeof host, "%.*s", (int)strcspn(p, ":/?#"), p);
  }
  return bw_http_loopback(host);
}

void bw_oauth_free(bw_oauth *o) {
  if (!o)
    return;
  bw_jwks_free(o->keys);
  free(o->jwks_uri);
  free(o->metadata);
  json_decref(o->cfg);
  pthread_rwlock_destroy(&o->keys_lock);
  pthread_mutex_destroy(&o->fetch_lock);
  free(o);
}

bw_oauth *bw_oauth_new(const char *config, char *err, size_t errlen) {
  json_error_t je;
  json_t *c = json_loads(config, 0, &je);
  bw_oauth *o = c ? calloc(1, sizeof *o) : NULL;
  if (!o) {
    snprintf(err, errlen, "http.oauth: %s", c ? "out of memory" : je.text);
    json_decref(c);
    return NULL;
  }
  o->cfg = c;
  pthread_rwlock_init(&o->keys_lock, NULL);
  pthread_mutex_init(&o->fetch_lock, NULL);
  o->issuer = str(c, "issuer");
  o->audience = str(c, "audience");
  o->resource_metadata = str(c, "resource_metadata");
  o->read_scope = str(c, "read_scope");
  o->write_scope = str(c, "write_scope");
  o->tenant_claim = str(c, "tenant_claim");
  o->paths = json_object_get(c, "metadata_paths");
  o->tenants = json_object_get(c, "tenants");
  o->slots = json_object_get(c, "slots");
  o->read_tools = json_object_get(c, "read_tools");
  o->introspection = json_object_get(c, "introspection");
  o->default_tenant = (int)num(c, "default_tenant", -1);
  o->ttl = num(c, "jwks_ttl", 600);
  o->refetch = num(c, "refetch_interval", 10);
  o->timeout_ms = num(c, "timeout", 5) * 1000;
  o->skew = (int)num(c, "skew", 60);
  /* never every one of the listener's pool threads (http.c: one a CPU, 2
   * to 8): half of them unless told, and at most all but one */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  int pool = cpus < 2 ? 2 : cpus > 8 ? 8 : (int)cpus;
  o->max_introspections =
      (int)num(o->introspection, "max_concurrent", pool / 2);
  if (o->max_introspections > pool - 1)
    o->max_introspections = pool - 1;
  if (o->max_introspections < 1)
    o->max_introspections = 1;
  const char *ju = str(c, "jwks_uri");
  o->jwks_uri = ju ? strdup(ju) : NULL;
  o->metadata = json_dumps(json_object_get(c, "metadata"), JSON_COMPACT);
  const char *bad =
      !o->issuer || !o->audience || !o->resource_metadata || !o->metadata ||
              !json_is_array(o->slots)
          ? "issuer and audience are required"
      : !url_ok(o->issuer)
          ? "issuer must be an https:// URL (http:// only on a loopback host)"
      : ju && !url_ok(ju)
          ? "jwks_uri must be an https:// URL (http:// only on a loopback host)"
          : NULL;
  if (bad) {
    snprintf(err, errlen, "http.oauth: %s", bad);
    bw_oauth_free(o);
    return NULL;
  }
  return o;
}

const char *bw_oauth_metadata(const bw_oauth *o, const char *url) {
  if (!o)
    return NULL;
  size_t i;
  json_t *p;
  json_array_foreach(
      o->paths, i,
      p) if (!strcmp(json_string_value(p) ? json_string_value(p) : "",
                     url)) return o->metadata;
  return NULL;
}

/* ------------------------------------------------------------ keys */

static json_t *fetch_json(const bw_oauth *o, const char *url, char *err,
                          size_t errlen, long *max_age) {
  bw_fetch_req r = {
      .url = url, .timeout_ms = (long)o->timeout_ms, .max_bytes = 1 << 20};
  size_t n;
  char *b = bw_fetch(&r, &n, max_age, err, errlen);
  if (!b)
    return NULL;
  json_error_t je;
  json_t *j = json_loadb(b, n, JSON_REJECT_DUPLICATES, &je);
  free(b);
  if (!json_is_object(j)) {
    snprintf(err, errlen, "%s: not a JSON object", url);
    json_decref(j);
    return NULL;
  }
  return j;
}

/* The jwks_uri from the issuer's metadata (RFC 8414 section 3.3: its
 * issuer must be ours). */
static char *discover(const bw_oauth *o, char *err, size_t errlen) {
  size_t il = strlen(o->issuer);
  int slash = il && o->issuer[il - 1] == '/';
  const char *rest =
      strchr(o->issuer + 8, '/'); /* the issuer's path, after scheme://host */
  char u[2][1024];
  snprintf(u[0], sizeof u[0], "%.*s/.well-known/openid-configuration",
           (int)(il - (size_t)slash), o->issuer);
  snprintf(u[1], sizeof u[1], "%.*s/.well-known/oauth-authorization-server%s",
           (int)(rest ? (size_t)(rest - o->issuer) : il), o->issuer,
           rest && strcmp(rest, "/") ? rest : "");
  for (int i = 0; i < 2; i++) {
    json_t *m = fetch_json(o, u[i], err, errlen, NULL);
    if (!m)
      continue;
    const char *iss = str(m, "issuer"), *ju = str(m, "jwks_uri");
    char *out = NULL;
    if (!iss || strcmp(iss, o->issuer))
      snprintf(err, errlen, "%.200s names issuer %.100s, not %.150s", u[i],
               iss ? iss : "(none)", o->issuer);
    else if (!ju || !url_ok(ju))
      snprintf(err, errlen, "%.300s has no https jwks_uri", u[i]);
    else
      out = strdup(ju);
    json_decref(m);
    if (out)
      return out;
  }
  return NULL;
}

/* Fetch the keys (fetch_lock held): 0, or -1 with a log line. */
static int refresh(bw_oauth *o) {
  char err[512] = "";
  o->last_try = bw_now_mono();
  if (!o->jwks_uri)
    o->jwks_uri = discover(o, err, sizeof err);
  long max_age = -1;
  json_t *doc = o->jwks_uri
                    ? fetch_json(o, o->jwks_uri, err, sizeof err, &max_age)
                    : NULL;
  char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  bw_jwks *k = text ? bw_jwks_parse(text, strlen(text), err, sizeof err) : NULL;
  free(text);
  json_decref(doc);
  if (!k || !bw_jwks_count(k)) {
    if (k)
      snprintf(err, sizeof err, "%s holds no RS256, ES256 or EdDSA signing key",
               o->jwks_uri);
    bw_jwks_free(k);
    pthread_rwlock_rdlock(&o->keys_lock);
    int live = o->keys && bw_now_mono() < o->keys_until;
    pthread_rwlock_unlock(&o->keys_lock);
    fprintf(stderr, "burrow: oauth: cannot fetch the keys of %s: %s; %s\n",
            o->issuer, err,
            live ? "the keys fetched before verify until they expire"
                 : "refusing every JWT (503) until they can be fetched");
    return -1;
  }
  double life =
      max_age < 0 ? o->ttl : fmin(o->ttl, fmax((double)max_age, o->refetch));
  pthread_rwlock_wrlock(&o->keys_lock);
  bw_jwks_free(o->keys);
  o->keys = k;
  o->keys_until = bw_now_mono() + life;
  pthread_rwlock_unlock(&o->keys_lock);
  return 0;
}

static int keys_live(bw_oauth *o) {
  pthread_rwlock_rdlock(&o->keys_lock);
  int live = o->keys && bw_now_mono() < o->keys_until;
  pthread_rwlock_unlock(&o->keys_lock);
  return live;
}

/* Fetch again when there are no live keys (waiting for a fetch another
 * thread has begun only before any keys were had: the first ones are
 * needed), or when unknown names a kid the
 * set lacks (never waiting: a fetch under way brings what there is to
 * bring), at most once per refetch interval. The usual request, with live
 * keys and a known kid, takes no lock here. */
static void maybe_refresh(bw_oauth *o, int unknown) {
  if (!unknown && keys_live(o))
    return;
  /* keys had and expired (the provider's outage, maybe): no waiting
   * either, or every request would queue behind each slow fetch */
  pthread_rwlock_rdlock(&o->keys_lock);
  int had = o->keys != NULL;
  pthread_rwlock_unlock(&o->keys_lock);
  if (unknown || had ? pthread_mutex_trylock(&o->fetch_lock)
                     : pthread_mutex_lock(&o->fetch_lock))
    return;
  double now = bw_now_mono();
  if ((unknown || !keys_live(o)) &&
      (!o->last_try || now - o->last_try >= o->refetch))
    refresh(o);
  pthread_mutex_unlock(&o->fetch_lock);
}

static bw_jwt_status verify(bw_oauth *o, const char *token, json_t **claims,
                            int *have_keys, char *err, size_t errlen) {
  bw_jwt_want w = {o->issuer, o->audience, (double)time(NULL), o->skew};
  pthread_rwlock_rdlock(&o->keys_lock);
  *have_keys = o->keys && bw_now_mono() < o->keys_until;
  bw_jwt_status st = bw_jwt_verify(token, *have_keys ? o->keys : NULL, &w,
                                   claims, err, errlen);
  pthread_rwlock_unlock(&o->keys_lock);
  return st;
}

/* ------------------------------------------------------------ refusals */

static int deny(const bw_oauth *o, bw_oauth_deny *d, unsigned status,
                const char *error, const char *scope, const char *msg) {
  d->status = status;
  d->hname = "WWW-Authenticate";
  int n = snprintf(d->hval, sizeof d->hval, "Bearer resource_metadata=\"%s\"",
                   o->resource_metadata);
  if (error) {
    char desc[200]; /* a quoted-string: no quotes or backslashes inside */
    snprintf(desc, sizeof desc, "%s", msg);
    for (char *p = desc; *p; p++)
      if (*p == '"' || *p == '\\' || (unsigned char)*p < 0x20)
        *p = '\'';
    snprintf(d->hval + n, sizeof d->hval - (size_t)n,
             ", error=\"%s\", error_description=\"%s\"%s%s%s", error, desc,
             scope ? ", scope=\"" : "", scope ? scope : "", scope ? "\"" : "");
  } else if (scope) {
    snprintf(d->hval + n, sizeof d->hval - (size_t)n, ", scope=\"%s\"", scope);
  }
  snprintf(d->msg, sizeof d->msg, "%s: %s",
           status == 401   ? "Unauthorized"
           : status == 403 ? "Forbidden"
                           : "Service Unavailable",
           msg);
  if (status ==
      503) { /* the provider's trouble, not the token's: come back later */
    d->hname = "Retry-After";
    snprintf(d->hval, sizeof d->hval, "5");
  }
  return -1;
}

void bw_oauth_plain_deny(bw_oauth_deny *d) {
  d->status = 401;
  d->hname = "WWW-Authenticate";
  snprintf(d->hval, sizeof d->hval, "Bearer realm=\"burrow\"");
  snprintf(d->msg, sizeof d->msg,
           "Unauthorized: a valid bearer token is required");
}

/* The scopes the server asks for: both when it has both. */
static const char *wanted(const bw_oauth *o, char *buf, size_t n) {
  if (!o->read_scope && !o->write_scope)
    return NULL;
  snprintf(buf, n, "%s%s%s", o->read_scope ? o->read_scope : "",
           o->read_scope && o->write_scope ? " " : "",
           o->write_scope ? o->write_scope : "");
  return buf;
}

/* ------------------------------------------------------------ principals */

static int has_scope(json_t *claims, const char *want) {
  const char *s = str(claims, "scope");
  size_t wl = strlen(want);
  if (s) /* a space-separated list (RFC 9068) */
    for (const char *p = s; *p;) {
      size_t l = strcspn(p, " ");
      if (l == wl && !strncmp(p, want, wl))
        return 1;
      p += l;
      p += strspn(p, " ");
    }
  size_t i;
  json_t *x;
  json_array_foreach(json_object_get(claims, "scp"), i,
                     x) if (json_is_string(x) &&
                            !strcmp(json_string_value(x), want)) return 1;
  return 0;
}

/* claims (checked) to who: 0, or -1 and the 403 in d */
static int principal(const bw_oauth *o, json_t *claims, bw_oauth_who *who,
                     bw_oauth_deny *d) {
  const char *sub = str(claims, "sub");
  if (!sub)
    sub = str(claims, "client_id");
  if (!sub)
    return deny(o, d, 401, "invalid_token", NULL, "the token names no sub");
  int rw = !o->read_scope && !o->write_scope;
  if (!rw && o->write_scope)
    rw = has_scope(claims, o->write_scope);
  int ro = !rw && o->read_scope && has_scope(claims, o->read_scope);
  if (!rw && !ro) /* the least that serves a call: the read scope (MCP
                     2026-07-28, SEP-2350) */
    return deny(o, d, 403, "insufficient_scope",
                o->read_scope ? o->read_scope : o->write_scope,
                "the token has none of the scopes this server takes");
  int t = o->default_tenant;
  if (o->tenant_claim) {
    const char *v = str(claims, o->tenant_claim);
    json_t *idx = v ? json_object_get(o->tenants, v) : NULL;
    if (idx)
      t = (int)json_integer_value(idx);
  }
  if (t < 0 || (size_t)t >= json_array_size(o->slots))
    /* a token for no tenant here is not valid for this resource, as one for
     * another audience */
    return deny(o, d, 401, "invalid_token", NULL,
                "the token's tenant claim names no tenant of this server");
  const char *iss = str(claims, "iss");
  size_t n = strlen(iss ? iss : "") + strlen(sub) + 2;
  char *both = malloc(n), hash[BW_HASH_STR];
  if (!both)
    return deny(o, d, 503, NULL, NULL, "out of memory");
  snprintf(both, n, "%s\n%s", iss ? iss : "", sub);
  bw_sha256(both, strlen(both), hash);
  free(both);
  memcpy(who->id, hash + 7, 64);
  who->id[64] = '\0';
  who->tenant = t;
  who->slot = (int)json_integer_value(json_array_get(o->slots, (size_t)t));
  who->read_only = (unsigned char)!rw;
  who->set = 1;
  return 0;
}

/* RFC 7662: the issuer says whether an opaque token is active, and what it
 * is; its aud, iss and exp are checked here as a JWT's would be. */
static json_t *introspect(bw_oauth *o, const char *token, char *err,
                          size_t errlen) {
  const char *ep = str(o->introspection, "endpoint");
  char *et = bw_fetch_escape(token),
       *eu = bw_fetch_escape(str(o->introspection, "client_id"));
  char *es = bw_fetch_escape(str(o->introspection, "client_secret"));
  size_t fl = et ? strlen(et) + 64 : 0;
  char *form = et ? malloc(fl) : NULL;
  json_t *j = NULL;
  if (form)
    snprintf(form, fl, "token=%s&token_type_hint=access_token", et);
  if (!ep || !form || !eu || !es) {
    snprintf(err, errlen,
             "introspection is not configured (endpoint, client_id, "
             "client_secret_file)");
  } else {
    bw_fetch_req r = {.url = ep,
                      .form = form,
                      .user = eu,
                      .password = es,
                      .timeout_ms = (long)o->timeout_ms,
                      .max_bytes = 64 << 10};
    size_t n;
    char *b = bw_fetch(&r, &n, NULL, err, errlen);
    j = b ? json_loadb(b, n, JSON_REJECT_DUPLICATES, NULL) : NULL;
    if (b && !json_is_object(j))
      snprintf(err, errlen, "%s: not a JSON object", ep);
    free(b);
  }
  free(form);
  free(et);
  free(eu);
  free(es);
  if (!json_is_object(j)) {
    json_decref(j);
    fprintf(
        stderr,
        "burrow: oauth: token introspection failed: %s; refusing the token\n",
        err);
    return NULL;
  }
  return j;
}

int bw_oauth_admit(bw_oauth *o, const char *a, bw_oauth_who *who,
                   bw_oauth_deny *d) {
  memset(who, 0, sizeof *who);
  char scopes[256];
  if (!a ||
      strncasecmp(a, "Bearer ",
                  7)) /* the scope a client should ask for (MCP 2025-11-25) */
    return deny(o, d, 401, NULL, wanted(o, scopes, sizeof scopes),
                "a bearer token is required");
  const char *token = a + 7;
  if (strlen(token) > BW_JWT_MAX)
    return deny(o, d, 401, "invalid_token", NULL, "the token is too long");
  char err[320] = "";
  json_t *claims = NULL;
  int dots = 0;
  for (const char *p = token; *p; p++)
    dots += *p == '.';
  if (dots != 2 && o->introspection) { /* opaque: the issuer says */
    /* bounded: made-up opaque tokens cannot hold every pool thread in round
     * trips */
    if (atomic_fetch_add(&o->introspecting, 1) >= o->max_introspections) {
      atomic_fetch_sub(&o->introspecting, 1);
      deny(o, d, 503, NULL, NULL,
           "too many token introspections at once "
           "(http.oauth.introspection.max_concurrent)");
      snprintf(d->hval, sizeof d->hval, "1");
      return -1;
    }
    json_t *r = introspect(o, token, err, sizeof err);
    atomic_fetch_sub(&o->introspecting, 1);
    if (!r)
      return deny(o, d, 503, NULL, NULL,
                  "the authorization server cannot be asked about the token");
    bw_jwt_want w = {o->issuer, o->audience, (double)time(NULL), o->skew};
    const char *iss = str(r, "iss");
    json_t *aud = json_object_get(r, "aud");
    int ok = json_is_true(json_object_get(r, "active"));
    if (ok) { /* the same checks as a JWT's; iss, when the answer names none, is
                 the issuer asked */
      if (!iss)
        json_object_set_new(r, "iss", json_string(o->issuer));
      if (!aud)
        snprintf(err, sizeof err, "the token names no audience");
      ok = aud && bw_jwt_claims_ok(r, &w, err, sizeof err) == BW_JWT_OK;
    } else {
      snprintf(err, sizeof err, "the token is not active");
    }
    if (!ok) {
      json_decref(r);
      return deny(o, d, 401, "invalid_token", NULL, err);
    }
    int rc = principal(o, r, who, d);
    json_decref(r);
    return rc;
  }
  int have;
  if (dots == 2)
    maybe_refresh(o, 0); /* text that is no JWT makes no fetch */
  bw_jwt_status st = verify(o, token, &claims, &have, err, sizeof err);
  if (st == BW_JWT_NOKEY && have) { /* a new key at the issuer, maybe */
    maybe_refresh(o, 1);
    st = verify(o, token, &claims, &have, err, sizeof err);
  }
  if (!have && st != BW_JWT_MALFORMED) /* a malformed token is the client's
                                          fault, keys or not */
    return deny(o, d, 503, NULL, NULL,
                "the issuer's keys cannot be fetched; see the server's log");
  if (st)
    return deny(o, d, 401, "invalid_token", NULL, err);
  int rc = principal(o, claims, who, d);
  json_decref(claims);
  return rc;
}

/* ------------------------------------------------------------ scopes */

static int is_read_tool(const bw_oauth *o, int tenant, const char *name) {
  size_t i;
  json_t *x;
  json_array_foreach(json_array_get(o->read_tools, (size_t)tenant), i,
                     x) if (!strcmp(json_string_value(x), name)) return 1;
  return 0;
}

static int write_call(const bw_oauth *o, int tenant, const json_t *m) {
  const char *method = json_string_value(json_object_get(m, "method"));
  if (!method || strcmp(method, "tools/call"))
    return 0;
  const char *name =
      json_string_value(json_object_get(json_object_get(m, "params"), "name"));
  return !name || !is_read_tool(o, tenant, name);
}

int bw_oauth_scope_refused(const bw_oauth *o, const bw_oauth_who *who,
                           const json_t *m, bw_oauth_deny *d) {
  if (!o || !who->set || !who->read_only)
    return 0;
  int refused = 0;
  if (json_is_array(m)) {
    size_t i;
    json_t *x;
    json_array_foreach(m, i, x) refused |= write_call(o, who->tenant, x);
  } else {
    refused = write_call(o, who->tenant, m);
  }
  if (!refused)
    return 0;
  /* only the scope this call needs, not the token's own besides (RFC 6750
   * 3.1; MCP 2026-07-28, SEP-2350): a client asks for the union itself */
  deny(o, d, 403, "insufficient_scope", o->write_scope,
       "the token's scope allows the read tools only");
  return 1;
}

int bw_oauth_same(const bw_oauth_who *a, const bw_oauth_who *b) {
  if (a->set != b->set)
    return 0;
  /* the scope too: a session's read-only mark is what its worker enforces */
  return !a->set || (!memcmp(a->id, b->id, 64) && a->read_only == b->read_only);
}
