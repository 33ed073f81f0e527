/*
 * jwt.c - access tokens as JWTs checked against a JWKS (jwt.h). The alg
 * is taken from the token but must be one of three asymmetric ones and
 * must match the key's type (and the key's own alg when it names one), so
 * neither "none" nor an HMAC keyed with a public key (alg confusion) can
 * pass. Claims are checked only after the signature.
 */
#include "jwt.h"

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dynlib.h"

/* libcrypto's EVP opened with dlopen when the first JWKS is parsed
 * (dynlib.c), not linked: EVP brings OpenSSL's provider machinery, which
 * the statically linked command would map and relocate at every start
 * (18,000 relocations, 3.4 MB; docs/benchmarks.md, Start-up) though only
 * an OAuth listener checks a token. The calls below go through this table. */
static struct {
  __typeof__(&BN_bin2bn) BN_bin2bn;
  __typeof__(&BN_free) BN_free;
  __typeof__(&BN_num_bits) BN_num_bits;
  __typeof__(&CRYPTO_free) CRYPTO_free;
  __typeof__(&ECDSA_SIG_free) ECDSA_SIG_free;
  __typeof__(&ECDSA_SIG_new) ECDSA_SIG_new;
  __typeof__(&ECDSA_SIG_set0) ECDSA_SIG_set0;
  __typeof__(&EVP_DigestVerify) EVP_DigestVerify;
  __typeof__(&EVP_DigestVerifyInit) EVP_DigestVerifyInit;
  __typeof__(&EVP_MD_CTX_free) EVP_MD_CTX_free;
  __typeof__(&EVP_MD_CTX_new) EVP_MD_CTX_new;
  __typeof__(&EVP_PKEY_CTX_free) EVP_PKEY_CTX_free;
  __typeof__(&EVP_PKEY_CTX_new_from_name) EVP_PKEY_CTX_new_from_name;
  __typeof__(&EVP_PKEY_CTX_new_from_pkey) EVP_PKEY_CTX_new_from_pkey;
  __typeof__(&EVP_PKEY_free) EVP_PKEY_free;
  __typeof__(&EVP_PKEY_fromdata) EVP_PKEY_fromdata;
  __typeof__(&EVP_PKEY_fromdata_init) EVP_PKEY_fromdata_init;
  __typeof__(&EVP_PKEY_new_raw_public_key) EVP_PKEY_new_raw_public_key;
  __typeof__(&EVP_PKEY_public_check) EVP_PKEY_public_check;
  __typeof__(&EVP_sha256) EVP_sha256;
  __typeof__(&OSSL_PARAM_BLD_free) OSSL_PARAM_BLD_free;
  __typeof__(&OSSL_PARAM_BLD_new) OSSL_PARAM_BLD_new;
  __typeof__(&OSSL_PARAM_BLD_push_BN) OSSL_PARAM_BLD_push_BN;
  __typeof__(&OSSL_PARAM_BLD_push_octet_string) OSSL_PARAM_BLD_push_octet_string;
  __typeof__(&OSSL_PARAM_BLD_push_utf8_string) OSSL_PARAM_BLD_push_utf8_string;
  __typeof__(&OSSL_PARAM_BLD_to_param) OSSL_PARAM_BLD_to_param;
  __typeof__(&OSSL_PARAM_free) OSSL_PARAM_free;
  __typeof__(&i2d_ECDSA_SIG) i2d_ECDSA_SIG;
} crypto;

static const bw_dynsym crypto_syms[] = {
    {(void **)&crypto.BN_bin2bn, "BN_bin2bn"},
    {(void **)&crypto.BN_free, "BN_free"},
    {(void **)&crypto.BN_num_bits, "BN_num_bits"},
    {(void **)&crypto.CRYPTO_free, "CRYPTO_free"},
    {(void **)&crypto.ECDSA_SIG_free, "ECDSA_SIG_free"},
    {(void **)&crypto.ECDSA_SIG_new, "ECDSA_SIG_new"},
    {(void **)&crypto.ECDSA_SIG_set0, "ECDSA_SIG_set0"},
    {(void **)&crypto.EVP_DigestVerify, "EVP_DigestVerify"},
    {(void **)&crypto.EVP_DigestVerifyInit, "EVP_DigestVerifyInit"},
    {(void **)&crypto.EVP_MD_CTX_free, "EVP_MD_CTX_free"},
    {(void **)&crypto.EVP_MD_CTX_new, "EVP_MD_CTX_new"},
    {(void **)&crypto.EVP_PKEY_CTX_free, "EVP_PKEY_CTX_free"},
    {(void **)&crypto.EVP_PKEY_CTX_new_from_name, "EVP_PKEY_CTX_new_from_name"},
    {(void **)&crypto.EVP_PKEY_CTX_new_from_pkey, "EVP_PKEY_CTX_new_from_pkey"},
    {(void **)&crypto.EVP_PKEY_free, "EVP_PKEY_free"},
    {(void **)&crypto.EVP_PKEY_fromdata, "EVP_PKEY_fromdata"},
    {(void **)&crypto.EVP_PKEY_fromdata_init, "EVP_PKEY_fromdata_init"},
    {(void **)&crypto.EVP_PKEY_new_raw_public_key, "EVP_PKEY_new_raw_public_key"},
    {(void **)&crypto.EVP_PKEY_public_check, "EVP_PKEY_public_check"},
    {(void **)&crypto.EVP_sha256, "EVP_sha256"},
    {(void **)&crypto.OSSL_PARAM_BLD_free, "OSSL_PARAM_BLD_free"},
    {(void **)&crypto.OSSL_PARAM_BLD_new, "OSSL_PARAM_BLD_new"},
    {(void **)&crypto.OSSL_PARAM_BLD_push_BN, "OSSL_PARAM_BLD_push_BN"},
    {(void **)&crypto.OSSL_PARAM_BLD_push_octet_string, "OSSL_PARAM_BLD_push_octet_string"},
    {(void **)&crypto.OSSL_PARAM_BLD_push_utf8_string, "OSSL_PARAM_BLD_push_utf8_string"},
    {(void **)&crypto.OSSL_PARAM_BLD_to_param, "OSSL_PARAM_BLD_to_param"},
    {(void **)&crypto.OSSL_PARAM_free, "OSSL_PARAM_free"},
    {(void **)&crypto.i2d_ECDSA_SIG, "i2d_ECDSA_SIG"},
};
static bw_dynlib crypto_lib = BW_DYNLIB("libcrypto.so.3", "libssl3", crypto_syms);

#define BN_bin2bn crypto.BN_bin2bn
#define BN_free crypto.BN_free
#define BN_num_bits crypto.BN_num_bits
#define CRYPTO_free crypto.CRYPTO_free
#define ECDSA_SIG_free crypto.ECDSA_SIG_free
#define ECDSA_SIG_new crypto.ECDSA_SIG_new
#define ECDSA_SIG_set0 crypto.ECDSA_SIG_set0
#define EVP_DigestVerify crypto.EVP_DigestVerify
#define EVP_DigestVerifyInit crypto.EVP_DigestVerifyInit
#define EVP_MD_CTX_free crypto.EVP_MD_CTX_free
#define EVP_MD_CTX_new crypto.EVP_MD_CTX_new
#define EVP_PKEY_CTX_free crypto.EVP_PKEY_CTX_free
#define EVP_PKEY_CTX_new_from_name crypto.EVP_PKEY_CTX_new_from_name
#define EVP_PKEY_CTX_new_from_pkey crypto.EVP_PKEY_CTX_new_from_pkey
#define EVP_PKEY_free crypto.EVP_PKEY_free
#define EVP_PKEY_fromdata crypto.EVP_PKEY_fromdata
#define EVP_PKEY_fromdata_init crypto.EVP_PKEY_fromdata_init
#define EVP_PKEY_new_raw_public_key crypto.EVP_PKEY_new_raw_public_key
#define EVP_PKEY_public_check crypto.EVP_PKEY_public_check
#define EVP_sha256 crypto.EVP_sha256
#define OSSL_PARAM_BLD_free crypto.OSSL_PARAM_BLD_free
#define OSSL_PARAM_BLD_new crypto.OSSL_PARAM_BLD_new
#define OSSL_PARAM_BLD_push_BN crypto.OSSL_PARAM_BLD_push_BN
#define OSSL_PARAM_BLD_push_octet_string crypto.OSSL_PARAM_BLD_push_octet_string
#define OSSL_PARAM_BLD_push_utf8_string crypto.OSSL_PARAM_BLD_push_utf8_string
#define OSSL_PARAM_BLD_to_param crypto.OSSL_PARAM_BLD_to_param
#define OSSL_PARAM_free crypto.OSSL_PARAM_free
#define i2d_ECDSA_SIG crypto.i2d_ECDSA_SIG

enum { ALG_RS256 = 1, ALG_ES256, ALG_EDDSA };

typedef struct jwk {
  char kid[128];
  int alg; /* the one alg this key verifies */
  EVP_PKEY *key;
} jwk;

struct bw_jwks {
  int n;
  jwk k[BW_JWT_MAX_KEYS];
};

/* ------------------------------------------------------------ base64url */

static int b64val(unsigned char c) {
  if (c >= 'A' && c <= 'Z')
    return c - 'A';
  if (c >= 'a' && c <= 'z')
    return c - 'a' + 26;
  if (c >= '0' && c <= '9')
    return c - '0' + 52;
  if (c == '-')
    return 62;
  if (c == '_')
    return 63;
  return -1;
}

int bw_b64url_decode(const char *s, size_t len, unsigned char **out,
                     size_t *n) {
  if (len % 4 == 1)
    return -1;
  unsigned char *b = malloc(len / 4 * 3 + 3);
  if (!b)
    return -1;
  size_t o = 0;
  unsigned acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64val((unsigned char)s[i]);
    if (v < 0) {
      free(b);
      return -1;
    }
    acc = (acc << 6) | (unsigned)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      b[o++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  if (acc) { /* bits left over must be zero: one text per byte string */
    free(b);
    return -1;
  }
  b[o] = '\0';
  *out = b;
  *n = o;
  return 0;
}

/* A base64url member of a JWK as bytes (exact length when want > 0). */
static unsigned char *member_bytes(json_t *j, const char *name, size_t want,
                                   size_t *n) {
  const char *s = json_string_value(json_object_get(j, name));
  unsigned char *b;
  if (!s || bw_b64url_decode(s, strlen(s), &b, n))
    return NULL;
  if ((want && *n != want) || *n == 0) {
    free(b);
    return NULL;
  }
  return b;
}

/* ------------------------------------------------------------ keys */

static EVP_PKEY *from_params(const char *type, OSSL_PARAM_BLD *bld) {
  OSSL_PARAM *p = OSSL_PARAM_BLD_to_param(bld);
  EVP_PKEY_CTX *c = p ? EVP_PKEY_CTX_new_from_name(NULL, type, NULL) : NULL;
  EVP_PKEY *k = NULL;
  if (c && EVP_PKEY_fromdata_init(c) == 1)
    EVP_PKEY_fromdata(c, &k, EVP_PKEY_PUBLIC_KEY, p);
  EVP_PKEY_CTX_free(c);
  OSSL_PARAM_free(p);
  return k;
}

static EVP_PKEY *rsa_key(json_t *j) {
  size_t nn, ne;
  unsigned char *n = member_bytes(j, "n", 0, &nn),
                *e = member_bytes(j, "e", 0, &ne);
  BIGNUM *bn = n ? BN_bin2bn(n, (int)nn, NULL) : NULL,
         *be = e ? BN_bin2bn(e, (int)ne, NULL) : NULL;
  OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
  EVP_PKEY *k = NULL;
  /* under 2048 bits is not a key to trust an access token to */
  if (bn && be && bld && BN_num_bits(bn) >= 2048 &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn) &&
      OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, be))
    k = from_params("RSA", bld);
  OSSL_PARAM_BLD_free(bld);
  BN_free(bn);
  BN_free(be);
  free(n);
  free(e);
  return k;
}

static EVP_PKEY *ec_key(json_t *j) {
  const char *crv = json_string_value(json_object_get(j, "crv"));
  if (!crv || strcmp(crv, "P-256"))
    return NULL;
  size_t nx, ny;
  unsigned char *x = member_bytes(j, "x", 32, &nx),
                *y = member_bytes(j, "y", 32, &ny);
  unsigned char pt[65];
  EVP_PKEY *k = NULL;
  OSSL_PARAM_BLD *bld = x && y ? OSSL_PARAM_BLD_new() : NULL;
  if (bld) {
    pt[0] = 4; /* uncompressed */
    memcpy(pt + 1, x, 32);
    memcpy(pt + 33, y, 32);
    if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME,
                                        "prime256v1", 0) &&
        OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, pt,
                                         sizeof pt))
      k = from_params("EC", bld);
  }
  if (k) { /* a point off the curve is no key (invalid-curve attacks) */
    EVP_PKEY_CTX *c = EVP_PKEY_CTX_new_from_pkey(NULL, k, NULL);
    if (!c || EVP_PKEY_public_check(c) != 1) {
      EVP_PKEY_free(k);
      k = NULL;
    }
    EVP_PKEY_CTX_free(c);
  }
  OSSL_PARAM_BLD_free(bld);
  free(x);
  free(y);
  return k;
}

static EVP_PKEY *okp_key(json_t *j) {
  const char *crv = json_string_value(json_object_get(j, "crv"));
  if (!crv || strcmp(crv, "Ed25519"))
    return NULL;
  size_t n;
  unsigned char *x = member_bytes(j, "x", 32, &n);
  EVP_PKEY *k =
      x ? EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, x, n) : NULL;
  free(x);
  return k;
}

static int alg_of(const char *s) {
  if (!s)
    return 0;
  if (!strcmp(s, "RS256"))
    return ALG_RS256;
  if (!strcmp(s, "ES256"))
    return ALG_ES256;
  if (!strcmp(s, "EdDSA"))
    return ALG_EDDSA;
  return 0;
}

/* One JWK into slot k: 1 kept, 0 skipped (not a signing key we take). */
static int add_key(jwk *k, json_t *j) {
  const char *kty = json_string_value(json_object_get(j, "kty"));
  const char *use = json_string_value(json_object_get(j, "use"));
  const char *alg = json_string_value(json_object_get(j, "alg"));
  const char *kid = json_string_value(json_object_get(j, "kid"));
  if (!kty || (use && strcmp(use, "sig")) ||
      (kid && strlen(kid) >= sizeof k->kid))
    return 0;
  int a = !strcmp(kty, "RSA")   ? ALG_RS256
          : !strcmp(kty, "EC")  ? ALG_ES256
          : !strcmp(kty, "OKP") ? ALG_EDDSA
                                : 0;
  if (!a || (alg && alg_of(alg) != a))
    return 0; /* RSA keys for PS256 etc.: not ours */
  EVP_PKEY *key = a == ALG_RS256   ? rsa_key(j)
                  : a == ALG_ES256 ? ec_key(j)
                                   : okp_key(j);
  if (!key)
    return 0;
  snprintf(k->kid, sizeof k->kid, "%s", kid ? kid : "");
  k->alg = a;
  k->key = key;
  return 1;
}

bw_jwks *bw_jwks_parse(const char *text, size_t len, char *err, size_t errlen) {
  if (bw_dynlib_load(&crypto_lib, err, errlen))
    return NULL;
  json_error_t je;
  json_t *doc = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
  json_t *keys = json_object_get(doc, "keys");
  if (!json_is_array(keys)) {
    snprintf(err, errlen,
             "not a JWKS document (an object with a keys array)%s%s",
             doc ? "" : ": ", doc ? "" : je.text);
    json_decref(doc);
    return NULL;
  }
  bw_jwks *s = calloc(1, sizeof *s);
  if (!s) {
    snprintf(err, errlen, "out of memory");
    json_decref(doc);
    return NULL;
  }
  size_t i;
  json_t *j;
  json_array_foreach(keys, i, j) {
    if (s->n == BW_JWT_MAX_KEYS)
      break;
    if (json_is_object(j))
      s->n += add_key(&s->k[s->n], j);
  }
  json_decref(doc);
  return s;
}

void bw_jwks_free(bw_jwks *s) {
  if (!s)
    return;
  for (int i = 0; i < s->n; i++)
    EVP_PKEY_free(s->k[i].key);
  free(s);
}

int bw_jwks_count(const bw_jwks *s) { return s ? s->n : 0; }

/* ------------------------------------------------------------ tokens */

typedef struct parts {
  const char *h, *p, *s; /* header, payload, signature (base64url) */
  size_t hn, pn, sn;
} parts;

static int split(const char *t, parts *o) {
  size_t len = strnlen(t, BW_JWT_MAX + 1);
  if (len > BW_JWT_MAX)
    return -1;
  const char *d1 = memchr(t, '.', len);
  const char *d2 = d1 ? memchr(d1 + 1, '.', len - (size_t)(d1 + 1 - t)) : NULL;
  if (!d2 || memchr(d2 + 1, '.', len - (size_t)(d2 + 1 - t)))
    return -1;
  *o = (parts){t,
               d1 + 1,
               d2 + 1,
               (size_t)(d1 - t),
               (size_t)(d2 - d1 - 1),
               (size_t)(t + len - d2 - 1)};
  return o->hn && o->pn && o->sn ? 0 : -1;
}

static json_t *part_json(const char *s, size_t n) {
  unsigned char *b;
  size_t len;
  if (bw_b64url_decode(s, n, &b, &len))
    return NULL;
  json_t *j = json_loadb((const char *)b, len, JSON_REJECT_DUPLICATES, NULL);
  free(b);
  if (j && !json_is_object(j)) {
    json_decref(j);
    return NULL;
  }
  return j;
}

/* ES256's signature is r||s (32 bytes each); EVP wants DER. */
static unsigned char *es256_der(const unsigned char *sig, size_t n,
                                size_t *dn) {
  if (n != 64)
    return NULL;
  ECDSA_SIG *e = ECDSA_SIG_new();
  BIGNUM *r = BN_bin2bn(sig, 32, NULL), *s = BN_bin2bn(sig + 32, 32, NULL);
  unsigned char *der = NULL;
  if (e && r && s && ECDSA_SIG_set0(e, r, s)) {
    r = s = NULL; /* e holds them */
    int len = i2d_ECDSA_SIG(e, &der);
    if (len <= 0)
      der = NULL;
    else
      *dn = (size_t)len;
  }
  BN_free(r);
  BN_free(s);
  ECDSA_SIG_free(e);
  return der;
}

static int signature_ok(const jwk *k, const parts *p, const unsigned char *sig,
                        size_t sn) {
  unsigned char *der = NULL;
  if (k->alg == ALG_ES256) {
    der = es256_der(sig, sn, &sn);
    if (!der)
      return 0;
    sig = der;
  }
  EVP_MD_CTX *c = EVP_MD_CTX_new();
  int ok =
      c &&
      EVP_DigestVerifyInit(c, NULL, k->alg == ALG_EDDSA ? NULL : EVP_sha256(),
                           NULL, k->key) == 1 &&
      EVP_DigestVerify(c, sig, sn, (const unsigned char *)p->h,
                       p->hn + 1 + p->pn) == 1;
  EVP_MD_CTX_free(c);
  OPENSSL_free(der);
  return ok;
}

/* The key for the header: by kid; without one, the set's only key. */
static const jwk *pick(const bw_jwks *s, const char *kid) {
  if (!kid)
    return s->n == 1 ? &s->k[0] : NULL;
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->k[i].kid, kid))
      return &s->k[i];
  return NULL;
}

static int aud_holds(json_t *aud, const char *want) {
  if (json_is_string(aud))
    return !strcmp(json_string_value(aud), want);
  size_t i;
  json_t *a;
  json_array_foreach(aud, i,
                     a) if (json_is_string(a) &&
                            !strcmp(json_string_value(a), want)) return 1;
  return 0;
}

bw_jwt_status bw_jwt_claims_ok(json_t *c, const bw_jwt_want *w, char *err,
                               size_t errlen) {
  const char *iss = json_string_value(json_object_get(c, "iss"));
  if (!iss || strcmp(iss, w->issuer)) {
    snprintf(err, errlen, "the token's issuer is not %s", w->issuer);
    return BW_JWT_ISSUER;
  }
  if (!aud_holds(json_object_get(c, "aud"), w->audience)) {
    snprintf(err, errlen,
             "the token is not for this resource (aud must hold %s)",
             w->audience);
    return BW_JWT_AUDIENCE;
  }
  json_t *exp = json_object_get(c, "exp"), *nbf = json_object_get(c, "nbf"),
         *iat = json_object_get(c, "iat");
  if (!json_is_number(exp) || json_number_value(exp) + w->skew <= w->now) {
    snprintf(err, errlen,
             exp ? "the token has expired" : "the token has no exp");
    return BW_JWT_EXPIRED;
  }
  if ((nbf &&
       (!json_is_number(nbf) || json_number_value(nbf) - w->skew > w->now)) ||
      (iat &&
       (!json_is_number(iat) || json_number_value(iat) - w->skew > w->now))) {
    snprintf(err, errlen,
             "the token is not valid yet (nbf or iat in the future)");
    return BW_JWT_EARLY;
  }
  return BW_JWT_OK;
}

/* The header's alg and the key it names: OK, or why not. */
static bw_jwt_status header_key(json_t *h, const bw_jwks *keys, const jwk **key,
                                char *err, size_t errlen) {
  json_t *kidj = json_object_get(h, "kid");
  const char *alg = json_string_value(json_object_get(h, "alg"));
  if (json_object_get(h, "crit")) { /* extensions we would have to understand */
    snprintf(err, errlen, "the token's header has crit");
    return BW_JWT_ALG;
  }
  int a = alg_of(alg);
  if (!a) {
    snprintf(err, errlen, "alg %.32s is not taken (RS256, ES256, EdDSA)",
             alg ? alg : "(none)");
    return BW_JWT_ALG;
  }
  if (kidj && !json_is_string(kidj)) {
    snprintf(err, errlen, "the token's kid is not a string");
    return BW_JWT_MALFORMED;
  }
  const char *kid = json_string_value(kidj);
  *key = pick(keys, kid);
  if (!*key) {
    snprintf(err, errlen,
             kid ? "no key of the issuer has kid %.64s"
                 : "the token names no kid and the issuer has several keys",
             kid);
    return BW_JWT_NOKEY;
  }
  if ((*key)->alg != a) { /* the key's type decides, never the token */
    snprintf(err, errlen, "alg %s does not fit the key %.64s", alg,
             (*key)->kid);
    return BW_JWT_ALG;
  }
  return BW_JWT_OK;
}

bw_jwt_status bw_jwt_verify(const char *token, const bw_jwks *keys,
                            const bw_jwt_want *want, json_t **claims, char *err,
                            size_t errlen) {
  *claims = NULL;
  parts p;
  if (split(token, &p)) {
    snprintf(err, errlen, "not a JWT (three base64url parts, at most %d bytes)",
             BW_JWT_MAX);
    return BW_JWT_MALFORMED;
  }
  json_t *h = part_json(p.h, p.hn);
  if (!h) {
    snprintf(err, errlen, "the token's header is not base64url JSON");
    return BW_JWT_MALFORMED;
  }
  const jwk *key = NULL;
  bw_jwt_status st =
      keys ? header_key(h, keys, &key, err, errlen) : BW_JWT_NOKEY;
  json_decref(h);
  if (!keys)
    snprintf(err, errlen, "no keys of the issuer");
  if (st)
    return st;
  unsigned char *sig;
  size_t sn;
  if (bw_b64url_decode(p.s, p.sn, &sig, &sn)) {
    snprintf(err, errlen, "the token's signature is not base64url");
    return BW_JWT_MALFORMED;
  }
  int ok = signature_ok(key, &p, sig, sn);
  free(sig);
  if (!ok) {
    snprintf(err, errlen, "the token's signature does not verify");
    return BW_JWT_SIGNATURE;
  }
  json_t *c = part_json(p.p, p.pn);
  if (!c) {
    snprintf(err, errlen, "the token's payload is not base64url JSON");
    return BW_JWT_MALFORMED;
  }
  st = bw_jwt_claims_ok(c, want, err, errlen);
  if (st) {
    json_decref(c);
    return st;
  }
  *claims = c;
  return BW_JWT_OK;
}
