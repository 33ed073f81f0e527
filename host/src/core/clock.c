/*
 * clock.c - timed waits on the monotonic clock (clock.h).
 */
#include "clock.h"

int bw_cond_init_mono(pthread_cond_t *cv) {
  pthread_condattr_t ca;
  int rc = pthread_condattr_init(&ca);
  if (rc) return rc;
  rc = pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (!rc) rc = pthread_cond_init(cv, &ca);
  pthread_condattr_destroy(&ca);
  return rc;
}

void bw_deadline_mono(struct timespec *ts, double secs) {
  clock_gettime(CLOCK_MONOTONIC, ts);
  if (secs < 0) secs = 0;
  time_t whole = (time_t)secs;
  ts->tv_sec += whole;
  ts->tv_nsec += (long)((secs - (double)whole) * 1e9);
  if (ts->tv_nsec >= 1000000000L) {
    ts->tv_sec++;
    ts->tv_nsec -= 1000000000L;
  }
}

double bw_now_mono(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}
