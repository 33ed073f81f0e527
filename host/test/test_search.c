/*
 * test_search.c - C tests of the search core (no Lua): the glob matcher,
 * gitignore rules, the walker's link and mount safety, grep's prefilter
 * against plain PCRE2, modes, context, caps and order, catastrophic
 * patterns, and cancellation. Both resolver backends. Closes with
 * "N passed, N failed".
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

/* The backend the roots of this run resolve with (each root names its
 * own: r.backend; the core has no process setting). */
static int test_backend = BW_OPENAT2;

static char base[256];

static void sh(const char *fmt) {
  char cmd[4096];
  snprintf(cmd, sizeof cmd, "cd %s && %s", base, fmt);
  if (system(cmd) != 0) {
    fprintf(stderr, "setup failed: %s\n", cmd);
    exit(2);
  }
}

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

static void setup(void) {
  strcpy(base, "/tmp/burrow-search-XXXXXX");
  if (!mkdtemp(base)) exit(2);
  sh("mkdir -p ws/src/sub ws/lib ws/.hidden ws/build ws/many outside && "
     "printf 'TOPSECRET needle\\n' > outside/secret.txt && "
     "printf 'one\\ntwo needle\\nthree\\nfour\\nfive needle\\nsix\\n' > ws/src/a.c && "
     "printf 'needle first\\n' > ws/src/sub/b.h && "
     "printf 'NEEDLE upper\\nnothing\\n' > ws/lib/c.txt && "
     "printf 'needle hidden\\n' > ws/.hidden/h.txt && "
     "printf 'needle built\\n' > ws/build/out.o && "
     "printf 'bin\\0needle\\n' > ws/src/bin.dat && "
     "head -c 5000 /dev/zero | tr '\\0' 'x' > ws/src/big.txt && "
     "printf 'needle\\n' >> ws/src/big.txt && "
     "mkdir ws/.git && printf 'build/\\n*.o\\n' > ws/.gitignore && "
     "printf 'c.txt\\n' > ws/lib/.ignore && "
     "ln -s ../outside ws/esc_updir && ln -s / ws/esc_dir && "
     "ln -s /proc/self/root ws/proc_link && ln -s src ws/link_in && "
     "ln -s loop2 ws/loop1 && ln -s loop1 ws/loop2 && mkfifo ws/fifo");
  sh("cd ws/many && for i in $(seq 1 300); do printf 'x\\nneedle %d\\n' $i > f$i.txt; done");
  sh("mkdir bins && cd bins && for i in $(seq 1 40); do n=$(printf %02d $i); "
     "if [ $((i % 2)) = 1 ]; then printf 'x\\0needle\\n' > b$n.dat; "
     "else printf 'needle %s\\n' $n > b$n.txt; fi; done");
}

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

static bw_grep_opts gopts(const char *pat) {
  bw_grep_opts o;
  memset(&o, 0, sizeof o);
  o.pattern = pat;
  o.pattern_len = strlen(pat);
  o.max_results = 1000;
  o.max_file_size = 1 << 20;
  o.max_line = 2000;
  o.max_skipped = 100;
  o.walk.threads = 2;
  o.walk.respect_ignore = 1;
  return o;
}

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
    test_grep(&r);
    test_chunks(&r);
    test_files_head(&r);
    test_globsearch(&r);
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
