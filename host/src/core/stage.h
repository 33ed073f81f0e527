/*
 * stage.h - subtree copy, move and remove, staged (stage.c).
 *
 * A tree is first put under a private name beside where it goes (a copy
 * is made there; a move's or a remove's source is renamed there), its
 * entries are listed for the policies to judge, and only then is it put
 * in place by one rename (a remove: unlinked), or put back as it was. No
 * agent path reaches a staged name (bw_stage_name: the resolver refuses
 * it, every walk and listing leaves it out), so nothing can be added to a
 * staged tree between its judgement and its rename.
 */
#ifndef BURROW_STAGE_H
#define BURROW_STAGE_H

#include "edit.h"

/* The staged names: ".burrow-stage.<kind>.<pid>.<16 hex>". */
#define BW_STAGE_PREFIX ".burrow-stage."
enum { BW_STAGE_NAME = 64 };

/* Is the directory entry name one of burrow's staged names? (root.c:
 * lexical, so the resolver and the walks below the stager ask it) */
int bw_stage_name(const char *name);
/* Does any component of the path rel name a staged tree? */
int bw_stage_in_path(const char *rel);

/*
 * Intent records (intent.c): what makes a staged change survive a crash.
 *
 * Before the first step that a crash would leave half-done, the owner
 * writes a record beside its stage (".burrow-stage.i.PID.HEX" in the
 * same directory; a staged name, so no agent reaches it) saying what the
 * stage is for: an op letter and its names, all in that directory. The
 * record is complete before it has its name; it is synced (data and
 * directory, with its pointer) at once for 'm', 'r' and 'x', whose next
 * step renames the source aside, and at the commit for 'c' and 'n',
 * which until then have only made what recovery drops. Its owner holds
 * an flock on it for as long as the operation runs: a record whose lock
 * can be taken belongs to a process that is gone (pid reuse cannot fool
 * it). A pointer to the record's directory
 * (its in-root path and dev/ino) goes in the root's journal
 * (ROOT/.burrow-stage.j/), so a workspace's open finds every record of
 * its roots without a walk.
 *
 * The record has a state: STAGING, then (bw_intent_commit, one durable
 * byte) COMMITTED. Recovery of a dead owner's record goes back while it
 * is STAGING and forward once it is COMMITTED:
 *
 *   op  names                   STAGING (back)            COMMITTED (forward)
 *   'c' stage, to_name          the stage removed         the stage merged into
 *                                                         to_name, then removed
 *   'm' stage, from_name, ...   the stage renamed back    (never: the commit is
 *                                to from_name              one rename)
 *   'r' stage, from_name        the stage renamed back    the stage removed
 *   'x' aside, from_name        the aside renamed back    the aside removed
 *   'n' src1, dst1, src2, ...   each src still there      each src still there
 *                                unlinked                  renamed over its dst
 *                                                          (a removal's src, a
 *                                                          "g." name: the dst
 *                                                          unlinked if it is that
 *                                                          file or gone, then it)
 *
 * 'n' is "a set of renames to finish or undo" (an atomic multi-file
 * edit): prepare every src (each a staged name, bw_stage_name: recovery
 * deletes nothing else, but a removal's dst), begin the record,
 * bw_intent_commit, do the renames, bw_intent_end. A removal's src is a
 * BW_STAGE_GONE name (".burrow-stage.g."), made as a second link of its
 * dst: forward unlinks the dst (when it is still that file), then the
 * src; the dst first, so a crash between leaves a src that still says so. At most 128 names (64 pairs)
 * and 64 KiB. srcs and dsts are paths beneath the record's directory
 * (resolved there, no link followed); srcs' last components must be
 * staged names. A stage op's names are single names.
 *
 * Recovery runs when a workspace opens (bw_intent_recover_root, each
 * read-write root) and at each staged operation, in the directories it
 * stages in (bw_intent_recover_dir) and through its root's journal.
 */
typedef enum bw_intent_state { BW_INTENT_STAGING = 's', BW_INTENT_COMMITTED = 'c' } bw_intent_state;

typedef struct bw_intent {
  int dir;  /* the directory the record is in (our own dup), -1: none */
  int fd;   /* the record, flock'd while the operation runs */
  int jdir; /* the root's journal directory, -1: no pointer */
  int jfd;  /* the pointer, flock'd as the record is */
  int jmade, synced; /* the journal was made for it; all of it is durable */
  char name[BW_STAGE_NAME + 8];
} bw_intent;

#define BW_INTENT_NONE ((bw_intent){.dir = -1, .fd = -1, .jdir = -1, .jfd = -1})

/* Write the record for op with its n names beside dirfd's entries,
 * durably and locked; top (the root's fd, or -1) and in_root (dirfd's
 * path in it, "" for the root) place its pointer in the root's journal. */
int bw_intent_begin(bw_intent *it, int top, const char *in_root, int dirfd, char op,
                    const char *const *names, size_t n);
/* From here recovery goes forward: the state byte written and synced. */
int bw_intent_commit(bw_intent *it);
/* Done (or cleanly undone): the record and its pointer removed, the lock
 * released. Idempotent. */
void bw_intent_end(bw_intent *it);
/* Let go without removing it (what it names is not settled): a later
 * recovery finishes it. Idempotent. */
void bw_intent_release(bw_intent *it);

/* (recover.c) Recover the records of dead owners in the directory open at dirfd
 * (an O_PATH fd will do); returns how many are left (their owners
 * alive, or their recovery failed). */
size_t bw_intent_recover_dir(int dirfd);
/* The same for the root's own folder and every record the journal of
 * root r points to. */
size_t bw_intent_recover_root(const bw_root *r);
/* What a root's open settles: bw_intent_recover_root, then the leftovers
 * of killed writers and copies in its folder swept (bw_sweep_entry), from
 * one read of that folder (a root of 2,000 entries took ~0.4 ms a read). */
size_t bw_intent_settle_root(const bw_root *r);
/* The root's journal removed if it is empty (a workspace's close). */
void bw_intent_tidy(const bw_root *r);

/* The two above as the write path (write.c's temp sweep) and the stager
 * reach them: recover.c is above the stager, so they ask it through one
 * hook, which recover.c sets as the library loads. bw_settle: dirfd's
 * records, then (journal not NULL) those its journal points to; nothing
 * while no hook is set. */
typedef void (*bw_settle_fn)(int dirfd, const bw_root *journal);
void bw_settle_hook(bw_settle_fn fn);
void bw_settle(int dirfd, const bw_root *journal);

/* Where a record about rel (beneath r) points from: the fd of the root
 * it is in (not owned; a write view's innermost root) and, in at, the
 * in-root path of rel's directory. -1: r is anchored with no chain. */
int bw_stage_where(const bw_root *r, const char *rel, char at[BW_PATH_MAX + 1]);

/* One record's names, parsed (recover.c hands it to stage.c). */
typedef struct bw_intent_rec {
  char op, state;
  size_t n;
  const char *names[128];
} bw_intent_rec;
/* Settle a stage op's record ('c', 'm', 'r', 'x') in dirfd: 0 when done. */
int bw_stage_recover(int dirfd, const bw_intent_rec *rec);

typedef enum bw_stage_kind {
  BW_STAGE_COPY = 1,
  BW_STAGE_MOVE,
  BW_STAGE_REMOVE,
  BW_STAGE_FILES, /* a change of several files (txn.c): one file each */
  BW_STAGE_GONE   /* its removals: a second link of the file ('n' below) */
} bw_stage_kind;

/* A fresh staged name of that kind (out: BW_STAGE_NAME bytes). */
void bw_stage_newname(char out[BW_STAGE_NAME], int kind);

typedef enum bw_stage_state {
  BW_STAGE_PENDING = 1, /* staged: judge it, then commit or abort */
  BW_STAGE_DONE,        /* in place (or, for a remove, gone) */
  BW_STAGE_UNDONE       /* put back: source and destination as they were */
} bw_stage_state;

/* One entry of the staged tree, below its top ("a/b"). */
typedef struct bw_stage_entry {
  size_t off; /* of its path in the stage's path buffer */
  char type;  /* 'f' file, 'd' directory, 'l' link */
  uint64_t size;
  uint64_t dev, ino;
  uint64_t nlink;
} bw_stage_entry;

typedef struct bw_stage {
  int kind, state;
  /* options, set before staging (bw_stage_init) */
  int overwrite;
  size_t max_bytes;   /* largest file a copy takes (0: no limit) */
  size_t max_entries; /* past this: TOO_LARGE, nothing done */
  bw_stop stop;       /* asked at each entry while staging */
  /* every 1024 entries: nonzero stops the staging as a cancel does (the
   * caller looked at a cancel the flag does not carry: a task's record) */
  int (*progress)(void *arg, size_t entries);
  void *progress_arg;
  /* where the staged tree is: home/name */
  int home;
  char name[BW_NAME_MAX + 1]; /* a staged name, or (direct) the source's own */
  int is_dir; /* the staged object is a directory */
  /* move and remove: where it came from (put back there on abort) */
  int from;
  char from_name[BW_NAME_MAX + 1];
  /* copy and move: where it goes */
  int to;
  char to_name[BW_NAME_MAX + 1];
  /* the tree lock (write.c): a move's or a remove's source held
   * exclusively from before it is renamed aside to the end; the commit
   * holds the destination's chain from to_top (its root) along to_at */
  int lock;
  bw_root to_top;
  char to_at[BW_PATH_MAX + 1];
  int merge; /* a copy into an existing directory (overwrite) */
  int direct; /* a move of a non-directory: renamed straight at the commit */
  /* a move across filesystems: the source renamed aside (from/xname),
   * copied into the stage beside the destination, removed on commit */
  int xdev;
  char xname[BW_STAGE_NAME];
  uint64_t root_dev, root_mnt; /* a remove never leaves the root's mount */
  /* the entries, and what a copy made */
  bw_stage_entry *v;
  size_t n, cap;
  char *paths;
  size_t plen, pcap;
  size_t files, dirs, links, skipped;
  uint64_t bytes;
  char hash[BW_HASH_STR]; /* a single file copy's content hash */
  char restored[BW_NAME_MAX + 1]; /* abort: the name the source went back under, if not its own */
  int clone_off, cfr_off; /* reflinks / copy_file_range refused here: not tried again */
  /* the intent records (above): beside the stage (a copy's, a move's or
   * a remove's), and across filesystems the copy's beside the destination */
  bw_intent intent, intent_to;
} bw_stage;

/* Zero s and set its options; stop may be NULL. */
void bw_stage_init(bw_stage *s, int overwrite, size_t max_bytes,
                   size_t max_entries, const bw_stop *stop);

/* Stage a copy of src (a directory: its whole tree; anything else is
 * copied at once through bw_copy and s is DONE) beside dst. */
int bw_stage_copy(const bw_root *rs, const char *src, const bw_root *rd,
                  const char *dst, int recursive, bw_stage *s);
/* Stage a move: src renamed to a staged name in its own directory (and,
 * across filesystems, copied into a stage beside dst). */
int bw_stage_move(const bw_root *rs, const char *src, const bw_root *rd,
                  const char *dst, bw_stage *s);
/* Stage a remove: a directory (recursive) renamed to a staged name in its
 * own directory; anything else is removed at once through bw_remove and
 * s is DONE. */
int bw_stage_remove(const bw_root *r, const char *rel, int recursive,
                    const char *expected_hash, bw_stage *s);

/* The path of entry i below the staged top. */
const char *bw_stage_path(const bw_stage *s, size_t i);

/* Put a PENDING stage in place: one sync of its filesystem, one rename
 * (a merge: one per entry the destination lacks), the directories
 * synced; a remove unlinks the staged tree. On failure the stage is
 * undone where it can be, and the detail says what is where. */
int bw_stage_commit(bw_stage *s);
/* Undo a PENDING stage: a copy's stage removed, a move's or a remove's
 * source renamed back (under s->restored when its name was taken). */
int bw_stage_abort(bw_stage *s);
/* Abort if still pending, and free. */
void bw_stage_free(bw_stage *s);

/* Remove the copy stages of processes that are gone, in the directory
 * open at dirfd (write.c's temp sweep calls it; tree.c, below both). */
void bw_stage_sweep(int dirfd, const char *name);

#endif
