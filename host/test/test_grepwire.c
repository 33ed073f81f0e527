/*
 * test_grepwire.c - C tests of grepwire.c (no Lua, no files): results
 * built by hand, their matches written as JSON and as rendered lines, and
 * compared with the exact bytes the encoder and grep.lua's render give
 * (written out here); the choice of matches under max_results and
 * max_result_bytes. Closes with "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

#include "check.h"

/* A file of lines "kind:text" ('m' match, 'b' before, 'a' after), their
 * numbers from first on. */
static bw_gfile *file(const char *path, size_t first, const char *const *lines, size_t n) {
  bw_gfile *f = calloc(1, sizeof *f);
  f->item.path = strdup(path);
  f->lines = calloc(n ? n : 1, sizeof *f->lines);
  size_t total = 0;
  for (size_t i = 0; i < n; i++) total += strlen(lines[i]);
  f->text = malloc(total + 1);
  for (size_t i = 0; i < n; i++) {
    size_t l = strlen(lines[i]) - 2;
    memcpy(f->text + f->tlen, lines[i] + 2, l);
    f->lines[i] = (bw_gline){.line = first + i, .off = f->tlen, .len = l, .kind = lines[i][0]};
    f->tlen += l;
    if (lines[i][0] == 'm') f->count++;
  }
  f->nlines = n;
  return f;
}

static void free_res(bw_grep_res *r) {
  for (size_t i = 0; i < r->nfiles; i++) {
    free(r->files[i]->item.path);
    free(r->files[i]->lines);
    free(r->files[i]->text);
    free(r->files[i]);
  }
  free(r->files);
}

static int same(const char *got, size_t n, const char *want) {
  if (n == strlen(want) && !memcmp(got, want, n)) return 1;
  printf("# want %s\n# got  %.*s\n", want, (int)n, got);
  return 0;
}

static void test_plain(void) {
  static const char *const a[] = {"m:one \"q\"", "m:two\\"};
  static const char *const b[] = {"m:t\x01\xff"};
  bw_grep_res r = {0};
  r.files = calloc(2, sizeof *r.files);
  r.files[0] = file("a\"b.txt", 3, a, 2);
  r.files[1] = file("c\n.txt", 1, b, 1);
  r.nfiles = 2;
  bw_grep_wire_out w;
  CHECK(bw_grep_wire(&r, "d/", 0, 0, 0, 1, &w) == BW_OK, "wire");
  CHECK(same(w.json, w.json_len,
             "[{\"line\":3,\"path\":\"d/a\\\"b.txt\",\"text\":\"one \\\"q\\\"\"},"
             "{\"line\":4,\"path\":\"d/a\\\"b.txt\",\"text\":\"two\\\\\"},"
             "{\"line\":1,\"path\":\"d/c\\n.txt\",\"text\":\"t\\u0001\xef\xbf\xbd\"}]"),
        "json of plain matches");
  CHECK(same(w.text, w.text_len,
             "d/a\\\"b.txt:3:one \\\"q\\\"\\nd/a\\\"b.txt:4:two\\\\\\nd/c\\n.txt:1:t\\u0001\xef\xbf\xbd"),
        "text of plain matches");
  /* the raw text: d/a"b.txt:3:one "q" (19), d/a"b.txt:4:two\ (16), d/c\n.txt:1:t\1\xff (14), two newlines */
  CHECK(w.text_raw == 19 + 1 + 16 + 1 + 14, "raw length %zu", w.text_raw);
  CHECK(w.n == 3 && !w.cut, "three, not cut");
  bw_grep_wire_free(&w);
  /* a file searched itself: the prefix without its "/" */
  free(r.files[1]->item.path);
  r.files[1]->item.path = strdup("");
  r.nfiles = 2;
  CHECK(bw_grep_wire(&r, "f.txt/", 1, 0, 0, 0, &w) == BW_OK && w.text == NULL, "json only");
  CHECK(same(w.json, w.json_len, "[{\"line\":3,\"path\":\"f.txt/a\\\"b.txt\",\"text\":\"one \\\"q\\\"\"}]"),
        "max_results 1");
  bw_grep_wire_free(&w);
  r.files[0]->lines[0].kind = r.files[0]->lines[1].kind = 'x'; /* no match there */
  CHECK(bw_grep_wire(&r, "f.txt/", 0, 0, 0, 1, &w) == BW_OK, "wire");
  CHECK(same(w.json, w.json_len, "[{\"line\":1,\"path\":\"f.txt\",\"text\":\"t\\u0001\xef\xbf\xbd\"}]"),
        "the searched file's own path");
  bw_grep_wire_free(&w);
  free_res(&r);
}

static void test_context(void) {
  /* file a: before, match, after twice (a gap between, then none); file b: match, after */
  static const char *const a[] = {"b:l1", "m:l2", "a:l3", "b:l4", "m:l5", "a:l6"};
  static const char *const b[] = {"m:x1", "a:x2"};
  bw_grep_res r = {0};
  r.files = calloc(2, sizeof *r.files);
  r.files[0] = file("a", 1, a, 6);
  r.files[1] = file("b", 1, b, 2);
  r.nfiles = 2;
  r.files[0]->lines[3].line = 10; /* a gap: l4 is line 10, l5 11, l6 12 */
  r.files[0]->lines[4].line = 11;
  r.files[0]->lines[5].line = 12;
  bw_grep_wire_out w;
  CHECK(bw_grep_wire(&r, "", 0, 0, 1, 1, &w) == BW_OK, "wire");
  CHECK(same(w.json, w.json_len,
             "[{\"after\":[\"l3\"],\"before\":[\"l1\"],\"line\":2,\"path\":\"a\",\"text\":\"l2\"},"
             "{\"after\":[\"l6\"],\"before\":[\"l4\"],\"line\":11,\"path\":\"a\",\"text\":\"l5\"},"
             "{\"after\":[\"x2\"],\"before\":[],\"line\":1,\"path\":\"b\",\"text\":\"x1\"}]"),
        "json with context");
  CHECK(same(w.text, w.text_len,
             "a-1-l1\\na:2:l2\\na-3-l3\\n--\\na-10-l4\\na:11:l5\\na-12-l6\\n--\\nb:1:x1\\nb-2-x2"),
        "text with context: -- at a gap and a new file");
  bw_grep_wire_free(&w);
  /* no gap: one group */
  r.files[0]->lines[3].line = 4;
  r.files[0]->lines[4].line = 5;
  r.files[0]->lines[5].line = 6;
  r.nfiles = 1;
  CHECK(bw_grep_wire(&r, "", 0, 0, 1, 1, &w) == BW_OK, "wire");
  CHECK(same(w.text, w.text_len, "a-1-l1\\na:2:l2\\na-3-l3\\na-4-l4\\na:5:l5\\na-6-l6"), "no -- without a gap");
  bw_grep_wire_free(&w);
  /* the byte budget: a match costs (path + line + 16) per line it shows */
  r.nfiles = 2;
  size_t first = 3 * (1 + 2 + 16);
  CHECK(bw_grep_wire(&r, "", 0, first, 1, 1, &w) == BW_OK && w.n == 1 && w.cut, "budget of one match");
  bw_grep_wire_free(&w);
  CHECK(bw_grep_wire(&r, "", 0, first + 3 * 19, 1, 1, &w) == BW_OK && w.n == 2 && w.cut, "two");
  bw_grep_wire_free(&w);
  CHECK(bw_grep_wire(&r, "", 0, first + 3 * 19 + 2 * 19, 1, 1, &w) == BW_OK && w.n == 3 && !w.cut, "all");
  bw_grep_wire_free(&w);
  CHECK(bw_grep_wire(&r, "", 0, 1, 1, 1, &w) == BW_OK && w.n == 1 && w.cut, "never nothing");
  bw_grep_wire_free(&w);
  CHECK(bw_grep_wire(&r, "", 2, 1000, 1, 1, &w) == BW_OK && w.n == 2 && !w.cut, "max_results before the budget");
  bw_grep_wire_free(&w);
  /* the choice itself, as the table path takes it */
  bw_gsel s;
  bw_gpick p;
  bw_gsel_init(&s, &r, "", 0, 0);
  size_t n = 0, firsts = 0;
  while (bw_gsel_next(&s, &p)) {
    n++;
    firsts += p.first_of_file;
    CHECK(p.f->lines[p.m].kind == 'm' && p.b <= p.m && p.m < p.a, "a pick's lines");
  }
  CHECK(n == 3 && firsts == 2 && !s.cut, "three picks, two files");
  free_res(&r);
}

static void test_empty(void) {
  bw_grep_res r = {0};
  bw_grep_wire_out w;
  CHECK(bw_grep_wire(&r, "", 0, 10, 1, 1, &w) == BW_OK, "wire");
  CHECK(same(w.json, w.json_len, "[]") && w.text_len == 0 && w.text_raw == 0 && w.n == 0, "no match");
  bw_grep_wire_free(&w);
}

/* The one renderer fed directly (as lsearch.c feeds it match tables):
 * raw and escaped, groups and gaps, a path that changes back. */
static void test_gtext(void) {
  const bw_gstr one[] = {{"b\"x", 3}}, ctx[] = {{"p", 1}, {"m\n", 2}, {"q", 1}};
  for (int esc = 0; esc <= 1; esc++) {
    bw_gtext t;
    bw_gtext_init(&t, esc);
    CHECK(bw_gtext_match(&t, "a\"", 2, 3, one, 0, 0, 0) == 0, "first");
    CHECK(bw_gtext_match(&t, "a\"", 2, 5, ctx, 1, 1, 1) == 0, "a run on: no --");
    CHECK(bw_gtext_match(&t, "a\"", 2, 9, ctx, 1, 1, 1) == 0, "a gap");
    CHECK(bw_gtext_match(&t, "c", 1, 7, ctx, 1, 1, 1) == 0, "a new path");
    CHECK(bw_gtext_match(&t, "a\"", 2, 1, one, 0, 0, 0) == 0, "back, no context: no --");
    size_t len, raw;
    char *s = bw_gtext_take(&t, &len, &raw);
    const char *want = esc ? "a\\\":3:b\\\"x\\na\\\"-4-p\\na\\\":5:m\\n\\na\\\"-6-q\\n--\\na\\\"-8-p"
                             "\\na\\\":9:m\\n\\na\\\"-10-q\\n--\\nc-6-p\\nc:7:m\\n\\nc-8-q\\na\\\":1:b\\\"x"
                           : "a\":3:b\"x\na\"-4-p\na\":5:m\n\na\"-6-q\n--\na\"-8-p\na\":9:m\n\na\"-10-q\n--\n"
                             "c-6-p\nc:7:m\n\nc-8-q\na\":1:b\"x";
    CHECK(same(s, len, want), esc ? "escaped" : "raw");
    CHECK(raw == strlen(esc ? "a\":3:b\"x\na\"-4-p\na\":5:m\n\na\"-6-q\n--\na\"-8-p\na\":9:m\n\na\"-10-q\n--\n"
                              "c-6-p\nc:7:m\n\nc-8-q\na\":1:b\"x" : want), "raw length");
    free(s);
  }
  bw_gtext t;
  bw_gtext_init(&t, 0);
  size_t len, raw;
  CHECK(bw_gtext_take(&t, &len, &raw) == NULL && len == 0 && raw == 0, "nothing written");
}

/* bw_grep_resume: the first match not shown, or the line after the last */
static void test_resume(void) {
  static const char *const a[] = {"m:one", "a:ctx", "m:two"};
  static const char *const b[] = {"b:pre", "m:three"};
  bw_grep_res r = {0};
  r.files = calloc(2, sizeof *r.files);
  r.files[0] = file("a.txt", 3, a, 3);
  r.files[1] = file("b.txt", 10, b, 2);
  r.nfiles = 2;
  size_t f = 99, l = 99;
  CHECK(bw_grep_resume(&r, 0, &f, &l) && f == 0 && l == 3, "nothing shown: the first match");
  CHECK(bw_grep_resume(&r, 1, &f, &l) && f == 0 && l == 5, "after one: a.txt line 5 (%zu %zu)", f, l);
  CHECK(bw_grep_resume(&r, 2, &f, &l) && f == 1 && l == 11, "after two: b.txt line 11 (%zu %zu)", f, l);
  CHECK(bw_grep_resume(&r, 3, &f, &l) && f == 1 && l == 12, "all shown: the line after the last (%zu %zu)", f, l);
  CHECK(!bw_grep_resume(&r, 4, &f, &l), "more than kept: no cursor");
  free_res(&r);
}

/* files and count modes' lists: the encoder's bytes for strings and for
 * {"count","path"} tables, the render's lines, escaped */
static void test_lists(void) {
  char *paths[] = {"a.c", "d/q\"x\\.c", "c\001\n.c"};
  size_t lens[] = {3, 8, 5};
  long long counts[] = {1, 22, 333};
  bw_grep_wire_out w;
  CHECK(bw_grep_list_wire(paths, lens, NULL, 3, 1, &w) == BW_OK && w.n == 3, "files");
  CHECK(same(w.json, w.json_len, "[\"a.c\",\"d/q\\\"x\\\\.c\",\"c\\u0001\\n.c\"]"), "files json %.*s",
        (int)w.json_len, w.json);
  CHECK(same(w.text, w.text_len, "a.c\\nd/q\\\"x\\\\.c\\nc\\u0001\\n.c"), "files text %.*s", (int)w.text_len,
        w.text);
  CHECK(w.text_raw == 3 + 1 + 8 + 1 + 5, "files raw %zu", w.text_raw);
  bw_grep_wire_free(&w);
  CHECK(bw_grep_list_wire(paths, lens, counts, 3, 1, &w) == BW_OK, "counts");
  CHECK(same(w.json, w.json_len,
             "[{\"count\":1,\"path\":\"a.c\"},{\"count\":22,\"path\":\"d/q\\\"x\\\\.c\"},"
             "{\"count\":333,\"path\":\"c\\u0001\\n.c\"}]"),
        "counts json %.*s", (int)w.json_len, w.json);
  CHECK(same(w.text, w.text_len, "a.c:1\\nd/q\\\"x\\\\.c:22\\nc\\u0001\\n.c:333"), "counts text %.*s",
        (int)w.text_len, w.text);
  CHECK(w.text_raw == 5 + 1 + 11 + 1 + 9, "counts raw %zu", w.text_raw);
  bw_grep_wire_free(&w);
  CHECK(bw_grep_list_wire(paths, lens, counts, 2, 0, &w) == BW_OK && w.text == NULL && w.n == 2,
        "json only, the first two");
  bw_grep_wire_free(&w);
  CHECK(bw_grep_list_wire(NULL, NULL, NULL, 0, 1, &w) == BW_OK && same(w.json, w.json_len, "[]") &&
            w.text_len == 0 && w.text_raw == 0,
        "empty");
  bw_grep_wire_free(&w);
  CHECK(bw_glist_cost(7, 0) == 8 && bw_glist_cost(7, 1) == 19, "the cost rule grep.lua had");
}

int main(void) {
  test_lists();
  test_resume();
  test_plain();
  test_context();
  test_empty();
  test_gtext();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
