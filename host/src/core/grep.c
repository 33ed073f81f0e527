/*
 * grep.c - content search: PCRE2 (JIT when the host allows it) behind a
 * literal prefilter, over files the walker hands each worker. This file
 * is the call and the walk's visitor (a file read or mapped, judged text,
 * listed when skipped); the scan of a file's bytes is grepscan.c's.
 *
 * The pattern is compiled once per call; each worker has its own match
 * data, match context and JIT stack. A file is read with read() into the
 * worker's reused buffer (per-file mmap costs more than it saves on a
 * tree walk) unless it is large (BW_GREP_MAP_MIN): then it is mapped, and
 * from two chunks up searched in chunks by several threads (grepmap.c).
 * It is skipped and listed if it is binary (NUL in the first 8 KiB) or
 * over max_file_size. Literals every match must contain
 * are pulled out of the regex and found by a SIMD scan (prefilter.c); PCRE2
 * only confirms the lines around hits. Without literals PCRE2 runs over
 * whole windows of lines, not line by line. Line numbers are counted
 * (vectorised) only between hits. Results go to a sorted capped set, so
 * the answer is the first max_results in path order however threads run.
 *
 * A search can be stopped at any time: by the client's cancel, or by its
 * budget (max_ms of wall time, watched by a timer thread; max_bytes read).
 * Between files and windows the workers look at one flag; inside a PCRE2
 * call a callout at the head of the pattern looks at it at every start
 * position, and the match limit bounds the work of each position, so a
 * backtracking pattern on a big file stops within one position's work.
 * The result says why it stopped and what was covered.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <errno.h>
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "charset.h"
#include "clock.h"
#include "grepint.h"


enum {
  BINARY_PROBE = 8192,
  UTF8_HEAD = 64 * 1024, /* the bytes a large file's encoding is judged by */
  HUGE_BUF = 2 << 20, /* a read buffer this large is made of huge pages */
  HEAD_JUDGED = 1 << 20, /* from this size a file is judged by its head (a mapped one always) */
};

static __thread char errbuf[256]; /* detail of a bad include/exclude glob */

#ifdef BW_GREP_TEST_HOOK /* host/test/test_grep.c's build of this file only */
void (*bw_grep_mapped_hook)(const char *path);
#define MAPPED(path) do { if (bw_grep_mapped_hook) bw_grep_mapped_hook(path); } while (0)
#else
#define MAPPED(path) ((void)0)
#endif

/* ---- the walk's visitor ---- */

/* The names kept of skipped files form a max-heap by path order while
 * the workers meet them, so the list is the first max_skipped in path
 * order whatever the order of the visits (sorted at the end). */
static void heap_up(char **v, size_t i) {
  for (; i && bw_path_cmp(v[(i - 1) / 2], v[i]) < 0; i = (i - 1) / 2) {
    char *t = v[i];
    v[i] = v[(i - 1) / 2];
    v[(i - 1) / 2] = t;
  }
}

static void heap_down(char **v, size_t n, size_t i) {
  for (;;) {
    size_t m = i, l = 2 * i + 1, r = l + 1;
    if (l < n && bw_path_cmp(v[l], v[m]) > 0) m = l;
    if (r < n && bw_path_cmp(v[r], v[m]) > 0) m = r;
    if (m == i) return;
    char *t = v[i];
    v[i] = v[m];
    v[m] = t;
    i = m;
  }
}

/* List a skipped file (the first max_skipped names in path order; all
 * are counted). A capped search lists and counts only what sorts before
 * its last result, what a walk in path order meets, whichever worker got
 * there first (and trims the lists to that when it ends: skipped_cut). */
static int note_skip(grep *g, int big, const char *path) {
  if (bw_topn_past(&g->top, path)) return BW_OK;
  pthread_mutex_lock(&g->mu);
  char ***v = big ? &g->big : &g->bin;
  size_t *n = big ? &g->nbig : &g->nbin, *c = big ? &g->cbig : &g->cbin;
  int rc = BW_OK;
  if (big) g->tbig++;
  else g->tbin++;
  if (*n < g->o->max_skipped) {
    if (*n == *c) {
      size_t nc = *c ? *c * 2 : 16;
      char **nv = realloc(*v, nc * sizeof *nv);
      if (nv) *v = nv, *c = nc;
    }
    char *d = *n < *c ? strdup(path) : NULL;
    if (d) {
      (*v)[(*n)++] = d;
      heap_up(*v, *n - 1);
    } else rc = BW_ENOMEM;
  } else if (*n && bw_path_cmp(path, (*v)[0]) < 0) { /* before the last kept */
    char *d = strdup(path);
    if (d) {
      free((*v)[0]);
      (*v)[0] = d;
      heap_down(*v, *n, 0);
    } else rc = BW_ENOMEM;
  }
  pthread_mutex_unlock(&g->mu);
  return rc;
}

static int any_match(bw_glob *const *v, size_t n, const char *path,
                     const char *name) {
  for (size_t i = 0; i < n; i++)
    if (bw_glob_match(v[i], bw_glob_is_basename(v[i]) ? name : path)) return 1;
  return 0;
}

/* Read the whole file (at most cap + 1 bytes) into the worker's buffer;
 * the size from fstat is a hint, never trusted. */
static int read_all(wstate *w, int fd, size_t hint, size_t cap, size_t *len) {
  size_t n = 0, want = (hint < cap ? hint : cap) + 1;
  for (;;) {
    if (want > w->cap) {
      size_t c = want < 65536 ? 65536 : want;
      char *b;
      if (c >= HUGE_BUF) { /* whole huge pages: a fault per 2 MiB, not per 4 KiB */
        c = (c + HUGE_BUF - 1) & ~(HUGE_BUF - 1);
        if ((b = aligned_alloc(HUGE_BUF, c))) {
          bw_huge_advise(b, c);
          if (n) memcpy(b, w->buf, n);
          free(w->buf);
        }
      } else b = realloc(w->buf, c);
      if (!b) return BW_ENOMEM;
      w->buf = b;
      w->cap = c;
    }
    ssize_t got = read(fd, w->buf + n, want - n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return bw_code_from_errno(errno);
    if (got == 0) break;
    n += (size_t)got;
    if (n > cap) break;
    /* a short read of a regular file that reached its size is its end:
     * no second read() just to see 0 (one syscall less per file) */
    if (n < want && n >= hint) break;
    if (n == want) { /* it grew since fstat */
      want = n + n / 2 + 65536;
      if (want > cap + 1) want = cap + 1;
    }
  }
  *len = n;
  return BW_OK;
}

/* Are the first judge bytes of a file of n bytes UTF-8, so that grep
 * searches the file as its bytes? A sequence cut at the end of a head is. */
static int utf8_head(const char *b, size_t n, size_t judge) {
  size_t ok = bw_utf8_valid_upto(b, judge);
  return ok == n || (judge < n && ok + 4 > judge);
}

/* The text grep searches in a file's bytes: 0 the bytes themselves (UTF-8,
 * decided by one SSE2/word pass, so UTF-8 trees keep their speed), 1 the
 * UTF-8 of another encoding in *dec (charset.c: a BOM, UTF-16 by its NULs,
 * libuchardet only where the bytes are not UTF-8, then the operator's
 * fallback list charsets), -1 binary. A file of
 * 1 MiB or more (or mapped) whose first 64 KiB are UTF-8 is searched as
 * its bytes. */
static int text_of(const char *b, size_t n, int mapped, const char *charsets, char **dec,
                   size_t *dlen) {
  *dec = NULL;
  int nul = memchr(b, '\0', n < BINARY_PROBE ? n : BINARY_PROBE) != NULL;
  /* a large file is judged by its head: a whole pass would fault every
     page of a mapping in on one thread before the chunked search (1.6x on
     185 MB), and costs a read file a fifth of its search (4 MiB files) */
  size_t judge = (mapped || n >= HEAD_JUDGED) && n > UTF8_HEAD ? UTF8_HEAD : n;
  if (!nul && utf8_head(b, n, judge)) return 0;
  bw_charset cs;
  if (bw_charset_detect(b, n, charsets, &cs)) return -1;
  if (cs.utf8) return nul ? -1 : 0;
  if (bw_charset_decode(cs.name, b + cs.bom, n - cs.bom, dec, dlen))
    return nul ? -1 : 0; /* not that encoding after all: as before */
  if (memchr(*dec, '\0', *dlen < BINARY_PROBE ? *dlen : BINARY_PROBE)) {
    free(*dec);
    *dec = NULL;
    return -1;
  }
  return 1;
}

/* Keep a file's result; 0, or -1 (and g->err set) to stop the walk. */
static int keep_file(grep *g, bw_gfile *f) {
  if (!f) return 0;
  if (g->o->mode != BW_GREP_CONTENT) {
    f->item.units = 1;
    atomic_fetch_add(&g->found_files, 1);
    atomic_fetch_add(&g->found_matches, f->count);
  }
  if (bw_topn_add(&g->top, &f->item)) {
    atomic_store(&g->err, BW_ENOMEM);
    return -1;
  }
  return 0;
}

static int search_plain(void *arg) { return bwg_search_buf(arg); }

typedef struct probe {
  const char *buf;
  size_t len;
  int mapped;
  const char *charsets;
  int kind; /* text_of's answer */
  char *dec;
  size_t dlen;
} probe;

/* (Under the guard for a mapped file: a file cut short meanwhile leaks
   the decoding buffer, once.) */
static int probe_text(void *arg) {
  probe *p = arg;
  p->kind = text_of(p->buf, p->len, p->mapped, p->charsets, &p->dec, &p->dlen);
  return BW_OK;
}

/* Search a file's bytes: read, or (fd >= 0) mapped from fd, every access
 * guarded. 0, or -1 to stop the walk. */
static int search_file(grep *g, wstate *w, const char *buf, size_t len,
                       const char *path, int fd) {
  int mapped = fd >= 0;
  const bw_grep_opts *o = g->o;
  atomic_fetch_add(&g->searched, 1);
  atomic_fetch_add(&g->bytes, len);
  probe pb = {buf, len, mapped, g->o->charsets, 0, NULL, 0};
  int rc = mapped ? bw_guard(probe_text, &pb) : probe_text(&pb);
  if (!rc && pb.kind < 0) return note_skip(g, 0, path) ? -1 : 0;
  size_t chunk = o->chunk_size ? o->chunk_size : BW_GREP_CHUNK;
  bw_gfile *f = NULL;
  /* content lines go to the worker's stash while no kept file can be
     dropped (its room is not given back before the end: stash.c) */
  bw_stash *stash = o->mode == BW_GREP_CONTENT && !bw_topn_is_full(&g->top)
                        ? w->stash : NULL;
  if (rc) {
    /* the probe saw the file shrink */
  } else if (pb.dec) { /* another encoding: its UTF-8, in memory of our own */
    scan s;
    bwg_scan_init(&s, g, w, pb.dec, pb.dlen, path, 0, pb.dlen, 1);
    s.stash = stash;
    rc = bwg_search_buf(&s);
    f = s.f;
    if (rc && f) bwg_free_gfile(&f->item), f = NULL;
  } else if (mapped && g->nws > 1 && !o->multiline && len / chunk >= 2 &&
             !(o->from_path && !strcmp(path, o->from_path))) {
    /* (not a cursor's file: chunks number their lines only when joined) */
    rc = bwg_search_chunks(g, w, buf, len, fd, path, len / chunk, &f);
    atomic_fetch_add(&g->chunked, 1);
  } else {
    scan s;
    bwg_scan_init(&s, g, w, buf, len, path, 0, len, 1);
    s.stash = stash;
    rc = mapped ? bw_guard(search_plain, &s) : bwg_search_buf(&s);
    f = s.f;
    if (rc && f) bwg_free_gfile(&f->item), f = NULL;
  }
  free(pb.dec);
  if (rc == BW_EIO && mapped) { /* truncated under us: unreadable, not a crash */
    atomic_fetch_add(&g->unreadable, 1);
    return 0;
  }
  if (rc) {
    atomic_store(&g->err, rc);
    return -1;
  }
  return keep_file(g, f);
}

/* Files mode, a file large enough to be mapped: a file that matches at
 * all mostly does in its first lines, and reading its first UTF8_HEAD
 * bytes costs less than mapping it (a mapping is set up, faulted in and
 * torn down; 51 files of 4 MiB: see docs/benchmarks.md, grep on four shapes
 * of corpus). The head answers for the file when it is judged text as
 * text_of judges a mapped file (by this same head: no NUL in BINARY_PROBE,
 * UTF-8) and one of its whole lines matches: lines are matched one by one,
 * so a line's match is the line's alone. 1: not answered (search the whole
 * file), else what keep_file says. */
static int files_head(grep *g, wstate *w, int fd, size_t size, const char *path) {
  if (w->cap < UTF8_HEAD) {
    char *b = realloc(w->buf, UTF8_HEAD);
    if (!b) return 1;
    w->buf = b;
    w->cap = UTF8_HEAD;
  }
  size_t got = 0;
  while (got < UTF8_HEAD) {
    ssize_t n = pread(fd, w->buf + got, UTF8_HEAD - got, (off_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return 1; /* shrunk, or unreadable: the whole path says */
    got += (size_t)n;
  }
  if (memchr(w->buf, '\0', BINARY_PROBE) || !utf8_head(w->buf, size, UTF8_HEAD)) return 1;
  const char *nl = memrchr(w->buf, '\n', got);
  if (!nl) return 1;
  size_t end = (size_t)(nl - w->buf) + 1;
  scan s;
  bwg_scan_init(&s, g, w, w->buf, end, path, 0, end, 1);
  int rc = bwg_search_buf(&s);
  if (rc || !s.f) {
    if (s.f) bwg_free_gfile(&s.f->item);
    return 1;
  }
  atomic_fetch_add(&g->searched, 1);
  atomic_fetch_add(&g->bytes, size);
  return keep_file(g, s.f);
}

/* ---- a large file read in blocks ---- */

/* A file read whole goes into a buffer as large as itself (fresh pages
 * faulted in and zeroed whenever a larger file grows it) and is then read
 * again from memory, past the caches from a few MiB: on the Linux tree's
 * 1-16 MiB headers the count query took twice rg's CPU. Where the search
 * looks at lines alone, a file judged by its head (HEAD_JUDGED bytes or
 * more) is read in blocks of whole lines into a buffer the worker keeps,
 * each searched while it is in the cache, with the result the whole file
 * gives: matches found line by line (the prefilter's search, each line
 * its own subject; no literal holds a newline), no context, no cursor. */
enum { STREAM_BLOCK = 256 << 10, STREAM_WHOLE = 1 };

static int streamable(const grep *g, const char *path) {
  const bw_grep_opts *o = g->o;
  if (o->multiline || o->before || o->after || !g->m.lits.n) return 0;
  if (o->from_path && !strcmp(path, o->from_path)) return 0;
  for (int i = 0; i < g->m.lits.n; i++)
    if (memchr(g->m.lits.lit[i].s, '\n', g->m.lits.lit[i].len)) return 0;
  return 1;
}

/* The block buffer with room for need bytes, its n bytes kept. */
static int sbuf_room(wstate *w, size_t need, size_t n) {
  if (need <= w->scap) return 0;
  size_t c = w->scap ? w->scap : need;
  while (c < need) c *= 2;
  char *b = n ? realloc(w->sbuf, c) : (free(w->sbuf), malloc(c));
  if (!b) {
    if (!n) w->sbuf = NULL, w->scap = 0;
    return -1;
  }
  w->sbuf = b;
  w->scap = c;
  return 0;
}

/* Read into w->sbuf from *n until upto bytes are there or the file ends:
 * a read of 0, or a short one past the size fstat gave (as read_all). */
static int fill(wstate *w, int fd, size_t upto, size_t hint, size_t *n, size_t *total,
                int *eof) {
  while (*n < upto) {
    ssize_t got = read(fd, w->sbuf + *n, upto - *n);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) return bw_code_from_errno(errno);
    *n += (size_t)got;
    *total += (size_t)got;
    if (got == 0 || (*n < upto && *total >= hint)) {
      *eof = 1;
      break;
    }
  }
  return BW_OK;
}

/* fd back at its start, for the whole file's read: STREAM_WHOLE, or 0
 * (unreadable) if it cannot be. */
static int rewind_fd(grep *g, int fd) {
  if (lseek(fd, 0, SEEK_SET) == 0) return STREAM_WHOLE;
  atomic_fetch_add(&g->unreadable, 1);
  return 0;
}

/* Search the open file fd of size bytes (a hint) block by block: what
 * grep_fd returns (0, or -1 to stop the walk), or STREAM_WHOLE with fd
 * back at its start where the file must be read whole (its head is not
 * UTF-8 text: the charset's judge wants all of it). */
static int stream_file(grep *g, wstate *w, int fd, size_t size, const char *path) {
  const bw_grep_opts *o = g->o;
  size_t block = o->stream_block ? o->stream_block : STREAM_BLOCK;
  size_t first = block > UTF8_HEAD ? block : UTF8_HEAD;
  size_t n = 0, total = 0, line = 1;
  int eof = 0;
  if (sbuf_room(w, first + block, 0)) return STREAM_WHOLE;
  int rc = fill(w, fd, first, size, &n, &total, &eof);
  if (rc) {
    atomic_fetch_add(&g->unreadable, 1);
    return 0;
  }
  if (eof && n < HEAD_JUDGED) { /* it shrank: this is all of it, as read_all has it */
    if (n > o->max_file_size) return note_skip(g, 1, path) ? -1 : 0;
    return search_file(g, w, w->sbuf, n, path, -1);
  }
  /* text_of's judge of a file this large: its head (checked at the end:
     a file that shrank under us to less is read again and judged whole) */
  if (memchr(w->sbuf, '\0', BINARY_PROBE) || !utf8_head(w->sbuf, HEAD_JUDGED, UTF8_HEAD))
    return rewind_fd(g, fd);
  bw_stash *stash = o->mode == BW_GREP_CONTENT && !bw_topn_is_full(&g->top) ? w->stash : NULL;
  bw_gfile *f = NULL;
  for (;;) {
    const char *nl = eof ? NULL : memrchr(w->sbuf, '\n', n);
    size_t upto = eof ? n : nl ? (size_t)(nl - w->sbuf) + 1 : 0;
    if (upto) { /* whole lines: up to the last newline, or the rest at the end */
      scan s;
      bwg_scan_init(&s, g, w, w->sbuf, upto, path, 0, upto, line);
      s.stash = stash;
      s.f = f;
      rc = bwg_search_buf(&s);
      f = s.f;
      if (rc || s.done || eof || halted(g)) break;
      if (o->mode == BW_GREP_CONTENT) line = bwg_line_no(&s, upto);
      memmove(w->sbuf, w->sbuf + upto, n - upto);
      n -= upto;
    } else if (eof) {
      break; /* it ended after a newline */
    } /* else one line longer than the buffer: it grows */
    if (sbuf_room(w, n + block, n)) {
      rc = BW_ENOMEM;
      break;
    }
    if ((rc = fill(w, fd, n + block, size, &n, &total, &eof))) break;
    if (total > o->max_file_size) {
      rc = BW_TOO_LARGE;
      break;
    }
  }
  if (!rc && eof && total < HEAD_JUDGED) { /* shrank: not to be judged by its head */
    if (f) bwg_free_gfile(&f->item);
    return rewind_fd(g, fd);
  }
  if (rc && f) bwg_free_gfile(&f->item), f = NULL;
  if (rc == BW_TOO_LARGE) return note_skip(g, 1, path) ? -1 : 0;
  if (rc == BW_ENOMEM) {
    atomic_store(&g->err, rc);
    return -1;
  }
  if (rc) { /* a read failed: as read_all's failure */
    atomic_fetch_add(&g->unreadable, 1);
    return 0;
  }
  atomic_fetch_add(&g->searched, 1);
  atomic_fetch_add(&g->bytes, total);
  atomic_fetch_add(&g->streamed, 1);
  return keep_file(g, f);
}

/* Read (or map, when large) and search one open regular file; path is
 * what results show. */
static int grep_fd(grep *g, wstate *w, int fd, const struct stat *st,
                   const char *path) {
  const bw_grep_opts *o = g->o;
  size_t len = 0, size = (size_t)st->st_size;
  if (o->max_bytes && size <= o->max_file_size) {
    if (atomic_fetch_add(&g->reserved, size) + size > o->max_bytes) {
      close(fd); /* over the budget: not read, and the search ends */
      halt(g, STOP_BYTES);
      return -1;
    }
  }
  if (size > o->max_file_size) {
    close(fd);
    return note_skip(g, 1, path) ? -1 : 0;
  }
  size_t map_min = o->map_min                 ? o->map_min
                   : o->mode == BW_GREP_FILES ? BW_GREP_FILES_MAP_MIN
                                              : BW_GREP_MAP_MIN;
  if (o->mode == BW_GREP_FILES && !o->multiline && size > UTF8_HEAD && size >= map_min) {
    int r = files_head(g, w, fd, size, path);
    if (r != 1) {
      close(fd);
      return r;
    }
  }
  if (size >= HEAD_JUDGED && size < map_min && streamable(g, path)) {
    int r = stream_file(g, w, fd, size, path);
    if (r != STREAM_WHOLE) {
      close(fd);
      return r;
    }
  }
  if (size && size >= map_min) {
    /* a file this large would need a buffer as large, a page fault per
     * page; it is mapped, and searched in chunks read from the fd where
     * it can be (grepmap.c). The fd is the one opened with O_NOFOLLOW
     * and checked regular: nothing else is mapped. */
    void *p = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) {
      MAPPED(path);
      int r = search_file(g, w, p, size, path, fd);
      munmap(p, size);
      close(fd);
      return r;
    }
  }
  int rc = read_all(w, fd, size, o->max_file_size, &len);
  close(fd);
  if (rc == BW_ENOMEM) return -1;
  if (!rc && len > o->max_file_size) rc = BW_TOO_LARGE;
  if (rc == BW_TOO_LARGE) return note_skip(g, 1, path) ? -1 : 0;
  if (rc) {
    atomic_fetch_add(&g->unreadable, 1);
    return 0;
  }
  return search_file(g, w, w->buf, len, path, -1);
}

/* Content mode prunes what sorts past its full list: its total is a lower
 * bound then. Files and count modes walk on (within the budget) to count
 * every matching file; only the list stays capped. */
static int beyond(grep *g, const char *path) {
  return g->o->mode == BW_GREP_CONTENT && bw_topn_beyond(&g->top, path);
}

/* Does everything at or below path sort before the cursor's file? (A
 * directory that holds it does not: '/' sorts first, so "d/x" < "d-b".) */
static int before_cursor(grep *g, const char *path, int dir) {
  const char *from = g->o->from_path;
  if (!from || bw_path_cmp(path, from) >= 0) return 0;
  size_t n = strlen(path);
  return !(dir && (n == 0 || (!strncmp(from, path, n) && from[n] == '/')));
}

static int grep_file(grep *g, const bw_wentry *e) {
  if (g->inc && !any_match(g->inc, g->o->n_include, e->path, e->name)) return 0;
  if (beyond(g, e->path) || before_cursor(g, e->path, 0)) return 0;
  struct stat st;
  int fd;
  if (bw_open_regular(g->r, e->dirfd, e->name, &st, &fd)) {
    atomic_fetch_add(&g->unreadable, 1);
    return 0;
  }
  return grep_fd(g, &g->ws[e->worker], fd, &st, e->path);
}

/* A file named as the search path: searched whatever the hidden and
 * ignore rules say; its path in results is "". */
static int grep_single(grep *g, const char *rel) {
  struct stat st;
  int fd, rc = bw_open_read(g->r, rel, &fd, &st);
  if (rc) return rc;
  grep_fd(g, &g->ws[0], fd, &st, "");
  return BW_OK;
}

/* Is rel a regular file (after in-root links)? */
/* 1: rel is a regular file, 0: something else, -1: nothing reachable
 * (the walk says why). */
static int is_file(const bw_root *r, const char *rel) {
  struct stat st;
  int fd;
  if (bw_resolve(r, rel, 0, &fd, &st)) return -1;
  close(fd);
  return S_ISREG(st.st_mode);
}

static int grep_visit(void *arg, const bw_wentry *e) {
  grep *g = arg;
  if (halted(g)) return -1;
  if (e->type == 'd') {
    if (g->exc && any_match(g->exc, g->o->n_exclude, e->path, e->name)) return 0;
    return !beyond(g, e->path) && !before_cursor(g, e->path, 1);
  }
  if (e->type != 'f') return 0; /* links, FIFOs, sockets, devices: never read */
  if (g->exc && any_match(g->exc, g->o->n_exclude, e->path, e->name)) return 0;
  return grep_file(g, e);
}

/* ---- the call ---- */

static int compile_globs(const char *const *src, size_t n, bw_glob ***out, int on) {
  *out = NULL;
  if (!n) return BW_OK;
  bw_glob **v = calloc(n, sizeof *v);
  if (!v) return BW_ENOMEM;
  *out = v;
  for (size_t i = 0; i < n; i++) {
    const char *why;
    if (!(v[i] = bw_glob_compile(src[i], strlen(src[i]), BW_GLOB_BRACES, &why))) {
      snprintf(errbuf, sizeof errbuf, "invalid glob %.64s: %s", src[i], why);
      return bw_fail_on(BW_INVALID_ARGUMENT, on, (int)i + 1, errbuf);
    }
  }
  return BW_OK;
}

static void free_globs(bw_glob **v, size_t n) {
  for (size_t i = 0; v && i < n; i++) bw_glob_free(v[i]);
  free(v);
}

static int by_path(const void *a, const void *b) {
  return bw_path_cmp(*(char *const *)a, *(char *const *)b);
}

/* Drop the names of skipped files after the last result of a full set
 * (the workers may have listed them before the set filled), and their
 * count. */
static void skipped_cut(char **v, size_t *n, size_t *total, const char *last) {
  size_t k = 0;
  for (size_t i = 0; i < *n; i++) {
    if (bw_path_cmp(v[i], last) > 0) free(v[i]);
    else v[k++] = v[i];
  }
  *total -= *n - k;
  *n = k;
}

static void grep_free(grep *g) {
  for (int i = 0; g->ws && i < g->nws; i++) bwg_ws_free(&g->ws[i]);
  free(g->ws);
  free_globs(g->inc, g->o->n_include);
  free_globs(g->exc, g->o->n_exclude);
  pcre2_code_free(g->m.re);
  for (size_t i = 0; i < g->nbin; i++) free(g->bin[i]);
  for (size_t i = 0; i < g->nbig; i++) free(g->big[i]);
  free(g->bin);
  free(g->big);
  pthread_mutex_destroy(&g->mu);
}

static int grep_setup(grep *g) {
  int rc = bwg_matcher_init(&g->m, g->o);
  if (!rc) rc = compile_globs(g->o->include, g->o->n_include, &g->inc, BW_ON_INCLUDE);
  if (!rc) rc = compile_globs(g->o->exclude, g->o->n_exclude, &g->exc, BW_ON_EXCLUDE);
  if (rc) return rc;
  g->nws = bw_walk_threads(g->o->walk.threads);
  if (!(g->ws = calloc((size_t)g->nws, sizeof *g->ws))) return BW_ENOMEM;
  for (int i = 0; i < g->nws; i++)
    if ((rc = bwg_ws_init(&g->ws[i], g))) return rc;
  return BW_OK;
}

/* ---- the time budget: a thread that sleeps until max_ms, or the end ---- */

static void *watch(void *arg) {
  grep *g = arg;
  watchdog *d = &g->dog;
  pthread_mutex_lock(&d->mu);
  while (!d->done)
    if (pthread_cond_timedwait(&d->cv, &d->mu, &d->until) == ETIMEDOUT) {
      if (!d->done) halt(g, STOP_TIME);
      break;
    }
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

static void watch_start(grep *g) {
  watchdog *d = &g->dog;
  if (!g->o->max_ms) return;
  bw_cond_init_mono(&d->cv);
  pthread_mutex_init(&d->mu, NULL);
  bw_deadline_mono(&d->until, (double)g->o->max_ms / 1000.0);
  d->running = pthread_create(&d->t, NULL, watch, g) == 0;
  if (!d->running) { /* no thread: no time budget, rather than no search */
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
  }
}

static void watch_stop(grep *g) {
  watchdog *d = &g->dog;
  if (!d->running) return;
  pthread_mutex_lock(&d->mu);
  d->done = 1;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  pthread_join(d->t, NULL);
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->mu);
  d->running = 0;
}

int bw_grep(const bw_root *r, const char *rel, const bw_grep_opts *o,
            bw_grep_res *res) {
  memset(res, 0, sizeof *res);
  bw_walk_stats stats = {0};
  grep g = {.r = r, .o = o, .stats = &stats};
  pthread_mutex_init(&g.mu, NULL);
  bw_topn_init(&g.top, o->max_results, bwg_free_gfile);
  watch_start(&g);
  int rc = grep_setup(&g);
  if (!rc) {
    bw_walk_opts w = o->walk;
    w.threads = g.nws;
    w.visit = grep_visit;
    w.arg = &g;
    w.stats = &stats;
    int single = is_file(r, rel);
    /* a cursor names where this search stopped: "" for a one-file search
       (its path in results), a path in the tree for a walk; any other
       would silently start over (an agent paging it would loop) */
    if (o->from_path && single >= 0 && (*o->from_path == 0) != single)
      rc = bw_fail_on(BW_INVALID_ARGUMENT, BW_ON_CURSOR, 0,
                      single ? "the cursor names a file, but this search is of one file: "
                               "pass the cursor its result gave"
                             : "the cursor names no file, but this search is of a folder: "
                               "pass the cursor its result gave");
    else
      rc = single > 0 ? grep_single(&g, rel) : bw_walk_run(r, rel, &w);
  }
  watch_stop(&g);
  int err = atomic_load(&g.err);
  if (!rc && err == -1)
    rc = bw_fail_on(BW_INVALID_ARGUMENT, BW_ON_PATTERN, 0,
                 "the pattern hit PCRE2's backtracking limit on some input "
                 "(catastrophic backtracking, e.g. (a+)+$); make it more specific");
  else if (!rc && err)
    rc = err;
  if (rc) {
    bw_topn_free(&g.top);
    grep_free(&g);
    return rc;
  }
  for (int i = 0; i < g.nws; i++) {
    bw_stash_take(&res->stash, &g.ws[i].stash[0]);
    bw_stash_take(&res->stash, &g.ws[i].stash[1]);
  }
  if (g.top.full && g.top.n) {
    skipped_cut(g.bin, &g.nbin, &g.tbin, g.top.v[g.top.n - 1]->path);
    skipped_cut(g.big, &g.nbig, &g.tbig, g.top.v[g.top.n - 1]->path);
  }
  res->files = (bw_gfile **)g.top.v;
  res->nfiles = g.top.n;
  res->truncated = g.top.dropped || atomic_load(&g.trimmed) > 0;
  g.top.v = NULL;
  g.top.n = 0;
  bw_topn_free(&g.top);
  if (g.nbin > 1) qsort(g.bin, g.nbin, sizeof *g.bin, by_path); /* NULL if empty */
  if (g.nbig > 1) qsort(g.big, g.nbig, sizeof *g.big, by_path);
  res->skipped_binary = g.bin;
  res->skipped_size = g.big;
  res->listed_binary = g.nbin;
  res->listed_size = g.nbig;
  res->n_binary = g.tbin;
  res->n_size = g.tbig;
  g.bin = g.big = NULL;
  g.nbin = g.nbig = 0;
  res->searched = atomic_load(&g.searched);
  res->unreadable = atomic_load(&g.unreadable) + atomic_load(&stats.unreadable);
  res->skipped_policy = atomic_load(&stats.skipped_policy);
  int stop = atomic_load(&g.stop);
  res->bytes = atomic_load(&g.bytes);
  res->chunked = atomic_load(&g.chunked);
  res->streamed = atomic_load(&g.streamed);
  res->found_files = atomic_load(&g.found_files);
  res->found_matches = atomic_load(&g.found_matches);
  res->cancelled = atomic_load(&stats.cancelled) || stop == STOP_CANCEL;
  res->limit = stop == STOP_TIME    ? BW_GREP_LIMIT_TIME
               : stop == STOP_BYTES ? BW_GREP_LIMIT_BYTES
                                    : 0;
  if (res->cancelled || res->limit) res->truncated = 1;
  grep_free(&g);
  return BW_OK;
}

void bw_grep_res_free(bw_grep_res *res) {
  for (size_t i = 0; i < res->nfiles; i++) bwg_free_gfile(&res->files[i]->item);
  free(res->files);
  for (size_t i = 0; i < res->listed_binary; i++) free(res->skipped_binary[i]);
  for (size_t i = 0; i < res->listed_size; i++) free(res->skipped_size[i]);
  free(res->skipped_binary);
  free(res->skipped_size);
  bw_stash_free(&res->stash);
  memset(res, 0, sizeof *res);
}
