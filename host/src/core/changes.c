/*
 * changes.c - burrow's own writes told through the state store
 * (changes.h), so a listen or a subscription on one instance hears a
 * write made through another, where inotify cannot see it (another
 * machine on a shared volume, a root with inotify off).
 *
 * Feeds: one subscription per (store, tenant), shared by the watchers
 * (a store as bw_state_id names it: every HTTP worker's handle on one
 * Redis database is one store here)
 * that follow it and ended with the last (they hold it: bw_watch_scope).
 * One thread of the process, started with the first feed, polls every
 * feed's subscription fd and turns each message into marks on the
 * watches it concerns (bw_watch_heard) and each gap into a mark on all of
 * them: a flag per watch, so a flood of messages costs no memory past
 * the subscription's bounded queue. A message is data about a path, never
 * a path anything opens: it only selects watches whose own (mount,
 * in-root path) it names, and one that does not decode to a clean one is
 * dropped.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "changes.h"

#define MAGIC "bw1"

/* A normalised absolute path: "/" or "/a/b", no empty, "." or ".."
 * component, no trailing slash. */
static int clean_components(const char *p) {
  for (;;) {
    const char *slash = strchr(p, '/');
    size_t n = slash ? (size_t)(slash - p) : strlen(p);
    if (n == 0 || n > BW_NAME_MAX || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
      return 0;
    if (!slash) return 1;
    p = slash + 1;
  }
}

static int clean_mount(const char *m) {
  if (m[0] != '/') return 0;
  return m[1] == 0 || clean_components(m + 1);
}

static int clean_rel(const char *r) {
  if (!strcmp(r, ".")) return 1;
  return r[0] != '/' && clean_components(r);
}

int bw_changes_encode(const char *mount, const char *rel, int gone, char *buf, size_t cap,
                      size_t *len) {
  size_t ml = strlen(mount), rl = strlen(rel), n = sizeof MAGIC + 2 + ml + 1 + rl;
  if (!clean_mount(mount) || !clean_rel(rel) || ml > BW_PATH_MAX || rl > BW_PATH_MAX)
    return bw_fail(BW_INVALID_ARGUMENT, "changes: not a clean mount and in-root path");
  if (n > cap) return bw_fail(BW_TOO_LARGE, "changes: the path is too long to publish");
  char *p = buf;
  memcpy(p, MAGIC, sizeof MAGIC), p += sizeof MAGIC;
  *p++ = gone ? 'd' : 'w';
  *p++ = 0;
  memcpy(p, mount, ml + 1), p += ml + 1;
  memcpy(p, rel, rl), p += rl;
  *len = (size_t)(p - buf);
  return BW_OK;
}

int bw_changes_decode(char *buf, size_t len, const char **mount, const char **rel, int *gone) {
  /* MAGIC\0K\0MOUNT\0REL: exactly three NULs, REL up to the end */
  if (len < sizeof MAGIC + 2 || memcmp(buf, MAGIC, sizeof MAGIC)) return 0;
  char *k = buf + sizeof MAGIC, *end = buf + len;
  if ((k[0] != 'w' && k[0] != 'd') || k[1] != 0) return 0;
  char *m = k + 2;
  char *nul = memchr(m, 0, (size_t)(end - m));
  if (!nul || memchr(nul + 1, 0, (size_t)(end - nul - 1))) return 0;
  size_t rl = (size_t)(end - nul - 1);
  if (rl == 0 || rl > BW_PATH_MAX || (size_t)(nul - m) > BW_PATH_MAX) return 0;
  /* REL ends the message without a NUL of its own: the buffer has one past len */
  if (buf[len] != 0) return 0;
  if (!clean_mount(m) || !clean_rel(nul + 1)) return 0;
  *gone = k[0] == 'd';
  *mount = m;
  *rel = nul + 1;
  return 1;
}

/* ---- feeds */

typedef struct feed {
  struct feed *next;
  char *id;    /* the key with the tenant: the store's (bw_state_id) */
  bw_state_sub *sub; /* (it holds the store) */
  int refs;    /* watchers holding it; 0: the thread ends it */
  char tenant[];
} feed;

static struct {
  pthread_mutex_t mu;
  feed *list;
  int kick; /* an eventfd: the list changed */
  int started;
} feeds = {PTHREAD_MUTEX_INITIALIZER, NULL, -1, 0};

static void kick(void) {
  uint64_t one = 1;
  if (write(feeds.kick, &one, sizeof one) < 0) { /* full: readable anyway */ }
}

/* A gap: "you may have missed changes", from an instance whose publishes
 * failed meanwhile. */
static const char GAP[] = MAGIC "\0g";

int bw_changes_is_gap(const char *buf, size_t len) {
  return len == sizeof GAP - 1 && !memcmp(buf, GAP, len);
}

/* ---- what this process could not tell (the store unreachable): a gap
 * owed to each such (store, tenant), published once the store answers
 * again, by the next change or by the feeds' thread, so the other
 * instances learn they missed something. At most OWED_MAX kept. */

enum { OWED_MAX = 256 };
typedef struct owed {
  struct owed *next;
  bw_state *s; /* a reference */
  char tenant[];
} owed;

static struct {
  pthread_mutex_t mu;
  owed *list;
  int n;
} debts = {PTHREAD_MUTEX_INITIALIZER, NULL, 0};

static int start(void);

static void owe(bw_state *s, const char *tenant) {
  pthread_mutex_lock(&debts.mu);
  owed *o = debts.list;
  while (o && !(!strcmp(bw_state_id(o->s), bw_state_id(s)) && !strcmp(o->tenant, tenant))) o = o->next;
  if (!o && debts.n < OWED_MAX && (o = malloc(sizeof *o + strlen(tenant) + 1))) {
    o->s = bw_state_ref(s);
    strcpy(o->tenant, tenant);
    o->next = debts.list;
    debts.list = o;
    debts.n++;
  }
  pthread_mutex_unlock(&debts.mu);
}

/* Publish the gaps owed (all, or those of s's store and tenant); those
 * the store still cannot take stay owed. */
static void pay(const bw_state *s, const char *tenant) {
  pthread_mutex_lock(&debts.mu);
  owed *todo = NULL, *keep = NULL;
  for (owed *o = debts.list, *nx; o; o = nx) {
    nx = o->next;
    int mine = !s || (!strcmp(bw_state_id(o->s), bw_state_id(s)) && !strcmp(o->tenant, tenant));
    if (mine) o->next = todo, todo = o;
    else o->next = keep, keep = o;
  }
  debts.list = keep;
  pthread_mutex_unlock(&debts.mu);
  for (owed *o = todo, *nx; o; o = nx) {
    nx = o->next;
    if (bw_state_publish(o->s, o->tenant, BW_CHANGES_CHANNEL, GAP, sizeof GAP - 1) == BW_OK) {
      pthread_mutex_lock(&debts.mu);
      debts.n--;
      pthread_mutex_unlock(&debts.mu);
      bw_state_close(o->s);
      free(o);
      continue;
    }
    pthread_mutex_lock(&debts.mu);
    o->next = debts.list;
    debts.list = o;
    pthread_mutex_unlock(&debts.mu);
  }
}

/* Owed by s's store to tenant? */
static int owes(const bw_state *s, const char *tenant) {
  pthread_mutex_lock(&debts.mu);
  owed *o = debts.list;
  while (o && !(!strcmp(bw_state_id(o->s), bw_state_id(s)) && !strcmp(o->tenant, tenant))) o = o->next;
  pthread_mutex_unlock(&debts.mu);
  return o != NULL;
}

static int owing(void) {
  pthread_mutex_lock(&debts.mu);
  int n = debts.n;
  pthread_mutex_unlock(&debts.mu);
  return n;
}

int bw_changes_publish(bw_state *s, const char *tenant, const char *mount, const char *rel,
                       int gone) {
  /* the gap owed covers this one too: no write waits on a store that did
   * not answer the last time (the feeds' thread tries it each second) */
  if (owing() && owes(s, tenant))
    return bw_fail(BW_STORE_UNAVAILABLE, "changes: the state store did not answer; a gap is owed");
  size_t cap = sizeof MAGIC + 3 + strlen(mount) + strlen(rel);
  char *buf = malloc(cap);
  if (!buf) return bw_fail(BW_ENOMEM, "changes: out of memory");
  size_t len = 0;
  int rc = bw_changes_encode(mount, rel, gone, buf, cap, &len);
  if (!rc) rc = bw_state_publish(s, tenant, BW_CHANGES_CHANNEL, buf, len);
  free(buf);
  if (rc == BW_STORE_UNAVAILABLE) { /* the others will be told they missed it */
    bw_err_saved sv;
    bw_err_save(&sv);
    owe(s, tenant);
    pthread_mutex_lock(&feeds.mu);
    start(); /* its thread pays the debt once the store answers */
    kick();
    pthread_mutex_unlock(&feeds.mu);
    return bw_err_restore(rc, &sv);
  }
  if (!rc && owing()) pay(s, tenant);
  return rc;
}

/* What waits on f's subscription, into marks. */
static void drain(feed *f) {
  for (int i = 0; i < 4 * BW_STATE_SUB_QUEUE; i++) { /* then the others get their turn */
    char *channel, *msg;
    size_t len;
    int gap;
    if (bw_state_sub_next(f->sub, &channel, &msg, &len, &gap)) return;
    const char *mount, *rel;
    int gone;
    if (gap || bw_changes_is_gap(msg, len)) bw_watch_heard_gap(f, f->tenant);
    else if (bw_changes_decode(msg, len, &mount, &rel, &gone))
      bw_watch_heard(f, f->tenant, mount, rel, gone);
    free(channel);
    free(msg);
  }
}

static void *thread(void *arg) {
  (void)arg;
  struct pollfd *p = NULL;
  feed **fs = NULL;
  size_t cap = 0;
  for (;;) {
    /* the live feeds (and the ended ones, freed here: only this thread
     * reads their subscriptions) */
    feed *dead = NULL;
    size_t n = 0;
    pthread_mutex_lock(&feeds.mu);
    for (feed **pp = &feeds.list; *pp;) {
      feed *f = *pp;
      if (f->refs == 0) {
        *pp = f->next;
        f->next = dead;
        dead = f;
        continue;
      }
      n++;
      pp = &f->next;
    }
    if (n + 1 > cap) {
      size_t nc = (n + 1) * 2;
      struct pollfd *np = realloc(p, nc * sizeof *p);
      if (np) p = np;
      feed **nf = np ? realloc(fs, nc * sizeof *fs) : NULL;
      if (nf) fs = nf, cap = nc;
    }
    size_t i = 1;
    for (feed *f = feeds.list; f && i < cap; f = f->next, i++) {
      fs[i] = f;
      p[i] = (struct pollfd){bw_state_sub_fd(f->sub), POLLIN, 0};
    }
    n = i - 1;
    pthread_mutex_unlock(&feeds.mu);
    for (feed *f = dead, *nx; f; f = nx) {
      nx = f->next;
      bw_state_unsubscribe(f->sub);
      free(f->id);
      free(f);
    }
    if (!p) { /* no memory for even the kick's slot: try again shortly */
      usleep(100000);
      continue;
    }
    p[0] = (struct pollfd){feeds.kick, POLLIN, 0};
    int due = owing(); /* then try the store again each second */
    int got = poll(p, n + 1, due ? 1000 : -1);
    if (got < 0 && errno != EINTR) continue;
    if (got == 0 && due) pay(NULL, NULL);
    if (p[0].revents) {
      uint64_t v;
      if (read(feeds.kick, &v, sizeof v) < 0) { /* EAGAIN: another read took it */ }
    }
    for (i = 1; i <= n; i++)
      if (p[i].revents) drain(fs[i]);
  }
  return NULL;
}

/* The thread, with the first feed; it lives as long as the process. Under
 * the lock. */
static int start(void) {
  if (feeds.started) return BW_OK;
  if ((feeds.kick = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) return bw_code_from_errno(errno);
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &old);
  pthread_t th;
  int rc = pthread_create(&th, NULL, thread, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc) {
    close(feeds.kick);
    feeds.kick = -1;
    return bw_fail(BW_ENOMEM, "changes: cannot start the thread that hears them");
  }
  pthread_detach(th);
  feeds.started = 1;
  return BW_OK;
}

static void feed_put(void *arg) {
  feed *f = arg;
  pthread_mutex_lock(&feeds.mu);
  if (--f->refs == 0) kick(); /* the thread ends its subscription */
  pthread_mutex_unlock(&feeds.mu);
}

int bw_changes_follow(bw_watcher *w, bw_state *s, const char *tenant) {
  if (!s->ops->publish)
    return bw_state_publish(s, tenant, BW_CHANGES_CHANNEL, "", 0); /* its error, worded once */
  const char *id = bw_state_id(s);
  pthread_mutex_lock(&feeds.mu);
  feed *f = feeds.list;
  while (f && !(f->refs > 0 && !strcmp(f->id, id) && !strcmp(f->tenant, tenant))) f = f->next;
  if (f) {
    f->refs++;
    pthread_mutex_unlock(&feeds.mu);
    bw_watch_scope(w, f, tenant, f, feed_put);
    return BW_OK;
  }
  int rc = start();
  /* another tenant's feed of the same store: subscribe through its handle,
   * so the process has one subscriber (Redis: one connection, one reader
   * thread) per store, not one per worker's handle */
  bw_state *via = s;
  for (feed *g = feeds.list; g; g = g->next)
    if (g->refs > 0 && !strcmp(g->id, id)) {
      via = g->sub->s;
      break;
    }
  bw_state_ref(via); /* while subscribing outside the lock */
  pthread_mutex_unlock(&feeds.mu);
  if (rc) {
    bw_state_close(via);
    return rc;
  }
  /* subscribed outside the lock: Redis waits for the server's word */
  f = calloc(1, sizeof *f + strlen(tenant) + 1);
  if (!f || !(f->id = strdup(id))) {
    free(f);
    bw_state_close(via);
    return bw_fail(BW_ENOMEM, "changes: out of memory");
  }
  strcpy(f->tenant, tenant);
  const char *ch[] = {BW_CHANGES_CHANNEL};
  rc = bw_state_subscribe(via, tenant, ch, 1, &f->sub);
  bw_state_close(via); /* the subscription holds its own */
  if (rc) {
    free(f->id);
    free(f);
    return rc;
  }
  f->refs = 1;
  pthread_mutex_lock(&feeds.mu);
  f->next = feeds.list; /* (two first watchers at once make two feeds: both work) */
  feeds.list = f;
  kick();
  pthread_mutex_unlock(&feeds.mu);
  bw_watch_scope(w, f, tenant, f, feed_put);
  return BW_OK;
}
