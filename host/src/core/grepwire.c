/*
 * grepwire.c - grep's content matches chosen for a result, and written
 * straight as a reply: the `matches` array as JSON text and the lines as
 * a grep result shows them (path:line:text, context lines path-N-text,
 * "--" between groups), escaped as the inside of a JSON string. The JSON
 * is the bytes the encoder (ljson.c) writes for the table form: the same
 * escaping (jsonesc.c), the same key order (sorted), the same numbers.
 * The lines have one renderer (bw_gtext), which lsearch.c also feeds a
 * result's match tables (core.grep_lines), unescaped.
 *
 * The choice (bw_gsel) is shared with the binding that builds the tables
 * (lsearch.c), so max_results and max_result_bytes cut at the same match
 * whichever form a result takes.
 */
#include <stdlib.h>
#include <string.h>

#include "core.h"
#include "search.h"

/* prefix + path as grep names a file: a searched file itself (path "")
 * is the prefix without its trailing "/". Returns the length; out (room
 * for it) may be NULL. */
size_t bw_grep_path(const char *prefix, const char *path, char *out) {
  size_t pl = strlen(prefix), l = strlen(path);
  if (!l && pl > 1 && prefix[pl - 1] == '/') pl--;
  if (out) {
    memcpy(out, prefix, pl);
    memcpy(out + pl, path, l);
  }
  return pl + l;
}

void bw_gsel_init(bw_gsel *s, const bw_grep_res *r, const char *prefix,
                  size_t max, size_t max_bytes) {
  memset(s, 0, sizeof *s);
  s->r = r;
  s->prefix = prefix;
  s->room = max ? max : (size_t)-1;
  s->budget = max_bytes;
  s->capped = max_bytes > 0;
  s->plen = r->nfiles ? bw_grep_path(prefix, r->files[0]->item.path, NULL) : 0;
}

/* What a match costs in the result: its lines' (context included) */
static size_t cost_of(const bw_gsel *s, const bw_gfile *f, size_t b, size_t a) {
  size_t cost = 0;
  for (size_t k = b; k < a; k++) cost += bw_gline_cost(s->plen, f->lines[k].len);
  return cost;
}

int bw_gsel_next(bw_gsel *s, bw_gpick *p) {
  const bw_grep_res *r = s->r;
  while (s->room && !s->cut && s->file < r->nfiles) {
    const bw_gfile *f = r->files[s->file];
    size_t i = s->line;
    while (i < f->nlines && f->lines[i].kind != 'm') i++;
    if (i == f->nlines) { /* the next file */
      s->file++;
      s->line = 0;
      if (s->file < r->nfiles) s->plen = bw_grep_path(s->prefix, r->files[s->file]->item.path, NULL);
      continue;
    }
    size_t b = i, a = i + 1;
    while (b > 0 && f->lines[b - 1].kind == 'b') b--;
    while (a < f->nlines && f->lines[a].kind == 'a') a++;
    if (s->capped) {
      size_t cost = cost_of(s, f, b, a);
      if (cost > s->budget && s->n > 0) { /* never the very first */
        s->cut = 1;
        return 0;
      }
      s->budget = cost > s->budget ? 0 : s->budget - cost;
    }
    s->line = i + 1;
    s->room--;
    s->n++;
    p->f = f;
    p->b = b;
    p->m = i;
    p->a = a;
    p->first_of_file = s->last_file != s->file + 1;
    s->last_file = s->file + 1;
    return 1;
  }
  return 0;
}

int bw_grep_resume(const bw_grep_res *r, size_t shown, size_t *file, size_t *line) {
  size_t n = 0;
  for (size_t i = 0; i < r->nfiles; i++) {
    const bw_gfile *f = r->files[i];
    for (size_t k = 0; k < f->nlines; k++) {
      if (f->lines[k].kind != 'm') continue;
      if (n == shown) { /* the first one not shown */
        *file = i, *line = f->lines[k].line;
        return 1;
      }
      if (++n == shown) *file = i, *line = f->lines[k].line + 1;
    }
  }
  return shown > 0 && n >= shown;
}

/* ---- the writer ---- */

typedef bw_obuf obuf;

int bw_obuf_reserve(bw_obuf *o, size_t extra) {
  if (o->cap - o->n > extra) return 0;
  size_t cap = o->cap ? o->cap : 4096;
  while (cap - o->n <= extra) {
    if (cap > ((size_t)-1) / 2) return BW_ENOMEM;
    cap *= 2;
  }
  char *p = realloc(o->p, cap);
  if (!p) return BW_ENOMEM;
  bw_huge_advise(p, cap); /* a many-match reply: 2 MiB a fault, not 4 KiB */
  o->p = p;
  o->cap = cap;
  return 0;
}

void bw_obuf_int(bw_obuf *o, long long v) {
  char buf[24], *e = buf + sizeof buf, *p = e;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do *--p = (char)('0' + (int)(u % 10)); while (u /= 10);
  if (v < 0) *--p = '-';
  bw_obuf_put(o, p, (size_t)(e - p));
}

/* s escaped (no quotes), in blocks as the encoder does */
int bw_obuf_escape(bw_obuf *o, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    size_t chunk = (size_t)(end - p) < 65536 ? (size_t)(end - p) : 65536;
    if (bw_obuf_reserve(o, BW_JSON_WORST(chunk))) return BW_ENOMEM;
    o->n = (size_t)(bw_json_escape(o->p + o->n, &p, p + chunk, end) - o->p);
  }
  return 0;
}

#define ob_reserve bw_obuf_reserve
#define ob_put bw_obuf_put
#define ob_int bw_obuf_int
#define ob_escape bw_obuf_escape
#define OB_LIT BW_OB_LIT

static int ob_string(obuf *o, const char *s, size_t n) {
  if (ob_reserve(o, 1)) return BW_ENOMEM;
  OB_LIT(o, "\"");
  if (ob_escape(o, s, n) || ob_reserve(o, 1)) return BW_ENOMEM;
  OB_LIT(o, "\"");
  return 0;
}

/* A context array: the lines [from, to) as JSON strings */
static int json_lines(obuf *o, const bw_gfile *f, size_t from, size_t to) {
  if (ob_reserve(o, 1)) return BW_ENOMEM;
  OB_LIT(o, "[");
  for (size_t k = from; k < to; k++) {
    if (k > from) {
      if (ob_reserve(o, 1)) return BW_ENOMEM;
      OB_LIT(o, ",");
    }
    if (ob_string(o, bw_gline_text(f, &f->lines[k]), f->lines[k].len)) return BW_ENOMEM;
  }
  if (ob_reserve(o, 1)) return BW_ENOMEM;
  OB_LIT(o, "]");
  return 0;
}

/* One match as the encoder writes its table: keys sorted (after, before,
 * line, path, text); epath is the path already escaped. */
static int json_match(obuf *o, const bw_gpick *p, int context, const char *epath,
                      size_t elen) {
  const bw_gfile *f = p->f;
  if (ob_reserve(o, 16)) return BW_ENOMEM;
  OB_LIT(o, "{");
  if (context) {
    OB_LIT(o, "\"after\":");
    if (json_lines(o, f, p->m + 1, p->a) || ob_reserve(o, 16)) return BW_ENOMEM;
    OB_LIT(o, ",\"before\":");
    if (json_lines(o, f, p->b, p->m) || ob_reserve(o, 16)) return BW_ENOMEM;
    OB_LIT(o, ",");
  }
  if (ob_reserve(o, elen + 64)) return BW_ENOMEM;
  OB_LIT(o, "\"line\":");
  ob_int(o, (long long)f->lines[p->m].line);
  OB_LIT(o, ",\"path\":\"");
  ob_put(o, epath, elen);
  OB_LIT(o, "\",\"text\":");
  if (ob_string(o, bw_gline_text(f, &f->lines[p->m]), f->lines[p->m].len) || ob_reserve(o, 1))
    return BW_ENOMEM;
  OB_LIT(o, "}");
  return 0;
}

/* ---- the rendered lines (bw_gtext): grep's one renderer ---- */

/* s as the text takes it: escaped (esc) or as it is */
static int gt_put(bw_gtext *t, obuf *o, const char *s, size_t n) {
  if (t->esc) return ob_escape(o, s, n);
  if (ob_reserve(o, n)) return BW_ENOMEM;
  ob_put(o, s, n);
  return 0;
}

/* the line break before a line, unless it is the first */
static int gt_break(bw_gtext *t, obuf *o) {
  if (!t->raw) return 0;
  if (ob_reserve(o, 2)) return BW_ENOMEM;
  if (t->esc) OB_LIT(o, "\\n");
  else OB_LIT(o, "\n");
  t->raw += 1;
  return 0;
}

/* One line: path, sep, number, sep, text (t->ep, the path as written) */
static int gt_line(bw_gtext *t, char sep, long long line, const char *s, size_t n) {
  obuf *o = &t->buf;
  if (gt_break(t, o) || ob_reserve(o, t->elen + 32)) return BW_ENOMEM;
  size_t at = o->n;
  ob_put(o, t->ep, t->elen);
  ob_put(o, &sep, 1);
  ob_int(o, line);
  ob_put(o, &sep, 1);
  /* what this prefix is unescaped: the path's raw length, not its escape's */
  t->raw += (o->n - at) - t->elen + t->plen;
  if (gt_put(t, o, s, n)) return BW_ENOMEM;
  t->raw += n;
  return 0;
}

void bw_gtext_init(bw_gtext *t, int esc) {
  memset(t, 0, sizeof *t);
  t->esc = esc;
}

int bw_gtext_reserve(bw_gtext *t, size_t n) { return ob_reserve(&t->buf, n); }

int bw_gtext_match(bw_gtext *t, const char *path, size_t plen, long long line,
                   const bw_gstr *lines, size_t nb, size_t na, int context) {
  int new_path = !t->started || plen != t->plen || memcmp(path, t->path, plen);
  if (new_path) { /* the path as lines write it, made once a file */
    obuf raw = {t->path, 0, t->pcap}, ep = {t->ep, 0, t->ecap};
    int rc = ob_reserve(&raw, plen + 1);
    t->path = raw.p, t->pcap = raw.cap;
    if (rc) return BW_ENOMEM;
    memcpy(t->path, path, plen);
    t->plen = plen;
    rc = t->esc ? ob_escape(&ep, path, plen) : ob_reserve(&ep, plen + 1);
    t->ep = ep.p, t->ecap = ep.cap;
    if (rc) return BW_ENOMEM;
    if (!t->esc) memcpy(t->ep, path, plen);
    t->elen = t->esc ? ep.n : plen;
  }
  long long first = line - (long long)nb;
  if (context && t->started && (new_path || first > t->last_line + 1)) {
    obuf *o = &t->buf;
    if (gt_break(t, o) || ob_reserve(o, 2)) return BW_ENOMEM; /* never first: started */
    OB_LIT(o, "--");
    t->raw += 2;
  }
  for (size_t k = 0; k < nb + 1 + na; k++) {
    long long n = k < nb ? first + (long long)k : line + (long long)(k - nb);
    if (gt_line(t, k == nb ? ':' : '-', n, lines[k].s, lines[k].len)) return BW_ENOMEM;
  }
  t->started = 1;
  t->last_line = line + (long long)na;
  return 0;
}

char *bw_gtext_take(bw_gtext *t, size_t *len, size_t *raw) {
  char *p = t->buf.p;
  *len = t->buf.n;
  if (raw) *raw = t->raw;
  t->buf.p = NULL;
  bw_gtext_free(t);
  return p;
}

void bw_gtext_free(bw_gtext *t) {
  free(t->buf.p);
  free(t->path);
  free(t->ep);
  free(t->scratch);
  memset(t, 0, sizeof *t);
}

/* A pick's lines [b, a) as the writer takes them */
static int text_pick(bw_gtext *t, const bw_gpick *p, int context, const char *path, size_t plen) {
  const bw_gfile *f = p->f;
  size_t n = p->a - p->b;
  if (n > t->nscratch) {
    bw_gstr *s = realloc(t->scratch, n * sizeof *s);
    if (!s) return BW_ENOMEM;
    t->scratch = s, t->nscratch = n;
  }
  for (size_t k = 0; k < n; k++)
    t->scratch[k] = (bw_gstr){bw_gline_text(f, &f->lines[p->b + k]), f->lines[p->b + k].len};
  return bw_gtext_match(t, path, plen, (long long)f->lines[p->m].line, t->scratch, p->m - p->b,
                        p->a - p->m - 1, context);
}

int bw_grep_wire(const bw_grep_res *r, const char *prefix, size_t max, size_t max_bytes,
                 int context, int want_text, bw_grep_wire_out *w) {
  memset(w, 0, sizeof *w);
  obuf js = {0}, path = {0}, ep = {0};
  bw_gtext tx;
  bw_gtext_init(&tx, 1);
  size_t want = 0; /* a first guess of the sizes, so big results grow once */
  for (size_t i = 0; i < r->nfiles; i++) want += r->files[i]->tlen + r->files[i]->nlines * 48;
  if (max_bytes && want > max_bytes + max_bytes / 4) want = max_bytes + max_bytes / 4;
  int rc = ob_reserve(&js, want + 2);
  if (!rc && want_text) rc = bw_gtext_reserve(&tx, want);
  bw_gsel s;
  bw_gsel_init(&s, r, prefix, max, max_bytes);
  bw_gpick p;
  size_t plen = 0;
  if (!rc) OB_LIT(&js, "[");
  while (!rc && bw_gsel_next(&s, &p)) {
    if (p.first_of_file) { /* the file's path, escaped once */
      plen = bw_grep_path(prefix, p.f->item.path, NULL);
      path.n = ep.n = 0;
      if ((rc = ob_reserve(&path, plen + 1))) break;
      bw_grep_path(prefix, p.f->item.path, path.p);
      if ((rc = ob_escape(&ep, path.p, plen))) break;
    }
    if (s.n > 1) {
      if ((rc = ob_reserve(&js, 1))) break;
      OB_LIT(&js, ",");
    }
    rc = json_match(&js, &p, context, ep.p, ep.n);
    if (!rc && want_text) rc = text_pick(&tx, &p, context, path.p, plen);
  }
  if (!rc) rc = ob_reserve(&js, 1);
  free(path.p);
  free(ep.p);
  if (rc) {
    free(js.p);
    bw_gtext_free(&tx);
    return rc;
  }
  OB_LIT(&js, "]");
  w->json = js.p;
  w->json_len = js.n;
  if (want_text) w->text = bw_gtext_take(&tx, &w->text_len, &w->text_raw);
  else bw_gtext_free(&tx);
  w->n = s.n;
  w->cut = s.cut;
  return BW_OK;
}

/* One name of a list: the array's element and the render's line */
static int list_item(obuf *js, obuf *tx, const char *ep, size_t elen, int counted,
                     long long count) {
  if (ob_reserve(js, elen + 48)) return BW_ENOMEM;
  if (counted) {
    OB_LIT(js, "{\"count\":");
    ob_int(js, count);
    OB_LIT(js, ",\"path\":\"");
  } else OB_LIT(js, "\"");
  ob_put(js, ep, elen);
  if (counted) OB_LIT(js, "\"}");
  else OB_LIT(js, "\"");
  if (!tx) return 0;
  if (ob_reserve(tx, elen + 32)) return BW_ENOMEM;
  ob_put(tx, ep, elen);
  if (counted) {
    OB_LIT(tx, ":");
    ob_int(tx, count);
  }
  return 0;
}

int bw_grep_list_wire(char *const *paths, const size_t *lens, const long long *counts,
                      size_t n, int want_text, bw_grep_wire_out *w) {
  memset(w, 0, sizeof *w);
  obuf js = {0}, tx = {0}, ep = {0};
  size_t want = 0, raw = 0;
  for (size_t i = 0; i < n; i++) want += lens[i] + (counts ? 32 : 4);
  int rc = ob_reserve(&js, want + 2);
  if (!rc && want_text) rc = ob_reserve(&tx, want);
  if (!rc) OB_LIT(&js, "[");
  for (size_t i = 0; !rc && i < n; i++) {
    ep.n = 0;
    if ((rc = ob_escape(&ep, paths[i], lens[i]))) break;
    if (i > 0) {
      if ((rc = ob_reserve(&js, 1)) || (want_text && (rc = ob_reserve(&tx, 2)))) break;
      OB_LIT(&js, ",");
      if (want_text) OB_LIT(&tx, "\\n");
    }
    size_t at = tx.n;
    rc = list_item(&js, want_text ? &tx : NULL, ep.p, ep.n, counts != NULL, counts ? counts[i] : 0);
    /* the line unescaped: the path's raw length, the rest as written */
    if (!rc && want_text) raw += (i > 0) + lens[i] + (tx.n - at - ep.n);
  }
  if (!rc) rc = ob_reserve(&js, 1);
  free(ep.p);
  if (rc) {
    free(js.p);
    free(tx.p);
    return rc;
  }
  OB_LIT(&js, "]");
  w->json = js.p;
  w->json_len = js.n;
  w->text = tx.p;
  w->text_len = tx.n;
  w->text_raw = raw;
  w->n = n;
  return BW_OK;
}

void bw_grep_wire_free(bw_grep_wire_out *w) {
  free(w->json);
  free(w->text);
  memset(w, 0, sizeof *w);
}
