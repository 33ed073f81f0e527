/*
 * clock.c - the monotonic clock (clock.h): timed waits, deadlines and
 * "now", the one place the process reads it.
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

int64_t bw_now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

int64_t bw_now_ms_coarse(void) {
  struct timespec t; /* the coarse clock: a memory read, no system call */
  clock_gettime(CLOCK_MONOTONIC_COARSE, &t);
  return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}
