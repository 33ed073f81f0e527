/*
 * stagetree.h - what stage.c takes from stagetree.c: a tree listed (and
 * copied) by fds, and one file's bytes copied (a move across filesystems). Internal to the core; not installed.
 */
#ifndef BURROW_STAGETREE_H
#define BURROW_STAGETREE_H

#include "stage.h"

/* How deep a staged tree may go: its walk here, a copy's merge there. */
enum { MAX_DEPTH = 2048 };

/* A tree walked: where its entries are listed, and (copy) made. */
typedef struct tree {
  bw_stage *s;
  bw_root src;  /* the source's device and mount, for bw_same_mount */
  int copy;     /* make each entry under dst as well */
  char path[BW_PATH_MAX + 1];
  char *buf;    /* read/write fallback buffer */
} tree;

/* dirfd/name opened as a directory (O_NOFOLLOW): a link is never one. */
int bws_open_dir_at(int dirfd, const char *name);
/* Walk the directory dir: list (copy: into the directory dst) its tree
 * into s's entries. dev/mnt: the mount it must not leave. */
int bws_walk_tree(bw_stage *s, int dir, int dst, dev_t dev, uint64_t mnt,
                  int copy);
/* Copy the bytes of the open regular file in to out: a reflink, else
 * copy_file_range, else read/write (t's buffer). At most s->max_bytes. */
int bws_copy_bytes(tree *t, int in, int out, const struct stat *st,
                   uint64_t *copied);

#endif
