/*
 * jsonesc.c - JSON string escaping over raw bytes, shared by the encoder
 * (ljson.c) and the text views that write straight into a reply
 * (text.c's numbered lines for the wire): controls, '"' and '\\' escaped,
 * UTF-8 passed through, each ill-formed part as one U+FFFD. Moved
 * unchanged from ljson.c so both produce the same bytes.
 */
#include <stdint.h>
#include <string.h>

#include "core.h"

/*
** Strings. The input is escaped in blocks: room for the worst case of a
** block (every byte becoming "\u00XX") is reserved first, so the inner
** loop writes without capacity checks, 8 bytes at a time while it can.
*/

#define ONES	((uint64_t)0x0101010101010101u)
#define HIGHS	((uint64_t)0x8080808080808080u)


/*
** Marks the bytes of 'x' (8 input bytes) that cannot be copied verbatim:
** controls, '"', '\\' and bytes >= 0x80. A subtraction sets a byte's
** high bit when that byte was below the subtrahend; a borrow can only
** reach the next byte after such a hit, so the lowest mark is exactly
** the first byte that needs care. Zero means all 8 are safe.
*/
static uint64_t unsafe8 (uint64_t x) {
  return ((x - ONES * 0x20)
        | ((x ^ (ONES * '"')) - ONES)
        | ((x ^ (ONES * '\\')) - ONES)
        | x) & HIGHS;
}

/*
** Reading ahead explicitly pays off: with stores and branches in the
** loop, the hardware prefetcher alone leaves it waiting on memory
** (a quarter less time for source code text, measured).
*/
#define AHEAD		2048
#if defined(__GNUC__)
#define prefetch(p)	__builtin_prefetch(p)
#else
#define prefetch(p)	((void)(p))
#endif

/* number of safe bytes before the first mark of 'unsafe8' */
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && \
    __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define safe_prefix(m)	((size_t)__builtin_ctzll(m) >> 3)
#else
#define safe_prefix(m)	((void)(m), (size_t)0)  /* byte loop does it */
#endif


static int safe_ascii (unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}


/*
** Length of the well-formed UTF-8 sequence at 'p' (whose first byte is
** >= 0x80), or 0 if it is ill-formed. Then '*skip' is the length of its
** maximal ill-formed prefix, which becomes one U+FFFD (the "maximal
** subpart" practice of the Unicode standard, as browsers do).
*/
static size_t utf8_len (const unsigned char *p, const unsigned char *end,
                        size_t *skip) {
  unsigned int c = p[0];
  unsigned int lo = 0x80, hi = 0xBF;  /* valid range of the second byte */
  size_t need, i;
  if (c >= 0xC2 && c <= 0xDF)
    need = 2;
  else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;  /* overlong */
    else if (c == 0xED) hi = 0x9F;  /* surrogates */
  }
  else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;  /* overlong */
    else if (c == 0xF4) hi = 0x8F;  /* above U+10FFFF */
  }
  else {  /* stray continuation byte, C0, C1, F5..FF */
    *skip = 1;
    return 0;
  }
  for (i = 1; i < need; i++) {
    if (p + i >= end || p[i] < lo || p[i] > hi) {
      *skip = i;
      return 0;
    }
    lo = 0x80; hi = 0xBF;
  }
  return need;
}


/* writes the escape of ASCII byte 'c' ('"', '\\' or a control) at 'o' */
static char *write_escape (char *o, unsigned char c) {
  /* letter after the backslash for each control; 'u' means \u00XX */
  static const char ctl[] = "uuuuuuuubtnufruuuuuuuuuuuuuuuuuu";
  static const char hex[] = "0123456789abcdef";
  char letter = (c < 0x20) ? ctl[c] : (char)c;  /* '"' and '\\' as is */
  *o++ = '\\';
  *o++ = letter;
  if (letter == 'u') {
    *o++ = '0';
    *o++ = '0';
    *o++ = hex[c >> 4];
    *o++ = hex[c & 0xF];
  }
  return o;
}


/*
** Writes the run of non-ASCII characters at '*pp' (stopping at 'limit'
** or at an ASCII byte) at 'o', each ill-formed part as U+FFFD. Text in
** most scripts is such runs, so they get their own loop.
*/
static char *write_utf8 (char *o, const unsigned char **pp,
                         const unsigned char *limit,
                         const unsigned char *end) {
  const unsigned char *p = *pp;
  while (p < limit && *p >= 0x80) {
    size_t skip;
    size_t n = utf8_len(p, end, &skip);
    if (n == 0) {  /* ill-formed: never let it through */
      *o++ = '\xEF'; *o++ = '\xBF'; *o++ = '\xBD';  /* U+FFFD */
      p += skip;
    }
    else {
      memcpy(o, p, n);
      o += n; p += n;
    }
  }
  *pp = p;
  return o;
}


/*
** Escapes the input from '*pp' up to 'limit' (a character may run past
** it, up to 'end') into 'o', which has room for the worst case.
** Returns the new output end.
*/
char *bw_json_escape (char *o, const unsigned char **pp,
                           const unsigned char *limit,
                           const unsigned char *end) {
  const unsigned char *p = *pp;
  while (p < limit) {
    if (limit - p >= 8) {
      uint64_t x, m;
      memcpy(&x, p, 8);
      if (end - p > AHEAD)
        prefetch(p + AHEAD);
      m = unsafe8(x);
      memcpy(o, &x, 8);  /* store all 8; bytes past the safe ones get
                            overwritten, and there is room for them */
      if (m == 0) {
        o += 8; p += 8;
        continue;
      }
      o += safe_prefix(m); p += safe_prefix(m);
    }
    if (safe_ascii(*p))
      *o++ = (char)*p++;
    else if (*p < 0x80)
      o = write_escape(o, *p++);
    else
      o = write_utf8(o, &p, limit, end);
  }
  *pp = p;
  return o;
}


