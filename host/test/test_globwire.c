/*
 * test_globwire.c - C tests of globwire.c (no Lua, no files): glob
 * results built by hand, their entries written as JSON and as the listing,
 * compared with the exact bytes the encoder and glob.lua's render give
 * (written out here), and the max_result_bytes cut. Closes with
 * "N passed, N failed".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "search.h"

#include "check.h"

static bw_gitem *item(const char *path, char type, long long size, time_t sec) {
  bw_gitem *it = calloc(1, sizeof *it);
  it->item.path = strdup(path);
  it->type = type;
  it->size = size;
  it->mtime.tv_sec = sec;
  return it;
}

static void free_res(bw_glob_res *r) {
  for (size_t i = 0; i < r->n; i++) {
    free(r->items[i]->item.path);
    free(r->items[i]);
  }
  free(r->items);
}

static bw_glob_res three(void) {
  bw_glob_res r = {0};
  r.items = calloc(3, sizeof *r.items);
  r.items[0] = item("a/b", 'd', 4096, 0);
  r.items[1] = item("a/q\"u\\o\001.h", 'f', 12, 1700000000);
  r.items[2] = item("bad\377.h", 'l', 7, 1700000000);
  r.n = 3;
  return r;
}

static int same(const char *got, size_t len, const char *want) {
  return got && len == strlen(want) && !memcmp(got, want, len);
}

static void test_all(void) {
  bw_glob_res r = three();
  bw_glob_wire_out w;
  CHECK(bw_glob_wire(&r, "src/", (size_t)-1, 1, &w) == BW_OK, "written");
  const char *json =
      "[{\"mtime\":\"1970-01-01T00:00:00Z\",\"path\":\"src/a/b\",\"size\":4096,\"type\":\"dir\"},"
      "{\"mtime\":\"2023-11-14T22:13:20Z\",\"path\":\"src/a/q\\\"u\\\\o\\u0001.h\",\"size\":12,\"type\":\"file\"},"
      "{\"mtime\":\"2023-11-14T22:13:20Z\",\"path\":\"src/bad\357\277\275.h\",\"size\":7,\"type\":\"symlink\"}]";
  CHECK(same(w.json, w.json_len, json), "json: %.*s", (int)w.json_len, w.json);
  const char *text = "src/a/b/\\nsrc/a/q\\\"u\\\\o\\u0001.h\\nsrc/bad\357\277\275.h";
  CHECK(same(w.text, w.text_len, text), "text: %.*s", (int)w.text_len, w.text);
  CHECK(w.text_raw == strlen("src/a/b/\nsrc/a/q\"u\\o\001.h\nsrc/bad\377.h"), "raw length %zu", w.text_raw);
  CHECK(w.n == 3 && !w.cut, "all three, no cut (%zu %d)", w.n, w.cut);
  bw_glob_wire_free(&w);
  free_res(&r);
}

static void test_cut(void) {
  bw_glob_res r = three();
  bw_glob_wire_out w;
  /* glob.lua: used += #path + 1; past the cap (and not the first) the rest goes */
  CHECK(bw_glob_wire(&r, "", 1, 0, &w) == BW_OK && w.n == 1 && w.cut, "the first is always kept (%zu)", w.n);
  CHECK(w.text == NULL || w.text_len == 0, "no text asked");
  bw_glob_wire_free(&w);
  size_t two = strlen("a/b") + 1 + strlen("a/q\"u\\o\001.h") + 1;
  CHECK(bw_glob_wire(&r, "", two, 0, &w) == BW_OK && w.n == 2 && w.cut, "two fit exactly (%zu)", w.n);
  CHECK(w.json_len > 0 && w.json[w.json_len - 1] == ']' && w.json[w.json_len - 2] == '}', "closed array");
  bw_glob_wire_free(&w);
  CHECK(bw_glob_wire(&r, "", two + strlen("bad\377.h") + 1, 0, &w) == BW_OK && w.n == 3 && !w.cut,
        "all fit (%zu)", w.n);
  bw_glob_wire_free(&w);
  free_res(&r);
}

static void test_empty(void) {
  bw_glob_res r = {0};
  bw_glob_wire_out w;
  CHECK(bw_glob_wire(&r, "x/", 100, 1, &w) == BW_OK, "written");
  CHECK(same(w.json, w.json_len, "[]") && w.n == 0 && !w.cut && w.text_raw == 0, "an empty array");
  bw_glob_wire_free(&w);
}

int main(void) {
  test_all();
  test_cut();
  test_empty();
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
