/*
 * test_rules.c - C tests of policies' path rules (rules.c, no Lua): what a
 * rule matches ("**" at the root and deep, excepts, case folding, {a,b},
 * directory patterns, operation masks, first rule wins), that the fast
 * kinds mean what glob.c says of the whole pattern, and that grep, glob,
 * the walker and the listing skip, prune and count what the rules deny,
 * on both resolver backends. Closes with "N passed, N failed".
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "search.h"

#include "check.h"

/* The backend the roots of this run resolve with (each root names its
 * own: r.backend; the core has no process setting). */
static int test_backend = BW_OPENAT2;

static char base[256];

static void sh(const char *cmd) {
  char full[4096];
  snprintf(full, sizeof full, "cd %s && %s", base, cmd);
  if (system(full) != 0) {
    fprintf(stderr, "setup failed: %s\n", full);
    exit(2);
  }
}

/* One rule of up to 4 patterns and 4 excepts ("|"-separated). */
static int add(bw_rules *rs, const char *pats, const char *excs, int ops,
               int fold, int id) {
  char pbuf[512], ebuf[512];
  const char *p[4], *e[4];
  int np = 0, ne = 0;
  snprintf(pbuf, sizeof pbuf, "%s", pats);
  snprintf(ebuf, sizeof ebuf, "%s", excs ? excs : "");
  for (char *s = strtok(pbuf, "|"); s && np < 4; s = strtok(NULL, "|")) p[np++] = s;
  for (char *s = strtok(ebuf, "|"); s && ne < 4; s = strtok(NULL, "|")) e[ne++] = s;
  const char *why;
  return bw_rules_add(rs, p, np, e, ne, ops, fold, id, &why);
}

static int m(const bw_rules *rs, const char *path, int op) {
  return bw_rules_match(rs, path, strlen(path), op);
}

/* ---- matching ---- */

static void test_match(void) {
  bw_rules *rs = bw_rules_new();
  CHECK(add(rs, "**/.env|**/.env.*", "**/.env.example", BW_OP_READ | BW_OP_WRITE, 0, 1) == 0, "add env");
  CHECK(add(rs, "**/.ssh/**", NULL, BW_OP_READ, 0, 2) == 0, "add ssh");
  CHECK(add(rs, "**/*.pem|**/id_{rsa,dsa}", NULL, BW_OP_READ, 1, 3) == 0, "add keys");
  CHECK(add(rs, "secret", NULL, BW_OP_READ, 0, 4) == 0, "add dir");
  CHECK(add(rs, "**/.git/config", NULL, BW_OP_WRITE, 0, 5) == 0, "add write only");
  CHECK(add(rs, "Docs/**", NULL, BW_OP_READ, 1, 6) == 0, "add casefold path");

  CHECK(m(rs, ".env", BW_OP_READ) == 1, "**/.env at the root");
  CHECK(m(rs, "a/b/.env", BW_OP_READ) == 1, "**/.env deep");
  CHECK(m(rs, "a/.envx", BW_OP_READ) == -1, "not a longer name");
  CHECK(m(rs, ".env/inside", BW_OP_READ) == -1, "not below a dir named .env");
  CHECK(m(rs, "x/.env.local", BW_OP_READ) == 1, ".env.* deep");
  CHECK(m(rs, "x/.env.example", BW_OP_READ) == -1, "except wins over its rule");
  CHECK(m(rs, ".env.example", BW_OP_READ) == -1, "except at the root");
  CHECK(m(rs, ".ENV", BW_OP_READ) == -1, "case kept without casefold");
  CHECK(m(rs, ".env", BW_OP_WRITE) == 1, "ops mask: write too");
  CHECK(m(rs, ".env", BW_OP_DELETE) == -1, "ops mask: not delete");

  CHECK(m(rs, ".ssh/id_ecdsa", BW_OP_READ) == 2, "**/.ssh/** at the root");
  CHECK(m(rs, "home/u/.ssh/known_hosts", BW_OP_READ) == 2, "**/.ssh/** deep");
  CHECK(m(rs, ".ssh", BW_OP_READ) == -1, "**/.ssh/** is not the dir itself");

  CHECK(m(rs, "certs/site.PEM", BW_OP_READ) == 3, "casefold basename glob");
  CHECK(m(rs, "id_rsa", BW_OP_READ) == 3 && m(rs, "k/ID_DSA", BW_OP_READ) == 3, "{a,b}");
  CHECK(m(rs, "id_ecdsa", BW_OP_READ) == -1, "{a,b} is whole names");

  CHECK(m(rs, "secret", BW_OP_READ) == 4, "anchored dir pattern");
  CHECK(m(rs, "a/secret", BW_OP_READ) == -1, "anchored: not deeper");
  CHECK(m(rs, "secret/x", BW_OP_READ) == -1, "a dir pattern is the dir (walks prune it)");
  CHECK(m(rs, ".git/config", BW_OP_READ) == -1 && m(rs, ".git/config", BW_OP_WRITE) == 5,
        "a write-only rule leaves reads alone");
  CHECK(m(rs, "docs/a/b.md", BW_OP_READ) == 6, "casefold whole-path glob");
  CHECK(m(rs, ".", BW_OP_READ) == -1, "the root is not a .env");
  CHECK(bw_rules_match(rs, ".envrc", 4, BW_OP_READ) == 1, "length bounds the path");
  bw_rules_free(rs);

  /* the first rule added wins, whichever kind each is */
  rs = bw_rules_new();
  add(rs, "a/**", NULL, BW_OP_READ, 0, 10);
  add(rs, "**/.env", NULL, BW_OP_READ, 0, 20);
  add(rs, "**/*.txt", NULL, BW_OP_READ, 0, 30);
  CHECK(m(rs, "a/.env", BW_OP_READ) == 10, "path rule first");
  CHECK(m(rs, "b/.env", BW_OP_READ) == 20, "name rule next");
  CHECK(m(rs, "b/x.txt", BW_OP_READ) == 30, "basename rule last");
  bw_rules_free(rs);
  rs = bw_rules_new();
  add(rs, "**/.env", NULL, BW_OP_READ, 0, 20);
  add(rs, "a/**", NULL, BW_OP_READ, 0, 10);
  add(rs, "**/.env", NULL, BW_OP_READ, 1, 7);
  CHECK(m(rs, "a/.env", BW_OP_READ) == 20, "name rule first");
  CHECK(m(rs, "a/.ENV", BW_OP_READ) == 10, "then the path rule");
  CHECK(m(rs, "b/.Env", BW_OP_READ) == 7, "the same name folded, later");
  CHECK(bw_rules_count(rs) == 3, "count");
  bw_rules_free(rs);

  /* many names: the shared hash grows and keeps them all */
  rs = bw_rules_new();
  char name[64];
  for (int i = 0; i < 300; i++) {
    snprintf(name, sizeof name, "**/name%d", i);
    add(rs, name, NULL, BW_OP_READ, 0, i);
  }
  int all = 1;
  for (int i = 0; i < 300; i++) {
    snprintf(name, sizeof name, "d/name%d", i);
    if (m(rs, name, BW_OP_READ) != i) all = 0;
  }
  CHECK(all && m(rs, "d/name300", BW_OP_READ) == -1, "300 name rules");
  bw_rules_free(rs);

  /* errors */
  rs = bw_rules_new();
  const char *why = NULL;
  const char *bad[] = {"ok", "a/../b"}, *one[] = {"x"};
  CHECK(bw_rules_add(rs, bad, 2, NULL, 0, BW_OP_READ, 0, 1, &why) == BW_INVALID_ARGUMENT &&
            why && bw_rules_bad_index() == 1,
        "bad pattern named: %d", bw_rules_bad_index());
  CHECK(bw_rules_add(rs, one, 1, bad, 2, BW_OP_READ, 0, 1, &why) == BW_INVALID_ARGUMENT &&
            bw_rules_bad_index() == -2,
        "bad except named");
  CHECK(bw_rules_add(rs, one, 0, NULL, 0, BW_OP_READ, 0, 1, &why) == BW_INVALID_ARGUMENT &&
            bw_rules_bad_index() == INT_MIN,
        "no pattern");
  CHECK(bw_rules_add(rs, one, 1, NULL, 0, 0, 0, 1, &why) == BW_INVALID_ARGUMENT, "no ops");
  CHECK(bw_rules_add(rs, one, 1, NULL, 0, 16, 0, 1, &why) == BW_INVALID_ARGUMENT, "bad ops");
  CHECK(bw_rules_add(rs, one, 1, NULL, 0, 1, 0, -1, &why) == BW_INVALID_ARGUMENT, "bad id");
  CHECK(bw_rules_count(rs) == 0 && m(rs, "x", BW_OP_READ) == -1, "nothing half added");
  bw_rules_free(rs);

  /* a rule scoped to one root (nested roots): only that root's objects */
  rs = bw_rules_new();
  CHECK(add(rs, "conf|conf/**", NULL, BW_OP_READ, 0, 7) == 0, "add scoped");
  bw_rules_scope(rs, 2);
  CHECK(add(rs, "**/.env", NULL, BW_OP_READ, 0, 8) == 0, "add unscoped");
  CHECK(bw_rules_match_in(rs, 2, "conf/a", 6, BW_OP_READ) == 7, "scoped: its root");
  CHECK(bw_rules_match_in(rs, 1, "conf/a", 6, BW_OP_READ) == -1, "scoped: not another root's");
  CHECK(bw_rules_match_in(rs, -1, "conf/a", 6, BW_OP_READ) == 7, "scoped: a root not known matches");
  CHECK(bw_rules_match_in(rs, 1, "x/.env", 6, BW_OP_READ) == 8 && m(rs, "conf", BW_OP_READ) == 7,
        "unscoped: every root");
  bw_rules_free(rs);
}

/* The fast kinds (a name, a basename glob) answer what glob.c says of the
 * whole pattern. */
static void test_same_as_glob(void) {
  static const char *pats[] = {
      "**/.env", "**/*.pem", "**/id_{rsa,dsa}", "**/[.]env", "**/.e?v",
      "/**/.env", "./**/.env", "**/**/.env", "**/a/.env", "**", "**/*",
      "a/**/b", "*.txt", "**/\\*x", "{**/.env,x/*}", "**/.env/**", "**/.ENV",
      "**/.git/config", "**/.ssh/**", "**/.config/gcloud/**", "secret",
      "secret/**", "./a/b", "/a/b/**", "**/*.tar.gz", "**/*", "**/*.",
      "**/a//b", "**/./a", "a/./b", "**/*x/y", "**/a/**/**", "**/id_*",
  };
  static const char *paths[] = {
      ".", ".env", "a/.env", "a/b/.env", ".envx", "x.pem", "d/X.PEM", "id_rsa",
      "q/id_dsa", "id_ecdsa", "a/b", "a/x/y/b", "n.txt", "d/n.txt", "*x", "d/*x",
      "x/y", ".env/k", ".ENV", "a/.Env", "é.pem", ".pem", ".git/config",
      "x/.git/config", "x.git/config", ".git/configx", ".GIT/Config", ".ssh",
      ".ssh/k", "h/.ssh/k/l", "h/x.ssh/k", ".ssh/", "h/.ssh", ".config/gcloud/x",
      "u/.config/gcloud", "secret", "secret/x", "secretx", "a/secret",
      "Secret/X", "a/b/c", "a/bc", "x.tar.gz", "tar.gz", "d/f.", "id_x", "a/b/",
  };
  int bad = 0;
  for (int fold = 0; fold < 2; fold++)
    for (size_t i = 0; i < sizeof pats / sizeof *pats; i++) {
      const char *why;
      bw_glob *g = bw_glob_compile(pats[i], strlen(pats[i]),
                                   BW_GLOB_BRACES | (fold ? BW_GLOB_CASEFOLD : 0), &why);
      bw_rules *rs = bw_rules_new();
      const char *p[] = {pats[i]};
      if (!g || bw_rules_add(rs, p, 1, NULL, 0, BW_OP_READ, fold, 1, &why)) {
        CHECK(0, "compile %s", pats[i]);
        bw_glob_free(g);
        bw_rules_free(rs);
        continue;
      }
      for (size_t k = 0; k < sizeof paths / sizeof *paths; k++) {
        int want = bw_glob_match(g, paths[k]);
        int got = m(rs, paths[k], BW_OP_READ) == 1;
        if (want != got) {
          bad++;
          printf("# %s (fold %d) vs %s: glob %d, rules %d\n", pats[i], fold, paths[k], want, got);
        }
      }
      bw_glob_free(g);
      bw_rules_free(rs);
    }
  CHECK(bad == 0, "rules agree with the glob matcher (%d differ)", bad);
}

/* bw_glob_check says what bw_glob_compile says of every pattern (rules.c
 * checks its literal patterns with it instead of compiling them): the
 * same success or failure and the same reason, on the edges of the limits
 * and on every pattern of up to 5 bytes over the characters that matter. */
static int check_agrees(const char *p, size_t n, int flags) {
  const char *why_c = NULL, *why_k = NULL;
  bw_glob *g = bw_glob_compile(p, n, flags, &why_c);
  int rc = bw_glob_check(p, n, flags, &why_k);
  bw_glob_free(g);
  if ((g != NULL) == (rc == 0) && (g || !strcmp(why_c, why_k))) return 1;
  printf("# %.*s (%zu bytes, flags %d): compile %s, check %s\n", (int)(n > 60 ? 60 : n), p, n, flags,
         g ? "ok" : why_c, rc ? why_k : "ok");
  return 0;
}

static void test_check_as_compile(void) {
  static char big[5000];
  int bad = 0;
  /* 4096 and 4097 bytes; 128 and 129 segments; "**" runs that collapse */
  for (size_t n = 4095; n <= 4097; n++) {
    memset(big, 'a', n);
    bad += !check_agrees(big, n, BW_GLOB_BRACES);
  }
  for (int segs = 126; segs <= 131; segs++) {
    size_t n = 0;
    n += (size_t)sprintf(big + n, "**");
    for (int i = 1; i < segs; i++) n += (size_t)sprintf(big + n, "/a");
    bad += !check_agrees(big, n, BW_GLOB_BRACES);
    n = 0;
    for (int i = 0; i < segs; i++) n += (size_t)sprintf(big + n, "%s**/**/./", i ? "a/" : "");
    n += (size_t)sprintf(big + n, ".env");
    bad += !check_agrees(big, n, BW_GLOB_BRACES);
  }
  bad += !check_agrees("a\0b", 3, BW_GLOB_BRACES);
  static const char *edge[] = {"", "/", "./", "**/..", "**/../x", "a/..", "..", "**/.env/**", "**/a\\/b",
                               "\\..", "a/\\", "{a,..}/x", "{a,b", "**/{,}", "/./.", "**/**", "a//**/**/"};
  for (size_t i = 0; i < sizeof edge / sizeof *edge; i++)
    for (int f = 0; f < 8; f++) bad += !check_agrees(edge[i], strlen(edge[i]), f);
  /* every pattern of up to 5 bytes over these */
  static const char al[] = "a./*\\{,}";
  const size_t k = sizeof al - 1;
  char p[6];
  for (size_t len = 0; len <= 5; len++) {
    size_t total = 1;
    for (size_t i = 0; i < len; i++) total *= k;
    for (size_t x = 0; x < total; x++) {
      size_t y = x;
      for (size_t i = 0; i < len; i++, y /= k) p[i] = al[y % k];
      bad += !check_agrees(p, len, BW_GLOB_BRACES);
      bad += !check_agrees(p, len, BW_GLOB_DIR_ITSELF);
    }
  }
  CHECK(bad == 0, "bw_glob_check agrees with bw_glob_compile (%d differ)", bad);
  /* and a rule refuses a bad literal pattern as it did when it compiled it */
  for (int segs = 128; segs <= 129; segs++) {
    size_t n = (size_t)sprintf(big, "**");
    for (int i = 1; i < segs; i++) n += (size_t)sprintf(big + n, "/a");
    bw_rules *rs = bw_rules_new();
    const char *pv[] = {big}, *why = NULL;
    int rc = bw_rules_add(rs, pv, 1, NULL, 0, BW_OP_WRITE, 1, 1, &why);
    CHECK(segs == 128 ? rc == 0 : rc != 0 && why && strstr(why, "too many segments") != NULL,
          "a literal rule of %d segments: %s", segs, rc ? why : "added");
    bw_rules_free(rs);
  }
  memset(big, 'a', 4097);
  big[4097] = '\0';
  memcpy(big, "**/", 3);
  bw_rules *rs = bw_rules_new();
  const char *pv[] = {big}, *why = NULL;
  CHECK(bw_rules_add(rs, pv, 1, NULL, 0, BW_OP_WRITE, 1, 1, &why) != 0 && why && !strcmp(why, "pattern too long"),
        "a literal rule of 4097 bytes is refused: %s", why ? why : "added");
  bw_rules_free(rs);
}

/* ---- walks ---- */

static bw_rules *tree_rules(void) {
  bw_rules *rs = bw_rules_new();
  add(rs, "**/.env|**/.env.*", "**/.env.example", BW_OP_READ, 0, 1);
  add(rs, "**/.ssh/**", NULL, BW_OP_READ, 0, 2);
  add(rs, "secret", NULL, BW_OP_READ, 0, 3);
  add(rs, "**/*.pem", NULL, BW_OP_READ, 1, 4);
  add(rs, "sub/private.txt", NULL, BW_OP_READ, 0, 5);
  add(rs, "**/.gitignore", NULL, BW_OP_WRITE, 0, 6); /* not for reading */
  return rs;
}

static void setup(void) {
  strcpy(base, "/tmp/burrow-rules-XXXXXX");
  if (!mkdtemp(base)) exit(2);
  sh("mkdir -p ws/sub ws/.ssh/deep ws/src ws/secret && cd ws && "
     "for f in .env sub/.env sub/ok.txt sub/private.txt .ssh/id_rsa .ssh/deep/k "
     "src/a.c src/.env.example secret/x.txt; do echo 'TOKEN here' > $f; done && "
     "ln -s src/a.c lnk.PEM && ln -s sub alias && chmod 000 .ssh/id_rsa");
}

typedef struct seen {
  char paths[64][64];
  int n;
} seen;

static int collect(void *arg, const bw_wentry *e) {
  seen *s = arg;
  if (s->n < 64) snprintf(s->paths[s->n++], 64, "%s", e->path);
  return e->type == 'd';
}

static int has(const seen *s, const char *p) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->paths[i], p)) return 1;
  return 0;
}

static void test_walk(const bw_root *r, const bw_rules *rs) {
  static seen s;
  bw_walk_stats st = {0};
  bw_walk_opts o = {.threads = 2, .include_hidden = 1, .visit = collect, .arg = &s,
                    .stats = &st, .rules = rs, .base = "."};
  s.n = 0;
  CHECK(bw_walk_run(r, ".", &o) == BW_OK, "walk with rules");
  CHECK(has(&s, "sub/ok.txt") && has(&s, "src/a.c") && has(&s, "src/.env.example") &&
            has(&s, ".ssh") && has(&s, "alias"),
        "allowed entries seen");
  CHECK(!has(&s, ".env") && !has(&s, "sub/.env") && !has(&s, ".ssh/id_rsa") &&
            !has(&s, ".ssh/deep") && !has(&s, ".ssh/deep/k") && !has(&s, "secret") &&
            !has(&s, "secret/x.txt") && !has(&s, "lnk.PEM") && !has(&s, "sub/private.txt"),
        "denied entries never visited");
  /* .env .ssh/deep .ssh/id_rsa lnk.PEM secret sub/.env sub/private.txt */
  CHECK(st.skipped_policy == 7, "skipped 7: %zu", (size_t)st.skipped_policy);
  CHECK(st.entries == (size_t)s.n, "skipped entries are not counted as seen");
}

static bw_grep_opts gopts(const bw_rules *rs, const char *b) {
  bw_grep_opts o;
  memset(&o, 0, sizeof o);
  o.pattern = "TOKEN";
  o.pattern_len = 5;
  o.mode = BW_GREP_FILES;
  o.max_results = 1000;
  o.max_file_size = 1 << 20;
  o.max_line = 2000;
  o.max_skipped = 100;
  o.walk.threads = 2;
  o.walk.include_hidden = 1;
  o.walk.rules = rs;
  o.walk.base = b;
  return o;
}

static int files_are(const bw_grep_res *res, const char *want) {
  char got[512] = "";
  for (size_t i = 0; i < res->nfiles; i++) {
    if (i) strcat(got, " ");
    strncat(got, res->files[i]->item.path, sizeof got - strlen(got) - 2);
  }
  if (strcmp(got, want)) printf("# files: %s\n", got);
  return !strcmp(got, want);
}

/* Watch the denied files for opens (root reads a mode 000 file too, so
 * inotify is the witness). */
static int watch_denied(void) {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  const char *names[] = {"ws/.env", "ws/sub/.env", "ws/.ssh/id_rsa", "ws/sub/private.txt"};
  for (int i = 0; fd >= 0 && i < 4; i++) {
    char p[512];
    snprintf(p, sizeof p, "%s/%s", base, names[i]);
    if (inotify_add_watch(fd, p, IN_OPEN) < 0) {
      close(fd);
      return -1;
    }
  }
  return fd;
}

static int opened(int fd) {
  char buf[4096];
  ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  return n > 0;
}

static void test_grep(const bw_root *r, const bw_rules *rs) {
  bw_grep_res res;
  bw_grep_opts o = gopts(rs, ".");
  int w = watch_denied();
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK, "grep with rules");
  if (w >= 0) CHECK(!opened(w), "grep never opens a denied file");
  w = watch_denied();
  bw_grep_opts plain = gopts(NULL, NULL);
  bw_grep_res all;
  if (bw_grep(r, ".", &plain, &all) == BW_OK) bw_grep_res_free(&all);
  if (w >= 0) CHECK(opened(w), "without rules it does (the witness works)");
  CHECK(files_are(&res, "src/.env.example src/a.c sub/ok.txt"), "grep shows the allowed files only");
  /* .env .ssh/deep .ssh/id_rsa lnk.PEM secret sub/.env sub/private.txt */
  CHECK(res.skipped_policy == 7, "grep skipped 7: %zu", res.skipped_policy);
  CHECK(res.unreadable == 0, "a denied file is never opened (it is mode 000)");
  bw_grep_res_free(&res);

  o = gopts(NULL, NULL);
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK, "grep without rules");
  CHECK(res.nfiles + res.unreadable == 9 && res.skipped_policy == 0,
        "without rules all 9 files: %zu", res.nfiles);
  if (geteuid() != 0) CHECK(res.unreadable == 1, "the mode 000 file was tried");
  bw_grep_res_free(&res);

  o = gopts(rs, "sub");
  CHECK(bw_grep(r, "sub", &o, &res) == BW_OK && files_are(&res, "ok.txt") &&
            res.skipped_policy == 2,
        "from sub, base sub: %zu", res.skipped_policy);
  bw_grep_res_free(&res);
  o = gopts(rs, NULL);
  CHECK(bw_grep(r, "alias", &o, &res) == BW_OK && files_are(&res, "ok.txt") &&
            res.skipped_policy == 2,
        "through a link, base made canonical: %zu", res.skipped_policy);
  bw_grep_res_free(&res);
  o = gopts(rs, "sub/");
  CHECK(bw_grep(r, "sub", &o, &res) == BW_OK && res.skipped_policy == 2, "base with a slash");
  bw_grep_res_free(&res);
  o = gopts(rs, ".");
  o.walk.include_hidden = 0;
  CHECK(bw_grep(r, ".", &o, &res) == BW_OK && files_are(&res, "src/a.c sub/ok.txt") &&
            res.skipped_policy == 3,
        "hidden ones are not counted when not walked: %zu", res.skipped_policy);
  bw_grep_res_free(&res);
}

static int glob_n(const bw_root *r, const char *rel, const char *pat,
                  const bw_rules *rs, size_t *skipped, char *first) {
  bw_glob_opts o = {.types = 15, .max_results = 1000, .count_limit = 100000};
  o.walk.threads = 2;
  o.walk.include_hidden = 1;
  o.walk.rules = rs;
  bw_glob_res res;
  if (bw_glob_search(r, rel, pat, strlen(pat), &o, &res)) return -1;
  int n = (int)res.n;
  *skipped = res.skipped_policy;
  if (first) strcpy(first, n ? res.items[0]->item.path : "");
  bw_glob_res_free(&res);
  return n;
}

static void test_glob(const bw_root *r, const bw_rules *rs) {
  size_t sk;
  char first[256];
  /* .ssh alias src src/.env.example src/a.c sub sub/ok.txt */
  CHECK(glob_n(r, ".", "**/*", rs, &sk, NULL) == 7 && sk == 7, "glob **: 7 shown, 7 skipped (%zu)", sk);
  CHECK(glob_n(r, ".", "**/*", NULL, &sk, NULL) == 16 && sk == 0, "glob ** without rules");
  CHECK(glob_n(r, ".", ".ssh/*", rs, &sk, NULL) == 0 && sk == 2, "glob below .ssh: %zu", sk);
  CHECK(glob_n(r, ".", "secret/*", rs, &sk, NULL) == 0 && sk == 1,
        "a denied literal prefix is pruned: %zu", sk);
  CHECK(glob_n(r, ".", "secret/*", NULL, &sk, NULL) == 1, "the prefix without rules");
  CHECK(glob_n(r, ".", "**/*.pem", rs, &sk, NULL) == 0, "a denied link is not listed");
  CHECK(glob_n(r, "sub", "*", rs, &sk, first) == 1 && !strcmp(first, "ok.txt") && sk == 2,
        "glob from sub (base made canonical)");
}

static int list_cb(void *arg, const bw_entry *e) {
  seen *s = arg;
  if (s->n < 64) snprintf(s->paths[s->n++], 64, "%s", e->path);
  return 0;
}

static void test_listing(const bw_root *r, const bw_rules *rs) {
  static seen s;
  size_t omitted, skipped = 99;
  bw_list_opts o = {.max_depth = 10, .include_hidden = 1, .max_entries = 1000,
                    .count_limit = 1000, .rules = rs, .base = ".", .skipped_policy = &skipped};
  s.n = 0;
  CHECK(bw_list(r, ".", &o, list_cb, &s, &omitted) == BW_OK, "list with rules");
  CHECK(s.n == 7 && skipped == 7 && omitted == 0, "list: 7 shown, 7 skipped: %d %zu", s.n, skipped);
  CHECK(!has(&s, ".env") && !has(&s, "secret") && !has(&s, "secret/x.txt") &&
            !has(&s, ".ssh/deep/k") && has(&s, ".ssh") && has(&s, "sub/ok.txt"),
        "list hides and prunes");
  s.n = 0;
  o.max_entries = 2;
  CHECK(bw_list(r, ".", &o, list_cb, &s, &omitted) == BW_OK && s.n == 2 && omitted == 5,
        "omitted counts the allowed ones only: %zu", omitted);
  s.n = 0;
  o.max_entries = 1000;
  o.base = NULL;
  CHECK(bw_list(r, "alias", &o, list_cb, &s, &omitted) == BW_OK && s.n == 1 && skipped == 2,
        "list through a link, base made canonical: %d %zu", s.n, skipped);
  s.n = 0;
  o.rules = NULL;
  skipped = 99;
  CHECK(bw_list(r, ".", &o, list_cb, &s, &omitted) == BW_OK && s.n == 16 && skipped == 0,
        "list without rules: %d", s.n);
}

int main(void) {
  test_match();
  test_same_as_glob();
  test_check_as_compile();
  setup();
  bw_rules *rs = tree_rules();
  for (int backend = 0; backend < 2; backend++) {
    test_backend = backend ? BW_WALK : BW_OPENAT2;
    char ws[300];
    snprintf(ws, sizeof ws, "%s/ws", base);
    bw_root r;
    CHECK(bw_root_open(&r, ws, NULL, 0) == BW_OK, "root open");
    r.backend = test_backend;
    printf("# backend %s\n", test_backend == BW_WALK ? "walk" : "openat2");
    test_walk(&r, rs);
    test_grep(&r, rs);
    test_glob(&r, rs);
    test_listing(&r, rs);
    bw_root_close(&r);
  }
  bw_rules_free(rs);
  sh("chmod -R u+rwx ws");
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
