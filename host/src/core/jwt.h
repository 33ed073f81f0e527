/*
 * jwt.h - JSON Web Tokens as OAuth access tokens (RFC 9068), checked
 * against an issuer's key set (JWKS, RFC 7517): the signature with
 * OpenSSL's EVP (RS256, ES256, EdDSA over Ed25519; never "none", never a
 * symmetric alg, the alg bound to the key's type), then iss, aud, exp and
 * nbf. Plain C: the keys come in as the JWKS document's text, whoever
 * fetched it (server/oauth.c).
 */
#ifndef BURROW_JWT_H
#define BURROW_JWT_H

#include <jansson.h>
#include <stddef.h>

#include "core.h" /* BW_SHARED */

enum {
  BW_JWT_MAX = 16384,   /* bytes of a token: a longer one is refused unread */
  BW_JWT_MAX_KEYS = 64, /* keys kept from one JWKS document */
};

/* What a check found: OK, or why not. */
typedef enum bw_jwt_status {
  BW_JWT_OK = 0,
  BW_JWT_MALFORMED, /* not three base64url parts of JSON objects, or too long */
  BW_JWT_ALG,   /* none, a symmetric or an unknown alg, or one the key does not
                   take */
  BW_JWT_NOKEY, /* no key of that kid (or no kid where one is needed) */
  BW_JWT_SIGNATURE, /* the signature does not verify */
  BW_JWT_ISSUER,
  BW_JWT_AUDIENCE,
  BW_JWT_EXPIRED, /* exp passed (or missing) */
  BW_JWT_EARLY,   /* nbf (or iat) in the future */
} bw_jwt_status;

typedef struct bw_jwks bw_jwks;

/* The signing keys of a JWKS document (keys of other uses, types or
 * curves are skipped; an RSA key under 2048 bits too): NULL and the reason
 * in err when the text is no JWKS. A set may hold no key. */
BW_SHARED bw_jwks *bw_jwks_parse(const char *text, size_t len, char *err,
                                 size_t errlen);
BW_SHARED void bw_jwks_free(bw_jwks *k);
BW_SHARED int bw_jwks_count(const bw_jwks *k);

typedef struct bw_jwt_want {
  const char *issuer;   /* iss must be this, exactly */
  const char *audience; /* aud (a string or an array) must hold this */
  double now;           /* seconds since the epoch */
  int skew;             /* seconds of clock skew allowed on exp, nbf, iat */
} bw_jwt_want;

/* Check token against keys and want: BW_JWT_OK and its claims in *claims
 * (the caller's reference), or the status and a sentence in err. */
BW_SHARED bw_jwt_status bw_jwt_verify(const char *token, const bw_jwks *keys,
                                      const bw_jwt_want *want, json_t **claims,
                                      char *err, size_t errlen);

/* The claims' checks alone (iss, aud, exp, nbf, iat), for claims that
 * came another way (token introspection, RFC 7662). */
BW_SHARED bw_jwt_status bw_jwt_claims_ok(json_t *claims,
                                         const bw_jwt_want *want, char *err,
                                         size_t errlen);

/* base64url without padding (RFC 7515 section 2), strictly: any other
 * byte, padding or a length of 4n+1 is refused. 0 and a malloc'd buffer
 * (NUL-terminated, its length in *n), or -1. */
int bw_b64url_decode(const char *s, size_t len, unsigned char **out, size_t *n);

#endif
