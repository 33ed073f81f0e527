/*
 * test_intent.c - intent records (core/intent.c, stage.h) without Lua: a
 * child process begins a change and dies (_exit, so its locks go as a
 * kill's do) at a chosen point; the parent's recovery must leave each
 * change whole on one side. Covers the "set of renames" op ('n') that a
 * multi-file edit uses, and the stage ops through bw_stage_move and
 * bw_stage_remove on a plain root.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core.h"
#include "stage.h"

static char base[] = "/tmp/burrow-intent-XXXXXX";

static void put(int dir, const char *name, const char *text) {
  int fd = openat(dir, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text)) _exit(90);
  close(fd);
}

static const char *get(int dir, const char *name) {
  static char buf[256];
  int fd = openat(dir, name, O_RDONLY);
  if (fd < 0) return "(absent)";
  ssize_t n = read(fd, buf, sizeof buf - 1);
  close(fd);
  buf[n < 0 ? 0 : n] = '\0';
  return buf;
}

static int exists(int dir, const char *name) {
  struct stat st;
  return fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

/* Entries of dir whose names start with ".burrow-stage." */
static int staged(int dir) {
  int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  int k = 0;
  struct dirent *e;
  while (d && (e = readdir(d)))
    if (!strncmp(e->d_name, ".burrow-stage.", 14)) k++;
  if (d) closedir(d);
  return k;
}

static void clear(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s/tree %s/moved", base, base);
  if (system(cmd)) printf("rm failed\n");
}

/* Run fn in a child that ends without cleaning up; its exit code. */
static int in_child(void (*fn)(int dir, int step), int dir, int step) {
  pid_t pid = fork();
  if (pid == 0) {
    fn(dir, step);
    _exit(0);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* A two-file change as edit_files would make it: each new content in a
 * staged name, the record, the commit, the renames; cut short at step. */
static void two_files(int dir, int step) {
  put(dir, ".burrow-stage.e.1.aaaa", "new a");
  put(dir, ".burrow-stage.e.1.bbbb", "new b");
  const char *names[] = {".burrow-stage.e.1.aaaa", "a.txt", ".burrow-stage.e.1.bbbb", "sub/b.txt"};
  bw_intent it;
  if (bw_intent_begin(&it, -1, "", dir, 'n', names, 4)) _exit(91);
  if (step == 0) _exit(0); /* staged, not committed */
  if (bw_intent_commit(&it)) _exit(92);
  if (step == 1) _exit(0); /* committed, nothing renamed */
  if (renameat(dir, names[0], dir, names[1])) _exit(93);
  if (step == 2) _exit(0); /* one of two renamed */
  if (renameat(dir, names[2], dir, names[3])) _exit(94);
  bw_intent_end(&it);
}

static void renames(void) {
  for (int step = 0; step <= 3; step++) {
    int dir = open(base, O_RDONLY | O_DIRECTORY);
    mkdirat(dir, "sub", 0755);
    put(dir, "a.txt", "old a");
    put(dir, "sub/b.txt", "old b");
    CHECK(in_child(two_files, dir, step) == 0, "step %d: the child ran", step);
    size_t left = bw_intent_recover_dir(dir);
    CHECK(left == 0, "step %d: nothing left (%zu)", step, left);
    const char *want_a = step == 0 ? "old a" : "new a";
    const char *want_b = step == 0 ? "old b" : "new b";
    CHECK(!strcmp(get(dir, "a.txt"), want_a), "step %d: a.txt is %s, not %s", step, get(dir, "a.txt"), want_a);
    CHECK(!strcmp(get(dir, "sub/b.txt"), want_b), "step %d: b.txt is %s", step, get(dir, "sub/b.txt"));
    CHECK(staged(dir) == 0, "step %d: no staged name left (%d)", step, staged(dir));
    close(dir);
  }
}

/* A removal in a set of renames: its src a "g." link of its dst. step 0
 * staged; 1 committed; 2 the dst unlinked, not the src; 3 the dst
 * replaced by another file since (not ours to remove). */
static void one_removal(int dir, int step) {
  if (linkat(dir, "gone.txt", dir, ".burrow-stage.g.1.cccc", 0)) _exit(95);
  const char *names[] = {".burrow-stage.g.1.cccc", "gone.txt"};
  bw_intent it;
  if (bw_intent_begin(&it, -1, "", dir, 'n', names, 2)) _exit(91);
  if (step == 0) _exit(0);
  if (bw_intent_commit(&it)) _exit(92);
  if (step == 1) _exit(0);
  if (unlinkat(dir, "gone.txt", 0)) _exit(93);
  if (step == 3) put(dir, "gone.txt", "someone else's");
  _exit(0);
}

static void removals(void) {
  for (int step = 0; step <= 3; step++) {
    int dir = open(base, O_RDONLY | O_DIRECTORY);
    put(dir, "gone.txt", "old");
    CHECK(in_child(one_removal, dir, step) == 0, "removal step %d: the child ran", step);
    CHECK(bw_intent_recover_dir(dir) == 0, "removal step %d: nothing left", step);
    const char *want = step == 0 ? "old" : step == 3 ? "someone else's" : "(absent)";
    CHECK(!strcmp(get(dir, "gone.txt"), want), "removal step %d: gone.txt is %s, not %s", step,
          get(dir, "gone.txt"), want);
    CHECK(staged(dir) == 0, "removal step %d: no staged name left (%d)", step, staged(dir));
    unlinkat(dir, "gone.txt", 0);
    close(dir);
  }
}

/* A live owner's record is never recovered. */
static void live_owner(void) {
  int dir = open(base, O_RDONLY | O_DIRECTORY);
  put(dir, ".burrow-stage.e.2.cccc", "new");
  put(dir, "c.txt", "old");
  const char *names[] = {".burrow-stage.e.2.cccc", "c.txt"};
  bw_intent it;
  CHECK(bw_intent_begin(&it, -1, "", dir, 'n', names, 2) == BW_OK, "begin");
  CHECK(bw_intent_recover_dir(dir) == 1, "a live record is left alone");
  CHECK(exists(dir, ".burrow-stage.e.2.cccc"), "its prepared file stays");
  bw_intent_end(&it);
  CHECK(staged(dir) == 1, "end removes the record (the prepared file is the caller's)");
  unlinkat(dir, ".burrow-stage.e.2.cccc", 0);
  /* a forged record naming a file that is not a staged name: never touched */
  const char *evil[] = {"c.txt", "d.txt"};
  CHECK(bw_intent_begin(&it, -1, "", dir, 'n', evil, 2) == BW_OK, "begin");
  bw_intent_release(&it); /* as if its owner died */
  bw_intent_recover_dir(dir);
  CHECK(!strcmp(get(dir, "c.txt"), "old"), "c.txt untouched");
  close(dir);
}

static bw_root root;

static void move_child(int dir, int step) {
  (void)dir;
  bw_stage s;
  bw_stage_init(&s, 0, 0, 0, NULL);
  if (bw_stage_move(&root, "tree", &root, "moved", &s)) _exit(95);
  if (step == 0) _exit(0); /* staged, pending */
  if (bw_stage_commit(&s)) _exit(96);
  _exit(0);
}

static void remove_child(int dir, int step) {
  (void)dir;
  bw_stage s;
  bw_stage_init(&s, 0, 0, 0, NULL);
  if (bw_stage_remove(&root, "tree", 1, NULL, &s)) _exit(97);
  if (step == 0) _exit(0); /* staged: back */
  /* the commit point passed, then death after one unlink */
  if (bw_intent_commit(&s.intent)) _exit(98);
  int t = openat(s.home, s.name, O_RDONLY | O_DIRECTORY);
  if (t < 0 || unlinkat(t, "f1", 0)) _exit(99);
  _exit(0);
}

static void stage_ops(void) {
  CHECK(bw_root_open(&root, base, NULL, 0) == BW_OK, "root");
  int dir = open(base, O_RDONLY | O_DIRECTORY);
  for (int step = 0; step <= 1; step++) {
    clear();
    mkdirat(dir, "tree", 0755);
    put(dir, "tree/f1", "one");
    put(dir, "tree/f2", "two");
    CHECK(in_child(move_child, dir, step) == 0, "move child %d", step);
    CHECK(bw_intent_recover_root(&root) == 0, "move %d: recovered", step);
    bw_intent_recover_dir(dir);
    if (step == 0) CHECK(!strcmp(get(dir, "tree/f1"), "one") && !exists(dir, "moved"), "move put back");
    else CHECK(!strcmp(get(dir, "moved/f2"), "two") && !exists(dir, "tree"), "move in place");
    CHECK(staged(dir) == 0, "move %d: no staged name left (%d)", step, staged(dir));
  }
  for (int step = 0; step <= 1; step++) {
    clear();
    mkdirat(dir, "tree", 0755);
    put(dir, "tree/f1", "one");
    put(dir, "tree/f2", "two");
    CHECK(in_child(remove_child, dir, step) == 0, "remove child %d", step);
    CHECK(bw_intent_recover_root(&root) == 0, "remove %d: recovered", step);
    if (step == 0) CHECK(!strcmp(get(dir, "tree/f2"), "two"), "remove put back whole");
    else CHECK(!exists(dir, "tree"), "remove finished");
    CHECK(staged(dir) == 0, "remove %d: no staged name left (%d)", step, staged(dir));
  }
  close(dir);
  bw_root_close(&root);
}

/* Recovery is above the stager (recover.c): the write path's sweep and
 * the next staged operation reach it through write.c's hook. A dead
 * owner's pending move is put back by either, with no recovery asked
 * for by name. */
static void through_the_hook(void) {
  CHECK(bw_root_open(&root, base, NULL, 0) == BW_OK, "root");
  int dir = open(base, O_RDONLY | O_DIRECTORY);
  for (int way = 0; way <= 1; way++) {
    clear();
    mkdirat(dir, "tree", 0755);
    put(dir, "tree/f1", "one");
    CHECK(in_child(move_child, dir, 0) == 0, "hook %d: the child ran", way);
    CHECK(!exists(dir, "tree"), "hook %d: the source is aside", way);
    if (way == 0) {
      bw_sweep_temps(dir); /* the write path's sweep */
    } else { /* the next staged operation there */
      mkdirat(dir, "other", 0755);
      bw_stage s;
      bw_stage_init(&s, 0, 0, 0, NULL);
      CHECK(bw_stage_remove(&root, "other", 1, NULL, &s) == BW_OK, "hook 1: a remove staged");
      bw_stage_abort(&s);
      bw_stage_free(&s);
      unlinkat(dir, "other", AT_REMOVEDIR);
    }
    CHECK(!strcmp(get(dir, "tree/f1"), "one") && !exists(dir, "moved"),
          "hook %d: the move was put back", way);
    CHECK(staged(dir) == 0, "hook %d: no staged name left (%d)", way, staged(dir));
  }
  close(dir);
  bw_root_close(&root);
}

/* A root's open settles its folder from one read of it
 * (bw_intent_settle_root): a dead owner's cut-short move (put back
 * before its commit point, finished after), then the sweep: a dead
 * writer's temp and a dead copy's stage go; a live writer's temp, a
 * name of ours in another case that is no temp, and everything else
 * stay. */
static void dead_pid(long *pid) {
  pid_t p = fork();
  if (p == 0) _exit(0);
  waitpid(p, NULL, 0);
  *pid = (long)p;
}

static void settle_root(void) {
  CHECK(bw_root_open(&root, base, NULL, 0) == BW_OK, "root");
  int dir = open(base, O_RDONLY | O_DIRECTORY);
  long dead;
  dead_pid(&dead);
  char temp[64], live[64], stage[64];
  snprintf(temp, sizeof temp, ".burrow.%ld.0123456789abcdef.tmp", dead);
  snprintf(live, sizeof live, ".burrow.1.0123456789abcdef.tmp"); /* pid 1 lives */
  snprintf(stage, sizeof stage, ".burrow-stage.c.%ld.x", dead);
  for (int step = 0; step <= 1; step++) {
    clear();
    mkdirat(dir, "tree", 0755);
    put(dir, "tree/f1", "one");
    put(dir, temp, "half");
    put(dir, live, "writing");
    put(dir, ".BURROW.notes", "mine");
    put(dir, "keep.txt", "kept");
    mkdirat(dir, stage, 0755);
    char inside[96];
    snprintf(inside, sizeof inside, "%s/copied", stage);
    put(dir, inside, "copy");
    CHECK(in_child(move_child, dir, step) == 0, "settle %d: the child ran", step);
    CHECK(bw_intent_settle_root(&root) == 0, "settle %d: nothing left", step);
    if (step == 0) CHECK(!strcmp(get(dir, "tree/f1"), "one") && !exists(dir, "moved"), "settle 0: the move put back");
    else CHECK(!strcmp(get(dir, "moved/f1"), "one") && !exists(dir, "tree"), "settle 1: the move in place");
    CHECK(!exists(dir, temp), "settle %d: a dead writer's temp swept", step);
    CHECK(!exists(dir, stage), "settle %d: a dead copy's stage swept", step);
    CHECK(exists(dir, live) && exists(dir, ".BURROW.notes") && !strcmp(get(dir, "keep.txt"), "kept"),
          "settle %d: the rest stays", step);
    unlinkat(dir, live, 0);
    unlinkat(dir, ".BURROW.notes", 0);
  }
  /* more names of that look than it lists (a folder an agent filled):
   * read twice instead, the same outcome */
  char many[64];
  for (int i = 0; i < 4200; i++) {
    snprintf(many, sizeof many, ".burrowish.%d", i);
    put(dir, many, "");
  }
  put(dir, temp, "half");
  CHECK(bw_intent_settle_root(&root) == 0, "settle many: nothing left");
  CHECK(!exists(dir, temp), "settle many: a dead writer's temp swept");
  CHECK(exists(dir, ".burrowish.4199"), "settle many: the other names stay");
  for (int i = 0; i < 4200; i++) {
    snprintf(many, sizeof many, ".burrowish.%d", i);
    unlinkat(dir, many, 0);
  }
  close(dir);
  bw_root_close(&root);
}

int main(void) {
  if (!mkdtemp(base)) return 1;
  renames();
  removals();
  live_owner();
  stage_ops();
  through_the_hook();
  settle_root();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd)) printf("cleanup failed\n");
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
