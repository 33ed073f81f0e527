/*
 * hash.c - content hashes ("sha256:<hex>") with OpenSSL's libcrypto.
 */
#include <openssl/evp.h>
#include <string.h>

#include "core.h"

int bw_sha256(const void *data, size_t len, char out[BW_HASH_STR]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int mdlen = 0;
  if (!EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) || mdlen != 32)
    return bw_fail(BW_EIO, "sha256 failed");
  memcpy(out, "sha256:", 7);
  for (unsigned i = 0; i < mdlen; i++) {
    out[7 + 2 * i] = hex[md[i] >> 4];
    out[8 + 2 * i] = hex[md[i] & 15];
  }
  out[7 + 2 * mdlen] = '\0';
  return BW_OK;
}
