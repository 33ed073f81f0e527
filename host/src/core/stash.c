/*
 * stash.c - where grep keeps the lines it found: large mapped chunks,
 * handed out one block after another, freed all at once with the result.
 *
 * A file's text and its line records each grow while the file is scanned;
 * with one stash for each, the block growing is always the newest one, so
 * it grows in place until its chunk is full, then moves whole to a new
 * chunk. A malloc'd buffer per file (4 KiB and up, doubled by realloc)
 * cost a fresh heap page and a page fault per file with a match: a third
 * of a many-match search's time on a machine where faults are dear
 * (docs/benchmarks.md, grep on four shapes of corpus). Chunks are advised
 * huge pages, so a fault brings in 2 MiB, and untouched room costs no memory.
 *
 * The price is that a block never comes back before the end: grep uses a
 * stash only while the result set is not full, when no kept file can be
 * dropped, so the room lost is bounded by the result's own size.
 */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "core.h"
#include "search.h"

enum { CHUNK = 32 << 20 }; /* mapped, not touched: its pages come as written */

typedef struct bw_stash_chunk {
  struct bw_stash_chunk *next;
  size_t size; /* the whole mapping, header included */
  size_t used; /* the end of the newest block */
} chunk;

static const size_t HEAD = (sizeof(chunk) + 15) & ~(size_t)15;

void *bw_stash_grow(bw_stash *s, void *last, size_t old, size_t want) {
  chunk *c = s->head;
  if (last && c && (char *)last + old == (char *)c + c->used &&
      (size_t)((char *)last - (char *)c) + want <= c->size) {
    c->used = (size_t)((char *)last - (char *)c) + want; /* in place */
    return last;
  }
  if (want > SIZE_MAX / 2) return NULL;
  size_t at = c ? (c->used + 15) & ~(size_t)15 : 0;
  if (!c || at > c->size || c->size - at < want) {
    size_t size = want > CHUNK - HEAD ? (want + HEAD + 4095) & ~(size_t)4095 : CHUNK;
    void *m = mmap(NULL, size, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return NULL;
    bw_huge_advise(m, size);
    c = m;
    c->size = size;
    c->next = s->head;
    s->head = c;
    at = HEAD;
  }
  char *p = (char *)c + at;
  if (last && old) memcpy(p, last, old < want ? old : want);
  c->used = at + want;
  return p;
}

void bw_stash_take(bw_stash *to, bw_stash *from) {
  chunk **end = &to->head;
  while (*end) end = &(*end)->next;
  *end = from->head;
  from->head = NULL;
}

void bw_stash_free(bw_stash *s) {
  for (chunk *c = s->head, *n; c; c = n) {
    n = c->next;
    munmap(c, c->size);
  }
  s->head = NULL;
}
