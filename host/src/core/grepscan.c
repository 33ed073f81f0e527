/*
 * grepscan.c - grep's scan of one file's bytes (grep.c hands it each file,
 * grepmap.c each chunk of a large one): a worker's PCRE2 state (match
 * data, JIT stack, the limits and the callout that sees a stop), the
 * literal prefilter's hits confirmed line by line, windows of whole lines
 * without literals, multiline matches; the lines kept with their context
 * and numbers, each cut to max_line. It calls nothing of grep.c or
 * grepmap.c: both call it (grepint.h).
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grepint.h"

enum {
  WINDOW = 1 << 20,   /* bytes per PCRE2 call without a prefilter */
  MATCH_LIMIT = 10000000,
  DEPTH_LIMIT = 100000,
  HEAP_LIMIT_KIB = 64 * 1024,
  JIT_STACK_MAX = 1 << 20,
};

/* ---- per worker ---- */

/* PCRE2's callout at each start position (regex_source): a negative
 * return abandons the match. */
static int on_attempt(pcre2_callout_block *b, void *arg) {
  (void)b;
  return halted(arg) ? PCRE2_ERROR_CALLOUT : 0;
}

int bwg_ws_init(wstate *w, grep *g) {
  const matcher *m = &g->m;
  if (!m->re) return BW_OK;
  w->md = pcre2_match_data_create(1, NULL);
  w->mc = pcre2_match_context_create(NULL);
  w->js = pcre2_jit_stack_create(32 * 1024, JIT_STACK_MAX, NULL);
  if (!w->md || !w->mc || !w->js) return BW_ENOMEM;
  pcre2_jit_stack_assign(w->mc, NULL, w->js);
  pcre2_set_match_limit(w->mc, MATCH_LIMIT);
  pcre2_set_depth_limit(w->mc, DEPTH_LIMIT);
  pcre2_set_heap_limit(w->mc, HEAP_LIMIT_KIB);
  pcre2_set_callout(w->mc, on_attempt, g);
  return BW_OK;
}

void bwg_ws_free(wstate *w) {
  pcre2_match_data_free(w->md);
  pcre2_match_context_free(w->mc);
  pcre2_jit_stack_free(w->js);
  free(w->buf);
  free(w->sbuf);
  bw_stash_free(&w->stash[0]);
  bw_stash_free(&w->stash[1]);
}

/* ---- one file ---- */



size_t bwg_line_no(scan *s, size_t off) {
  s->line += bw_count_newlines(s->buf + s->counted, off - s->counted);
  s->counted = off;
  return s->line;
}

/* (A chunk read short of the file's end ends after a newline: no line
 * runs past its bytes; grepmap.c.) */
static size_t line_end(const scan *s, size_t off) {
  const char *nl = memchr(s->buf + off, '\n', s->len - off);
  return nl ? (size_t)(nl - s->buf) : s->len;
}

static int file_new(scan *s) {
  bw_gfile *f = calloc(1, sizeof *f);
  if (!f || !(f->item.path = strdup(s->path))) {
    free(f);
    return BW_ENOMEM;
  }
  f->stash = s->stash;
  s->f = f;
  return BW_OK;
}

/* UTF-8-safe prefix of at most max bytes. */
static size_t utf8_cut(const char *p, size_t n, size_t max) {
  if (n <= max) return n;
  size_t k = max;
  while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80) k--;
  return k;
}

static int add_line(scan *s, size_t no, size_t ls, size_t le, char kind) {
  bw_gfile *f = s->f;
  size_t n = le - ls;
  const char *p = s->buf + ls;
  if (kind != 'M' && n && p[n - 1] == '\r') n--;
  size_t max = s->g->o->max_line * (kind == 'M' ? 8 : 1);
  size_t keep = utf8_cut(p, n, max);
  char marker[96] = "";
  if (keep < n)
    snprintf(marker, sizeof marker,
             " [... line truncated: %zu of %zu bytes shown]", keep, n);
  size_t ml = strlen(marker), need = keep + ml;
  if (f->stash) { /* the newest blocks of their stashes: grown in place */
    char *t = bw_stash_grow(&f->stash[1], f->text, f->tlen, f->tlen + need);
    bw_gline *l = t ? bw_stash_grow(&f->stash[0], f->lines, f->nlines * sizeof *l,
                                    (f->nlines + 1) * sizeof *l)
                    : NULL;
    if (!l) return BW_ENOMEM;
    f->text = t;
    f->lines = l;
    f->tcap = f->tlen + need;
    f->lcap = f->nlines + 1;
  }
  if (!f->text || f->tlen + need > f->tcap) { /* empty lines too: never NULL */
    size_t c = f->tcap ? f->tcap * 2 : 4096;
    while (c < f->tlen + need) c *= 2;
    char *t = realloc(f->text, c);
    if (!t) return BW_ENOMEM;
    f->text = t;
    f->tcap = c;
  }
  if (f->nlines == f->lcap) {
    size_t c = f->lcap ? f->lcap * 2 : 16;
    bw_gline *l = realloc(f->lines, c * sizeof *l);
    if (!l) return BW_ENOMEM;
    f->lines = l;
    f->lcap = c;
  }
  memcpy(f->text + f->tlen, p, keep);
  memcpy(f->text + f->tlen + keep, marker, ml);
  f->lines[f->nlines++] = (bw_gline){no, f->tlen, need, kind == 'M' ? 'm' : kind, 0};
  f->tlen += need;
  return BW_OK;
}

/* After-context of the last match, up to (not including) line stop. */
static int flush_after(scan *s, size_t stop) {
  size_t a = s->g->o->after;
  if (!a || !s->last_match) return BW_OK;
  size_t upto = s->last_match + a;
  if (stop && stop - 1 < upto) upto = stop - 1;
  while (s->emitted < upto && s->emitted_end < s->len) {
    size_t ls = s->emitted_end, le = line_end(s, ls);
    int rc = add_line(s, s->emitted + 1, ls, le, 'a');
    if (rc) return rc;
    s->emitted++;
    s->emitted_end = le + 1;
  }
  if (s->emitted < upto) s->overrun |= s->short_tail; /* more lines past the bytes read */
  return BW_OK;
}

static int add_before(scan *s, size_t no, size_t ls) {
  size_t b = s->g->o->before;
  if (!b) return BW_OK;
  size_t first = no > b ? no - b : 1;
  if (first <= s->emitted) first = s->emitted + 1;
  if (first >= no) return BW_OK;
  size_t starts[64], k = no - first, *st = k <= 64 ? starts : malloc(k * sizeof *st);
  if (!st) return BW_ENOMEM;
  size_t p = ls, got = 0; /* walk back k lines from the match line's start */
  for (size_t i = k; i-- > 0 && p > 0; got++) { /* p == 0: the file's start */
    const char *q = p >= 2 ? memrchr(s->buf, '\n', p - 1) : NULL;
    p = q ? (size_t)(q - s->buf) + 1 : 0;
    st[i] = p;
  }
  /* a chunk's numbers are relative: a match near the file's start has
   * fewer lines before it than no - first says */
  if (got < k) s->overrun |= s->short_head; /* lines before the bytes read */
  int rc = BW_OK;
  for (size_t i = k - got; i < k && !rc; i++)
    rc = add_line(s, first + i, st[i], line_end(s, st[i]), 'b');
  if (st != starts) free(st);
  return rc;
}

/* A matching line (or lines, multiline) [ls, le). */
static int on_match(scan *s, size_t ls, size_t le) {
  const bw_grep_opts *o = s->g->o;
  size_t no = 0;
  if (s->from_line && (no = bwg_line_no(s, ls)) < s->from_line)
    return BW_OK; /* before the cursor: shown already */
  if (!s->f && file_new(s)) return BW_ENOMEM;
  if (o->mode == BW_GREP_FILES) {
    s->f->count++;
    s->done = 1;
    return BW_OK;
  }
  if (o->mode == BW_GREP_COUNT) {
    s->f->count++;
    return BW_OK;
  }
  if (s->f->item.units >= s->limit) { /* enough from this file */
    atomic_fetch_add(&s->g->trimmed, 1);
    s->done = 1;
    return BW_OK;
  }
  if (!no) no = bwg_line_no(s, ls);
  size_t last = no + bw_count_newlines(s->buf + ls, le - ls); /* multiline spans */
  int rc = flush_after(s, no);
  if (!rc) rc = add_before(s, no, ls);
  if (!rc) rc = add_line(s, no, ls, le, o->multiline ? 'M' : 'm');
  s->f->item.units++;
  s->f->count++;
  s->last_match = last;
  s->emitted = last;
  s->emitted_end = le + 1;
  return rc;
}

/* PCRE2 over subject [0, n) from start: 1 and [*ms, *me) on a match. */
static int re_find(scan *s, const char *subj, size_t n, size_t start,
                   size_t *ms, size_t *me) {
  int rc = pcre2_match(s->g->m.re, (PCRE2_SPTR)subj, n, start, 0, s->w->md,
                       s->w->mc);
  if (rc == PCRE2_ERROR_NOMATCH || rc == PCRE2_ERROR_PARTIAL) return 0;
  if (rc == PCRE2_ERROR_CALLOUT) { /* halted: this file's scan ends here */
    s->done = 1;
    return 0;
  }
  if (rc < 0) {
    if (rc == PCRE2_ERROR_MATCHLIMIT || rc == PCRE2_ERROR_DEPTHLIMIT ||
        rc == PCRE2_ERROR_HEAPLIMIT || rc == PCRE2_ERROR_JIT_STACKLIMIT) {
      int zero = 0;
      atomic_compare_exchange_strong(&s->g->err, &zero, -1);
    }
    return 0; /* other failures: no match in this file */
  }
  PCRE2_SIZE *ov = pcre2_get_ovector_pointer(s->w->md);
  *ms = ov[0];
  *me = ov[1];
  return 1;
}

/* Next literal hit at or after from (cached per literal, per worker). */
static size_t next_hit(scan *s, size_t from) {
  return bw_lits_next(s->w->lits, s->g->m.lits.n,
                      (const unsigned char *)s->buf, s->hay, from);
}

/* Line by line around literal hits. */
static int search_prefiltered(scan *s) {
  size_t pos = s->start, poll = pos + WINDOW;
  while (pos < s->end && !s->done) {
    if (pos > poll) { /* a big file with many hits: see a cancel */
      if (halted(s->g)) return BW_OK;
      poll = pos + WINDOW;
    }
    size_t h = next_hit(s, pos);
    if (h == (size_t)-1 || h >= s->end) break;
    const char *q = h > pos ? memrchr(s->buf + pos, '\n', h - pos) : NULL;
    size_t ls = q ? (size_t)(q - s->buf) + 1 : pos;
    size_t le = line_end(s, h);
    size_t ms, me;
    if (s->g->m.lits.pure || re_find(s, s->buf + ls, le - ls, 0, &ms, &me)) {
      int rc = on_match(s, ls, le);
      if (rc) return rc;
    }
    if (atomic_load(&s->g->err)) return BW_OK;
    pos = le + 1;
  }
  return BW_OK;
}

/* PCRE2 over windows of whole lines; a hit across a newline is checked
 * again on its line alone. */
static int search_windows(scan *s) {
  size_t pos = s->start;
  while (pos < s->end && !s->done && !halted(s->g)) {
    size_t wend = pos + WINDOW < s->end ? line_end(s, pos + WINDOW) : s->end;
    if (wend < s->end) wend++; /* keep the newline */
    size_t ms, me;
    if (!re_find(s, s->buf, wend, pos, &ms, &me)) {
      if (halted(s->g)) return BW_OK;
      pos = wend;
      continue;
    }
    const char *q = ms > pos ? memrchr(s->buf + pos, '\n', ms - pos) : NULL;
    size_t ls = q ? (size_t)(q - s->buf) + 1 : pos;
    size_t le = line_end(s, ms);
    if (me <= le || re_find(s, s->buf + ls, le - ls, 0, &ms, &me)) {
      int rc = on_match(s, ls, le);
      if (rc) return rc;
    }
    pos = le + 1;
  }
  return BW_OK;
}

/* Matches may span lines: each reports the lines it covers. */
static int search_multiline(scan *s) {
  if (s->g->m.lits.n && next_hit(s, 0) == (size_t)-1) return BW_OK;
  size_t pos = 0;
  while (pos < s->len && !s->done && !halted(s->g)) {
    size_t ms, me;
    if (!re_find(s, s->buf, s->len, pos, &ms, &me)) return BW_OK;
    const char *q = ms > 0 ? memrchr(s->buf, '\n', ms) : NULL;
    size_t ls = q ? (size_t)(q - s->buf) + 1 : 0;
    size_t last = me > ms && s->buf[me - 1] == '\n' ? me - 1 : me;
    if (last < ms) last = ms;
    size_t le = line_end(s, last);
    int rc = on_match(s, ls < pos ? pos : ls, le);
    if (rc) return rc;
    pos = le + 1;
  }
  return BW_OK;
}

/* Search s->buf[start, end); s->line is the number of the line at start
 * (a chunk's is relative, see bwg_search_chunks). */
int bwg_search_buf(scan *s) {
  bw_lits_reset(s->w->lits, &s->g->m.lits);
  s->counted = s->start;
  int rc;
  if (s->g->o->multiline) rc = search_multiline(s);
  else if (s->g->m.lits.n) rc = search_prefiltered(s);
  else rc = search_windows(s);
  if (!rc && s->f && s->g->o->mode == BW_GREP_CONTENT) rc = flush_after(s, 0);
  return rc;
}

/* ---- a scan set up, a file's result freed ---- */

void bwg_scan_init(scan *s, grep *g, wstate *w, const char *buf,
                      size_t len, const char *path, size_t start, size_t end,
                      size_t line) {
  memset(s, 0, sizeof *s);
  s->g = g;
  s->w = w;
  s->buf = buf;
  s->len = len;
  s->path = path;
  s->start = start;
  s->end = end;
  s->hay = len - end > BW_MAX_LIT_LEN ? end + BW_MAX_LIT_LEN : len;
  s->line = line;
  s->limit = g->o->max_results ? g->o->max_results : (size_t)-1;
  if (g->o->from_path && g->o->mode == BW_GREP_CONTENT && !strcmp(path, g->o->from_path))
    s->from_line = g->o->from_line;
}

void bwg_free_gfile(bw_item *it) {
  bw_gfile *f = (bw_gfile *)it;
  free(f->item.path);
  if (!f->stash) { /* a stash's blocks go with the result */
    free(f->lines);
    free(f->text);
  }
  free(f->segs);
  free(f);
}
