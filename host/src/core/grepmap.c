/*
 * grepmap.c - grep over one large mapped file split into chunks at line
 * starts, searched by several threads (each with its own PCRE2 state) and
 * joined so the result is the one a single scan gives: line numbers
 * stitched (a chunk counts its own lines), a chunk's after-context that
 * reaches the next chunk's first match gives way to it, before-context
 * may reach back across a chunk's start, and past max_results only the
 * last kept match's after-context stays. Every access to the mapping is
 * under the SIGBUS guard (a file shrunk under us is EIO, not a crash).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grepint.h"

/* Lines of chunks after the first are numbered from here while searched,
 * so before-context can count back across the chunk's start; the real
 * numbers are put in when the chunks are joined. */
#define CHUNK_BASE ((size_t)1 << 40)
enum { MAX_CHUNKS = 64 };
_Static_assert(MAX_CHUNKS < 255, "a joined line names its chunk in bw_gline.seg");

typedef struct chunks {
  grep *g;
  const char *buf;
  size_t len;
  int fd;            /* the file mapped: chunks are read from it */
  const char *path;
  size_t n, cut[MAX_CHUNKS + 1]; /* chunk k is [cut[k], cut[k + 1]) */
  scan sc[MAX_CHUNKS];
  int rc[MAX_CHUNKS];
  _Atomic size_t next;
  _Atomic int found; /* files mode: one match anywhere answers it */
  int stash;         /* chunks keep their lines in their worker's stashes */
  int read;          /* chunks are read (read_chunk), not scanned on the mapping */
} chunks;

typedef struct chunk_worker {
  chunks *c;
  wstate w;
  pthread_t t;
} chunk_worker;

static int scan_guarded(void *arg) {
  scan *s = arg;
  int rc = bwg_search_buf(s);
  /* content mode: count the chunk's lines to number the next ones */
  if (!rc && s->g->o->mode == BW_GREP_CONTENT && s->end > s->counted)
    bwg_line_no(s, s->end);
  return rc;
}

/* Chunk k read into the worker's buffer with MARGIN bytes either side for
 * context and line ends, trimmed to whole lines, and searched there: on
 * a machine where a page walk is dear (a VM), scanning the page cache
 * through a mapping of 4 KiB pages ran at a third of the speed of reading
 * it into memory of our own (docs/benchmarks.md, grep on four shapes of
 * corpus). 0 when searched; -1 when the chunk must be searched on the
 * mapping instead: a short read (the file shrank: the mapping's guard says
 * EIO), no memory, or context that reaches past the bytes read (an
 * overrun; no line can: the bytes end after a newline). */
enum { MARGIN = 64 << 10 };
static int read_chunk(chunk_worker *cw, size_t k) {
  chunks *c = cw->c;
  wstate *w = &cw->w;
  size_t start = c->cut[k], end = c->cut[k + 1];
  size_t margin = c->g->o->chunk_margin ? c->g->o->chunk_margin : MARGIN;
  size_t lo = start > margin ? start - margin : 0;
  size_t hi = c->len - end > margin ? end + margin : c->len;
  if (hi - lo > w->cap) { /* room for the next chunks too: they differ by a line or so */
    size_t cap = (hi - lo + (hi - lo) / 8 + 4095) & ~(size_t)4095;
    free(w->buf); /* nothing in it to keep: a realloc would copy it */
    w->cap = 0;
    if (!(w->buf = malloc(cap))) return -1;
    bw_huge_advise(w->buf, cap);
    w->cap = cap;
  }
  for (size_t got = 0; got < hi - lo;) {
    ssize_t n = pread(c->fd, w->buf + got, hi - lo - got, (off_t)(lo + got));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    got += (size_t)n;
  }
  /* whole lines: the buffer starts after a newline, ends after one */
  const char *b = w->buf, *q;
  size_t from = 0, to = hi - lo;
  if (lo > 0) from = (q = memchr(b, '\n', start - lo)) ? (size_t)(q - b) + 1 : start - lo;
  if (hi < c->len) to = (q = memrchr(b + (end - lo), '\n', hi - end)) ? (size_t)(q - b) + 1 : end - lo;
  scan t;
  bwg_scan_init(&t, c->g, w, b + from, to - from, c->path, start - lo - from, end - lo - from,
                c->sc[k].line);
  t.stash = c->sc[k].stash;
  t.short_head = lo + from > 0;
  t.short_tail = lo + to < c->len;
  int rc = scan_guarded(&t); /* unguarded: the memory is ours */
  if (rc == BW_OK && t.overrun) rc = -1;
  if (rc == -1) {
    if (t.f) bwg_free_gfile(&t.f->item); /* its lines stay in the stash till the end */
    return -1;
  }
  c->rc[k] = rc;
  c->sc[k] = t;
  return 0;
}

static void *chunk_run(void *arg) {
  chunk_worker *cw = arg;
  chunks *c = cw->c;
  int files = c->g->o->mode == BW_GREP_FILES;
  for (size_t k; (k = atomic_fetch_add(&c->next, 1)) < c->n;) {
    if (files && atomic_load(&c->found)) continue; /* answered already */
    c->sc[k].w = &cw->w;
    if (c->stash) c->sc[k].stash = cw->w.stash;
    if (!c->read || read_chunk(cw, k)) c->rc[k] = bw_guard(scan_guarded, &c->sc[k]);
    if (c->sc[k].f) atomic_store(&c->found, 1);
  }
  return NULL;
}

/* Join the chunks' content results into what one scan of the file gives:
 * a chunk's after-context that reaches the next chunk's first match gives
 * way to it, the next chunk's before-context starts after what is shown,
 * and past max_results only the last kept match's after-context stays.
 * The text is not copied: a joined line names its chunk's text (seg), and
 * the records go to a block of w's stash. */
static int join_content(chunks *c, wstate *w, bw_gfile *out) {
  const grep *g = c->g;
  size_t first = 1, total = 0, limit = c->sc[0].limit, nlines = 0;
  for (size_t k = 0; k < c->n; k++) /* room for all at once: the join only drops */
    if (c->sc[k].f) nlines += c->sc[k].f->nlines;
  out->segs = malloc(c->n * sizeof *out->segs);
  out->lines = bw_stash_grow(&w->stash[0], NULL, 0, (nlines ? nlines : 1) * sizeof *out->lines);
  if (!out->segs || !out->lines) return BW_ENOMEM;
  out->stash = w->stash;
  out->lcap = nlines ? nlines : 1;
  for (size_t k = 0; k < c->n; k++) {
    scan *s = &c->sc[k];
    size_t base = k ? CHUNK_BASE : 1;
    bw_gfile *f = s->f;
    out->segs[k] = f ? f->text : NULL;
    for (size_t i = 0; f && i < f->nlines; i++)
      f->lines[i].line = f->lines[i].line - base + first;
    first += s->line - base;
    if (!f || !f->nlines) continue;
    size_t fm = 0;
    while (fm < f->nlines && f->lines[fm].kind != 'm') fm++;
    size_t m = fm < f->nlines ? f->lines[fm].line : (size_t)-1;
    while (out->nlines && out->lines[out->nlines - 1].line >= m)
      out->tlen -= out->lines[--out->nlines].len;
    size_t shown = out->nlines ? out->lines[out->nlines - 1].line : 0;
    for (size_t i = 0; i < f->nlines; i++) {
      bw_gline l = f->lines[i];
      if (l.line <= shown) continue;
      l.seg = (unsigned char)(k + 1);
      out->lines[out->nlines++] = l;
      out->tlen += l.len;
      total += l.kind == 'm';
    }
  }
  if (total > limit) {
    size_t i = 0, seen = 0;
    for (; i < out->nlines; i++)
      if (out->lines[i].kind == 'm' && ++seen == limit) break;
    size_t last = out->lines[i].line, keep = i + 1;
    for (; keep < out->nlines && out->lines[keep].line <= last + g->o->after; keep++)
      out->lines[keep].kind = 'a';
    while (out->nlines > keep) out->tlen -= out->lines[--out->nlines].len;
    atomic_fetch_add(&((grep *)g)->trimmed, 1);
    total = limit;
  }
  out->item.units = out->count = total;
  return BW_OK;
}

/* The cut points: about every chunk bytes, moved to the next line start. */
static int cut_chunks(void *arg) {
  chunks *c = arg;
  size_t want = c->n;
  c->cut[0] = 0;
  c->n = 1;
  for (size_t k = 1; k < want; k++) {
    size_t p = (size_t)((unsigned __int128)c->len * k / want);
    if (p < c->cut[c->n - 1]) p = c->cut[c->n - 1];
    const char *q = memchr(c->buf + p, '\n', c->len - p);
    size_t at = q ? (size_t)(q - c->buf) + 1 : c->len;
    if (at > c->cut[c->n - 1] && at < c->len) c->cut[c->n++] = at;
  }
  c->cut[c->n] = c->len;
  return BW_OK;
}

/* Search a large mapped file in chunks on up to g->nws threads (this one
 * among them); each chunk read (read_chunk), or scanned on the mapping
 * under the guard against a shrinking file. In content mode the chunks
 * keep their lines in stashes of their own (grown in place, not by
 * realloc), which then join w's: the joined file names their text. */
int bwg_search_chunks(grep *g, wstate *w, const char *buf, size_t len, int fd,
                      const char *path, size_t nchunks, bw_gfile **out) {
  chunks *c = calloc(1, sizeof *c);
  if (!c) return BW_ENOMEM;
  c->g = g;
  c->buf = buf;
  c->len = len;
  c->path = path;
  c->fd = fd;
  c->stash = g->o->mode == BW_GREP_CONTENT;
  /* only where every pattern match is tried on one line alone (the
     literal prefilter's path): a regex over a window of the buffer could
     see its start as the file's (\A, a lookbehind). Not for files mode:
     its first match ends it, and reading whole chunks for one hit cost
     more than the mapping's faults (rg -l: 14 -> 22 ms on 200 MB) */
  c->read = g->m.lits.n > 0 && !g->o->multiline && g->o->mode != BW_GREP_FILES;
  c->n = nchunks > MAX_CHUNKS ? MAX_CHUNKS : nchunks;
  int rc = bw_guard(cut_chunks, c);
  for (size_t k = 0; !rc && k < c->n; k++)
    bwg_scan_init(&c->sc[k], g, NULL, buf, len, path, c->cut[k], c->cut[k + 1],
              k ? CHUNK_BASE : 1);
  size_t nt = (size_t)g->nws < c->n ? (size_t)g->nws : c->n, started = 0;
  chunk_worker *cw = rc ? NULL : calloc(nt, sizeof *cw);
  if (!rc && !cw) rc = BW_ENOMEM;
  for (size_t i = 1; !rc && i < nt; i++) { /* helpers; fewer if need be */
    cw[i].c = c;
    if (bwg_ws_init(&cw[i].w, g)) {
      bwg_ws_free(&cw[i].w);
      break;
    }
    if (pthread_create(&cw[i].t, NULL, chunk_run, &cw[i])) {
      bwg_ws_free(&cw[i].w);
      break;
    }
    started = i;
  }
  if (!rc) {
    cw[0].c = c;
    cw[0].w = *w; /* this thread's state, lent, with stashes of its own */
    memset(cw[0].w.stash, 0, sizeof cw[0].w.stash);
    chunk_run(&cw[0]);
    bw_stash own[2];
    memcpy(own, cw[0].w.stash, sizeof own);
    memcpy(cw[0].w.stash, w->stash, sizeof own);
    *w = cw[0].w; /* the buffer may have grown: give it back */
    memcpy(cw[0].w.stash, own, sizeof own);
  }
  for (size_t i = 1; i <= started; i++) pthread_join(cw[i].t, NULL);
  for (size_t k = 0; !rc && k < c->n; k++)
    if (c->rc[k]) rc = c->rc[k];
  bw_gfile *f = NULL;
  if (!rc && g->o->mode == BW_GREP_CONTENT) {
    int any = 0;
    for (size_t k = 0; k < c->n; k++) any |= c->sc[k].f != NULL;
    if (any && (!(f = calloc(1, sizeof *f)) || !(f->item.path = strdup(path))))
      rc = BW_ENOMEM;
    if (any && !rc) rc = join_content(c, w, f);
    if (rc && f) {
      bwg_free_gfile(&f->item);
      f = NULL;
    }
  } else if (!rc) {
    size_t count = 0;
    for (size_t k = 0; k < c->n; k++)
      if (c->sc[k].f) {
        count += c->sc[k].f->count;
        if (!f) f = c->sc[k].f, c->sc[k].f = NULL;
      }
    if (f) f->count = g->o->mode == BW_GREP_FILES ? 1 : count;
  }
  for (size_t k = 0; k < c->n; k++)
    if (c->sc[k].f) bwg_free_gfile(&c->sc[k].f->item);
  /* the chunks' stashes hold the joined text: they go with w's, to the result */
  for (size_t i = 0; cw && i <= started; i++) {
    bw_stash_take(&w->stash[0], &cw[i].w.stash[0]);
    bw_stash_take(&w->stash[1], &cw[i].w.stash[1]);
    if (i) bwg_ws_free(&cw[i].w);
  }
  free(cw);
  free(c);
  *out = f;
  return rc;
}
