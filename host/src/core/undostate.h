/*
 * undostate.h - the records of an undo store kept in the deployment's
 * state store (undostate.c), so an edit made through one instance is
 * undone through any other: undo.c's store-backed mode (bw_undo_shared)
 * calls these, its callers see the same bw_undo interface.
 */
#ifndef BURROW_UNDOSTATE_H
#define BURROW_UNDOSTATE_H

#include <stddef.h>

#include "state.h"
#include "undo.h"

typedef struct bw_undostate bw_undostate;

/* Every key's record under tenant, "undo/<id>/<sha256 of the key>", ttl
 * seconds after its last change; the tenant's "undo/bytes" counter (a
 * window of a day) holds what its records are charged, at most budget
 * (0: none); a record is charged at least entry_cost. NULL when out of
 * memory. Takes a reference on st. */
bw_undostate *bw_undostate_new(bw_state *st, const char *tenant, const char *id, size_t cap,
                               size_t max_records, size_t budget, size_t entry_cost, double ttl);
void bw_undostate_free(bw_undostate *x);
/* As undo.h's, with the store's failure as a negative bw_code (its detail
 * set): -BW_STORE_UNAVAILABLE when it does not answer. */
int bw_undostate_record(bw_undostate *x, const char *key, int kind, const char *before, size_t len,
                        long long size, long long cut, const char *after, const char *group);
int bw_undostate_peek(bw_undostate *x, const char *key, bw_undo_entry *e);
int bw_undostate_pop(bw_undostate *x, const char *key);
int bw_undostate_depth(bw_undostate *x, const char *key, size_t *depth);
/* A change of several files (group, as each file's entry carries it):
 * its files' keys in a record of its own (put at its change), which an
 * undo holds (a mark of BW_UNDO_GROUP_HOLD seconds): each(arg, key) for
 * every key and their count when this call holds it, 0 when it is not
 * there (undone, or expired), -BW_EAGAIN while another call holds it,
 * -code on a failure. Then done (the undo went through: the record
 * dropped, its charge given back, the hold let go) or release (it
 * failed: the hold let go, the record kept). */
int bw_undostate_group_put(bw_undostate *x, const char *group, const char *const *keys, size_t n);
long bw_undostate_group_take(bw_undostate *x, const char *group, void (*each)(void *arg, const char *key),
                             void *arg);
int bw_undostate_group_done(bw_undostate *x, const char *group);
int bw_undostate_group_release(bw_undostate *x, const char *group);
/* The tenant's charged bytes (the counter). */
int bw_undostate_budget(bw_undostate *x, size_t *bytes);

#endif
