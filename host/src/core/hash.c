/*
 * hash.c - content hashes ("sha256:<hex>") with OpenSSL's libcrypto.
 *
 * SHA256_Init/Update/Final, not EVP: the same assembly (SHA-NI, AVX2),
 * but the EVP path (and OpenSSL 3's SHA256(), built on it) pulls the
 * provider machinery into the statically linked command: 4.3 MB of code
 * and 17,000 relocations every process start paid for (2.2 MB and 411
 * without; `burrow --version` 8.1 -> 5.7 ms; docs/benchmarks.md, Start-up). The
 * low-level calls are deprecated in OpenSSL 3, not removed.
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <errno.h>
#include <openssl/sha.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core.h"

/* Set before main (cli/cpuprobe.c's constructor), read after. */
static void (*probe)(void);

void bw_hash_probe_hook(void (*fn)(void)) { probe = fn; }

void bw_hash_ready(void) {
  if (probe) probe();
}

static void put_hex(const unsigned char *md, char out[BW_HASH_STR]) {
  static const char hex[] = "0123456789abcdef";
  const unsigned mdlen = SHA256_DIGEST_LENGTH;
  memcpy(out, "sha256:", 7);
  for (unsigned i = 0; i < mdlen; i++) {
    out[7 + 2 * i] = hex[md[i] >> 4];
    out[8 + 2 * i] = hex[md[i] & 15];
  }
  out[7 + 2 * mdlen] = '\0';
}

int bw_sha256(const void *data, size_t len, char out[BW_HASH_STR]) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256_CTX c;
  bw_hash_ready();
  if (!SHA256_Init(&c) || !SHA256_Update(&c, data, len) || !SHA256_Final(md, &c))
    return bw_fail(BW_EIO, "sha256 failed");
  put_hex(md, out);
  return BW_OK;
}

/* read(2) in pieces into one small buffer: what a compare-and-set hashes
 * is never held whole (a mapping's pages count in the process's RSS as
 * much as a copy: a 50 MB notebook's write paid its size again). */
enum { FD_PIECE = 256 * 1024 };

int bw_sha256_fd(int fd, size_t max_bytes, char out[BW_HASH_STR]) {
  unsigned char md[SHA256_DIGEST_LENGTH];
  SHA256_CTX c;
  char *buf = malloc(FD_PIECE);
  if (!buf) return BW_ENOMEM;
  bw_hash_ready();
  int rc = SHA256_Init(&c) ? BW_OK : bw_fail(BW_EIO, "sha256 failed");
  size_t total = 0;
  while (rc == BW_OK) {
    ssize_t got = read(fd, buf, FD_PIECE);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) rc = bw_code_from_errno(errno);
    else if (got == 0) break;
    else if ((total += (size_t)got) > max_bytes) rc = bw_fail(BW_TOO_LARGE, NULL);
    else if (!SHA256_Update(&c, buf, (size_t)got)) rc = bw_fail(BW_EIO, "sha256 failed");
  }
  free(buf);
  if (rc == BW_OK && !SHA256_Final(md, &c)) rc = bw_fail(BW_EIO, "sha256 failed");
  if (rc == BW_OK) put_hex(md, out);
  return rc;
}

/* RFC 2104 on the same SHA256_* calls: H((K^opad) || H((K^ipad) || m)),
 * a key longer than the block hashed first. */
int bw_hmac_sha256(const void *key, size_t klen, const void *msg, size_t len,
                   unsigned char out[32]) {
  unsigned char k[64] = {0}, pad[64], inner[SHA256_DIGEST_LENGTH];
  SHA256_CTX c;
  bw_hash_ready();
  if (klen > sizeof k) {
    if (!SHA256_Init(&c) || !SHA256_Update(&c, key, klen) || !SHA256_Final(k, &c))
      return bw_fail(BW_EIO, "sha256 failed");
  } else if (klen) {
    memcpy(k, key, klen);
  }
  for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x36;
  if (!SHA256_Init(&c) || !SHA256_Update(&c, pad, 64) || !SHA256_Update(&c, msg, len) ||
      !SHA256_Final(inner, &c))
    return bw_fail(BW_EIO, "sha256 failed");
  for (int i = 0; i < 64; i++) pad[i] = k[i] ^ 0x5c;
  if (!SHA256_Init(&c) || !SHA256_Update(&c, pad, 64) ||
      !SHA256_Update(&c, inner, sizeof inner) || !SHA256_Final(out, &c))
    return bw_fail(BW_EIO, "sha256 failed");
  return BW_OK;
}

int bw_equal_ct(const void *a, size_t alen, const void *b, size_t blen) {
  const unsigned char *x = a, *y = b;
  unsigned char d = alen != blen;
  size_t n = alen < blen ? alen : blen;
  for (size_t i = 0; i < n; i++) d |= x[i] ^ y[i];
  return d == 0;
}
