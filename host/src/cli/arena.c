/*
 * arena.c - a heap of one 2 MiB region for one thread's many small blocks:
 * the burrow command's Lua state (main.c).
 *
 * A short command spends much of its time past exec on page faults: the
 * ~400 KB a Lua state and its modules allocate from malloc's heap is ~100
 * first touches, and in a virtual machine a fault on fresh memory can cost
 * 10 µs or more (one guest: 100 touches 1.15-1.34 ms, the same 400 KB in a
 * huge page 0.13-0.24 ms). The region's first BW_ARENA_PREFAULT bytes are
 * populated in one madvise(MADV_POPULATE_WRITE): no fault each, and only
 * what a start uses is zeroed (a `burrow call stat` takes ~240 KB, a `burrow
 * mcp` ~130 KB to its initialize answer and ~235 KB once its workspace is
 * open; 512 KB populated was ~50 µs of a start, half of it for pages no
 * start touched: docs/benchmarks.md, Start-up). The rest faults page by
 * page as it is reached. Where the kernel lacks MADV_POPULATE_WRITE (before 5.14)
 * the region is one transparent huge page instead, advised MADV_HUGEPAGE,
 * which the kernel fills on the first touch; that was the arena's first
 * form, and it zeroed all 2 MiB at every start (15% of a `call stat`'s CPU
 * on a 2-core VM, perf) and could wait for the kernel to compact memory
 * for the huge page on a busy machine (docs/benchmarks.md, Start-up).
 *
 * Blocks of up to BW_ARENA_MAX bytes are cut from it in 16-byte size
 * classes, from a free list per class or else from the untouched end.
 * They carry no header: the caller names a block's size on every free and
 * resize, as Lua's lua_Alloc does, so bw_arena_alloc has that shape.
 * Larger blocks, and every block once the region is used up, are
 * realloc/free's; a block of BW_HUGE_MIN or more gets huge-page advice
 * there (bw_huge_advise). A block shrunk when no smaller one can be had
 * keeps its place: the free list of its new class may hold it, as every
 * block on a list is at least its class's size.
 *
 * No lock: the arena belongs to one thread at a time (a Lua state runs on
 * one). Where neither madvise is taken, there is no arena.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core.h"

enum { GRAIN = 16, CLASSES = BW_ARENA_MAX / GRAIN + 1, PREFAULT = BW_ARENA_PREFAULT };

struct bw_arena {
  char *next, *end;     /* the untouched rest of the region */
  void *free[CLASSES];  /* by size class: blocks of class * GRAIN bytes (or more) */
};

/* The region holds its own header, so opening it touches nothing else. */
static bw_arena *start(char *r) {
  bw_arena *a = (bw_arena *)r;
  size_t head = (sizeof *a + GRAIN - 1) / GRAIN * GRAIN;
  a->next = r + head;
  a->end = r + BW_ARENA_SIZE;
  return a;
}

/* Before Linux 5.14: one huge page, 2 MiB-aligned. */
static bw_arena *open_huge(void) {
  const size_t size = BW_ARENA_SIZE, span = 2 * BW_ARENA_SIZE;
  char *m = mmap(NULL, span, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (m == MAP_FAILED) return NULL;
  char *r = (char *)(((uintptr_t)m + size - 1) & ~(uintptr_t)(size - 1));
  if (r > m) munmap(m, (size_t)(r - m));
  munmap(r + size, (size_t)(m + span - (r + size)));
  if (madvise(r, size, MADV_HUGEPAGE) != 0) {
    munmap(r, size);
    return NULL;
  }
  return start(r);
}

bw_arena *bw_arena_open(void) {
  char *r = mmap(NULL, BW_ARENA_SIZE, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (r == MAP_FAILED) return NULL;
#ifdef MADV_POPULATE_WRITE
  if (madvise(r, PREFAULT, MADV_POPULATE_WRITE) == 0) return start(r);
#endif
  munmap(r, BW_ARENA_SIZE);
  return open_huge();
}

void bw_arena_close(bw_arena *a) {
  if (a) munmap(a, BW_ARENA_SIZE);
}

static size_t class_of(size_t n) { return (n + GRAIN - 1) / GRAIN; }

static int holds(const bw_arena *a, const void *p) {
  return a && (const char *)p > (const char *)a && (const char *)p < a->end;
}

/* A block of n (1..BW_ARENA_MAX) bytes, or NULL when the region is used up. */
static void *take(bw_arena *a, size_t n) {
  size_t c = class_of(n);
  void *p = a->free[c];
  if (p) {
    a->free[c] = *(void **)p;
    return p;
  }
  size_t size = c * GRAIN;
  if ((size_t)(a->end - a->next) < size) return NULL;
  p = a->next;
  a->next += size;
  return p;
}

/* Give back a region block its owner knows as n bytes. */
static void give(bw_arena *a, void *p, size_t n) {
  size_t c = class_of(n);
  *(void **)p = a->free[c];
  a->free[c] = p;
}

/* Everything but a new small block: a region block resized or given
 * back, a large one, one past the region's end. Apart from the fast path
 * below so that path saves no registers for the calls made here. */
__attribute__((noinline)) static void *alloc_slow(bw_arena *a, void *ptr, size_t osize,
                                                  size_t nsize) {
  if (ptr && holds(a, ptr)) { /* with ptr set, osize is its block's size */
    if (nsize == 0) {
      give(a, ptr, osize);
      return NULL;
    }
    if (class_of(nsize) == class_of(osize)) return ptr;
    void *q = nsize <= BW_ARENA_MAX ? take(a, nsize) : NULL;
    if (!q) q = malloc(nsize);
    if (!q) return nsize < osize ? ptr : NULL; /* a shrink keeps its block */
    memcpy(q, ptr, nsize < osize ? nsize : osize);
    give(a, ptr, osize);
    return q;
  }
  if (nsize == 0) {
    free(ptr);
    return NULL;
  }
  void *p = realloc(ptr, nsize);
  if (p && nsize >= BW_HUGE_MIN) bw_huge_advise(p, nsize);
  return p;
}

void *bw_arena_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  bw_arena *a = ud;
  if (!ptr && a && nsize - 1 < BW_ARENA_MAX) { /* a new block of 1..BW_ARENA_MAX bytes */
    void *q = take(a, nsize);
    if (q) return q;
  }
  return alloc_slow(a, ptr, osize, nsize);
}
