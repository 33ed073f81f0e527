/*
 * walknode.h - the walker's directory nodes (walknode.c), for walk.c.
 * Internal to the core; not installed.
 */
#ifndef BURROW_WALKNODE_H
#define BURROW_WALKNODE_H

#include "search.h"

/* A directory met by the walk (or, ancestor, one between the root and
 * the start, holding its ignore rules only). */
typedef struct node {
  struct node *parent;
  char *name;       /* to open from the parent; NULL for the start */
  char *path;       /* relative to the start, "" for the start */
  size_t plen;
  char *pre;        /* ancestors above the start: the start's path from here */
  bw_ignore *ig;
  int in_git;
  int ancestor;     /* above the start: holds rules only */
  size_t nest_at;   /* below a nested root: where its in-root paths start
                       in an entry's path (0: not below one) */
  int nest_root;    /* and that root (bw_nest's index of it) */
  int fd;           /* open for reading, -1 until then */
  _Atomic int fd_refs; /* children that still have to open themselves, +1 */
  _Atomic int refs;    /* children alive, +1 */
} node;

/* A new node below parent (NULL: the start), holding a reference to it. */
node *bww_node_new(node *parent, const char *name, const char *path,
                   size_t plen);
/* One reference less; the last frees the node, and so on up. */
void bww_node_release(node *n);
/* One child less needs the directory's fd: the last closes it. */
void bww_fd_release(node *n);
/* A node that will never be processed: give back what it holds. */
void bww_node_drop(node *n);
/* Rules of one directory: .ignore over .gitignore over info/exclude. */
bw_ignore *bww_dir_rules(int fd, int in_git, int has_git, int has_ignore,
                         int has_gitignore);
/* Pseudo nodes for the directories between the root and the start. */
node *bww_ancestors(const bw_root *r, const char *rel);
/* 1 if the entry at path (relative to the start) is ignored. */
int bww_ignored(const node *n, const char *path, int is_dir);

#endif
