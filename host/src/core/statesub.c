/*
 * statesub.c - publish/subscribe of the state store (state.h): the
 * arguments checked once for every backend, and a subscription's queue,
 * which the backends push into (statemem.c from the publisher's thread,
 * stateredis.c from its reader thread) and its owner drains.
 *
 * The queue is bounded (BW_STATE_SUB_QUEUE messages, BW_STATE_SUB_BYTES
 * bytes): a reader that falls behind loses messages, never the publisher
 * its time nor the process its memory, and is told by a gap, queued once
 * however many were lost. A push takes the queue's own lock only for the
 * copy, so a slow reader never blocks a publisher.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "state.h"

typedef struct item {
  struct item *next;
  int gap;
  size_t len;
  char *channel; /* points into data, after the message */
  char data[];   /* the message, NUL, the channel, NUL */
} item;

struct bw_state_sub_q {
  pthread_mutex_t mu;
  int efd;
  item *head, *tail;
  size_t n, bytes;
  int gap_queued; /* a gap is at the tail: a second loss adds none */
};

int bw_state_channel_ok(const char *c) {
  size_t n = c ? strlen(c) : 0;
  if (n == 0 || n > BW_STATE_CHANNEL_MAX) return 0;
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)c[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
          ch == '.' || ch == '_' || ch == '-'))
      return 0;
  }
  return 1;
}

static int check(bw_state *s, const char *tenant) {
  if (!s->ops->publish)
    return bw_fail(BW_INVALID_ARGUMENT,
                   "state store: the file store has no publish/subscribe; the embedded store "
                   "(the default) and Redis/Valkey (state: {url: redis://...}) have it");
  if (!tenant || strlen(tenant) > BW_STATE_TENANT_MAX)
    return bw_fail(BW_INVALID_ARGUMENT, "state store: a tenant is 0 to 255 bytes");
  return BW_OK;
}

static int bad_channel(void) {
  return bw_fail(BW_INVALID_ARGUMENT, "state store: a channel is 1 to 64 bytes of A-Z a-z 0-9 . _ -");
}

int bw_state_publish(bw_state *s, const char *tenant, const char *channel, const void *msg,
                     size_t len) {
  int rc = check(s, tenant);
  if (rc) return rc;
  if (!bw_state_channel_ok(channel)) return bad_channel();
  if (len > BW_STATE_MESSAGE_MAX)
    return bw_fail(BW_TOO_LARGE, "state store: a message is at most 16384 bytes");
  if (len && !msg) return bw_fail(BW_INVALID_ARGUMENT, "state store: no message");
  return s->ops->publish(s, tenant, channel, len ? msg : "", len);
}

int bw_state_subscribe(bw_state *s, const char *tenant, const char *const *channels, int n,
                       bw_state_sub **out) {
  *out = NULL;
  int rc = check(s, tenant);
  if (rc) return rc;
  if (n < 1 || n > BW_STATE_SUB_CHANNELS)
    return bw_fail(BW_INVALID_ARGUMENT, "state store: a subscription has 1 to 8 channels");
  for (int i = 0; i < n; i++)
    if (!bw_state_channel_ok(channels[i])) return bad_channel();
  bw_state_sub *sub = calloc(1, sizeof *sub);
  struct bw_state_sub_q *q = calloc(1, sizeof *q);
  if (!sub || !q || pthread_mutex_init(&q->mu, NULL)) {
    free(sub);
    free(q);
    return bw_fail(BW_ENOMEM, "state store: out of memory");
  }
  q->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (q->efd < 0) {
    int err = errno;
    pthread_mutex_destroy(&q->mu);
    free(q);
    free(sub);
    return bw_code_from_errno(err);
  }
  sub->q = q;
  strcpy(sub->tenant, tenant);
  for (int i = 0; i < n; i++) strcpy(sub->channel[i], channels[i]);
  sub->nchannels = n;
  sub->s = bw_state_ref(s);
  if ((rc = s->ops->subscribe(s, sub))) {
    bw_err_saved sv;
    bw_err_save(&sv);
    close(q->efd);
    pthread_mutex_destroy(&q->mu);
    free(q);
    bw_state_close(sub->s);
    free(sub);
    return bw_err_restore(rc, &sv);
  }
  *out = sub;
  return BW_OK;
}

int bw_state_sub_wants(const bw_state_sub *sub, const char *tenant, const char *channel) {
  if (strcmp(sub->tenant, tenant)) return 0;
  for (int i = 0; i < sub->nchannels; i++)
    if (!strcmp(sub->channel[i], channel)) return 1;
  return 0;
}

static void append(struct bw_state_sub_q *q, item *it) {
  if (q->tail) q->tail->next = it;
  else q->head = it;
  q->tail = it;
  uint64_t one = 1;
  if (write(q->efd, &one, sizeof one) < 0) { /* full (2^64-2): readable anyway */ }
}

static void push_gap(struct bw_state_sub_q *q) {
  if (q->gap_queued) return;
  item *it = calloc(1, sizeof *it); /* not counted: at most one in a row */
  if (!it) return; /* no memory: the next push tries again */
  it->gap = 1;
  q->gap_queued = 1;
  append(q, it);
}

void bw_state_sub_push(bw_state_sub *sub, const char *channel, const void *msg, size_t len) {
  struct bw_state_sub_q *q = sub->q;
  size_t cl = strlen(channel);
  item *it = malloc(sizeof *it + len + cl + 2); /* copied outside the lock */
  if (it) {
    it->next = NULL;
    it->gap = 0;
    it->len = len;
    memcpy(it->data, msg, len);
    it->data[len] = 0;
    it->channel = it->data + len + 1;
    memcpy(it->channel, channel, cl + 1);
  }
  pthread_mutex_lock(&q->mu);
  if (!it || q->n >= BW_STATE_SUB_QUEUE || q->bytes + len > BW_STATE_SUB_BYTES) {
    push_gap(q); /* the reader is behind: it loses this one and is told */
    pthread_mutex_unlock(&q->mu);
    free(it);
    return;
  }
  q->n++;
  q->bytes += len;
  q->gap_queued = 0;
  append(q, it);
  pthread_mutex_unlock(&q->mu);
}

void bw_state_sub_gap(bw_state_sub *sub) {
  pthread_mutex_lock(&sub->q->mu);
  push_gap(sub->q);
  pthread_mutex_unlock(&sub->q->mu);
}

int bw_state_sub_fd(const bw_state_sub *sub) { return sub->q->efd; }

int bw_state_sub_next(bw_state_sub *sub, char **channel, char **msg, size_t *len, int *gap) {
  struct bw_state_sub_q *q = sub->q;
  *channel = *msg = NULL;
  *len = 0;
  *gap = 0;
  pthread_mutex_lock(&q->mu);
  item *it = q->head;
  if (it) {
    q->head = it->next;
    if (!q->head) {
      q->tail = NULL;
      q->gap_queued = 0;
    }
    if (!it->gap) q->n--, q->bytes -= it->len;
  }
  if (!q->head) { /* quiet again until the next push */
    uint64_t v;
    if (read(q->efd, &v, sizeof v) < 0) { /* EAGAIN: it was not signalled */ }
  }
  pthread_mutex_unlock(&q->mu);
  if (!it) return BW_EAGAIN;
  int rc = BW_OK;
  if (it->gap) *gap = 1;
  else {
    size_t cl = strlen(it->channel);
    *msg = malloc(it->len + 1);
    *channel = malloc(cl + 1);
    if (!*msg || !*channel) {
      free(*msg);
      free(*channel);
      *msg = *channel = NULL;
      rc = bw_fail(BW_ENOMEM, "state store: out of memory");
    } else {
      memcpy(*msg, it->data, it->len + 1);
      memcpy(*channel, it->channel, cl + 1);
      *len = it->len;
    }
  }
  free(it);
  return rc;
}

void bw_state_unsubscribe(bw_state_sub *sub) {
  if (!sub) return;
  sub->s->ops->unsubscribe(sub->s, sub);
  struct bw_state_sub_q *q = sub->q;
  for (item *it = q->head, *nx; it; it = nx) {
    nx = it->next;
    free(it);
  }
  close(q->efd);
  pthread_mutex_destroy(&q->mu);
  free(q);
  bw_state_close(sub->s);
  free(sub);
}
