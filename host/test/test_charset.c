/*
 * test_charset.c - C tests of charset.c (no Lua): UTF-8 validation (its
 * SIMD path and the sequences it must refuse), detection (BOMs, UTF-16
 * without a BOM, UTF-8 with stray bytes, legacy text through libuchardet,
 * binary), the round trip through UTF-8, and the refusal of a character
 * an encoding cannot hold, naming it and its line. Closes with
 * "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "charset.h"

#include "check.h"

static void test_valid(void) {
  char big[300];
  memset(big, 'a', sizeof big);
  CHECK(bw_utf8_valid_upto(big, sizeof big) == sizeof big, "ASCII");
  big[200] = (char)0xE9; /* a Latin-1 byte past the SIMD blocks */
  CHECK(bw_utf8_valid_upto(big, sizeof big) == 200, "stray byte at 200: %zu",
        bw_utf8_valid_upto(big, sizeof big));
  static const struct {
    const char *s;
    size_t ok;
  } cases[] = {
      {"caf\xC3\xA9", 5},      {"\xE6\x97\xA5\xE6\x9C\xAC", 6}, {"\xF0\x9F\x98\x80", 4},
      {"\xC0\xAF", 0},          /* overlong */
      {"\xE0\x80\xAF", 0},      /* overlong */
      {"\xED\xA0\x80", 0},      /* a surrogate */
      {"\xF4\x90\x80\x80", 0},  /* past U+10FFFF */
      {"ab\xC3", 2},            /* cut short */
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    size_t got = bw_utf8_valid_upto(cases[i].s, strlen(cases[i].s));
    CHECK(got == cases[i].ok, "case %zu: %zu, want %zu", i, got, cases[i].ok);
  }
}

static void detect(const char *what, const char *d, size_t n, int want_rc,
                   const char *want, size_t bom) {
  bw_charset cs;
  int rc = bw_charset_detect(d, n, NULL, &cs);
  CHECK(rc == want_rc && (rc || (!strcmp(cs.name, want) && cs.bom == bom)),
        "%s: rc %d name %s bom %zu", what, rc, rc ? "-" : cs.name, rc ? 0 : cs.bom);
}

static void test_detect(void) {
  detect("utf-8", "plain text\n", 11, BW_OK, "utf-8", 0);
  detect("utf-8 bom", "\xEF\xBB\xBFx\n", 5, BW_OK, "utf-8", 3);
  detect("utf-16le bom", "\xFF\xFEh\0i\0", 6, BW_OK, "utf-16le", 2);
  detect("utf-16be bom", "\xFE\xFF\0h\0i", 6, BW_OK, "utf-16be", 2);
  detect("utf-32le bom", "\xFF\xFE\0\0h\0\0\0", 8, BW_OK, "utf-32le", 4);
  detect("utf-32be bom", "\0\0\xFE\xFF\0\0\0h", 8, BW_OK, "utf-32be", 4);
  detect("utf-16le no bom", "h\0e\0l\0l\0o\0\n\0", 12, BW_OK, "utf-16le", 0);
  detect("utf-16be no bom", "\0h\0e\0l\0l\0o\0\n", 12, BW_OK, "utf-16be", 0);
  detect("binary", "\x7F" "ELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\x03\0>\0", 20, BW_BINARY, NULL, 0);
  const char *stray = "h\xC3\xA9llo w\xC3\xB6rld caf\xC3\xA9 \xFF\n";
  detect("utf-8 with a stray byte", stray, strlen(stray), BW_OK, "utf-8", 0);
  /* Shift-JIS of a Japanese sentence, long enough for the detector */
  char sj[4096];
  size_t n = 0;
  const char *unit = "\x82\xB1\x82\xEA\x82\xCD\x93\xFA\x96\x7B\x8C\xEA\x82\xCC\x83\x65\x83\x4C\x83\x58"
                     "\x83\x67\x82\xC5\x82\xB7\x81\x42\n";
  while (n + strlen(unit) < sizeof sj) memcpy(sj + n, unit, strlen(unit)), n += strlen(unit);
  detect("shift_jis", sj, n, BW_OK, "shift_jis", 0);
}

/* The fallback list: a short text the detector cannot tell (or guesses
 * with fewer letters) is read in the first listed charset that defines
 * every byte of it; the list never overrides a BOM, UTF-8 or a long text. */
static void fallback(const char *what, const char *d, const char *list, const char *want) {
  bw_charset cs;
  int rc = bw_charset_detect(d, strlen(d), list, &cs);
  CHECK(rc == BW_OK && !strcmp(cs.name, want), "%s: rc %d name %s, want %s", what, rc, rc ? "-" : cs.name, want);
}

static void test_fallback(void) {
  const char *pl = "Za\xBF\xF3\xB3\xE6 g\xEA\xB6l\xB1 ja\xBC\xF1\n"; /* ISO-8859-2 */
  fallback("polish, default list", pl, NULL, "windows-1252");
  fallback("polish, its charset listed", pl, "utf-8,iso-8859-2", "iso-8859-2");
  const char *odd = "abc \x81\x82 def\n"; /* no guess; 0x81 undefined in windows-1252 */
  fallback("no charset of the list fits", odd, NULL, "utf-8");
  fallback("the first that fits", odd, "windows-1252,koi8-r,iso-8859-5", "koi8-r");
  fallback("an unknown name is passed over", odd, "nope,,iso-8859-5", "iso-8859-5");
  fallback("utf-8 stays utf-8", "caf\xC3\xA9\n", "iso-8859-2", "utf-8");
  fallback("a BOM wins", "\xFF\xFEh\0i\0", "iso-8859-2", "utf-16le");
  fallback("smart quotes read alike: the list's", "He said \x93yes\x94 \x96 twice\n", NULL, "windows-1252");
  CHECK(bw_charset_fallback_ok("windows-1252") && bw_charset_fallback_ok("shift_jis") &&
            bw_charset_fallback_ok("utf-8"),
        "ASCII-compatible charsets may be listed");
  CHECK(!bw_charset_fallback_ok("utf-16le") && !bw_charset_fallback_ok("utf-32") &&
            !bw_charset_fallback_ok("no-such-charset"),
        "UTF-16/32 and unknown names may not");
}

static void test_round_trip(void) {
  const char *sjis = "\x93\xFA\x96\x7B\x8C\xEA\n"; /* 日本語 */
  char *u = NULL, *back = NULL;
  size_t ul, bl;
  CHECK(bw_charset_decode("shift_jis", sjis, strlen(sjis), &u, &ul) == BW_OK && ul == 10 &&
            !memcmp(u, "\xE6\x97\xA5\xE6\x9C\xAC\xE8\xAA\x9E\n", 10),
        "decode shift_jis");
  CHECK(u && bw_charset_encode("shift_jis", u, ul, &back, &bl) == BW_OK && bl == strlen(sjis) &&
            !memcmp(back, sjis, bl),
        "encode back to the same bytes");
  free(u);
  free(back);
  const char *text = "line one\nGr\xC3\xBC\xC3\x9F" "e \xE6\x9D\xB1\n";
  int rc = bw_charset_encode("iso-8859-1", text, strlen(text), &back, &bl);
  CHECK(rc == BW_INVALID_ARGUMENT && bw_detail() &&
            strstr(bw_detail(), "line 2: the character \"\xE6\x9D\xB1\" (U+6771) cannot be written in iso-8859-1"),
        "unrepresentable: %s", bw_detail() ? bw_detail() : "(none)");
  rc = bw_charset_decode("utf-16le", "a\0\0\xD8", 4, &u, &ul);
  CHECK(rc == BW_INVALID_ARGUMENT, "a lone surrogate does not decode: rc %d", rc);
  CHECK(!bw_charset_known("no-such-charset") && bw_charset_known("koi8-r"), "known");
  size_t bl2;
  CHECK(!memcmp(bw_charset_bom_bytes("utf-16be", &bl2), "\xFE\xFF", 2) && bl2 == 2 &&
            (bw_charset_bom_bytes("shift_jis", &bl2), bl2 == 0),
        "BOM bytes");
}

int main(void) {
  test_valid();
  test_detect();
  test_fallback();
  test_round_trip();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
