/*
 * test_jwt.c - JWT access tokens against a JWKS (core/jwt.c) without Lua:
 * keys made here with OpenSSL, tokens signed here. RS256, ES256 and EdDSA
 * verify; then what an attacker would send: alg none, HS256 keyed with
 * the public key (alg confusion), an alg that does not fit the key, a
 * missing or unknown kid, crit, bad base64url, a huge token, duplicate
 * claims, a tampered payload or signature; and the claims: iss, aud, exp,
 * nbf with the skew. The JWKS parser skips what it must not trust.
 */
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"
#include "jwt.h"

static const char ISS[] = "https://id.example.com";
static const char AUD[] = "https://mcp.example.com/mcp";

static void b64url(const unsigned char *in, size_t n, char *out) {
  static const char t[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  size_t o = 0;
  for (size_t i = 0; i < n; i += 3) {
    unsigned v = (unsigned)in[i] << 16 |
                 (i + 1 < n ? (unsigned)in[i + 1] << 8 : 0) |
                 (i + 2 < n ? in[i + 2] : 0);
    out[o++] = t[v >> 18 & 63];
    out[o++] = t[v >> 12 & 63];
    if (i + 1 < n)
      out[o++] = t[v >> 6 & 63];
    if (i + 2 < n)
      out[o++] = t[v & 63];
  }
  out[o] = '\0';
}

static char *b64s(const char *s) {
  char *o = malloc(strlen(s) * 2 + 4);
  b64url((const unsigned char *)s, strlen(s), o);
  return o;
}

/* a BIGNUM parameter of a key, as base64url (fixed width when pad > 0) */
static void bn_param(EVP_PKEY *k, const char *name, int pad, char *out) {
  BIGNUM *b = NULL;
  EVP_PKEY_get_bn_param(k, name, &b);
  unsigned char buf[600];
  int n = pad ? BN_bn2binpad(b, buf, pad) : BN_bn2bin(b, buf);
  b64url(buf, (size_t)n, out);
  BN_free(b);
}

typedef struct key {
  EVP_PKEY *k;
  const char *alg, *kid;
  char jwk[2000];
} key;

static void make_key(key *K, const char *alg, const char *kid, int rsa_bits) {
  K->alg = alg;
  K->kid = kid;
  char a[700], b[700];
  if (!strcmp(alg, "RS256")) {
    K->k = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)rsa_bits);
    bn_param(K->k, OSSL_PKEY_PARAM_RSA_N, 0, a);
    bn_param(K->k, OSSL_PKEY_PARAM_RSA_E, 0, b);
    snprintf(K->jwk, sizeof K->jwk,
             "{\"kty\":\"RSA\",\"kid\":\"%s\",\"use\":\"sig\",\"n\":\"%s\","
             "\"e\":\"%s\"}",
             kid, a, b);
  } else if (!strcmp(alg, "ES256")) {
    K->k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    bn_param(K->k, OSSL_PKEY_PARAM_EC_PUB_X, 32, a);
    bn_param(K->k, OSSL_PKEY_PARAM_EC_PUB_Y, 32, b);
    snprintf(K->jwk, sizeof K->jwk,
             "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"%s\",\"x\":\"%s\","
             "\"y\":\"%s\"}",
             kid, a, b);
  } else {
    K->k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    unsigned char raw[32];
    size_t n = sizeof raw;
    EVP_PKEY_get_raw_public_key(K->k, raw, &n);
    b64url(raw, n, a);
    snprintf(K->jwk, sizeof K->jwk,
             "{\"kty\":\"OKP\",\"crv\":\"Ed25519\",\"kid\":\"%s\",\"alg\":"
             "\"EdDSA\",\"x\":\"%s\"}",
             kid, a);
  }
}

/* header.payload signed by K (as alg says it is), malloc'd */
static char *sign(const key *K, const char *header, const char *payload) {
  char *h = b64s(header), *p = b64s(payload);
  size_t in_n = strlen(h) + strlen(p) + 2;
  char *in = malloc(in_n);
  snprintf(in, in_n, "%s.%s", h, p);
  unsigned char sig[600];
  size_t sn = sizeof sig;
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  EVP_DigestSignInit(c, NULL, strcmp(K->alg, "EdDSA") ? EVP_sha256() : NULL,
                     NULL, K->k);
  EVP_DigestSign(c, sig, &sn, (unsigned char *)in, strlen(in));
  EVP_MD_CTX_free(c);
  if (!strcmp(K->alg, "ES256")) { /* DER to r||s */
    const unsigned char *d = sig;
    ECDSA_SIG *e = d2i_ECDSA_SIG(NULL, &d, (long)sn);
    BN_bn2binpad(ECDSA_SIG_get0_r(e), sig, 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(e), sig + 32, 32);
    ECDSA_SIG_free(e);
    sn = 64;
  }
  char s64[900];
  b64url(sig, sn, s64);
  size_t n = strlen(in) + strlen(s64) + 2;
  char *t = malloc(n);
  snprintf(t, n, "%s.%s", in, s64);
  free(h);
  free(p);
  free(in);
  return t;
}

static char *hdr(const key *K) {
  static char b[200];
  snprintf(b, sizeof b, "{\"alg\":\"%s\",\"typ\":\"at+jwt\",\"kid\":\"%s\"}",
           K->alg, K->kid);
  return b;
}

static char *claims(const char *iss, const char *aud, long exp_in,
                    const char *extra) {
  static char b[600];
  long now = (long)time(NULL);
  snprintf(b, sizeof b,
           "{\"iss\":\"%s\",\"sub\":\"client-1\",\"aud\":%s,\"exp\":%ld,"
           "\"iat\":%ld%s}",
           iss, aud, now + exp_in, now - 5, extra ? extra : "");
  return b;
}

static bw_jwks *keyset(const key *ks, int n) {
  char text[8000] = "{\"keys\":[";
  for (int i = 0; i < n; i++) {
    if (i)
      strcat(text, ",");
    strcat(text, ks[i].jwk);
  }
  strcat(text, "]}");
  char err[256];
  return bw_jwks_parse(text, strlen(text), err, sizeof err);
}

static bw_jwt_want want;

static bw_jwt_status check(const char *tok, const bw_jwks *ks, char *err) {
  json_t *c = NULL;
  bw_jwt_status st = bw_jwt_verify(tok, ks, &want, &c, err, 256);
  if (st == BW_JWT_OK &&
      (!c || strcmp(json_string_value(json_object_get(c, "sub")), "client-1")))
    st = 99;
  json_decref(c);
  return st;
}

static const char *AUDQ = "\"https://mcp.example.com/mcp\"";

int main(void) {
  want = (bw_jwt_want){ISS, AUD, (double)time(NULL), 30};
  key K[3];
  make_key(&K[0], "RS256", "rsa-1", 2048);
  make_key(&K[1], "ES256", "ec-1", 0);
  make_key(&K[2], "EdDSA", "ed-1", 0);
  bw_jwks *ks = keyset(K, 3);
  CHECK(bw_jwks_count(ks) == 3, "three keys kept, not %d", bw_jwks_count(ks));
  char err[256];

  for (int i = 0; i < 3;
       i++) { /* each alg verifies, with the claims given back */
    char *t = sign(&K[i], hdr(&K[i]), claims(ISS, AUDQ, 300, NULL));
    CHECK(check(t, ks, err) == BW_JWT_OK, "%s verifies: %s", K[i].alg, err);
    char *c = t + strlen(t) -
              3; /* a signature byte changed (still base64url, no stray bits) */
    *c = *c == 'A' ? 'B' : 'A';
    CHECK(check(t, ks, err) == BW_JWT_SIGNATURE,
          "%s tampered signature refused: %s", K[i].alg, err);
    free(t);
  }

  /* alg none, with or without a signature */
  char *h = b64s("{\"alg\":\"none\",\"kid\":\"rsa-1\"}"),
       *p = b64s(claims(ISS, AUDQ, 300, NULL)), t[4096];
  snprintf(t, sizeof t, "%s.%s.", h, p);
  CHECK(check(t, ks, err) == BW_JWT_MALFORMED,
        "none with an empty signature: malformed");
  snprintf(t, sizeof t, "%s.%s.AAAA", h, p);
  CHECK(check(t, ks, err) == BW_JWT_ALG, "alg none refused: %s", err);
  free(h);

  { /* alg confusion: HS256 keyed with the RSA key's public JWK text */
    h = b64s("{\"alg\":\"HS256\",\"kid\":\"rsa-1\"}");
    char in[4096], mac64[100];
    snprintf(in, sizeof in, "%s.%s", h, p);
    unsigned char mac[32];
    unsigned ml = 32;
    HMAC(EVP_sha256(), K[0].jwk, (int)strlen(K[0].jwk), (unsigned char *)in,
         strlen(in), mac, &ml);
    b64url(mac, ml, mac64);
    CHECK(snprintf(t, sizeof t, "%s.%s", in, mac64) < (int)sizeof t, "the forged token fits");
    CHECK(check(t, ks, err) == BW_JWT_ALG,
          "HS256 with a public key refused: %s", err);
    free(h);
  }
  free(p);

  { /* an alg that does not fit the key its kid names: RS256 header, EC key */
    key mixed = K[1];
    mixed.alg = "ES256";
    char hd[200];
    snprintf(hd, sizeof hd, "{\"alg\":\"RS256\",\"kid\":\"ec-1\"}");
    char *x = sign(&mixed, hd, claims(ISS, AUDQ, 300, NULL));
    CHECK(check(x, ks, err) == BW_JWT_ALG, "RS256 over an EC key refused: %s",
          err);
    free(x);
  }

  { /* kid: missing with several keys, unknown, not a string; missing with one
       key */
    char *x = sign(&K[1], "{\"alg\":\"ES256\"}", claims(ISS, AUDQ, 300, NULL));
    CHECK(check(x, ks, err) == BW_JWT_NOKEY,
          "no kid, several keys: refused: %s", err);
    bw_jwks *one = keyset(&K[1], 1);
    CHECK(check(x, one, err) == BW_JWT_OK, "no kid, one key: that key: %s",
          err);
    bw_jwks_free(one);
    free(x);
    x = sign(&K[1], "{\"alg\":\"ES256\",\"kid\":\"ec-2\"}",
             claims(ISS, AUDQ, 300, NULL));
    CHECK(check(x, ks, err) == BW_JWT_NOKEY, "unknown kid refused: %s", err);
    free(x);
    x = sign(&K[1], "{\"alg\":\"ES256\",\"kid\":7}",
             claims(ISS, AUDQ, 300, NULL));
    CHECK(check(x, ks, err) == BW_JWT_MALFORMED,
          "a kid that is no string refused: %s", err);
    free(x);
    x = sign(&K[1], "{\"alg\":\"ES256\",\"kid\":\"ec-1\",\"crit\":[\"exp\"]}",
             claims(ISS, AUDQ, 300, NULL));
    CHECK(check(x, ks, err) == BW_JWT_ALG, "crit refused: %s", err);
    free(x);
    CHECK(check("x.y.z", NULL, err) != BW_JWT_OK, "no keys at all: refused");
  }

  { /* the claims */
    struct {
      const char *iss, *aud;
      long exp;
      const char *extra;
      bw_jwt_status st;
      const char *what;
    } cs[] = {
        {"https://evil.example.com", AUDQ, 300, NULL, BW_JWT_ISSUER,
         "another issuer"},
        {"https://id.example.com/", AUDQ, 300, NULL, BW_JWT_ISSUER,
         "the issuer with a slash more"},
        {ISS, "\"https://other.example.com/mcp\"", 300, NULL, BW_JWT_AUDIENCE,
         "another audience"},
        {ISS, "[\"x\",\"https://mcp.example.com/mcp\"]", 300, NULL, BW_JWT_OK,
         "an audience array holding ours"},
        {ISS, "[\"https://mcp.example.com\"]", 300, NULL, BW_JWT_AUDIENCE,
         "our origin is not our URL"},
        {ISS, "null", 300, NULL, BW_JWT_AUDIENCE, "no audience"},
        {ISS, AUDQ, -60, NULL, BW_JWT_EXPIRED, "expired a minute ago"},
        {ISS, AUDQ, -10, NULL, BW_JWT_OK, "expired within the skew"},
        {ISS, AUDQ, 300, ",\"nbf\":9999999999", BW_JWT_EARLY,
         "nbf in the future"},
        {ISS, AUDQ, 300, ",\"iss\":\"https://id.example.com\"",
         BW_JWT_MALFORMED, "a claim given twice"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof *cs; i++) {
      char *x = sign(&K[1], hdr(&K[1]),
                     claims(cs[i].iss, cs[i].aud, cs[i].exp, cs[i].extra));
      bw_jwt_status st = check(x, ks, err);
      CHECK(st == cs[i].st, "%s: %d, not %d (%s)", cs[i].what, st, cs[i].st,
            err);
      free(x);
    }
    char *x = sign(&K[1], hdr(&K[1]),
                   "{\"iss\":\"https://"
                   "id.example.com\",\"sub\":\"client-1\",\"aud\":\"https://"
                   "mcp.example.com/mcp\",\"exp\":\"9999999999\"}");
    CHECK(check(x, ks, err) == BW_JWT_EXPIRED, "exp as a string: refused: %s",
          err);
    free(x);
  }

  { /* the token's shape */
    char *x = sign(&K[1], hdr(&K[1]), claims(ISS, AUDQ, 300, NULL));
    size_t n = strlen(x);
    char y[4096];
    snprintf(y, sizeof y, "%s=", x);
    CHECK(check(y, ks, err) == BW_JWT_MALFORMED, "padding refused");
    snprintf(y, sizeof y, "%s.x", x);
    CHECK(check(y, ks, err) == BW_JWT_MALFORMED, "four parts refused");
    memcpy(y, x, n + 1);
    y[5] = '+';
    CHECK(check(y, ks, err) == BW_JWT_MALFORMED, "base64 (not url) refused");
    snprintf(y, sizeof y, "%sAAA", x); /* 86 + 3: a length of 4n+1 */
    CHECK(check(y, ks, err) == BW_JWT_MALFORMED, "a 4n+1 length refused");
    h = b64s("[\"alg\",\"ES256\"]");
    snprintf(y, sizeof y, "%s%s", h, strchr(x, '.'));
    CHECK(check(y, ks, err) == BW_JWT_MALFORMED,
          "a header that is no object refused");
    free(h);
    char *huge = malloc(BW_JWT_MAX + 100);
    memset(huge, 'A', BW_JWT_MAX + 99);
    huge[BW_JWT_MAX + 99] = '\0';
    huge[10] = huge[20] = '.';
    CHECK(check(huge, ks, err) == BW_JWT_MALFORMED,
          "a token over %d bytes refused unread", BW_JWT_MAX);
    free(huge);
    free(x);
    unsigned char *d;
    size_t dn;
    CHECK(bw_b64url_decode("QQ", 2, &d, &dn) == 0 && dn == 1 && d[0] == 'A',
          "QQ is A");
    if (dn == 1)
      free(d);
    CHECK(bw_b64url_decode("QR", 2, &d, &dn) == -1,
          "QR: bits left over refused");
  }

  { /* the JWKS parser: what it skips */
    key small;
    make_key(&small, "RS256", "rsa-small", 1024);
    char text[8000];
    snprintf(text, sizeof text,
             "{\"keys\":[%s,{\"kty\":\"oct\",\"kid\":\"h\",\"k\":\"c2VjcmV0\"},"
             "{\"kty\":\"EC\",\"crv\":\"P-256\",\"kid\":\"off\",\"x\":"
             "\"AQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\","
             "\"y\":\"AgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"},"
             "{\"kty\":\"EC\",\"crv\":\"P-384\",\"kid\":\"p384\",\"x\":\"AA\","
             "\"y\":\"AA\"},"
             "%s]}",
             small.jwk, K[1].jwk);
    bw_jwks *s = bw_jwks_parse(text, strlen(text), err, sizeof err);
    CHECK(s && bw_jwks_count(s) == 1,
          "RSA 1024, oct, an off-curve point, P-384 skipped: %d kept",
          bw_jwks_count(s));
    bw_jwks_free(s);
    char encj[9000];
    snprintf(encj, sizeof encj, "{\"keys\":[{\"use\":\"enc\",%s]}",
             K[1].jwk + 1);
    s = bw_jwks_parse(encj, strlen(encj), err, sizeof err);
    CHECK(s && bw_jwks_count(s) == 0, "a key for encryption skipped");
    bw_jwks_free(s);
    snprintf(encj, sizeof encj, "{\"keys\":[{\"alg\":\"PS256\",%s]}",
             K[0].jwk + 1);
    s = bw_jwks_parse(encj, strlen(encj), err, sizeof err);
    CHECK(s && bw_jwks_count(s) == 0, "an RSA key for another alg skipped");
    bw_jwks_free(s);
    CHECK(bw_jwks_parse("{\"keys\":{}}", 11, err, sizeof err) == NULL,
          "not a JWKS: NULL (%s)", err);
    CHECK(bw_jwks_parse("nope", 4, err, sizeof err) == NULL, "not JSON: NULL");
    EVP_PKEY_free(small.k);
  }

  bw_jwks_free(ks);
  for (int i = 0; i < 3; i++)
    EVP_PKEY_free(K[i].k);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
