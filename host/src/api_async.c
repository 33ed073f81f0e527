/*
 * api_async.c - burrow_submit, burrow_poll, burrow_take, burrow_cancel,
 * burrow_fd, burrow_set_progress (burrow.h "NON-BLOCKING CALLS").
 *
 * A host's Lua state runs one call at a time, so a host gets one worker
 * thread, started by its first burrow_submit or burrow_fd: it takes jobs
 * from a FIFO, runs each with bw_host_run (api.c) and moves it to the
 * completion list; progress reports are kept per call (the latest only).
 * Both raise an eventfd the engine watches; burrow_poll, on the engine's
 * thread, reads it down and runs the callbacks there. Once a host has a
 * worker, burrow_call is a submitted call waited for, so only the worker
 * runs the host's calls.
 */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "async.h"

typedef struct progress_ev {
  unsigned long long id;
  void *ud;
  double done, total;
  char *message;
  struct progress_ev *next;
} progress_ev;

struct bw_async {
  burrow_host *h;
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
    bw_host_run(a->h, j);
    pthread_mutex_lock(&a->mu);
    a->current = NULL;
    finish(a, j);
  }
  pthread_mutex_unlock(&a->mu);
  return NULL;
}

/* The host's worker, started on first use; NULL for a host that cannot
 * have one (on an engine's state) or when a thread or fd is refused. */
static bw_async *get(burrow_host *h) {
  if (!h) return NULL;
  bw_async **slot = bw_host_async_slot(h);
  if (!slot) return NULL;
  bw_host_lock(h);
  bw_async *a = *slot;
  if (!a && (a = calloc(1, sizeof *a))) {
    a->h = h;
    a->next_id = 1;
    a->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    pthread_mutex_init(&a->mu, NULL);
    pthread_cond_init(&a->work_cv, NULL);
    pthread_cond_init(&a->sync_cv, NULL);
    if (a->efd < 0 || pthread_create(&a->thread, NULL, worker, a) != 0) {
      if (a->efd >= 0) close(a->efd);
      pthread_mutex_destroy(&a->mu);
      pthread_cond_destroy(&a->work_cv);
      pthread_cond_destroy(&a->sync_cv);
      free(a);
      a = NULL;
    } else {
      *slot = a;
    }
  }
  bw_host_unlock(h);
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

unsigned long long burrow_submit(burrow_host *h, const char *tool,
                                 const char *args_json, burrow_done_fn cb,
                                 void *ud) {
  if (!tool) return 0;
  bw_async *a = get(h);
  if (!a) return 0;
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

int burrow_fd(burrow_host *h) {
  bw_async *a = get(h);
  return a ? a->efd : -1;
}

void burrow_set_progress(burrow_host *h, burrow_progress_fn fn) {
  bw_async *a = get(h);
  if (!a) return;
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

/* The host's worker if it has one (never starts it). */
static bw_async *existing(burrow_host *h) {
  bw_async **slot = h ? bw_host_async_slot(h) : NULL;
  if (!slot) return NULL;
  bw_host_lock(h);
  bw_async *a = *slot;
  bw_host_unlock(h);
  return a;
}

int burrow_cancel(burrow_host *h, unsigned long long id) {
  bw_async *a = existing(h);
  if (!a || !id) return 0;
  int found = 0;
  pthread_mutex_lock(&a->mu);
  if (a->current && a->current->id == id) {
    atomic_store(&a->current->cancel, 1);
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

static void drain_fd(bw_async *a) {
  uint64_t n;
  while (read(a->efd, &n, sizeof n) < 0 && errno == EINTR) {
  }
}

int burrow_poll(burrow_host *h) {
  bw_async *a = existing(h);
  if (!a) return 0;
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
  if (keep) wake(a); /* still something to take */
  pthread_mutex_unlock(&a->mu);
  int n = 0;
  for (progress_ev *e = prog, *next; e; e = next) {
    next = e->next;
    if (on_progress) on_progress(e->ud, e->id, e->done, e->total, e->message);
    free(e->message);
    free(e);
  }
  for (bw_job *j = mine, *next; j; j = next) {
    next = j->next;
    j->cb(j->ud, j->id, j->rc, j->result);
    job_free(j);
    n++;
  }
  return n;
}

int burrow_take(burrow_host *h, unsigned long long *id, int *rc,
                char **result_json) {
  bw_async *a = existing(h);
  if (!a || !id || !rc || !result_json) return 0;
  drain_fd(a); /* first: a wake after it is never lost */
  pthread_mutex_lock(&a->mu);
  bw_job **pp = &a->done, *prev = NULL;
  while (*pp && (*pp)->cb) prev = *pp, pp = &(*pp)->next;
  bw_job *j = *pp;
  if (j) {
    *pp = j->next;
    if (a->done_tail == j) a->done_tail = prev;
  }
  if (a->done || a->prog) wake(a); /* more to poll or take: stay readable */
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
  free(a);
}
