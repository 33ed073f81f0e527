/*
 * test_mutate.c - C tests of the mutations beneath a root (no Lua), on
 * both resolver backends: edit, write, mkdir, remove, move, copy and
 * append, links and FIFOs met on the way, deadlines; the write lock: two
 * forked writers racing compare-and-set; the tree lock: a change whose
 * judged path no longer reaches its directory, and a change and a subtree
 * operation that exclude each other; a read-only root. Prints one line
 * per failed check and closes with "N passed, N failed".
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "edit.h"
#include "stage.h"

#include "check.h"
#include "edits.h"

/* The backend the roots of this run resolve with (each root names its
 * own: r.backend; the core has no process setting). */
static int test_backend = BW_OPENAT2;

/* ---- on files beneath a root ---- */

static char base[256];

static void sh(const char *fmt, const char *arg) {
  char cmd[2048];
  snprintf(cmd, sizeof cmd, fmt, arg, arg, arg, arg, arg, arg);
  if (system(cmd) != 0) {
    fprintf(stderr, "setup failed: %s\n", cmd);
    exit(2);
  }
}

static int exists(const char *rel) {
  char p[600];
  struct stat st;
  snprintf(p, sizeof p, "%s/%s", base, rel);
  return lstat(p, &st) == 0;
}

static char *slurp(const char *rel) {
  static char buf[4096];
  char p[600];
  snprintf(p, sizeof p, "%s/%s", base, rel);
  FILE *f = fopen(p, "rb");
  if (!f) return NULL;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return buf;
}

static void fixture(void) {
  sh("rm -rf %s/ws %s/outside && mkdir -p %s/ws/sub %s/outside && cd %s && "
     "printf TOPSECRET > outside/secret.txt && printf 'one\\ntwo\\n' > ws/f.txt",
     base);
  sh("cd %s/ws && ln -s ../outside esc_updir && ln -s ../outside/new.txt dangling && "
     "ln -s f.txt link_in && ln %s/outside/secret.txt hl && mkfifo fifo && "
     "mkdir -p tree/a/b && printf x > tree/a/b/x && ln -s ../outside tree/esc && "
     "ln -s / tree/a/root && printf 'line\\n' > tree/t.txt && chmod 755 tree/t.txt",
     base);
}

static void test_files(bw_root *r) {
  bw_edit e = ed("two", "TWO");
  bw_edit_file_opts o = {.e = EXACT, .max_bytes = 1 << 20, .keep_original = 1 << 20};
  bw_edit_file_res res;
  CHECK(bw_edit_file(r, "f.txt", &e, 1, &o, &res) == BW_OK && eq(slurp("ws/f.txt"), "one\nTWO\n") &&
            res.original_len == 8,
        "edit_file writes");
  bw_edit_file_res_free(&res);
  e = ed("one", "ONE");
  o.expected_hash = "sha256:0000";
  CHECK(bw_edit_file(r, "f.txt", &e, 1, &o, &res) == BW_HASH_MISMATCH &&
            !strncmp(res.current_hash, "sha256:", 7) && eq(slurp("ws/f.txt"), "one\nTWO\n"),
        "edit_file expected_hash mismatch");
  o.expected_hash = NULL;
  o.dry_run = 1;
  CHECK(bw_edit_file(r, "f.txt", &e, 1, &o, &res) == BW_OK && eq(slurp("ws/f.txt"), "one\nTWO\n"),
        "dry run writes nothing");
  bw_edit_file_res_free(&res);
  o.dry_run = 0;
  bw_edit l = ed("one", "x");
  CHECK(bw_edit_file(r, "link_in", &l, 1, &o, &res) == BW_POLICY_DENIED, "edit through a link");
  bw_edit h = ed("TOP", "PWN");
  CHECK(bw_edit_file(r, "hl", &h, 1, &o, &res) == BW_POLICY_DENIED &&
            eq(slurp("outside/secret.txt"), "TOPSECRET"),
        "edit of a hard-linked file");
  CHECK(bw_edit_file(r, "esc_updir/secret.txt", &h, 1, &o, &res) == BW_OUTSIDE_ROOT,
        "edit outside");
  CHECK(bw_insert_file(r, "f.txt", 2, "mid", 3, &o, &res) == BW_OK &&
            eq(slurp("ws/f.txt"), "one\nmid\nTWO\n"),
        "insert_lines");
  bw_edit_file_res_free(&res);

  int created;
  CHECK(bw_mkdir(r, "d1", 0, &created) == BW_OK && created, "mkdir");
  CHECK(bw_mkdir(r, "d1", 0, &created) == BW_EEXIST, "mkdir existing");
  CHECK(bw_mkdir(r, "d1", 1, &created) == BW_OK && !created, "mkdir -p existing");
  CHECK(bw_mkdir(r, "d2/x/y/", 1, &created) == BW_OK && exists("ws/d2/x/y"), "mkdir -p");
  CHECK(bw_mkdir(r, "esc_updir/d", 1, &created) == BW_OUTSIDE_ROOT && !exists("outside/d"),
        "mkdir through a link");
  CHECK(bw_mkdir(r, "dangling", 0, &created) != BW_OK && !exists("outside/new.txt"),
        "mkdir on a dangling link");

  bw_append_res ar;
  CHECK(bw_append(r, "log.txt", "a\n", 2, 1, 1 << 20, &ar) == BW_OK && ar.created && ar.size == 2,
        "append creates");
  CHECK(bw_append(r, "log.txt", "b\n", 2, 1, 1 << 20, &ar) == BW_OK && !ar.created &&
            ar.old_size == 2 && eq(slurp("ws/log.txt"), "a\nb\n"),
        "append appends");
  CHECK(bw_append(r, "log.txt", "c\n", 2, 1, 5, &ar) == BW_TOO_LARGE, "append over the cap");
  CHECK(bw_append(r, "hl", "x", 1, 1, 1 << 20, &ar) == BW_POLICY_DENIED &&
            eq(slurp("outside/secret.txt"), "TOPSECRET"),
        "append to a hard link");
  CHECK(bw_append(r, "dangling", "x", 1, 1, 1 << 20, &ar) == BW_OUTSIDE_ROOT &&
            !exists("outside/new.txt"),
        "append to a dangling link");
  CHECK(bw_append(r, "fifo", "x", 1, 1, 1 << 20, &ar) == BW_NOT_REGULAR, "append to a FIFO");

  bw_copy_opts co = {.max_bytes = 1 << 20};
  bw_copy_res cr;
  CHECK(bw_copy(r, "tree", r, "tree2", &co, &cr) == BW_EISDIR, "copy a dir needs recursive");
  co.recursive = 1;
  CHECK(bw_copy(r, "tree", r, "tree2", &co, &cr) == BW_OK && cr.links == 2 && cr.files == 2 &&
            exists("ws/tree2/a/b/x"),
        "copy a tree: files %zu links %zu", cr.files, cr.links);
  struct stat st;
  char p[600];
  snprintf(p, sizeof p, "%s/ws/tree2/esc", base);
  CHECK(lstat(p, &st) == 0 && S_ISLNK(st.st_mode), "links are copied as links");
  snprintf(p, sizeof p, "%s/ws/tree2/t.txt", base);
  CHECK(stat(p, &st) == 0 && (st.st_mode & 0100), "exec bit kept");
  CHECK(bw_copy(r, "tree", r, "tree2", &co, &cr) == BW_EEXIST, "copy onto an existing tree");
  CHECK(bw_copy(r, "tree", r, "tree/inner", &co, &cr) == BW_OK && exists("ws/tree/inner/a/b/x") &&
            !exists("ws/tree/inner/inner"),
        "copy a tree into itself stops at the copy");
  co.recursive = 0;
  CHECK(bw_copy(r, "f.txt", r, "dangling", &co, &cr) != BW_OK && !exists("outside/new.txt"),
        "copy onto a dangling link");
  CHECK(bw_copy(r, "esc_updir/secret.txt", r, "stolen", &co, &cr) == BW_OUTSIDE_ROOT,
        "copy from outside");
  CHECK(bw_copy(r, "f.txt", r, "g.txt", &co, &cr) == BW_OK && eq(slurp("ws/g.txt"), "one\nmid\nTWO\n"),
        "copy a file");

  /* a merge (overwrite onto a directory) that would meet what it refuses
   * changes nothing: the check runs before any rename */
  sh("mkdir -p '%s/ws/ms/sub' '%s/ws/md/sub/x' && echo new > '%s/ws/ms/a' && echo new > '%s/ws/ms/sub/x' && echo old > '%s/ws/md/a'", base);
  co.recursive = 1;
  co.overwrite = 1;
  CHECK(bw_copy(r, "ms", r, "md", &co, &cr) == BW_EISDIR && eq(slurp("ws/md/a"), "old\n") &&
            !exists("ws/md/sub/x/x"),
        "a merge that meets a directory with a file changes nothing");
  sh("rm -rf '%s/ws/md/sub/x' && ln -s ../a '%s/ws/md/sub/x'", base);
  CHECK(bw_copy(r, "ms", r, "md", &co, &cr) == BW_POLICY_DENIED && eq(slurp("ws/md/a"), "old\n"),
        "a merge onto a symlink is refused, and changes nothing");
  sh("rm -f '%s/ws/md/sub/x'", base);
  CHECK(bw_copy(r, "ms", r, "md", &co, &cr) == BW_OK && eq(slurp("ws/md/a"), "new\n") &&
            eq(slurp("ws/md/sub/x"), "new\n"),
        "the merge, once nothing is refused");
  co.recursive = 0;
  co.overwrite = 0;

  CHECK(bw_move(r, "g.txt", r, "f.txt", 0) == BW_EEXIST, "move without overwrite");
  CHECK(bw_move(r, "g.txt", r, "dangling", 0) == BW_EEXIST && !exists("outside/new.txt"),
        "move onto a dangling link");
  CHECK(bw_move(r, "g.txt", r, "dangling", 1) == BW_POLICY_DENIED && !exists("outside/new.txt"),
        "move over a link with overwrite");
  CHECK(bw_move(r, "g.txt", r, "h.txt", 0) == BW_OK && exists("ws/h.txt") && !exists("ws/g.txt"),
        "move");
  CHECK(bw_move(r, "h.txt", r, "newdir/", 0) == BW_ENOTDIR, "move to a trailing slash");
  CHECK(bw_move(r, "h.txt", r, "esc_updir/x", 0) == BW_OUTSIDE_ROOT && !exists("outside/x"),
        "move out");
  CHECK(bw_move(r, "esc_updir/secret.txt", r, "stolen", 0) == BW_OUTSIDE_ROOT &&
            exists("outside/secret.txt"),
        "move in");
  CHECK(bw_move(r, ".", r, "x", 0) == BW_INVALID_ARGUMENT, "move the root");
  CHECK(bw_move(r, "link_in", r, "link2", 0) == BW_OK && exists("ws/f.txt"),
        "a link moves as a link");

  bw_remove_res rr;
  CHECK(bw_remove(r, ".", 1, NULL, NULL, &rr) == BW_INVALID_ARGUMENT, "remove the root");
  CHECK(bw_remove(r, "sub/..", 1, NULL, NULL, &rr) == BW_INVALID_ARGUMENT, "remove sub/..");
  CHECK(bw_remove(r, "tree", 0, NULL, NULL, &rr) == BW_EEXIST, "remove a full dir needs recursive");
  CHECK(bw_remove(r, "esc_updir/secret.txt", 0, NULL, NULL, &rr) == BW_OUTSIDE_ROOT, "remove outside");
  CHECK(bw_remove(r, "esc_updir", 0, NULL, NULL, &rr) == BW_OK && exists("outside/secret.txt"),
        "remove a link, not its target");
  CHECK(bw_remove(r, "tree", 1, NULL, NULL, &rr) == BW_OK && !exists("ws/tree") &&
            exists("outside/secret.txt"),
        "remove a tree with links out");
  CHECK(bw_remove(r, "h.txt", 0, "sha256:00", NULL, &rr) == BW_HASH_MISMATCH && exists("ws/h.txt"),
        "remove with a stale hash");
  CHECK(bw_remove(r, "fifo/", 0, NULL, NULL, &rr) == BW_ENOTDIR, "remove fifo/");
  CHECK(exists("outside/secret.txt") && !exists("outside/new.txt") && !exists("outside/x"),
        "outside untouched");

  /* a budget: a tree operation stops at its deadline or its cancel flag,
   * between entries, and counts what it had done */
  sh("cd %s/ws && mkdir -p big/a big/b && seq 1 6000 | sed 's|^|big/a/f|' | xargs touch && "
     "seq 1 6000 | sed 's|^|big/b/g|' | xargs touch", base);
  _Atomic int cancel = 1;
  bw_stop now = {.cancel = &cancel}, late = {.until_ms = bw_now_ms() - 1};
  CHECK(bw_remove(r, "big", 1, NULL, &now, &rr) == BW_EAGAIN && rr.files == 0 &&
            exists("ws/big/a/f1"),
        "a cancelled remove stops before the first entry");
  co = (bw_copy_opts){.recursive = 1, .max_bytes = 1 << 20, .stop = &late};
  CHECK(bw_copy(r, "big", r, "big2", &co, &cr) == BW_TOO_LARGE && cr.files == 0,
        "a copy past its deadline stops: %zu files", cr.files);
  bw_stop soon = {.until_ms = bw_now_ms() + 40};
  int rc = bw_remove(r, "big", 1, NULL, &soon, &rr);
  CHECK(rc == BW_TOO_LARGE && rr.files > 0 && rr.files < 12000 && exists("ws/big"),
        "a remove stops part-way at its deadline: %d, %zu of 12000 files", rc, rr.files);
  CHECK(bw_remove(r, "big", 1, NULL, NULL, &rr) == BW_OK && !exists("ws/big"),
        "the rest removed without a budget");
}

/* ---- the write lock: compare-and-set across processes ---- */

enum { CAS_ROUNDS = 300 };

/* One of two writer processes: CAS_ROUNDS increments of the counter in
 * cas.txt (read, add one, write with expected_hash = the hash read), then
 * CAS_ROUNDS lines of its own put before "#end" in log.txt by bw_edit_file
 * without expected_hash. Sends {wins, edits} down the pipe. */
static void cas_writer(bw_root *r, char tag, int out) {
  int report[2] = {0, 0};
  for (int i = 0; i < CAS_ROUNDS; i++) {
    char *data, hash[BW_HASH_STR], text[32];
    size_t len;
    if (bw_read_copy(r, "cas.txt", 1 << 20, &data, &len)) _exit(3);
    snprintf(text, sizeof text, "%.*s", (int)len, data);
    if (bw_sha256(data, len, hash)) _exit(3);
    free(data);
    int n = snprintf(text, sizeof text, "%ld\n", strtol(text, NULL, 10) + 1);
    bw_write_opts wo = {.expected_hash = hash};
    bw_write_res wr;
    int rc = bw_write_file(r, "cas.txt", text, (size_t)n, &wo, &wr);
    if (rc == BW_OK) report[0]++;
    else if (rc != BW_HASH_MISMATCH) _exit(4);
  }
  for (int i = 0; i < CAS_ROUNDS; i++) {
    char neu[32];
    snprintf(neu, sizeof neu, "%c%d\n#end\n", tag, i);
    bw_edit e = ed("#end\n", neu);
    bw_edit_file_opts o = {.e = EXACT, .max_bytes = 1 << 20};
    bw_edit_file_res res;
    if (bw_edit_file(r, "log.txt", &e, 1, &o, &res) == BW_OK) {
      report[1]++;
      bw_edit_file_res_free(&res);
    }
  }
  _exit(write(out, report, sizeof report) == sizeof report ? 0 : 5);
}

static void test_cas(bw_root *r) {
  sh("printf '0\\n' > %s/ws/cas.txt && printf '#begin\\n#end\\n' > %s/ws/log.txt && "
     "mkdir -p %s/ws/casdir",
     base);
  char ws[300];
  snprintf(ws, sizeof ws, "%s/ws", base);
  bw_write_opts wo = {.lock_wait_ms = 100};
  bw_write_res wr;
  int other = open(ws, O_RDONLY | O_DIRECTORY | O_CLOEXEC); /* another writer */
  CHECK(other >= 0 && flock(other, LOCK_EX) == 0, "hold the directory's lock");
  CHECK(bw_write_file(r, "cas.txt", "9\n", 2, &wo, &wr) == BW_EAGAIN && eq(slurp("ws/cas.txt"), "0\n"),
        "a lock held past the wait: EAGAIN, the file unchanged");
  close(other);

  bw_dir_lock lk;
  CHECK(bw_lock_parent(r, "cas.txt", 0, &lk) == BW_OK, "lock the parent");
  wo.held = &lk;
  CHECK(bw_write_file(r, "cas.txt", "0\n", 2, &wo, &wr) == BW_OK,
        "a write under the caller's lock does not wait for itself");
  CHECK(bw_write_file(r, "casdir/x.txt", "x", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/casdir/x.txt"),
        "a held lock of another directory is refused");
  bw_unlock_dir(&lk);
  bw_unlock_dir(&lk); /* idempotent */

  int p[2];
  CHECK(pipe(p) == 0, "pipe");
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    fflush(stdout);
    kids[k] = fork();
    if (kids[k] == 0) {
      close(p[0]);
      cas_writer(r, (char)('A' + k), p[1]);
    }
  }
  close(p[1]);
  int wins = 0, edits = 0, report[2], clean = 1;
  for (int k = 0; k < 2; k++) {
    int st;
    if (read(p[0], report, sizeof report) == sizeof report) {
      wins += report[0];
      edits += report[1];
    }
    clean &= waitpid(kids[k], &st, 0) == kids[k] && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  }
  close(p[0]);
  CHECK(clean, "both writers ran to the end");
  long final = strtol(slurp("ws/cas.txt"), NULL, 10);
  CHECK(final == wins && wins >= CAS_ROUNDS, "no double wins: %d wins, the counter at %ld", wins, final);
  char *data;
  size_t len;
  int missing = 0;
  CHECK(bw_read_copy(r, "log.txt", 1 << 20, &data, &len) == BW_OK, "read log.txt");
  for (int k = 0; k < 2 && data; k++)
    for (int i = 0; i < CAS_ROUNDS; i++) {
      char line[32];
      int n = snprintf(line, sizeof line, "\n%c%d\n", 'A' + k, i);
      char *at = memmem(data, len, line, (size_t)n);
      missing += !at || memmem(at + 1, len - (size_t)(at + 1 - data), line, (size_t)n);
    }
  CHECK(edits == 2 * CAS_ROUNDS && missing == 0,
        "no lost edits: %d of %d done, %d not in the file exactly once", edits, 2 * CAS_ROUNDS, missing);
  free(data);
}

/* ---- the tree lock: no change lands in a tree while it is judged ---- */

/* A write view of rel, as a tool gets it: the handle judged now. */
static int view_of(bw_root *r, const char *rel, bw_handle *h, bw_root *v, const char **name) {
  int rc = bw_resolve_handle(r, 1, 0, rel, BW_NOFOLLOW, h);
  if (rc) return rc;
  bw_handle_view(h, r, BW_VIEW_WRITE, v, name);
  return BW_OK;
}

static void test_tree_lock(bw_root *r) {
  sh("rm -rf %s/ws/t %s/ws/t2 %s/ws/vault && mkdir -p %s/ws/t/d/h", base);
  bw_handle h;
  bw_root v;
  const char *name;
  bw_write_opts wo = {.lock_wait_ms = 100};
  bw_write_res wr;
  int created;
  bw_append_res ar;

  /* judged as t/d/x, then t/d renamed: the judged path no longer reaches it */
  CHECK(view_of(r, "t/d/x", &h, &v, &name) == BW_OK, "judge t/d/x");
  sh("mv %s/ws/t/d %s/ws/t/moved", base);
  CHECK(bw_write_file(&v, name, "x", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t/moved/x"),
        "a write whose directory moved after the judgement: EAGAIN, nothing landed");
  CHECK(bw_append(&v, name, "x", 1, 0, 100, &ar) == BW_EAGAIN && !exists("ws/t/moved/x"),
        "an append likewise");
  CHECK(bw_mkdir(&v, name, 0, &created) == BW_EAGAIN && !exists("ws/t/moved/x"), "a mkdir likewise");
  bw_handle_close(&h);
  /* a write replacing a file: the old file stays, whole */
  sh("printf old > %s/ws/t/moved/r", base);
  sh("mv %s/ws/t/moved %s/ws/t/d", base);
  CHECK(view_of(r, "t/d/r", &h, &v, &name) == BW_OK, "judge t/d/r");
  sh("mv %s/ws/t/d %s/ws/t/moved", base);
  CHECK(bw_write_file(&v, name, "new", 3, &wo, &wr) == BW_EAGAIN && eq(slurp("ws/t/moved/r"), "old"),
        "a replace whose directory moved: EAGAIN, the old file in place");
  bw_handle_close(&h);
  sh("mv %s/ws/t/moved %s/ws/t/d", base);

  /* judged as t/d/h/x, then t/d (the parent's parent) renamed */
  CHECK(view_of(r, "t/d/h/x", &h, &v, &name) == BW_OK, "judge t/d/h/x");
  sh("mv %s/ws/t/d %s/ws/vault", base);
  CHECK(bw_write_file(&v, name, "x", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/vault/h/x"),
        "a write whose ancestor moved: EAGAIN, nothing landed");
  sh("mv %s/ws/vault %s/ws/t/d", base);
  /* ... and back where it was judged: it lands */
  CHECK(bw_write_file(&v, name, "x", 1, &wo, &wr) == BW_OK && exists("ws/t/d/h/x"),
        "the same write once the path reaches its directory again");
  bw_handle_close(&h);

  /* a subtree operation holds its top: a change inside waits, then EAGAIN */
  int top;
  int tfd = openat(r->fd, "t", O_PATH | O_DIRECTORY | O_CLOEXEC);
  CHECK(tfd >= 0 && bw_lock_tree(tfd, "d", 0, &top) == BW_OK, "hold t/d as a move would");
  CHECK(view_of(r, "t/d/h/y", &h, &v, &name) == BW_OK, "judge t/d/h/y");
  CHECK(bw_write_file(&v, name, "y", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t/d/h/y"),
        "a write below a held subtree waits, then EAGAIN");
  bw_handle_close(&h);
  CHECK(view_of(r, "t/d/y", &h, &v, &name) == BW_OK, "judge t/d/y");
  CHECK(bw_write_file(&v, name, "y", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t/d/y"),
        "a write into a held subtree's top waits, then EAGAIN");
  CHECK(bw_write_file(r, "t/d/y", "y", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t/d/y"),
        "so does a write by root and path (the directory's own lock)");
  close(top);
  CHECK(bw_write_file(&v, name, "y", 1, &wo, &wr) == BW_OK && exists("ws/t/d/y"),
        "released: it lands");
  bw_handle_close(&h);

  /* a write in progress holds its chain: the subtree waits for it */
  bw_dir_lock lk;
  CHECK(view_of(r, "t/d/h/z", &h, &v, &name) == BW_OK, "judge t/d/h/z");
  CHECK(bw_lock_parent(&v, name, 0, &lk) == BW_OK, "a write's lock on t/d/h, its chain held");
  CHECK(bw_lock_tree(tfd, "d", 100, &top) == BW_EAGAIN, "a move of t/d waits for it, then EAGAIN");
  bw_unlock_dir(&lk);
  CHECK(bw_lock_tree(tfd, "d", 100, &top) == BW_OK, "released: the move takes t/d");
  close(top);
  bw_handle_close(&h);

  /* a commit holds its destination's chain: a destination moved after the
     judgement takes nothing in, and the source goes back */
  sh("mkdir -p %s/ws/t/src %s/ws/t/dp && echo s > %s/ws/t/src/s", base);
  bw_handle hs, hd;
  bw_root vs, vd;
  const char *sname, *dname;
  bw_stage st;
  bw_stage_init(&st, 0, 0, 0, NULL);
  CHECK(view_of(r, "t/src", &hs, &vs, &sname) == BW_OK && view_of(r, "t/dp/new", &hd, &vd, &dname) == BW_OK,
        "judge t/src and t/dp/new");
  CHECK(bw_stage_move(&vs, sname, &vd, dname, &st) == BW_OK, "stage the move");
  sh("mv %s/ws/t/dp %s/ws/t/dp2", base);
  CHECK(bw_stage_commit(&st) == BW_EAGAIN && !exists("ws/t/dp2/new") && exists("ws/t/src/s"),
        "its destination moved after the judgement: EAGAIN, nothing landed, the source back");
  bw_stage_free(&st);
  bw_handle_close(&hs);
  bw_handle_close(&hd);

  /* a link put on the way is never followed by the chain */
  CHECK(view_of(r, "t/d/h/w", &h, &v, &name) == BW_OK, "judge t/d/h/w");
  sh("mv %s/ws/t/d %s/ws/t2 && ln -s ../t2 %s/ws/t/d", base);
  CHECK(bw_write_file(&v, name, "w", 1, &wo, &wr) == BW_EAGAIN && !exists("ws/t2/h/w"),
        "t/d now a link to where the directory went: EAGAIN, nothing landed");
  bw_handle_close(&h);
  close(tfd);
}

static void test_readonly(void) {
  char ws[300];
  snprintf(ws, sizeof ws, "%s/ws", base);
  bw_root r;
  if (bw_root_open(&r, ws, NULL, 1)) return;
  r.backend = test_backend;
  bw_edit e = ed("one", "x");
  bw_edit_file_opts o = {.e = EXACT, .max_bytes = 1 << 20};
  bw_edit_file_res res;
  int created;
  bw_remove_res rr;
  bw_append_res ar;
  CHECK(bw_edit_file(&r, "f.txt", &e, 1, &o, &res) == BW_READ_ONLY_ROOT, "ro edit");
  CHECK(bw_mkdir(&r, "zz", 1, &created) == BW_READ_ONLY_ROOT, "ro mkdir");
  CHECK(bw_remove(&r, "f.txt", 0, NULL, NULL, &rr) == BW_READ_ONLY_ROOT, "ro remove");
  CHECK(bw_append(&r, "f.txt", "x", 1, 0, 100, &ar) == BW_READ_ONLY_ROOT, "ro append");
  CHECK(bw_move(&r, "f.txt", &r, "g", 0) == BW_READ_ONLY_ROOT, "ro move");
  bw_root_close(&r);
}

int main(void) {
  strcpy(base, "/tmp/burrow-edit-XXXXXX");
  if (!mkdtemp(base)) return 2;
  for (int backend = 0; backend < 2; backend++) {
    test_backend = backend ? BW_WALK : BW_OPENAT2;
    printf("# backend %s\n", test_backend == BW_WALK ? "walk" : "openat2");
    fixture();
    char ws[300];
    snprintf(ws, sizeof ws, "%s/ws", base);
    bw_root r;
    CHECK(bw_root_open(&r, ws, NULL, 0) == BW_OK, "root open");
    r.backend = test_backend;
    test_files(&r);
    test_cas(&r);
    test_tree_lock(&r);
    bw_root_close(&r);
    test_readonly();
  }
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf %s", base);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
