/*
 * fuzz_base64.c - base64 (text.c): the strict decoder against the encoder.
 *
 * The input is decoded as base64 text: bw_base64_size and bw_base64_decode
 * agree, and what they accept is the one encoding of its bytes (encoding
 * them again gives the input without its whitespace), so the size a policy
 * is told is the size written. The input is also encoded as bytes: the
 * result decodes back to them.
 */
#include "core.h"
#include "fuzz.h"

static int b64_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

static void decode_side(const char *text, size_t len) {
  size_t size = (size_t)-1, n = 0;
  char *out = NULL;
  int rs = bw_base64_size(text, len, &size);
  int rd = bw_base64_decode(text, len, &out, &n);
  FZ_CHECK(rs == rd, "size says %d, decode says %d", rs, rd);
  if (rd) {
    FZ_CHECK(rd == BW_INVALID_ARGUMENT, "refusal is %s", bw_code_name(rd));
    return;
  }
  FZ_CHECK(size == n, "size %zu, decoded %zu", size, n);
  char *again = NULL;
  size_t alen = 0;
  FZ_CHECK(bw_base64_encode(out, n, &again, &alen) == BW_OK, "encode failed");
  size_t k = 0; /* the input without whitespace must be exactly that */
  for (size_t i = 0; i < len; i++) {
    if (b64_space(text[i])) continue;
    FZ_CHECK(k < alen && again[k] == text[i],
             "accepted text is not the canonical encoding at offset %zu", i);
    k++;
  }
  FZ_CHECK(k == alen, "canonical encoding is longer (%zu > %zu)", alen, k);
  free(again);
  free(out);
}

static void encode_side(const char *data, size_t len) {
  char *text = NULL, *back = NULL;
  size_t tlen = 0, blen = 0;
  FZ_CHECK(bw_base64_encode(data, len, &text, &tlen) == BW_OK, "encode failed");
  FZ_CHECK(tlen == 4 * ((len + 2) / 3), "encoded length %zu for %zu bytes",
           tlen, len);
  FZ_CHECK(text[tlen] == '\0', "encoding is not NUL-terminated");
  int rc = bw_base64_decode(text, tlen, &back, &blen);
  FZ_CHECK(rc == BW_OK, "own encoding refused: %s", bw_detail());
  FZ_CHECK(blen == len && !memcmp(back, data, len), "round trip differs");
  free(back);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  decode_side((const char *)data, size);
  encode_side((const char *)data, size);
  return 0;
}
