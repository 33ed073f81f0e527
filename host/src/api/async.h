/*
 * async.h - the non-blocking half of the embedding API (api_async.c): calls
 * queued to one worker thread that owns the host's Lua state, completions
 * queued back and signalled on an eventfd. No lua.h here: api.c runs a
 * job's Lua side (bw_host_run) and hands progress back (bw_async_progress).
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

/* api.c: the host's async slot (NULL for a host on an engine's state, which
 * has no thread of its own to give a worker); run job j on the calling
 * thread (the worker), filling j->rc and j->result. */
bw_async **bw_host_async_slot(burrow_host *h);
void bw_host_run(burrow_host *h, bw_job *j);
/* The host's lock, for the slot: api.c's mutex. */
void bw_host_lock(burrow_host *h);
void bw_host_unlock(burrow_host *h);

/* api_async.c */
/* From the worker (inside bw_host_run): the latest progress of job j. */
void bw_async_progress(bw_async *a, bw_job *j, double done, double total,
                       const char *message);
/* From the worker (inside bw_host_run): a policy's "ask" in job j, put to
 * the engine (burrow_set_approver) and waited for. 1 allowed, 0 denied,
 * -1 no approver (or j is a burrow_call's): the caller falls back to
 * burrow_set_approval's callback. *why: NULL, or a malloc'd reason (the
 * answerer's, or why no answer came: timeout, cancel, close). */
int bw_async_ask(bw_async *a, bw_job *j, const char *tool, const char *op,
                 const char *path, const char *reason, char **why);
/* Whether burrow_set_approver has turned approval of submitted calls on. */
int bw_async_has_approver(bw_async *a);
/* burrow_call on a host with a worker: queued behind the submitted calls,
 * waited for. */
int bw_async_call(bw_async *a, const char *tool, const char *args_json,
                  char **result_json);
/* Cancel everything, stop and join the worker, free. */
void bw_async_free(bw_async *a);

#endif
