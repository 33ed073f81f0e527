/*
 * test_search.c - C tests of the search core's walk (no Lua): the glob
 * matcher, gitignore rules, the walker's link and mount safety, one
 * directory's entries shared between workers, entries held back for the
 * caller's verdict, and the glob search. Both resolver backends (grep:
 * test_grep.c). Closes with "N passed, N failed".
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

/* ---- glob ---- */

static int gm(const char *pat, const char *path) {
  const char *why;
  bw_glob *g = bw_glob_compile(pat, strlen(pat), BW_GLOB_BRACES, &why);
  if (!g) return -1;
  int m = bw_glob_match(g, path);
  bw_glob_free(g);
  return m;
}

static void test_glob(void) {
  static const struct { const char *pat, *path; int want; } cases[] = {
      {"*.c", "a.c", 1},           {"*.c", "dir/a.c", 0},
      /* the NFA's answers where "**" + "/" + X and one-segment patterns
         take a short cut: the last component, and the edges left to it */
      {"**/*.c", "x/a.c/", 1},     {"**/*", "", 0},
      {"*", "", 0},                {"**/a", "/a", 1},
      {"**/a", "x//a", 1},         {"**/*.c", "a.c/x", 0},
      {"**/[ab]", "x/b", 1},       {"**/?", "x/yz", 0},
      {"**/*.c", "a.c", 1},        {"**/*.c", "x/y/a.c", 1},
      {"**/*.c", "x/y/a.h", 0},    {"src/**/*.h", "src/a.h", 1},
      {"src/**/*.h", "src/x/y/a.h", 1}, {"src/**/*.h", "lib/a.h", 0},
      {"src/**", "src/a", 1},      {"src/**", "src", 0},
      {"a?c", "abc", 1},           {"a?c", "a/c", 0},
      {"[abc]x", "bx", 1},         {"[!abc]x", "bx", 0},
      {"[a-z]9", "q9", 1},         {"[]]", "]", 1},
      {"*.{c,h}", "a.h", 1},       {"{src,lib}/**/*.rs", "lib/x/m.rs", 1},
      {"{src,lib}/*.rs", "bin/m.rs", 0}, {"\\*x", "*x", 1},
      {"\\*x", "ax", 0},           {"a*b*c*d", "aXbYcZd", 1},
      {"a*b*c*d", "aXbYcZ", 0},    {"./a/b", "a/b", 1},
      {"é?", "éü", 1},             {"**", "a/b/c", 1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
    CHECK(gm(cases[i].pat, cases[i].path) == cases[i].want, "glob %s vs %s",
          cases[i].pat, cases[i].path);
  const char *why = NULL;
  CHECK(!bw_glob_compile("a/../b", 6, BW_GLOB_BRACES, &why) && why, "'..' refused");
  CHECK(!bw_glob_compile("a\0b", 3, BW_GLOB_BRACES, &why), "NUL refused");
  bw_glob *g = bw_glob_compile("drivers/*/foo/*.c", 17, BW_GLOB_BRACES, &why);
  char pre[64];
  bw_glob_prefix(g, pre, sizeof pre);
  CHECK(!strcmp(pre, "drivers"), "literal prefix: %s", pre);
  CHECK(bw_glob_viable(g, "drivers/net"), "viable below drivers/net");
  CHECK(bw_glob_viable(g, "drivers/net/foo"), "viable below drivers/net/foo");
  CHECK(!bw_glob_viable(g, "drivers/net/bar"), "pruned: drivers/net/bar");
  CHECK(!bw_glob_viable(g, "fs"), "pruned: fs");
  bw_glob_free(g);
  /* a pathological pattern stays linear: no exponential backtracking */
  char pat[200], path[4000];
  strcpy(pat, "");
  for (int i = 0; i < 30; i++) strcat(pat, "*a");
  strcat(pat, "b");
  memset(path, 'a', sizeof path - 1);
  path[sizeof path - 1] = '\0';
  CHECK(gm(pat, path) == 0, "many stars, no match, returns");
  /* minimatch's a/ then ** matches a itself too, on request */
  g = bw_glob_compile("src/**", 6, BW_GLOB_BRACES | BW_GLOB_DIR_ITSELF, &why);
  CHECK(g && bw_glob_match(g, "src") && bw_glob_match(g, "src/a/b") &&
            !bw_glob_match(g, "srcx"), "DIR_ITSELF: src/** matches src");
  bw_glob_free(g);
  /* braces: the leftmost closed group with a comma, nested or not */
  CHECK(gm("{a,{b,c}}x", "cx") == 1, "nested braces");
  CHECK(gm("{{a,b}", "{a") == 1, "unclosed outer brace is literal");
  CHECK(gm("{a,b", "{a,b") == 1, "unclosed brace is literal");
  CHECK(gm("{a}x", "{a}x") == 1, "no comma: literal");
  /* unclosed braces around alternatives: one pass finds the groups */
  static char big[4097];
  size_t n = 0;
  for (int i = 0; i < 4; i++) memcpy(big + n, "{a,b}", 5), n += 5;
  while (n < 4096) big[n++] = '{';
  g = bw_glob_compile(big, n, BW_GLOB_BRACES, &why);
  CHECK(g && bw_glob_matchn(g, big + 16, n - 16) == 0, "4096 braces compile");
  bw_glob_free(g);
  /* the expansion is bounded: 256 alternatives of 4000 bytes refused */
  n = 0;
  for (int i = 0; i < 8; i++) memcpy(big + n, "{a,b}", 5), n += 5;
  while (n < 4096) big[n++] = 'x';
  why = NULL;
  CHECK(!bw_glob_compile(big, n, BW_GLOB_BRACES, &why) && why &&
            strstr(why, "64 KiB"), "expansion capped: %s", why ? why : "");
}

/* ---- gitignore ---- */

static int im(const char *rules, const char *path, int is_dir) {
  bw_ignore *ig = bw_ignore_parse(rules, strlen(rules));
  if (!ig) return 0;
  int m = bw_ignore_match(ig, path, is_dir);
  bw_ignore_free(ig);
  return m;
}

/* A pattern without a slash is matched on the basename alone (a compare
 * for a name, "*.ext", "name*"): each must agree with the whole-path glob
 * "**" "/" X it stands for, on paths at several depths. */
static void test_ignore_names(void) {
  static const char *pats[] = {
      "x.o", "*.o", "*.tar.gz", "foo*", "*", "?.c", "*.[ch]", "a*b", "\\*lit",
      "*~", "x#*#", ".*", "x", "*x*", "Makefile", "modules.order", "*.c.[012]*.*",
      "core", "ncscope.*", "**", "foo**", "\\#x"};
  /* walker paths: no trailing "/" */
  static const char *paths[] = {
      "x.o", "a/x.o", "a/b/x.o", "x.oo", "a/.o", "foo", "a/foo.c", "foobar/b",
      "a.tar.gz", "d/a.tar.gz", "tar.gz", "q.c", "d/q.h", "d/qq.c", "ab", "d/axxb",
      "*lit", "d/*lit", "f~", "#a#", ".hidden", "d/.x", "x", "y/x", "yx", "Makefile",
      "d/Makefile.in", "modules.order", "a.c.0x.y", "core", "d/core", "ncscope.out",
      "x#a#", "#x", "a/#x", "\\#x"};
  for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
    char full[64];
    snprintf(full, sizeof full, "**/%s", pats[i]);
    const char *why;
    bw_glob *g = bw_glob_compile(full, strlen(full), 0, &why);
    char rule[64];
    snprintf(rule, sizeof rule, "%s\n", pats[i]);
    for (size_t j = 0; j < sizeof paths / sizeof *paths; j++) {
      int want = g && bw_glob_match(g, paths[j]) ? 1 : 0;
      CHECK(im(rule, paths[j], 0) == want, "rule %s on %s: the glob says %d", pats[i], paths[j], want);
    }
    bw_glob_free(g);
  }
  /* anchored names (a compare when plain) against the glob of the same */
  static const char *anch[] = {"/x", "/a/b", "a/b", "a//b", "/./a", "a/./b", "/a/b/c", "/a/b*"};
  static const char *apaths[] = {"x", "a/x", "a/b", "a/b/c", "b", "a", "a/bb", "x/a/b"};
  for (size_t i = 0; i < sizeof anch / sizeof *anch; i++) {
    const char *p = anch[i] + (anch[i][0] == '/');
    const char *why;
    bw_glob *g = bw_glob_compile(p, strlen(p), 0, &why);
    char rule[64];
    snprintf(rule, sizeof rule, "%s\n", anch[i]);
    for (size_t j = 0; j < sizeof apaths / sizeof *apaths; j++) {
      int want = g && bw_glob_match(g, apaths[j]) ? 1 : 0;
      CHECK(im(rule, apaths[j], 0) == want, "rule %s on %s: the glob says %d", anch[i], apaths[j], want);
    }
    bw_glob_free(g);
  }
}

/* Several rules: the last one that matches counts, whichever way each is
 * looked up (indexed names, extensions, paths; the others in turn). The
 * reference evaluates each line alone, last first. */
static void test_ignore_order(void) {
  static const char *sets[] = {
      "*.o\n!keep.o\n", "!keep.o\n*.o\n", "build/\n!build\n", "!build\nbuild/\n",
      "/a/b\n!*b\n", "!b\n/a/b\n", "*.o\n!*.o\nx.o/\n", "x*\n!*.c\n/x.c\n*.c/\n",
      "*.gz\n*.tar.gz\n!a.tar.gz\n", "a/**\n!*.h\n", "*\n!*.c\n!*/\n", "core\n!/core\ncore/\n"};
  static const char *paths[] = {
      "keep.o", "x.o", "d/keep.o", "build", "d/build", "a/b", "b", "d/a/b", "x.c", "x.h",
      "d/x.c", "a.tar.gz", "b.tar.gz", "a/x.h", "a/x.c", "core", "d/core", "o", ".o"};
  for (size_t i = 0; i < sizeof sets / sizeof *sets; i++) {
    char lines[8][32];
    size_t nl = 0;
    for (const char *p = sets[i]; *p && nl < 8;) {
      const char *e = strchr(p, '\n');
      snprintf(lines[nl++], sizeof lines[0], "%.*s\n", (int)(e - p), p);
      p = e + 1;
    }
    for (size_t j = 0; j < sizeof paths / sizeof *paths; j++)
      for (int dir = 0; dir < 2; dir++) {
        int want = 0;
        for (size_t k = nl; k-- > 0 && !want;) want = im(lines[k], paths[j], dir);
        CHECK(im(sets[i], paths[j], dir) == want, "rules %zu on %s (dir %d): want %d", i,
              paths[j], dir, want);
      }
  }
}

/* Cases from gitignore(5). */
static void test_ignore(void) {
  CHECK(im("*.o\n", "a/b/x.o", 0) == 1, "no slash: any depth");
  CHECK(im("/*.o\n", "a/x.o", 0) == 0, "leading slash anchors");
  CHECK(im("/*.o\n", "x.o", 0) == 1, "anchored at top");
  CHECK(im("doc/frotz\n", "doc/frotz", 1) == 1, "middle slash anchors");
  CHECK(im("doc/frotz\n", "a/doc/frotz", 1) == 0, "middle slash: not deeper");
  CHECK(im("frotz/\n", "a/frotz", 1) == 1, "dir-only matches a dir");
  CHECK(im("frotz/\n", "a/frotz", 0) == 0, "dir-only skips a file");
  CHECK(im("*.log\n!keep.log\n", "keep.log", 0) == -1, "negation re-includes");
  CHECK(im("*.log\n!keep.log\n", "x.log", 0) == 1, "negation is specific");
  CHECK(im("!keep.log\n*.log\n", "keep.log", 0) == 1, "last rule wins");
  CHECK(im("# comment\n\n", "# comment", 0) == 0, "comments and blanks");
  CHECK(im("\\#hash\n", "#hash", 0) == 1, "escaped #");
  CHECK(im("\\!bang\n", "!bang", 0) == 1, "escaped !");
  CHECK(im("trail   \n", "trail", 0) == 1, "trailing spaces dropped");
  CHECK(im("**/foo\n", "x/y/foo", 0) == 1, "leading **");
  CHECK(im("abc/**\n", "abc/x/y", 0) == 1, "trailing ** inside");
  CHECK(im("abc/**\n", "abc", 1) == 0, "trailing ** not the dir itself");
  CHECK(im("a/**/b\n", "a/b", 0) == 1, "a/**/b: zero dirs");
  CHECK(im("a/**/b\n", "a/x/y/b", 0) == 1, "a/**/b: several dirs");
  CHECK(im("crlf\r\n", "crlf", 0) == 1, "CRLF ignore file");
  test_ignore_names();
  test_ignore_order();
}

/* ---- the tree ---- */

typedef struct coll {
  char paths[512][128];
  _Atomic int n; /* visits come from every worker */
} coll;

static int collect(void *arg, const bw_wentry *e) {
  coll *c = arg;
  int i = atomic_fetch_add(&c->n, 1);
  if (i < 512) snprintf(c->paths[i], 128, "%s", e->path);
  return e->type == 'd';
}

static int seen(const coll *c) { return c->n < 512 ? c->n : 512; }

static int has(const coll *c, const char *p) {
  for (int i = 0; i < seen(c); i++)
    if (!strcmp(c->paths[i], p)) return 1;
  return 0;
}

static int under(const coll *c, const char *dir) {
  size_t l = strlen(dir);
  for (int i = 0; i < seen(c); i++)
    if (!strncmp(c->paths[i], dir, l) && c->paths[i][l] == '/') return 1;
  return 0;
}

static void test_walk(const bw_root *r) {
  static coll c;
  c.n = 0;
  bw_walk_opts o = {.threads = 2, .respect_ignore = 1, .visit = collect, .arg = &c};
  CHECK(bw_walk_run(r, ".", &o) == BW_OK, "walk");
  CHECK(has(&c, "src/a.c") && has(&c, "src/sub/b.h"), "files seen");
  CHECK(has(&c, "esc_updir") && has(&c, "esc_dir") && has(&c, "proc_link"),
        "links reported");
  CHECK(!under(&c, "esc_updir") && !under(&c, "esc_dir") &&
            !under(&c, "proc_link") && !under(&c, "link_in"),
        "links never descended");
  CHECK(!has(&c, ".hidden") && !has(&c, "build") && !has(&c, "lib/c.txt"),
        "hidden and ignored left out");
  CHECK(!has(&c, ".git"), ".git skipped");
  c.n = 0;
  o.include_hidden = 1;
  o.respect_ignore = 0;
  CHECK(bw_walk_run(r, ".", &o) == BW_OK, "walk all");
  CHECK(has(&c, ".hidden/h.txt") && has(&c, "build/out.o") && has(&c, "lib/c.txt"),
        "hidden and ignored with the switches");
  c.n = 0;
  CHECK(bw_walk_run(r, "esc_updir", &o) == BW_OUTSIDE_ROOT, "start outside");
  CHECK(bw_walk_run(r, "src/a.c", &o) == BW_ENOTDIR, "start at a file");
  c.n = 0;
  o.respect_ignore = 1;
  o.include_hidden = 0;
  CHECK(bw_walk_run(r, "build", &o) == BW_OK, "walk below ignored start");
  /* rules of the root apply from a subdirectory: *.o is ignored */
  CHECK(!has(&c, "out.o"), "ancestor .gitignore applies below the start");
}

/* ---- one directory's entries shared between workers ---- */

typedef struct tally {
  _Atomic int seen[301]; /* many/f1..f300.txt */
  _Atomic int by_worker[8];
  _Atomic int visits, stop_after;
} tally;

static int count_many(void *arg, const bw_wentry *e) {
  tally *t = arg;
  int v = atomic_fetch_add(&t->visits, 1) + 1;
  int i = 0;
  if (sscanf(e->name, "f%d.txt", &i) == 1 && i >= 1 && i <= 300) atomic_fetch_add(&t->seen[i], 1);
  atomic_fetch_add(&t->by_worker[e->worker & 7], 1);
  usleep(200); /* work enough for the other workers to wait for some */
  return t->stop_after && v >= t->stop_after ? -1 : 0;
}

static int open_fds(void) {
  int n = 0;
  for (int fd = 0; fd < 1024; fd++) n += fcntl(fd, F_GETFD) >= 0;
  return n;
}

static void test_shares(const bw_root *r) {
  static tally t;
  int fds = open_fds();
  int spread = 0;
  for (int threads = 1; threads <= 4; threads++) {
    memset(&t, 0, sizeof t);
    bw_walk_stats st = {0};
    bw_walk_opts o = {.threads = threads, .visit = count_many, .arg = &t, .stats = &st};
    CHECK(bw_walk_run(r, "many", &o) == BW_OK, "walk of one large directory");
    int once = 1, workers = 0;
    for (int i = 1; i <= 300; i++) once &= atomic_load(&t.seen[i]) == 1;
    for (int k = 0; k < 8; k++) workers += atomic_load(&t.by_worker[k]) > 0;
    CHECK(once && atomic_load(&t.visits) == 300 && st.entries == 300 && st.dirs == 1,
          "every entry of a shared directory visited once");
    if (threads > 1 && workers > 1) spread++;
  }
  CHECK(spread == 3, "with 2-4 workers one directory's entries go to more than one");
  /* a stop while shares wait: they are dropped, their directory closed */
  memset(&t, 0, sizeof t);
  t.stop_after = 10;
  bw_walk_opts o = {.threads = 4, .visit = count_many, .arg = &t};
  CHECK(bw_walk_run(r, "many", &o) == BW_OK && atomic_load(&t.visits) < 300, "stop with shares");
  CHECK(open_fds() == fds, "no fd left open by shares");
  /* grep's answer does not depend on how the directory was shared */
  bw_grep_opts g = gopts("needle [0-9]+");
  g.max_results = 2000;
  g.walk.threads = 1;
  bw_grep_res one, four;
  CHECK(bw_grep(r, "many", &g, &one) == BW_OK, "grep, one worker");
  g.walk.threads = 4;
  CHECK(bw_grep(r, "many", &g, &four) == BW_OK, "grep, four workers");
  int same = one.nfiles == 300 && four.nfiles == one.nfiles;
  for (size_t i = 0; same && i < one.nfiles; i++)
    same = !strcmp(one.files[i]->item.path, four.files[i]->item.path) &&
           one.files[i]->item.units == four.files[i]->item.units;
  CHECK(same, "grep of a shared directory: the same files, in the same order");
  bw_grep_res_free(&one);
  bw_grep_res_free(&four);
  /* skipped lists: the first names in path order, and in a capped search
     only what sorts before its last result, however the workers met them */
  char dir[300];
  snprintf(dir, sizeof dir, "%s/bins", base);
  bw_root br;
  CHECK(bw_root_open(&br, dir, NULL, 0) == BW_OK, "bins root");
  br.backend = test_backend;
  for (int capped = 0; capped < 2; capped++) {
    bw_grep_res res[2];
    for (int k = 0; k < 2; k++) {
      bw_grep_opts b = gopts("needle");
      b.max_skipped = capped ? 40 : 3; /* capped: every name met kept, so the count is exact */
      b.max_results = capped ? 4 : 1000;
      b.walk.threads = k ? 4 : 1;
      CHECK(bw_grep(&br, ".", &b, &res[k]) == BW_OK, "grep of bins");
    }
    size_t listed = capped ? 4 : 3;
    int same = res[0].listed_binary == listed && res[1].listed_binary == listed;
    for (size_t i = 0; same && i < listed; i++)
      same = !strcmp(res[0].skipped_binary[i], res[1].skipped_binary[i]);
    CHECK(same && !strcmp(res[1].skipped_binary[0], "b01.dat") &&
              !strcmp(res[1].skipped_binary[2], "b05.dat"),
          "skipped names: the first in path order, with one worker or four");
    /* capped at 4 results (b02..b08): the binaries before b08 only */
    CHECK(res[1].n_binary == (capped ? 4u : 20u) && res[0].n_binary == res[1].n_binary,
          "a capped search counts the skipped files before its last result");
    bw_grep_res_free(&res[0]);
    bw_grep_res_free(&res[1]);
  }
  bw_root_close(&br);
}

/* ---- entries held back for the caller's verdict (o->defer) ---- */

static int list_collect(void *arg, const bw_entry *e) {
  coll *c = arg;
  int i = atomic_fetch_add(&c->n, 1);
  if (i < 512) snprintf(c->paths[i], 128, "%s", e->path);
  return 0;
}

typedef struct verdicts {
  char asked[64][128];
  int n, batches, stop_with;
  const char *deny; /* a path substring the judge refuses */
  int slow_us;      /* a judge slower than the walkers: this long an item */
  int max_fds, total;
} verdicts;

static int judge(void *arg, const bw_wjudge *items, size_t n, unsigned char *allow) {
  verdicts *v = arg;
  v->batches++;
  v->total += (int)n;
  if (v->slow_us) {
    int fds = v->batches % 4 == 1 ? open_fds() : 0;
    if (fds > v->max_fds) v->max_fds = fds;
    usleep((useconds_t)(v->slow_us * (int)n));
  }
  for (size_t i = 0; i < n; i++) {
    if (v->n < 64) snprintf(v->asked[v->n++], 128, "%s%c", items[i].path, items[i].type);
    allow[i] = !strstr(items[i].path, v->deny);
  }
  return v->stop_with;
}

static int asked(const verdicts *v, const char *path_type) {
  for (int i = 0; i < v->n; i++)
    if (!strcmp(v->asked[i], path_type)) return 1;
  return 0;
}

static void test_defer(const bw_root *r) {
  bw_rules *rs = bw_rules_new();
  const char *pats[] = {"src/sub", "**/*.h", "src/a.c"}, *why;
  CHECK(bw_rules_add(rs, pats, 3, NULL, 0, BW_OP_READ, 0, 1, &why) == 0, "defer rules");
  static coll c;
  for (int threads = 1; threads <= 4; threads++) {
    verdicts v = {.deny = "a.c"};
    c.n = 0;
    bw_walk_stats st = {0};
    bw_walk_opts o = {.threads = threads, .respect_ignore = 1, .visit = collect, .arg = &c, .stats = &st,
                      .defer = rs, .judge = judge, .judge_arg = &v};
    CHECK(bw_walk_run(r, ".", &o) == BW_OK, "walk with deferred entries");
    CHECK(asked(&v, "src/subd") && asked(&v, "src/a.cf") && asked(&v, "src/sub/b.hf"),
          "each deferred entry asked, a directory's own entries after it is allowed");
    CHECK(v.n == 3, "nothing else asked");
    CHECK(!has(&c, "src/a.c") && st.skipped_policy == 1, "a refused entry not visited, counted");
    CHECK(has(&c, "src/sub") && has(&c, "src/sub/b.h") && has(&c, "src/big.txt"),
          "allowed entries visited once judged, the rest as ever");
  }
  /* one large directory's entries shared between workers are held back
   * all the same (a share is not a judged entry) */
  bw_rules *fs = bw_rules_new();
  const char *f1[] = {"many/f1*.txt"};
  CHECK(bw_rules_add(fs, f1, 1, NULL, 0, BW_OP_READ, 0, 1, &why) == 0, "defer rules of many/");
  for (int threads = 2; threads <= 4; threads++) {
    static tally t;
    memset(&t, 0, sizeof t);
    verdicts v = {.deny = "f1"}; /* paths below the start: "f1.txt" */
    bw_walk_stats st = {0};
    bw_walk_opts o = {.threads = threads, .visit = count_many, .arg = &t, .stats = &st,
                      .defer = fs, .judge = judge, .judge_arg = &v};
    CHECK(bw_walk_run(r, "many", &o) == BW_OK, "walk of a shared directory with deferred entries");
    int f1_seen = 0;
    for (int i = 1; i <= 300; i++) f1_seen += (i == 1 || (i >= 10 && i <= 19) || (i >= 100 && i <= 199)) && t.seen[i];
    CHECK(f1_seen == 0 && st.skipped_policy == 111 && atomic_load(&t.visits) == 189 && v.n == 64,
          "every f1* held back and refused, the other 189 visited");
  }
  bw_rules_free(fs);
  /* the lister (list_dir) holds back the same entries, one at a time */
  {
    verdicts lv = {.deny = "a.c"};
    size_t skipped = 0, omitted = 0;
    static coll lc;
    lc.n = 0;
    bw_list_opts lo = {.max_depth = 8, .max_entries = 1000, .count_limit = 1000, .skipped_policy = &skipped,
                       .defer = rs, .judge = judge, .judge_arg = &lv};
    CHECK(bw_list(r, ".", &lo, list_collect, &lc, &omitted) == BW_OK, "list with deferred entries");
    CHECK(asked(&lv, "src/subd") && asked(&lv, "src/a.cf") && asked(&lv, "src/sub/b.hf") && lv.n == 3,
          "the lister asks about each held-back entry, once");
    CHECK(!has(&lc, "src/a.c") && has(&lc, "src/sub/b.h") && skipped == 1, "refused: left out, counted");
    lv.stop_with = BW_TOO_LARGE;
    CHECK(bw_list(r, ".", &lo, list_collect, &lc, &omitted) == BW_TOO_LARGE, "the judge's code ends the listing");
  }
  /* a judge slower than the walkers over a wide tree: the walkers wait
   * for it, never opening a directory per entry held back */
  {
    sh("mkdir -p ws/wide && cd ws/wide && for i in $(seq 1 300); do mkdir d$i && echo x > d$i/f.txt; done");
    bw_rules *all = bw_rules_new();
    const char *every[] = {"wide/**"};
    CHECK(bw_rules_add(all, every, 1, NULL, 0, BW_OP_READ, 0, 1, &why) == 0, "defer everything below wide/");
    int fds0 = open_fds();
    for (int threads = 2; threads <= 4; threads += 2) {
      verdicts v = {.deny = "zzz", .slow_us = 20};
      static coll wc;
      wc.n = 0;
      bw_walk_stats st = {0};
      bw_walk_opts o = {.threads = threads, .visit = collect, .arg = &wc, .stats = &st,
                        .defer = all, .judge = judge, .judge_arg = &v};
      CHECK(bw_walk_run(r, "wide", &o) == BW_OK && v.total == 600 && wc.n == 600 && st.skipped_policy == 0,
            "a wide tree, everything held back and allowed: all of it visited");
      /* a worker waits for its entry's verdict holding only the
       * directories it walks (one a level, and the parents' until their
       * children open): nothing more for a wide tree */
      CHECK(v.max_fds - fds0 < 4 * threads + 8, "the fds held for the judge stay bounded");
      if (v.max_fds - fds0 >= 4 * threads + 8) printf("# %d fds open beside the %d before\n", v.max_fds - fds0, fds0);
    }
    bw_rules_free(all);
    sh("rm -rf ws/wide");
  }
  /* without a judge every such entry is refused; an allowed directory is
   * not entered unasked */
  c.n = 0;
  bw_walk_stats st = {0};
  bw_walk_opts o = {.threads = 2, .respect_ignore = 1, .visit = collect, .arg = &c, .stats = &st, .defer = rs};
  CHECK(bw_walk_run(r, ".", &o) == BW_OK, "walk without a judge");
  CHECK(!has(&c, "src/a.c") && !has(&c, "src/sub") && !under(&c, "src/sub") && st.skipped_policy == 2,
        "no judge: refused, counted, never entered");
  /* a judge that fails stops the walk with its code */
  verdicts v = {.deny = "zzz", .stop_with = BW_TOO_LARGE};
  o.judge = judge;
  o.judge_arg = &v;
  CHECK(bw_walk_run(r, ".", &o) == BW_TOO_LARGE, "the judge's code ends the walk");
  bw_rules_free(rs);
}

static void test_globsearch(const bw_root *r) {
  bw_glob_opts o = {.types = 1, .max_results = 1000, .count_limit = 100000};
  o.walk.threads = 2;
  o.walk.respect_ignore = 1;
  bw_glob_res res;
  const char *p = "**/*.{c,h}";
  CHECK(bw_glob_search(r, ".", p, strlen(p), &o, &res) == BW_OK, "glob");
  CHECK(res.n == 2 && !strcmp(res.items[0]->item.path, "src/a.c") &&
            !strcmp(res.items[1]->item.path, "src/sub/b.h"),
        "glob results: %zu", res.n);
  bw_glob_res_free(&res);
  p = "many/*.txt";
  o.max_results = 5;
  CHECK(bw_glob_search(r, ".", p, strlen(p), &o, &res) == BW_OK, "glob capped");
  CHECK(res.n == 5 && res.truncated && !strcmp(res.items[0]->item.path, "many/f1.txt") &&
            !strcmp(res.items[4]->item.path, "many/f102.txt"),
        "first five in path order");
  bw_glob_res_free(&res);
  p = "esc_updir/*";
  o.types = 15;
  CHECK(bw_glob_search(r, ".", p, strlen(p), &o, &res) == BW_OUTSIDE_ROOT ||
            (res.n == 0),
        "a link prefix is not walked");
  bw_glob_res_free(&res);
  p = "../outside/*";
  CHECK(bw_glob_search(r, ".", p, strlen(p), &o, &res) == BW_INVALID_ARGUMENT, "..");
}

int main(void) {
  test_glob();
  test_ignore();
  setup();
  for (int backend = 0; backend < 2; backend++) {
    test_backend = backend ? BW_WALK : BW_OPENAT2;
    char ws[300];
    snprintf(ws, sizeof ws, "%s/ws", base);
    bw_root r;
    CHECK(bw_root_open(&r, ws, NULL, 0) == BW_OK, "root open");
    r.backend = test_backend;
    printf("# backend %s\n", test_backend == BW_WALK ? "walk" : "openat2");
    test_walk(&r);
    test_shares(&r);
    test_defer(&r);
    test_globsearch(&r);
    bw_root_close(&r);
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
