/*
 * patcost.c - an upper bound on the work of Lua 5.4's pattern functions,
 * computed before they run, for the policy sandbox (patcost.h).
 *
 * The model. Lua's matcher (reference manual, 6.4.1) reads a pattern as a
 * sequence of items and matches them left to right from a start,
 * backtracking: an item that can take several lengths (x*, x+, x-, x?)
 * tries the rest of the pattern after each length it can take, in its own
 * order (longest first for * and +, shortest first for -, one byte first
 * for ?), until the rest matches. Every other item has at most one way on:
 * a single class x, a capture's opening or closing, %f[set], %bxy (a scan
 * forward to the balancing y), %1-%9 (a compare of the capture's bytes).
 * find and match try each start from init until one matches (only init
 * under a leading ^); gmatch and gsub try each place, go on from the end
 * of a match, and may try a place twice (an empty match where the last
 * one ended is not taken, and the next place is tried).
 *
 * So the work of a try of items k.. at place i, W(k, i), is at most the
 * item's own work there plus W(k+1, j) for each place j it goes on from.
 * Computed from the last item back to the first, over every place of the
 * subject at once, that is an upper bound the subject's bytes keep close:
 * x* at i goes on from each place of the run of x's that starts at i, not
 * from every place of the subject; x goes nowhere where the byte is not
 * an x. Each place also keeps what is known of the try's result (fails,
 * matches up to a known end, matches, unknown): a try sure to match ends
 * the tries of the item before it, and the search of find and match; with
 * the ends known, the walk of gmatch and gsub over the subject is followed
 * exactly, and from the first place where it is not, every later place
 * counts twice.
 *
 * bw_pat_coarse needs no subject: every repeated item may take every
 * length and every class matches, so each * multiplies the rest by the
 * subject's length. Cheap, an upper bound for every subject of that
 * length, and loose on long ones: the sandbox takes the smaller of the two.
 *
 * Where the model knows less it takes more: %b and back-references may
 * end anywhere after their place (the bound takes the costliest), and
 * their result is unknown. Classes, sets and %f are exact: the bytes a
 * class matches are worked out as the manual says, with <ctype.h> as the
 * matcher has it, and the specs check them against the stock matcher.
 *
 * A step is 0.2 to 0.7 ns of the stock matcher (Debian's liblua5.4 on
 * x86-64), measured on the costly shapes (nested repetitions, %b,
 * back-references, long sets and literals, captures, many short runs).
 */
#include <ctype.h>
#include <string.h>

#include "patcost.h"

enum {
  ENTRY = 4,   /* an item reached, beyond twice its length (finding its end, a test) */
  CALL = 6,    /* one try of the rest of the pattern after a repeated item */
  CAPTURE = 8, /* a capture opened or closed (closing: and one per capture
                * opened before it, which it looks through; at most 32) */
  FINISH = 2,  /* the end of the pattern reached, or $ tested */
  START = 12,  /* one start of find, match, gmatch or gsub */
  CELL = 4,    /* bw_pat_bound's own work per item and place */
};

enum { I_CLASS, I_OPEN, I_CLOSE, I_EOS, I_BALANCE, I_FRONTIER, I_BACKREF, I_ERROR };

typedef struct item {
  size_t at, len; /* its text in the pattern, without the repetition mark */
  int kind, rep;  /* rep: 0, '?', '*', '+' or '-' (I_CLASS only) */
  int opens;      /* captures opened before it (up to 32) */
} item;

int bw_pat_plain(const char *p, size_t lp) {
  for (size_t i = 0; i < lp; i++)
    switch (p[i]) {
    case '^': case '$': case '*': case '+': case '?':
    case '.': case '(': case '[': case '%': case '-':
      return 0;
    }
  return 1;
}

static int anchored(const bw_patcall *c) {
  return c->fn != BW_PAT_GMATCH && c->lp > 0 && c->p[0] == '^';
}

/* ---- reading the pattern ---- */

/* The index of the ']' that closes the set opening at p[at], 0 if none
 * does (the matcher raises). The first element after "[" or "[^" counts
 * whatever it is ("[]]" is the set of "]"), and '%' takes the next byte
 * along. */
static size_t set_close(const char *p, size_t lp, size_t at) {
  size_t j = at + 1;
  if (j < lp && p[j] == '^') j++;
  for (;;) {
    if (j >= lp) return 0;
    if (p[j] == '%') j++;
    if (++j >= lp) return 0;
    if (p[j] == ']') return j;
  }
}

/* The item at p[at] into *it; returns where the next one starts. An item
 * the matcher would raise on is I_ERROR and ends the pattern: nothing
 * after it runs. */
static size_t parse(const char *p, size_t lp, size_t at, item *it) {
  size_t close;
  it->at = at;
  it->len = 1;
  it->rep = 0;
  switch (p[at]) {
  case '(':
    it->kind = I_OPEN;
    if (at + 1 < lp && p[at + 1] == ')') it->len = 2; /* a position capture */
    return at + it->len;
  case ')':
    it->kind = I_CLOSE;
    return at + 1;
  case '$':
    if (at + 1 < lp) break; /* a plain '$' */
    it->kind = I_EOS;
    return lp;
  case '%':
    if (at + 1 >= lp) break;
    if (p[at + 1] == 'b') {
      if (at + 3 >= lp) break;
      it->kind = I_BALANCE;
      it->len = 4;
      return at + 4;
    }
    if (p[at + 1] == 'f') {
      if (at + 2 >= lp || p[at + 2] != '[' || !(close = set_close(p, lp, at + 2))) break;
      it->kind = I_FRONTIER;
      it->len = close + 1 - at;
      return close + 1;
    }
    it->len = 2;
    if (p[at + 1] >= '0' && p[at + 1] <= '9') {
      it->kind = I_BACKREF;
      return at + 2;
    }
    goto single;
  case '[':
    if (!(close = set_close(p, lp, at))) break;
    it->len = close + 1 - at;
    goto single;
  default:
    goto single;
  }
  if (p[at] != '$') { /* a malformed %, %b, %f or set */
    it->kind = I_ERROR;
    return lp;
  }
single:
  it->kind = I_CLASS;
  size_t q = at + it->len;
  if (q < lp && (p[q] == '?' || p[q] == '*' || p[q] == '+' || p[q] == '-')) it->rep = p[q++];
  return q;
}

static size_t count_items(const bw_patcall *c) {
  item it;
  size_t k = 0;
  for (size_t at = (size_t)anchored(c); at < c->lp; k++) at = parse(c->p, c->lp, at, &it);
  return k;
}

/* ---- which bytes a class matches ---- */

typedef unsigned char byteset[32];

static int has(const byteset b, unsigned char c) {
  return b[c >> 3] >> (c & 7) & 1;
}

static void put(byteset b, unsigned c) {
  b[c >> 3] |= (unsigned char)(1u << (c & 7));
}

/* %a %c %d ... as <ctype.h> has them, and %z: the byte 0 (deprecated,
 * still read by 5.4) */
static const char LETTERS[] = "acdglpsuwxz";

typedef struct classes {
  unsigned made;  /* bit x: set[x] is filled in */
  byteset set[sizeof LETTERS - 1];
} classes;

static int class_test(int x, int c) {
  switch (x) {
  case 0: return isalpha(c);
  case 1: return iscntrl(c);
  case 2: return isdigit(c);
  case 3: return isgraph(c);
  case 4: return islower(c);
  case 5: return ispunct(c);
  case 6: return isspace(c);
  case 7: return isupper(c);
  case 8: return isalnum(c);
  case 9: return isxdigit(c);
  default: return c == 0;
  }
}

/* Add what %<l> matches to b: a class letter (upper case: the
 * complement), else the byte l itself. */
static void add_class(classes *cs, byteset b, unsigned char l) {
  const char *k = l ? memchr(LETTERS, tolower(l), sizeof LETTERS - 1) : NULL;
  if (!k) {
    put(b, l);
    return;
  }
  int x = (int)(k - LETTERS);
  if (!(cs->made & 1u << x)) {
    memset(cs->set[x], 0, sizeof(byteset));
    for (int c = 0; c < 256; c++)
      if (class_test(x, c)) put(cs->set[x], (unsigned)c);
    cs->made |= 1u << x;
  }
  for (int i = 0; i < 32; i++) b[i] |= isupper(l) ? (unsigned char)~cs->set[x][i] : cs->set[x][i];
}

/* The set p[open..close] ('[' to ']'): its elements are %x, a range a-z
 * (the '-' neither first nor last), or a byte; '^' first: the complement. */
static void add_set(classes *cs, byteset b, const char *p, size_t open, size_t close) {
  byteset in = {0};
  size_t k = open + 1;
  int neg = p[k] == '^';
  k += (size_t)neg;
  while (k < close) {
    unsigned char lo = (unsigned char)p[k];
    if (lo == '%') {
      add_class(cs, in, (unsigned char)p[k + 1]);
      k += 2;
    } else if (k + 2 < close && p[k + 1] == '-') {
      for (unsigned v = lo; v <= (unsigned char)p[k + 2]; v++) put(in, v);
      k += 3;
    } else {
      put(in, lo);
      k++;
    }
  }
  for (int i = 0; i < 32; i++) b[i] |= neg ? (unsigned char)~in[i] : in[i];
}

/* The bytes a single-class item matches */
static void item_bytes(classes *cs, const char *p, const item *it, byteset b) {
  memset(b, 0, sizeof(byteset));
  switch (p[it->at]) {
  case '.':
    memset(b, 0xff, sizeof(byteset));
    break;
  case '%':
    add_class(cs, b, (unsigned char)p[it->at + 1]);
    break;
  case '[':
    add_set(cs, b, p, it->at, it->at + it->len - 1);
    break;
  default:
    put(b, (unsigned char)p[it->at]);
  }
}

/* ---- the bound without the subject ---- */

static double clamp(double v) {
  return v < 1e30 ? v : 1e30;
}

static uint64_t to_cap(double v, uint64_t cap) {
  return v < (double)cap ? (uint64_t)v + 1 : cap;
}

uint64_t bw_pat_coarse(const bw_patcall *c, uint64_t cap) {
  double places = (double)(c->n - c->init) + 1;
  double a = 0, b = 1; /* W(0) = a + b * W(k) for the item k reached */
  item it;
  int opens = 0;
  for (size_t at = (size_t)anchored(c); at < c->lp && b > 0;) {
    at = parse(c->p, c->lp, at, &it);
    double looks = opens; /* a closing looks through the captures opened */
    if (it.kind == I_OPEN && opens < 32) opens++;
    double len = (double)it.len, te = 2 * len + ENTRY, tt = len + 1, ia, ib = 1;
    switch (it.kind) {
    case I_CLASS:
      switch (it.rep) {
      case '?': ia = te + CALL, ib = 2; break;
      case '*': case '+': ia = te + places * (tt + CALL), ib = places; break;
      case '-': ia = te + places * (tt + CALL), ib = places; break;
      default: ia = te;
      }
      break;
    case I_OPEN: ia = CAPTURE; break;
    case I_CLOSE: ia = CAPTURE + looks; break;
    case I_BALANCE: ia = 2 + places + CALL; break;
    case I_BACKREF: ia = 4 + places; break;
    case I_FRONTIER: ia = te + tt; break;
    default: ia = FINISH, ib = 0; /* $ at the end, or an error: nothing after */
    }
    a = clamp(a + b * ia);
    b = clamp(b * ib);
  }
  double w = clamp(a + b * FINISH) + START, total;
  if (c->fn == BW_PAT_FIND || c->fn == BW_PAT_MATCH)
    total = anchored(c) ? w : places * w;
  else if (anchored(c)) /* gsub: one try */
    total = w + (double)c->per_match + places;
  else /* every place tried at most twice, at most one match ending at each */
    total = 2 * places * w + places * (double)c->per_match + (c->fn == BW_PAT_GSUB ? places : 0);
  return to_cap(clamp(total), cap);
}

/* ---- the bound with the subject ---- */

/* What one place knows: w, the bound of the work of a try of items k..
 * there, and se: what the try gives, with the end of a sure match. */
typedef struct cell {
  uint32_t w, se;
} cell;

enum { ST_F, ST_S, ST_U, ST_M }; /* fails, matches to the end, matches, unknown */
#define SE(st, end) ((uint32_t)(st) << 30 | (uint32_t)(end))
#define END_OF(se) ((size_t)((se) & 0x3fffffffu))

static int sure(uint32_t se) {
  return se >> 30 == ST_S || se >> 30 == ST_U;
}

/* What trying a, then b if a did not match, gives */
static uint32_t then(uint32_t a, uint32_t b) {
  switch (a >> 30) {
  case ST_F: return b;
  case ST_M: return sure(b) ? SE(ST_U, 0) : SE(ST_M, 0);
  default: return a;
  }
}

static uint32_t sat(uint64_t v, uint64_t cap) {
  return (uint32_t)(v < cap ? v : cap);
}

static const uint32_t FAILS = SE(ST_F, 0);

uint64_t bw_pat_plan(const bw_patcall *c, size_t *bytes) {
  size_t places = c->n - c->init + 1, k = count_items(c);
  *bytes = 0;
  if (c->n >= (size_t)1 << 30 || k > SIZE_MAX / 2 / sizeof(item)) return 0;
  *bytes = places * sizeof(cell) + k * sizeof(item);
  double work = ((double)k + 2) * (double)places * CELL + 2 * (double)c->lp + 256 * (sizeof LETTERS - 1) + 32 * (double)k;
  return to_cap(clamp(work), UINT64_MAX / 2);
}

/* Turn the cells of items k+1.. into those of item `it` onward, place n
 * down to base (cl[0] is place base). */
static void step(const bw_patcall *c, classes *cs, const item *it, cell *cl, size_t base,
                 uint64_t cap) {
  const unsigned char *s = (const unsigned char *)c->s;
  size_t n = c->n;
  uint64_t te = 2 * (uint64_t)it->len + ENTRY, tt = (uint64_t)it->len + 1;
  if (te > cap) te = cap;
  if (tt > cap) tt = cap;
  byteset b;
  cell next = {0, FAILS}; /* the rest's cell at i + 1, before it was replaced */
  uint64_t acc = 0, run = 0, most = 0;
  uint32_t ase = FAILS;
  switch (it->kind) {
  case I_CLASS:
    item_bytes(cs, c->p, it, b);
    for (size_t i = n + 1; i-- > base;) {
      cell cur = cl[i - base], out;
      int m = i < n && has(b, s[i]);
      uint64_t w = 0;
      switch (it->rep) {
      case 0: /* on at i + 1, or nowhere */
        out.w = sat(m ? te + next.w : te, cap);
        out.se = m ? next.se : FAILS;
        break;
      case '?': /* at i + 1 first, then at i */
        if (m) {
          w = te + CALL + next.w + (sure(next.se) ? 0 : CALL + cur.w);
          out.se = then(next.se, cur.se);
        } else {
          w = te + cur.w;
          out.se = cur.se;
        }
        out.w = sat(w, cap);
        break;
      case '-': /* at i first; then one more x and on, while the rest fails */
        w = CALL + cur.w;
        out.se = cur.se;
        if (!sure(cur.se)) {
          w += tt;
          if (m) {
            w += acc;
            out.se = then(cur.se, ase);
          }
        }
        acc = sat(w, cap);
        ase = out.se;
        out.w = sat(te + w, cap);
        break;
      default: /* '*' and '+': the run of x's counted, then tries from its end back */
        if (it->rep == '+') { /* one x, then x* from i + 1 */
          out.w = sat(m ? te + (run + 1) * tt + acc : te, cap);
          out.se = m ? ase : FAILS;
        }
        if (m) {
          run++;
          if (!sure(ase)) acc = sat(acc + CALL + cur.w, cap);
          ase = then(ase, cur.se);
        } else {
          run = 0;
          acc = sat(CALL + (uint64_t)cur.w, cap);
          ase = cur.se;
        }
        if (it->rep == '*') {
          out.w = sat(te + (m ? (run + 1) * tt : 0) + acc, cap);
          out.se = ase;
        }
      }
      cl[i - base] = out;
      next = cur;
    }
    break;
  case I_OPEN:
  case I_CLOSE:
    for (size_t i = base; i <= n; i++)
      cl[i - base].w = sat(CAPTURE + (uint64_t)it->opens + cl[i - base].w, cap);
    break;
  case I_EOS:
    for (size_t i = base; i <= n; i++) cl[i - base] = (cell){FINISH, i == n ? SE(ST_S, n) : FAILS};
    break;
  case I_BALANCE: { /* a scan to the end at worst, then on from one place after i */
    unsigned char open = (unsigned char)c->p[it->at + 2];
    for (size_t i = n + 1; i-- > base;) {
      cell cur = cl[i - base];
      if (i < n && s[i] == open) cl[i - base] = (cell){sat(2 + CALL + (n - i) + most, cap), SE(ST_M, 0)};
      else cl[i - base] = (cell){2, FAILS};
      if (cur.w > most) most = cur.w;
    }
    break;
  }
  case I_BACKREF: /* a compare of up to the rest of the subject, then on from one place */
    for (size_t i = n + 1; i-- > base;) {
      if (cl[i - base].w > most) most = cl[i - base].w;
      cl[i - base] = (cell){sat(4 + (n - i) + most, cap), SE(ST_M, 0)};
    }
    break;
  case I_FRONTIER: /* the byte before i out of the set, the one at i in it ('\0' past the ends) */
    memset(b, 0, sizeof b);
    add_set(cs, b, c->p, it->at + 2, it->at + it->len - 1);
    for (size_t i = base; i <= n; i++) {
      int edge = !has(b, i ? s[i - 1] : 0) && has(b, i < n ? s[i] : 0);
      cell cur = cl[i - base];
      cl[i - base] = edge ? (cell){sat(te + tt + cur.w, cap), cur.se} : (cell){sat(te + tt, cap), FAILS};
    }
    break;
  default: /* the matcher raises: nothing after it runs */
    for (size_t i = base; i <= n; i++) cl[i - base] = (cell){FINISH, FAILS};
  }
}

/* gmatch's and gsub's walk: a try at i; a match ending at e (not where
 * the last one ended) goes on at e, anything else at i + 1. */
static uint64_t walk(const bw_patcall *c, const cell *cl, uint64_t cap) {
  size_t base = c->init, n = c->n, i = base, last = SIZE_MAX;
  uint64_t total = 0, matches = 0;
  while (total < cap) {
    cell x = cl[i - base];
    total += START + (uint64_t)x.w;
    if (x.se >> 30 == ST_S && END_OF(x.se) != last) {
      matches++;
      i = last = END_OF(x.se);
      continue;
    }
    if (x.se >> 30 == ST_U || x.se >> 30 == ST_M) {
      /* not followed from here: this place may be tried again, every later
       * one twice, and each match ends further on than the last */
      total += START + (uint64_t)x.w;
      for (size_t j = i + 1; j <= n && total < cap; j++) total += 2 * (START + (uint64_t)cl[j - base].w);
      matches += n - i + 1;
      break;
    }
    if (i == n) break;
    i++;
  }
  if (c->per_match && matches > (cap - (total < cap ? total : cap)) / c->per_match) return cap;
  total += matches * c->per_match;
  return total + (c->fn == BW_PAT_GSUB ? n - base : 0);
}

uint64_t bw_pat_bound(const bw_patcall *c, void *mem, uint64_t cap) {
  if (cap > BW_PAT_MAXCAP) cap = BW_PAT_MAXCAP;
  size_t base = c->init, n = c->n, places = n - base + 1, k = 0;
  cell *cl = mem;
  item *items = (item *)(cl + places);
  int opens = 0;
  for (size_t at = (size_t)anchored(c); at < c->lp; k++) {
    at = parse(c->p, c->lp, at, &items[k]);
    items[k].opens = items[k].kind == I_CLOSE ? opens : 0;
    if (items[k].kind == I_OPEN && opens < 32) opens++;
  }
  for (size_t i = base; i <= n; i++) cl[i - base] = (cell){FINISH, SE(ST_S, i)};
  classes cs;
  cs.made = 0;
  while (k-- > 0) step(c, &cs, &items[k], cl, base, cap);
  uint64_t total = 0;
  if (c->fn == BW_PAT_GSUB && anchored(c)) /* one try */
    total = START + cl[0].w + (cl[0].se >> 30 == ST_F ? 0 : c->per_match) + places;
  else if (c->fn == BW_PAT_GMATCH || c->fn == BW_PAT_GSUB)
    total = walk(c, cl, cap);
  else /* find, match: every start up to the first that is sure to match */
    for (size_t i = base; i <= n && total < cap; i++) {
      total += START + (uint64_t)cl[i - base].w;
      if (anchored(c) || sure(cl[i - base].se)) break;
    }
  return total < cap ? total : cap;
}

int bw_pat_state(const bw_patcall *c, const void *mem, size_t i, size_t *end) {
  cell x = ((const cell *)mem)[i - c->init];
  *end = END_OF(x.se);
  return "FSUM"[x.se >> 30];
}
