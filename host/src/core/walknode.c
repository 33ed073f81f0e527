/*
 * walknode.c - the walker's directory nodes (walk.c): each a directory met,
 * its path below the start, the ignore rules it holds, counted references
 * (children alive) and fd references (children still to open themselves
 * from its fd, so a parent's fd closes once its last child has opened its
 * own); the pseudo nodes between the root and the start, whose ignore
 * files apply below; and the ignore match that climbs the nodes.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "walknode.h"

/* ---- nodes ---- */

void bww_node_release(node *n) {
  while (n && atomic_fetch_sub(&n->refs, 1) == 1) {
    node *p = n->parent;
    if (n->fd >= 0) close(n->fd);
    bw_ignore_free(n->ig);
    free(n->name);
    free(n->path);
    free(n->pre);
    free(n);
    n = p;
  }
}

/* One child less needs the directory's fd. */
void bww_fd_release(node *n) {
  if (atomic_fetch_sub(&n->fd_refs, 1) == 1 && n->fd >= 0) {
    close(n->fd);
    n->fd = -1;
  }
}

node *bww_node_new(node *parent, const char *name, const char *path,
                   size_t plen) {
  node *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  n->fd = -1;
  atomic_init(&n->refs, 1);
  atomic_init(&n->fd_refs, 1);
  n->path = malloc(plen + 1);
  n->name = name ? strdup(name) : NULL;
  if (!n->path || (name && !n->name)) {
    free(n->path);
    free(n->name);
    free(n);
    return NULL;
  }
  memcpy(n->path, path, plen);
  n->path[plen] = '\0';
  n->plen = plen;
  n->parent = parent;
  if (parent) {
    atomic_fetch_add(&parent->refs, 1);
    n->in_git = parent->in_git;
    n->nest_at = parent->nest_at;
    n->nest_root = parent->nest_root;
  }
  return n;
}

/* A node that will never be processed: give back what it holds. */
void bww_node_drop(node *n) {
  if (n->fd < 0 && n->parent && !n->parent->ancestor) bww_fd_release(n->parent);
  bww_node_release(n);
}

/* ---- ignore files ---- */

static bw_ignore *load_exclude(int dirfd) {
  int g = openat(dirfd, ".git", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (g < 0) return NULL;
  int i = openat(g, "info", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  close(g);
  if (i < 0) return NULL;
  bw_ignore *ig = bw_ignore_load(i, "exclude");
  close(i);
  return ig;
}

/* Rules of one directory: .ignore over .gitignore over info/exclude. */
bw_ignore *bww_dir_rules(int fd, int in_git, int has_git, int has_ignore,
                         int has_gitignore) {
  bw_ignore *ig = has_ignore ? bw_ignore_load(fd, ".ignore") : NULL;
  if (in_git && has_gitignore) ig = bw_ignore_merge(ig, bw_ignore_load(fd, ".gitignore"));
  if (has_git) ig = bw_ignore_merge(ig, load_exclude(fd));
  return ig;
}

/* Pseudo nodes for the directories between the root and the start, so
 * their ignore files apply below (as git does from a subdirectory). */
node *bww_ancestors(const bw_root *r, const char *rel) {
  char canon[BW_PATH_MAX + 1], pre[BW_PATH_MAX + 1];
  if (bw_canonical(r, rel, canon, sizeof canon) || !strcmp(canon, "."))
    return NULL;
  node *last = NULL;
  int in_git = 0;
  size_t cl = strlen(canon);
  for (size_t al = 0; al < cl;) {
    memcpy(pre, canon, al);
    pre[al] = '\0';
    int fd;
    struct stat st;
    if (bw_resolve(r, al ? pre : ".", 0, &fd, &st)) break;
    struct stat gs;
    int has_git = fstatat(fd, ".git", &gs, AT_SYMLINK_NOFOLLOW) == 0;
    in_git |= has_git;
    bw_ignore *ig = bww_dir_rules(fd, in_git, has_git && S_ISDIR(gs.st_mode), 1, 1);
    close(fd);
    node *n = bww_node_new(last, NULL, "", 0);
    if (last) bww_node_release(last); /* n holds it now */
    if (!n) {
      bw_ignore_free(ig);
      return NULL;
    }
    n->ancestor = 1;
    n->in_git = in_git;
    n->ig = ig;
    n->pre = strdup(canon + al + (al ? 1 : 0));
    if (!n->pre) {
      bww_node_release(n);
      return NULL;
    }
    last = n;
    const char *slash = strchr(canon + al + (al ? 1 : 0), '/');
    if (!slash) break;
    al = (size_t)(slash - canon);
  }
  return last;
}

/* 1 if the entry at path (relative to the start) is ignored. */
int bww_ignored(const node *n, const char *path, int is_dir) {
  char buf[2 * BW_PATH_MAX + 2];
  for (const node *a = n; a; a = a->parent) {
    if (!a->ig) continue;
    const char *sub = path + (a->plen ? a->plen + 1 : 0);
    if (a->ancestor) {
      size_t pl = strlen(a->pre), l = strlen(path);
      if (pl + l + 2 > sizeof buf) continue;
      memcpy(buf, a->pre, pl);
      buf[pl] = '/';
      memcpy(buf + pl + 1, path, l + 1);
      sub = buf;
    }
    int m = bw_ignore_match(a->ig, sub, is_dir);
    if (m) return m > 0;
  }
  return 0;
}
