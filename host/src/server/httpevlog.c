/*
 * httpevlog.c - the events of shared sessions' streams in the deployment's
 * store (opts.store: Redis or Valkey behind several instances), so a
 * client whose stream is cut resumes it with Last-Event-ID on any
 * instance, and a message the server sends on a session's GET stream
 * reaches that stream wherever it is held. Without a store nothing here
 * runs (h->evlog is NULL): the replay buffers of httpsess.c are all.
 *
 * The log is one record per session, the store's "events/<sid>" under the
 * session's tenant (as its "session/<id>"): the last KEEP_DONE + 1 streams,
 * at most http.replay events each and LOG_BYTES of event data in all, the
 * oldest going first; it lives session_ttl after its last write and goes
 * with DELETE. A POST stream's events are numbered by the instance that
 * runs its call (stream ids start at a random base per process, so two
 * instances never make the same one) and written through after each
 * event; the GET stream's are numbered by the log itself (a
 * compare-and-set), so every instance's messages on it are one sequence.
 *
 * Each append publishes "<sid> <stream>" on the tenant's channel
 * "burrow.events"; a thread here (the follower) subscribes to every
 * tenant's and, for a session with a stream read here that is kept
 * elsewhere (a resumed stream: a mirror; or its GET stream), reads the log
 * again and merges what is new, so the readers go on. A missed message (a
 * gap) makes it read every such session again. Not part of burrow's API.
 */
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <unistd.h>

#include "httpint.h"
#include "state.h"

enum {
  LOG_STREAMS = KEEP_DONE + 1, /* streams a session's log keeps (its GET stream among them) */
  LOG_BYTES = 256 * 1024,      /* bytes of event data it keeps, all streams */
  LOG_TRIES = 8,               /* compare-and-set rounds before an append gives up */
  PENDING = 64,                /* sessions the follower holds to read; more: all */
  SUBS = 64                    /* tenants followed (one subscription each) */
};
#define CHANNEL "burrow.events"
#define BUDGET_KEY "events/bytes" /* the tenant's logs' bytes (opts.events_budget) */
#define EVENT_COST 32             /* an event's line in the record, charged with its data */
#define MAGIC "burrow-events 1\n"

/* ------------------------------------------------------------ the record */

typedef struct lev {
  long seq;
  size_t len;
  const char *data; /* into the record's text, or the caller's */
} lev;

typedef struct lstream {
  long id, last; /* last: the highest number given (kept when its event goes) */
  int done, n, cap;
  lev *e;
} lstream;

struct bwh_evrec {
  char *text; /* the store's value these point into */
  int n;
  lstream s[LOG_STREAMS + 1];
};

static void rec_free(struct bwh_evrec *r) {
  if (!r) return;
  for (int i = 0; i < r->n; i++) free(r->s[i].e);
  free(r->text);
  free(r);
}

static int add_event(lstream *st, long seq, const char *data, size_t len) {
  if (st->n == st->cap) {
    int c = st->cap ? st->cap * 2 : 8;
    lev *ne = realloc(st->e, (size_t)c * sizeof *ne);
    if (!ne) return -1;
    st->e = ne;
    st->cap = c;
  }
  st->e[st->n++] = (lev){seq, len, data};
  return 0;
}

/* One line of at most 95 bytes at *p (the newline skipped), NUL-ended in
 * line; 0 at the end or on a line too long. */
static int next_line(const char **p, const char *end, char line[96]) {
  const char *nl = memchr(*p, '\n', (size_t)(end - *p));
  if (!nl || nl - *p >= 96) return 0;
  memcpy(line, *p, (size_t)(nl - *p));
  line[nl - *p] = '\0';
  *p = nl + 1;
  return 1;
}

/* The record from the store's value (NULL: none); a value that is not one
 * (another version, damaged) reads as an empty log. */
static struct bwh_evrec *rec_parse(char *text, size_t len) {
  struct bwh_evrec *r = calloc(1, sizeof *r);
  if (!r) {
    free(text);
    return NULL;
  }
  r->text = text;
  size_t m = strlen(MAGIC);
  if (!text || len < m || memcmp(text, MAGIC, m)) return r;
  const char *p = text + m, *end = text + len;
  char line[96];
  while (p < end && next_line(&p, end, line)) {
    long a, b;
    int d;
    size_t n;
    if (sscanf(line, "s %ld %d %ld", &a, &d, &b) == 3 && r->n < LOG_STREAMS) {
      r->s[r->n++] = (lstream){.id = a, .done = d != 0, .last = b};
    } else if (sscanf(line, "e %ld %zu", &a, &n) == 2 && r->n > 0 &&
               n <= (size_t)(end - p) && (size_t)(end - p) - n >= 1 && p[n] == '\n') {
      if (add_event(&r->s[r->n - 1], a, p, n)) break;
      p += n + 1;
    } else {
      break; /* damaged: what came before stands */
    }
  }
  return r;
}

static char *rec_text(const struct bwh_evrec *r, size_t *len) {
  size_t cap = strlen(MAGIC) + 1;
  for (int i = 0; i < r->n; i++) {
    cap += 64;
    for (int j = 0; j < r->s[i].n; j++) cap += 48 + r->s[i].e[j].len;
  }
  char *b = malloc(cap), *p = b;
  if (!b) return NULL;
  p += sprintf(p, "%s", MAGIC);
  for (int i = 0; i < r->n; i++) {
    const lstream *st = &r->s[i];
    p += sprintf(p, "s %ld %d %ld\n", st->id, st->done, st->last);
    for (int j = 0; j < st->n; j++) {
      p += sprintf(p, "e %ld %zu\n", st->e[j].seq, st->e[j].len);
      memcpy(p, st->e[j].data, st->e[j].len);
      p += st->e[j].len;
      *p++ = '\n';
    }
  }
  *len = (size_t)(p - b);
  return b;
}

static lstream *rec_find(struct bwh_evrec *r, long id) {
  for (int i = 0; r && i < r->n; i++)
    if (r->s[i].id == id) return &r->s[i];
  return NULL;
}

/* What a record holds, as the budget charges it: its events' data and
 * lines. */
static long long rec_bytes(const struct bwh_evrec *r) {
  long long n = 0;
  for (int i = 0; r && i < r->n; i++)
    for (int j = 0; j < r->s[i].n; j++) n += (long long)r->s[i].e[j].len + EVENT_COST;
  return n;
}

static void drop_first(lstream *st) {
  memmove(st->e, st->e + 1, (size_t)(st->n - 1) * sizeof *st->e);
  st->n--;
}

/* Within the caps: the oldest stream other than the GET stream goes past
 * LOG_STREAMS; past LOG_BYTES the oldest events go, the oldest stream's
 * first, the newest event (keep, of stream keep_id) last of all. */
static void rec_trim(struct bwh_evrec *r, long keep_id) {
  while (r->n > LOG_STREAMS) {
    int v = 0;
    while (v < r->n - 1 && (r->s[v].id == 0 || r->s[v].id == keep_id)) v++;
    free(r->s[v].e);
    memmove(&r->s[v], &r->s[v + 1], (size_t)(r->n - v - 1) * sizeof r->s[0]);
    r->n--;
  }
  size_t total = 0;
  for (int i = 0; i < r->n; i++)
    for (int j = 0; j < r->s[i].n; j++) total += r->s[i].e[j].len;
  while (total > LOG_BYTES) {
    lstream *v = NULL;
    for (int i = 0; i < r->n && !v; i++) {
      lstream *st = &r->s[i];
      if (st->n > (st->id == keep_id ? 1 : 0)) v = st;
    }
    if (!v) v = rec_find(r, keep_id); /* the newest alone is too big: not kept */
    if (!v || !v->n) return;
    total -= v->e[0].len;
    drop_first(v);
  }
}

/* ------------------------------------------------------------ the store */

typedef struct follower {
  bw_http *h;
  pthread_t th;
  pthread_mutex_t mu;
  int wake;   /* an eventfd: stop, or a session kicked */
  int stop;
  int all;    /* read every followed session again */
  int npend;
  char pend[PENDING][40];
  int nsub;
  bw_state_sub *sub[SUBS];
} follower;

struct bwh_evlog {
  follower f;
  long base; /* stream ids of this process's sessions start here */
};

static const char *tenant_of(const bw_http *h, int tenant) { return bwh_tenant_name(h, tenant); }

static void key_of(char key[48], const char *sid) { snprintf(key, 48, "events/%.32s", sid); }

static double ttl_of(const bw_http *h) {
  double t = h->o.session_ttl;
  if (!(t >= 1)) t = 1;
  if (t > BW_STATE_TTL_MAX) t = BW_STATE_TTL_MAX;
  return t;
}

/* The session's log as the store holds it (*out NULL: none, and 0);
 * -1: the store did not answer. */
static int rec_get(bw_http *h, int tenant, const char *sid, struct bwh_evrec **out,
                   uint64_t *version) {
  char key[48], *val = NULL;
  size_t len = 0;
  key_of(key, sid);
  *out = NULL;
  if (h->checker && atomic_load(&h->checker->ok) == 0) return -1; /* known down: no wait */
  if (bw_state_get(h->o.store, tenant_of(h, tenant), key, &val, &len, version) != BW_OK)
    return -1;
  *out = rec_parse(val, len);
  return *out ? 0 : -1;
}

static double window_of(const bw_http *h) {
  double t = 2 * ttl_of(h);
  return t > BW_STATE_TTL_MAX ? BW_STATE_TTL_MAX : t;
}

/* Charge delta bytes to the tenant's logs' budget (a refund when below 0):
 * 0 when the budget refuses or the store does not answer. The counter is
 * a window of twice the session TTL (a log that expired is not refunded:
 * the tenant's logs hold at most twice the budget). */
static int charge(bw_http *h, int tenant, long long delta) {
  if (!h->o.events_budget || !delta) return 1;
  int added = 0;
  int64_t value = 0;
  int rc = bw_state_add(h->o.store, tenant_of(h, tenant), BUDGET_KEY, delta,
                        delta > 0 ? (int64_t)h->o.events_budget : -1, window_of(h), &added, &value);
  return rc == BW_OK && added;
}

long bwh_evlog_append(bw_http *h, int tenant, const char *sid, long stream_id, long seq,
                      const char *data, size_t n, int done) {
  if (!h->evlog) return -1;
  char key[48];
  key_of(key, sid);
  long got = -1;
  for (int i = 0; i < LOG_TRIES && got < 0; i++) {
    struct bwh_evrec *r;
    uint64_t ver = 0;
    if (rec_get(h, tenant, sid, &r, &ver)) return -1;
    long long before = rec_bytes(r);
    lstream *st = rec_find(r, stream_id);
    if (!st) {
      st = &r->s[r->n++]; /* room: LOG_STREAMS + 1, trimmed below */
      *st = (lstream){.id = stream_id};
    }
    long at = 0;
    if (data) {
      at = seq > 0 ? seq : st->last + 1;
      int dup = 0;
      for (int j = 0; j < st->n; j++) dup |= st->e[j].seq == at;
      if (!dup && add_event(st, at, data, n)) {
        rec_free(r);
        return -1;
      }
      if (at > st->last) st->last = at;
      while (st->n > h->o.replay) drop_first(st);
    }
    if (done) st->done = 1;
    rec_trim(r, stream_id);
    long long delta = rec_bytes(r) - before;
    int charged = delta > 0 && charge(h, tenant, delta);
    if (delta > 0 && !charged) {
      /* past the tenant's budget: this stream keeps none of its events
       * (a resumption elsewhere finds them gone, as the oldest go, never
       * a gap among those kept); the record only shrinks */
      lstream *mine = rec_find(r, stream_id); /* (rec_trim may have moved it) */
      if (mine) mine->n = 0;
      delta = rec_bytes(r) - before;
    }
    size_t len = 0;
    char *text = rec_text(r, &len);
    rec_free(r);
    int ok = 0;
    uint64_t nv = 0;
    int rc = text ? bw_state_cas(h->o.store, tenant_of(h, tenant), key, ver, text, len, ttl_of(h), &ok, &nv)
                  : BW_ENOMEM;
    free(text);
    if (rc == BW_OK && ok) {
      got = at;
      if (delta < 0) (void)charge(h, tenant, delta); /* given back (a failure over-counts: the safe side) */
    } else if (charged) {
      (void)charge(h, tenant, -delta); /* not written: given back */
    }
    if (rc != BW_OK) return -1;
  }
  if (got < 0) return -1; /* lost every round to other writers */
  char msg[64];
  int k = snprintf(msg, sizeof msg, "%.32s %ld", sid, stream_id);
  (void)bw_state_publish(h->o.store, tenant_of(h, tenant), CHANNEL, msg, (size_t)k);
  return got;
}

void bwh_evlog_forget(bw_http *h, int tenant, const char *sid) {
  if (!h->evlog) return;
  char key[48];
  key_of(key, sid);
  int deleted = 0;
  struct bwh_evrec *r = NULL;
  uint64_t ver = 0;
  long long held = rec_get(h, tenant, sid, &r, &ver) ? 0 : rec_bytes(r);
  rec_free(r);
  if (bw_state_del(h->o.store, tenant_of(h, tenant), key, 0, &deleted) == BW_OK && deleted && held)
    (void)charge(h, tenant, -held); /* its bytes given back */
}

int bwh_evlog_on(const bw_http *h, const session *s) {
  return h->evlog && !s->stateless && !s->listen;
}

/* ------------------------------------------------------------ merging */

/* Merge the log's events of t's stream past its floor (lock held); a
 * mirror ends when its end is logged. */
static void merge(bw_http *h, stream *t, const lstream *ls) {
  if (!ls) return;
  t->readers++; /* not evicted while it grows */
  for (int j = 0; j < ls->n; j++)
    if (ls->e[j].seq > t->floor) bwh_stream_put(h, t, ls->e[j].seq, ls->e[j].data, ls->e[j].len);
  t->readers--;
  if (t->mirror && ls->done) t->done = 1;
  bwh_wake(h, t);
}

int bwh_evlog_fetch(bw_http *h, int token, const bw_oauth_who *who, const char *sid, const char *last,
                    struct bwh_evrec **out) {
  *out = NULL;
  if (!h->evlog || !sid) return 0;
  long id = 0, pos = -1;
  if (last && bwh_event_id(last, &id, &pos)) return 0; /* do_get refuses it */
  int tenant = 0;
  pthread_mutex_lock(&h->mu);
  session *s = bwh_session_find(h, sid);
  if (s && !bwh_session_owned(s, token, who)) s = NULL; /* 404 below, the store not asked */
  stream *t = s ? bwh_stream_find(s, id) : NULL;
  int need = s && bwh_evlog_on(h, s) && (id == 0 || !t || t->mirror);
  if (s) tenant = s->tenant;
  pthread_mutex_unlock(&h->mu);
  if (!need) return 0;
  uint64_t ver = 0;
  if (rec_get(h, tenant, sid, out, &ver)) /* a stream kept elsewhere cannot be had now */
    return id != 0 && !t ? 503 : 0;
  return 0;
}

void bwh_evlog_fill(bw_http *h, session *s, struct bwh_evrec *r, long id, long pos) {
  if (!r) return;
  lstream *ls = rec_find(r, id);
  stream *t = bwh_stream_find(s, id);
  if (id == 0) {
    if (!t) t = bwh_stream_new(h, s, 0);
    if (!t) return;
    /* resumed: what came after the client's last; a new reader: what
     * comes from now on (and what is kept here that no reader had) */
    long logged = ls ? ls->last : 0;
    t->floor = pos >= 0 ? pos : (logged > t->floor ? logged : t->floor);
  } else if (!t) {
    if (!ls) return; /* not kept anywhere: 404 */
    if (!(t = bwh_stream_new(h, s, id))) return;
    t->mirror = 1;
  }
  if (id == 0 || t->mirror) merge(h, t, ls);
}

static void kick(follower *f, const char *sid, int all) {
  pthread_mutex_lock(&f->mu);
  int have = 0;
  for (int i = 0; i < f->npend && !have; i++) have = !strcmp(f->pend[i], sid ? sid : "");
  if (all || f->npend == PENDING) f->all = 1;
  else if (!have) snprintf(f->pend[f->npend++], 40, "%s", sid);
  pthread_mutex_unlock(&f->mu);
  uint64_t one = 1;
  if (write(f->wake, &one, sizeof one) < 0) { /* full: awake anyway */ }
}

void bwh_evlog_done(bw_http *h, const char *sid, struct bwh_evrec *r) {
  if (!r) return;
  rec_free(r);
  /* what was logged between the read and the reader's start */
  if (h->evlog) kick(&h->evlog->f, sid, 0);
}

/* ------------------------------------------------------------ following */

/* Does s have a stream read here that is kept elsewhere? (lock held) */
static int followed(const bw_http *h, const session *s) {
  if (s->closed || !bwh_evlog_on(h, s)) return 0;
  for (const stream *t = s->streams; t; t = t->next)
    if (t->readers && (t->mirror || t->id == 0)) return 1;
  return 0;
}

/* Read session sid's log again and merge it into its followed streams. */
static void pump(bw_http *h, const char *sid) {
  pthread_mutex_lock(&h->mu);
  session *s = bwh_session_find(h, sid);
  if (!s || !followed(h, s)) {
    pthread_mutex_unlock(&h->mu);
    return;
  }
  s->refs++;
  int tenant = s->tenant;
  pthread_mutex_unlock(&h->mu);
  struct bwh_evrec *r = NULL;
  uint64_t ver = 0;
  int rc = rec_get(h, tenant, sid, &r, &ver);
  pthread_mutex_lock(&h->mu);
  if (!rc && !s->closed)
    for (stream *t = s->streams; t; t = t->next)
      if (t->mirror || t->id == 0) merge(h, t, rec_find(r, t->id));
  pthread_cond_broadcast(&h->ev);
  bwh_session_unref(h, s);
  pthread_mutex_unlock(&h->mu);
  rec_free(r);
}

static void pump_all(bw_http *h) {
  char (*ids)[40] = NULL;
  size_t n = 0, cap = 0;
  pthread_mutex_lock(&h->mu);
  for (session *s = h->sessions; s; s = s->next) {
    if (!followed(h, s)) continue;
    if (n == cap) {
      size_t c = cap ? cap * 2 : 16;
      char (*ni)[40] = realloc(ids, c * sizeof *ni);
      if (!ni) break;
      ids = ni;
      cap = c;
    }
    memcpy(ids[n++], s->id, 40);
  }
  pthread_mutex_unlock(&h->mu);
  for (size_t i = 0; i < n; i++) pump(h, ids[i]);
  free(ids);
}

static void drain(follower *f) {
  for (int i = 0; i < f->nsub; i++) {
    char *ch = NULL, *msg = NULL;
    size_t len = 0;
    int gap = 0;
    while (bw_state_sub_next(f->sub[i], &ch, &msg, &len, &gap) == BW_OK) {
      char sid[40];
      if (gap) kick(f, NULL, 1);
      else if (msg && sscanf(msg, "%32[0-9a-f] ", sid) == 1) kick(f, sid, 0);
      free(ch);
      free(msg);
    }
  }
}

static void *follow(void *arg) {
  follower *f = arg;
  struct pollfd p[SUBS + 1];
  for (;;) {
    int n = 0;
    for (int i = 0; i < f->nsub; i++) p[n++] = (struct pollfd){.fd = bw_state_sub_fd(f->sub[i]), .events = POLLIN};
    p[n] = (struct pollfd){.fd = f->wake, .events = POLLIN};
    (void)poll(p, (nfds_t)n + 1, 1000);
    uint64_t v;
    if (read(f->wake, &v, sizeof v) < 0) { /* nothing there: fine */ }
    drain(f);
    pthread_mutex_lock(&f->mu);
    if (f->stop) {
      pthread_mutex_unlock(&f->mu);
      return NULL;
    }
    int all = f->all, np = f->npend;
    char pend[PENDING][40];
    memcpy(pend, f->pend, sizeof pend);
    f->all = f->npend = 0;
    pthread_mutex_unlock(&f->mu);
    if (all) pump_all(f->h);
    else
      for (int i = 0; i < np; i++) pump(f->h, pend[i]);
  }
}

int bwh_evlog_start(bw_http *h) {
  if (!h->o.store || strcmp(bw_state_kind(h->o.store), "redis")) return 0; /* one instance: nothing to share */
  struct bwh_evlog *L = calloc(1, sizeof *L);
  if (!L) return -1;
  unsigned int rnd = 0;
  if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd) rnd = (unsigned int)getpid();
  L->base = ((long)(rnd & 0x7fffffff) + 1) << 20; /* 2^20 streams a session before it meets another's */
  follower *f = &L->f;
  f->h = h;
  f->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (f->wake < 0 || pthread_mutex_init(&f->mu, NULL)) {
    if (f->wake >= 0) close(f->wake);
    free(L);
    return -1;
  }
  int tenants = h->o.n_tenants > 0 ? h->o.n_tenants : 1;
  const char *ch[] = {CHANNEL};
  for (int i = 0; i < tenants && f->nsub < SUBS; i++)
    if (bw_state_subscribe(h->o.store, tenant_of(h, i), ch, 1, &f->sub[f->nsub]) == BW_OK) f->nsub++;
  if (pthread_create(&f->th, NULL, follow, f)) {
    for (int i = 0; i < f->nsub; i++) bw_state_unsubscribe(f->sub[i]);
    pthread_mutex_destroy(&f->mu);
    close(f->wake);
    free(L);
    return -1;
  }
  h->evlog = L;
  h->stream_base = L->base; /* the sessions' stream ids start there (httpsess.c) */
  return 0;
}

void bwh_evlog_stop(bw_http *h) {
  struct bwh_evlog *L = h->evlog;
  if (!L) return;
  follower *f = &L->f;
  pthread_mutex_lock(&f->mu);
  f->stop = 1;
  pthread_mutex_unlock(&f->mu);
  uint64_t one = 1;
  if (write(f->wake, &one, sizeof one) < 0) { /* full: awake anyway */ }
  pthread_join(f->th, NULL);
  for (int i = 0; i < f->nsub; i++) bw_state_unsubscribe(f->sub[i]);
  pthread_mutex_destroy(&f->mu);
  close(f->wake);
  h->evlog = NULL;
  h->stream_base = 0;
  free(L);
}

/* ------------------------------------------------------------ event ids */

int bwh_event_id(const char *v, long *stream_id, long *seq) {
  /* "N-k", both decimal, no sign, at most 18 digits each: a forged one
   * never reaches the store as more than two numbers */
  const char *p = v;
  long a = 0, b = 0;
  int da = 0, db = 0;
  for (; *p >= '0' && *p <= '9'; p++, da++) {
    if (da == 18) return -1;
    a = a * 10 + (*p - '0');
  }
  if (!da || *p++ != '-') return -1;
  for (; *p >= '0' && *p <= '9'; p++, db++) {
    if (db == 18) return -1;
    b = b * 10 + (*p - '0');
  }
  if (!db || *p) return -1;
  *stream_id = a;
  *seq = b;
  return 0;
}
