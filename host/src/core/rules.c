/*
 * rules.c - declared path rules: the globs policies declare, compiled once
 * and matched on every entry by the walker threads, so a search or a
 * listing skips what a direct read of that entry would deny.
 *
 * A rule is patterns, excepts, a mask of operations and an id. Most
 * policy globs are literal but for a leading "**" or a trailing "**", and
 * those are compared as strings rather than run through the matcher:
 *   NAME    "**" "/.env"          the basename is .env. All rules share one
 *                                 hash of these: one hash per entry.
 *   SUFFIX  "**" "/" "*.pem"      the basename ends with .pem
 *   TAIL    "**" "/.git/config"   the path is, or ends with "/", .git/config
 *   INSIDE  "**" "/.ssh/" "**"    "/.ssh/" in "/" + path, something after
 *   EXACT   "secret"              the path is secret
 *   UNDER   "secret/" "**"        the path starts with "secret/", and more
 *   BASE    "**" "/id_*" (any other single segment): globmatch.c's matcher on
 *           the basename only
 *   PATH    anything else: the whole path through globmatch.c's matcher.
 * TAIL, INSIDE, EXACT and UNDER are only tried when one of the path's
 * names may be their first one (bit sets of first bytes and of hashes),
 * SUFFIX only when the basename's last byte may end one, so a path that
 * names no .git, .ssh or secret and ends in no ".pem" byte costs a few
 * table lookups.
 * Each says exactly what globmatch.c says of the whole pattern ("**" matches
 * zero or more directories; a trailing one at least one name; "*" matches
 * dots too), which test_rules.c checks. Rules are tried in the order
 * added; the first that matches wins.
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

enum { K_NAME, K_SUFFIX, K_TAIL, K_INSIDE, K_EXACT, K_UNDER, K_BASE, K_PATH };

typedef struct pat {
  int kind;
  char *name; /* the literal of NAME ... UNDER */
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
  int root; /* the root whose objects it is about (bw_rules_scope), -1: any */
  int needs; /* NEED_*: what a path must have for its patterns to be tried */
} rule;

enum { NEED_ANY = 1, NEED_LIT = 2, NEED_SUF = 4 };

typedef struct slot {
  uint32_t h;
  int rule; /* -1: empty, -2: taken out */
  const char *name;
  size_t len;
} slot;

struct bw_rules {
  rule *v;
  int n, cap;
  int *slow; /* rules with a pattern other than a NAME, in order */
  int nslow;
  slot *tab; /* NAME patterns of every rule, open addressing */
  size_t mask, nnames;
  uint64_t first[16]; /* hashes of the first names of TAIL ... UNDER */
  uint64_t fbyte[4];  /* their first bytes, folded */
  uint64_t lbyte[4];  /* last bytes of SUFFIX literals, folded */
  uint64_t nbyte[4];  /* first bytes of NAMEs, folded */
  int nfirst;
};

static void set_bit(uint64_t *v, unsigned b) { v[b >> 6] |= (uint64_t)1 << (b & 63); }
static int has_bit(const uint64_t *v, unsigned b) { return (int)(v[b >> 6] >> (b & 63) & 1); }

static int is_lit_path(int kind) {
  return kind == K_TAIL || kind == K_INSIDE || kind == K_EXACT || kind == K_UNDER;
}

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

/* Skip the leading "/", "./" and "**" "/" of a pattern; *star2 says
 * whether there was a "**". */
static const char *lead(const char *p, size_t n, size_t *rest, int *star2) {
  size_t i = 0;
  *star2 = 0;
  for (;;) {
    if (n - i >= 1 && p[i] == '/') i += 1;
    else if (n - i >= 2 && p[i] == '.' && p[i + 1] == '/') i += 2;
    else if (n - i >= 3 && !memcmp(p + i, "**/", 3)) i += 3, *star2 = 1;
    else break;
  }
  *rest = n - i;
  return p + i;
}

/* Names none of which is empty, "." or "..", as globmatch.c keeps them. */
static int plain(const char *s, size_t n) {
  if (!n) return 0;
  for (size_t i = 0, start = 0; i <= n; i++) {
    if (i < n && s[i] != '/') continue;
    size_t l = i - start;
    if (!l || (l == 1 && s[start] == '.') || (l == 2 && !memcmp(s + start, "..", 2)))
      return 0;
    start = i + 1;
  }
  return 1;
}

/* Plain names without glob syntax: what globmatch.c matches byte for byte. */
static int literal(const char *s, size_t n) {
  return n && strcspn(s, "*?[]\\{}") >= n && plain(s, n);
}

/* The kind of a pattern that globmatch.c compiled; its literal in *lit. */
static int kind_of(const char *p, size_t n, const char **lit, size_t *ll) {
  int star2;
  size_t rl;
  const char *r = lead(p, n, &rl, &star2);
  int one = !memchr(r, '/', rl), inside = rl > 3 && !memcmp(r + rl - 3, "/**", 3);
  *lit = r;
  *ll = rl;
  if (literal(r, rl)) return !star2 ? K_EXACT : one ? K_NAME : K_TAIL;
  if (inside && literal(r, rl - 3)) {
    *ll = rl - 3;
    return star2 ? K_INSIDE : K_UNDER;
  }
  if (!star2 || !one || !plain(r, rl) || (rl == 2 && !memcmp(r, "**", 2)))
    return K_PATH;
  if (r[0] == '*' && literal(r + 1, rl - 1)) {
    *lit = r + 1;
    *ll = rl - 1;
    return K_SUFFIX;
  }
  return K_BASE;
}

/* Compile one glob into *t, of the cheapest kind that means the same. */
static int compile_pat(pat *t, const char *p, int fold, const char **why) {
  size_t n = strlen(p), ll;
  const char *lit;
  int flags = BW_GLOB_BRACES | (fold ? BW_GLOB_CASEFOLD : 0);
  t->kind = kind_of(p, n, &lit, &ll);
  if (t->kind != K_BASE && t->kind != K_PATH) {
    /* a literal kind is compared as a string, never run: the pattern is
     * checked as globmatch.c would compile it, not compiled (most policy
     * globs are such; a policy's are checked at every start) */
    if (bw_glob_check(p, n, flags, why)) return BW_INVALID_ARGUMENT;
  } else {
    bw_glob *whole = bw_glob_compile(p, n, flags, why); /* checks it once */
    if (!whole) return BW_INVALID_ARGUMENT;
    if (t->kind == K_BASE && !(t->g = bw_glob_compile(lit, ll, flags, why)))
      t->kind = K_PATH;
    if (t->kind == K_PATH) {
      t->g = whole;
      return BW_OK;
    }
    bw_glob_free(whole);
    return BW_OK;
  }
  if (!(t->name = malloc(ll + 1))) {
    *why = "out of memory";
    return BW_ENOMEM;
  }
  memcpy(t->name, lit, ll);
  t->name[ll] = '\0';
  t->len = ll;
  return BW_OK;
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
  set_bit(rs->nbyte, (unsigned)fold((unsigned char)t->name[0]));
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
  r->root = -1;
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
  for (int i = 0; i < r->pats.n; i++) {
    const pat *t = &r->pats.v[i];
    if (t->kind == K_SUFFIX) {
      set_bit(rs->lbyte, (unsigned)fold((unsigned char)t->name[t->len - 1]));
      r->needs |= NEED_SUF;
    } else if (is_lit_path(t->kind)) {
      const char *e = memchr(t->name, '/', t->len);
      set_bit(rs->first, hash_folded(t->name, e ? (size_t)(e - t->name) : t->len) & 1023);
      set_bit(rs->fbyte, (unsigned)fold((unsigned char)t->name[0]));
      rs->nfirst++;
      r->needs |= NEED_LIT;
    } else if (t->kind != K_NAME) {
      r->needs |= NEED_ANY;
    }
  }
  if (slow) rs->slow[rs->nslow++] = rs->n;
  rs->n++;
  return BW_OK;
}

/* ---- matching ---- */

typedef struct subject {
  const char *path, *base;
  size_t len, blen;
  int lit; /* a name of the path may start a TAIL ... UNDER of the rules */
  int suf; /* the basename may end with a SUFFIX of the rules */
} subject;

/* Is the literal a whole run of names somewhere in the path, with at
 * least one name after it? */
static int inside(const pat *t, const subject *s, int fold) {
  const char *p = s->path, *end = p + s->len;
  while (p + t->len + 1 < end) {
    if (p[t->len] == '/' && same_name(t->name, p, t->len, fold)) return 1;
    const char *q = memchr(p, '/', (size_t)(end - p));
    if (!q) return 0;
    p = q + 1;
  }
  return 0;
}

static int pat_match(const pat *t, const subject *s, int fold) {
  size_t n = t->len;
  switch (t->kind) {
  case K_NAME:
    return n == s->blen && same_name(t->name, s->base, n, fold);
  case K_SUFFIX:
    return n <= s->blen && same_name(t->name, s->base + s->blen - n, n, fold);
  case K_TAIL:
    return (n == s->len || (n < s->len && s->path[s->len - n - 1] == '/')) &&
           same_name(t->name, s->path + s->len - n, n, fold);
  case K_INSIDE:
    return inside(t, s, fold);
  case K_EXACT:
    return n == s->len && same_name(t->name, s->path, n, fold);
  case K_UNDER:
    return n + 1 < s->len && s->path[n] == '/' && same_name(t->name, s->path, n, fold);
  case K_BASE:
    return bw_glob_matchn(t->g, s->base, s->blen);
  default:
    return bw_glob_matchn(t->g, s->path, s->len);
  }
}

/* Does one of the list's patterns match? For a rule's own patterns
 * (own), NAMEs were looked up in the hash and the literal kinds only need
 * trying if s->lit or s->suf says so; excepts are tried in full. */
static int any(const plist *l, const subject *s, int fold, int own) {
  for (int i = 0; i < l->n; i++) {
    int k = l->v[i].kind;
    if (own && (k == K_NAME || (!s->lit && is_lit_path(k)) || (!s->suf && k == K_SUFFIX)))
      continue;
    if (pat_match(&l->v[i], s, fold)) return 1;
  }
  return 0;
}

static int excepted(const rule *r, const subject *s) {
  return r->excs.n && any(&r->excs, s, r->fold, 0);
}

void bw_rules_scope(bw_rules *rs, int root) {
  if (rs && rs->n) rs->v[rs->n - 1].root = root;
}

int bw_rules_match(const bw_rules *rs, const char *path, size_t len, int op) {
  return bw_rules_match_in(rs, -1, path, len, op);
}

/* Is rule ru about objects of root? */
static int in_scope(const rule *ru, int root) { return ru->root < 0 || root < 0 || ru->root == root; }

int bw_rules_match_in(const bw_rules *rs, int root, const char *path, size_t len, int op) {
  if (!rs || !rs->n) return -1;
  while (len > 1 && path[len - 1] == '/') len--; /* "a/" is a, as in globmatch.c */
  subject s = {path, path, len, 0, 0, 0};
  for (const char *p = path, *end = path + len;;) { /* the names */
    const char *q = memchr(p, '/', (size_t)(end - p));
    size_t l = q ? (size_t)(q - p) : (size_t)(end - p);
    if (rs->nfirst && l && has_bit(rs->fbyte, (unsigned)fold((unsigned char)*p)) &&
        has_bit(rs->first, hash_folded(p, l) & 1023))
      s.lit = 1;
    if (!q) {
      s.base = p;
      s.blen = l;
      break;
    }
    p = q + 1;
  }
  s.suf = s.blen && has_bit(rs->lbyte, (unsigned)fold((unsigned char)s.base[s.blen - 1]));
  int best = INT_MAX;
  if (rs->nnames && s.blen && has_bit(rs->nbyte, (unsigned)fold((unsigned char)*s.base))) {
    /* the lowest rule whose NAME is the basename */
    uint32_t h = hash_folded(s.base, s.blen);
    for (size_t k = h & rs->mask; rs->tab[k].rule != -1; k = (k + 1) & rs->mask) {
      const slot *t = &rs->tab[k];
      int r = t->rule;
      if (r < 0 || r >= best || t->h != h || t->len != s.blen) continue;
      const rule *ru = &rs->v[r];
      if ((ru->ops & op) && in_scope(ru, root) && same_name(t->name, s.base, s.blen, ru->fold) &&
          !excepted(ru, &s))
        best = r;
    }
  }
  for (int i = 0; i < rs->nslow && rs->slow[i] < best; i++) {
    const rule *ru = &rs->v[rs->slow[i]];
    int try = (ru->needs & NEED_ANY) || ((ru->needs & NEED_LIT) && s.lit) ||
              ((ru->needs & NEED_SUF) && s.suf);
    if (try && (ru->ops & op) && in_scope(ru, root) && any(&ru->pats, &s, ru->fold, 1) &&
        !excepted(ru, &s)) {
      best = rs->slow[i];
      break;
    }
  }
  return best == INT_MAX ? -1 : rs->v[best].id;
}
