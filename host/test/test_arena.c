/*
 * test_arena.c - C tests of the burrow command's Lua heap (arena.c, no Lua):
 * small blocks come from the one region and large ones from malloc, a freed
 * block is taken again by its size class, a resize keeps the contents it
 * can, a used-up region hands over to malloc, and a long random mix of
 * allocations, resizes and frees across that point never gives one byte to
 * two live blocks. Closes with "N passed, N failed".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core.h"

#include "check.h"

static bw_arena *A;

static void *al(void *p, size_t o, size_t n) { return bw_arena_alloc(A, p, o, n); }

static int inside(const void *p) {
  return (const char *)p >= (const char *)A &&
         (const char *)p < (const char *)A + BW_ARENA_SIZE;
}

static void fill(unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) p[i] = (unsigned char)(seed * 131 + i * 7);
}

static int intact(const unsigned char *p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != (unsigned char)(seed * 131 + i * 7)) return 0;
  return 1;
}

static void test_classes(void) {
  void *a = al(NULL, 0, 24), *b = al(NULL, 0, 24);
  CHECK(a && inside(a) && b && inside(b) && a != b, "small blocks from the region");
  CHECK((uintptr_t)a % 16 == 0 && (uintptr_t)b % 16 == 0, "16-byte aligned");
  CHECK((char *)b - (char *)a >= 32, "a 24-byte block takes its class's 32 bytes");
  void *big = al(NULL, 0, BW_ARENA_MAX + 1);
  CHECK(big && !inside(big), "a block above BW_ARENA_MAX is malloc's");
  void *edge = al(NULL, 0, BW_ARENA_MAX);
  CHECK(edge && inside(edge), "a block of BW_ARENA_MAX is the region's");
  al(a, 24, 0);
  void *c = al(NULL, 0, 20); /* same class (17..32) */
  CHECK(c == a, "a freed block is taken again by its class");
  void *d = al(NULL, 0, 40);
  CHECK(d != b && d != c, "another class does not take it");
  al(big, BW_ARENA_MAX + 1, 0);
  al(edge, BW_ARENA_MAX, 0);
  al(b, 24, 0), al(c, 20, 0), al(d, 40, 0);
}

static void test_resize(void) {
  unsigned char *p = al(NULL, 0, 100);
  fill(p, 100, 1);
  CHECK(al(p, 100, 110) == p, "a resize within the class keeps the block");
  unsigned char *q = al(p, 110, 3000);
  CHECK(q && inside(q) && intact(q, 100, 1), "growing moves the contents");
  fill(q, 3000, 2);
  unsigned char *r = al(q, 3000, 50000);
  CHECK(r && !inside(r) && intact(r, 3000, 2), "growing past the classes moves to malloc");
  fill(r, 50000, 3);
  unsigned char *s = al(r, 50000, 200);
  CHECK(s && intact(s, 200, 3), "a malloc block shrinks with its contents");
  al(s, 200, 0);
  unsigned char *t = al(NULL, 0, 4000);
  fill(t, 4000, 4);
  unsigned char *u = al(t, 4000, 64);
  CHECK(u && inside(u) && intact(u, 64, 4), "a shrink into a smaller class keeps the head");
  al(u, 64, 0);
  /* Growing by a few bytes past a class must not run into a neighbour. */
  enum { K = 64 };
  unsigned char *v[K];
  for (int i = 0; i < K; i++) fill(v[i] = al(NULL, 0, 30), 30, 10 + i);
  for (int i = 0; i < K; i += 2) fill(v[i] = al(v[i], 30, 40), 40, 100 + i);
  int ok = 1;
  for (int i = 0; i < K; i++) ok &= intact(v[i], i % 2 ? 30 : 40, i % 2 ? 10 + i : 100 + i);
  CHECK(ok, "a block grown into the next class leaves its neighbours alone");
  for (int i = 0; i < K; i++) al(v[i], i % 2 ? 30 : 40, 0);
}

/* Use the region up with blocks of one class; the next come from malloc,
 * and a block given back is taken again before malloc is asked. */
static void test_used_up(void) {
  enum { N = 1200 };
  void **v = calloc(N, sizeof *v);
  size_t n = 0, in = 0;
  while (n < N) {
    v[n] = al(NULL, 0, BW_ARENA_MAX);
    if (!v[n]) break;
    if (!inside(v[n++])) break;
    in++;
  }
  CHECK(n < N && n == in + 1, "the region runs out (%zu blocks of %d from it)", in,
        BW_ARENA_MAX);
  CHECK(in * BW_ARENA_MAX > BW_ARENA_SIZE - 16 * BW_ARENA_MAX,
        "nearly all of the region was handed out (%zu bytes)", in * BW_ARENA_MAX);
  void *out = v[n - 1];
  fill(out, BW_ARENA_MAX, 5);
  void *small = al(NULL, 0, 16);
  CHECK(small != NULL, "small blocks still come, from malloc once the region is used up");
  al(small, 16, 0);
  void *back = v[0];
  al(back, BW_ARENA_MAX, 0);
  CHECK(al(NULL, 0, BW_ARENA_MAX) == back, "a given-back block is taken before malloc");
  CHECK(intact(out, BW_ARENA_MAX, 5), "a malloc block past the region is intact");
  for (size_t i = 0; i < n; i++) al(v[i], BW_ARENA_MAX, 0);
  free(v);
}

/* A random mix well past the region's size, every live block holding its
 * own pattern: a byte given to two live blocks breaks one of them. */
static void test_mix(void) {
  enum { SLOTS = 4000, OPS = 400000 };
  struct { unsigned char *p; size_t n; unsigned seed; } *s = calloc(SLOTS, sizeof *s);
  unsigned x = 12345, seed = 0;
  int bad = 0;
  size_t in = 0, outside = 0;
  for (int op = 0; op < OPS && !bad; op++) {
    x = x * 1103515245 + 12345;
    size_t i = (x >> 8) % SLOTS;
    size_t n = (x >> 4) % 16 == 0 ? 1 + (x >> 12) % 9000 : 1 + (x >> 12) % 600;
    if (!s[i].p) {
      s[i].p = al(NULL, (x >> 3) % 9, n); /* osize: Lua's object tag here */
      if (!s[i].p) bad = 1;
      s[i].n = n, s[i].seed = ++seed;
      fill(s[i].p, n, s[i].seed);
      inside(s[i].p) ? in++ : outside++;
    } else if (!intact(s[i].p, s[i].n, s[i].seed)) {
      bad = 2;
    } else if ((x >> 20) % 3 == 0) {
      al(s[i].p, s[i].n, 0);
      s[i].p = NULL;
    } else {
      unsigned char *q = al(s[i].p, s[i].n, n);
      if (!q) bad = 3;
      if (!intact(q, n < s[i].n ? n : s[i].n, s[i].seed)) bad = 4;
      s[i].p = q, s[i].n = n, s[i].seed = ++seed;
      fill(q, n, s[i].seed);
    }
  }
  for (size_t i = 0; i < SLOTS && !bad; i++)
    if (s[i].p && !intact(s[i].p, s[i].n, s[i].seed)) bad = 5;
  CHECK(!bad, "400,000 random operations keep every block's bytes its own (failure %d)", bad);
  CHECK(in > 1000 && outside > 1000, "the mix ran both in the region (%zu) and past it (%zu)",
        in, outside);
  for (size_t i = 0; i < SLOTS; i++)
    if (s[i].p) al(s[i].p, s[i].n, 0);
  free(s);
}

static void test_no_arena(void) {
  unsigned char *p = bw_arena_alloc(NULL, NULL, 0, 100);
  CHECK(p != NULL, "with no arena, plain malloc");
  fill(p, 100, 6);
  p = bw_arena_alloc(NULL, p, 100, 10000);
  CHECK(p && intact(p, 100, 6), "and realloc");
  CHECK(bw_arena_alloc(NULL, p, 10000, 0) == NULL, "and free");
}

/* Where the kernel populates on request (5.14+), the region's first
 * BW_ARENA_PREFAULT bytes are resident as soon as it opens, before any
 * block is taken: a start takes them without a fault each, and the rest of
 * the 2 MiB is not touched (a huge page zeroed all of it at every start). */
static void test_prefault(void) {
  long pg = sysconf(_SC_PAGESIZE);
  char *probe = mmap(NULL, (size_t)pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int can = probe != MAP_FAILED && madvise(probe, (size_t)pg, MADV_POPULATE_WRITE) == 0;
  if (probe != MAP_FAILED) munmap(probe, (size_t)pg);
  if (!can) {
    printf("# no MADV_POPULATE_WRITE here: the arena is a huge page\n");
    return;
  }
  size_t n = BW_ARENA_SIZE / (size_t)pg, in = 0, rest = 0;
  unsigned char *v = malloc(n);
  CHECK(v && mincore((void *)A, BW_ARENA_SIZE, v) == 0, "mincore of the region");
  for (size_t i = 0; v && i < n; i++) {
    if (i * (size_t)pg < BW_ARENA_PREFAULT) in += v[i] & 1;
    else rest += v[i] & 1;
  }
  free(v);
  CHECK(in == BW_ARENA_PREFAULT / (size_t)pg, "the first %d KiB resident at the open (%zu pages)",
        BW_ARENA_PREFAULT >> 10, in);
  CHECK(rest == 0, "the rest untouched (%zu pages resident)", rest);
}

int main(void) {
  A = bw_arena_open();
  int thp = access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0;
  CHECK(A || !thp, "the arena opens where the kernel has transparent huge pages");
  if (A) {
    test_prefault();
    test_classes();
    test_resize();
    test_used_up();
    test_mix();
    bw_arena_close(A);
  }
  test_no_arena();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
