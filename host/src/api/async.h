/*
 * async.h - the worker of the embedding API's non-blocking calls
 * (api_async.c): calls queued to one worker thread that owns the host's Lua
 * state, completions queued back and signalled on an eventfd. No lua.h and
 * no host here: api.c, above, starts a host's worker with the function
 * that runs a job's Lua side, hands progress back (bw_async_progress) and
 * answers burrow.h's non-blocking functions with these.
 */
#ifndef BURROW_ASYNC_H
#define BURROW_ASYNC_H

#include <stdatomic.h>

#include "burrow.h"

typedef struct bw_job {
  unsigned long long id;
  char *tool, *args;
  burrow_done_fn cb; /* NULL: left for burrow_take */
  void *ud;
  _Atomic int cancel; /* raised by burrow_cancel; read by walks and grep */
  int rc;             /* BURROW_OK / BURROW_TOOL_ERROR */
  char *result;
  int sync;     /* a burrow_call waits for it (not queued for poll) */
  int finished; /* sync: done, under the queue lock */
  struct bw_job *next;
} bw_job;

typedef struct bw_async bw_async;

/* Runs job j on the calling thread (the worker), filling j->rc and
 * j->result (api.c's, with its host as ud). */
typedef void (*bw_async_run_fn)(void *ud, bw_job *j);

/* A worker running its jobs with run(ud, job); NULL when a thread or fd is
 * refused. */
bw_async *bw_async_new(bw_async_run_fn run, void *ud);
/* Cancel everything, stop and join the worker, free. */
void bw_async_free(bw_async *a);

/* burrow.h's non-blocking calls, on a host's worker (api.c finds it). */
unsigned long long bw_async_submit(bw_async *a, const char *tool,
                                   const char *args_json, burrow_done_fn cb,
                                   void *ud);
int bw_async_fd(bw_async *a);
void bw_async_set_progress(bw_async *a, burrow_progress_fn fn);
int bw_async_cancel(bw_async *a, unsigned long long id);
int bw_async_poll(bw_async *a);
int bw_async_take(bw_async *a, unsigned long long *id, int *rc,
                  char **result_json);
void bw_async_set_approver(bw_async *a, burrow_ask_fn fn, void *ud,
                           int timeout_ms);
unsigned long long bw_async_ask_call(bw_async *a, unsigned long long qid);
int bw_async_answer(bw_async *a, unsigned long long id, int allow,
                    const char *why);
int bw_async_take_ask(bw_async *a, unsigned long long *id, char **ask_json);
/* burrow_call on a host with a worker: queued behind the submitted calls,
 * waited for. */
int bw_async_call(bw_async *a, const char *tool, const char *args_json,
                  char **result_json);

/* From the worker (inside the run function): the latest progress of job j. */
void bw_async_progress(bw_async *a, bw_job *j, double done, double total,
                       const char *message);
/* From the worker (inside the run function): a policy's "ask" in job j, put to
 * the engine (burrow_set_approver) and waited for. 1 allowed, 0 denied,
 * -1 no approver (or j is a burrow_call's): the caller falls back to
 * burrow_set_approval's callback. *why: NULL, or a malloc'd reason (the
 * answerer's, or why no answer came: timeout, cancel, close). */
int bw_async_ask(bw_async *a, bw_job *j, const char *tool, const char *op,
                 const char *path, const char *reason, char **why);
/* Whether burrow_set_approver has turned approval of submitted calls on. */
int bw_async_has_approver(bw_async *a);

#endif
