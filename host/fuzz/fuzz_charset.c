/*
 * fuzz_charset.c - charset.c: detection and the round trip through UTF-8.
 *
 * On any bytes: bw_utf8_valid_upto agrees with a byte-at-a-time reference
 * (so its SIMD path never passes a bad sequence); detection answers OK or
 * BINARY; a detected encoding either decodes or refuses with
 * INVALID_ARGUMENT, and its UTF-8 is valid UTF-8; encoding that UTF-8 back
 * either gives bytes that decode again or refuses with INVALID_ARGUMENT
 * naming a line. The first byte picks a fixed encoding
 * to try as well (what a `charset` argument can make burrow do).
 */
#include "charset.h"
#include "fuzz.h"

/* The reference: one code point at a time, the Unicode rules spelled out. */
static size_t ref_valid(const unsigned char *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = p[i], cp;
    size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3
                 : (c & 0xF8) == 0xF0 ? 4 : 0;
    if (!len || i + len > n) return i;
    cp = len == 1 ? c : c & (0x7F >> len);
    for (size_t k = 1; k < len; k++) {
      if ((p[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static const unsigned min[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return n;
}

static const char *const FIXED[] = {"utf-16le", "utf-16be", "utf-32le", "shift_jis",
                                    "euc-jp",   "gb18030",  "big5",     "windows-1252",
                                    "iso-8859-1", "koi8-r"};

static void round_trip(const char *name, const char *d, size_t n) {
  char *u = NULL, *back = NULL, *again = NULL;
  size_t ul = 0, bl = 0, al = 0;
  int rc = bw_charset_decode(name, d, n, &u, &ul);
  if (rc) {
    FZ_CHECK(rc == BW_INVALID_ARGUMENT, "%s: decode says %s", name, bw_code_name(rc));
    return;
  }
  FZ_CHECK(ref_valid((const unsigned char *)u, ul) == ul, "%s: decoded text is not UTF-8", name);
  rc = bw_charset_encode(name, u, ul, &back, &bl);
  if (rc) {
    FZ_CHECK(rc == BW_INVALID_ARGUMENT && bw_detail() && !strncmp(bw_detail(), "line ", 5),
             "%s: encode says %s (%s)", name, bw_code_name(rc), bw_detail() ? bw_detail() : "");
  } else {
    /* the same text back is not promised: iconv composes in some (windows-1255), which is
       why an edit first checks that the file's own bytes come back (edit.c apply_in) */
    FZ_CHECK(bw_charset_decode(name, back, bl, &again, &al) == BW_OK,
             "%s: encoded text does not decode", name);
  }
  free(again);
  free(back);
  free(u);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *d = (const char *)data;
  FZ_CHECK(bw_utf8_valid_upto(d, size) == ref_valid(data, size), "validation differs from the reference");
  bw_charset cs;
  int rc = bw_charset_detect(d, size, size && data[0] & 1 ? "shift_jis,iso-8859-1" : NULL, &cs);
  FZ_CHECK(rc == BW_OK || rc == BW_BINARY, "detect says %s", bw_code_name(rc));
  if (!rc) FZ_CHECK(cs.bom <= size, "BOM longer than the input");
  if (!rc && !cs.utf8) round_trip(cs.name, d + cs.bom, size - cs.bom);
  if (size > 0) round_trip(FIXED[data[0] % (sizeof FIXED / sizeof *FIXED)], d + 1, size - 1);
  return 0;
}
