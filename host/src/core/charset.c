/*
 * charset.c - text in other encodings than UTF-8: which one a file is in
 * (a BOM first, then UTF-8 validity, then libuchardet only where the bytes
 * are not UTF-8, so UTF-8 files cost one validating pass; a guess burrow
 * does not trust gives way to the operator's fallback list), and the round
 * trip through UTF-8 with iconv (glibc). Encoding back refuses a
 * character the encoding cannot hold, naming it and its line.
 * libuchardet (and libstdc++ behind it) is opened with dlopen the first
 * time a file needs it (dynlib.c), so no start pays for loading it.
 */
#include <errno.h>
#include <iconv.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uchardet/uchardet.h>

#include "charset.h"
#include "dynlib.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

enum { DETECT_PROBE = 64 * 1024, UTF16_PROBE = 4096 };

/* bw_fail keeps a pointer: the details built here live per thread */
static _Thread_local char msg[200];

/* ---- detection ---- */

static const struct {
  const char *bytes;
  size_t len;
  const char *name;
} BOMS[] = {
    /* UTF-32LE before UTF-16LE: FF FE 00 00 starts both */
    {"\xFF\xFE\0\0", 4, "utf-32le"}, {"\0\0\xFE\xFF", 4, "utf-32be"},
    {"\xEF\xBB\xBF", 3, "utf-8"},    {"\xFF\xFE", 2, "utf-16le"},
    {"\xFE\xFF", 2, "utf-16be"},
};

size_t bw_charset_bom(const char *d, size_t n, const char **name) {
  for (size_t i = 0; i < sizeof BOMS / sizeof *BOMS; i++)
    if (n >= BOMS[i].len && !memcmp(d, BOMS[i].bytes, BOMS[i].len)) {
      if (name) *name = BOMS[i].name;
      return BOMS[i].len;
    }
  return 0;
}

const char *bw_charset_bom_bytes(const char *charset, size_t *len) {
  for (size_t i = 0; i < sizeof BOMS / sizeof *BOMS; i++)
    if (!strcasecmp(charset, BOMS[i].name)) {
      *len = BOMS[i].len;
      return BOMS[i].bytes;
    }
  *len = 0;
  return "";
}

/* Offset of the first byte that is not part of valid UTF-8, or n. */
size_t bw_utf8_valid_upto(const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    if (p[i] < 0x80) { /* ASCII runs, 16 bytes (else a word) at a time */
#ifdef __SSE2__
      for (; i + 64 <= n; i += 64) {
        const __m128i *q = (const __m128i *)(p + i);
        __m128i x = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(q), _mm_loadu_si128(q + 1)),
                                 _mm_or_si128(_mm_loadu_si128(q + 2), _mm_loadu_si128(q + 3)));
        if (_mm_movemask_epi8(x)) break;
      }
      while (i + 16 <= n &&
             !_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(p + i))))
        i += 16;
#endif
      while (i + 8 <= n) {
        unsigned long long w;
        memcpy(&w, p + i, 8);
        if (w & 0x8080808080808080ULL) break;
        i += 8;
      }
      while (i < n && p[i] < 0x80) i++;
      continue;
    }
    unsigned c = p[i];
    size_t len = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3
                 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
    if (!len || i + len > n) return i;
    for (size_t k = 1; k < len; k++)
      if ((p[i + k] & 0xC0) != 0x80) return i;
    if ((c == 0xE0 && p[i + 1] < 0xA0) || (c == 0xED && p[i + 1] > 0x9F) ||
        (c == 0xF0 && p[i + 1] < 0x90) || (c == 0xF4 && p[i + 1] > 0x8F))
      return i; /* overlong, surrogate, past U+10FFFF */
    i += len;
  }
  return n;
}

/* Valid UTF-8, or UTF-8 with a few stray bytes (more valid multibyte
 * characters than bad bytes): served as it is, as before, rather than
 * as a legacy encoding's mojibake. Legacy text seldom forms valid
 * multibyte sequences. */
static int mostly_utf8(const char *d, size_t n) {
  size_t at = bw_utf8_valid_upto(d, n);
  if (at == n) return 1;
  size_t good = 0, bad = 0, i = 0;
  while (i < n) {
    size_t upto = i + bw_utf8_valid_upto(d + i, n - i);
    for (size_t k = i; k < upto; k++) good += ((unsigned char)d[k] & 0xC0) == 0xC0;
    if (upto >= n) break;
    bad++;
    i = upto + 1;
  }
  return good > bad;
}

/* UTF-16 without a BOM: ASCII-heavy text has a NUL in every other byte
 * and none in the others. */
static const char *utf16_guess(const char *d, size_t n) {
  size_t m = n < UTF16_PROBE ? n : UTF16_PROBE, even = 0, odd = 0;
  if (m < 4 || n % 2) return NULL;
  for (size_t i = 0; i + 1 < m; i += 2) {
    even += d[i] == 0;
    odd += d[i + 1] == 0;
  }
  size_t pairs = m / 2;
  if (even == 0 && odd * 10 >= pairs * 4) return "utf-16le";
  if (odd == 0 && even * 10 >= pairs * 4) return "utf-16be";
  return NULL;
}

/* libuchardet, opened on the first file that needs it */
static struct {
  __typeof__(&uchardet_new) new_;
  __typeof__(&uchardet_handle_data) handle_data;
  __typeof__(&uchardet_data_end) data_end;
  __typeof__(&uchardet_get_charset) get_charset;
  __typeof__(&uchardet_delete) delete_;
} ud;

static const bw_dynsym ud_syms[] = {
    {(void **)&ud.new_, "uchardet_new"},
    {(void **)&ud.handle_data, "uchardet_handle_data"},
    {(void **)&ud.data_end, "uchardet_data_end"},
    {(void **)&ud.get_charset, "uchardet_get_charset"},
    {(void **)&ud.delete_, "uchardet_delete"},
};

static bw_dynlib ud_lib = BW_DYNLIB("libuchardet.so.0", "libuchardet0", ud_syms);
static atomic_flag ud_warned = ATOMIC_FLAG_INIT;

/* Without the library (a machine where it was removed after the build),
 * text that is not UTF-8 is read as when the detector has no answer (the
 * fallback list, else its bytes), and the process says why once on stderr. */
static int detector(void) {
  char why[256];
  if (!bw_dynlib_load(&ud_lib, why, sizeof why)) return 1;
  if (!atomic_flag_test_and_set(&ud_warned))
    fprintf(stderr, "burrow: %s; text that is not UTF-8 is read in the first fallback charset that fits, else as its bytes\n", why);
  return 0;
}

static int convert(const char *to, const char *from, const char *s, size_t n,
                   char **out, size_t *olen, size_t *bad);
static const char *iconv_name(const char *name);

/* A code point a text's letters are made of: a letter of a script a
 * single-byte code page serves (Latin, Greek, Cyrillic, Hebrew, Arabic,
 * Thai) or one a multi-byte page serves (kana, CJK ideographs, Hangul),
 * not a symbol, a box-drawing piece or a control. */
static int is_letter(unsigned cp) {
  return (cp >= 0xC0 && cp <= 0x24F && cp != 0xD7 && cp != 0xF7) || (cp >= 0x370 && cp <= 0x3FF) ||
         (cp >= 0x400 && cp <= 0x52F) || (cp >= 0x5D0 && cp <= 0x5EA) || (cp >= 0x620 && cp <= 0x64A) ||
         (cp >= 0xE01 && cp <= 0xE2E) || (cp >= 0x3041 && cp <= 0x30FF) || (cp >= 0x4E00 && cp <= 0x9FFF) ||
         (cp >= 0xAC00 && cp <= 0xD7A3);
}

/* d read as a charset: its non-ASCII characters, and how many of them
 * are letters. */
typedef struct reading {
  size_t chars, letters;
} reading;

/* d as UTF-8 read in charset (malloc'd into *u), or -1 when the page
 * leaves a byte of it undefined. A probe (whole = 0) may end inside a
 * character: a fault in its last bytes is the cut, and what comes before
 * it is read. */
static int text_as(const char *charset, const char *d, size_t n, int whole, char **u, size_t *len) {
  size_t bad = (size_t)-1;
  int rc = convert("UTF-8", iconv_name(charset), d, n, u, len, &bad);
  if (rc && !whole && bad != (size_t)-1 && bad + 4 > n && bad > 0)
    rc = convert("UTF-8", iconv_name(charset), d, bad, u, len, &bad);
  if (rc) bw_clear_detail();
  return rc ? -1 : 0;
}

/* Do two charsets read d as the same text? */
static int same_text(const char *a, const char *b, const char *d, size_t n, int whole) {
  char *ua = NULL, *ub = NULL;
  size_t la = 0, lb = 0;
  int same = !text_as(a, d, n, whole, &ua, &la) && !text_as(b, d, n, whole, &ub, &lb) && la == lb &&
             !memcmp(ua, ub, la);
  free(ua);
  free(ub);
  return same;
}

/* Read d as charset (text_as), counting its non-ASCII characters and
 * letters into r: 0, or -1 when the page leaves a byte undefined. */
static int read_as(const char *charset, const char *d, size_t n, int whole, reading *r) {
  char *u = NULL;
  size_t len = 0;
  memset(r, 0, sizeof *r);
  if (text_as(charset, d, n, whole, &u, &len)) return -1;
  for (size_t i = 0; i < len;) {
    unsigned c = (unsigned char)u[i], cp = c;
    size_t l = c < 0x80 ? 1 : c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
    if (i + l > len) break;
    if (l > 1) {
      cp = c & (0x7F >> l);
      for (size_t j = 1; j < l; j++) cp = (cp << 6) | ((unsigned char)u[i + j] & 0x3F);
      r->chars++;
      r->letters += (size_t)is_letter(cp);
    }
    i += l;
  }
  free(u);
  return 0;
}

/* A single-byte code page (where a short text leaves the detector
 * guessing among many). */
static int single_byte(const char *name) {
  return !strncmp(name, "windows-125", 11) || !strncmp(name, "iso-8859-", 9) || !strncmp(name, "ibm", 3) ||
         !strncmp(name, "cp", 2) || !strncmp(name, "koi8", 4) || !strncmp(name, "mac", 3);
}

/* Fewer non-ASCII bytes than this, and the detector's single-byte guess
 * is weighed against the fallback (its statistics need more text). */
enum { SHORT_TEXT = 64 };

/* The first charset of the fallback list (comma-separated) that defines
 * every byte of the probe, into fb (and its reading into r); 0 if one does. */
static int first_fallback(const char *fallback, const char *d, size_t n, int whole,
                          char fb[48], reading *r) {
  for (const char *p = fallback ? fallback : BW_CHARSET_FALLBACK; *p;) {
    size_t len = strcspn(p, ",");
    if (len && len < 48) {
      memcpy(fb, p, len);
      fb[len] = 0;
      if (bw_charset_known(fb) && !read_as(fb, d, n, whole, r)) return 0;
    }
    p += len + (p[len] == ',');
  }
  fb[0] = 0;
  return -1;
}

/* burrow's rule before trusting the detector's guess: the page defines
 * every byte of the probe, and for a short text a single-byte page's
 * reading has a larger share of letters than the fallback's (Ærøskøbing
 * read as IBM852 gives ° ÷ ▀, as windows-1252 letters only), or as large
 * a share and other text (the smart quotes windows-1258 and -1252 both
 * read alike are the operator's charset's). Otherwise the fallback's
 * name goes into cs (or "" when none defines the bytes either). */
static void weigh_guess(const char *d, size_t n, const char *fallback, bw_charset *cs) {
  size_t probe = n < DETECT_PROBE ? n : DETECT_PROBE, high = 0;
  int whole = probe == n;
  reading mine, theirs;
  char fb[48];
  int known = cs->name[0] && bw_charset_known(cs->name);
  if (known && read_as(cs->name, d, probe, whole, &mine) == 0) {
    if (!single_byte(cs->name)) return;
    for (size_t i = 0; i < probe; i++) high += (unsigned char)d[i] >= 0x80;
    if (high >= SHORT_TEXT) return;
    if (first_fallback(fallback, d, probe, whole, fb, &theirs) || !strcmp(fb, cs->name)) return;
    size_t fb_share = theirs.letters * mine.chars, my_share = mine.letters * theirs.chars;
    if (fb_share < my_share || (fb_share == my_share && !same_text(fb, cs->name, d, probe, whole))) return;
  } else {
    first_fallback(fallback, d, probe, whole, fb, &theirs);
  }
  snprintf(cs->name, sizeof cs->name, "%s", fb);
}

int bw_charset_detect(const char *d, size_t n, const char *fallback, bw_charset *cs) {
  memset(cs, 0, sizeof *cs);
  const char *name = NULL;
  cs->bom = bw_charset_bom(d, n, &name);
  if (cs->bom) {
    snprintf(cs->name, sizeof cs->name, "%s", name);
    cs->utf8 = !strcmp(name, "utf-8");
    return BW_OK;
  }
  if ((name = utf16_guess(d, n))) {
    snprintf(cs->name, sizeof cs->name, "%s", name);
    return BW_OK;
  }
  if (memchr(d, 0, n < 8192 ? n : 8192)) return bw_fail(BW_BINARY, NULL);
  if (mostly_utf8(d, n)) {
    strcpy(cs->name, "utf-8");
    cs->utf8 = 1;
    return BW_OK;
  }
  if (detector()) {
    uchardet_t u = ud.new_();
    if (!u) return BW_ENOMEM;
    /* the start is enough to decide, and keeps a big file's cost flat */
    int rc = ud.handle_data(u, d, n < DETECT_PROBE ? n : DETECT_PROBE);
    ud.data_end(u);
    const char *got = rc ? "" : ud.get_charset(u);
    snprintf(cs->name, sizeof cs->name, "%s", got ? got : "");
    ud.delete_(u);
  }
  for (char *p = cs->name; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
  if (strcmp(cs->name, "ascii") && strcmp(cs->name, "utf-8")) weigh_guess(d, n, fallback, cs);
  if (!cs->name[0] || !strcmp(cs->name, "ascii") || !strcmp(cs->name, "utf-8") || !strcmp(cs->name, "utf8") ||
      !bw_charset_known(cs->name)) {
    strcpy(cs->name, "utf-8"); /* no better answer: bytes as they are */
    cs->utf8 = 1;
  }
  return BW_OK;
}

int bw_charset_fallback_ok(const char *name) {
  if (!bw_charset_known(name)) return 0;
  char *u = NULL;
  size_t len = 0, bad = 0;
  if (convert("UTF-8", iconv_name(name), "Az\n", 3, &u, &len, &bad)) {
    bw_clear_detail();
    return 0;
  }
  int ok = len == 3 && !memcmp(u, "Az\n", 3);
  free(u);
  return ok;
}

int bw_charset_known(const char *name) {
  iconv_t c = iconv_open("UTF-8", iconv_name(name));
  if (c == (iconv_t)-1) return 0;
  iconv_close(c);
  return 1;
}

/* ---- conversion ---- */

static int convert(const char *to, const char *from, const char *s, size_t n,
                   char **out, size_t *olen, size_t *bad) {
  iconv_t c = iconv_open(to, from);
  if (c == (iconv_t)-1) return bw_fail(BW_INVALID_ARGUMENT, "unknown charset");
  size_t cap = n * 2 + 16, used = 0;
  char *buf = malloc(cap);
  char *in = (char *)s;
  size_t left = n;
  int rc = buf ? BW_OK : BW_ENOMEM;
  while (!rc) {
    char *o = buf + used;
    size_t room = cap - used;
    size_t r = iconv(c, left ? &in : NULL, left ? &left : NULL, &o, &room);
    used = (size_t)(o - buf);
    if (r != (size_t)-1 && !left) break;
    if (r != (size_t)-1) continue;
    if (errno == E2BIG) {
      cap *= 2;
      char *nb = realloc(buf, cap);
      if (!nb) rc = BW_ENOMEM;
      else buf = nb;
    } else { /* EILSEQ or EINVAL: where */
      *bad = (size_t)(in - s);
      rc = BW_INVALID_ARGUMENT;
    }
  }
  iconv_close(c);
  if (rc) {
    free(buf);
    return rc;
  }
  *out = buf;
  *olen = used;
  return BW_OK;
}

static const char *iconv_name(const char *name) {
  /* uchardet's names iconv does not know by that spelling */
  if (!strcasecmp(name, "x-mac-cyrillic")) return "MAC-CYRILLIC";
  if (!strcasecmp(name, "mac-centraleurope")) return "MAC-CENTRALEUROPE";
  return name;
}

int bw_charset_decode(const char *charset, const char *s, size_t n, char **out,
                      size_t *olen) {
  size_t bad = 0;
  int rc = convert("UTF-8", iconv_name(charset), s, n, out, olen, &bad);
  if (rc != BW_INVALID_ARGUMENT || bad == (size_t)-1) return rc;
  snprintf(msg, sizeof msg, "the bytes at offset %zu are not valid %s", bad, charset);
  return bw_fail(BW_INVALID_ARGUMENT, msg);
}

int bw_charset_encode(const char *charset, const char *s, size_t n, char **out,
                      size_t *olen) {
  size_t bad = (size_t)-1;
  int rc = convert(iconv_name(charset), "UTF-8", s, n, out, olen, &bad);
  if (rc != BW_INVALID_ARGUMENT || bad == (size_t)-1) return rc;
  size_t line = 1;
  for (size_t i = 0; i < bad; i++) line += s[i] == '\n';
  size_t len = 1;
  unsigned c = (unsigned char)s[bad], cp = c;
  if (c >= 0xC0) len = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
  if (bad + len > n) len = n - bad;
  if (len > 1) {
    cp = c & (0x7F >> len);
    for (size_t k = 1; k < len; k++) cp = (cp << 6) | ((unsigned char)s[bad + k] & 0x3F);
  }
  snprintf(msg, sizeof msg, "line %zu: the character \"%.*s\" (U+%04X) cannot be written in %s",
           line, (int)len, s + bad, cp, charset);
  return bw_fail(BW_INVALID_ARGUMENT, msg);
}
