/*
 * test_watch.c - the file watch (watch.c) and the shared counters
 * (counter.c) without Lua: coalescing, the cap, a queue overflow, the
 * identity check; counters two processes add to at once; changes heard
 * through the state store (changes.c): marks by mount and in-root path,
 * inotify's echo, the tenant, a gap, messages that do not decode.
 */
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "core.h"
#include "changes.h"
#include "counter.h"
#include "state.h"
#include "watch.h"

static char base[64];

static void put(const char *name, const char *text) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", base, name);
  int fd = open(p, O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (fd >= 0) {
    if (write(fd, text, strlen(text)) < 0) perror("write");
    close(fd);
  }
}

static int handle(const bw_root *r, const char *rel, bw_handle *h) {
  return bw_resolve_handle(r, 1, 0, rel, 0, h);
}

static void test_watch(void) {
  bw_root r;
  put("a", "1");
  put("b", "1");
  CHECK(bw_root_open(&r, base, NULL, 0) == BW_OK, "root");
  bw_watcher *w = bw_watch_new(2, 100);
  CHECK(w != NULL, "watcher");
  bw_handle ha, hb, hd;
  int ida = 0, idb = 0, idd = 0;
  CHECK(handle(&r, "a", &ha) == BW_OK && bw_watch_add(w, &ha, &ida) == BW_OK, "watch a");
  CHECK(handle(&r, "b", &hb) == BW_OK && bw_watch_add(w, &hb, &idb) == BW_OK, "watch b");
  CHECK(handle(&r, ".", &hd) == BW_OK && bw_watch_add(w, &hd, &idd) == BW_TOO_LARGE, "the cap");
  for (int i = 0; i < 1000; i++) put("a", "x");
  CHECK(bw_watch_read(w) >= 0, "events read (here, or already by the hub's thread)");
  bw_watch_event ev[4];
  double next;
  int n = bw_watch_due(w, 1000.0, ev, 4, &next);
  CHECK(n == 1 && ev[0].id == ida && ev[0].what == BW_WATCH_CHANGED, "1000 writes: one event for a (%d)", n);
  CHECK(next < 0, "nothing held");
  put("a", "y");
  bw_watch_read(w);
  CHECK(bw_watch_due(w, 1050.0, ev, 4, &next) == 0 && next > 49 && next < 51, "held for the interval (%g)", next);
  CHECK(bw_watch_due(w, 1100.0, ev, 4, &next) == 1, "then reported");
  /* the text kept with a watch (a folder's view): "" until set, cut to fit */
  char view[BW_WATCH_VIEW], big[300];
  CHECK(bw_watch_view(w, ida, NULL, view) == BW_OK && view[0] == '\0', "no view yet");
  CHECK(bw_watch_view(w, ida, "1:2:abc", view) == BW_OK && !strcmp(view, "1:2:abc"), "set");
  CHECK(bw_watch_view(w, ida, NULL, view) == BW_OK && !strcmp(view, "1:2:abc"), "kept");
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  CHECK(bw_watch_view(w, ida, big, view) == BW_OK && strlen(view) == BW_WATCH_VIEW - 1, "cut to fit");
  CHECK(bw_watch_view(w, 9999, NULL, view) == BW_INVALID_ARGUMENT, "no such watch");
  /* the file swapped between the resolution and the watch */
  CHECK(bw_watch_remove(w, idb) == BW_OK, "remove b");
  bw_handle_close(&hb);
  CHECK(handle(&r, "b", &hb) == BW_OK, "b again");
  char pb[256];
  snprintf(pb, sizeof pb, "%s/b", base);
  unlink(pb);
  CHECK(symlink("/etc/hostname", pb) == 0, "b is a link now");
  CHECK(bw_watch_add(w, &hb, &idb) == BW_EAGAIN, "the swap is seen");
  CHECK(bw_watch_count(w) == 1, "nothing added");
  bw_handle_close(&ha);
  bw_handle_close(&hb);
  bw_handle_close(&hd);
  bw_watch_free(w);
  bw_root_close(&r);
}

/* Issue 26: one inotify instance for the process, whatever the number of
 * watchers (sessions); a change reaches every watcher of the object; one
 * watcher's removal keeps the kernel watch another still uses. */
/* Watchers naming one budget share its cap; a remove or a free gives back. */
static void test_budget(void) {
  bw_root r;
  put("d", "1");
  put("e", "1");
  CHECK(bw_root_open(&r, base, NULL, 0) == BW_OK, "root");
  bw_handle hd, he;
  CHECK(handle(&r, "d", &hd) == BW_OK && handle(&r, "e", &he) == BW_OK, "d, e");
  bw_watcher *a = bw_watch_new(4, 0), *b = bw_watch_new(4, 0);
  CHECK(a && b && bw_watch_budget(a, "t", 2) == BW_OK && bw_watch_budget(b, "t", 2) == BW_OK, "budgets");
  int i1, i2, i3;
  CHECK(bw_watch_add(a, &hd, &i1) == BW_OK && bw_watch_add(b, &he, &i2) == BW_OK, "two fit");
  CHECK(bw_watch_add(a, &he, &i3) == BW_TOO_LARGE, "the third is past the shared cap");
  CHECK(bw_watch_remove(b, i2) == BW_OK && bw_watch_add(a, &he, &i3) == BW_OK, "a remove gives one back");
  bw_watch_free(a); /* its two go back */
  CHECK(bw_watch_add(b, &hd, &i1) == BW_OK && bw_watch_add(b, &he, &i2) == BW_OK, "a free gives its back");
  bw_watch_free(b);
  bw_handle_close(&hd);
  bw_handle_close(&he);
  bw_root_close(&r);
}

/* A published watcher is found by its id and outlives its maker's
 * reference; dropped, it is found no more. */
static void test_publish(void) {
  bw_root r;
  put("f", "1");
  CHECK(bw_root_open(&r, base, NULL, 0) == BW_OK, "root");
  bw_handle hf;
  CHECK(handle(&r, "f", &hf) == BW_OK, "f");
  bw_watcher *a = bw_watch_new(4, 0);
  char id[33];
  CHECK(a && bw_watch_publish(a, id) == BW_OK && strlen(id) == 32, "published");
  bw_watcher *b = bw_watch_find(id);
  CHECK(b == a, "found by its id");
  bw_watch_free(a); /* the maker's reference */
  int wid;
  CHECK(bw_watch_add(b, &hf, &wid) == BW_OK && bw_watch_count(b) == 1, "alive through the finder's");
  bw_watch_drop(b);
  CHECK(bw_watch_find(id) == NULL, "dropped: not found");
  CHECK(bw_watch_count(b) == 1, "the finder's reference still holds it");
  bw_watch_free(b);
  bw_handle_close(&hf);
  bw_root_close(&r);
}

static void test_one_instance(void) {
  bw_root r;
  put("c", "1");
  CHECK(bw_root_open(&r, base, NULL, 0) == BW_OK, "root");
  enum { N = 200 }; /* more than the 128 instances a uid has by default */
  static bw_watcher *ws[N];
  static int ids[N];
  bw_handle h;
  CHECK(handle(&r, "c", &h) == BW_OK, "c");
  int made = 0;
  for (int i = 0; i < N; i++)
    if ((ws[i] = bw_watch_new(4, 0)) && bw_watch_add(ws[i], &h, &ids[i]) == BW_OK) made++;
  CHECK(made == N, "%d watchers, each watching c (%d made)", N, made);
  if (made != N) { /* an instance each: the uid's limit was reached */
    for (int i = 0; i < N; i++) bw_watch_free(ws[i]);
    bw_handle_close(&h);
    bw_root_close(&r);
    return;
  }
  CHECK(bw_watch_fd(ws[0]) != bw_watch_fd(ws[N - 1]), "each watcher polls an fd of its own");
  char p[64];
  int n = 0;
  for (int fd = 0; fd < 4096; fd++) {
    char t[128];
    snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
    ssize_t k = readlink(p, t, sizeof t - 1);
    if (k > 0) {
      t[k] = '\0';
      n += strstr(t, "inotify") != NULL;
    }
  }
  CHECK(n == 1, "the process holds one inotify instance (%d)", n);
  bw_watch_remove(ws[0], ids[0]); /* the first lets go of c: the rest keep it */
  put("c", "2");
  /* nobody reads: the hub's thread drains and makes the watchers readable */
  struct pollfd pf = {.fd = bw_watch_fd(ws[N / 2]), .events = POLLIN};
  CHECK(poll(&pf, 1, 20000) == 1, "a watcher's own fd turns readable");
  bw_watch_read(ws[N - 1]); /* one reads: all stay marked */
  bw_watch_event ev[2];
  double next;
  int got = 0;
  for (int i = 1; i < N; i++) got += bw_watch_due(ws[i], 1000.0, ev, 2, &next) == 1 && ev[0].id == ids[i];
  CHECK(got == N - 1, "the change reached every watcher still watching (%d)", got);
  CHECK(bw_watch_due(ws[0], 1000.0, ev, 2, &next) == 0, "not the one that let go");
  for (int i = 0; i < N; i++) bw_watch_free(ws[i]);
  bw_handle_close(&h);
  bw_root_close(&r);
}

static void test_counters(void) {
  char path[128];
  snprintf(path, sizeof path, "%s/store", base);
  /* two processes, 500 tries of 1 each, limit 600: exactly 600 taken */
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    kids[k] = fork();
    if (kids[k] == 0) {
      bw_counters *c;
      if (bw_counters_open(path, &c)) _exit(2);
      for (int i = 0; i < 500; i++) {
        int64_t v;
        int added;
        if (bw_counter_add(c, "k", 0, 1, 600, &v, &added)) _exit(3);
      }
      bw_counters_close(c);
      _exit(0);
    }
  }
  int st[2];
  waitpid(kids[0], &st[0], 0);
  waitpid(kids[1], &st[1], 0);
  bw_counters *c;
  CHECK(bw_counters_open(path, &c) == BW_OK, "open");
  int64_t v;
  int added;
  CHECK(bw_counter_add(c, "k", 0, 0, -1, &v, &added) == BW_OK && v == 600, "600 taken in all (%lld)", (long long)v);
  CHECK(WIFEXITED(st[0]) && WIFEXITED(st[1]) && WEXITSTATUS(st[0]) == 0 && WEXITSTATUS(st[1]) == 0, "children");
  CHECK(bw_counter_add(c, "k", 7, 5, 10, &v, &added) == BW_OK && added && v == 5, "a new window starts at 0");
  CHECK(bw_counter_add(c, "k", 7, 6, 10, &v, &added) == BW_OK && !added && v == 5, "over the limit: not added");
  char key[BW_COUNTER_KEY + 1];
  memset(key, 'k', sizeof key - 1);
  key[sizeof key - 1] = '\0';
  CHECK(bw_counter_add(c, key, 0, 1, -1, &v, &added) == BW_INVALID_ARGUMENT, "key too long");
  bw_counters_close(c);
  char link[128];
  snprintf(link, sizeof link, "%s/store-link", base);
  CHECK(symlink(path, link) == 0, "link");
  CHECK(bw_counters_open(link, &c) != BW_OK, "never through a link");
}

/* Poll the watcher until an event is due (the feed's thread marks it):
 * its bits, or 0 after 10 s. */
static int heard(bw_watcher *w, int ms) {
  int64_t until = bw_now_ms() + ms;
  while (bw_now_ms() < until) {
    bw_watch_event ev[8];
    double next;
    bw_watch_read(w);
    int n = bw_watch_due(w, (double)bw_now_ms() + 1e6, ev, 8, &next); /* past any interval */
    int what = 0;
    for (int i = 0; i < n; i++) what |= ev[i].what;
    if (what) return what;
    struct pollfd p = {bw_watch_fd(w), POLLIN, 0};
    poll(&p, 1, 10);
  }
  return 0;
}

static void test_changes(void) {
  bw_root r;
  put("c.txt", "1");
  char sub[300];
  snprintf(sub, sizeof sub, "%s/cd", base);
  mkdir(sub, 0755);
  CHECK(bw_root_open(&r, base, NULL, 0) == BW_OK, "root");
  bw_state *s;
  CHECK(bw_state_open_memory(NULL, &s) == BW_OK, "store");
  bw_watcher *w = bw_watch_new(4, 0), *other = bw_watch_new(4, 0);
  CHECK(bw_changes_follow(w, s, "t") == BW_OK && bw_changes_follow(other, s, "u") == BW_OK, "follow");
  bw_handle hf, hd, ho;
  int idf, idd, ido, what = 0;
  /* inotify off: only what the store says reaches these */
  CHECK(handle(&r, "c.txt", &hf) == BW_OK && bw_watch_add_at(w, &hf, "/w", 0, &idf) == BW_OK, "file");
  CHECK(handle(&r, "cd", &hd) == BW_OK && bw_watch_add_at(w, &hd, "/w", 0, &idd) == BW_OK, "folder");
  CHECK(handle(&r, "c.txt", &ho) == BW_OK && bw_watch_add_at(other, &ho, "/w", 0, &ido) == BW_OK, "u's");
  put("c.txt", "outside");
  CHECK(heard(w, 300) == 0, "inotify off: an outside change is not heard");
  CHECK(bw_changes_publish(s, "t", "/w", "c.txt", 0) == BW_OK, "publish");
  CHECK(heard(w, 10000) == BW_WATCH_CHANGED, "the file's watch hears it");
  CHECK(heard(other, 300) == 0, "another tenant's does not");
  CHECK(bw_changes_publish(s, "t", "/w", "cd/new", 0) == BW_OK && (what = heard(w, 10000)) == BW_WATCH_LIST,
        "a folder hears an entry (%d)", what);
  CHECK(bw_changes_publish(s, "t", "/w", ".", 1) == BW_OK && heard(w, 10000) == (BW_WATCH_CHANGED | BW_WATCH_LIST | BW_WATCH_GONE),
        "the root gone: both");
  CHECK(bw_changes_publish(s, "t", "/v", "c.txt", 0) == BW_OK && heard(w, 300) == 0, "another mount: nothing");
  /* forged messages: published raw, never decoded into a mark */
  static const struct { const char *m; size_t n; } bad[] = {
      {"bw1\0w\0/w\0d/../c.txt", 19}, {"bw1\0w\0/w\0/c.txt", 15}, {"bw1\0w\0/w/..\0c.txt", 17},
      {"bw1\0w\0/w\0c.txt\0x", 17},   {"bw1\0q\0/w\0c.txt", 14},  {"bw0\0w\0/w\0c.txt", 14},
      {"bw1\0w\0/w\0", 10},            {"bw1\0w\0w\0c.txt", 13},   {"bw1\0w\0/w\0./c.txt", 16},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    const char *mount, *rel;
    int gone;
    char buf[64];
    memcpy(buf, bad[i].m, bad[i].n);
    buf[bad[i].n] = 0;
    CHECK(!bw_changes_decode(buf, bad[i].n, &mount, &rel, &gone), "forged %zu refused", i);
    bw_state_publish(s, "t", "changes", bad[i].m, bad[i].n);
  }
  CHECK(heard(w, 300) == 0, "forged messages mark nothing");
  char ok[64];
  size_t len;
  CHECK(bw_changes_encode("/w", "c.txt", 0, ok, sizeof ok, &len) == BW_OK, "encode");
  const char *m, *rl;
  int g;
  ok[len] = 0;
  CHECK(bw_changes_decode(ok, len, &m, &rl, &g) && !strcmp(m, "/w") && !strcmp(rl, "c.txt") && !g, "and back");
  /* inotify's echo: a watch with inotify on that just reported a change
   * takes the store's word about the same path as that report */
  bw_watcher *e = bw_watch_new(4, 0);
  CHECK(bw_changes_follow(e, s, "t") == BW_OK, "follow again (one feed)");
  bw_handle he;
  int ide;
  CHECK(handle(&r, "c.txt", &he) == BW_OK && bw_watch_add_at(e, &he, "/w", 1, &ide) == BW_OK, "inotify on");
  put("c.txt", "again");
  CHECK(heard(e, 10000) == BW_WATCH_CHANGED, "inotify reports it");
  CHECK(bw_changes_publish(s, "t", "/w", "c.txt", 0) == BW_OK && heard(e, 300) == 0, "its echo is not");
    bw_watch_free(e);
  bw_handle_close(&he);
  bw_handle_close(&hf);
  bw_handle_close(&hd);
  bw_handle_close(&ho);
  bw_watch_free(w);
  bw_watch_free(other);
  bw_state_close(s); /* the feeds keep it until their thread ends them */
  bw_root_close(&r);
}

int main(void) {
  strcpy(base, "/tmp/burrow-watch.XXXXXX");
  if (!mkdtemp(base)) return 1;
  test_watch();
  test_one_instance();
  test_budget();
  test_publish();
  test_counters();
  test_changes();
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
  if (system(cmd) != 0) printf("cleanup failed\n");
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
