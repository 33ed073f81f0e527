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
#include <stdlib.h>
#include <string.h>

#include "grepint.h"

/* Lines of chunks after the first are numbered from here while searched,
 * so before-context can count back across the chunk's start; the real
 * numbers are put in when the chunks are joined. */
#define CHUNK_BASE ((size_t)1 << 40)
enum { MAX_CHUNKS = 64 };

typedef struct chunks {
  grep *g;
  const char *buf;
  size_t len;
  const char *path;
  size_t n, cut[MAX_CHUNKS + 1]; /* chunk k is [cut[k], cut[k + 1]) */
  scan sc[MAX_CHUNKS];
  int rc[MAX_CHUNKS];
  _Atomic size_t next;
  _Atomic int found; /* files mode: one match anywhere answers it */
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

static void *chunk_run(void *arg) {
  chunk_worker *cw = arg;
  chunks *c = cw->c;
  int files = c->g->o->mode == BW_GREP_FILES;
  for (size_t k; (k = atomic_fetch_add(&c->next, 1)) < c->n;) {
    if (files && atomic_load(&c->found)) continue; /* answered already */
    c->sc[k].w = &cw->w;
    c->rc[k] = bw_guard(scan_guarded, &c->sc[k]);
    if (c->sc[k].f) atomic_store(&c->found, 1);
  }
  return NULL;
}

/* Append a line to a joined result. */
static int gf_push(bw_gfile *f, const char *t, size_t n, size_t no, char kind) {
  if (!f->text || f->tlen + n > f->tcap) {
    size_t cap = f->tcap ? f->tcap * 2 : 4096;
    while (cap < f->tlen + n) cap *= 2;
    char *nt = realloc(f->text, cap);
    if (!nt) return BW_ENOMEM;
    f->text = nt;
    f->tcap = cap;
  }
  if (f->nlines == f->lcap) {
    size_t cap = f->lcap ? f->lcap * 2 : 16;
    bw_gline *l = realloc(f->lines, cap * sizeof *l);
    if (!l) return BW_ENOMEM;
    f->lines = l;
    f->lcap = cap;
  }
  memcpy(f->text + f->tlen, t, n);
  f->lines[f->nlines++] = (bw_gline){no, f->tlen, n, kind};
  f->tlen += n;
  return BW_OK;
}

/* Join the chunks' content results into what one scan of the file gives:
 * a chunk's after-context that reaches the next chunk's first match gives
 * way to it, the next chunk's before-context starts after what is shown,
 * and past max_results only the last kept match's after-context stays. */
static int join_content(chunks *c, bw_gfile *out) {
  const grep *g = c->g;
  size_t first = 1, total = 0, limit = c->sc[0].limit;
  for (size_t k = 0; k < c->n; k++) {
    scan *s = &c->sc[k];
    size_t base = k ? CHUNK_BASE : 1;
    bw_gfile *f = s->f;
    for (size_t i = 0; f && i < f->nlines; i++)
      f->lines[i].line = f->lines[i].line - base + first;
    first += s->line - base;
    if (!f || !f->nlines) continue;
    size_t fm = 0;
    while (fm < f->nlines && f->lines[fm].kind != 'm') fm++;
    size_t m = fm < f->nlines ? f->lines[fm].line : (size_t)-1;
    while (out->nlines && out->lines[out->nlines - 1].line >= m)
      out->tlen = out->lines[--out->nlines].off;
    size_t shown = out->nlines ? out->lines[out->nlines - 1].line : 0;
    for (size_t i = 0; i < f->nlines; i++) {
      const bw_gline *l = &f->lines[i];
      if (l->line <= shown) continue;
      int rc = gf_push(out, f->text + l->off, l->len, l->line, l->kind);
      if (rc) return rc;
      total += l->kind == 'm';
    }
  }
  if (total > limit) {
    size_t i = 0, seen = 0;
    for (; i < out->nlines; i++)
      if (out->lines[i].kind == 'm' && ++seen == limit) break;
    size_t last = out->lines[i].line, keep = i + 1;
    for (; keep < out->nlines && out->lines[keep].line <= last + g->o->after; keep++)
      out->lines[keep].kind = 'a';
    out->nlines = keep;
    out->tlen = out->lines[keep - 1].off + out->lines[keep - 1].len;
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
 * among them); each chunk's scan is guarded against a shrinking file. */
int bwg_search_chunks(grep *g, wstate *w, const char *buf, size_t len,
                         const char *path, size_t nchunks, bw_gfile **out) {
  chunks *c = calloc(1, sizeof *c);
  if (!c) return BW_ENOMEM;
  c->g = g;
  c->buf = buf;
  c->len = len;
  c->path = path;
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
    cw[0].w = *w; /* this thread's state, lent */
    chunk_run(&cw[0]);
    *w = cw[0].w; /* the buffer may have grown: give it back */
  }
  for (size_t i = 1; i <= started; i++) {
    pthread_join(cw[i].t, NULL);
    bwg_ws_free(&cw[i].w);
  }
  free(cw);
  for (size_t k = 0; !rc && k < c->n; k++)
    if (c->rc[k]) rc = c->rc[k];
  bw_gfile *f = NULL;
  if (!rc && g->o->mode == BW_GREP_CONTENT) {
    int any = 0;
    for (size_t k = 0; k < c->n; k++) any |= c->sc[k].f != NULL;
    if (any && (!(f = calloc(1, sizeof *f)) || !(f->item.path = strdup(path))))
      rc = BW_ENOMEM;
    if (any && !rc) rc = join_content(c, f);
    if (rc && f) {
      free(f->item.path);
      free(f->lines);
      free(f->text);
      free(f);
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
  free(c);
  *out = f;
  return rc;
}

