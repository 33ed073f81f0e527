/*
 * fuzz_edit.c - the edit engine (edit.c, match.c) and its diff (diff.c).
 *
 * Input: one flags byte, then NUL-separated parts: the file, then up to
 * three old_text/new_text pairs (or, in insert mode, a line number byte and
 * the text). Checked on every result:
 *  - the codes are the engine's (no ENOMEM, nothing unknown);
 *  - the diff parses as unified hunks, and applied to the file's lines
 *    gives the new text's lines; its +/- lines are the added/removed
 *    counts; a cut diff stays within max_diff;
 *  - a BOM stays first;
 *  - at the exact level on a file and texts without CR or BOM, the answer
 *    is the one memmem gives (not found, ambiguous, or the text spliced),
 *    places that start or end inside a line's indentation left out;
 *  - the loose ladder answers as the exact level wherever that one found
 *    the text (it tries exact first), or refuses a place found from after
 *    a line's indentation whose new_text it cannot place without guessing
 *    (issue 44): that line is indented, new_text's line named is a later
 *    one; or a whole-line place its own indentation picked among several
 *    the indentation level finds (it is one of them);
 *  - the same edits applied to the result again, and the inverse edit,
 *    pass the same checks.
 */
#include "edit.h"
#include "fuzz.h"

enum {
  F_LOOSE = 1,
  F_ALL0 = 2,   /* replace_all on the first edit */
  F_ALL1 = 4,   /* and on the second */
  F_INSERT = 8, /* bw_insert_apply instead */
  F_SMALL = 64, /* max_diff 96: the cut diff */
};

/* ---- lines as the diff shows them ---- */

typedef struct lines {
  slice *v;
  size_t n;
} lines;

/* Split a text (after bom bytes) as the engine's view does, each line
 * without its "\n" and trailing "\r"s (put_line's form). */
static lines split(const char *s, size_t n, size_t bom) {
  s += bom, n -= bom;
  lines l = {malloc((n + 1) * sizeof(slice)), 0};
  if (!l.v) abort();
  size_t start = 0;
  for (size_t i = 0; i <= n; i++) {
    if (i < n && s[i] != '\n') continue;
    if (i == n && start == n) break;
    size_t e = i;
    while (e > start && (s[e - 1] == '\r' || s[e - 1] == '\n')) e--;
    l.v[l.n++] = (slice){s + start, e - start};
    start = i + 1;
  }
  return l;
}

static int eqmem(const char *a, size_t an, const char *b, size_t bn) {
  return an == bn && (an == 0 || !memcmp(a, b, an));
}

static int same(slice a, const char *p, size_t n) { return eqmem(a.p, a.n, p, n); }

/* The diff applied to the old lines must give the new ones. */
static void check_diff(const char *old, size_t olen, const bw_edit_out *out,
                       const bw_edit_opts *o) {
  FZ_CHECK(out->diff && out->diff[out->diff_len] == '\0', "diff not terminated");
  if (out->diff_truncated) {
    FZ_CHECK(out->diff_len <= o->max_diff, "cut diff of %zu bytes > %zu",
             out->diff_len, o->max_diff);
  }
  /* the diff is of the bodies after the original's BOM (the new text
   * keeps it; a BOM new_text brings in mid-file is text) */
  size_t bom = olen >= 3 && !memcmp(old, "\xEF\xBB\xBF", 3) ? 3 : 0;
  lines O = split(old, olen, bom), N = split(out->text, out->len, bom);
  slice *R = malloc((O.n + N.n + out->diff_len + 1) * sizeof *R);
  if (!R) abort();
  size_t nr = 0, cur = 0, plus = 0, minus = 0;
  const char *p = out->diff, *end = out->diff + out->diff_len;
  size_t idx = 0, oc = 0, nc = 0, want_oc = 0, want_nc = 0;
  int in = 0;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    FZ_CHECK(nl, "diff line without a newline");
    size_t n = (size_t)(nl - p);
    if (n >= 4 && !memcmp(p, "@@ -", 4)) {
      FZ_CHECK(!in || (oc == want_oc && nc == want_nc) || out->diff_truncated,
               "hunk counts %zu,%zu but the header says %zu,%zu", oc, nc,
               want_oc, want_nc);
      size_t os, ns;
      char tail[4];
      FZ_CHECK(sscanf(p, "@@ -%zu,%zu +%zu,%zu @%1[@]", &os, &want_oc, &ns,
                      &want_nc, tail) == 5,
               "bad hunk header %.*s", (int)n, p);
      idx = want_oc ? os - 1 : os;
      FZ_CHECK(idx >= cur && idx <= O.n, "hunk at %zu (after %zu, of %zu)",
               idx, cur, O.n);
      while (cur < idx) R[nr++] = O.v[cur++];
      FZ_CHECK(nr + (want_nc ? 1 : 0) == ns, "new start %zu, expected %zu", ns,
               nr + (want_nc ? 1 : 0));
      oc = nc = 0;
      in = 1;
    } else {
      FZ_CHECK(in && n >= 1, "diff line outside a hunk: %.*s", (int)n, p);
      const char *t = p + 1;
      size_t tn = n - 1;
      switch (p[0]) {
      case ' ':
      case '-':
        FZ_CHECK(cur < O.n && same(O.v[cur], t, tn),
                 "diff line %c%.*s is not the file's line %zu", p[0], (int)tn,
                 t, cur + 1);
        if (p[0] == ' ') R[nr++] = O.v[cur], nc++;
        else minus++;
        cur++, oc++;
        break;
      case '+':
        R[nr++] = (slice){t, tn};
        nc++, plus++;
        break;
      case '\\':
        FZ_CHECK(n == 27 && !memcmp(p, "\\ No newline at end of file", 27),
                 "bad marker %.*s", (int)n, p);
        break;
      default:
        FZ_CHECK(0, "bad diff line %.*s", (int)n, p);
      }
    }
    p = nl + 1;
  }
  if (!out->diff_truncated) {
    FZ_CHECK(!in || (oc == want_oc && nc == want_nc),
             "last hunk counts %zu,%zu but the header says %zu,%zu", oc, nc,
             want_oc, want_nc);
    FZ_CHECK(plus == out->added && minus == out->removed,
             "diff has +%zu -%zu, result says +%zu -%zu", plus, minus,
             out->added, out->removed);
    while (cur < O.n) R[nr++] = O.v[cur++];
    FZ_CHECK(nr == N.n, "diff applied gives %zu lines, the text has %zu", nr,
             N.n);
    for (size_t i = 0; i < nr; i++)
      FZ_CHECK(same(R[i], N.v[i].p, N.v[i].n),
               "diff applied differs at line %zu: %.*s vs %.*s", i + 1,
               (int)R[i].n, R[i].p, (int)N.v[i].n, N.v[i].p);
  }
  free(R);
  free(O.v);
  free(N.v);
}

static void check_out(const char *data, size_t len, int rc,
                      const bw_edit_out *out, const bw_edit_opts *o) {
  FZ_CHECK(rc == BW_OK || rc == BW_INVALID_ARGUMENT ||
               rc == BW_NOT_FOUND_TEXT || rc == BW_AMBIGUOUS_TEXT ||
               rc == BW_OVERLAPPING_EDITS,
           "code %s", bw_code_name(rc));
  if (rc) {
    FZ_CHECK(!out->text && !out->diff, "a failure left output behind");
    return;
  }
  FZ_CHECK(out->text || out->len == 0, "no text");
  if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3))
    FZ_CHECK(out->len >= 3 && !memcmp(out->text, data, 3), "BOM lost");
  check_diff(data, len, out, o);
}

/* ---- the exact level, modelled with memmem ---- */

/* Strictly inside its line's leading spaces and tabs (an exact place
 * there is none, unless old_text is only spaces and tabs)? */
static int in_lead(const char *s, size_t n, size_t pos) {
  if (pos >= n) return 0;
  size_t a = pos;
  while (a > 0 && s[a - 1] != '\n') a--;
  if (a == pos) return 0;
  for (size_t i = a; i <= pos; i++)
    if (s[i] != ' ' && s[i] != '\t') return 0;
  return 1;
}

static int blank(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] != ' ' && s[i] != '\t') return 0;
  return 1;
}

/* Is the memmem place q an exact place? */
static int place_ok(const char *data, size_t len, const char *q, const bw_edit *e) {
  size_t st = (size_t)(q - data);
  return blank(e->old_text, e->old_len) ||
         !(in_lead(data, len, st) || in_lead(data, len, st + e->old_len));
}

static int plain(const char *s, size_t n) {
  return !memchr(s, '\r', n) && !(n >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3));
}

static void model(const char *data, size_t len, const bw_edit *e, int rc,
                  const bw_edit_out *out) {
  if (!plain(data, len) || !plain(e->old_text, e->old_len) ||
      !plain(e->new_text, e->new_len))
    return;
  if (e->old_len == 0 ||
      eqmem(e->old_text, e->old_len, e->new_text, e->new_len)) {
    FZ_CHECK(rc == BW_INVALID_ARGUMENT, "empty or unchanged edit: %s",
             bw_code_name(rc));
    return;
  }
  size_t all = 0; /* overlapping places */
  for (const char *p = data, *end = data + len;
       (p = memmem(p, (size_t)(end - p), e->old_text, e->old_len)); p++)
    all += place_ok(data, len, p, e);
  if (all == 0) {
    FZ_CHECK(rc == BW_NOT_FOUND_TEXT, "not in the file, yet %s", bw_code_name(rc));
    return;
  }
  if (all > 1 && !e->replace_all) {
    FZ_CHECK(rc == BW_AMBIGUOUS_TEXT, "%zu places, yet %s", all, bw_code_name(rc));
    return;
  }
  FZ_CHECK(rc == BW_OK, "the text is there, yet %s", bw_code_name(rc));
  sbuf want = {0};
  size_t count = 0;
  const char *p = data, *end = data + len, *q;
  const char *from = p;
  while ((q = memmem(from, (size_t)(end - from), e->old_text, e->old_len))) {
    if (!place_ok(data, len, q, e)) {
      from = q + 1;
      continue;
    }
    bw_sb_put(&want, p, (size_t)(q - p));
    bw_sb_put(&want, e->new_text, e->new_len);
    p = from = q + e->old_len;
    count++;
  }
  bw_sb_put(&want, p, (size_t)(end - p));
  FZ_CHECK(!want.oom, "out of memory");
  FZ_CHECK(e->count == count, "count %zu, memmem says %zu", e->count, count);
  FZ_CHECK(eqmem(out->text, out->len, want.p, want.len),
           "spliced text differs from memmem's");
  free(want.p);
}

/* ---- one round ---- */

static void copy_edits(bw_edit *to, const bw_edit *from, size_t n) {
  memcpy(to, from, n * sizeof *to);
  for (size_t i = 0; i < n; i++) to[i].count = 0, to[i].level = 0, to[i].line = 0;
}

/* Apply at the exact level and on the ladder; check both; hand back the
 * ladder's result (caller frees) when asked. */
static int round(const char *data, size_t len, const bw_edit *in, size_t n,
                 int loose, const bw_edit_opts *base, bw_edit_out *keep) {
  bw_edit ex[3], lo[3];
  bw_edit_opts o = *base;
  bw_edit_out eo, lout;
  copy_edits(ex, in, n);
  o.loose = 0;
  int rc = bw_edit_apply(data, len, ex, n, &o, &eo);
  check_out(data, len, rc, &eo, &o);
  if (n == 1) model(data, len, &ex[0], rc, &eo);
  { /* the exact places found in one pass for all edits (bw_exact_index,
     * from 8 edits on) are the ones each edit's own search finds */
    bw_edit ix[3];
    bw_edit_out io;
    bw_edit_opts one = o;
    one.index_min = 1;
    copy_edits(ix, in, n);
    int irc = bw_edit_apply(data, len, ix, n, &one, &io);
    FZ_CHECK(irc == rc, "indexed: %s, searched alone: %s", bw_code_name(irc), bw_code_name(rc));
    if (rc == BW_OK) {
      FZ_CHECK(eqmem(io.text, io.len, eo.text, eo.len), "indexed: another text");
      for (size_t i = 0; i < n; i++)
        FZ_CHECK(ix[i].count == ex[i].count && ix[i].line == ex[i].line, "indexed: edit %zu placed elsewhere", i);
      bw_edit_out_free(&io);
    }
  }
  if (!loose) {
    if (keep) *keep = eo;
    else bw_edit_out_free(&eo);
    return rc;
  }
  copy_edits(lo, in, n);
  o.loose = 1;
  int lrc = bw_edit_apply(data, len, lo, n, &o, &lout);
  check_out(data, len, lrc, &lout, &o);
  int guess = lrc == BW_AMBIGUOUS_TEXT && (lout.diag.after_indent || lout.diag.found_line);
  if (guess && lout.diag.found_line) {
    const bw_edit_diag *d = &lout.diag;
    int listed = d->nlines == BW_DIAG_LINES;
    for (size_t i = 0; i < d->nlines; i++) listed |= d->lines[i] == d->found_line;
    FZ_CHECK(d->matches > 1 && d->level == BW_LEVEL_INDENT && d->found_level < BW_LEVEL_INDENT && listed,
             "indentation chose line %zu among %zu places", d->found_line, d->matches);
  } else if (guess) { /* (a later edit may fail otherwise at exact: its error comes after) */
    const bw_edit_diag *d = &lout.diag;
    FZ_CHECK(d->reindent_line >= 2 && d->nlines == 1 && d->lines[0] >= 1 &&
                 (d->have_text[0] == ' ' || d->have_text[0] == '\t'),
             "a guess refused at line %zu (`%s`), new_text's line %zu", d->nlines ? d->lines[0] : 0,
             d->have_text, d->reindent_line);
  }
  if (!guess && (rc == BW_OK || rc == BW_AMBIGUOUS_TEXT || rc == BW_OVERLAPPING_EDITS)) {
    FZ_CHECK(lrc == rc, "exact says %s, the ladder %s", bw_code_name(rc),
             bw_code_name(lrc));
    if (rc == BW_OK)
      FZ_CHECK(eqmem(lout.text, lout.len, eo.text, eo.len),
               "the ladder changed an exact match's result");
  }
  if (rc == BW_INVALID_ARGUMENT)
    FZ_CHECK(lrc == rc || guess, "argument refused at exact only");
  bw_edit_out_free(&eo);
  if (keep) *keep = lout;
  else bw_edit_out_free(&lout);
  return lrc;
}

static void insert(const char *data, size_t len, fz_part sel, fz_part text,
                   const bw_edit_opts *o) {
  bw_edit_out out;
  size_t total = 1;
  for (size_t i = 0; i < len; i++) total += data[i] == '\n';
  size_t line = sel.n ? (unsigned char)sel.p[0] % (total + 3) : 1;
  int rc = bw_insert_apply(data, len, line, text.p, text.n, o, &out);
  FZ_CHECK(rc == BW_OK || rc == BW_INVALID_ARGUMENT, "insert: %s",
           bw_code_name(rc));
  if (rc) return;
  check_diff(data, len, &out, o);
  /* an open last line is taken out and put back with its newline */
  FZ_CHECK(out.added > out.removed && out.removed <= 1, "insert +%zu -%zu",
           out.added, out.removed);
  bw_edit_out_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 1 << 16) return 0;
  int flags = data[0];
  fz_part part[8];
  int np = fz_split(data + 1, size - 1, part, 8);
  if (np < 3) return 0;
  bw_edit_opts o = {.context = (size_t)(flags >> 4 & 3),
                    .max_diff = (flags & F_SMALL) ? 96 : 1 << 20};
  fz_part file = part[0];
  if (flags & F_INSERT) {
    insert(file.p, file.n, part[1], part[2], &o);
    return 0;
  }
  bw_edit e[3];
  size_t n = 0;
  for (int i = 1; i + 1 < np && n < 3; i += 2, n++)
    e[n] = (bw_edit){part[i].p, part[i].n, part[i + 1].p, part[i + 1].n,
                     n == 0 ? !!(flags & F_ALL0) : n == 1 ? !!(flags & F_ALL1) : 0,
                     0, 0, 0};
  bw_edit_out first;
  int loose = flags & F_LOOSE;
  if (round(file.p, file.n, e, n, loose, &o, &first) != BW_OK) return 0;
  /* again on the result: the same edits, then the inverse of a single one */
  round(first.text, first.len, e, n, loose, &o, NULL);
  if (n == 1) {
    bw_edit inv = {e[0].new_text, e[0].new_len, e[0].old_text, e[0].old_len,
                   e[0].replace_all, 0, 0, 0};
    round(first.text, first.len, &inv, 1, loose, &o, NULL);
  }
  bw_edit_out_free(&first);
  return 0;
}
