/*
 * fetch.h - one small HTTP document fetched with libcurl (fetch.c), for
 * the OAuth resource server (oauth.c): the issuer's metadata, its JWKS,
 * token introspection. libcurl is opened with dlopen the first time a
 * fetch is made (dynlib.c), as libmicrohttpd is, so a start that never
 * checks an OAuth token never loads it.
 */
#ifndef BURROW_FETCH_H
#define BURROW_FETCH_H

#include <stddef.h>

typedef struct bw_fetch_req {
  const char *url;
  /* NULL: GET; else POSTed as application/x-www-form-urlencoded */
  const char *form;
  /* HTTP Basic (already form-encoded, RFC 6749 2.3.1); NULL: none */
  const char *user;
  const char *password;
  long timeout_ms;
  size_t max_bytes; /* a longer answer is an error */
} bw_fetch_req;

/* The body (malloc'd, NUL-terminated, its length in *len) of a 200
 * answer, else NULL and why in err (the status, the transport's error).
 * Only http and https; no redirects; *max_age gets the answer's
 * Cache-Control max-age (-1: none). */
char *bw_fetch(const bw_fetch_req *r, size_t *len, long *max_age, char *err,
               size_t errlen);

/* Percent-encoding for a form value: malloc'd, or NULL. */
char *bw_fetch_escape(const char *s);

#endif
