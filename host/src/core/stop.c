/*
 * stop.c - when a long core loop stops early: the call's cancel flag
 * (raised from outside, e.g. an MCP notifications/cancelled) and its
 * deadline on the monotonic clock. A recursive copy or remove asks at
 * every entry, so one call cannot hold the server for longer than its
 * budget however large the tree.
 */
#include <time.h>

#include "core.h"

int64_t bw_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int bw_stopped(const bw_stop *s) {
  if (!s) return BW_OK;
  if (s->cancel && atomic_load(s->cancel))
    return bw_fail(BW_EAGAIN, "the call was cancelled");
  if (s->until_ms && bw_now_ms() >= s->until_ms)
    return bw_fail(BW_TOO_LARGE, "the call's time budget ran out");
  return BW_OK;
}
