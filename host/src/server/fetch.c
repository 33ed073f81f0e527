/*
 * fetch.c - a small HTTP document with libcurl (fetch.h), opened on first
 * use by the soname of the ABI its header describes (Debian 12: libcurl4).
 * Bounded: a timeout, a byte cap, http and https only, no redirects (an
 * issuer's documents are where its metadata says).
 */
#define CURL_DISABLE_TYPECHECK /* setopt goes through our table, not curl's    \
                                  macro */
#include "fetch.h"

#include <ctype.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "dynlib.h"

static struct {
  __typeof__(&curl_global_init) global_init;
  __typeof__(&curl_easy_init) init;
  __typeof__(&curl_easy_setopt) setopt;
  __typeof__(&curl_easy_perform) perform;
  __typeof__(&curl_easy_getinfo) getinfo;
  __typeof__(&curl_easy_cleanup) cleanup;
  __typeof__(&curl_easy_strerror) strerror;
  __typeof__(&curl_easy_escape) escape;
  __typeof__(&curl_free) free;
} cu;

static const bw_dynsym fns[] = {
    {(void **)&cu.global_init, "curl_global_init"},
    {(void **)&cu.init, "curl_easy_init"},
    {(void **)&cu.setopt, "curl_easy_setopt"},
    {(void **)&cu.perform, "curl_easy_perform"},
    {(void **)&cu.getinfo, "curl_easy_getinfo"},
    {(void **)&cu.cleanup, "curl_easy_cleanup"},
    {(void **)&cu.strerror, "curl_easy_strerror"},
    {(void **)&cu.escape, "curl_easy_escape"},
    {(void **)&cu.free, "curl_free"},
};

static bw_dynlib lib = BW_DYNLIB("libcurl.so.4", "libcurl4", fns);
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int global_rc = -1;

static void global(void) {
  global_rc = cu.global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? 0 : -1;
}

static int load(char *err, size_t errlen) {
  if (bw_dynlib_load(&lib, err, errlen))
    return -1;
  pthread_once(&once, global); /* curl_global_init is not thread-safe: once */
  if (global_rc)
    snprintf(err, errlen, "curl_global_init failed");
  return global_rc;
}

typedef struct sink {
  char *b;
  size_t n, cap, max;
  long max_age;
} sink;

static size_t on_body(char *p, size_t size, size_t nmemb, void *ud) {
  sink *s = ud;
  size_t n = size * nmemb;
  if (s->n + n > s->max)
    return 0; /* over the cap: curl stops with an error */
  if (s->n + n + 1 > s->cap) {
    size_t cap = (s->n + n + 1) * 2;
    char *b = realloc(s->b, cap);
    if (!b)
      return 0;
    s->b = b;
    s->cap = cap;
  }
  memcpy(s->b + s->n, p, n);
  s->n += n;
  s->b[s->n] = '\0';
  return n;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *ud) {
  sink *s = ud;
  size_t n = size * nmemb;
  char line[256];
  if (n < sizeof line && !strncasecmp(p, "Cache-Control:", 14)) {
    memcpy(line, p, n);
    line[n] = '\0';
    for (char *c = line; *c; c++)
      *c = (char)tolower((unsigned char)*c);
    char *m = strstr(line, "max-age=");
    if (m)
      s->max_age = strtol(m + 8, NULL, 10);
    if (strstr(line, "no-store") || strstr(line, "no-cache"))
      s->max_age = 0;
  }
  return n;
}

char *bw_fetch(const bw_fetch_req *r, size_t *len, long *max_age, char *err,
               size_t errlen) {
  if (load(err, errlen))
    return NULL;
  CURL *c = cu.init();
  if (!c) {
    snprintf(err, errlen, "curl_easy_init failed");
    return NULL;
  }
  sink s = {.max = r->max_bytes ? r->max_bytes : 1 << 20, .max_age = -1};
  char cerr[CURL_ERROR_SIZE] = "";
  cu.setopt(c, CURLOPT_URL, r->url);
  cu.setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
  cu.setopt(c, CURLOPT_FOLLOWLOCATION, 0L);
  cu.setopt(c, CURLOPT_NOSIGNAL, 1L); /* threads: no SIGALRM for DNS timeouts */
  cu.setopt(c, CURLOPT_TIMEOUT_MS, r->timeout_ms > 0 ? r->timeout_ms : 5000L);
  cu.setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
            r->timeout_ms > 0 ? r->timeout_ms : 5000L);
  cu.setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  cu.setopt(c, CURLOPT_WRITEDATA, &s);
  cu.setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  cu.setopt(c, CURLOPT_HEADERDATA, &s);
  cu.setopt(c, CURLOPT_ERRORBUFFER, cerr);
  cu.setopt(c, CURLOPT_USERAGENT, "burrow");
  if (r->form)
    cu.setopt(c, CURLOPT_POSTFIELDS, r->form);
  if (r->user) {
    cu.setopt(c, CURLOPT_USERNAME, r->user);
    cu.setopt(c, CURLOPT_PASSWORD, r->password ? r->password : "");
  }
  CURLcode rc = cu.perform(c);
  long status = 0;
  cu.getinfo(c, CURLINFO_RESPONSE_CODE, &status);
  cu.cleanup(c);
  if (rc != CURLE_OK || status != 200) {
    if (rc == CURLE_WRITE_ERROR && s.n + 1 >= s.max)
      snprintf(err, errlen, "%s: the answer is over %zu bytes", r->url, s.max);
    else if (rc != CURLE_OK)
      snprintf(err, errlen, "%s: %s", r->url, cerr[0] ? cerr : cu.strerror(rc));
    else
      snprintf(err, errlen, "%s: HTTP %ld", r->url, status);
    free(s.b);
    return NULL;
  }
  if (!s.b && !(s.b = calloc(1, 1))) {
    snprintf(err, errlen, "out of memory");
    return NULL;
  }
  *len = s.n;
  if (max_age)
    *max_age = s.max_age;
  return s.b;
}

char *bw_fetch_escape(const char *s) {
  char err[256];
  if (load(err, sizeof err))
    return NULL;
  char *e = cu.escape(NULL, s, 0);
  char *out = e ? strdup(e) : NULL;
  if (e)
    cu.free(e);
  return out;
}
