/*
 * text.c - what a model needs to see of a file's bytes: line counts,
 * newline style, BOM, the binary test, and the line-numbered view built in
 * one pass into one buffer (or the same page as data: the lines' texts and
 * where each ends, for a pack that numbers them its own way). Newline
 * counting is vectorised (SSE2 on x86-64, AVX2 where the CPU has it, a
 * plain loop elsewhere): it bounds the cost of reading a big file, and of
 * numbering grep's hits (bw_count_newlines).
 */
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define BW_AVX2 1
#endif
#include <stdatomic.h>

enum { BINARY_PROBE = 8192 };

/* Newlines in p[0, n): per-byte counters (a compare is -1 per hit)
 * summed with psadbw before a counter can pass 255; no popcount, so the x86-64
 * baseline has no software fallback in the loop (libgcc's __popcountdi2,
 * called per 16 bytes, was 40 % of a whole read's scan). */
#ifdef BW_AVX2
/* The same with AVX2, chosen at run time; counts p[0, *done). */
__attribute__((target("avx2"))) static size_t count_nl_avx2(const char *p,
                                                            size_t n,
                                                            size_t *done) {
  const __m256i nl = _mm256_set1_epi8('\n'), zero = _mm256_setzero_si256();
  size_t c = 0, i = 0;
  while (i + 128 <= n) {
    __m256i a0 = zero, a1 = zero;
    /* each counter takes two compares per round: 127 rounds at most */
    size_t stop = n - i > 127 * 128 ? i + 127 * 128 : n;
    for (; i + 128 <= stop; i += 128) {
      const __m256i *q = (const __m256i *)(p + i);
      a0 = _mm256_sub_epi8(a0, _mm256_cmpeq_epi8(_mm256_loadu_si256(q), nl));
      a1 = _mm256_sub_epi8(a1, _mm256_cmpeq_epi8(_mm256_loadu_si256(q + 1), nl));
      a0 = _mm256_sub_epi8(a0, _mm256_cmpeq_epi8(_mm256_loadu_si256(q + 2), nl));
      a1 = _mm256_sub_epi8(a1, _mm256_cmpeq_epi8(_mm256_loadu_si256(q + 3), nl));
    }
    __m256i t = _mm256_add_epi64(_mm256_sad_epu8(a0, zero), _mm256_sad_epu8(a1, zero));
    c += (size_t)_mm256_extract_epi64(t, 0) + (size_t)_mm256_extract_epi64(t, 1) +
         (size_t)_mm256_extract_epi64(t, 2) + (size_t)_mm256_extract_epi64(t, 3);
  }
  *done = i;
  return c;
}

#endif

/* Asked the first time a scan could use it, not before main: libgcc's
 * __builtin_cpu_supports runs its CPUID probe in every process, and CPUID
 * traps to the hypervisor on a VM (a few % of a start). AVX2 needs the
 * CPU's bit and the OS saving the YMM state (XCR0 bits 1 and 2). */
int bw_have_avx2(void) {
#ifdef BW_AVX2
  static _Atomic int known = -1;
  int v = atomic_load_explicit(&known, memory_order_relaxed);
  if (v >= 0) return v;
  unsigned a, b, c, d;
  v = 0;
  if (__get_cpuid(1, &a, &b, &c, &d) && (c & bit_OSXSAVE) && (c & bit_AVX)) {
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    if ((lo & 6) == 6 && __get_cpuid_count(7, 0, &a, &b, &c, &d)) v = (b & bit_AVX2) != 0;
  }
  atomic_store_explicit(&known, v, memory_order_relaxed);
  return v;
#else
  return 0;
#endif
}

size_t bw_count_newlines(const char *p, size_t n) {
  size_t c = 0, i = 0;
#ifdef BW_AVX2
  if (n >= 128 && bw_have_avx2()) c = count_nl_avx2(p, n, &i);
#endif
#ifdef __SSE2__
  const __m128i nl = _mm_set1_epi8('\n'), zero = _mm_setzero_si128();
  while (n - i >= 64) {
    __m128i a0 = zero, a1 = zero;
    size_t stop = n - i > 127 * 64 ? i + 127 * 64 : n; /* see above */
    for (; i + 64 <= stop; i += 64) {
      const __m128i *q = (const __m128i *)(p + i);
      a0 = _mm_sub_epi8(a0, _mm_cmpeq_epi8(_mm_loadu_si128(q), nl));
      a1 = _mm_sub_epi8(a1, _mm_cmpeq_epi8(_mm_loadu_si128(q + 1), nl));
      a0 = _mm_sub_epi8(a0, _mm_cmpeq_epi8(_mm_loadu_si128(q + 2), nl));
      a1 = _mm_sub_epi8(a1, _mm_cmpeq_epi8(_mm_loadu_si128(q + 3), nl));
    }
    __m128i t = _mm_add_epi64(_mm_sad_epu8(a0, zero), _mm_sad_epu8(a1, zero));
    c += (size_t)_mm_cvtsi128_si32(t) + (size_t)_mm_extract_epi16(t, 4);
  }
#endif
  for (; i < n; i++) c += p[i] == '\n';
  return c;
}

/* "\r\n" pairs in d[0, n): the newlines (as bw_count_newlines counts
 * them) preceded by a CR, counted only past the first CR (most files have
 * none: one memchr). Per-byte counters summed with psadbw, as above. */
static size_t count_crlf(const char *d, size_t n) {
  const char *r = memchr(d, '\r', n);
  if (!r) return 0;
  size_t c = 0, i = (size_t)(r - d) + 1;
#ifdef __SSE2__
  const __m128i nl = _mm_set1_epi8('\n'), cr = _mm_set1_epi8('\r'), zero = _mm_setzero_si128();
  while (n - i >= 16) {
    __m128i a = zero;
    size_t stop = n - i > 255 * 16 ? i + 255 * 16 : n;
    for (; i + 16 <= stop; i += 16) {
      __m128i v = _mm_loadu_si128((const __m128i *)(d + i));
      __m128i prev = _mm_loadu_si128((const __m128i *)(d + i - 1));
      a = _mm_sub_epi8(a, _mm_and_si128(_mm_cmpeq_epi8(v, nl), _mm_cmpeq_epi8(prev, cr)));
    }
    __m128i t = _mm_sad_epu8(a, zero);
    c += (size_t)_mm_cvtsi128_si32(t) + (size_t)_mm_extract_epi16(t, 4);
  }
#endif
  for (; i < n; i++) c += d[i] == '\n' && d[i - 1] == '\r';
  return c;
}

void bw_text_scan(const char *d, size_t n, bw_text_info *in) {
  memset(in, 0, sizeof *in);
  in->bom = n >= 3 && memcmp(d, "\xEF\xBB\xBF", 3) == 0;
  in->binary = memchr(d, '\0', n < BINARY_PROBE ? n : BINARY_PROBE) != NULL;
  in->lf = bw_count_newlines(d, n);
  in->crlf = count_crlf(d, n);
  in->lines = in->lf + (n > 0 && d[n - 1] != '\n');
}

const char *bw_newline_kind(const bw_text_info *in) {
  if (in->lf == 0) return "none";
  if (in->crlf == 0) return "lf";
  if (in->crlf == in->lf) return "crlf";
  return "mixed";
}

/* Pointer just past the k-th newline of [p, end), or NULL if fewer. */
static const char *skip_lines(const char *p, const char *end, size_t k) {
  if (k == 0) return p;
  enum { BLOCK = 4096 }; /* counted whole (vectorised), then memchr */
  while (end - p > BLOCK) {
    size_t c = bw_count_newlines(p, BLOCK);
    if (c >= k) break; /* the k-th newline is in this block */
    k -= c;
    p += BLOCK;
  }
  while (p < end) {
    const char *q = memchr(p, '\n', (size_t)(end - p));
    if (!q) return NULL;
    p = q + 1;
    if (--k == 0) return p;
  }
  return NULL;
}

/* Room for more bytes in res->out (kept in res so nothing leaks if a
 * SIGBUS guard jumps out of the numbering). */
static int out_reserve(bw_lines *o, size_t more) {
  if (o->out_len + more <= o->out_cap) return BW_OK;
  size_t cap = o->out_cap ? o->out_cap : 4096;
  while (cap < o->out_len + more) cap *= 2;
  char *s = realloc(o->out, cap);
  if (!s) return BW_ENOMEM;
  o->out = s;
  o->out_cap = cap;
  bw_huge_advise(s, cap); /* written once, front to back */
  return BW_OK;
}

/* "N\t" for a line number, without snprintf's cost per line. */
static int fmt_lineno(char *buf, size_t n) {
  char tmp[24];
  int len = 0;
  do {
    tmp[len++] = (char)('0' + n % 10);
    n /= 10;
  } while (n);
  for (int i = 0; i < len; i++) buf[i] = tmp[len - 1 - i];
  buf[len] = '\t';
  return len + 1;
}

/* The length of "N\t" for a line number (a page counted: nothing written). */
static int lineno_len(size_t n) {
  int len = 2;
  while (n >= 10) {
    n /= 10;
    len++;
  }
  return len;
}

/* Byte length of the first max_chars UTF-8 characters of s[0..n). */
static size_t utf8_prefix(const char *s, size_t n, size_t max_chars) {
  size_t chars = 0;
  for (size_t i = 0; i < n; i++) {
    if (((unsigned char)s[i] & 0xC0) == 0x80) continue;
    if (chars++ == max_chars) return i;
  }
  return n;
}

/* Append n raw bytes at p to o escaped as JSON string content, in
 * blocks (room for each block's worst case first). */
static int out_escape(bw_lines *o, const char *p, size_t n) {
  const unsigned char *q = (const unsigned char *)p, *end = q + n;
  while (q < end) {
    size_t chunk = (size_t)(end - q) < 65536 ? (size_t)(end - q) : 65536;
    if (out_reserve(o, BW_JSON_WORST(chunk))) return BW_ENOMEM;
    char *w = bw_json_escape(o->out + o->out_len, &q, q + chunk, end);
    o->out_len = (size_t)(w - o->out);
  }
  return BW_OK;
}

/* What number_lines writes: numbered rows, the same as JSON string
 * content, each line's text alone with its end recorded (bw_page_lines),
 * or nothing: the page counted (bw_lines_count). */
enum { ROWS_TEXT, ROWS_JSON, ROWS_DATA, ROWS_COUNT };

/* Record where the row just written ends (ROWS_DATA). */
static int end_row(bw_lines *o) {
  if (o->rows == o->ends_cap) {
    size_t cap = o->ends_cap ? o->ends_cap * 2 : 256;
    size_t *e = realloc(o->ends, cap * sizeof *e);
    if (!e) return BW_ENOMEM;
    o->ends = e;
    o->ends_cap = cap;
  }
  o->ends[o->rows++] = o->out_len;
  return BW_OK;
}

/* One row: its number num[0, numlen) ("N\t"), the kept text p[0, keep),
 * the cut marker m[0, ml), then a newline; as mode says. */
static int put_row(bw_lines *o, int mode, const char *num, size_t numlen,
                   const char *p, size_t keep, const char *m, size_t ml) {
  if (mode == ROWS_COUNT) return BW_OK;
  if (mode == ROWS_JSON) { /* digits, "\t", the escaped text, the marker (plain ASCII), "\n" */
    if (out_reserve(o, numlen + 1)) return BW_ENOMEM;
    memcpy(o->out + o->out_len, num, numlen - 1);
    memcpy(o->out + o->out_len + numlen - 1, "\\t", 2);
    o->out_len += numlen + 1;
    if (out_escape(o, p, keep)) return BW_ENOMEM;
    if (out_reserve(o, ml + 2)) return BW_ENOMEM;
    memcpy(o->out + o->out_len, m, ml);
    memcpy(o->out + o->out_len + ml, "\\n", 2);
    o->out_len += ml + 2;
    return BW_OK;
  }
  int text = mode == ROWS_TEXT;
  if (!text) numlen = 0;
  if (out_reserve(o, numlen + keep + ml + 1)) return BW_ENOMEM;
  char *w = o->out + o->out_len;
  memcpy(w, num, numlen);
  memcpy(w + numlen, p, keep);
  memcpy(w + numlen + keep, m, ml);
  if (text) w[numlen + keep + ml] = '\n';
  o->out_len += numlen + keep + ml + (size_t)text;
  return text ? BW_OK : end_row(o);
}

/* The numbered view, raw, as JSON string content or as data (mode): the
 * caps and cuts count the numbered raw text's bytes whichever it is (raw),
 * so each gives the same page. */
static int number_lines(const char *data, size_t len, size_t first,
                        size_t limit, size_t max_line, size_t max_bytes,
                        bw_lines *res, int mode, size_t at) {
  memset(res, 0, sizeof *res);
  if (first == 0) first = 1;
  const char *end = data + len;
  int exact = at != BW_LINES_BY_LINE;
  const char *p = exact ? data + (at < len ? at : len) : skip_lines(data, end, first - 1);
  /* the BOM is reported apart; it is not part of line 1's text */
  if (first == 1 && (!exact || at == 0) && len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3))
    p += 3;
  bw_lines *o = res;
  size_t want = len < max_bytes ? len + 64 : max_bytes + 64;
  if (mode != ROWS_COUNT && out_reserve(o, want < (1u << 26) ? want : (1u << 26)))
    return BW_ENOMEM;
  size_t lineno = first, shown = 0, raw = 0;
  while (p && p < end && shown < limit) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *stop = nl ? nl : end;
    size_t n = (size_t)(stop - p);
    if (n > 0 && p[n - 1] == '\r') n--; /* the newline style is reported */
    size_t keep = n > max_line ? utf8_prefix(p, n, max_line) : n;
    char num[48], marker[96] = "";
    int numlen = mode == ROWS_COUNT ? lineno_len(lineno) : fmt_lineno(num, lineno);
    if (keep < n) {
      snprintf(marker, sizeof marker,
               " [... line truncated: %zu of %zu bytes shown]", keep, n);
      res->cut_lines++;
    }
    size_t total = (size_t)numlen + keep + (marker[0] ? strlen(marker) : 0) + 1;
    if (raw + total > max_bytes) {
      if (shown > 0) {
        res->truncated = 1;
        break;
      }
      /* the first line alone is over the cap: show what fits */
      size_t room = max_bytes > (size_t)numlen + 1 + 64
                        ? max_bytes - (size_t)numlen - 1 - 64
                        : 0;
      keep = utf8_prefix(p, keep < room ? keep : room, (size_t)-1);
      while (keep > 0 && keep < n && ((unsigned char)p[keep] & 0xC0) == 0x80)
        keep--;
      snprintf(marker, sizeof marker,
               " [... line truncated: %zu of %zu bytes shown]", keep, n);
      if (exact && keep == 0 && n > 0) /* a resumable page always moves on */
        keep = utf8_prefix(p, n, 1);
      snprintf(marker, sizeof marker,
               " [... line truncated: %zu of %zu bytes shown]", keep, n);
      total = (size_t)numlen + keep + strlen(marker) + 1;
      res->truncated = 1;
    }
    if (put_row(o, mode, num, (size_t)numlen, p, keep, marker, strlen(marker)))
      return BW_ENOMEM;
    raw += total;
    if (!res->first) res->first = lineno;
    res->last = lineno;
    shown++;
    if (exact && keep < n) { /* resumable: the page ends in the cut line */
      p += keep;
      res->next = lineno;
      res->next_byte = (size_t)(p - data);
      res->mid_line = 1;
      res->raw_len = raw;
      return BW_OK;
    }
    lineno++;
    p = nl ? nl + 1 : end;
    if (res->truncated) break;
  }
  if (p && p < end) res->next = lineno;
  res->next_byte = p && p < end ? (size_t)(p - data) : len;
  res->raw_len = raw;
  return BW_OK;
}

int bw_number_lines(const char *data, size_t len, size_t first, size_t limit,
                    size_t max_line, size_t max_bytes, bw_lines *res) {
  return number_lines(data, len, first, limit, max_line, max_bytes, res,
                      ROWS_TEXT, BW_LINES_BY_LINE);
}

int bw_page_lines(const char *data, size_t len, size_t first, size_t limit,
                  size_t max_line, size_t max_bytes, bw_lines *res) {
  return number_lines(data, len, first, limit, max_line, max_bytes, res,
                      ROWS_DATA, BW_LINES_BY_LINE);
}

int bw_lines_at(const char *data, size_t len, size_t at, size_t first,
                size_t limit, size_t max_line, size_t max_bytes, int json,
                bw_lines *res) {
  return number_lines(data, len, first, limit, max_line, max_bytes, res,
                      json ? ROWS_JSON : ROWS_TEXT, at);
}

int bw_lines_count(const char *data, size_t len, size_t at, size_t first,
                   size_t limit, size_t max_line, size_t max_bytes,
                   bw_lines *res) {
  return number_lines(data, len, first, limit, max_line, max_bytes, res,
                      ROWS_COUNT, at);
}

/* One line of a tail: its text cut at max_line characters with a marker,
 * then '\n' if nl. Sizes it when out is NULL. */
static size_t tail_line(bw_lines *o, const char *p, size_t n, size_t max_line,
                        int nl) {
  if (n > 0 && p[n - 1] == '\r') n--;
  size_t keep = n > max_line ? utf8_prefix(p, n, max_line) : n;
  char marker[96] = "";
  if (keep < n)
    snprintf(marker, sizeof marker, " [... line truncated: %zu of %zu bytes shown]",
             keep, n);
  size_t ml = strlen(marker);
  if (o) {
    char *w = o->out + o->out_len;
    memcpy(w, p, keep);
    memcpy(w + keep, marker, ml);
    if (nl) w[keep + ml] = '\n';
    o->out_len += keep + ml + (size_t)nl;
    if (ml) o->cut_lines++;
  }
  return keep + ml + (size_t)nl;
}

int bw_tail_lines(const char *data, size_t len, size_t n, size_t max_line,
                  size_t max_bytes, bw_lines *res) {
  memset(res, 0, sizeof *res);
  /* a final '\n' ends the last line; it does not start another */
  size_t t = len && data[len - 1] == '\n' ? len - 1 : len;
  size_t lim = t, start = t, end = t, got = 0, total = 0;
  size_t bom = len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3) ? 3 : 0;
  while (len && got < n) { /* backwards, one line at a time */
    const char *q = memrchr(data, '\n', lim);
    size_t s = q ? (size_t)(q - data) + 1 : 0;
    size_t from = s == 0 ? bom : s;
    size_t need = tail_line(NULL, data + from, lim - from, max_line, lim < len);
    if (total + need > max_bytes) {
      res->truncated = 1;
      break;
    }
    total += need;
    start = s;
    got++;
    if (!q) break;
    lim = (size_t)(q - data);
  }
  if (out_reserve(res, total + 1)) return BW_ENOMEM;
  for (size_t p = start; got && p <= end;) { /* forwards, into the output */
    const char *nl = p < end ? memchr(data + p, '\n', end - p) : NULL;
    size_t e = nl ? (size_t)(nl - data) : end, from = p == 0 ? bom : p;
    tail_line(res, data + from, e - from, max_line, e < len);
    p = e + 1;
  }
  res->last = got;
  res->first = start == 0 && got; /* 1: the tail is the whole file */
  return BW_OK;
}

/* ---- base64 ---- */

enum { B64_CHUNK = 3 * (1 << 20) }; /* multiple of 3: no padding mid-way */

int bw_base64_encode(const void *data, size_t len, char **out,
                     size_t *out_len) {
  size_t n = 4 * ((len + 2) / 3);
  char *s = malloc(n + 1);
  if (!s) return BW_ENOMEM;
  const unsigned char *in = data;
  size_t o = 0;
  for (size_t i = 0; i < len; i += B64_CHUNK) {
    size_t c = len - i < B64_CHUNK ? len - i : B64_CHUNK;
    o += (size_t)EVP_EncodeBlock((unsigned char *)s + o, in + i, (int)c);
  }
  s[o] = '\0';
  *out = s;
  *out_len = o;
  return BW_OK;
}

/* Strict base64 (RFC 4648, the standard alphabet). Space, tab, CR and LF
 * are skipped anywhere, so wrapped base64 decodes; '=' may only close the
 * last group of four, as its last one or two characters; nothing but
 * whitespace may follow it; and the bits a padded group leaves over must be
 * zero, so a byte string has one encoding. A decoder that takes more than
 * this lets the size a policy is told differ from the bytes written. */

enum { B64_WS = 64, B64_PAD, B64_BAD };

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  if (c == '=') return B64_PAD;
  if (c == ' ' || c == '\t' || c == '\r' || c == '\n') return B64_WS;
  return B64_BAD;
}

static __thread char b64err[128]; /* detail of the last refusal */

static int b64_bad(size_t at, const char *why, unsigned char c) {
  if (c >= 0x21 && c < 0x7f)
    snprintf(b64err, sizeof b64err, "invalid base64 at offset %zu ('%c'): %s",
             at, c, why);
  else
    snprintf(b64err, sizeof b64err,
             "invalid base64 at offset %zu (byte 0x%02x): %s", at, c, why);
  return bw_fail(BW_INVALID_ARGUMENT, b64err);
}

/* One pass: checks text and, when out is not NULL, decodes into it (room
 * for bw_base64_size's answer). *n gets the decoded length. */
static int b64_run(const char *text, size_t len, unsigned char *out,
                   size_t *n) {
  const unsigned char *t = (const unsigned char *)text;
  unsigned long acc = 0; /* bits of the group so far */
  int k = 0, pad = 0;    /* characters and '=' of the group so far */
  int done = 0;          /* a padded group ended the data */
  size_t o = 0, last = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64_value(t[i]);
    if (v == B64_WS) continue;
    if (done || (pad && v != B64_PAD))
      return b64_bad(i, "data after the padding", t[i]);
    if (v == B64_BAD) return b64_bad(i, "not in the base64 alphabet", t[i]);
    if (v == B64_PAD) {
      if (k < 2) return b64_bad(i, "padding where data is expected", t[i]);
      pad++;
    } else {
      acc = acc << 6 | (unsigned)v;
      last = i;
    }
    if (++k < 4) continue;
    if (pad) { /* 12 bits for one byte or 18 for two: the rest must be 0 */
      int keep = 3 - pad, spare = pad * 2;
      if (acc & ((1u << spare) - 1))
        return b64_bad(last, "nonzero bits after the last byte", t[last]);
      acc >>= spare;
      for (int j = keep - 1; out && j >= 0; j--, acc >>= 8)
        out[o + (size_t)j] = (unsigned char)acc;
      o += (size_t)keep;
      done = 1;
    } else {
      if (out) {
        out[o] = (unsigned char)(acc >> 16);
        out[o + 1] = (unsigned char)(acc >> 8);
        out[o + 2] = (unsigned char)acc;
      }
      o += 3;
    }
    k = 0;
    acc = 0;
  }
  if (k) {
    snprintf(b64err, sizeof b64err,
             "invalid base64 at offset %zu: it ends inside a group of four "
             "(pad with '=')",
             len);
    return bw_fail(BW_INVALID_ARGUMENT, b64err);
  }
  *n = o;
  return BW_OK;
}

int bw_base64_size(const char *text, size_t len, size_t *out_len) {
  return b64_run(text, len, NULL, out_len);
}

int bw_base64_decode(const char *text, size_t len, char **out,
                     size_t *out_len) {
  size_t n;
  int rc = b64_run(text, len, NULL, &n);
  if (rc) return rc;
  unsigned char *s = malloc(n + 1);
  if (!s) return bw_fail(BW_ENOMEM, "out of memory");
  b64_run(text, len, s, &n);
  *out = (char *)s;
  *out_len = n;
  return BW_OK;
}
