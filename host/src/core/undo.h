/*
 * undo.h - undo stores (undo.c): what each file was before a session's
 * changes, newest first per path, bounded in bytes and in records, and
 * charged to a budget that several stores share (a tenant's). Plain C and
 * thread-safe: a store lives as long as its references, and once
 * published under an id any thread finds it again (an HTTP session's
 * calls run on any worker; its store stays here, outside every Lua state).
 */
#ifndef BURROW_UNDO_H
#define BURROW_UNDO_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"

typedef struct bw_undo bw_undo;

/* What a record keeps of the file before the change. */
enum {
  BW_UNDO_CONTENT = 1, /* its bytes */
  BW_UNDO_ABSENT,      /* it did not exist */
  BW_UNDO_TRUNCATE,    /* its size (an append: cut back to it) */
  BW_UNDO_TOO_LARGE,   /* over the store's cap: a marker with its size */
  BW_UNDO_NO_ROOM,     /* the shared budget was full: a marker with its size */
  BW_UNDO_SPLICE,      /* the bytes a change replaced: at offset size, what
                          was there before, where the change put cut bytes */
};

typedef struct bw_undo_entry {
  int kind;
  char *before; /* BW_UNDO_CONTENT, _SPLICE: the bytes (malloc'd copy) */
  size_t len;
  long long size;
  long long cut; /* BW_UNDO_SPLICE: the bytes at size the change wrote */
  char *after; /* the content hash the change left (malloc'd copy) */
  char *group; /* a change of several files (edit_files): its id, which
                  every file's record of it carries; NULL otherwise */
} bw_undo_entry;

/* An entry's copies freed, the entry zeroed. Here with its type, below
 * undo.c and the state-store records (undostate.c) that both hand out
 * entries, so neither calls the other for it. */
static inline void bw_undo_entry_free(bw_undo_entry *e) {
  free(e->before);
  free(e->after);
  free(e->group);
  memset(e, 0, sizeof *e);
}

/* A store of at most cap bytes and max_records records; budget (NULL:
 * none) names a process-wide byte budget of budget_cap bytes that every
 * store naming it shares. NULL when out of memory. One reference. */
bw_undo *bw_undo_new(size_t cap, size_t max_records, const char *budget,
                     size_t budget_cap);
void bw_undo_ref(bw_undo *u);
void bw_undo_unref(bw_undo *u);
/* Its id (32 hex digits, in id[33]): the store is registered under it, and
 * holds one more reference, until bw_undo_drop. -1 when out of memory. */
int bw_undo_publish(bw_undo *u, char id[33]);
/* A new reference to the store published as id, or NULL. */
bw_undo *bw_undo_find(const char *id);
/* The store published as id (32 characters), made and published with the
 * given caps when there is none: one store that callers which name it the
 * same find, whichever thread comes first (an HTTP tenant's stateless
 * client, whose requests have no session). A new reference, or NULL when
 * out of memory or id is not 32 characters long. */
bw_undo *bw_undo_named(const char *id, size_t cap, size_t max_records,
                       const char *budget, size_t budget_cap);
/* A store whose records live in the deployment's state store st
 * (undostate.c): every instance that names it (tenant, id: 32 characters,
 * the same on all of them) sees one history. Each key's stack is one
 * record of at most 1 MiB (and cap bytes of a change, max_records
 * records), expiring ttl seconds (at most a day) after its last change;
 * the tenant's records are charged to its "undo/bytes" counter up to
 * budget bytes (0: no budget), each at least entry_cost. The operations
 * below go to the store: one that does not answer is a negative
 * -BW_STORE_UNAVAILABLE. NULL when out of memory or id is not 32
 * characters long. */
bw_undo *bw_undo_shared(bw_state *st, const char *tenant, const char *id, size_t cap,
                        size_t max_records, size_t budget, size_t entry_cost, double ttl);
/* 1 when its records live in a state store. */
int bw_undo_is_shared(const bw_undo *u);
/* Unpublish it and forget every record (the session ended; a shared
 * store's records are left to expire). */
void bw_undo_drop(bw_undo *u);

/* Record a change of key (the before bytes are copied). The oldest records
 * go first until the store fits its cap, its record count and the budget;
 * a record that cannot fit is kept as a marker (TOO_LARGE over the cap,
 * NO_ROOM when the budget is spent by other stores). Returns the kind
 * kept, or a negative bw_code (its detail set): -BW_ENOMEM, and for a
 * shared store -BW_STORE_UNAVAILABLE when the store does not answer. */
int bw_undo_record(bw_undo *u, const char *key, int kind, const char *before,
                   size_t len, long long size, const char *after);
/* Record a change that replaced len bytes at offset at with cut bytes
 * (a notebook's cell): before holds the bytes it replaced, and the whole
 * file is the file after the change with them put back, so the record
 * costs the cell, not the file. As bw_undo_record otherwise (over the cap
 * or the budget: a marker with len as its size). */
int bw_undo_record_splice(bw_undo *u, const char *key, const char *before,
                          size_t len, long long at, long long cut,
                          const char *after);
/* bw_undo_record for one file of a change of several (edit_files): each
 * file's record carries the change's group, so undo finds them all. */
int bw_undo_record_group(bw_undo *u, const char *key, int kind,
                         const char *before, size_t len, long long size,
                         const char *after, const char *group);
/* each(arg, key) for every record of the group, newest first (under the
 * store's lock: each must not call the store); how many there were. */
size_t bw_undo_members(bw_undo *u, const char *group,
                       void (*each)(void *arg, const char *key), void *arg);
/* The group's files for one undo of the change. A shared store keeps them
 * in a record of the group (bw_undo_group_put, after the change's files
 * are recorded; a no-op in this process's store), which the undo holds
 * (a mark in the store that lapses by itself after BW_UNDO_GROUP_HOLD
 * seconds): so of two instances undoing one change at once, one undoes
 * every file and the other none. each(arg, key) for every file, in the
 * order of the change, and their count; 0 when the record is not there
 * (undone, or expired); -BW_EAGAIN while another call holds it; another
 * negative bw_code when the store does not answer. This process's store:
 * bw_undo_members, oldest first. Then bw_undo_group_done when the undo
 * went through (the record dropped), bw_undo_group_release when it failed
 * (the hold let go, the record kept for a later undo); either a no-op in
 * this process's store. An undo that cannot let go (the store stopped
 * answering) loses nothing: its hold lapses. */
#define BW_UNDO_GROUP_HOLD 10.0
int bw_undo_group_put(bw_undo *u, const char *group, const char *const *keys, size_t n);
long bw_undo_group_take(bw_undo *u, const char *group, void (*each)(void *arg, const char *key), void *arg);
int bw_undo_group_done(bw_undo *u, const char *group);
int bw_undo_group_release(bw_undo *u, const char *group);
/* The newest record of key, copied into *e (free with bw_undo_entry_free):
 * 1, or 0 when there is none; a negative bw_code as record's. */
int bw_undo_peek(bw_undo *u, const char *key, bw_undo_entry *e);
/* Forget the newest record of key (it was undone): BW_OK or a bw_code. */
int bw_undo_pop(bw_undo *u, const char *key);
/* Records of key left (0 too when a shared store does not answer). */
size_t bw_undo_depth(bw_undo *u, const char *key);
/* The same, with the store's answer: BW_OK or why it has none. Asked
 * before a change that will be recorded, so a store that is down refuses
 * the change rather than lose its undo (and the record read is kept for
 * the record that follows: no second round trip). */
int bw_undo_check(bw_undo *u, const char *key, size_t *depth);
/* Bytes and records the store holds; the budget's bytes in all (a shared
 * store: 0 and 0, and its tenant's counter). */
void bw_undo_totals(bw_undo *u, size_t *bytes, size_t *count,
                    size_t *budget_bytes);

#endif
