/*
 * test_api_async.c - the non-blocking embedding API (burrow.h "NON-BLOCKING
 * CALLS") driven from C as an engine would: 100 submitted calls whose
 * callbacks all run on the engine's thread inside burrow_poll; the eventfd
 * waking a plain poll() loop; a long grep cancelled (the time from
 * burrow_cancel to its completion measured, far under the search's 30 s); progress reports;
 * burrow_take for callers without callbacks; a queued call cancelled before
 * it runs; burrow_call behind submitted calls; burrow_close with calls in
 * flight; a host on an engine's lua_State has no worker. Approval of
 * submitted calls (burrow_set_approver): allowed, denied, answered later,
 * the pull form, no approver, timeout, cancel and close while a question
 * waits, burrow_set_approval's callback on the worker without one.
 */
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "burrow.h"

#include "check.h"

static char dir[128];
static pthread_t engine;

static void put(const char *name, const char *text) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  if (!f || fputs(text, f) < 0 || fclose(f)) exit(2);
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Wait on the host's fd with poll(2), then burrow_poll; until *done or the
 * deadline. Returns the wake-ups that delivered something. */
static int loop_until(burrow_host *h, const int *done, int want, double ms) {
  struct pollfd p = {.fd = burrow_fd(h), .events = POLLIN};
  double end = now_ms() + ms;
  int wakes = 0;
  while (*done < want && now_ms() < end) {
    int r = poll(&p, 1, 50);
    if (r > 0 && (p.revents & POLLIN) && burrow_poll(h) > 0) wakes++;
  }
  return wakes;
}

/* ------------------------------------------------ 100 concurrent calls */

typedef struct slot {
  unsigned long long id;
  int calls, rc, on_engine;
  char want[32];
  int matched;
} slot;

static int finished;

static void on_done(void *ud, unsigned long long id, int rc, const char *res) {
  slot *s = ud;
  s->calls++;
  s->rc = rc;
  s->on_engine = pthread_equal(pthread_self(), engine);
  s->matched = id == s->id && res && strstr(res, s->want) != NULL;
  finished++;
}

static void test_hundred(void) {
  burrow_host *h = burrow_open(dir, NULL);
  CHECK(h != NULL, "open");
  if (!h) return;
  slot s[100];
  memset(s, 0, sizeof s);
  finished = 0;
  for (int i = 0; i < 100; i++) {
    char args[128];
    const char *tool;
    if (i % 3 == 0) {
      tool = "read_file";
      snprintf(args, sizeof args, "{\"path\":\"f%d.txt\"}", i % 10);
      snprintf(s[i].want, sizeof s[i].want, "line of f%d", i % 10);
    } else if (i % 3 == 1) {
      tool = "grep";
      snprintf(args, sizeof args, "{\"pattern\":\"line of f%d\",\"path\":\".\",\"include\":[\"f*.txt\"]}", i % 10);
      snprintf(s[i].want, sizeof s[i].want, "f%d.txt", i % 10);
    } else {
      tool = "stat";
      snprintf(args, sizeof args, "{\"path\":\"nope%d\"}", i);
      snprintf(s[i].want, sizeof s[i].want, "ENOENT");
    }
    s[i].id = burrow_submit(h, tool, args, on_done, &s[i]);
  }
  int ids_ok = 1;
  for (int i = 0; i < 100; i++)
    for (int k = 0; k < i; k++) ids_ok &= s[i].id != 0 && s[i].id != s[k].id;
  CHECK(ids_ok, "100 distinct nonzero ids");
  loop_until(h, &finished, 100, 20000);
  int once = 1, engine_thread = 1, matched = 1, rcs = 1;
  for (int i = 0; i < 100; i++) {
    once &= s[i].calls == 1;
    engine_thread &= s[i].on_engine;
    matched &= s[i].matched;
    if (!s[i].matched) printf("  call %d (%s) did not match\n", i, s[i].want);
    rcs &= s[i].rc == (i % 3 == 2 ? BURROW_TOOL_ERROR : BURROW_OK);
  }
  CHECK(finished == 100, "all 100 completed: %d", finished);
  CHECK(once, "each callback ran exactly once");
  CHECK(engine_thread, "every callback ran on the engine's thread");
  CHECK(matched, "each result is its own call's");
  CHECK(rcs, "result codes");
  CHECK(burrow_poll(h) == 0, "nothing left");
  burrow_close(h);
}

/* --------------------------------------------- poll() wakes, take, call */

static void test_fd_wakes(void) {
  burrow_host *h = burrow_open(dir, NULL);
  if (!h) return;
  int fd = burrow_fd(h);
  CHECK(fd >= 0, "fd");
  struct pollfd p = {.fd = fd, .events = POLLIN};
  CHECK(poll(&p, 1, 0) == 0, "not readable before a call");
  unsigned long long id = burrow_submit(h, "read_file", "{\"path\":\"f1.txt\"}", NULL, NULL);
  CHECK(id > 0, "submit without a callback");
  double t0 = now_ms();
  int r = poll(&p, 1, 5000);
  double waited = now_ms() - t0;
  CHECK(r == 1 && (p.revents & POLLIN), "a plain poll() wakes on completion");
  printf("  poll() woke after %.1f ms (a read_file)\n", waited);
  CHECK(burrow_poll(h) == 0, "a call without a callback is not polled");
  CHECK(poll(&p, 1, 0) == 1, "still readable while it waits for burrow_take");
  unsigned long long got = 0;
  int rc = -1;
  char *res = NULL;
  CHECK(burrow_take(h, &got, &rc, &res) == 1 && got == id && rc == BURROW_OK &&
            res && strstr(res, "line of f1"), "take: %s", res ? res : "(null)");
  burrow_free(res);
  CHECK(burrow_take(h, &got, &rc, &res) == 0, "nothing more to take");
  CHECK(poll(&p, 1, 0) == 0, "quiet again");
  /* burrow_call on a host with a worker: a thin wrapper, queued and waited */
  res = NULL;
  CHECK(burrow_call(h, "read_file", "{\"path\":\"f2.txt\"}", &res) == BURROW_OK &&
            strstr(res, "line of f2"), "burrow_call with a worker: %s", res ? res : "");
  burrow_free(res);
  char *tools = burrow_tools(h, "mcp");
  CHECK(tools && strstr(tools, "read_file"), "burrow_tools with a worker");
  burrow_free(tools);
  CHECK(burrow_submit(h, NULL, "{}", NULL, NULL) == 0, "NULL tool");
  CHECK(burrow_submit(NULL, "stat", "{}", NULL, NULL) == 0, "NULL host");
  CHECK(burrow_fd(NULL) == -1, "NULL host fd");
  CHECK(burrow_cancel(h, 999999) == 0, "unknown id");
  burrow_close(h);
}

/* ---------------------------------------------- cancel, progress */

static int cancelled_done;
static double done_at;
static char cancel_res[4096];
static int progress_reports, progress_on_engine = 1;

static void on_cancelled(void *ud, unsigned long long id, int rc, const char *res) {
  (void)ud;
  (void)id;
  (void)rc;
  done_at = now_ms();
  snprintf(cancel_res, sizeof cancel_res, "%s", res ? res : "");
  cancelled_done++;
}

static void on_progress(void *ud, unsigned long long id, double done, double total,
                        const char *msg) {
  (void)ud;
  (void)id;
  (void)done;
  (void)total;
  (void)msg;
  progress_reports++;
  progress_on_engine &= pthread_equal(pthread_self(), engine);
}

static int queued_done, queued_rc;
static char queued_res[512];
static void on_queued(void *ud, unsigned long long id, int rc, const char *res) {
  (void)ud;
  (void)id;
  queued_rc = rc;
  snprintf(queued_res, sizeof queued_res, "%s", res ? res : "");
  queued_done++;
}

static void test_cancel(void) {
  burrow_host *h = burrow_open(dir, NULL);
  if (!h) return;
  burrow_set_progress(h, on_progress);
  /* a pattern cubic in each line of 200 a's (no literal for the prefilter):
   * this grep would take its whole time budget (30 s) */
  unsigned long long id = burrow_submit(h, "grep",
      "{\"pattern\":\"a*a*a*\\\\d\",\"path\":\"slow\"}", on_cancelled, NULL);
  unsigned long long queued = burrow_submit(h, "stat", "{\"path\":\"f1.txt\"}", on_queued, NULL);
  int zero = 0;
  loop_until(h, &zero, 1, 600); /* let it run 600 ms, polling */
  CHECK(cancelled_done == 0, "the grep is still running after 600 ms");
  CHECK(progress_reports >= 1, "progress reported while it runs: %d", progress_reports);
  CHECK(progress_on_engine, "progress callbacks on the engine's thread");
  CHECK(burrow_cancel(h, queued) == 1, "cancel the queued call");
  double t0 = now_ms();
  CHECK(burrow_cancel(h, id) == 1, "cancel the running grep");
  loop_until(h, &cancelled_done, 1, 5000);
  double ms = done_at - t0;
  printf("  cancel -> completion of a running grep: %.1f ms\n", ms);
  /* "at once" against the 30 s the grep would run: a bound no load reaches */
  CHECK(cancelled_done == 1 && ms < 5000, "cancelled within 5 s: %.1f ms", ms);
  CHECK(strstr(cancel_res, "\"cancelled\":true") != NULL, "partial result says cancelled: %.200s", cancel_res);
  loop_until(h, &queued_done, 1, 2000);
  CHECK(queued_done == 1 && queued_rc == BURROW_TOOL_ERROR && strstr(queued_res, "CANCELLED"),
        "a queued call cancelled never runs: %s", queued_res);
  CHECK(burrow_cancel(h, id) == 0, "a finished call cannot be cancelled");
  burrow_close(h);
}

/* close with calls in flight and completions not polled */
static int never;
static void on_never(void *ud, unsigned long long id, int rc, const char *res) {
  (void)ud, (void)id, (void)rc, (void)res;
  never++;
}

static void test_close_in_flight(void) {
  burrow_host *h = burrow_open(dir, NULL);
  if (!h) return;
  burrow_submit(h, "stat", "{\"path\":\"f1.txt\"}", on_never, NULL);
  burrow_submit(h, "grep", "{\"pattern\":\"a*a*a*\\\\d\",\"path\":\"slow\"}", on_never, NULL);
  for (int i = 0; i < 10; i++) burrow_submit(h, "stat", "{\"path\":\"f1.txt\"}", on_never, NULL);
  usleep(200 * 1000);
  double t0 = now_ms();
  burrow_close(h);
  double ms = now_ms() - t0;
  printf("  burrow_close with a grep in flight: %.1f ms\n", ms);
  CHECK(ms < 5000, "close cancels the grep in flight (it would run 30 s): %.1f ms", ms);
  CHECK(never == 0, "no callback runs after close");
}

/* ------------------------------------------- approval of submitted calls */

typedef struct asked {
  int n, on_engine, answer; /* answer: what the approver returns */
  burrow_host *h;
  unsigned long long id;   /* the question's */
  unsigned long long call; /* the call it is about (burrow_ask_call) */
  char tool[32], op[16], path[64], reason[64];
} asked;

static int on_ask(void *ud, unsigned long long id, const char *tool,
                  const char *op, const char *path, const char *reason) {
  asked *a = ud;
  a->n++;
  a->id = id;
  a->call = a->h ? burrow_ask_call(a->h, id) : 0;
  a->on_engine = pthread_equal(pthread_self(), engine);
  snprintf(a->tool, sizeof a->tool, "%s", tool);
  snprintf(a->op, sizeof a->op, "%s", op);
  snprintf(a->path, sizeof a->path, "%s", path);
  snprintf(a->reason, sizeof a->reason, "%s", reason);
  return a->answer;
}

typedef struct outcome {
  int done, rc;
  double at;
  char res[1024];
} outcome;

static void on_outcome(void *ud, unsigned long long id, int rc, const char *res) {
  (void)id;
  outcome *o = ud;
  o->done = 1;
  o->rc = rc;
  o->at = now_ms();
  snprintf(o->res, sizeof o->res, "%s", res ? res : "");
}

static burrow_host *open_asking(void) {
  char cfg[512];
  snprintf(cfg, sizeof cfg, "roots: [%s]\npolicies: [%s/ask.lua]\n", dir, dir);
  burrow_host *h = burrow_open(cfg, NULL);
  CHECK(h != NULL, "open with a policy that asks about writes");
  return h;
}

static unsigned long long submit_write(burrow_host *h, const char *name, outcome *o) {
  char args[256];
  snprintf(args, sizeof args, "{\"path\":\"%s\",\"content\":\"x\"}", name);
  memset(o, 0, sizeof *o);
  return burrow_submit(h, "write_file", args, on_outcome, o);
}

static int exists(const char *name) {
  char p[256];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return access(p, F_OK) == 0;
}

static void test_approver(void) {
  burrow_host *h = open_asking();
  if (!h) return;
  asked a = {.answer = 1, .h = h};
  outcome o;
  burrow_set_approver(h, on_ask, &a, 5000);
  unsigned long long id = submit_write(h, "yes.txt", &o);
  loop_until(h, &o.done, 1, 10000);
  CHECK(o.done && o.rc == BURROW_OK && exists("yes.txt"), "allowed: written: %s", o.res);
  CHECK(a.n == 1 && a.call == id && a.id != id && a.on_engine,
        "asked once, about its call, with a question id of its own, on the engine's thread");
  CHECK(!strcmp(a.tool, "write_file") && !strcmp(a.op, "write") && !strcmp(a.path, "yes.txt") &&
            !strcmp(a.reason, "writes need a yes"),
        "the question: %s %s %s (%s)", a.tool, a.op, a.path, a.reason);
  char *res = NULL; /* a read is not asked about */
  CHECK(burrow_call(h, "read_file", "{\"path\":\"f1.txt\"}", &res) == BURROW_OK && a.n == 1, "reads are not asked");
  burrow_free(res);

  a.answer = 0; /* denied */
  submit_write(h, "no.txt", &o);
  loop_until(h, &o.done, 1, 10000);
  CHECK(o.rc == BURROW_TOOL_ERROR && strstr(o.res, "POLICY_DENIED") && strstr(o.res, "not approved (writes need a yes)") &&
            !exists("no.txt"),
        "denied: %s", o.res);

  a.answer = BURROW_ASK_LATER; /* answered later, with a reason */
  id = submit_write(h, "later.txt", &o);
  double t0 = now_ms();
  while (a.call != id && now_ms() - t0 < 10000) loop_until(h, &o.done, 1, 50);
  CHECK(a.call == id && !o.done, "the call waits for its answer");
  CHECK(burrow_answer(h, a.id + 1000, 1, NULL) == 0, "no question of another id");
  CHECK(burrow_answer(h, id, 1, NULL) == 0, "the call's id answers nothing");
  unsigned long long q1 = a.id;
  CHECK(burrow_answer(h, q1, 0, "the user said no") == 1, "answered");
  CHECK(burrow_answer(h, q1, 1, NULL) == 0, "answered once only");
  loop_until(h, &o.done, 1, 10000);
  CHECK(o.rc == BURROW_TOOL_ERROR && strstr(o.res, "not approved (writes need a yes): the user said no"),
        "a later no, with its reason: %s", o.res);
  id = submit_write(h, "later2.txt", &o);
  t0 = now_ms();
  while (a.call != id && now_ms() - t0 < 10000) loop_until(h, &o.done, 1, 50);
  /* a duplicate answer to the first question approves nothing here */
  CHECK(burrow_answer(h, q1, 1, NULL) == 0 && !o.done, "a stale answer to question 1 does not answer question 2");
  CHECK(a.id != q1, "question 2 has its own id");
  burrow_answer(h, a.id, 1, NULL);
  loop_until(h, &o.done, 1, 10000);
  CHECK(o.rc == BURROW_OK && exists("later2.txt"), "a later yes: %s", o.res);

  /* turned off: as before it (no burrow_set_approval either): denied */
  burrow_set_approver(h, on_ask, &a, 0);
  int before = a.n;
  submit_write(h, "off.txt", &o);
  loop_until(h, &o.done, 1, 10000);
  CHECK(a.n == before && strstr(o.res, "approval needed (writes need a yes) but this client cannot be asked"),
        "no approver: denied as before: %s", o.res);
  burrow_close(h);
}

static void test_approver_pull(void) {
  burrow_host *h = open_asking();
  if (!h) return;
  burrow_set_approver(h, NULL, NULL, 5000);
  outcome o;
  /* a name with a quote: JSON-escaped in the question */
  unsigned long long id = submit_write(h, "we\\\"ird.txt", &o);
  struct pollfd p = {.fd = burrow_fd(h), .events = POLLIN};
  CHECK(poll(&p, 1, 5000) == 1, "the fd wakes for the question");
  CHECK(burrow_poll(h) == 0 && !o.done, "burrow_poll leaves it to burrow_take_ask");
  CHECK(poll(&p, 1, 0) == 1, "still readable while it waits to be taken");
  unsigned long long got = 0;
  char *q = NULL;
  CHECK(burrow_answer(h, 1, 1, NULL) == 0 && burrow_answer(h, 2, 1, NULL) == 0,
        "an answer before the question is handed out is dropped");
  CHECK(burrow_take_ask(h, &got, &q) == 1 && got != id && burrow_ask_call(h, got) == id, "taken: the question's id, its call");
  char want[256];
  snprintf(want, sizeof want, "{\"call\":%llu,\"operation\":\"write\",\"path\":\"we\\\"ird.txt\",\"reason\":\"writes need a yes\",\"tool\":\"write_file\"}", id);
  CHECK(q && !strcmp(q, want), "the question as JSON: %s", q ? q : "(null)");
  burrow_free(q);
  q = NULL;
  CHECK(burrow_take_ask(h, &got, &q) == 0 && q == NULL, "handed out once");
  CHECK(burrow_answer(h, got, 1, NULL) == 1, "answered");
  loop_until(h, &o.done, 1, 10000);
  CHECK(o.rc == BURROW_OK && exists("we\"ird.txt"), "allowed: %s", o.res);
  burrow_close(h);
}

static void test_approver_ends(void) {
  burrow_host *h = open_asking();
  if (!h) return;
  asked a = {.answer = BURROW_ASK_LATER, .h = h};
  outcome o;
  burrow_set_approver(h, on_ask, &a, 300); /* nobody answers */
  double t0 = now_ms();
  unsigned long long id = submit_write(h, "timeout.txt", &o);
  loop_until(h, &o.done, 1, 10000);
  double ms = o.at - t0;
  printf("  an unanswered question: denied after %.1f ms (timeout 300)\n", ms);
  CHECK(a.n == 1 && o.rc == BURROW_TOOL_ERROR && strstr(o.res, "POLICY_DENIED") &&
            strstr(o.res, "no answer within 300 ms") && !exists("timeout.txt"),
        "timeout: denied: %s", o.res);
  CHECK(ms >= 300 && ms < 9000, "after the timeout: %.1f ms", ms); /* not at the 10 s wait */
  CHECK(burrow_answer(h, a.id, 1, NULL) == 0, "too late to answer");

  burrow_set_approver(h, on_ask, &a, 60000); /* cancel while it waits */
  id = submit_write(h, "cancel.txt", &o);
  t0 = now_ms();
  while (a.call != id && now_ms() - t0 < 10000) loop_until(h, &o.done, 1, 50);
  t0 = now_ms();
  CHECK(burrow_cancel(h, id) == 1, "cancel the waiting call");
  loop_until(h, &o.done, 1, 10000);
  ms = o.at - t0;
  printf("  cancel of a call waiting for its answer: %.1f ms\n", ms);
  CHECK(o.done && ms < 5000 && strstr(o.res, "POLICY_DENIED") && strstr(o.res, "the call was cancelled") &&
            !exists("cancel.txt"),
        "cancelled within 5 s, not at the 60 s timeout (%.1f): %s", ms, o.res);

  id = submit_write(h, "removed.txt", &o); /* the approver removed meanwhile */
  t0 = now_ms();
  while (a.call != id && now_ms() - t0 < 10000) loop_until(h, &o.done, 1, 50);
  burrow_set_approver(h, NULL, NULL, 0);
  loop_until(h, &o.done, 1, 10000);
  CHECK(strstr(o.res, "the approver was removed") && !exists("removed.txt"), "removed: denied: %s", o.res);

  burrow_set_approver(h, on_ask, &a, 60000); /* close while it waits */
  id = submit_write(h, "closed.txt", &o);
  t0 = now_ms();
  while (a.call != id && now_ms() - t0 < 10000) loop_until(h, &o.done, 1, 50);
  t0 = now_ms();
  burrow_close(h);
  ms = now_ms() - t0;
  CHECK(ms < 5000 && !o.done && !exists("closed.txt"), "close with a question waiting (60 s): %.1f ms, no callback", ms);
}

/* Without an approver, burrow_set_approval's callback answers a submitted
 * call on the worker thread (as before burrow_set_approver). */
static int worker_asked, worker_on_engine;
static int approve_on_worker(void *ud, const char *tool, const char *op,
                             const char *path, const char *reason) {
  (void)ud, (void)tool, (void)op, (void)path, (void)reason;
  worker_asked++;
  worker_on_engine = pthread_equal(pthread_self(), engine);
  return 1;
}

static void test_approval_on_worker(void) {
  burrow_host *h = open_asking();
  if (!h) return;
  burrow_set_approval(h, approve_on_worker, NULL);
  outcome o;
  submit_write(h, "worker.txt", &o);
  loop_until(h, &o.done, 1, 10000);
  CHECK(o.rc == BURROW_OK && worker_asked == 1 && !worker_on_engine,
        "burrow_set_approval's callback, on the worker: %s", o.res);
  asked a = {.answer = 0, .h = h}; /* with an approver, the approver decides */
  burrow_set_approver(h, on_ask, &a, 5000);
  submit_write(h, "worker2.txt", &o);
  loop_until(h, &o.done, 1, 10000);
  CHECK(a.n == 1 && worker_asked == 1 && o.rc == BURROW_TOOL_ERROR, "the approver first: %s", o.res);
  char *res = NULL; /* burrow_call's asks: burrow_set_approval's callback */
  CHECK(burrow_call(h, "write_file", "{\"path\":\"sync.txt\",\"content\":\"x\"}", &res) == BURROW_OK &&
            worker_asked == 2 && a.n == 1,
        "burrow_call asks burrow_set_approval's callback: %s", res ? res : "");
  burrow_free(res);
  burrow_close(h);
}

static void test_engine_state_has_no_worker(void) {
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  burrow_host *h = burrow_open_state(L, dir, NULL);
  CHECK(h != NULL, "open on a state");
  CHECK(burrow_submit(h, "stat", "{}", NULL, NULL) == 0, "no submit on an engine's state");
  CHECK(burrow_fd(h) == -1, "no fd on an engine's state");
  char *res = NULL;
  CHECK(burrow_call(h, "read_file", "{\"path\":\"f1.txt\"}", &res) == BURROW_OK, "its burrow_call still works");
  burrow_free(res);
  burrow_close(h);
  lua_close(L);
}

int main(void) {
  engine = pthread_self();
  strcpy(dir, "/tmp/burrow-async-XXXXXX");
  if (!mkdtemp(dir)) return 2;
  for (int i = 0; i < 10; i++) {
    char name[32], text[64];
    snprintf(name, sizeof name, "f%d.txt", i);
    snprintf(text, sizeof text, "line of f%d\nanother\n", i);
    put(name, text);
  }
  char slow[256];
  snprintf(slow, sizeof slow, "%s/slow", dir);
  if (mkdir(slow, 0755) != 0) return 2;
  static char big[64 * 1024];
  size_t n = 0;
  while (n + 202 < sizeof big) { /* lines of 200 a's and a dot */
    memset(big + n, 'a', 200);
    big[n + 200] = '.';
    big[n + 201] = '\n';
    n += 202;
  }
  big[n] = '\0';
  put("slow/a.txt", big);
  put("ask.lua", "return { check = function(req)\n"
                 "  if req.operation == 'write' then return 'ask', 'writes need a yes' end\n"
                 "  return 'allow'\nend }\n");
  test_hundred();
  test_fd_wakes();
  test_cancel();
  test_close_in_flight();
  test_approver();
  test_approver_pull();
  test_approver_ends();
  test_approval_on_worker();
  test_engine_state_has_no_worker();
  char cmd[256];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  if (system(cmd) != 0) return 2;
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
