/*
 * api_async.c - the worker behind burrow_submit, burrow_poll, burrow_take,
 * burrow_cancel, burrow_fd, burrow_set_progress (burrow.h "NON-BLOCKING
 * CALLS"; api.c holds the host and those functions, and calls these).
 *
 * A host's Lua state runs one call at a time, so a host gets one worker
 * thread, started by its first burrow_submit or burrow_fd: it takes jobs
 * from a FIFO, runs each with the function the host gave (bw_async_new:
 * api.c's, which runs the job's Lua side) and moves it to the completion
 * list; progress reports are kept per call (the latest only). It knows no
 * host: the arrows run from api.c down to here only.
 * Both raise an eventfd the engine watches; burrow_poll, on the engine's
 * thread, reads it down and runs the callbacks there. Once a host has a
 * worker, burrow_call is a submitted call waited for, so only the worker
 * runs the host's calls.
 *
 * A policy's "ask" in a submitted call (burrow_set_approver): the worker
 * posts the question (one at most: it runs one call) and waits on ask_cv
 * for burrow_answer, the call's cancel, the host's close or the timeout;
 * the engine gets the question in burrow_poll (the approver) or
 * burrow_take_ask, as copies made under the lock, since the worker frees
 * its question once it stops waiting.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "async.h"
#include "clock.h"
#include "core.h"

typedef struct progress_ev {
  unsigned long long id;
  void *ud;
  double done, total;
  char *message;
  struct progress_ev *next;
} progress_ev;

/* The question of the call in flight, on the worker's stack while it waits. */
typedef struct bw_ask {
  unsigned long long id;  /* the call's */
  unsigned long long qid; /* the question's own: what the approver answers */
  char *tool, *op, *path, *reason;
  int delivered; /* handed to the approver or to burrow_take_ask */
  int answer;    /* -1 none yet, 0 deny, 1 allow */
  char *why;     /* burrow_answer's reason, or NULL */
} bw_ask;

struct bw_async {
  bw_async_run_fn run; /* runs a job on the worker (api.c) */
  void *run_ud;
  pthread_t thread;
  pthread_mutex_t mu;
  pthread_cond_t work_cv; /* the worker waits for jobs */
  pthread_cond_t sync_cv; /* burrow_call waits for its job */
  int stopping;
  bw_job *queue, *queue_tail; /* submitted, not started */
  bw_job *current;            /* running on the worker */
  bw_job *done, *done_tail;   /* finished, not yet polled or taken */
  progress_ev *prog, *prog_tail;
  burrow_progress_fn on_progress;
  unsigned long long next_id;
  int efd;
  pthread_cond_t ask_cv;  /* the worker waits for an answer (CLOCK_MONOTONIC) */
  bw_ask *ask;            /* the question waiting, or NULL */
  unsigned long long next_qid; /* question ids: one per question, never reused */
  burrow_ask_fn ask_fn;   /* the approver (NULL: questions wait for take_ask) */
  void *ask_ud;
  int ask_ms;             /* > 0: approval of submitted calls is on */
};

static void wake(bw_async *a) {
  uint64_t one = 1;
  while (write(a->efd, &one, sizeof one) < 0 && errno == EINTR) {
  }
}

static void job_free(bw_job *j) {
  if (!j) return;
  free(j->tool);
  free(j->args);
  free(j->result);
  free(j);
}

/* Under a->mu: a finished job to its waiter or to the completion list. */
static void finish(bw_async *a, bw_job *j) {
  if (j->sync) {
    j->finished = 1;
    pthread_cond_broadcast(&a->sync_cv);
    return;
  }
  j->next = NULL;
  if (a->done_tail) a->done_tail->next = j;
  else a->done = j;
  a->done_tail = j;
  wake(a);
}

static char *cancelled_json(void) {
  return strdup("{\"error\":{\"code\":\"CANCELLED\",\"message\":"
                "\"CANCELLED: the call was cancelled before it started\"}}");
}

static void *worker(void *arg) {
  bw_async *a = arg;
  pthread_mutex_lock(&a->mu);
  for (;;) {
    while (!a->queue && !a->stopping) pthread_cond_wait(&a->work_cv, &a->mu);
    if (!a->queue) break; /* stopping, nothing left */
    bw_job *j = a->queue;
    a->queue = j->next;
    if (!a->queue) a->queue_tail = NULL;
    if (a->stopping) atomic_store(&j->cancel, 1);
    if (atomic_load(&j->cancel)) { /* cancelled while queued */
      j->rc = BURROW_TOOL_ERROR;
      j->result = cancelled_json();
      finish(a, j);
      continue;
    }
    a->current = j;
    pthread_mutex_unlock(&a->mu);
    a->run(a->run_ud, j);
    pthread_mutex_lock(&a->mu);
    a->current = NULL;
    finish(a, j);
  }
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

bw_async *bw_async_new(bw_async_run_fn run, void *ud) {
  bw_async *a = calloc(1, sizeof *a);
  if (a) {
    a->run = run;
    a->run_ud = ud;
    a->next_id = 1;
    a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->work_cv, NULL);
    pthread_cond_init(&a->sync_cv, NULL);
    bw_cond_init_mono(&a->ask_cv); /* a timeout the wall clock cannot move */
    if (a->efd < 0 || pthread_create(&a->thread, NULL, worker, a) != 0) {
      if (a->efd >= 0) close(a->efd);
      pthread_mutex_destroy(&a->mu);
      pthread_cond_destroy(&a->work_cv);
      pthread_cond_destroy(&a->sync_cv);
      pthread_cond_destroy(&a->ask_cv);
      free(a);
      a = NULL;
    }
  }
  return a;
}

static bw_job *new_job(const char *tool, const char *args) {
  bw_job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  atomic_init(&j->cancel, 0);
  j->tool = strdup(tool);
  j->args = strdup(args ? args : "{}");
  if (!j->tool || !j->args) {
    job_free(j);
    return NULL;
  }
  return j;
}

/* Under a->mu. */
static void enqueue(bw_async *a, bw_job *j) {
  j->id = a->next_id++;
  j->next = NULL;
  if (a->queue_tail) a->queue_tail->next = j;
  else a->queue = j;
  a->queue_tail = j;
  pthread_cond_signal(&a->work_cv);
}

unsigned long long bw_async_submit(bw_async *a, const char *tool,
                                   const char *args_json, burrow_done_fn cb,
                                   void *ud) {
  bw_job *j = new_job(tool, args_json);
  if (!j) return 0;
  j->cb = cb;
  j->ud = ud;
  pthread_mutex_lock(&a->mu);
  enqueue(a, j);
  unsigned long long id = j->id;
  pthread_mutex_unlock(&a->mu);
  return id;
}

int bw_async_call(bw_async *a, const char *tool, const char *args_json,
                  char **result_json) {
  bw_job *j = new_job(tool, args_json);
  if (!j) return BURROW_USAGE;
  j->sync = 1;
  pthread_mutex_lock(&a->mu);
  enqueue(a, j);
  while (!j->finished) pthread_cond_wait(&a->sync_cv, &a->mu);
  pthread_mutex_unlock(&a->mu);
  int rc = j->rc;
  *result_json = j->result;
  j->result = NULL;
  job_free(j);
  return rc;
}

int bw_async_fd(bw_async *a) { return a->efd; }

void bw_async_set_progress(bw_async *a, burrow_progress_fn fn) {
  pthread_mutex_lock(&a->mu);
  a->on_progress = fn;
  pthread_mutex_unlock(&a->mu);
}

void bw_async_progress(bw_async *a, bw_job *j, double done, double total,
                       const char *message) {
  if (j->sync) return; /* burrow_call has no one to tell */
  pthread_mutex_lock(&a->mu);
  if (!a->on_progress) {
    pthread_mutex_unlock(&a->mu);
    return;
  }
  progress_ev *e = a->prog_tail;
  if (!e || e->id != j->id) { /* the same call's last report is replaced */
    e = calloc(1, sizeof *e);
    if (!e) {
      pthread_mutex_unlock(&a->mu);
      return;
    }
    e->id = j->id;
    e->ud = j->ud;
    if (a->prog_tail) a->prog_tail->next = e;
    else a->prog = e;
    a->prog_tail = e;
  }
  e->done = done;
  e->total = total;
  free(e->message);
  e->message = message ? strdup(message) : NULL;
  wake(a);
  pthread_mutex_unlock(&a->mu);
}

int bw_async_cancel(bw_async *a, unsigned long long id) {
  if (!id) return 0;
  int found = 0;
  pthread_mutex_lock(&a->mu);
  if (a->current && a->current->id == id) {
    atomic_store(&a->current->cancel, 1);
    pthread_cond_broadcast(&a->ask_cv); /* a question it waits on ends */
    found = 1;
  }
  for (bw_job *j = a->queue; j && !found; j = j->next) {
    if (j->id == id) {
      atomic_store(&j->cancel, 1); /* the worker answers it CANCELLED */
      found = 1;
    }
  }
  pthread_mutex_unlock(&a->mu);
  return found;
}

/* ------------------------------------------------------------- approval */

static void drain_fd(bw_async *a);

static void ask_free_strings(bw_ask *q) {
  free(q->tool);
  free(q->op);
  free(q->path);
  free(q->reason);
  free(q->why);
}

/* Under a->mu: a question not yet handed out, for the engine. */
static int ask_waiting(bw_async *a) { return a->ask && !a->ask->delivered; }

int bw_async_ask(bw_async *a, bw_job *j, const char *tool, const char *op,
                 const char *path, const char *reason, char **why) {
  *why = NULL;
  if (j->sync) return -1; /* burrow_call: its caller may be the polling thread */
  bw_ask q = {.id = j->id, .answer = -1};
  q.tool = strdup(tool ? tool : "");
  q.op = strdup(op ? op : "");
  q.path = strdup(path ? path : "");
  q.reason = strdup(reason ? reason : "");
  if (!q.tool || !q.op || !q.path || !q.reason) {
    ask_free_strings(&q);
    *why = strdup("out of memory");
    return 0;
  }
  pthread_mutex_lock(&a->mu);
  int ms = a->ask_ms;
  if (ms <= 0) {
    pthread_mutex_unlock(&a->mu);
    ask_free_strings(&q);
    return -1;
  }
  struct timespec end; /* ask_cv runs on the monotonic clock */
  bw_deadline_mono(&end, (double)ms / 1000.0);
  q.qid = (1ULL << 32) + ++a->next_qid; /* a space of its own: no call has such an id */
  a->ask = &q;
  wake(a);
  const char *stop = NULL;
  while (q.answer < 0) {
    if (a->stopping) stop = "the host was closed";
    else if (atomic_load(&j->cancel)) stop = "the call was cancelled";
    else if (pthread_cond_timedwait(&a->ask_cv, &a->mu, &end) == ETIMEDOUT &&
             q.answer < 0)
      stop = "";
    if (stop) break;
  }
  a->ask = NULL;
  pthread_mutex_unlock(&a->mu);
  int allow = q.answer == 1;
  if (q.answer >= 0) {
    *why = q.why; /* the answerer's reason, or NULL */
    q.why = NULL;
  } else if (*stop) {
    *why = strdup(stop);
  } else {
    char buf[96];
    snprintf(buf, sizeof buf, "no answer within %d ms", ms);
    *why = strdup(buf);
  }
  ask_free_strings(&q);
  return allow;
}

int bw_async_has_approver(bw_async *a) {
  pthread_mutex_lock(&a->mu);
  int on = a->ask_ms > 0;
  pthread_mutex_unlock(&a->mu);
  return on;
}

void bw_async_set_approver(bw_async *a, burrow_ask_fn fn, void *ud,
                           int timeout_ms) {
  pthread_mutex_lock(&a->mu);
  a->ask_fn = timeout_ms > 0 ? fn : NULL;
  a->ask_ud = timeout_ms > 0 ? ud : NULL;
  a->ask_ms = timeout_ms > 0 ? timeout_ms : 0;
  if (a->ask && a->ask->answer < 0 && timeout_ms <= 0) { /* turned off: no */
    a->ask->answer = 0;
    a->ask->why = strdup("the approver was removed");
    pthread_cond_broadcast(&a->ask_cv);
  }
  if (ask_waiting(a)) wake(a); /* e.g. from the pull form to a callback */
  pthread_mutex_unlock(&a->mu);
}

unsigned long long bw_async_ask_call(bw_async *a, unsigned long long qid) {
  if (!qid) return 0;
  pthread_mutex_lock(&a->mu);
  unsigned long long call = a->ask && a->ask->qid == qid && a->ask->answer < 0 ? a->ask->id : 0;
  pthread_mutex_unlock(&a->mu);
  return call;
}

int bw_async_answer(bw_async *a, unsigned long long id, int allow,
                    const char *why) {
  if (!id) return 0;
  char *w = why ? strdup(why) : NULL;
  pthread_mutex_lock(&a->mu);
  /* the question's own id, handed out, not yet answered: an answer to an
   * earlier question (or sent before this one was delivered) is dropped */
  int found = a->ask && a->ask->qid == id && a->ask->delivered && a->ask->answer < 0;
  if (found) {
    a->ask->answer = allow ? 1 : 0;
    a->ask->why = w;
    w = NULL;
    pthread_cond_broadcast(&a->ask_cv);
  }
  pthread_mutex_unlock(&a->mu);
  free(w);
  return found;
}

/* s as a JSON string, quotes included, at o; returns the new end. */
static char *json_str(char *o, const char *s) {
  const unsigned char *p = (const unsigned char *)s, *end = p + strlen(s);
  *o++ = '"';
  o = bw_json_escape(o, &p, end, end);
  *o++ = '"';
  return o;
}

int bw_async_take_ask(bw_async *a, unsigned long long *id, char **ask_json) {
  if (!id || !ask_json) return 0;
  drain_fd(a);
  pthread_mutex_lock(&a->mu);
  char *out = NULL;
  if (ask_waiting(a)) {
    bw_ask *q = a->ask;
    size_t n = BW_JSON_WORST(strlen(q->tool)) + BW_JSON_WORST(strlen(q->op)) +
               BW_JSON_WORST(strlen(q->path)) + BW_JSON_WORST(strlen(q->reason)) + 96;
    if ((out = malloc(n))) { /* keys sorted, as every JSON burrow writes */
      char *o = out;
      o += sprintf(o, "{\"call\":%llu,", q->id);
      o = json_str(stpcpy(o, "\"operation\":"), q->op);
      o = json_str(stpcpy(o, ",\"path\":"), q->path);
      o = json_str(stpcpy(o, ",\"reason\":"), q->reason);
      o = json_str(stpcpy(o, ",\"tool\":"), q->tool);
      strcpy(o, "}");
      q->delivered = 1;
      *id = q->qid;
    }
  }
  if (a->done || a->prog || ask_waiting(a)) wake(a); /* more waits: stay readable */
  pthread_mutex_unlock(&a->mu);
  *ask_json = out;
  return out != NULL;
}

static void drain_fd(bw_async *a) {
  uint64_t n;
  while (read(a->efd, &n, sizeof n) < 0 && errno == EINTR) {
  }
}

int bw_async_poll(bw_async *a) {
  drain_fd(a); /* before taking the lists: a later wake is never lost */
  pthread_mutex_lock(&a->mu);
  progress_ev *prog = a->prog;
  a->prog = a->prog_tail = NULL;
  burrow_progress_fn on_progress = a->on_progress;
  bw_job *mine = NULL, **tail = &mine, *keep = NULL, *ktail = NULL;
  for (bw_job *j = a->done, *next; j; j = next) {
    next = j->next;
    j->next = NULL;
    if (j->cb) {
      *tail = j;
      tail = &j->next;
    } else { /* left for burrow_take */
      if (ktail) ktail->next = j;
      else keep = j;
      ktail = j;
    }
  }
  a->done = keep;
  a->done_tail = ktail;
  /* the question waiting, copied for the approver (the worker frees its
   * own once it stops waiting) */
  burrow_ask_fn ask_fn = a->ask_fn;
  void *ask_ud = a->ask_ud;
  bw_ask q = {0};
  if (ask_fn && ask_waiting(a)) {
    q.id = a->ask->qid; /* the approver gets the question's id */
    q.tool = strdup(a->ask->tool);
    q.op = strdup(a->ask->op);
    q.path = strdup(a->ask->path);
    q.reason = strdup(a->ask->reason);
    if (q.tool && q.op && q.path && q.reason) {
      a->ask->delivered = 1;
    } else { /* no memory: left waiting, for the next poll */
      ask_free_strings(&q);
      q.id = 0;
    }
  }
  if (keep || ask_waiting(a)) wake(a); /* still something to take */
  pthread_mutex_unlock(&a->mu);
  int n = 0;
  for (progress_ev *e = prog, *next; e; e = next) {
    next = e->next;
    if (on_progress) on_progress(e->ud, e->id, e->done, e->total, e->message);
    free(e->message);
    free(e);
  }
  if (q.id) {
    int r = ask_fn(ask_ud, q.id, q.tool, q.op, q.path, q.reason);
    ask_free_strings(&q);
    if (r != BURROW_ASK_LATER) bw_async_answer(a, q.id, r != 0, NULL);
  }
  for (bw_job *j = mine, *next; j; j = next) {
    next = j->next;
    j->cb(j->ud, j->id, j->rc, j->result);
    job_free(j);
    n++;
  }
  return n;
}

int bw_async_take(bw_async *a, unsigned long long *id, int *rc,
                  char **result_json) {
  if (!id || !rc || !result_json) return 0;
  drain_fd(a); /* first: a wake after it is never lost */
  pthread_mutex_lock(&a->mu);
  bw_job **pp = &a->done, *prev = NULL;
  while (*pp && (*pp)->cb) prev = *pp, pp = &(*pp)->next;
  bw_job *j = *pp;
  if (j) {
    *pp = j->next;
    if (a->done_tail == j) a->done_tail = prev;
  }
  if (a->done || a->prog || ask_waiting(a)) wake(a); /* more to poll or take: stay readable */
  pthread_mutex_unlock(&a->mu);
  if (!j) return 0;
  *id = j->id;
  *rc = j->rc;
  *result_json = j->result;
  j->result = NULL;
  job_free(j);
  return 1;
}

void bw_async_free(bw_async *a) {
  if (!a) return;
  pthread_mutex_lock(&a->mu);
  a->stopping = 1;
  if (a->current) atomic_store(&a->current->cancel, 1);
  pthread_cond_signal(&a->work_cv);
  pthread_cond_broadcast(&a->ask_cv); /* a question waiting ends: denied */
  pthread_mutex_unlock(&a->mu);
  pthread_join(a->thread, NULL);
  for (bw_job *j = a->done, *next; j; j = next) {
    next = j->next;
    job_free(j);
  }
  for (progress_ev *e = a->prog, *next; e; e = next) {
    next = e->next;
    free(e->message);
    free(e);
  }
  close(a->efd);
  pthread_mutex_destroy(&a->mu);
  pthread_cond_destroy(&a->work_cv);
  pthread_cond_destroy(&a->sync_cv);
  pthread_cond_destroy(&a->ask_cv);
  free(a);
}
