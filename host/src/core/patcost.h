/*
 * patcost.h - an upper bound on the work Lua 5.4's string.find, match,
 * gmatch and gsub may do on a call, computed before the call (patcost.c).
 * The policy sandbox charges the bound to the call's budget, then calls
 * the stock functions. Plain C: no lua.h.
 *
 * The bound is in steps, under a nanosecond of the matcher each (a
 * character class tested at one place, a byte of a set or of a %b or
 * back-reference scan, one try of the rest of the pattern). A result
 * equal to the cap given means "the cap or more".
 */
#ifndef BW_PATCOST_H
#define BW_PATCOST_H

#include <stddef.h>
#include <stdint.h>

enum { BW_PAT_FIND, BW_PAT_MATCH, BW_PAT_GMATCH, BW_PAT_GSUB };

/* The largest cap the bounds take (they keep counts in 32 bits) */
#define BW_PAT_MAXCAP ((uint64_t)0x7fffffff)

typedef struct bw_patcall {
  int fn;            /* BW_PAT_* */
  const char *s;     /* the subject, s[n] readable (a Lua string's '\0') */
  size_t n;
  const char *p;     /* the pattern as given (a leading '^' included) */
  size_t lp;
  size_t init;       /* 0-based place of the first try, at most n (gsub: 0) */
  uint64_t per_match; /* steps each match adds: gsub's replacement, pushing captures */
} bw_patcall;

/* Whether find takes p as plain text: no character of "^$*+?.([%-" */
int bw_pat_plain(const char *p, size_t lp);

/* The bound from the pattern and the subject's length alone: the worst
 * subject of that length. O(lp), no memory. */
uint64_t bw_pat_coarse(const bw_patcall *c, uint64_t cap);

/* What bw_pat_bound costs itself, in steps, and the memory it needs in
 * *bytes (0 when it cannot run: a subject of 2^30 bytes or more). */
uint64_t bw_pat_plan(const bw_patcall *c, size_t *bytes);

/* The bound from the subject's bytes too: which places each item can
 * match, how long each run of a repeated class is, where a try is sure to
 * succeed (the search stops there) and, for gmatch and gsub, where each
 * match ends. O(items x subject); mem is the *bytes bw_pat_plan gave. */
uint64_t bw_pat_bound(const bw_patcall *c, void *mem, uint64_t cap);

/* For tests, after bw_pat_bound on mem: what it knows of a try of the
 * whole pattern at place i (init <= i <= n): 'F' it fails, 'S' it
 * matches up to *end, 'U' it matches (where it ends is not known), 'M'
 * either. */
int bw_pat_state(const bw_patcall *c, const void *mem, size_t i, size_t *end);

#endif
