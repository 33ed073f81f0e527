/*
 * oauth.h - the listener as an OAuth 2.1 resource server, as MCP's
 * authorization spec has it (oauth.c): the protected resource metadata
 * (RFC 9728) served without a token, the challenges of a 401 and a 403
 * (RFC 6750, with resource_metadata), access tokens as JWTs checked
 * against the issuer's keys (core/jwt.c; the keys fetched from the
 * issuer's metadata with fetch.c, cached, fetched again for an unknown
 * kid and when they expire) or opaque tokens asked of the issuer's
 * introspection endpoint (RFC 7662). A token that passes becomes a
 * principal: its tenant, its id (sha256 of iss and sub), its scope.
 */
#ifndef BURROW_OAUTH_H
#define BURROW_OAUTH_H

#include <jansson.h>
#include <stddef.h>

typedef struct bw_oauth bw_oauth;

/* Who a token is: set by bw_oauth_admit; sessions are bound to it. */
typedef struct bw_oauth_who {
  char id[65]; /* sha256 hex of iss "\n" sub: the principal's token id */
  int tenant;  /* tenant index */
  int slot; /* the listener's token index for the tenant's OAuth principals */
  unsigned char read_only, set;
} bw_oauth_who;

/* A refusal: the status, a header to send with it, the message. */
typedef struct bw_oauth_deny {
  unsigned status;
  const char *hname;
  char hval[640];
  char msg[320];
} bw_oauth_deny;

/* From the JSON text http.lua builds out of http.oauth (docs/config.md):
 * NULL and why in err. */
bw_oauth *bw_oauth_new(const char *config, char *err, size_t errlen);
void bw_oauth_free(bw_oauth *o);

/* The metadata document when url is one of its well-known paths, else NULL. */
const char *bw_oauth_metadata(const bw_oauth *o, const char *url);

/* authorization is the request's Authorization header (NULL: none): 0 and
 * who, or -1 and the refusal in d (a 401 with the challenge; 403 for a
 * token without a scope we take or a tenant we have; 503 while the
 * issuer's keys cannot be had). May fetch (the keys, introspection). */
int bw_oauth_admit(bw_oauth *o, const char *authorization, bw_oauth_who *who,
                   bw_oauth_deny *d);

/* The 401 of a listener without OAuth (static tokens only). */
void bw_oauth_plain_deny(bw_oauth_deny *d);

/* A tools/call in m (one message or a batch) that a read-only principal
 * of tenant may not make: 1 and the 403 in d, else 0. */
int bw_oauth_scope_refused(const bw_oauth *o, const bw_oauth_who *who,
                           const json_t *m, bw_oauth_deny *d);

/* Whether two principals are the same, scope included (both none: the same). */
int bw_oauth_same(const bw_oauth_who *a, const bw_oauth_who *b);

#endif
