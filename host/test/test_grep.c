/*
 * test_grep.c - C tests of grep in the search core (no Lua): the prefilter
 * against plain PCRE2, modes, context, caps and order, catastrophic
 * patterns, cancellation, large files mapped and searched in chunks, files
 * mode answered from a file's head, and the stash its lines are kept in.
 * Built with grep.c's test-only mapped-file hook (-DBW_GREP_TEST_HOOK, the
 * Makefile). Both resolver backends. Closes with "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "search.h"

#include "check.h"
#include "search_tree.h"

static size_t total(const bw_grep_res *r) {
  size_t n = 0;
  for (size_t i = 0; i < r->nfiles; i++) n += r->files[i]->item.units;
  return n;
}

static int grep_count(const bw_root *r, const char *rel, bw_grep_opts *o) {
  bw_grep_res res;
  if (bw_grep(r, rel, o, &res)) return -1;
  int n = (int)total(&res);
  bw_grep_res_free(&res);
  return n;
}

static void test_grep(const bw_root *r) {
  bw_grep_opts o = gopts("needle");
  bw_grep_res res;
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK, "grep");
  /* a.c x2, b.h, big.txt, many x300; not: outside, hidden, ignored, binary */
  CHECK(total(&res) == 304, "needle matches: %zu", total(&res));
  CHECK(res.n_binary == 1 && !strcmp(res.skipped_binary[0], "src/bin.dat"),
        "binary skipped and listed");
  int sorted = 1;
  for (size_t i = 1; i < res.nfiles; i++)
    if (bw_path_cmp(res.files[i - 1]->item.path, res.files[i]->item.path) >= 0) sorted = 0;
  CHECK(sorted, "files in path order");
  int outside = 0;
  for (size_t i = 0; i < res.nfiles; i++)
    for (size_t k = 0; k < res.files[i]->nlines; k++) {
      const bw_gline *l = &res.files[i]->lines[k];
      if (memmem(bw_gline_text(res.files[i], l), l->len, "TOPSECRET", 9)) outside = 1;
    }
  CHECK(!outside, "no outside content");
  bw_grep_res_free(&res);

  /* the prefilter and plain PCRE2 agree */
  const char *pats[] = {"needle", "n[e]edle", "ne+dle", "(?:nee|xx)dle", "\\w+dle"};
  for (size_t i = 0; i < 5; i++) {
    o = gopts(pats[i]);
    CHECK(grep_count(r, ".", &o) == 304, "pattern %s", pats[i]);
  }
  o = gopts("needle");
  o.ignore_case = 1;
  o.walk.respect_ignore = 0;
  CHECK(grep_count(r, ".", &o) == 306, "ignore_case, ignore off");
  o = gopts("nEEdle");
  o.literal = 1;
  o.ignore_case = 1;
  CHECK(grep_count(r, "lib", &o) == 0, "lib/.ignore hides c.txt");
  o = gopts("a.c");
  o.literal = 1;
  CHECK(grep_count(r, ".", &o) == 0, "literal dot is a dot");

  /* context, single file, limits */
  o = gopts("needle");
  o.before = 1;
  o.after = 1;
  CHECK(bw_grep(r, "src/a.c", &o, &res) == BW_OK, "grep one file");
  CHECK(res.nfiles == 1 && res.files[0]->nlines == 6, "lines 1-6 once each: %zu",
        res.nfiles ? res.files[0]->nlines : 0);
  if (res.nfiles && res.files[0]->nlines == 6) {
    const bw_gfile *f = res.files[0];
    CHECK(f->lines[0].kind == 'b' && f->lines[1].kind == 'm' &&
              f->lines[2].kind == 'a' && f->lines[3].kind == 'b' &&
              f->lines[4].kind == 'm' && f->lines[5].kind == 'a',
          "context kinds");
    CHECK(f->lines[4].line == 5 && !strncmp(bw_gline_text(f, &f->lines[4]), "five needle", 11),
          "line 5 text");
  }
  bw_grep_res_free(&res);

  o = gopts("needle");
  o.max_results = 10;
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK, "capped grep");
  CHECK(total(&res) >= 10 && res.truncated, "capped at 10, truncated");
  CHECK(res.nfiles && !strcmp(res.files[0]->item.path, "many/f1.txt"),
        "first in path order: %s", res.nfiles ? res.files[0]->item.path : "");
  bw_grep_res_free(&res);

  /* files and count modes walk past the listed cap and count it all */
  o = gopts("needle");
  o.mode = BW_GREP_FILES;
  o.max_results = 10;
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK && res.nfiles == 10 && res.truncated &&
            res.found_files == 303 && res.found_matches == 303 && !res.limit,
        "files mode capped at 10: found %zu", res.found_files);
  bw_grep_res_free(&res);
  o.mode = BW_GREP_COUNT;
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK && res.nfiles == 10 && res.found_files == 303 &&
            res.found_matches == 304, /* src/a.c has two */
        "count mode capped at 10: %zu files, %zu matches", res.found_files, res.found_matches);
  bw_grep_res_free(&res);

  /* a cursor: from line 3 of src/a.c on, nothing that sorts before it */
  o = gopts("needle");
  o.from_path = "src/a.c";
  o.from_line = 3;
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK && res.nfiles >= 1 &&
            !strcmp(res.files[0]->item.path, "src/a.c") && res.files[0]->count == 1 &&
            res.files[0]->lines[0].line == 5,
        "resumed at src/a.c:3: its line 5 first");
  for (size_t i = 0; i < res.nfiles; i++)
    CHECK(bw_path_cmp(res.files[i]->item.path, "src/a.c") >= 0, "nothing before the cursor: %s",
          res.files[i]->item.path);
  bw_grep_res_free(&res);

  o = gopts("needle");
  o.mode = BW_GREP_FILES;
  CHECK(grep_count(r, ".", &o) == 303, "files mode");
  o.max_file_size = 100;
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK && res.n_size == 1 &&
            !strcmp(res.skipped_size[0], "src/big.txt"),
        "oversize skipped and listed");
  bw_grep_res_free(&res);

  o = gopts("(a+)+$");
  sh("printf '%05000d!\\n' 0 | tr 0 a > ws/src/evil.txt");
  CHECK(bw_grep(r, "src", &o, &res) == BW_INVALID_ARGUMENT, "catastrophic pattern fails");
  sh("rm ws/src/evil.txt");
  o = gopts("a(b");
  CHECK(bw_grep(r, ".", &o, &res) == BW_INVALID_ARGUMENT, "bad regex");
  { /* the prefilter's parser once recursed per group: a stack overflow */
    static char deep[10004]; /* and its NUL */
    memset(deep, '(', 5000);
    memcpy(deep + 5000, "abc", 3);
    memset(deep + 5003, ')', 5000);
    o = gopts(deep);
    CHECK(bw_grep(r, ".", &o, &res) == BW_INVALID_ARGUMENT, "5000 nested groups");
    bw_lits l;
    bw_lits_init(&l, deep + 4960, 83, 0); /* 40 deep */
    CHECK(l.n == 0, "past 32 nested groups: no prefilter");
    bw_lits_init(&l, deep + 4990, 23, 0); /* 10 deep */
    CHECK(l.n == 1 && l.lit[0].len == 3, "10 nested groups: abc");
    /* a quantifier takes the whole UTF-8 character: "café?" matches
     * "cafe", so the first bytes of é are not required */
    bw_lits_init(&l, "caf\xc3\xa9?", 6, 0);
    CHECK(l.n == 1 && l.lit[0].len == 3 && !memcmp(l.lit[0].s, "caf", 3),
          "caf\u00e9? requires caf");
    bw_lits_init(&l, "x\xc3\xa9+yz", 6, 0);
    CHECK(l.n == 1 && l.lit[0].len == 4 && !memcmp(l.lit[0].s, "\xc3\xa9yz", 4),
          "x\u00e9+yz requires \u00e9yz");
  }
  o = gopts("ne");
  o.pattern_len = 3; /* "ne\0" */
  CHECK(bw_grep(r, ".", &o, &res) == BW_INVALID_ARGUMENT, "NUL in pattern");
  o = gopts("needle");
  CHECK(bw_grep(r, "esc_updir", &o, &res) == BW_OUTSIDE_ROOT, "grep outside");
  int frc = bw_grep(r, "fifo", &o, &res);
  CHECK(frc == BW_NOT_REGULAR, "a FIFO as the search path is NOT_REGULAR, never opened: %s",
        bw_code_name(frc));
  if (frc == BW_OK) bw_grep_res_free(&res);

  static _Atomic int cancel = 1;
  o = gopts("needle");
  o.walk.cancel = &cancel;
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK && res.cancelled, "cancel flag stops");
  bw_grep_res_free(&res);
}


/* ---- large files: mapped, and split in chunks ---- */

static int same_res(const bw_grep_res *a, const bw_grep_res *b, char *why,
                    size_t wl) {
  if (a->nfiles != b->nfiles || a->truncated != b->truncated) {
    snprintf(why, wl, "files %zu/%zu truncated %d/%d", a->nfiles, b->nfiles,
             a->truncated, b->truncated);
    return 0;
  }
  for (size_t i = 0; i < a->nfiles; i++) {
    const bw_gfile *x = a->files[i], *y = b->files[i];
    if (strcmp(x->item.path, y->item.path) || x->count != y->count ||
        x->item.units != y->item.units || x->nlines != y->nlines) {
      snprintf(why, wl, "%s: count %zu/%zu units %zu/%zu lines %zu/%zu",
               x->item.path, x->count, y->count, x->item.units, y->item.units,
               x->nlines, y->nlines);
      return 0;
    }
    for (size_t k = 0; k < x->nlines; k++) {
      const bw_gline *l = &x->lines[k], *m = &y->lines[k];
      if (l->line != m->line || l->kind != m->kind || l->len != m->len ||
          memcmp(bw_gline_text(x, l), bw_gline_text(y, m), l->len)) {
        snprintf(why, wl, "line %zu: %zu%c vs %zu%c", k, l->line, l->kind,
                 m->line, m->kind);
        return 0;
      }
    }
  }
  return 1;
}

static char shrink_path[400];
static void shrink(const char *path) {
  (void)path;
  if (truncate(shrink_path, 0) != 0) perror("truncate");
}

static void test_chunks(const bw_root *r) {
  char p[400];
  snprintf(p, sizeof p, "%s/ws/chunk", base);
  mkdir(p, 0755);
  snprintf(p, sizeof p, "%s/ws/chunk/c.txt", base);
  FILE *fp = fopen(p, "w");
  if (!fp) return;
  fprintf(fp, "needle first\n");
  for (int i = 2; i < 400; i++) {
    if (i >= 40 && i <= 45) fprintf(fp, "needle %d\n", i);
    else if (i % 17 == 0) fprintf(fp, "\n");
    else if (i % 13 == 0) fprintf(fp, "xneedle needle zz%d\n", i);
    else if (i % 11 == 0) fprintf(fp, "NEEDLE crlf\r\n");
    else if (i % 7 == 0) fprintf(fp, "a needle here %d\n", i);
    else fprintf(fp, "line %d filler text of some length\n", i);
  }
  fprintf(fp, "needle at the end, no newline");
  fclose(fp);

  static const char *pats[] = {"needle", "ne+dle", "\\w+dle|zz[0-9]", "^x", "dle$", "NEEDLE"};
  static const size_t ctx[][2] = {{0, 0}, {2, 0}, {0, 3}, {2, 3}, {6, 6}};
  static const size_t caps[] = {0, 1, 3, 7, 50};
  static const size_t sizes[] = {10, 64, 700};
  const char *where[] = {"chunk", "chunk/c.txt"};
  for (size_t pi = 0; pi < sizeof pats / sizeof *pats; pi++)
    for (int mode = 0; mode < 3; mode++) {
      int bad = 0, chunked = 0, runs = 0;
      char why[200] = "";
      for (size_t ci = 0; ci < 5 && !bad; ci++)
        for (size_t mi = 0; mi < 5 && !bad; mi++)
          for (size_t si = 0; si < 3 && !bad; si++)
            for (int wi = 0; wi < 2 && !bad; wi++) {
              if (mode != BW_GREP_CONTENT && ci) continue;
              bw_grep_opts o = gopts(pats[pi]);
              o.mode = mode;
              o.ignore_case = pi == 5;
              o.before = ctx[ci][0];
              o.after = ctx[ci][1];
              if (caps[mi]) o.max_results = caps[mi];
              o.map_min = (size_t)1 << 40; /* read() */
              bw_grep_res a, b;
              if (bw_grep(r, where[wi], &o, &a)) {
                bad = 1;
                snprintf(why, sizeof why, "read search failed");
                break;
              }
              o.map_min = 1;
              o.chunk_size = sizes[si];
              /* chunks read with margins of 64 KiB (the whole file), and of a
                 few bytes: lines cut, context past them (searched again on
                 the mapping), a margin inside a line */
              static const size_t margins[] = {0, 1, 7, 40};
              for (size_t gi = 0; gi < 4 && !bad; gi++) {
                o.chunk_margin = margins[gi];
                if (bw_grep(r, where[wi], &o, &b)) {
                  bad = 1;
                  snprintf(why, sizeof why, "chunked search failed");
                  break;
                }
                runs++;
                chunked += b.chunked == 1;
                if (!same_res(&a, &b, why, sizeof why)) {
                  bad = 1;
                  size_t n = strlen(why);
                  snprintf(why + n, sizeof why - n,
                           " (ctx %zu/%zu max %zu chunk %zu margin %zu %s)", o.before, o.after,
                           o.max_results, o.chunk_size, o.chunk_margin, where[wi]);
                }
                bw_grep_res_free(&b);
              }
              bw_grep_res_free(&a);
            }
      CHECK(!bad && chunked == runs && runs > 0,
            "chunked = read for %s mode %d (%d of %d chunked): %s", pats[pi], mode,
            chunked, runs, why);
    }

  /* line numbers far into a big file, where newlines fall in the same
   * vector lane every time (a per-lane counter once overflowed) */
  sh("cd ws/chunk && yes 'plain line text' | head -c 3000000 > n.txt && echo needle >> n.txt");
  for (int mapped = 0; mapped < 2; mapped++) {
    bw_grep_opts o = gopts("needle");
    o.map_min = mapped ? 1 : (size_t)1 << 40;
    o.chunk_size = mapped ? 1000000 : 0;
    o.max_file_size = 1 << 23;
    bw_grep_res res;
    int rc = bw_grep(r, "chunk/n.txt", &o, &res);
    CHECK(rc == BW_OK && res.nfiles == 1 && res.files[0]->nlines == 1 &&
              res.files[0]->lines[0].line == 187501,
          "line 187501 (mapped %d): %zu", mapped,
          !rc && res.nfiles ? res.files[0]->lines[0].line : 0);
    if (!rc) bw_grep_res_free(&res);
  }
  sh("rm -f ws/chunk/n.txt");

  /* a mapped file shrunk under the search: unreadable, never a crash */
  bw_grep_opts o = gopts("needle");
  o.map_min = 1;
  snprintf(shrink_path, sizeof shrink_path, "%s", p);
  for (int chunk = 0; chunk < 2; chunk++) {
    sh("cd ws/chunk && head -c 300000 /dev/urandom | base64 > s.txt && echo needle >> s.txt");
    snprintf(shrink_path, sizeof shrink_path, "%s/ws/chunk/s.txt", base);
    o.chunk_size = chunk ? 4096 : 0;
    bw_grep_mapped_hook = shrink;
    bw_grep_res res;
    int rc = bw_grep(r, "chunk/s.txt", &o, &res);
    bw_grep_mapped_hook = NULL;
    CHECK(rc == BW_OK && res.unreadable == 1 && res.nfiles == 0,
          "file shrunk while mapped (chunks %d): rc %d, unreadable %zu, files %zu",
          chunk, rc, rc ? 0 : res.unreadable, rc ? 0 : res.nfiles);
    if (!rc) bw_grep_res_free(&res);
  }
  sh("rm -f ws/chunk/s.txt");
  /* a FIFO named as the path, with every file mapped: refused, not opened */
  o = gopts("needle");
  o.map_min = 1;
  bw_grep_res res;
  int rc = bw_grep(r, "fifo", &o, &res);
  CHECK(rc != BW_OK, "grep on a FIFO with mapping on: refused (%d)", rc);
  if (!rc) bw_grep_res_free(&res);
  sh("rm -rf ws/chunk");
}

/* Files mode answers a large file from its first 64 KiB when a whole
 * line there matches (grep.c files_head), else searches it all: the same
 * files either way, judged text or binary by the same head, and only the
 * files not answered by their heads are mapped. */
static char mapped_names[1024];
static void note_mapped(const char *path) {
  size_t n = strlen(mapped_names);
  snprintf(mapped_names + n, sizeof mapped_names - n, "%s ", path);
}

static void test_files_head(const bw_root *r) {
  /* ~200 KB each: filler lines of 50 bytes, with "needle" where named */
  sh("mkdir -p ws/fh && cd ws/fh && "
     "filler() { head -c $1 /dev/zero | tr '\\0' 'x' | fold -w 49; } && "
     "{ echo needle first; filler 200000; } > a.txt && "                  /* in the head */
     "{ filler 150000; echo; echo needle late; filler 50000; } > b.txt && " /* past it */
     /* the line "xx needle across" starts at 65525: across the head's end */
     "{ filler 64214; echo; echo 'xx needle across'; filler 100000; } > c.txt && "
     /* the same line at 65527: the head ends right after "needle" */
     "{ filler 64216; echo; echo 'xx needle across'; filler 100000; } > k.txt && "
     "{ printf 'needle\\n\\0'; filler 200000; } > d.txt && "               /* NUL in the first 8 KiB */
     "{ echo needle; filler 20000; printf '\\0\\n'; filler 180000; } > e.txt && " /* NUL past it */
     "{ printf 'caf\\351 needle\\n'; filler 200000; } > f.txt && "          /* Latin-1 head */
     "filler 200000 > g.txt && "                                          /* no match */
     "{ echo needle; filler 100000; printf '\\377\\n'; filler 100000; } > h.txt && " /* bad UTF-8 past the head */
     "{ printf '\\377\\376'; { echo needle; filler 100000; } | iconv -f UTF-8 -t UTF-16LE; } > j.txt");
  /* "needle$": a head cut after "needle" must not answer for k.txt */
  static const char *pats[] = {"needle", "needle$"};
  static const char *wants[] = {"a.txt b.txt c.txt e.txt f.txt h.txt j.txt k.txt ",
                                "e.txt f.txt h.txt j.txt "};
  static const char *want_mapped[] = {"b.txt c.txt d.txt f.txt g.txt j.txt k.txt ",
                                      "a.txt b.txt c.txt d.txt f.txt g.txt j.txt k.txt "};
  for (int pi = 0; pi < 2; pi++) {
    const char *want = wants[pi];
    size_t searched[2] = {0, 0}, bytes[2] = {0, 0};
    for (int mapped = 0; mapped < 2; mapped++) {
      for (int threads = 1; threads <= 2; threads++) {
        bw_grep_opts o = gopts(pats[pi]);
        o.mode = BW_GREP_FILES;
        o.walk.threads = threads;
        o.map_min = mapped ? 1 : (size_t)1 << 40;
        mapped_names[0] = 0;
        if (threads == 1) bw_grep_mapped_hook = note_mapped; /* it is not thread-safe */
        bw_grep_res res;
        int rc = bw_grep(r, "fh", &o, &res);
        bw_grep_mapped_hook = NULL;
        CHECK(rc == BW_OK, "files mode over fh (mapped %d)", mapped);
        if (rc) continue;
        char got[1024] = "";
        for (size_t i = 0; i < res.nfiles; i++) {
          size_t n = strlen(got);
          snprintf(got + n, sizeof got - n, "%s ", res.files[i]->item.path);
        }
        CHECK(!strcmp(got, want), "%s: files (mapped %d, %d threads): %s", pats[pi], mapped,
              threads, got);
        CHECK(res.n_binary == 1 && !strcmp(res.skipped_binary[0], "d.txt"),
              "d.txt binary by its head (mapped %d): %zu", mapped, res.n_binary);
        if (mapped && threads == 1) {
          /* sorted: the walk's order is the directory's */
          char sorted[1024] = "";
          const char *all[] = {"a.txt", "b.txt", "c.txt", "d.txt", "e.txt", "f.txt",
                               "g.txt", "h.txt", "j.txt", "k.txt"};
          for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
            char key[40];
            snprintf(key, sizeof key, "%s ", all[i]);
            if (strstr(mapped_names, key)) strcat(sorted, key);
          }
          CHECK(!strcmp(sorted, want_mapped[pi]),
                "%s: mapped only what the head did not answer: %s", pats[pi], sorted);
        }
        searched[mapped] = res.searched, bytes[mapped] = res.bytes;
        bw_grep_res_free(&res);
      }
    }
    CHECK(searched[0] == searched[1] && bytes[0] == bytes[1],
          "%s: files and bytes searched alike: %zu/%zu, %zu/%zu", pats[pi], searched[0],
          searched[1], bytes[0], bytes[1]);
  }
  sh("rm -rf ws/fh");
}

/* The stash: the newest block grows in place, a block that no longer
 * fits moves whole (its bytes kept) to a new chunk, and a block larger
 * than a chunk gets one of its own. */
static void test_stash(void) {
  bw_stash st = {0};
  char *a = bw_stash_grow(&st, NULL, 0, 10);
  CHECK(a != NULL, "first block");
  memcpy(a, "0123456789", 10);
  char *a2 = bw_stash_grow(&st, a, 10, 20);
  CHECK(a2 == a && !memcmp(a2, "0123456789", 10), "grown in place");
  char *b = bw_stash_grow(&st, NULL, 0, 5);
  CHECK(b && b >= a + 20 && ((uintptr_t)b & 15) == 0, "next block after, aligned");
  memcpy(b, "hello", 5);
  size_t big = (size_t)40 << 20; /* more than a chunk */
  char *b2 = bw_stash_grow(&st, b, 5, big);
  CHECK(b2 && b2 != b && !memcmp(b2, "hello", 5), "moved whole, bytes kept");
  if (b2) b2[big - 1] = 'z';
  char *c = bw_stash_grow(&st, NULL, 0, 1);
  CHECK(c != NULL && !memcmp(a, "0123456789", 10), "older blocks untouched");
  bw_stash other = {0};
  CHECK(bw_stash_grow(&other, NULL, 0, 1) != NULL, "second stash");
  bw_stash_take(&st, &other);
  CHECK(other.head == NULL && st.head != NULL, "taken");
  bw_stash_free(&st);
  CHECK(st.head == NULL, "freed");
}

/* Large read files are searched in blocks of whole lines (grep.c,
 * stream_file) with the result the whole file gives: against the same
 * files scanned whole on a mapping, for blocks that cut lines anywhere, a
 * line longer than the buffer, a last line with no newline, per-file caps
 * met mid-file, a binary head and a head that is not UTF-8 (read whole). */
static void test_stream(const bw_root *r) {
  sh("mkdir -p ws/streamed && cd ws/streamed && "
     "awk 'BEGIN { for (i = 1; i <= 30000; i++) {"
     " if (i == 15000) { printf \"long \"; for (k = 0; k < 30000; k++) printf \"xxxxxxxxx \"; printf \"needle mid\"; for (k = 0; k < 3000; k++) printf \" yyyy\"; printf \"\\n\" }"
     " else if (i % 97 == 0) printf \"needle %d\\n\", i;"
     " else if (i % 13 == 0) printf \"xneedle needle zz%d\\n\", i;"
     " else if (i % 11 == 0) printf \"NEEDLE crlf\\r\\n\";"
     " else if (i % 17 == 0) printf \"\\n\";"
     " else printf \"line %d filler text of some length, no match on it\\n\", i }"
     " printf \"needle at the end, no newline\" }' > s1.txt && "
     "head -c 100 /dev/zero > s2.bin && head -c 1300000 s1.txt >> s2.bin && "
     "printf 'caf\\351 needle\\n' > s3.txt && head -c 1300000 s1.txt >> s3.txt && "
     "head -c 1200000 s1.txt > s4.txt");
  static const char *pats[] = {"needle", "ne+dle", "NEEDLE", "\\w+dle|zz[0-9]", "dle$", "^x"};
  static const size_t blocks[] = {0, 1000, 4096, 65537};
  static const size_t caps[] = {0, 3, 40};
  int bad = 0, streamed = 0;
  char why[300] = "";
  for (size_t pi = 0; pi < sizeof pats / sizeof *pats && !bad; pi++)
    for (int mode = 0; mode < 3 && !bad; mode++)
      for (size_t bi = 0; bi < 4 && !bad; bi++)
        for (size_t ci = 0; ci < 3 && !bad; ci++) {
          bw_grep_opts o = gopts(pats[pi]);
          o.mode = mode;
          o.ignore_case = pi == 2;
          o.max_results = caps[ci];
          o.max_file_size = 8 << 20;
          o.max_line = 100;
          o.stream_block = blocks[bi];
          o.map_min = (size_t)1 << 40; /* read: streamed */
          bw_grep_res a, b;
          if (bw_grep(r, "streamed", &o, &a)) {
            bad = 1;
            snprintf(why, sizeof why, "streamed search failed");
            break;
          }
          o.map_min = 1; /* mapped, one scan of the whole file */
          o.chunk_size = (size_t)1 << 40;
          if (bw_grep(r, "streamed", &o, &b)) {
            bw_grep_res_free(&a);
            bad = 1;
            snprintf(why, sizeof why, "mapped search failed");
            break;
          }
          streamed += a.streamed > 0;
          if (!same_res(&a, &b, why, sizeof why) || a.n_binary != b.n_binary ||
              /* a capped content search prunes by what the other worker found */
              ((mode || !caps[ci]) && a.searched != b.searched) ||
              a.found_matches != b.found_matches ||
              b.streamed || a.streamed > 2 || (pi < 5 && !a.streamed)) { /* s1, s4 (s3: read whole) */
            bad = 1;
            size_t n = strlen(why);
            snprintf(why + n, sizeof why - n,
                     " (binary %zu/%zu searched %zu/%zu found %zu/%zu streamed %zu/%zu)",
                     a.n_binary, b.n_binary, a.searched, b.searched, a.found_matches,
                     b.found_matches, a.streamed, b.streamed);
          }
          if (bad) {
            size_t n = strlen(why);
            snprintf(why + n, sizeof why - n, " [%s mode %d block %zu cap %zu]", pats[pi], mode,
                     blocks[bi], caps[ci]);
          }
          bw_grep_res_free(&a);
          bw_grep_res_free(&b);
        }
  CHECK(!bad && streamed > 0, "streamed = whole: %s", why);
  sh("rm -rf ws/streamed");
}

/* Kept lines past a stash chunk (32 MiB): 12 files of 3 MiB, every line
 * a match, read (not mapped) by two workers; every line comes back whole
 * and in order, whichever chunk it landed in. */
static void test_stash_grep(const bw_root *r) {
  sh("mkdir -p ws/stashed && cd ws/stashed && for i in 0 1 2 3 4 5 6 7 8 9 10 11; do "
     "awk -v f=$i 'BEGIN { for (n = 1; n <= 30000; n++) "
     "printf \"stashline f%02d n%06d %s\\n\", f, n, "
     "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\" }' "
     "> f$i.txt; done");
  bw_grep_opts o = gopts("stashline");
  o.max_results = 0; /* no limit: the stash is used throughout */
  o.max_file_size = 8 << 20;
  o.map_min = (size_t)1 << 30; /* read, not mapped */
  o.walk.threads = 1;           /* one worker: one stash takes all 37 MB */
  bw_grep_res res;
  CHECK(bw_grep(r, "stashed", &o, &res) == BW_OK, "grep stashed");
  CHECK(res.nfiles == 12 && total(&res) == 360000, "all lines kept: %zu files, %zu",
        res.nfiles, total(&res));
  int ok = 1;
  for (size_t i = 0; ok && i < res.nfiles; i++) {
    const bw_gfile *f = res.files[i];
    for (size_t k = 0; ok && k < f->nlines; k++) {
      char want[64];
      snprintf(want, sizeof want, "stashline f%02d n%06zu ", atoi(f->item.path + 1), k + 1);
      if (f->lines[k].line != k + 1 || f->lines[k].len != 103 ||
          memcmp(bw_gline_text(f, &f->lines[k]), want, strlen(want)) ||
          bw_gline_text(f, &f->lines[k])[102] != 'x')
        ok = 0, printf("# %s line %zu: %.40s\n", f->item.path, k + 1,
                       bw_gline_text(f, &f->lines[k]));
    }
  }
  CHECK(ok, "every kept line whole, numbered and in order");
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (size_t i = 0; i < res.nfiles; i++) {
    uintptr_t p = (uintptr_t)res.files[i]->text;
    lo = p < lo ? p : lo, hi = p > hi ? p : hi;
  }
  CHECK(res.nfiles && hi - lo > ((uintptr_t)32 << 20), "the lines span more than one chunk");
  bw_grep_res_free(&res);
  sh("rm -rf ws/stashed");
}

int main(void) {
  test_stash();
  setup();
  for (int backend = 0; backend < 2; backend++) {
    test_backend = backend ? BW_WALK : BW_OPENAT2;
    char ws[300];
    snprintf(ws, sizeof ws, "%s/ws", base);
    bw_root r;
    CHECK(bw_root_open(&r, ws, NULL, 0) == BW_OK, "root open");
    r.backend = test_backend;
    printf("# backend %s\n", test_backend == BW_WALK ? "walk" : "openat2");
    test_grep(&r);
    test_chunks(&r);
    test_files_head(&r);
    test_stash_grep(&r);
    test_stream(&r);
    bw_root_close(&r);
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
