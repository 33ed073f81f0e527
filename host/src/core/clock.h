/*
 * clock.h - the monotonic clock (clock.c): a condition variable whose
 * timeouts a change of the wall clock cannot move, the deadline to give
 * it, and the time now. Nothing else in host/src reads the clock for a
 * duration.
 */
#ifndef BURROW_CLOCK_H
#define BURROW_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "core.h" /* BW_SHARED */

/* pthread_cond_init on CLOCK_MONOTONIC; 0 or an errno. */
BW_SHARED int bw_cond_init_mono(pthread_cond_t *cv);
/* The monotonic time secs from now, for pthread_cond_timedwait on such a
 * condition variable. */
BW_SHARED void bw_deadline_mono(struct timespec *ts, double secs);
/* Seconds on the monotonic clock. */
BW_SHARED double bw_now_mono(void);
/* Milliseconds on the monotonic clock (core.h declares it too, for the
 * many callers that need nothing else of this header). */
int64_t bw_now_ms(void);
/* The same from the coarse clock (a tick or so behind, but no system
 * call): for a check made very often, such as the sandbox's time limit. */
int64_t bw_now_ms_coarse(void);

#endif
