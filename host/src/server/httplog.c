/*
 * httplog.c - the HTTP access log, written by a thread of its own. Lines
 * are made where they happen (often under the listener's lock) and queued;
 * the writer thread takes them out and writes them with no lock of the
 * listener's held, so an access log that blocks (a pipe nobody drains, a
 * stalled disk, a terminal paused with ^S) never stops the listener. The
 * queue is bounded (LOG_MAX_BYTES): past it lines are dropped, and the
 * next line written says how many. A stop waits LOG_STOP_S for the queue
 * to be written; a log still blocked then is left to its thread, and the
 * lines after it are dropped, so a stuck log never holds the process up.
 * Not part of burrow's API.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "httpint.h"

enum { LOG_MAX_BYTES = 1 << 20 };
#define LOG_STOP_S 2.0

typedef struct logline {
  struct logline *next;
  size_t len;
  char text[];
} logline;

struct bwh_logq {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int fd; /* the log's: the writer touches nothing of the listener's (which a stuck writer may outlive) */
  int running, stop;
  int done;     /* the writer thread has ended */
  int orphaned; /* it did not end in time: it keeps q and the log */
  logline *head, *tail;
  size_t bytes;
  unsigned long dropped;
};

/* One line, one write(2) (whole lines even beside other writers of the
 * same file: a line is under PIPE_BUF). Not stdio: a FILE buffer left
 * behind by a write that never returns would be flushed by exit(), which
 * would then block on the stuck log too. */
static void put(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return; /* a broken log loses the line, nothing else */
    p += w;
    n -= (size_t)w;
  }
}

static void write_lines(int fd, logline *l, unsigned long dropped) {
  if (dropped) {
    char b[128];
    int n = snprintf(b, sizeof b, "burrow http: %lu access log lines dropped (the log was not taking them)\n", dropped);
    if (n > 0) put(fd, b, (size_t)n);
  }
  for (logline *n; l; l = n) {
    n = l->next;
    put(fd, l->text, l->len);
    free(l);
  }
}

static void *writer(void *arg) {
  bwh_logq *q = arg;
  pthread_mutex_lock(&q->mu);
  for (;;) {
    while (!q->head && !q->stop) pthread_cond_wait(&q->cv, &q->mu);
    if (!q->head && q->stop) break;
    logline *l = q->head;
    unsigned long dropped = q->dropped;
    q->head = q->tail = NULL;
    q->bytes = 0;
    q->dropped = 0;
    pthread_mutex_unlock(&q->mu);
    write_lines(q->fd, l, dropped); /* may block: nothing of the listener's is held */
    pthread_mutex_lock(&q->mu);
  }
  q->done = 1;
  pthread_cond_broadcast(&q->cv);
  pthread_mutex_unlock(&q->mu);
  return NULL;
}

int bwh_log_start(bw_http *h) {
  if (!h->log) return 0;
  bwh_logq *q = calloc(1, sizeof *q);
  if (!q) return -1;
  pthread_mutex_init(&q->mu, NULL);
  bw_cond_init_mono(&q->cv);
  h->logq = q;
  q->fd = fileno(h->log);
  q->running = 1; /* nothing logs yet: the listener has not started */
  if (pthread_create(&q->thread, NULL, writer, q) != 0) {
    h->logq = NULL;
    free(q);
    return -1;
  }
  return 0;
}

void bwh_log_stop(bw_http *h) {
  bwh_logq *q = h->logq;
  if (!q || !q->running) return;
  struct timespec ts;
  double wait = LOG_STOP_S; /* less near a graceful stop's deadline (h->stop_by) */
  if (h->stop_by > 0 && h->stop_by + 0.02 - bw_now_mono() < wait)
    wait = h->stop_by + 0.02 - bw_now_mono() > 0.01 ? h->stop_by + 0.02 - bw_now_mono() : 0.01;
  bw_deadline_mono(&ts, wait);
  pthread_mutex_lock(&q->mu);
  q->stop = 1;
  pthread_cond_broadcast(&q->cv);
  while (!q->done) /* what was queued is written, unless the log is stuck */
    if (pthread_cond_timedwait(&q->cv, &q->mu, &ts) == ETIMEDOUT) break;
  int done = q->done;
  q->orphaned = !done;
  q->running = 0;
  pthread_mutex_unlock(&q->mu);
  if (done) pthread_join(q->thread, NULL);
  else pthread_detach(q->thread);
}

int bwh_log_free(bw_http *h) {
  bwh_logq *q = h->logq;
  if (!q) return 0;
  bwh_log_stop(h);
  if (q->orphaned) return 1; /* its thread may still write: q and the log stay */
  for (logline *l = q->head, *n; l; l = n) {
    n = l->next;
    free(l);
  }
  free(q);
  h->logq = NULL;
  return 0;
}

void bwh_log(bw_http *h, const char *fmt, ...) {
  if (!h->log) return;
  char when[32];
  struct tm tm;
  time_t now = time(NULL); /* a timestamp for people, never a timeout */
  gmtime_r(&now, &tm);
  strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  for (char *p = line; *p; p++) /* one line, whatever a reason holds */
    if (*p == '\n' || *p == '\r') *p = ' ';
  size_t cap = strlen(line) + sizeof when + 16;
  logline *l = malloc(sizeof *l + cap);
  if (!l) return;
  int n = snprintf(l->text, cap, "burrow http %s %s\n", when, line);
  l->len = n > 0 && (size_t)n < cap ? (size_t)n : cap - 1;
  l->next = NULL;
  bwh_logq *q = h->logq;
  if (!q) { /* no writer (it could not start): written here */
    write_lines(fileno(h->log), l, 0);
    return;
  }
  pthread_mutex_lock(&q->mu);
  if (!q->running && !q->orphaned) { /* stopped in time: the last lines written here */
    pthread_mutex_unlock(&q->mu);
    write_lines(fileno(h->log), l, 0);
    return;
  }
  if (q->orphaned || q->stop || q->bytes + l->len > LOG_MAX_BYTES) { /* stuck, stopping, or full */
    q->dropped++;
    free(l);
  } else {
    if (q->tail) q->tail->next = l;
    else q->head = l;
    q->tail = l;
    q->bytes += l->len;
    pthread_cond_signal(&q->cv);
  }
  pthread_mutex_unlock(&q->mu);
}
