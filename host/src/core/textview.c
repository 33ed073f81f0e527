/*
 * textview.c - the text helpers the edit engine's files share (edit.c,
 * match.c, diff.c): a growable buffer, a view's lines, LF text written
 * with a file's line ending, and trimmed or leading blanks of a line. Kept
 * apart so those three depend on it and not on each other's internals.
 */
#include <stdlib.h>
#include <string.h>

#include "edit.h"

/* ---- growable buffer ---- */

static int sb_room(sbuf *b, size_t more) {
  if (b->oom) return 0;
  if (b->len + more <= b->cap) return 1;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + more) cap *= 2;
  char *p = realloc(b->p, cap);
  if (!p) {
    b->oom = 1;
    return 0;
  }
  b->p = p;
  b->cap = cap;
  return 1;
}

void bw_sb_put(sbuf *b, const void *s, size_t n) {
  if (n && sb_room(b, n)) {
    memcpy(b->p + b->len, s, n);
    b->len += n;
  }
}

void bw_sb_putc(sbuf *b, char c) { bw_sb_put(b, &c, 1); }

/* ---- lines of a view ---- */

/* End of line i's text: before its "\n" or "\r\n". */
size_t bw_line_end(const view *v, size_t i) {
  size_t e = v->ls[i + 1];
  if (e > v->ls[i] && v->s[e - 1] == '\n') e--;
  if (e > v->ls[i] && v->s[e - 1] == '\r') e--;
  return e;
}

/* The line holding pos (nl for the end of a file ending in a newline). */
size_t bw_line_of(const view *v, size_t pos) {
  size_t lo = 0, hi = v->nl;
  while (lo < hi) {
    size_t mid = lo + (hi - lo + 1) / 2;
    if (v->ls[mid] <= pos) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* True when the file's last line has no newline. */
int bw_file_ends_open(const view *v) {
  return v->n > 0 && v->s[v->n - 1] != '\n';
}

/* LF text with every "\n" written as eol. */
char *bw_eol_copy(const char *s, size_t n, const char *eol, size_t *out) {
  size_t el = strlen(eol), extra = 0;
  for (size_t i = 0; i < n; i++) extra += s[i] == '\n' ? el - 1 : 0;
  char *d = malloc(n + extra + 1);
  if (!d) return NULL;
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '\n') {
      memcpy(d + o, eol, el);
      o += el;
    } else {
      d[o++] = s[i];
    }
  }
  *out = o;
  return d;
}

/* ---- blanks ---- */

static int is_hws(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v';
}

slice bw_trim(const char *s, size_t n, int left) {
  while (n > 0 && is_hws(s[n - 1])) n--;
  while (left && n > 0 && is_hws(*s)) s++, n--;
  return (slice){s, n};
}

slice bw_lead(const char *s, size_t n) {
  size_t i = 0;
  while (i < n && (s[i] == ' ' || s[i] == '\t')) i++;
  return (slice){s, i};
}
