/*
 * undo.c - undo stores (undo.h). A store keeps its records in one list,
 * oldest first (what a trim drops), and per key a stack, newest on top
 * (what undo_edit takes): each record sits in both. Keys hash into
 * chained buckets that double as they fill. One process-wide lock guards
 * every store, the registry of published ids and the budgets; the bytes
 * of a record are copied before it is taken.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "undo.h"
#include "undostate.h"

typedef struct rec {
  struct rec *prev, *next;   /* the store's list, oldest first */
  struct rec *older, *newer; /* its key's stack */
  struct slot *slot;
  bw_undo_entry e;
  size_t cost; /* bytes of e.before */
} rec;

typedef struct slot {
  struct slot *next; /* its bucket's chain */
  rec *top;          /* the newest record of the key */
  size_t depth;
  char key[];
} slot;

typedef struct budget {
  struct budget *next;
  int refs;
  size_t cap, bytes;
  char name[];
} budget;

struct bw_undo {
  struct bw_undo *next_pub; /* the registry's list */
  int refs, published;
  char id[33];
  size_t cap, max_records, bytes, count;
  rec *oldest, *newest;
  slot **buckets;
  size_t nbuckets, nslots;
  budget *b;
  bw_undostate *sh; /* its records in a state store (undostate.c), or NULL */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static bw_undo *registry;
static budget *budgets;

static size_t hash(const char *s) {
  size_t h = 1469598103934665603ULL;
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

static budget *budget_get(const char *name, size_t cap) {
  for (budget *b = budgets; b; b = b->next)
    if (!strcmp(b->name, name)) {
      b->refs++;
      b->cap = cap; /* the newest word of the configuration */
      return b;
    }
  budget *b = calloc(1, sizeof *b + strlen(name) + 1);
  if (!b) return NULL;
  strcpy(b->name, name);
  b->refs = 1;
  b->cap = cap;
  b->next = budgets;
  budgets = b;
  return b;
}

static void budget_put(budget *b) {
  if (!b || --b->refs > 0) return;
  for (budget **p = &budgets; *p; p = &(*p)->next)
    if (*p == b) {
      *p = b->next;
      break;
    }
  free(b);
}

bw_undo *bw_undo_new(size_t cap, size_t max_records, const char *budget_name,
                     size_t budget_cap) {
  bw_undo *u = calloc(1, sizeof *u);
  if (!u) return NULL;
  u->refs = 1;
  u->cap = cap;
  u->max_records = max_records ? max_records : 1;
  u->nbuckets = 64;
  u->buckets = calloc(u->nbuckets, sizeof *u->buckets);
  pthread_mutex_lock(&mu);
  if (budget_name && u->buckets) u->b = budget_get(budget_name, budget_cap);
  pthread_mutex_unlock(&mu);
  if (!u->buckets || (budget_name && !u->b)) {
    free(u->buckets);
    free(u);
    return NULL;
  }
  return u;
}

/* --- with mu held --- */

static slot *find_slot(bw_undo *u, const char *key) {
  for (slot *s = u->buckets[hash(key) % u->nbuckets]; s; s = s->next)
    if (!strcmp(s->key, key)) return s;
  return NULL;
}

static void grow(bw_undo *u) {
  size_t n = u->nbuckets * 2;
  slot **nb = calloc(n, sizeof *nb);
  if (!nb) return; /* longer chains, still correct */
  for (size_t i = 0; i < u->nbuckets; i++)
    for (slot *s = u->buckets[i], *x; s; s = x) {
      x = s->next;
      size_t j = hash(s->key) % n;
      s->next = nb[j];
      nb[j] = s;
    }
  free(u->buckets);
  u->buckets = nb;
  u->nbuckets = n;
}

static slot *get_slot(bw_undo *u, const char *key) {
  slot *s = find_slot(u, key);
  if (s) return s;
  if (u->nslots >= u->nbuckets * 2) grow(u);
  s = calloc(1, sizeof *s + strlen(key) + 1);
  if (!s) return NULL;
  strcpy(s->key, key);
  size_t i = hash(key) % u->nbuckets;
  s->next = u->buckets[i];
  u->buckets[i] = s;
  u->nslots++;
  return s;
}

static void free_slot(bw_undo *u, slot *s) {
  for (slot **p = &u->buckets[hash(s->key) % u->nbuckets]; *p; p = &(*p)->next)
    if (*p == s) {
      *p = s->next;
      break;
    }
  u->nslots--;
  free(s);
}

/* Unlink r from both lists and free it. */
static void forget(bw_undo *u, rec *r) {
  if (r->prev) r->prev->next = r->next;
  else u->oldest = r->next;
  if (r->next) r->next->prev = r->prev;
  else u->newest = r->prev;
  slot *s = r->slot;
  if (r->newer) r->newer->older = r->older;
  else s->top = r->older;
  if (r->older) r->older->newer = r->newer;
  u->bytes -= r->cost;
  u->count--;
  if (u->b) u->b->bytes -= r->cost;
  if (--s->depth == 0) free_slot(u, s);
  bw_undo_entry_free(&r->e);
  free(r);
}

static void clear(bw_undo *u) {
  while (u->oldest) forget(u, u->oldest);
}

/* --- the API --- */

void bw_undo_ref(bw_undo *u) {
  pthread_mutex_lock(&mu);
  u->refs++;
  pthread_mutex_unlock(&mu);
}

void bw_undo_unref(bw_undo *u) {
  if (!u) return;
  pthread_mutex_lock(&mu);
  int last = --u->refs == 0;
  if (last) {
    clear(u);
    budget_put(u->b);
  }
  pthread_mutex_unlock(&mu);
  if (last) {
    bw_undostate_free(u->sh);
    free(u->buckets);
    free(u);
  }
}

int bw_undo_publish(bw_undo *u, char id[33]) {
  pthread_mutex_lock(&mu);
  if (!u->published) {
    unsigned char rnd[16];
    if (getrandom(rnd, sizeof rnd, 0) != sizeof rnd) {
      pthread_mutex_unlock(&mu);
      return -1;
    }
    for (int i = 0; i < 16; i++) sprintf(u->id + 2 * i, "%02x", rnd[i]);
    u->published = 1;
    u->refs++;
    u->next_pub = registry;
    registry = u;
  }
  memcpy(id, u->id, 33);
  pthread_mutex_unlock(&mu);
  return 0;
}

bw_undo *bw_undo_find(const char *id) {
  pthread_mutex_lock(&mu);
  bw_undo *u = registry;
  while (u && strcmp(u->id, id)) u = u->next_pub;
  if (u) u->refs++;
  pthread_mutex_unlock(&mu);
  return u;
}

bw_undo *bw_undo_named(const char *id, size_t cap, size_t max_records,
                       const char *budget, size_t budget_cap) {
  if (strlen(id) != 32) return NULL; /* an id's length: found again as given */
  bw_undo *u = bw_undo_find(id);
  if (u) return u;
  bw_undo *made = bw_undo_new(cap, max_records, budget, budget_cap);
  if (!made) return NULL;
  pthread_mutex_lock(&mu);
  u = registry; /* another thread may have made it meanwhile: that one */
  while (u && strcmp(u->id, id)) u = u->next_pub;
  if (u) {
    u->refs++;
  } else {
    snprintf(made->id, sizeof made->id, "%s", id);
    made->published = 1;
    made->refs++; /* the registry's */
    made->next_pub = registry;
    registry = made;
  }
  pthread_mutex_unlock(&mu);
  if (!u) return made;
  bw_undo_unref(made);
  return u;
}

bw_undo *bw_undo_shared(bw_state *st, const char *tenant, const char *id, size_t cap,
                        size_t max_records, size_t budget, size_t entry_cost, double ttl) {
  if (strlen(id) != 32) return NULL;
  bw_undo *u = bw_undo_new(cap, max_records, NULL, 0);
  if (!u) return NULL;
  u->sh = bw_undostate_new(st, tenant, id, cap, u->max_records, budget, entry_cost, ttl);
  if (!u->sh) {
    bw_undo_unref(u);
    return NULL;
  }
  return u;
}

int bw_undo_is_shared(const bw_undo *u) { return u->sh != NULL; }

void bw_undo_drop(bw_undo *u) {
  pthread_mutex_lock(&mu);
  clear(u);
  int was = u->published;
  if (was) {
    for (bw_undo **p = &registry; *p; p = &(*p)->next_pub)
      if (*p == u) {
        *p = u->next_pub;
        break;
      }
    u->published = 0;
  }
  pthread_mutex_unlock(&mu);
  if (was) bw_undo_unref(u); /* the registry's reference */
}

static int record(bw_undo *u, const char *key, int kind, const char *before,
                  size_t len, long long size, long long cut, const char *after,
                  const char *group) {
  if (u->sh) return bw_undostate_record(u->sh, key, kind, before, len, size, cut, after, group);
  rec *r = calloc(1, sizeof *r);
  if (!r) return -BW_ENOMEM;
  if (group && !(r->e.group = strdup(group))) {
    free(r);
    return -BW_ENOMEM;
  }
  r->e.kind = kind;
  r->e.size = size;
  r->e.cut = cut;
  r->e.after = strdup(after ? after : "");
  int bytes = kind == BW_UNDO_CONTENT || kind == BW_UNDO_SPLICE;
  int fits = bytes && len <= u->cap;
  if (bytes && !fits) {
    r->e.kind = BW_UNDO_TOO_LARGE;
    r->e.size = (long long)len;
    r->e.cut = 0;
  }
  if (fits && (r->e.before = malloc(len ? len : 1))) {
    memcpy(r->e.before, before, len);
    r->e.len = r->cost = len;
  }
  if (!r->e.after || (fits && !r->e.before)) {
    bw_undo_entry_free(&r->e);
    free(r);
    return -BW_ENOMEM;
  }
  pthread_mutex_lock(&mu);
  /* room: the oldest records go first, this store's own */
  while (u->oldest && (u->bytes + r->cost > u->cap || u->count + 1 > u->max_records ||
                       (u->b && u->b->bytes + r->cost > u->b->cap)))
    forget(u, u->oldest);
  if (u->b && u->b->bytes + r->cost > u->b->cap) { /* others hold the budget */
    free(r->e.before);
    r->e.before = NULL;
    r->e.kind = BW_UNDO_NO_ROOM;
    r->e.size = (long long)r->cost;
    r->e.cut = 0;
    r->e.len = r->cost = 0;
  }
  slot *s = get_slot(u, key);
  if (!s) {
    pthread_mutex_unlock(&mu);
    bw_undo_entry_free(&r->e);
    free(r);
    return -BW_ENOMEM;
  }
  r->slot = s;
  r->older = s->top;
  if (s->top) s->top->newer = r;
  s->top = r;
  s->depth++;
  r->prev = u->newest;
  if (u->newest) u->newest->next = r;
  else u->oldest = r;
  u->newest = r;
  u->bytes += r->cost;
  u->count++;
  if (u->b) u->b->bytes += r->cost;
  int got = r->e.kind;
  pthread_mutex_unlock(&mu);
  return got;
}

int bw_undo_record(bw_undo *u, const char *key, int kind, const char *before,
                   size_t len, long long size, const char *after) {
  return record(u, key, kind, before, len, size, 0, after, NULL);
}

int bw_undo_record_group(bw_undo *u, const char *key, int kind,
                         const char *before, size_t len, long long size,
                         const char *after, const char *group) {
  return record(u, key, kind, before, len, size, 0, after, group);
}

size_t bw_undo_members(bw_undo *u, const char *group,
                       void (*each)(void *arg, const char *key), void *arg) {
  size_t n = 0;
  pthread_mutex_lock(&mu);
  for (rec *r = u->newest; r; r = r->prev)
    if (r->e.group && !strcmp(r->e.group, group)) {
      n++;
      each(arg, r->slot->key);
    }
  pthread_mutex_unlock(&mu);
  return n;
}

int bw_undo_group_put(bw_undo *u, const char *group, const char *const *keys, size_t n) {
  return u->sh ? bw_undostate_group_put(u->sh, group, keys, n) : BW_OK;
}

/* The keys of a group, newest first as bw_undo_members hands them */
typedef struct gkeys {
  char **v;
  size_t n, cap;
  int oom;
} gkeys;
static void gkeys_add(void *arg, const char *key) {
  gkeys *k = arg;
  if (k->oom) return;
  if (k->n == k->cap) {
    size_t cap = k->cap ? 2 * k->cap : 16;
    char **v = realloc(k->v, cap * sizeof *v);
    if (!v) {
      k->oom = 1;
      return;
    }
    k->v = v, k->cap = cap;
  }
  if (!(k->v[k->n] = strdup(key))) k->oom = 1;
  else k->n++;
}

long bw_undo_group_take(bw_undo *u, const char *group, void (*each)(void *arg, const char *key), void *arg) {
  if (u->sh) return bw_undostate_group_take(u->sh, group, each, arg);
  /* in the order of the change, as a shared store's record keeps them
   * (each is called outside the store's lock) */
  gkeys k = {0};
  bw_undo_members(u, group, gkeys_add, &k);
  for (size_t i = k.n; i-- > 0;) {
    if (!k.oom) each(arg, k.v[i]);
    free(k.v[i]);
  }
  free(k.v);
  return k.oom ? -bw_fail(BW_ENOMEM, "undo: out of memory") : (long)k.n;
}

int bw_undo_group_done(bw_undo *u, const char *group) {
  return u->sh ? bw_undostate_group_done(u->sh, group) : BW_OK;
}

int bw_undo_group_release(bw_undo *u, const char *group) {
  return u->sh ? bw_undostate_group_release(u->sh, group) : BW_OK;
}

int bw_undo_record_splice(bw_undo *u, const char *key, const char *before,
                          size_t len, long long at, long long cut,
                          const char *after) {
  return record(u, key, BW_UNDO_SPLICE, before, len, at, cut, after, NULL);
}

int bw_undo_peek(bw_undo *u, const char *key, bw_undo_entry *e) {
  if (u->sh) return bw_undostate_peek(u->sh, key, e);
  memset(e, 0, sizeof *e);
  pthread_mutex_lock(&mu);
  slot *s = find_slot(u, key);
  int rc = 0;
  if (s && s->top) {
    const bw_undo_entry *t = &s->top->e;
    *e = *t;
    e->before = NULL;
    e->group = t->group ? strdup(t->group) : NULL;
    e->after = strdup(t->after);
    if (t->before && (e->before = malloc(t->len ? t->len : 1)))
      memcpy(e->before, t->before, t->len);
    rc = e->after && (!t->before || e->before) && (!t->group || e->group) ? 1 : -BW_ENOMEM;
    if (rc < 0) bw_undo_entry_free(e);
  }
  pthread_mutex_unlock(&mu);
  return rc;
}

int bw_undo_pop(bw_undo *u, const char *key) {
  if (u->sh) return bw_undostate_pop(u->sh, key);
  pthread_mutex_lock(&mu);
  slot *s = find_slot(u, key);
  if (s && s->top) forget(u, s->top);
  pthread_mutex_unlock(&mu);
  return BW_OK;
}

int bw_undo_check(bw_undo *u, const char *key, size_t *depth) {
  if (u->sh) return bw_undostate_depth(u->sh, key, depth);
  *depth = bw_undo_depth(u, key);
  return BW_OK;
}

size_t bw_undo_depth(bw_undo *u, const char *key) {
  if (u->sh) {
    size_t d;
    return bw_undostate_depth(u->sh, key, &d) ? 0 : d;
  }
  pthread_mutex_lock(&mu);
  slot *s = find_slot(u, key);
  size_t d = s ? s->depth : 0;
  pthread_mutex_unlock(&mu);
  return d;
}

void bw_undo_totals(bw_undo *u, size_t *bytes, size_t *count,
                    size_t *budget_bytes) {
  if (u->sh) {
    *bytes = *count = 0;
    if (bw_undostate_budget(u->sh, budget_bytes)) *budget_bytes = 0;
    return;
  }
  pthread_mutex_lock(&mu);
  *bytes = u->bytes;
  *count = u->count;
  *budget_bytes = u->b ? u->b->bytes : 0;
  pthread_mutex_unlock(&mu);
}
