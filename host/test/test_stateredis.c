/*
 * test_stateredis.c - the state store on Redis/Valkey (stateredis.c,
 * redis.c) against a real redis-server this test starts itself on a free
 * port (never 6379, never the system service), in a temporary directory,
 * with no persistence, and stops: the behaviours every backend shares
 * (state_cases.h: compare-and-set increments racing on 8 threads too), a
 * 1 MiB record, a tenant's cap refusing exactly under threads while
 * another tenant goes on, two processes and two handles sharing one
 * quota exactly, the server stopped (and frozen) mid-run and back again
 * with no reopening, AUTH from a password file, and rediss:// with
 * certificates made here by the openssl command. Without redis-server (or
 * openssl) it fails, saying what to install.
 */
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "changes.h"
#include "state_cases.h"
#include "watch.h"

static char dir[] = "/tmp/burrow-redis-XXXXXX";

static int have(const char *cmd) {
  char sh[128];
  snprintf(sh, sizeof sh, "command -v %s >/dev/null 2>&1", cmd);
  return system(sh) == 0;
}

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t l = sizeof a;
  if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) || getsockname(fd, (struct sockaddr *)&a, &l)) {
    perror("free port");
    exit(2);
  }
  close(fd);
  return ntohs(a.sin_port);
}

/* redis-server with its args (NULL-terminated) after the common ones */
static pid_t start_server(int port, int tls, ...) {
  const char *argv[40];
  int n = 0;
  char ports[16];
  snprintf(ports, sizeof ports, "%d", port);
  argv[n++] = "redis-server";
  argv[n++] = "--port";
  argv[n++] = tls ? "0" : ports;
  if (tls) argv[n++] = "--tls-port", argv[n++] = ports;
  argv[n++] = "--bind";
  argv[n++] = "127.0.0.1";
  argv[n++] = "--save";
  argv[n++] = "";
  argv[n++] = "--appendonly";
  argv[n++] = "no";
  argv[n++] = "--dir";
  argv[n++] = dir;
  argv[n++] = "--logfile";
  argv[n++] = "redis.log";
  va_list ap;
  va_start(ap, tls);
  for (const char *a; (a = va_arg(ap, const char *)) && n < 39;) argv[n++] = a;
  va_end(ap);
  argv[n] = NULL;
  pid_t pid = fork();
  if (pid == 0) {
    execvp("redis-server", (char **)argv);
    _exit(127);
  }
  return pid;
}

static void stop_server(pid_t pid) {
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

/* Open the store at url once the server answers (at most 30 s of tries;
 * a server that exits fails at once). */
static int open_when_up(pid_t pid, const char *url, const bw_state_redis_opts *o, bw_state **s) {
  int64_t until = bw_now_ms() + 30000;
  while (bw_now_ms() < until) {
    if (bw_state_open_redis(url, o, s) == BW_OK) return 1;
    if (waitpid(pid, NULL, WNOHANG) == pid) {
      printf("# redis-server exited at its start: see %s/redis.log\n", dir);
      return 0;
    }
    usleep(10000);
  }
  return 0;
}

/* ---- the shared behaviours */

static void test_shared(const char *url, pid_t pid) {
  bw_state *s;
  if (!open_when_up(pid, url, NULL, &s)) {
    CHECK(0, "redis-server did not come up at %s (%s)", url, detail());
    return;
  }
  CHECK(!strcmp(bw_state_kind(s), "redis"), "kind");
  test_counter(s);
  test_once(s);
  test_records(s);
  test_arguments(s);
  test_threads(s, 8, 2000);
  test_cas_race(s, 8, 200);
  test_expiry(s, 0.02);
  test_pubsub(s);
  /* the largest record there may be, through partial reads and writes */
  char *big = malloc(BW_STATE_VALUE_MAX), *val = NULL;
  for (size_t i = 0; i < BW_STATE_VALUE_MAX; i++) big[i] = (char)(i * 7 + (i >> 9));
  int done = 0;
  size_t len = 0;
  uint64_t ver = 0, got = 0;
  CHECK(bw_state_cas(s, "big", "r", 0, big, BW_STATE_VALUE_MAX, 60, &done, &ver) == BW_OK && done,
        "a 1 MiB record (%s)", detail());
  CHECK(bw_state_get(s, "big", "r", &val, &len, &got) == BW_OK && val && len == BW_STATE_VALUE_MAX &&
            !memcmp(val, big, len) && got == ver,
        "read back whole");
  free(val);
  free(big);
  bw_state_totals t;
  CHECK(bw_state_stats(s, &t) == BW_OK && t.entries > 1000, "stats: %zu entries, %zu bytes (%s)", t.entries,
        t.bytes, detail());
  bw_state_close(s);
}

/* ---- caps: exact under threads, another tenant unaffected */

typedef struct filler {
  bw_state *s;
  int base, ok, refused, other;
} filler;

static void *fill(void *ud) {
  filler *f = ud;
  char key[32];
  for (int i = 0; i < 50; i++) {
    int first = 0;
    snprintf(key, sizeof key, "k%d", f->base + i);
    int rc = bw_state_once(f->s, "a", key, 3600, &first);
    if (rc == BW_OK && first) f->ok++;
    else if (rc == BW_TOO_LARGE && strstr(detail(), "max_entries_per_tenant")) f->refused++;
    else f->other++;
  }
  return NULL;
}

static void test_caps(const char *base) {
  char url[128];
  snprintf(url, sizeof url, "%s/1", base); /* a database of its own */
  bw_state_redis_opts o = {.max_entries_per_tenant = 100, .max_bytes_per_tenant = 100 * 1024, .pool = 8};
  bw_state *s;
  CHECK(bw_state_open_redis(url, &o, &s) == BW_OK, "open with caps (%s)", detail());
  pthread_t th[8];
  filler f[8];
  for (int i = 0; i < 8; i++) {
    f[i] = (filler){s, i * 1000, 0, 0, 0};
    pthread_create(&th[i], NULL, fill, &f[i]);
  }
  int ok = 0, refused = 0, other = 0;
  for (int i = 0; i < 8; i++) {
    pthread_join(th[i], NULL);
    ok += f[i].ok, refused += f[i].refused, other += f[i].other;
  }
  CHECK(ok == 100 && refused == 300 && other == 0,
        "8 threads, 400 new keys, a cap of 100: %d in, %d refused, %d other", ok, refused, other);
  int first = 1, added = 1, rc;
  int64_t v;
  rc = bw_state_once(s, "a", "one-more", 3600, &first);
  CHECK(rc == BW_TOO_LARGE && !first && strstr(detail(), "max_entries_per_tenant"), "the 101st: %s (%s)",
        bw_code_name(rc), detail());
  rc = bw_state_add(s, "a", "ctr", 1, -1, 60, &added, &v);
  CHECK(rc == BW_TOO_LARGE && !added, "nor a new counter");
  CHECK(bw_state_once(s, "b", "k0", 3600, &first) == BW_OK && first, "b still gets its own (%s)", detail());
  size_t n = 0;
  CHECK(bw_state_count(s, "a", &n) == BW_OK && n == 100, "a keeps its 100 (%zu)", n);
  /* bytes */
  char *val = calloc(1, 200 * 1024);
  int done;
  uint64_t ver;
  rc = bw_state_cas(s, "e", "big", 0, val, 200 * 1024, 60, &done, &ver);
  CHECK(rc == BW_TOO_LARGE && strstr(detail(), "max_bytes_per_tenant") && !done, "a record past the byte share: %s",
        detail());
  CHECK(bw_state_cas(s, "e", "small", 0, val, 50 * 1024, 60, &done, &ver) == BW_OK && done, "one within it");
  rc = bw_state_cas(s, "e", "small", ver, val, 150 * 1024, 60, &done, &ver);
  CHECK(rc == BW_TOO_LARGE && !done, "growing it past the share: refused (%s)", detail());
  CHECK(bw_state_cas(s, "e", "small2", 0, val, 40 * 1024, 60, &done, &ver) == BW_OK && done, "a second, within");
  rc = bw_state_cas(s, "e", "small3", 0, val, 40 * 1024, 60, &done, &ver);
  CHECK(rc == BW_TOO_LARGE && strstr(detail(), "max_bytes_per_tenant"), "a third past the share (%s)", detail());
  int del;
  CHECK(bw_state_del(s, "e", "small", 0, &del) == BW_OK && del, "one deleted");
  CHECK(bw_state_cas(s, "e", "small3", 0, val, 40 * 1024, 60, &done, &ver) == BW_OK && done,
        "gives its bytes back (%s)", detail());
  free(val);
  /* a share full of expiring entries makes room as they expire */
  for (int i = 0; i < 3; i++) {
    char key[16];
    snprintf(key, sizeof key, "s%d", i);
    bw_state_once(s, "short", key, 0.05, &first);
  }
  bw_state_close(s);
  bw_state_redis_opts small = {.max_entries_per_tenant = 3};
  CHECK(bw_state_open_redis(url, &small, &s) == BW_OK, "open with a cap of 3");
  rc = bw_state_once(s, "short", "next", 3600, &first);
  CHECK(rc == BW_TOO_LARGE, "full while they live: %s", bw_code_name(rc));
  int64_t until = bw_now_ms() + 30000;
  while ((rc = bw_state_once(s, "short", "next", 3600, &first)) == BW_TOO_LARGE && bw_now_ms() < until)
    usleep(1000);
  CHECK(rc == BW_OK && first, "room once they expired (%s)", detail());
  CHECK(bw_state_count(s, "short", &n) == BW_OK && n == 1, "count: the live one (%zu)", n);
  bw_state_close(s);
}

/* ---- one quota, two processes and two handles */

static int add_many(bw_state *s, int tries) {
  int added_total = 0;
  for (int i = 0; i < tries; i++) {
    int added;
    int64_t v;
    if (bw_state_add(s, "acme", "calls", 1, 3000, 600, &added, &v) == BW_OK && added) added_total++;
  }
  return added_total;
}

static void test_processes(const char *base) {
  char url[128];
  snprintf(url, sizeof url, "%s/2", base);
  int fds[2][2];
  pid_t kids[2];
  for (int k = 0; k < 2; k++) {
    if (pipe(fds[k])) abort();
    kids[k] = fork();
    if (kids[k] == 0) {
      bw_state *s;
      int n = -1;
      if (bw_state_open_redis(url, NULL, &s) == BW_OK) n = add_many(s, 1500);
      if (write(fds[k][1], &n, sizeof n) != sizeof n) _exit(1);
      _exit(0);
    }
    close(fds[k][1]);
  }
  bw_state *a, *b;
  CHECK(bw_state_open_redis(url, NULL, &a) == BW_OK && bw_state_open_redis(url, NULL, &b) == BW_OK,
        "two handles (%s)", detail());
  int mine = add_many(a, 500) + add_many(b, 500);
  int total = mine;
  for (int k = 0; k < 2; k++) {
    int n = -1;
    if (read(fds[k][0], &n, sizeof n) != sizeof n) n = -1;
    close(fds[k][0]);
    waitpid(kids[k], NULL, 0);
    CHECK(n >= 0, "child %d ran", k);
    total += n;
  }
  int added;
  int64_t v = 0;
  bw_state_add(b, "acme", "calls", 0, -1, 600, &added, &v);
  CHECK(total == 3000 && v == 3000, "4000 tries from two processes and two handles, a limit of 3000: %d added, value %lld",
        total, (long long)v);
  int first;
  CHECK(bw_state_once(a, "acme", "nonce", 600, &first) == BW_OK && first, "a marks");
  CHECK(bw_state_once(b, "acme", "nonce", 600, &first) == BW_OK && !first, "b sees the mark");
  bw_state_close(a);
  bw_state_close(b);
}

/* ---- the server gone, frozen, and back */

static int came_back(void *ud) {
  int added;
  int64_t v;
  return bw_state_add(ud, "t", "after", 1, -1, 60, &added, &v) == BW_OK && added;
}

static void test_outage(const char *base, int port, pid_t *pid) {
  bw_state_redis_opts o = {.timeout = 0.5, .connect_timeout = 0.5};
  bw_state *s;
  CHECK(bw_state_open_redis(base, &o, &s) == BW_OK, "open (%s)", detail());
  int added = 1, first = 1, rc, del = 1, done = 1;
  int64_t v;
  size_t n = 7, len;
  char *val = NULL;
  uint64_t ver = 7;
  CHECK(bw_state_add(s, "t", "before", 1, -1, 60, &added, &v) == BW_OK && added, "a call while it is up");
  heard h = {0};
  const char *ch[] = {"changes"};
  CHECK(bw_state_subscribe(s, "t", ch, 1, &h.sub) == BW_OK, "subscribed while it is up");
  CHECK(bw_state_publish(s, "t", "changes", "one", 3) == BW_OK, "publish while up");
  want w1 = {&h, 1};
  CHECK(wait_for(got_msgs, &w1) && h.gaps == 0, "heard, no gap (%d)", h.gaps);
  /* frozen: every call times out, then it answers again */
  kill(*pid, SIGSTOP);
  rc = bw_state_add(s, "t", "frozen", 1, -1, 60, &added, &v);
  CHECK(rc == BW_STORE_UNAVAILABLE && !added && strstr(detail(), "timed out"), "a frozen server: %s (%s)",
        bw_code_name(rc), detail());
  kill(*pid, SIGCONT);
  CHECK(wait_for(came_back, s), "it answers again once thawed (%s)", detail());
  /* stopped */
  stop_server(*pid);
  *pid = 0;
  rc = bw_state_add(s, "t", "c", 1, 10, 60, &added, &v);
  CHECK(rc == BW_STORE_UNAVAILABLE && !added, "add with the server gone: %s (%s)", bw_code_name(rc), detail());
  char where[32];
  snprintf(where, sizeof where, "127.0.0.1:%d", port);
  CHECK(strstr(detail(), where) != NULL, "the detail names the server: %s", detail());
  CHECK(strcmp(bw_code_name(rc), "STORE_UNAVAILABLE") == 0, "its own name: %s", bw_code_name(rc));
  CHECK(bw_state_once(s, "t", "m", 60, &first) == BW_STORE_UNAVAILABLE && !first, "once: no yes");
  CHECK(bw_state_get(s, "t", "r", &val, &len, &ver) == BW_STORE_UNAVAILABLE && !val && !ver, "get");
  CHECK(bw_state_cas(s, "t", "r", 0, "x", 1, 60, &done, &ver) == BW_STORE_UNAVAILABLE && !done, "cas");
  CHECK(bw_state_del(s, "t", "r", 0, &del) == BW_STORE_UNAVAILABLE && !del, "del");
  CHECK(bw_state_count(s, "t", &n) == BW_STORE_UNAVAILABLE && n == 0, "count");
  bw_state_totals t;
  CHECK(bw_state_stats(s, &t) == BW_STORE_UNAVAILABLE, "stats");
  /* back on the same port: the same handle goes on */
  *pid = start_server(port, 0, NULL);
  CHECK(wait_for(came_back, s), "the same handle works again once the server is back (%s)", detail());
  CHECK(bw_state_once(s, "t", "m", 60, &first) == BW_OK && first, "and marks");
  /* the subscriber connected again by itself and says it may have missed some */
  int64_t until = bw_now_ms() + 30000;
  while (bw_now_ms() < until && !h.gaps) {
    take_all(&h);
    usleep(1000);
  }
  CHECK(h.gaps >= 1, "a gap after the server came back (%d)", h.gaps);
  int before = h.msgs;
  /* published until heard: the subscription may be a moment behind the pool */
  until = bw_now_ms() + 30000;
  while (bw_now_ms() < until && h.msgs == before) {
    bw_state_publish(s, "t", "changes", "two", 3);
    usleep(20000);
    take_all(&h);
  }
  CHECK(h.msgs > before && !strcmp(h.last, "two"), "and hears again without reopening");
  bw_state_unsubscribe(h.sub);
  bw_state_close(s);
}

/* ---- AUTH */

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  fputs(text, f);
  fclose(f);
}

static void test_auth(void) {
  int port = free_port();
  char url[64], pw[300], bad[300], none[300];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
  snprintf(pw, sizeof pw, "%s/password", dir);
  snprintf(bad, sizeof bad, "%s/wrong", dir);
  snprintf(none, sizeof none, "%s/absent", dir);
  write_file(pw, "s3cret-Pa55\n");
  write_file(bad, "not-it\n");
  pid_t pid = start_server(port, 0, "--requirepass", "s3cret-Pa55", NULL);
  bw_state_redis_opts o = {.password_file = pw};
  bw_state *s;
  CHECK(open_when_up(pid, url, &o, &s), "AUTH from the password file (%s)", detail());
  int first;
  CHECK(bw_state_once(s, "t", "k", 60, &first) == BW_OK && first, "and serve");
  bw_state_close(s);
  char user[96];
  snprintf(user, sizeof user, "redis://default@127.0.0.1:%d/3", port);
  CHECK(bw_state_open_redis(user, &o, &s) == BW_OK, "AUTH with a user name from the URL, and a database (%s)", detail());
  CHECK(bw_state_once(s, "t", "k", 60, &first) == BW_OK && first, "database 3 is another");
  bw_state_close(s);
  int rc = bw_state_open_redis(url, NULL, &s);
  CHECK(rc == BW_STORE_UNAVAILABLE && strstr(detail(), "NOAUTH"), "no password: %s (%s)", bw_code_name(rc), detail());
  bw_state_redis_opts w = {.password_file = bad};
  rc = bw_state_open_redis(url, &w, &s);
  CHECK(rc == BW_STORE_UNAVAILABLE && strstr(detail(), "AUTH refused") && !strstr(detail(), "not-it"),
        "a wrong one: %s (%s)", bw_code_name(rc), detail());
  bw_state_redis_opts m = {.password_file = none};
  rc = bw_state_open_redis(url, &m, &s);
  CHECK(rc == BW_STORE_UNAVAILABLE && strstr(detail(), "password file"), "no file: %s (%s)", bw_code_name(rc),
        detail());
  char inurl[96];
  snprintf(inurl, sizeof inurl, "redis://:s3cret-Pa55@127.0.0.1:%d", port);
  rc = bw_state_open_redis(inurl, NULL, &s);
  CHECK(rc == BW_INVALID_ARGUMENT && strstr(detail(), "password_file") && !strstr(detail(), "s3cret"),
        "a password in the URL: refused, and not repeated (%s)", detail());
  stop_server(pid);
}

/* ---- rediss:// */

static int sh(const char *fmt, ...) {
  char cmd[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(cmd, sizeof cmd, fmt, ap);
  va_end(ap);
  return system(cmd);
}

/* ---- changes (changes.c): an instance cut from the server tells the
 * others, once back, that they may have missed its writes */

static int watch_heard(bw_watcher *w, int ms) {
  int64_t until = bw_now_ms() + ms;
  while (bw_now_ms() < until) {
    bw_watch_event ev[8];
    double next;
    bw_watch_read(w);
    int n = bw_watch_due(w, (double)bw_now_ms() + 1e6, ev, 8, &next), what = 0;
    for (int i = 0; i < n; i++) what |= ev[i].what;
    if (what) return what;
    usleep(10000);
  }
  return 0;
}

static void test_owed_gap(void) {
  int port = free_port();
  char url[64], pwx[300], pwy[300];
  snprintf(url, sizeof url, "redis://127.0.0.1:%d", port);
  snprintf(pwx, sizeof pwx, "%s/pw-x", dir);
  snprintf(pwy, sizeof pwy, "%s/pw-y", dir);
  write_file(pwx, "gap-Pa55\n");
  write_file(pwy, "gap-Pa55\n");
  pid_t pid = start_server(port, 0, "--requirepass", "gap-Pa55", NULL);
  bw_state_redis_opts ox = {.password_file = pwx, .timeout = 1}, oy = {.password_file = pwy, .timeout = 1};
  bw_state *x, *y;
  if (!open_when_up(pid, url, &ox, &x)) {
    CHECK(0, "server up (%s)", detail());
    stop_server(pid);
    return;
  }
  CHECK(bw_state_open_redis(url, &oy, &y) == BW_OK, "a second instance's handle (%s)", detail());
  /* x hears tenant t's changes on a watch of a root with inotify off */
  bw_root r;
  char wdir[300];
  snprintf(wdir, sizeof wdir, "%s/ws", dir);
  mkdir(wdir, 0755);
  sh("touch %s/ws/f", dir);
  CHECK(bw_root_open(&r, wdir, "/w", 0) == BW_OK, "root");
  bw_watcher *w = bw_watch_new(4, 0);
  bw_handle h;
  int id;
  CHECK(bw_changes_follow(w, x, "t") == BW_OK, "follow (%s)", detail());
  CHECK(bw_resolve_handle(&r, 1, 0, "f", 0, &h) == BW_OK && bw_watch_add_at(w, &h, "/w", 0, &id) == BW_OK,
        "watch");
  CHECK(bw_changes_publish(y, "t", "/w", "f", 0) == BW_OK && watch_heard(w, 10000) == BW_WATCH_CHANGED,
        "y's change heard by x");
  /* y cut off: its password wrong from now on, its connections dropped
   * (x's subscriber, a pubsub client, stays) */
  write_file(pwy, "wrong\n");
  sh("redis-cli -p %d -a gap-Pa55 --no-auth-warning CLIENT KILL TYPE normal > /dev/null", port);
  int rc = bw_changes_publish(y, "t", "/w", "f", 0);
  CHECK(rc == BW_STORE_UNAVAILABLE, "y cannot publish: %s (%s)", bw_code_name(rc), detail());
  CHECK(watch_heard(w, 300) == 0, "x heard nothing of it");
  /* y back: the gap it owed reaches x with no change of y's */
  write_file(pwy, "gap-Pa55\n");
  CHECK(watch_heard(w, 10000) == BW_WATCH_CHANGED, "x told it may have missed y's changes");
  bw_handle_close(&h);
  bw_watch_free(w);
  bw_root_close(&r);
  bw_state_close(y);
  bw_state_close(x);
  stop_server(pid);
}

static void test_tls(void) {
  if (!have("openssl")) {
    CHECK(0, "the openssl command is not installed: apt-get install openssl");
    return;
  }
  /* a CA, and a server certificate for the name localhost only */
  int rc = sh("cd %s && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
              "-keyout ca.key -out ca.crt -days 2 -subj /CN=burrow-test-ca 2>/dev/null && "
              "openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout server.key "
              "-out server.csr -subj /CN=localhost 2>/dev/null && "
              "printf 'subjectAltName=DNS:localhost\\n' > san.ext && "
              "openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -out server.crt "
              "-days 2 -extfile san.ext 2>/dev/null",
              dir);
  CHECK(rc == 0, "certificates made with openssl");
  if (rc) return;
  char cert[300], key[300], ca[300];
  snprintf(cert, sizeof cert, "%s/server.crt", dir);
  snprintf(key, sizeof key, "%s/server.key", dir);
  snprintf(ca, sizeof ca, "%s/ca.crt", dir);
  int port = free_port();
  pid_t pid = start_server(port, 1, "--tls-cert-file", cert, "--tls-key-file", key, "--tls-ca-cert-file", ca,
                           "--tls-auth-clients", "no", NULL);
  char url[64];
  snprintf(url, sizeof url, "rediss://localhost:%d", port);
  bw_state_redis_opts o = {.ca_file = ca};
  bw_state *s;
  CHECK(open_when_up(pid, url, &o, &s), "rediss:// verified against the CA (%s)", detail());
  int first;
  CHECK(bw_state_once(s, "t", "k", 60, &first) == BW_OK && first, "and serves over TLS (%s)", detail());
  CHECK(bw_state_once(s, "t", "k", 60, &first) == BW_OK && !first, "the same server");
  bw_state_close(s);
  rc = bw_state_open_redis(url, NULL, &s);
  CHECK(rc == BW_STORE_UNAVAILABLE && strstr(detail(), "not trusted"), "an unknown CA: %s (%s)", bw_code_name(rc),
        detail());
  char byip[64];
  snprintf(byip, sizeof byip, "rediss://127.0.0.1:%d", port);
  rc = bw_state_open_redis(byip, &o, &s);
  CHECK(rc == BW_STORE_UNAVAILABLE && strstr(detail(), "mismatch"), "a name the certificate lacks: %s (%s)",
        bw_code_name(rc), detail());
  bw_state_redis_opts off = {.verify_off = 1};
  rc = bw_state_open_redis(byip, &off, &s);
  CHECK(rc == BW_OK, "verification off: connects (%s)", detail());
  if (!rc) bw_state_close(s);
  char plain[64];
  snprintf(plain, sizeof plain, "redis://localhost:%d", port);
  bw_state_redis_opts quick = {.timeout = 0.5, .connect_timeout = 0.5};
  rc = bw_state_open_redis(plain, &quick, &s);
  CHECK(rc == BW_STORE_UNAVAILABLE, "plain text to the TLS port: %s (%s)", bw_code_name(rc), detail());
  stop_server(pid);
}

static void test_urls(void) {
  bw_state *s;
  const char *bad[] = {"http://x", "redis://", "redis://h:0", "redis://h:70000", "redis://h/x", "redis://h/1?a=b",
                       "redis://[::1"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    CHECK(bw_state_open_redis(bad[i], NULL, &s) == BW_INVALID_ARGUMENT, "%s refused (%s)", bad[i], detail());
  int rc = bw_state_open_redis("redis://127.0.0.1:1", NULL, &s);
  CHECK(rc == BW_STORE_UNAVAILABLE && strstr(detail(), "127.0.0.1:1"), "nothing listening: %s", detail());
}

int main(void) {
  signal(SIGPIPE, SIG_DFL); /* left deadly: the store must never raise it */
  if (!have("redis-server")) {
    printf("FAIL: redis-server is not installed: apt-get install redis-server (or make deps)\n");
    printf("0 passed, 1 failed\n");
    return 1;
  }
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 2;
  }
  int port = free_port();
  char base[64];
  snprintf(base, sizeof base, "redis://127.0.0.1:%d", port);
  pid_t pid = start_server(port, 0, NULL);
  test_shared(base, pid);
  test_caps(base);
  test_processes(base);
  test_outage(base, port, &pid);
  if (pid) stop_server(pid);
  test_auth();
  test_owed_gap();
  test_tls();
  test_urls();
  sh("rm -rf %s", dir);
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
