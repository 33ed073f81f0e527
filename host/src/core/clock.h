/*
 * clock.h - timed waits on the monotonic clock (clock.c): a condition
 * variable whose timeouts a change of the wall clock cannot move, and the
 * deadline to give it.
 */
#ifndef BURROW_CLOCK_H
#define BURROW_CLOCK_H

#include <pthread.h>
#include <time.h>

#include "core.h" /* BW_SHARED */

/* pthread_cond_init on CLOCK_MONOTONIC; 0 or an errno. */
BW_SHARED int bw_cond_init_mono(pthread_cond_t *cv);
/* The monotonic time secs from now, for pthread_cond_timedwait on such a
 * condition variable. */
BW_SHARED void bw_deadline_mono(struct timespec *ts, double secs);
/* Seconds on the monotonic clock. */
BW_SHARED double bw_now_mono(void);

#endif
