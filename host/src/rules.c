/*
 * rules.c - declared path rules: the globs policies declare, compiled once
 * and matched on every entry by the walker threads, so a search or a
 * listing skips what a direct read of that entry would deny.
 *
 * A rule is patterns, excepts, a mask of operations and an id. Each glob
 * falls in one of three kinds:
 *   NAME  "**" "/.env": the basename is NAME. All rules share one hash of
 *         these, so thirty rules cost one hash of the basename per entry.
 *   BASE  "**" "/" "*.pem" (one segment): the basename matches it,
 *         glob.c's matcher run on the basename only.
 *   PATH  anything else: the whole path through glob.c's NFA.
 * Each is exactly what glob.c would say of the whole pattern ("**" matches
 * zero or more directories, so "**" "/X" holds iff the last name matches X).
 * Rules are tried in the order added; the first that matches wins.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

enum { K_NAME, K_BASE, K_PATH };

typedef struct pat {
  int kind;
  char *name; /* NAME */
  size_t len;
  bw_glob *g; /* BASE (the segment), PATH (the pattern) */
} pat;

typedef struct plist {
  pat *v;
  int n;
} plist;

typedef struct rule {
  plist pats, excs;
  int ops, fold, id;
} rule;

typedef struct slot {
  uint32_t h;
  int rule; /* -1: empty */
  const char *name;
  size_t len;
} slot;

struct bw_rules {
  rule *v;
  int n, cap;
  int *slow; /* rules with a BASE or PATH pattern, in order */
  int nslow;
  slot *tab; /* NAME patterns of every rule, open addressing */
  size_t mask, nnames;
};

static __thread int bad_index = INT_MIN;

int bw_rules_bad_index(void) { return bad_index; }

static int fold(int c) { return c >= 'A' && c <= 'Z' ? c + 32 : c; }

static uint32_t hash_folded(const char *s, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a */
  for (size_t i = 0; i < n; i++)
    h = (h ^ (uint32_t)fold((unsigned char)s[i])) * 16777619u;
  return h;
}

static int same_name(const char *a, const char *b, size_t n, int cf) {
  if (!cf) return memcmp(a, b, n) == 0;
  for (size_t i = 0; i < n; i++)
    if (fold((unsigned char)a[i]) != fold((unsigned char)b[i])) return 0;
  return 1;
}

/* ---- building ---- */

static void plist_free(plist *l) {
  for (int i = 0; i < l->n; i++) {
    free(l->v[i].name);
    bw_glob_free(l->v[i].g);
  }
  free(l->v);
  l->v = NULL;
  l->n = 0;
}

bw_rules *bw_rules_new(void) { return calloc(1, sizeof(bw_rules)); }

void bw_rules_free(bw_rules *rs) {
  if (!rs) return;
  for (int i = 0; i < rs->n; i++) {
    plist_free(&rs->v[i].pats);
    plist_free(&rs->v[i].excs);
  }
  free(rs->v);
  free(rs->slow);
  free(rs->tab);
  free(rs);
}

int bw_rules_count(const bw_rules *rs) { return rs ? rs->n : 0; }

int bw_rules_start(const bw_root *r, const char *rel, const char *base,
                   char *out, size_t *len) {
  if (!base) {
    int rc = bw_canonical(r, rel, out, BW_PATH_MAX + 1);
    if (rc) return rc;
    base = out;
  }
  while (base[0] == '.' && base[1] == '/') base += 2;
  while (base[0] == '/') base++;
  size_t n = strlen(base);
  while (n && base[n - 1] == '/') n--;
  if (n == 1 && base[0] == '.') n = 0;
  if (n > BW_PATH_MAX) return bw_fail(BW_INVALID_ARGUMENT, "path too long");
  memmove(out, base, n);
  out[n] = '\0';
  *len = n;
  return BW_OK;
}

/* The part of a pattern after its leading "**" "/" (and "./", "/"), or
 * NULL if it does not start with one. */
static const char *after_star2(const char *p, size_t n, size_t *rest) {
  size_t i = 0;
  int star2 = 0;
  for (;;) {
    if (n - i >= 1 && p[i] == '/') i += 1;
    else if (n - i >= 2 && p[i] == '.' && p[i + 1] == '/') i += 2;
    else if (n - i >= 3 && !memcmp(p + i, "**/", 3)) i += 3, star2 = 1;
    else break;
  }
  *rest = n - i;
  return star2 ? p + i : NULL;
}

/* Compile one glob into *t, of the cheapest kind that means the same. */
static int compile_pat(pat *t, const char *p, int fold, const char **why) {
  size_t n = strlen(p), rl;
  int flags = BW_GLOB_BRACES | (fold ? BW_GLOB_CASEFOLD : 0);
  bw_glob *whole = bw_glob_compile(p, n, flags, why); /* checks it once */
  if (!whole) return BW_INVALID_ARGUMENT;
  const char *rest = after_star2(p, n, &rl);
  int seg = rest && rl && !memchr(rest, '/', rl) &&
            !(rl == 2 && !memcmp(rest, "**", 2)) && !(rl == 1 && rest[0] == '.');
  t->kind = K_PATH;
  t->g = whole;
  if (!seg) return BW_OK;
  if (strcspn(rest, "*?[]\\{}") == rl) { /* a literal name */
    if (!(t->name = malloc(rl + 1))) goto nomem;
    memcpy(t->name, rest, rl + 1);
    t->len = rl;
    t->kind = K_NAME;
    t->g = NULL;
  } else {
    bw_glob *g = bw_glob_compile(rest, rl, flags, why);
    if (!g) goto nomem; /* the whole pattern compiled: only memory fails */
    t->kind = K_BASE;
    t->g = g;
  }
  bw_glob_free(whole);
  return BW_OK;
nomem:
  bw_glob_free(whole);
  t->g = NULL;
  *why = "out of memory";
  return BW_ENOMEM;
}

static int compile_list(plist *l, const char *const *src, int n, int fold,
                        int except, const char **why) {
  if (n <= 0) return BW_OK;
  if (!(l->v = calloc((size_t)n, sizeof *l->v))) {
    *why = "out of memory";
    return BW_ENOMEM;
  }
  for (int i = 0; i < n; i++) {
    int rc = src[i] ? compile_pat(&l->v[i], src[i], fold, why) : BW_INVALID_ARGUMENT;
    if (!src[i]) *why = "missing pattern";
    if (rc) {
      bad_index = except ? -(i + 1) : i;
      return rc;
    }
    l->n = i + 1;
  }
  return BW_OK;
}

static int tab_put(bw_rules *rs, int r, const pat *t) {
  if (2 * (rs->nnames + 1) > (rs->tab ? rs->mask + 1 : 0)) {
    size_t size = rs->tab ? 2 * (rs->mask + 1) : 16;
    slot *nt = malloc(size * sizeof *nt);
    if (!nt) return BW_ENOMEM;
    for (size_t i = 0; i < size; i++) nt[i].rule = -1;
    for (size_t i = 0; rs->tab && i <= rs->mask; i++) {
      if (rs->tab[i].rule < 0) continue;
      size_t k = rs->tab[i].h & (size - 1);
      while (nt[k].rule >= 0) k = (k + 1) & (size - 1);
      nt[k] = rs->tab[i];
    }
    free(rs->tab);
    rs->tab = nt;
    rs->mask = size - 1;
  }
  uint32_t h = hash_folded(t->name, t->len);
  size_t k = h & rs->mask;
  while (rs->tab[k].rule >= 0) k = (k + 1) & rs->mask;
  rs->tab[k] = (slot){h, r, t->name, t->len};
  rs->nnames++;
  return BW_OK;
}

int bw_rules_add(bw_rules *rs, const char *const *patterns, int npat,
                 const char *const *excepts, int nexc, int ops, int casefold,
                 int id, const char **why) {
  bad_index = INT_MIN;
  *why = NULL;
  if (npat < 1) *why = "a rule needs at least one pattern";
  else if (!ops || (ops & ~(BW_OP_READ | BW_OP_LIST | BW_OP_WRITE | BW_OP_DELETE)))
    *why = "ops must name read, list, write or delete";
  else if (id < 0) *why = "id must not be negative";
  if (*why) return bw_fail(BW_INVALID_ARGUMENT, *why);
  if (rs->n == rs->cap) {
    int c = rs->cap ? rs->cap * 2 : 16;
    rule *nv = realloc(rs->v, (size_t)c * sizeof *nv);
    int *ns = realloc(rs->slow, (size_t)c * sizeof *ns);
    if (nv) rs->v = nv;
    if (ns) rs->slow = ns;
    if (!nv || !ns) {
      *why = "out of memory";
      return BW_ENOMEM;
    }
    rs->cap = c;
  }
  rule *r = &rs->v[rs->n];
  memset(r, 0, sizeof *r);
  r->ops = ops;
  r->fold = !!casefold;
  r->id = id;
  int rc = compile_list(&r->pats, patterns, npat, r->fold, 0, why);
  if (!rc) rc = compile_list(&r->excs, excepts, nexc, r->fold, 1, why);
  int slow = 0, names = 0;
  for (int i = 0; !rc && i < r->pats.n; i++) {
    if (r->pats.v[i].kind != K_NAME) {
      slow = 1;
    } else {
      rc = tab_put(rs, rs->n, &r->pats.v[i]);
      names++;
    }
  }
  if (rc) {
    /* names of this rule already in the table point into it: take them out */
    for (size_t i = 0; names && i <= rs->mask; i++)
      if (rs->tab[i].rule == rs->n) rs->tab[i].rule = -2; /* a tombstone */
    plist_free(&r->pats);
    plist_free(&r->excs);
    if (rc == BW_ENOMEM) *why = "out of memory";
    return bw_fail(rc, *why);
  }
  if (slow) rs->slow[rs->nslow++] = rs->n;
  rs->n++;
  return BW_OK;
}

/* ---- matching ---- */

typedef struct subject {
  const char *path, *base;
  size_t len, blen;
} subject;

/* Does one of the list's patterns match? names: NAME patterns too. */
static int any(const plist *l, const subject *s, int fold, int names) {
  for (int i = 0; i < l->n; i++) {
    const pat *t = &l->v[i];
    if (t->kind == K_NAME) {
      if (names && t->len == s->blen && same_name(t->name, s->base, s->blen, fold))
        return 1;
    } else if (t->kind == K_BASE ? bw_glob_matchn(t->g, s->base, s->blen)
                                 : bw_glob_matchn(t->g, s->path, s->len)) {
      return 1;
    }
  }
  return 0;
}

static int excepted(const rule *r, const subject *s) {
  return r->excs.n && any(&r->excs, s, r->fold, 1);
}

int bw_rules_match(const bw_rules *rs, const char *path, size_t len, int op) {
  if (!rs || !rs->n) return -1;
  const char *slash = len ? memrchr(path, '/', len) : NULL;
  subject s = {path, slash ? slash + 1 : path, len, 0};
  s.blen = len - (size_t)(s.base - path);
  int best = INT_MAX;
  if (rs->nnames) { /* the lowest rule whose NAME is the basename */
    uint32_t h = hash_folded(s.base, s.blen);
    for (size_t k = h & rs->mask; rs->tab[k].rule != -1; k = (k + 1) & rs->mask) {
      const slot *t = &rs->tab[k];
      int r = t->rule;
      if (r < 0 || r >= best || t->h != h || t->len != s.blen) continue;
      const rule *ru = &rs->v[r];
      if ((ru->ops & op) && same_name(t->name, s.base, s.blen, ru->fold) &&
          !excepted(ru, &s))
        best = r;
    }
  }
  for (int i = 0; i < rs->nslow && rs->slow[i] < best; i++) {
    const rule *ru = &rs->v[rs->slow[i]];
    if ((ru->ops & op) && any(&ru->pats, &s, ru->fold, 0) && !excepted(ru, &s)) {
      best = rs->slow[i];
      break;
    }
  }
  return best == INT_MAX ? -1 : rs->v[best].id;
}
