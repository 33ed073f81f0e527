/*
 * changes.h - burrow's own writes told through the state store
 * (changes.c): every instance sharing a store hears the changes the
 * others made, as inotify tells a process those of its machine.
 *
 * A change is (the root's mount, the in-root path, write or delete),
 * published on the tenant's channel "changes" of the store. A watcher
 * follows the store for its tenant (bw_changes_follow): a subscription
 * per store and tenant, shared by every watcher of the process, whose
 * messages one thread turns into marks on the watches they concern
 * (bw_watch_heard), never a path anyone opens. A message that does not
 * decode to a clean in-root path beneath a mount is dropped.
 */
#ifndef BURROW_CHANGES_H
#define BURROW_CHANGES_H

#include "state.h"
#include "watch.h"

#define BW_CHANGES_CHANNEL "changes"

/* Publish a change of rel (an in-root path, "." for the root) under mount
 * on tenant's channel; gone: removed or moved away (else written). One
 * the store cannot take (STORE_UNAVAILABLE) is owed as a gap, published
 * once it answers again (by the next change, or each second by the
 * feeds' thread), so every instance hears that it may have missed
 * changes. */
int bw_changes_publish(bw_state *s, const char *tenant, const char *mount, const char *rel,
                       int gone);
/* w hears tenant's changes published through s from now on (the
 * subscription is made with the first watcher of (s, tenant) and ended
 * with its last). A store without publish/subscribe: BW_INVALID_ARGUMENT. */
int bw_changes_follow(bw_watcher *w, bw_state *s, const char *tenant);

/* A message as it travels, and back: 1 with *mount, *rel and *gone
 * pointing into buf (which decode cuts with NULs), 0 for anything but a
 * clean change (an absolute normalised mount; rel "." or relative, no
 * empty, "." or ".." component). */
int bw_changes_encode(const char *mount, const char *rel, int gone, char *buf, size_t cap,
                      size_t *len);
int bw_changes_decode(char *buf, size_t len, const char **mount, const char **rel, int *gone);
/* The message of a gap an instance owed ("bw1\0g")? */
int bw_changes_is_gap(const char *buf, size_t len);

#endif
