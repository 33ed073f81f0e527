/*
 * recover.c - crash recovery: the intent records (intent.c) of owners
 * that are gone settled, back before their commit point and forward
 * after, in a directory and through a root's journal. Above the stager:
 * a stage op's record is settled by stage.c (bw_stage_recover), an 'n'
 * set of renames here. The write path and the stager, below, ask it
 * through one hook (bw_settle, write.c), which this file sets as the
 * library loads.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "intent.h"

/* Read the whole (small) file fd into buf (size: RECORD_MAX + 1): its
 * length, or -1. */
static ssize_t read_small(int fd, char *buf, size_t size) {
  size_t got = 0;
  for (;;) {
    ssize_t n = pread(fd, buf + got, size - got, (off_t)got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return -1;
    if (n == 0 || (got += (size_t)n) == size) break;
  }
  return got < size ? (ssize_t)got : -1;
}

static int parse(char *buf, size_t len, bw_intent_rec *rec) {
  if (len < HEAD_LEN || memcmp(buf, "BWI1", MAGIC_LEN) || buf[6] != '\n' || buf[len - 1] != '\0')
    return -1;
  rec->state = buf[STATE_AT];
  rec->op = buf[5];
  rec->n = 0;
  for (size_t at = HEAD_LEN; at < len; at += strlen(buf + at) + 1) {
    if (rec->n == sizeof rec->names / sizeof rec->names[0]) return -1;
    rec->names[rec->n++] = buf + at;
  }
  return rec->state == BW_INTENT_STAGING || rec->state == BW_INTENT_COMMITTED ? 0 : -1;
}

/* 'n': prepared srcs unlinked (STAGING) or renamed over their dsts
 * (COMMITTED); each path beneath dirfd, no link followed. */
static int settle_renames(int dirfd, const bw_intent_rec *rec) {
  if (rec->n % 2) return BW_INVALID_ARGUMENT;
  bw_root here = {.fd = dirfd, .backend = -1};
  struct stat st;
  if (fstat(dirfd, &st) < 0) return bw_code_from_errno(errno);
  here.dev = st.st_dev;
  here.ino = st.st_ino;
  int rc = BW_OK;
  for (size_t i = 0; i < rec->n; i += 2) {
    int sd, dd = -1, trailing;
    char sname[BW_NAME_MAX + 1], dname[BW_NAME_MAX + 1];
    int r1 = bw_resolve_parent(&here, rec->names[i], &sd, sname, &trailing);
    if (r1 == BW_ENOENT) continue; /* its directory is gone: nothing of it is left */
    if (r1) { rc = r1; continue; }
    if (!bw_stage_name(sname)) r1 = BW_INVALID_ARGUMENT; /* never anything but a staged name */
    else if (rec->state == BW_INTENT_STAGING) {
      if (unlinkat(sd, sname, 0) < 0 && errno != ENOENT) r1 = bw_code_from_errno(errno);
    } else if (fstatat(sd, sname, &st, AT_SYMLINK_NOFOLLOW) == 0) {
      struct stat dt;
      r1 = bw_resolve_parent(&here, rec->names[i + 1], &dd, dname, &trailing);
      if (!r1 && !strncmp(sname, GONE, sizeof GONE - 1)) {
        /* a removal: the dst goes if it is still the file src links, then src */
        if (fstatat(dd, dname, &dt, AT_SYMLINK_NOFOLLOW) == 0 && dt.st_dev == st.st_dev &&
            dt.st_ino == st.st_ino && unlinkat(dd, dname, 0) < 0 && errno != ENOENT)
          r1 = bw_code_from_errno(errno);
        if (!r1 && unlinkat(sd, sname, 0) < 0 && errno != ENOENT) r1 = bw_code_from_errno(errno);
      } else if (!r1 && renameat(sd, sname, dd, dname) < 0) {
        r1 = bw_code_from_errno(errno);
      }
      if (!r1) r1 = bw_sync_dir(dd);
    }
    if (!r1) r1 = bw_sync_dir(sd);
    close(sd);
    if (dd >= 0) close(dd);
    if (r1 && !rc) rc = r1;
  }
  return rc;
}

/* Recover the record dirfd/name if its owner is gone: 1 when it is left
 * (owner alive, or not settled), else 0. */
static int recover_one(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return errno == ENOENT ? 0 : 1;
  if (flock(fd, LOCK_EX | LOCK_NB) < 0) { /* its owner runs */
    close(fd);
    return 1;
  }
  struct stat st, now;
  /* settled and unlinked by another recoverer while we waited? */
  if (fstat(fd, &st) < 0 || st.st_nlink == 0 || !S_ISREG(st.st_mode) ||
      fstatat(dirfd, name, &now, AT_SYMLINK_NOFOLLOW) < 0 || now.st_ino != st.st_ino) {
    close(fd);
    return 0;
  }
  char *buf = malloc(RECORD_MAX + 1);
  ssize_t len = buf ? read_small(fd, buf, RECORD_MAX + 1) : -1;
  bw_intent_rec rec;
  int rc = len < 0 ? BW_EIO : parse(buf, (size_t)len, &rec) ? BW_INVALID_ARGUMENT : BW_OK;
  if (!rc) rc = rec.op == 'n' ? settle_renames(dirfd, &rec) : bw_stage_recover(dirfd, &rec);
  if (rc == BW_INVALID_ARGUMENT && len >= 0) rc = BW_OK; /* not a record of ours: dropped */
  if (!rc) {
    unlinkat(dirfd, name, 0);
    bw_sync_dir(dirfd);
  }
  free(buf);
  close(fd);
  bw_clear_detail();
  return rc ? 1 : 0;
}

/* Does a live owner hold the lock of dirfd/name (a record or a pointer)? */
static int held_by_owner(int dirfd, const char *name) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  int held = flock(fd, LOCK_SH | LOCK_NB) < 0 && errno == EWOULDBLOCK;
  close(fd);
  return held;
}

/* A temp of ours (a record or a pointer being written) whose writer is
 * gone (by its pid: its lock is taken only after the file is made). */
static void sweep_temp(int dirfd, const char *name) {
  char *end;
  long pid = strtol(name + sizeof TEMP - 1, &end, 10);
  if (*end == '.' && pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) < 0 && errno == ESRCH)
    unlinkat(dirfd, name, 0);
}

size_t bw_intent_recover_dir(int dirfd) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (!d) {
    if (fd >= 0) close(fd);
    return 0;
  }
  size_t left = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] != '.' || !bw_stage_name(e->d_name)) continue;
    if (starts(e->d_name, RECORD)) left += (size_t)recover_one(dirfd, e->d_name);
    else if (starts(e->d_name, TEMP)) sweep_temp(dirfd, e->d_name);
  }
  closedir(d);
  return left;
}

/* The directory a pointer names: its fd, by its path if it is still
 * there, else (moved since) looked for by identity. -1: gone. */
static int pointed_dir(const bw_root *r, int jdir, const char *name);

enum { FIND_DEPTH = 256, FIND_DIRS = 1000000 };

/* Depth-first beneath dirfd for the directory (dev, ino), no link
 * followed, no mount entered; *budget directories at most. */
static int find_dir(int dirfd, dev_t dev, ino_t ino, int depth, long *budget) {
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd < 0 ? NULL : fdopendir(fd);
  if (!d) {
    if (fd >= 0) close(fd);
    return -1;
  }
  int found = -1;
  struct dirent *e;
  while (found < 0 && (e = readdir(d)) && --*budget > 0) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    if (e->d_type != DT_DIR && e->d_type != DT_UNKNOWN) continue;
    int sub = openat(dirfd, e->d_name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (sub < 0) continue;
    if (fstat(sub, &st) == 0 && st.st_dev == dev) {
      if (st.st_ino == ino) found = sub;
      else if (depth < FIND_DEPTH) found = find_dir(sub, dev, ino, depth + 1, budget);
    }
    if (found != sub) close(sub);
  }
  closedir(d);
  return found;
}

static int pointed_dir(const bw_root *r, int jdir, const char *name) {
  int fd = openat(jdir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return -1;
  char *buf = malloc(POINTER_MAX + 1);
  ssize_t len = buf ? read_small(fd, buf, POINTER_MAX + 1) : -1;
  close(fd);
  int out = -1;
  unsigned long long dev, ino;
  int at = 0;
  if (len > 0) {
    buf[len] = '\0';
    if (sscanf(buf, "%llu %llu\n%n", &dev, &ino, &at) == 2 && at > 0 && at < len) {
      struct stat st;
      int dfd;
      if (!bw_resolve(r, buf + at, BW_NOFOLLOW, &dfd, &st)) {
        if ((unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino &&
            S_ISDIR(st.st_mode))
          out = dfd;
        else
          close(dfd);
      }
      long budget = FIND_DIRS;
      if (out < 0 && fstat(r->fd, &st) == 0) /* a folder above it moved since */
        out = (unsigned long long)st.st_ino == ino && (unsigned long long)st.st_dev == dev
                  ? fcntl(r->fd, F_DUPFD_CLOEXEC, 0)
                  : find_dir(r->fd, (dev_t)dev, (ino_t)ino, 0, &budget);
    }
  }
  free(buf);
  bw_clear_detail();
  return out;
}

/* Every record r's journal points to, after its own folder's (left of
 * them still there): how many are left in all. */
static size_t recover_journal(const bw_root *r, size_t left) {
  int jdir = openat(r->fd, JOURNAL, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (jdir < 0) return left; /* no journal: nothing else was cut short here */
  DIR *d = fdopendir(jdir);
  if (!d) {
    close(jdir);
    return left;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (starts(e->d_name, TEMP)) {
      sweep_temp(jdir, e->d_name);
      continue;
    }
    if (!starts(e->d_name, RECORD)) continue;
    if (held_by_owner(jdir, e->d_name)) { /* under way */
      left++;
      continue;
    }
    int dir = pointed_dir(r, jdir, e->d_name);
    if (dir < 0) { /* its directory is gone, and its record with it */
      unlinkat(jdir, e->d_name, 0);
      continue;
    }
    bw_intent_recover_dir(dir); /* its record, and what else crashed there */
    struct stat st;
    /* settled, or never written (its owner is gone): the pointer goes */
    if (fstatat(dir, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 && errno == ENOENT)
      unlinkat(jdir, e->d_name, 0);
    else
      left++;
    close(dir);
  }
  closedir(d);
  if (!left) unlinkat(r->fd, JOURNAL, AT_REMOVEDIR);
  return left;
}

size_t bw_intent_recover_root(const bw_root *r) {
  return recover_journal(r, bw_intent_recover_dir(r->fd)); /* the root's own records have no pointer */
}

/* The names in dirfd that start ".burrow" in any case (every record,
 * temp and stage of ours; usually none), read once: a NULL-ended array
 * (free each, then it), or NULL when memory ran out or there are more
 * than NAMES_LISTED (a folder an agent filled with such names: then the
 * caller reads it again rather than hold them all). */
enum { NAMES_LISTED = 4096 };
static char **burrow_names(int dirfd) {
  size_t n = 0, cap = 8;
  char **v = malloc(cap * sizeof *v);
  int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR *d = fd < 0 || !v ? NULL : fdopendir(fd);
  if (!d) {
    if (fd >= 0) close(fd);
    if (v) v[0] = NULL; /* unreadable: nothing to settle, as a read would find */
    return v;
  }
  struct dirent *e;
  while ((e = readdir(d))) {
    if (strncasecmp(e->d_name, ".burrow", 7)) continue;
    char *name = n + 1 < cap ? strdup(e->d_name) : NULL;
    if (!name && n + 1 == cap && n < NAMES_LISTED) {
      char **w = realloc(v, (cap *= 2) * sizeof *v);
      if (w) v = w, name = strdup(e->d_name);
    }
    if (!name) {
      v[n] = NULL;
      for (size_t i = 0; i < n; i++) free(v[i]);
      free(v);
      closedir(d);
      return NULL;
    }
    v[n++] = name;
  }
  v[n] = NULL;
  closedir(d);
  return v;
}

size_t bw_intent_settle_root(const bw_root *r) {
  char **names = burrow_names(r->fd);
  if (!names) { /* no list (memory, or too many names): the two reads it saves */
    size_t left = bw_intent_recover_root(r);
    bw_sweep_temps(r->fd);
    return left;
  }
  size_t left = 0;
  for (char **p = names; *p; p++) { /* as bw_intent_recover_dir, from the list */
    if (!bw_stage_name(*p)) continue;
    if (starts(*p, RECORD)) left += (size_t)recover_one(r->fd, *p);
    else if (starts(*p, TEMP)) sweep_temp(r->fd, *p);
  }
  left = recover_journal(r, left);
  /* then the sweep: what the records settled is gone from beneath these
   * names (a copy's stage a record finished, say) and is passed over */
  for (char **p = names; *p; p++) {
    bw_sweep_entry(r->fd, *p);
    free(*p);
  }
  free(names);
  return left;
}

/* What the hook does: dirfd's records, then (journal) every record the
 * journal of that root points to. */
static void settle(int dirfd, const bw_root *journal) {
  bw_intent_recover_dir(dirfd);
  if (journal) bw_intent_recover_root(journal);
}

/* Set before main (or as a dlopen returns), before any thread can write:
 * linked in, recovery is on for every write, as it was when write.c
 * called it directly. */
__attribute__((constructor)) static void set_hook(void) { bw_settle_hook(settle); }
