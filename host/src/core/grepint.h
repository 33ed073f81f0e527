/*
 * grepint.h - what grep.c, grepscan.c and grepmap.c share: the compiled
 * search, a worker's state, the call's state and its stop, and one file's
 * scan. Internal to the search core; not installed.
 */
#ifndef BURROW_GREPINT_H
#define BURROW_GREPINT_H

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>

#include "search.h"

typedef struct matcher {
  pcre2_code *re; /* NULL: plain literal search */
  bw_lits lits;   /* the prefilter; pure: the whole search */
} matcher;

typedef struct wstate {
  pcre2_match_data *md;
  pcre2_match_context *mc;
  pcre2_jit_stack *js;
  char *buf;
  size_t cap;
  char *sbuf; /* a large file's blocks (stream_file): made once, reused */
  size_t scap;
  bw_lit lits[BW_MAX_LITS]; /* the scanner's cached hits are per worker */
  bw_stash stash[2];        /* kept lines and text (stash.c): one file grows at a time */
} wstate;

/* Why a search ended early (grep.stop). */
enum { STOP_NONE, STOP_CANCEL, STOP_TIME, STOP_BYTES };

/* The timer thread of max_ms. */
typedef struct watchdog {
  pthread_t t;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  struct timespec until; /* CLOCK_MONOTONIC */
  int running, done;
} watchdog;

typedef struct grep {
  const bw_root *r;
  const bw_grep_opts *o;
  matcher m;
  wstate *ws;
  int nws;
  bw_topn top;
  bw_glob **inc, **exc;
  pthread_mutex_t mu; /* the skipped lists */
  char **bin, **big;
  size_t nbin, nbig, cbin, cbig, tbin, tbig;
  _Atomic size_t searched, unreadable, trimmed, chunked, streamed;
  _Atomic size_t found_files, found_matches; /* files, count: all, listed or not */
  _Atomic size_t bytes;    /* read from searched files */
  _Atomic size_t reserved; /* counted against max_bytes before reading */
  _Atomic int err;
  _Atomic int stop;        /* STOP_*: set once */
  bw_walk_stats *stats;    /* the walk's: its progress callback may cancel */
  watchdog dog;
} grep;

/* A stop, set once (the first reason wins): the scan (grepscan.c) and
 * the walk's visitor (grep.c) both stop on it. */
static inline void halt(grep *g, int why) {
  int none = STOP_NONE;
  atomic_compare_exchange_strong(&g->stop, &none, why);
}

/* Stop now? The cancel flag is raised from outside (the MCP reader), or
 * by the walk when its progress callback asks; the budget and failures
 * from inside. */
static inline int halted(grep *g) {
  if (atomic_load_explicit(&g->stop, memory_order_relaxed)) return 1;
  const _Atomic int *c = g->o->walk.cancel;
  if ((c && atomic_load_explicit(c, memory_order_relaxed)) ||
      atomic_load_explicit(&g->stats->cancelled, memory_order_relaxed)) {
    halt(g, STOP_CANCEL);
    return 1;
  }
  return atomic_load_explicit(&g->err, memory_order_relaxed) != 0;
}

typedef struct scan {
  grep *g;
  wstate *w;
  const char *buf;
  size_t len;        /* the whole file: context may reach past [start, end) */
  size_t start, end; /* matches are looked for on lines starting here */
  size_t hay;        /* the literal scan's end: a hit must start before end */
  bw_gfile *f;       /* created at the first hit */
  bw_stash *stash;   /* where f keeps its lines: NULL, malloc */
  const char *path;
  size_t limit;      /* matches worth keeping from this file */
  size_t from_line;  /* a cursor's file: matches before this line are not kept */
  size_t line;       /* line number at counted */
  size_t counted;    /* offset where line counting stands */
  size_t last_match; /* line number of the last match, 0 if none */
  size_t emitted;    /* last line number emitted (match or context) */
  size_t emitted_end; /* offset just past it */
  int done;
  /* a chunk read into memory of our own (grepmap.c) may not reach the
   * file's start or end; context past them is an overrun */
  unsigned char short_head, short_tail, overrun;
} scan;

/* grepre.c: the pattern compiled into m (INVALID_ARGUMENT says why not) */
int bwg_matcher_init(matcher *m, const bw_grep_opts *o);

/* grepscan.c: one file's (or chunk's) scan, a worker's PCRE2 state */
void bwg_scan_init(scan *s, grep *g, wstate *w, const char *buf, size_t len,
               const char *path, size_t start, size_t end, size_t line);
/* Search s->buf[start, end); s->line is the number of the line at start. */
int bwg_search_buf(scan *s);
/* The number of the line at off (counting on from the last call). */
size_t bwg_line_no(scan *s, size_t off);
int bwg_ws_init(wstate *w, grep *g);
void bwg_ws_free(wstate *w);
void bwg_free_gfile(bw_item *it);

/* grepmap.c: search a large file mapped from fd in about nchunks chunks
 * on up to g->nws threads (this one among them), joined into what one
 * scan gives; *out is the file's result or NULL. Its lines stay in the
 * chunks' stashes, which join w's. BW_EIO if the file shrank under us. */
int bwg_search_chunks(grep *g, wstate *w, const char *buf, size_t len, int fd,
                      const char *path, size_t nchunks, bw_gfile **out);

#endif
