/*
 * watch.h - file watch on inotify (watch.c): watches added on objects a
 * handle resolved, bounded in number, events coalesced per watch.
 */
#ifndef BURROW_WATCH_H
#define BURROW_WATCH_H

#include "core.h"

typedef struct bw_watcher bw_watcher;

/* What happened to a watched object since it was last reported (bits). */
enum {
  BW_WATCH_CHANGED = 1, /* a file's bytes, metadata or name were touched */
  BW_WATCH_LIST = 2,    /* a watched directory gained or lost an entry */
  BW_WATCH_GONE = 4,    /* the watched directory itself went away */
};

typedef struct bw_watch_event {
  int id;
  int what; /* BW_WATCH_* bits */
} bw_watch_event;

/* max: most watches at once (adds past it are BW_TOO_LARGE); interval_ms:
 * a watch is reported at most once per interval. NULL if out of fds or
 * memory (errno set). Every watcher of the process shares one inotify
 * instance (made with the first watcher, closed with the last), and
 * thread-safe: reading it marks the watches of all watchers. */
bw_watcher *bw_watch_new(int max, int interval_ms);
/* Drop a reference: the watcher (its watches, its fd) goes with the last. */
void bw_watch_free(bw_watcher *w);
/* Publish w under a random id (32 hex digits in id[33]) that any thread
 * finds it by (an HTTP session's watches, served by any worker); the
 * registry holds a reference until bw_watch_drop. */
int bw_watch_publish(bw_watcher *w, char id[33]);
/* A new reference to the watcher published as id, or NULL. */
bw_watcher *bw_watch_find(const char *id);
void bw_watch_drop(bw_watcher *w);
/* The process's inotify fd, readable when events wait for any watcher
 * (poll it; never read it: bw_watch_read does). */
int bw_watch_fd(const bw_watcher *w);
int bw_watch_count(const bw_watcher *w);

/* Watch the object h resolved (it must exist): a regular file is watched
 * through its holding directory (so an atomic replace or a re-creation
 * under its name is seen), a directory by itself. The object is found
 * again beneath the handle's directory fd and must be the one judged
 * (dev, ino), else BW_EAGAIN. *id: the watch, for bw_watch_remove. */
int bw_watch_add(bw_watcher *w, const bw_handle *h, int *id);
/* The same, knowing where the object is (its root's mount; the in-root
 * path is the handle's), so changes heard through the state store reach
 * it (bw_watch_heard); inotify 0: no inotify watch (a root on a network
 * volume the operator marked so): it hears only those. */
int bw_watch_add_at(bw_watcher *w, const bw_handle *h, const char *mount, int inotify, int *id);
/* Count w's watches against the budget name, cap watches at most across
 * every watcher naming it (a tenant's): an add past it is BW_TOO_LARGE.
 * Once per watcher, before its first add. */
int bw_watch_budget(bw_watcher *w, const char *name, int cap);
int bw_watch_remove(bw_watcher *w, int id);
/* A short text kept with watch id for its owner (a folder's view: a
 * digest of what its listing shows, so a change of entries the policies
 * hide is told from one they show, by any worker of the session): set it
 * when set is not NULL (cut to BW_WATCH_VIEW - 1 bytes), then copy it
 * into out ("" until set). BW_INVALID_ARGUMENT for no such watch. */
#define BW_WATCH_VIEW 128
int bw_watch_view(bw_watcher *w, int id, const char *set, char out[BW_WATCH_VIEW]);

/* Drain the inotify fd: mark the watches the events touch, in every
 * watcher (a queue overflow marks them all). Memory stays a flag per watch however many
 * events come. Returns the number of events read, or -1 (errno). */
int bw_watch_read(bw_watcher *w);
/* The marked watches whose interval has passed at now_ms (a monotonic
 * clock in ms), at most max into out; their marks are cleared. *next_ms:
 * ms until the next marked watch is due, -1 if none waits. */
int bw_watch_due(bw_watcher *w, double now_ms, bw_watch_event *out, int max,
                 double *next_ms);

/* ---- changes heard through the state store (changes.c) ----
 * A watcher in a scope (a feed of changes.c, opaque here, and a tenant) hears the
 * changes published there: bw_watch_heard marks its watches a change of
 * (mount, rel) concerns, as inotify would have (the file, a folder's
 * entry, a folder above either), unless inotify reported the same
 * in-root path of that watch within BW_WATCH_ECHO_MS (the echo of a change
 * it saw itself); gone: the path was removed or moved away. A gap (the
 * store says changes may have been missed) marks every watch in the
 * scope, as an inotify overflow does. hold lives as long as the watcher:
 * release(hold) runs when it is freed (or a new scope replaces it). */
#define BW_WATCH_ECHO_MS 1000
void bw_watch_scope(bw_watcher *w, const void *scope, const char *tenant, void *hold,
                    void (*release)(void *));
int bw_watch_heard(const void *scope, const char *tenant, const char *mount, const char *rel,
                   int gone);
void bw_watch_heard_gap(const void *scope, const char *tenant);

#endif
