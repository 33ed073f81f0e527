/*
 * txn.h - a change of several files as one (txn.c): edit_files and the
 * packs' multi-file patches. Every new content is judged and computed by
 * the caller first; here it is staged beside its target under a staged
 * name no agent path reaches, then, with every directory involved held
 * (write.c's lock set) and every target's hash compared again, put in
 * place by one rename each under an intent record per root (stage.h, op
 * 'n'): a failure or a crash before the record's commit changes nothing,
 * one after it is finished (by the next open, if not at once).
 */
#ifndef BURROW_TXN_H
#define BURROW_TXN_H

#include "stage.h"

typedef struct bw_txn_file {
  /* in */
  const bw_root *r;     /* a write view (the judged directory) or a root */
  const char *rel;      /* beneath r: the final name (or missing parents and it) */
  const char *data;     /* the new content, or NULL: remove the file */
  size_t len;
  const char *expected; /* what it must still be: "sha256:<hex>" or "absent" */
  int create_dirs;      /* make missing parents of a new file */
  /* out */
  char hash[BW_HASH_STR];    /* its content now ("absent" once removed) */
  char current[BW_HASH_STR]; /* HASH_MISMATCH: what it was instead */
  int created;
  /* the commit's own */
  int dirfd;
  char name[BW_NAME_MAX + 1];
  char stage[BW_STAGE_NAME]; /* the new content staged, or (a removal) a link of the old */
  int exists, staged, done;
  struct stat st;
  char made[BW_PATH_MAX + 1]; /* the first parent it made ("" none) */
} bw_txn_file;

typedef struct bw_txn_opts {
  const bw_stop *stop;  /* asked once every lock is held, before the first
                           rename: a cancel there changes nothing */
  size_t max_compare;   /* largest current file hashed */
  unsigned lock_wait_ms;
} bw_txn_opts;

/* Put all n files in place, or none (across several roots: each root's
 * files all or none; at most 64 files in one root). On failure *failed is
 * the file the failure is about (n when it is about none), and *committed
 * (NULL: not asked) is 1 when the failure came after a commit point: the
 * files of that root are, or will be at the next open, all new. */
int bw_txn_commit(bw_txn_file *f, size_t n, const bw_txn_opts *o,
                  size_t *failed, int *committed);

#endif
