/*
 * grepwire.c - grep's content matches chosen for a result, and written
 * straight as a reply: the `matches` array as JSON text and the lines as
 * grep.lua's render shows them (path:line:text, context lines path-N-text,
 * "--" between groups), escaped as the inside of a JSON string. Both are
 * the bytes the encoder (ljson.c) writes for the table form: the same
 * escaping (jsonesc.c), the same key order (sorted), the same numbers.
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

/* What a match costs in the result, as grep.lua counts it against
 * max_result_bytes: its path and text (and each context line's) + 16. */
static size_t cost_of(const bw_gsel *s, const bw_gfile *f, size_t b, size_t a) {
  size_t cost = 0;
  for (size_t k = b; k < a; k++) cost += s->plen + f->lines[k].len + 16;
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

/* ---- the writer ---- */

typedef struct obuf {
  char *p;
  size_t n, cap;
} obuf;

static int ob_reserve(obuf *o, size_t extra) {
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

/* unchecked appends: room reserved before */
static void ob_put(obuf *o, const void *s, size_t n) {
  memcpy(o->p + o->n, s, n);
  o->n += n;
}

#define OB_LIT(o, s) ob_put(o, s, sizeof(s) - 1)

static void ob_int(obuf *o, long long v) {
  char buf[24], *e = buf + sizeof buf, *p = e;
  unsigned long long u = v < 0 ? 0ull - (unsigned long long)v : (unsigned long long)v;
  do *--p = (char)('0' + (int)(u % 10)); while (u /= 10);
  if (v < 0) *--p = '-';
  ob_put(o, p, (size_t)(e - p));
}

/* s escaped (no quotes), in blocks as the encoder does */
static int ob_escape(obuf *o, const char *s, size_t n) {
  const unsigned char *p = (const unsigned char *)s, *end = p + n;
  while (p < end) {
    size_t chunk = (size_t)(end - p) < 65536 ? (size_t)(end - p) : 65536;
    if (ob_reserve(o, BW_JSON_WORST(chunk))) return BW_ENOMEM;
    o->n = (size_t)(bw_json_escape(o->p + o->n, &p, p + chunk, end) - o->p);
  }
  return 0;
}

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

/* One rendered line: path, sep, number, sep, text (escaped; raw length
 * added to *raw), after a '\n' unless it is the first. */
static int text_line(obuf *o, size_t *raw, const char *epath, size_t elen, size_t plen,
                     char sep, long long line, const char *s, size_t n) {
  if (ob_reserve(o, elen + 32)) return BW_ENOMEM;
  if (*raw) { /* the newline between lines, escaped */
    OB_LIT(o, "\\n");
    *raw += 1;
  }
  size_t at = o->n;
  ob_put(o, epath, elen);
  ob_put(o, &sep, 1);
  ob_int(o, line);
  ob_put(o, &sep, 1);
  /* what this prefix is unescaped: the path's raw length, not its escape's */
  *raw += (o->n - at) - elen + plen;
  if (ob_escape(o, s, n)) return BW_ENOMEM;
  *raw += n;
  return 0;
}

/* grep.lua's render of one match: "--" before a group that does not run
 * on from the last (a new file, or a gap) when there is context; before
 * lines numbered back from the match, after lines on from it. */
static int text_match(obuf *o, size_t *raw, const bw_gpick *p, int context, const char *epath,
                      size_t elen, size_t plen, int *started, long long *last_line) {
  const bw_gfile *f = p->f;
  long long line = (long long)f->lines[p->m].line;
  long long first = line - (long long)(p->m - p->b);
  if (context && *started && (p->first_of_file || first > *last_line + 1)) {
    if (ob_reserve(o, 4)) return BW_ENOMEM;
    OB_LIT(o, "\\n--"); /* never the first line: *started */
    *raw += 3;
  }
  for (size_t k = p->b; k < p->m; k++)
    if (text_line(o, raw, epath, elen, plen, '-', first + (long long)(k - p->b),
                  bw_gline_text(f, &f->lines[k]), f->lines[k].len))
      return BW_ENOMEM;
  if (text_line(o, raw, epath, elen, plen, ':', line, bw_gline_text(f, &f->lines[p->m]),
                f->lines[p->m].len))
    return BW_ENOMEM;
  for (size_t k = p->m + 1; k < p->a; k++)
    if (text_line(o, raw, epath, elen, plen, '-', line + (long long)(k - p->m),
                  bw_gline_text(f, &f->lines[k]), f->lines[k].len))
      return BW_ENOMEM;
  *started = 1;
  *last_line = line + (long long)(p->a - p->m - 1);
  return 0;
}

int bw_grep_wire(const bw_grep_res *r, const char *prefix, size_t max, size_t max_bytes,
                 int context, int want_text, bw_grep_wire_out *w) {
  memset(w, 0, sizeof *w);
  obuf js = {0}, tx = {0}, path = {0}, ep = {0};
  size_t want = 0; /* a first guess of the sizes, so big results grow once */
  for (size_t i = 0; i < r->nfiles; i++) want += r->files[i]->tlen + r->files[i]->nlines * 48;
  if (max_bytes && want > max_bytes + max_bytes / 4) want = max_bytes + max_bytes / 4;
  int rc = ob_reserve(&js, want + 2);
  if (!rc && want_text) rc = ob_reserve(&tx, want);
  bw_gsel s;
  bw_gsel_init(&s, r, prefix, max, max_bytes);
  bw_gpick p;
  int started = 0;
  long long last_line = 0;
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
    if (!rc && want_text)
      rc = text_match(&tx, &w->text_raw, &p, context, ep.p, ep.n, plen, &started, &last_line);
  }
  if (!rc) rc = ob_reserve(&js, 1);
  free(path.p);
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
  w->n = s.n;
  w->cut = s.cut;
  return BW_OK;
}

void bw_grep_wire_free(bw_grep_wire_out *w) {
  free(w->json);
  free(w->text);
  memset(w, 0, sizeof *w);
}
