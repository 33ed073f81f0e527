/*
 * txn.c - a change of several files as one (txn.h).
 *
 * The caller has judged every file and computed every new content. Here:
 * each target's directory is resolved (missing parents of a new file made
 * first, when asked); every directory involved is held at once with its
 * chain (write.c's lock set), so no burrow writer and no subtree move gets
 * between the checks and the renames; the cancel flag is asked; what
 * crashed changes of files left in each root is settled; every staged
 * name is chosen and listed in an intent record per root (intent.c, op
 * 'n', in the root's folder) before any is made; every target is checked
 * again (a regular file with one link, or absent) and its hash compared
 * with the one judged; each new content is written to its staged name
 * beside its target (".burrow-stage.e.<pid>.<hex>": the resolver refuses
 * such names and walks skip them, so no agent reaches one) and synced; a
 * removal's staged name is a second link of the file (".burrow-stage.g.").
 * Then the commit point: each record's state byte, synced. Before it a
 * failure (or a crash, at the next open) drops the staged names; after
 * it one rename each (a removal: the file unlinked, then its link), the
 * folders synced, the records removed, and nothing undone: what fails
 * there is finished by the record's recovery, at once or at the next
 * open. So a crash anywhere leaves each root's files all old or all new.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "txn.h"

/* The shallowest missing directory of parent ("a/b/"), into out. */
static void first_missing(const bw_root *r, const char *parent, char *out) {
  char p[BW_PATH_MAX + 1];
  out[0] = '\0';
  for (size_t i = 0; parent[i]; i++) {
    if (parent[i] != '/' || i == 0) continue;
    memcpy(p, parent, i);
    p[i] = '\0';
    int fd;
    struct stat st;
    int rc = bw_resolve(r, p, 0, &fd, &st);
    if (rc == BW_OK) close(fd);
    if (rc == BW_ENOENT) {
      memcpy(out, p, i + 1);
      return;
    }
  }
}

/* Take away the directories a new file's parent needed (empty ones only:
 * rmdir refuses the rest), deepest first, up to f->made. */
static void unmake(bw_txn_file *f) {
  char path[BW_PATH_MAX + 1], name[BW_NAME_MAX + 1];
  if (!f->made[0] || bw_parent_path(f->rel, path)) return;
  for (;;) {
    size_t n = strlen(path);
    while (n > 0 && path[n - 1] == '/') path[--n] = '\0';
    if (n == 0) return;
    int fd, trailing;
    if (bw_resolve_parent(f->r, path, &fd, name, &trailing)) return;
    unlinkat(fd, name, AT_REMOVEDIR);
    close(fd);
    if (!strcmp(path, f->made)) return;
    while (n > 0 && path[n - 1] != '/') path[--n] = '\0';
  }
}

/* The directory f lands in, open as f->dirfd, and its final name. */
static int open_parent(bw_txn_file *f) {
  if (f->r->readonly) return bw_fail(BW_READ_ONLY_ROOT, NULL);
  if (!f->expected) return bw_fail(BW_INVALID_ARGUMENT, "a change of files needs each file's hash");
  int trailing = 0;
  int rc = bw_resolve_parent(f->r, f->rel, &f->dirfd, f->name, &trailing);
  if (rc == BW_ENOENT && f->data && f->create_dirs) {
    char parent[BW_PATH_MAX + 1];
    if (bw_parent_path(f->rel, parent)) return bw_fail(BW_INVALID_ARGUMENT, "name too long");
    first_missing(f->r, parent, f->made);
    rc = bw_mkdirs_held(f->r, parent); /* made durable one by one */
    if (rc) f->made[0] = '\0';         /* it took its own away */
    else rc = bw_resolve_parent(f->r, f->rel, &f->dirfd, f->name, &trailing);
  }
  if (rc) f->dirfd = -1;
  if (!rc && trailing) rc = bw_fail(BW_EISDIR, NULL);
  return rc;
}

/* Two entries naming one place (a path given twice, or spelled two ways). */
static int same_place(const bw_txn_file *a, const bw_txn_file *b) {
  struct stat x, y;
  return !strcmp(a->name, b->name) && fstat(a->dirfd, &x) == 0 &&
         fstat(b->dirfd, &y) == 0 && x.st_dev == y.st_dev && x.st_ino == y.st_ino;
}

/* The new content written and synced under a staged name beside it. */
static int stage_one(bw_txn_file *f) {
  /* under the name its record lists (random: taken only by a fluke) */
  int fd = openat(f->dirfd, f->stage, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) {
    int e = errno;
    f->stage[0] = '\0'; /* not ours to unlink */
    return e == EEXIST ? bw_fail(BW_EAGAIN, "a staged name was taken; retry") : bw_code_from_errno(e);
  }
  f->staged = 1;
  int rc = bw_write_all(fd, f->data, f->len);
  if (!rc) rc = bw_write_meta(fd, &f->st, f->exists);
  if (!rc && fsync(fd) < 0) {
    int e = errno;
    rc = e == ENOSPC || e == EDQUOT ? bw_code_from_errno(e) : bw_fail(BW_EIO, "fsync failed; nothing was changed");
  }
  close(fd);
  return rc;
}

/* ---- the intent records (stage.h, op 'n') ----
 *
 * One record per root, in the root's own folder (a workspace's open reads
 * it there; no pointer needed), its names the in-root paths of each
 * file's staged name and final name. It is written, with every staged
 * name chosen, before the first staged file is made, so every staged name
 * of the change is listed in a record from the moment it exists (the
 * folder sweep leaves these names to the records: tree.c). Committed (one
 * durable byte) once every file is staged and checked: from there
 * recovery goes forward, so nothing is undone after it. */

enum { ROOT_FILES = 64 }; /* a record holds 128 names: 64 pairs */

typedef struct txn_rec {
  int dir;   /* the folder it is in: a root's fd (not owned) */
  dev_t dev; /* its identity: the files of one root share one record */
  ino_t ino;
  size_t n;           /* names */
  const char **names; /* src1, dst1, ...: in-root paths */
  bw_intent it;
  int committed, left; /* forward from here; left for a recovery to finish */
} txn_rec;

typedef struct txn_plan {
  txn_rec *v;
  size_t n;
  size_t *of; /* each file's record */
  char **at;  /* each file's folder's in-root path */
  char **paths; /* the names' strings, 2 per file */
} txn_plan;

static char *join(const char *at, const char *name) {
  size_t a = strlen(at);
  int slash = a && at[a - 1] != '/';
  char *s = malloc(a + (size_t)slash + strlen(name) + 1);
  if (s) sprintf(s, "%s%s%s", at, slash ? "/" : "", name);
  return s;
}

static void plan_free(txn_plan *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (p->at) free(p->at[i]);
    if (p->paths) free(p->paths[2 * i]), free(p->paths[2 * i + 1]);
  }
  for (size_t k = 0; p->v && k < p->n; k++) {
    bw_intent_end(&p->v[k].it); /* done, or (STAGING) undone: no-op once released */
    free(p->v[k].names);
  }
  free(p->v);
  free(p->of);
  free(p->at);
  free(p->paths);
}

/* Which record each file goes in: its root's (a file of an anchored view
 * with no chain: its own folder's, found at that folder's next staged
 * operation, not at an open). */
static int plan_of(bw_txn_file *f, size_t n, txn_plan *p) {
  size_t m = n ? n : 1;
  p->v = calloc(m, sizeof *p->v);
  p->of = calloc(m, sizeof *p->of);
  p->at = calloc(m, sizeof *p->at);
  p->paths = calloc(2 * m, sizeof *p->paths);
  if (!p->v || !p->of || !p->at || !p->paths) return BW_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    char at[BW_PATH_MAX + 1];
    int dir = bw_stage_where(f[i].r, f[i].rel, at);
    if (dir < 0) {
      dir = f[i].dirfd;
      at[0] = '\0';
    }
    struct stat st;
    if (fstat(dir, &st) < 0) return bw_code_from_errno(errno);
    if (!(p->at[i] = strdup(at))) return BW_ENOMEM;
    size_t k = 0;
    while (k < p->n && !(p->v[k].dev == st.st_dev && p->v[k].ino == st.st_ino)) k++;
    if (k == p->n)
      p->v[p->n++] = (txn_rec){.dir = dir, .dev = st.st_dev, .ino = st.st_ino, .it = BW_INTENT_NONE};
    p->of[i] = k;
    if ((p->v[k].n += 2) > 2 * ROOT_FILES)
      return bw_fail(BW_TOO_LARGE, "more than 64 files in one root cannot change as one "
                                   "(the crash record's limit); split the change");
  }
  for (size_t k = 0; k < p->n; k++)
    if (!(p->v[k].names = calloc(p->v[k].n, sizeof *p->v[k].names))) return BW_ENOMEM;
  return BW_OK;
}

/* Each file's staged name chosen, the records written (STAGING: a crash
 * from here drops every staged name they list). */
static int begin_records(bw_txn_file *f, size_t n, txn_plan *p) {
  size_t *at = calloc(p->n ? p->n : 1, sizeof *at);
  if (!at) return BW_ENOMEM;
  int rc = BW_OK;
  for (size_t i = 0; !rc && i < n; i++) {
    txn_rec *r = &p->v[p->of[i]];
    bw_stage_newname(f[i].stage, f[i].data ? BW_STAGE_FILES : BW_STAGE_GONE);
    p->paths[2 * i] = join(p->at[i], f[i].stage);
    p->paths[2 * i + 1] = join(p->at[i], f[i].name);
    if (!p->paths[2 * i] || !p->paths[2 * i + 1]) rc = BW_ENOMEM;
    else {
      r->names[at[p->of[i]]++] = p->paths[2 * i];
      r->names[at[p->of[i]]++] = p->paths[2 * i + 1];
    }
  }
  for (size_t k = 0; !rc && k < p->n; k++)
    rc = bw_intent_begin(&p->v[k].it, -1, "", p->v[k].dir, 'n', p->v[k].names, p->v[k].n);
  free(at);
  return rc;
}

/* The recorded path of f's folder must lead from the root to f->dirfd,
 * or recovery would land elsewhere. */
static int check_recorded(const bw_txn_file *f, const txn_rec *r, const char *src) {
  bw_root here = {.fd = r->dir, .dev = r->dev, .ino = r->ino, .backend = -1};
  int d, trailing;
  char name[BW_NAME_MAX + 1];
  struct stat a, b;
  int rc = bw_resolve_parent(&here, src, &d, name, &trailing);
  if (rc) return bw_fail(BW_EAGAIN, "a file's folder could not be found again by its path; retry");
  int same = fstat(d, &a) == 0 && fstat(f->dirfd, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino;
  close(d);
  return same ? BW_OK
              : bw_fail(BW_EAGAIN, "a file's folder is not where its path leads from the root; retry");
}

/* A removal's staged name: a second link of the file (recovery forward
 * unlinks both; back, only it). */
static int link_aside(bw_txn_file *f) {
  if (linkat(f->dirfd, f->name, f->dirfd, f->stage, 0) < 0) return bw_mut_errno(errno);
  f->staged = 1;
  return BW_OK;
}

/* One file put in place (a removal: its name and its staged link gone). */
static int swap_in(bw_txn_file *f) {
  int rc = BW_OK;
  if (!f->data) {
    if (unlinkat(f->dirfd, f->name, 0) < 0 && errno != ENOENT) rc = bw_mut_errno(errno);
    if (!rc && unlinkat(f->dirfd, f->stage, 0) < 0 && errno != ENOENT) rc = bw_mut_errno(errno);
  } else if (renameat(f->dirfd, f->stage, f->dirfd, f->name) < 0) {
    rc = bw_mut_errno(errno);
  }
  f->done = rc == BW_OK;
  return rc;
}

/* The commit: every file is staged and checked, every lock held, every
 * record committed (up to one that failed: only the files of those go).
 * One rename each, nothing undone: a rename that fails leaves its record
 * to a recovery, tried at once and again at the next open. */
static int put_in_place(bw_txn_file *f, size_t n, txn_plan *p) {
  int rc = BW_OK;
  for (size_t i = 0; i < n; i++) {
    txn_rec *r = &p->v[p->of[i]];
    if (!r->committed) continue;
    int e = swap_in(&f[i]);
    if (e) r->left = 1;
    if (e && !rc) rc = e;
  }
  return rc;
}

/* Every directory the change touched, synced (a failure: its record is
 * left, to be gone over again). */
static int sync_all(bw_txn_file *f, size_t n, const bw_lock_set *ls, txn_plan *p) {
  int rc = BW_OK;
  for (size_t i = 0; i < n; i++) {
    txn_rec *r = &p->v[p->of[i]];
    int fd = bw_lock_many_fd(ls, f[i].dirfd);
    if (!r->committed || (fd >= 0 && fsync(fd) == 0)) continue;
    r->left = 1;
    if (!rc) rc = bw_code_from_errno(errno); /* its detail: a full disk says so */
  }
  return rc;
}

/* The committed records closed: ended when done, else let go and
 * recovered at once (their renames finished, or left for the next
 * open): how many are left. */
static size_t close_records(txn_plan *p) {
  size_t left = 0;
  for (size_t k = 0; k < p->n; k++) {
    txn_rec *r = &p->v[k];
    if (!r->committed) continue;
    if (!r->left) {
      bw_intent_end(&r->it);
      continue;
    }
    bw_intent_release(&r->it);
    if (bw_intent_recover_dir(r->dir) == 0) r->left = 0;
    else left++;
  }
  return left;
}

/* Under the locks: the checks, the stage, the commit. */
static int commit_held(bw_txn_file *f, size_t n, const bw_txn_opts *o,
                       const bw_lock_set *ls, txn_plan *p, size_t *failed) {
  int rc = bw_stopped(o->stop); /* a cancel before the commit changes nothing */
  if (rc) return rc;
  for (size_t k = 0; k < p->n; k++) bw_intent_recover_dir(p->v[k].dir); /* what a crash left */
  if ((rc = begin_records(f, n, p))) return rc;
  size_t max = o->max_compare ? o->max_compare : (size_t)1 << 40;
  for (size_t i = 0; i < n; i++) {
    *failed = i;
    rc = check_recorded(&f[i], &p->v[p->of[i]], p->paths[2 * i]);
    if (!rc) rc = bw_write_check(f[i].dirfd, f[i].name, f[i].expected, max, &f[i].st, &f[i].exists, f[i].current);
    if (!rc && !f[i].data && !f[i].exists) rc = bw_fail(BW_ENOENT, NULL);
    if (!rc && f[i].data) rc = bw_sha256(f[i].data, f[i].len, f[i].hash);
    if (!rc && f[i].data) rc = stage_one(&f[i]);
    else if (!rc) rc = link_aside(&f[i]);
    if (rc) return rc;
  }
  *failed = n;
  if ((rc = bw_stopped(o->stop))) return rc;
  for (size_t k = 0; k < p->n && !rc; k++)
    if (!(rc = bw_intent_commit(&p->v[k].it))) p->v[k].committed = 1;
  if (rc && (p->n == 0 || !p->v[0].committed)) return rc; /* nothing changed */
  int e = put_in_place(f, n, p);
  if (!e) e = sync_all(f, n, ls, p);
  char what[160]; /* e's detail (a recovery clears it): what failed */
  const char *d = e ? bw_detail() : NULL;
  snprintf(what, sizeof what, "%s", d && *d ? d : "a rename or a folder's fsync failed");
  if (close_records(p)) {
    char why[256];
    snprintf(why, sizeof why, "%s; the change is committed and will be finished at the next open", what);
    return bw_fail(e ? e : BW_EIO, why);
  }
  if (rc) /* a later root's record failed: the roots before it went forward alone */
    return bw_fail(rc, "the change is committed in the roots before the one whose intent record "
                       "could not be committed, and made there only");
  return BW_OK; /* e: the recovery finished what failed */
}

int bw_txn_commit(bw_txn_file *f, size_t n, const bw_txn_opts *o,
                  size_t *failed, int *committed) {
  *failed = n;
  if (committed) *committed = 0;
  for (size_t i = 0; i < n; i++) {
    f[i].dirfd = -1;
    f[i].stage[0] = f[i].made[0] = '\0';
    f[i].exists = f[i].staged = f[i].done = f[i].created = 0;
    f[i].hash[0] = f[i].current[0] = '\0';
  }
  int rc = bw_stopped(o->stop);
  for (size_t i = 0; !rc && i < n; i++) {
    *failed = i;
    rc = open_parent(&f[i]);
    for (size_t j = 0; !rc && j < i; j++)
      if (same_place(&f[j], &f[i])) rc = bw_fail(BW_INVALID_ARGUMENT, "the same file is named twice in one change");
  }
  const bw_root **rs = rc ? NULL : malloc((n ? n : 1) * sizeof *rs);
  int *dirs = rc ? NULL : malloc((n ? n : 1) * sizeof *dirs);
  const char **rels = rc ? NULL : malloc((n ? n : 1) * sizeof *rels);
  if (!rc && (!rs || !dirs || !rels)) rc = BW_ENOMEM;
  bw_lock_set ls = {0};
  for (size_t i = 0; !rc && i < n; i++) {
    rs[i] = f[i].r;
    rels[i] = f[i].rel;
    dirs[i] = f[i].dirfd;
  }
  txn_plan p = {0};
  if (!rc && (rc = bw_lock_many(rs, rels, dirs, n, o->lock_wait_ms, &ls))) *failed = n;
  if (!rc && (rc = plan_of(f, n, &p))) *failed = n;
  if (!rc) rc = commit_held(f, n, o, &ls, &p, failed);
  for (size_t k = 0; rc && committed && p.v && k < p.n; k++)
    if (p.v[k].committed) *committed = 1; /* past a commit point: it stands */
  bw_err_saved e;
  bw_err_save(&e);
  for (size_t i = 0; i < n; i++) { /* the unused new contents (not a record's to finish) */
    if (f[i].dirfd >= 0 && f[i].stage[0] && !(p.of && p.v && p.v[p.of[i]].left)) unlinkat(f[i].dirfd, f[i].stage, 0);
  }
  plan_free(&p, n); /* then the records (STAGING ones: dropped, as a recovery would) */
  bw_unlock_many(&ls);
  for (size_t i = n; rc && i-- > 0;) unmake(&f[i]); /* a later file's folders may sit in an earlier one's */
  for (size_t i = 0; i < n; i++) {
    if (f[i].dirfd >= 0) close(f[i].dirfd);
    f[i].dirfd = -1;
    f[i].created = !rc && f[i].data && !f[i].exists;
    if (!rc && !f[i].data) strcpy(f[i].hash, "absent");
  }
  free(rs);
  free(rels);
  free(dirs);
  return bw_err_restore(rc, &e);
}
