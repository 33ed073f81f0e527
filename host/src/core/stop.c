/*
 * stop.c - when a long core loop stops early: the call's cancel flag
 * (raised from outside, e.g. an MCP notifications/cancelled) and its
 * deadline on the monotonic clock. A recursive copy or remove asks at
 * every entry, so one call cannot hold the server for longer than its
 * budget however large the tree. The cancel flag a call polls is found
 * here (bw_cancel_flag), so the binding's walks and copies need no
 * transport: the transports set it (the stdio server's source, an HTTP
 * worker's and a submitted call's own).
 */
#include <time.h>

#include "core.h"

/* This thread's cancel flag instead of the process's source: an HTTP
 * worker's (lhttp.c), or a call run for burrow_submit, for the call's
 * duration (api.c). */
static _Thread_local const _Atomic int *thread_flag;
static const _Atomic int *(*_Atomic flag_source)(void);
static const _Atomic int never_raised;

void bw_set_cancel_flag(const _Atomic int *flag) { thread_flag = flag; }

void bw_set_cancel_source(const _Atomic int *(*source)(void)) { atomic_store(&flag_source, source); }

const _Atomic int *bw_cancel_flag(void) {
  if (thread_flag) return thread_flag;
  const _Atomic int *(*source)(void) = atomic_load(&flag_source);
  const _Atomic int *f = source ? source() : NULL;
  return f ? f : &never_raised;
}

int bw_stopped(const bw_stop *s) {
  if (!s) return BW_OK;
  if (s->cancel && atomic_load(s->cancel))
    return bw_fail(BW_EAGAIN, "the call was cancelled");
  if (s->until_ms && bw_now_ms() >= s->until_ms)
    return bw_fail_on(BW_TOO_LARGE, BW_ON_TIME, 0, "the call's time budget ran out");
  return BW_OK;
}
