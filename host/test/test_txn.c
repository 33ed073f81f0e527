/*
 * test_txn.c - a change of several files as one (txn.c) without Lua: an
 * edit, a new file in new folders and a removal all put in place; a stale
 * hash, a raised cancel flag, the same file twice, a directory, a link and
 * a directory held by another writer each refused with every file as it
 * was, no staged name and no new folder left behind.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "check.h"
#include "txn.h"

static char base[256];
static bw_root root;

static void put(const char *rel, const char *text) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  FILE *f = fopen(p, "w");
  fputs(text, f);
  fclose(f);
}

/* The file's bytes, or "<absent>". */
static const char *get(const char *rel) {
  static char buf[4096];
  char p[512];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  FILE *f = fopen(p, "r");
  if (!f) return "<absent>";
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static int exists(const char *rel) {
  char p[512];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  return access(p, F_OK) == 0;
}

/* Entries of the root named like a staged change. */
static int staged_left(void) {
  DIR *d = opendir(base);
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d))) n += bw_stage_name(e->d_name);
  closedir(d);
  return n;
}

static void hash_of(const char *text, char out[BW_HASH_STR]) { bw_sha256(text, strlen(text), out); }

static bw_txn_file file(const char *rel, const char *data, const char *expected) {
  bw_txn_file f;
  memset(&f, 0, sizeof f);
  f.r = &root;
  f.rel = rel;
  f.data = data;
  f.len = data ? strlen(data) : 0;
  f.expected = expected;
  f.create_dirs = 1;
  return f;
}

static void reset(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s/* %s/.[!.]*", base, base);
  if (system(cmd)) { /* nothing to remove */ }
  put("a.txt", "A\n");
  put("d.txt", "D\n");
}

static void test_all(void) {
  reset();
  char ha[BW_HASH_STR], hd[BW_HASH_STR];
  hash_of("A\n", ha);
  hash_of("D\n", hd);
  bw_txn_file f[3] = {file("a.txt", "A2\n", ha), file("new/sub/n.txt", "N\n", "absent"), file("d.txt", NULL, hd)};
  size_t at;
  bw_txn_opts o = {0};
  int rc = bw_txn_commit(f, 3, &o, &at, NULL);
  CHECK(rc == BW_OK, "committed: %s", bw_code_name(rc));
  CHECK(!strcmp(get("a.txt"), "A2\n"), "a.txt edited: %s", get("a.txt"));
  CHECK(!strcmp(get("new/sub/n.txt"), "N\n"), "n.txt created in new folders");
  CHECK(!exists("d.txt"), "d.txt removed");
  char h[BW_HASH_STR];
  hash_of("A2\n", h);
  CHECK(!strcmp(f[0].hash, h) && f[1].created && !strcmp(f[2].hash, "absent"), "hashes and created");
  CHECK(staged_left() == 0, "no staged name left");
}

/* Each refusal leaves a.txt and d.txt as they were, nothing new. */
static void refused(const char *what, bw_txn_file *f, size_t n, const bw_txn_opts *o, int want, size_t want_at) {
  size_t at;
  int rc = bw_txn_commit(f, n, o, &at, NULL);
  CHECK(rc == want, "%s: %s, not %s", what, bw_code_name(rc), bw_code_name(want));
  CHECK(at == want_at, "%s: about file %zu, not %zu", what, at, want_at);
  CHECK(!strcmp(get("a.txt"), "A\n") && !strcmp(get("d.txt"), "D\n"), "%s: the files as they were", what);
  CHECK(!exists("new"), "%s: the folders made are gone", what);
  CHECK(staged_left() == 0, "%s: no staged name left", what);
}

static void test_refusals(void) {
  char ha[BW_HASH_STR], hd[BW_HASH_STR];
  hash_of("A\n", ha);
  hash_of("D\n", hd);
  bw_txn_opts o = {0};

  reset();
  bw_txn_file stale[4] = {file("a.txt", "A2\n", ha), file("new/n.txt", "N\n", "absent"),
                          file("new/z/w/n.txt", "N\n", "absent"), file("d.txt", NULL, ha)};
  refused("a stale hash", stale, 4, &o, BW_HASH_MISMATCH, 3);
  CHECK(!strcmp(stale[1].made, "new") && !strcmp(stale[2].made, "new/z"), "the folders each made: %s, %s", stale[1].made, stale[2].made);
  CHECK(!strcmp(stale[3].current, hd), "the hash found is told: %s", stale[3].current);

  reset();
  _Atomic int raised = 1;
  bw_stop stop = {&raised, 0};
  bw_txn_opts oc = {&stop, 0, 0};
  bw_txn_file c[2] = {file("a.txt", "A2\n", ha), file("new/n.txt", "N\n", "absent")};
  refused("a cancel", c, 2, &oc, BW_EAGAIN, 2);

  reset();
  bw_txn_file twice[2] = {file("a.txt", "A2\n", ha), file("./a.txt", "A3\n", ha)};
  refused("the same file twice", twice, 2, &o, BW_INVALID_ARGUMENT, 1);

  reset();
  char p[512];
  snprintf(p, sizeof p, "%s/dir", base);
  mkdir(p, 0755);
  bw_txn_file dir[2] = {file("a.txt", "A2\n", ha), file("dir", "X\n", "absent")};
  refused("a directory", dir, 2, &o, BW_EISDIR, 1);

  reset();
  snprintf(p, sizeof p, "%s/link", base);
  if (symlink("d.txt", p)) { /* checked below */ }
  bw_txn_file link[2] = {file("a.txt", "A2\n", ha), file("link", "X\n", hd)};
  refused("a link", link, 2, &o, BW_POLICY_DENIED, 1);

  reset();
  int fd = open(base, O_RDONLY | O_DIRECTORY);
  flock(fd, LOCK_EX); /* another writer holds the root's directory */
  bw_txn_opts ow = {NULL, 0, 200};
  bw_txn_file held[2] = {file("a.txt", "A2\n", ha), file("d.txt", NULL, hd)};
  refused("a directory another writer holds", held, 2, &ow, BW_EAGAIN, 2);
  close(fd);
}

/* More files in one root than its intent record holds (64 pairs):
 * refused before anything is written. */
static void test_record_cap(void) {
  reset();
  enum { N = 65 };
  static char rels[N][24]; /* room for any int: -Wformat-truncation at -O1 (make sanitize) */
  bw_txn_file f[N];
  for (int i = 0; i < N; i++) {
    snprintf(rels[i], sizeof rels[i], "m%02d.txt", i);
    f[i] = file(rels[i], "M\n", "absent");
  }
  bw_txn_opts o = {0};
  size_t at;
  int rc = bw_txn_commit(f, N, &o, &at, NULL);
  CHECK(rc == BW_TOO_LARGE, "65 files in one root: %s", bw_code_name(rc));
  CHECK(!exists("m00.txt") && !exists("m64.txt"), "none written");
  CHECK(staged_left() == 0, "no staged name or record left");
  rc = bw_txn_commit(f, N - 1, &o, &at, NULL);
  CHECK(rc == BW_OK, "64 files in one root: %s", bw_code_name(rc));
  CHECK(exists("m00.txt") && exists("m63.txt") && staged_left() == 0, "all 64 written, nothing left");
}

int main(void) {
  snprintf(base, sizeof base, "%s/burrow-txn.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(base)) return 2;
  if (bw_root_open(&root, base, NULL, 0)) return 2;
  test_all();
  test_refusals();
  test_record_cap();
  bw_root_close(&root);
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd)) { /* left behind */ }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
