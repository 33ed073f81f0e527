/*
 * core.h - the sandboxed core of burrow: roots held as directory fds,
 * resolution beneath them, reads, atomic writes, listing, hashing, text
 * scanning. Plain C: no Lua here. Every function returns a bw_code (0 = ok)
 * and fills out-parameters; a static detail string may explain the code.
 */
#ifndef BURROW_CORE_H
#define BURROW_CORE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

/* A function of the core or the binding that the layers above call across
 * a library boundary: core.so (the core and the binding only) exports it
 * to server.so and host.so, which are linked against core.so so the
 * process has one copy of its state (cancel source, undo stores,
 * watches...). Everything else stays hidden (-fvisibility=hidden);
 * libburrow.so's version script and the command's (host/burrow.map) hide
 * these too. host/test/exports.sh checks that core.so exports exactly the
 * ones server.so and host.so import. */
#define BW_SHARED __attribute__((visibility("default")))

/* Stable error codes; their names (bw_code_name) are the public codes. */
typedef enum bw_code {
  BW_OK = 0,
  BW_ENOENT,
  BW_EEXIST,
  BW_ENOTDIR,
  BW_EISDIR,
  BW_ELOOP,
  BW_EACCES,
  BW_EAGAIN,
  BW_EIO,
  BW_OUTSIDE_ROOT,
  BW_READ_ONLY_ROOT,
  BW_POLICY_DENIED,
  BW_TOO_LARGE,
  BW_BINARY,
  BW_INVALID_ARGUMENT,
  BW_NOT_REGULAR,
  BW_HASH_MISMATCH,
  BW_ENOMEM,
  BW_NOT_FOUND_TEXT,    /* edit: old_text is not in the file */
  BW_AMBIGUOUS_TEXT,    /* edit: old_text is in the file more than once */
  BW_OVERLAPPING_EDITS, /* edit: two edits touch the same bytes */
  BW_STORE_UNAVAILABLE, /* the shared state store (Redis/Valkey) cannot be reached or refused */
  BW_CODE_COUNT
} bw_code;

const char *bw_code_name(int code);
/* Map an errno from a syscall on a resolved object to a code. */
int bw_code_from_errno(int err);

/* Per-thread detail for the last failure ("name too long", ...); static text. */
const char *bw_detail(void);
int bw_fail(int code, const char *detail); /* sets the detail, returns code */
void bw_clear_detail(void);
/* What a failure is about, beside its code and its text: the binding
 * hands it on as data ({on = "pattern"}, {on = "time"}, {on = "size"},
 * {on = "include" | "exclude" | "root", index = i}), so no caller reads
 * the wording. */
enum {
  BW_ON_NONE = 0,
  BW_ON_PATTERN, /* the search pattern or the glob asked for */
  BW_ON_INCLUDE, /* an include glob (index: 1-based) */
  BW_ON_EXCLUDE, /* an exclude glob (index: 1-based) */
  BW_ON_TIME,    /* the call's time budget */
  BW_ON_ROOT,    /* a root (index: 1-based) */
  BW_ON_SIZE,    /* a file over the size cap (max_file_size) */
  BW_ON_SYNC,    /* done, but its directory fsync failed: it may not survive a crash */
  BW_ON_CURSOR,  /* a cursor that names no place in this search */
};
int bw_fail_on(int code, int on, int index, const char *detail);
int bw_fail_subject(int *index); /* BW_ON_*, and its index */
/* After bw_fail_on: the cause in its own words (PCRE2's, for a pattern),
 * kept beside the detail; returns code. */
int bw_fail_reason(int code, const char *reason);
const char *bw_fail_why(void);
/* Keep a failure (detail, subject, reason) across cleanup that may fail
 * in its turn, then put it back: bw_err_restore returns code. */
typedef struct bw_err_saved {
  const char *detail, *reason;
  int on, index;
} bw_err_saved;
void bw_err_save(bw_err_saved *s);
int bw_err_restore(int code, const bw_err_saved *s);
const char *bw_on_name(int on);  /* "pattern", "include", ..., NULL for none */

/* ---- stopping early (stop.c) ---- */

/* A call's stop conditions, read by long core loops (a recursive copy or
 * remove): the cancel flag raised from outside (may be NULL), and a
 * deadline on the monotonic clock in ms (0: none). */
typedef struct bw_stop {
  const _Atomic int *cancel;
  int64_t until_ms;
} bw_stop;

int64_t bw_now_ms(void); /* the monotonic clock, ms (clock.c) */

/* The cancel flag of the call in flight on this thread, for long
 * operations (walks, grep, copies) to poll: the thread's own if one is
 * set (an HTTP worker's, a submitted call's), else what the process's
 * source gives (the stdio server's innermost call: lserver.c sets it),
 * else a flag never raised. Never NULL. */
const _Atomic int *bw_cancel_flag(void);
/* On this thread, until set back to NULL: the flag bw_cancel_flag gives. */
BW_SHARED void bw_set_cancel_flag(const _Atomic int *flag);
/* The process-wide source of the flag for threads without their own. */
BW_SHARED void bw_set_cancel_source(const _Atomic int *(*source)(void));
/* BW_OK, or why to stop: EAGAIN "cancelled", TOO_LARGE "time budget".
 * s may be NULL (never stops). */
int bw_stopped(const bw_stop *s);

/* ---- roots and path mapping (root.c) ---- */

typedef struct bw_root {
  int fd;          /* O_PATH|O_DIRECTORY fd, held for the root's life */
  int readonly;
  dev_t dev;       /* st_dev of the root: walks never leave it */
  ino_t ino;       /* st_ino of the root: its identity, for nested roots */
  uint64_t mnt_id; /* mount id of the root (statx), 0 if unknown */
  int backend;     /* BW_OPENAT2 or BW_WALK; -1 (bw_root_open's) = openat2 */
  char *mount;     /* absolute, normalised; the agent's name for the root */
  char *alias;     /* canonical host spelling accepted too (NULL if same or
                      if the mount is virtual) */
  /* Set only on the views a handle lends (bw_handle_view): resolving
   * exactly expect_rel must give the object (expect_dev, expect_ino) the
   * handle was judged on, else BW_EAGAIN. */
  const char *expect_rel;
  dev_t expect_dev;
  ino_t expect_ino;
  int expect_reg; /* it was a regular file: its type was checked on an O_PATH fd */
  int anchored; /* fd is a directory inside the root, not the root */
  /* Set only on a write view: the innermost root's fd and fd's in-root
   * path there, the chain a change holds (bw_lock_write) so that what it
   * adds lands in the tree it was judged in (write.c) */
  int top_fd;
  const char *at;
} bw_root;

enum { BW_PATH_MAX = 4096, BW_NAME_MAX = 255 };

/* Open a root; mount NULL = the configured path made absolute. */
int bw_root_open(bw_root *r, const char *host_path, const char *mount,
                 int readonly);
void bw_root_close(bw_root *r);

/* Check an agent path (len bytes, may contain NUL) and map it onto a root:
 * *root_index and a relative path in rel (BW_PATH_MAX+1 bytes). The root
 * itself maps to ".". Absolute paths must lie under a mount, compared
 * component by component. */
int bw_map_path(const bw_root *roots, int nroots, const char *path,
                size_t len, int *root_index, char *rel);

/* ---- resolution (resolve.c) ---- */

typedef enum bw_backend { BW_OPENAT2 = 0, BW_WALK = 1 } bw_backend;

/* A root's backend is its own (r->backend, given when it is opened; -1:
 * openat2). BW_OPENAT2 falls back to BW_WALK for good, for every root,
 * when the kernel lacks openat2 (ENOSYS, or EPERM from seccomp). The name
 * of the backend a root that names none gets: "openat2", or "walk" once
 * openat2 is known missing. */
const char *bw_backend_name(void);
/* The backend resolution beneath r uses. */
bw_backend bw_root_backend(const bw_root *r);
/* Check once whether openat2 works here; after a no, the walk for good. */
void bw_probe_backend(void);

enum {
  BW_NOFOLLOW = 1, /* do not follow a final symlink (lstat semantics) */
  BW_REGULAR = 2,  /* refuse anything but a regular file */
};

/* Resolve rel beneath the root to an O_PATH fd and its fstat. */
int bw_resolve(const bw_root *r, const char *rel, int how, int *fd,
               struct stat *st);
/* Open a regular file beneath the root for reading, decided on an O_PATH fd
 * first so FIFOs and devices are refused without blocking or side effects. */
int bw_open_read(const bw_root *r, const char *rel, int *fd, struct stat *st);
/* Resolve the parent of rel to an O_PATH directory fd, and copy the final
 * name (validated: not empty, ".", ".." and without "/") into name. A
 * trailing slash sets *trailing_slash. */
int bw_resolve_parent(const bw_root *r, const char *rel, int *dirfd,
                      char name[BW_NAME_MAX + 1], int *trailing_slash);
/* The in-root path rel names once its symlinks are followed ("." for the
 * root), for policies to match on; a part that does not exist yet is
 * appended lexically. Never used to open anything. */
int bw_canonical(const bw_root *r, const char *rel, char *out, size_t size);
/* mkdir -p of rel beneath the root; each step acts on a parent fd and is
 * made durable (the parent fsynced) before the next; a failure removes the
 * directories the call made. */
int bw_mkdirs(const bw_root *r, const char *rel);
/* Does rel end in a "." or ".." component (never the name of a change)? */
int bw_dot_final(const char *rel);

/* One resolution of an object: what policies judge and what the core then
 * uses. The walk that finds it records every directory it passes, so the
 * object's in-root path (rel) is the one the resolver saw, in the innermost
 * root that holds it (roots compared by dev/ino, whichever mount named the
 * path). A path whose last components do not exist yet resolves too:
 * exists = 0, dirfd is the deepest existing directory and rest what is
 * missing ("a/b/new.txt"). */
typedef struct bw_handle {
  int root;                   /* index of the innermost root holding it */
  int dirfd;                  /* O_PATH fd of the directory holding it (or of
                                 the root, when it is one), owned */
  char rest[BW_PATH_MAX + 1]; /* beneath dirfd: the final name, "." for a
                                 root, or the missing components */
  char rel[BW_PATH_MAX + 1];  /* its in-root path in that root, "." = root */
  int named;                  /* the root the path named, and the path as */
  char lexical[BW_PATH_MAX + 1]; /* mapped, when it ends in "." or ".." */
  char at[BW_PATH_MAX + 1];   /* dirfd's in-root path in that root */
  int exists;
  int dangling;               /* missing because a link leads nowhere */
  struct stat st;             /* lstat (BW_NOFOLLOW) or stat of it */
} bw_handle;

/* Resolve rel (as bw_map_path gave it for roots[idx]) into *h. how:
 * BW_NOFOLLOW = a final symlink is the object itself. dirfd is -1 on
 * failure; close a handle with bw_handle_close. */
int bw_resolve_handle(const bw_root *roots, int nroots, int idx,
                      const char *rel, int how, bw_handle *h);
void bw_handle_close(bw_handle *h);

/* The root a core function takes to act on a handle's object:
 * BW_VIEW_READ: the innermost root and the in-root path, with the judged
 *   identity expected (reads, listings, walks: a swap is BW_EAGAIN);
 * BW_VIEW_WRITE: the directory that holds the object, as a root of its own,
 *   and the final name (changes land in the directory that was judged,
 *   wherever it is named now). *rel points into h. */
enum { BW_VIEW_READ = 0, BW_VIEW_WRITE = 1 };
void bw_handle_view(const bw_handle *h, const bw_root *roots, int view,
                    bw_root *out, const char **rel);

/* ---- reading (fileio.c) ---- */

/* Write all of iov[0..cnt) to fd, on through short writes and EINTR, at
 * most IOV_MAX pieces per writev. 0, or -1 with errno. iov is consumed. */
struct iovec;
BW_SHARED int bw_writev_all(int fd, struct iovec *iov, int cnt);

/* A file's bytes in memory: read() for small files, mmap for large ones.
 * Access to a mapped buffer must go through bw_guard so a file truncated
 * under us is an EIO, not a SIGBUS. */
typedef struct bw_buf {
  char *data;
  size_t len;
  int mapped;
} bw_buf;

enum { BW_MMAP_MIN = 1 << 20 };

/* Read a regular file beneath the root, at most max_bytes (more = TOO_LARGE). */
int bw_read_file(const bw_root *r, const char *rel, size_t max_bytes,
                 bw_buf *b, struct stat *st);
/* The same, but a large file's pages are mapped only as they are touched:
 * for reading a part of it (a head, a tail) without paying for all of it;
 * a pass over all of it asks for them first (bw_buf_prefault). */
int bw_map_file(const bw_root *r, const char *rel, size_t max_bytes,
                bw_buf *b, struct stat *st);
/* Read an open regular fd (size from st, never trusted beyond max_bytes). */
int bw_read_fd(int fd, const struct stat *st, size_t max_bytes, bw_buf *b);
void bw_buf_free(bw_buf *b);
/* Map the pages of [off, off + n) of a lazily mapped buffer now, in one
 * call, before a pass over them (a fault per 64 KiB otherwise). A hint:
 * nothing happens for a buffer read into memory, or on an old kernel. */
void bw_buf_prefault(const bw_buf *b, size_t off, size_t n);

/* Advise transparent huge pages for the 2 MiB-aligned interior of a
 * buffer of BW_HUGE_MIN bytes or more that is about to be written whole
 * (a big read's output, its JSON, its Lua string): a page fault per 2 MiB
 * instead of per 4 KiB (a grep reply of 3.6 MB: 1,109 -> 597 faults when
 * this went from 8 to 2 MiB). Advice only: nothing depends on it being
 * taken. */
enum { BW_HUGE_MIN = 2 << 20 };
void bw_huge_advise(void *p, size_t n);

/* A heap for one thread's many small blocks, in one 2 MiB region whose
 * first BW_ARENA_PREFAULT bytes are populated at once (arena.c): the burrow
 * command's Lua state. bw_arena_alloc has lua_Alloc's shape
 * (ud = the arena, or NULL for plain realloc/free): a block is freed or
 * resized with the size it has, osize, and ptr == NULL asks for a new one
 * (osize is then not a size). Blocks above BW_ARENA_MAX bytes, and all once
 * the region is used up, are malloc's. bw_arena_open: NULL where the
 * region cannot be had (then pass NULL). */
enum { BW_ARENA_SIZE = 2 << 20, BW_ARENA_MAX = 4096, BW_ARENA_PREFAULT = 256 << 10 };
typedef struct bw_arena bw_arena;
bw_arena *bw_arena_open(void);
void bw_arena_close(bw_arena *a);
void *bw_arena_alloc(void *ud, void *ptr, size_t osize, size_t nsize);

/* Run fn(arg) so that a SIGBUS from a mapped file becomes BW_EIO. fn returns
 * a bw_code. Whatever fn allocated must be reachable from arg. */
int bw_guard(int (*fn)(void *arg), void *arg);

/* ---- hashing (hash.c) ---- */

enum { BW_HASH_HEX = 64 };
/* "sha256:" + 64 hex + NUL */
enum { BW_HASH_STR = 7 + BW_HASH_HEX + 1 };
BW_SHARED int bw_sha256(const void *data, size_t len, char out[BW_HASH_STR]);
/* The hash of what fd reads from its offset to the end, read in pieces
 * (never the whole file in memory); BW_TOO_LARGE past max_bytes. */
int bw_sha256_fd(int fd, size_t max_bytes, char out[BW_HASH_STR]);
/* HMAC-SHA256 (RFC 2104): 32 raw bytes in out. */
int bw_hmac_sha256(const void *key, size_t klen, const void *msg, size_t len,
                   unsigned char out[32]);
/* Before a libcrypto digest (hash.c's, the Redis store's SHA-1): runs the
 * hook set with bw_hash_probe_hook once, if one is set. The command sets
 * libcrypto's CPU probe there, taken out of its start (cli/cpuprobe.c). */
void bw_hash_ready(void);
void bw_hash_probe_hook(void (*fn)(void));
/* 1 when the two byte strings are equal, in time that depends only on
 * their lengths (a MAC compared against an attacker's guess). */
int bw_equal_ct(const void *a, size_t alen, const void *b, size_t blen);

/* ---- text (text.c) ---- */

typedef struct bw_text_info {
  size_t lines;   /* number of lines (a final line without \n counts) */
  size_t lf;      /* \n count */
  size_t crlf;    /* \r\n count */
  int bom;        /* UTF-8 BOM at the start */
  int binary;     /* NUL in the first 8 KiB */
} bw_text_info;

void bw_text_scan(const char *data, size_t len, bw_text_info *info);
const char *bw_newline_kind(const bw_text_info *info); /* lf|crlf|mixed|none */
/* How many '\n' bytes p[0, n) holds (SSE2, AVX2 where the CPU has it). */
size_t bw_count_newlines(const char *p, size_t n);
/* Whether the CPU and OS run AVX2 (asked once, when first needed). */
int bw_have_avx2(void);

/* Line-numbered view "N\tline\n" of lines [first, first+limit) of a text.
 * res->out (and res->ends) are owned by the caller even when this fails (or
 * a SIGBUS guard jumps out of it): free them. */
typedef struct bw_lines {
  char *out;          /* malloc'd text */
  size_t out_len;
  size_t first;       /* first line shown (1-based), 0 if none */
  size_t last;        /* last line shown */
  size_t next;        /* next line to read, 0 if the end was reached */
  size_t next_byte;   /* where the next page starts in the text (its length at the end) */
  int mid_line;       /* bw_lines_at: next_byte is inside line next (it was cut) */
  int truncated;      /* stopped by max_bytes rather than limit or the end */
  size_t cut_lines;   /* lines cut at max_line */
  size_t out_cap;
  size_t raw_len;     /* length of the numbered raw text (JSON: unescaped) */
  size_t *ends;       /* bw_page_lines: malloc'd, where each line ends in out */
  size_t rows, ends_cap;
} bw_lines;

int bw_number_lines(const char *data, size_t len, size_t first, size_t limit,
                    size_t max_line, size_t max_bytes, bw_lines *res);

/* The same page as data, for a caller that writes its own rows (a pack):
 * each line's text as the numbered view shows it (the CR of CRLF dropped,
 * cut at max_line with the same marker), without its number or newline,
 * one after another in res->out; line first+k ends at res->ends[k], for
 * k < res->rows. Caps, cuts and res fields are those of the numbered view,
 * so the page stops where its numbered text would. */
int bw_page_lines(const char *data, size_t len, size_t first, size_t limit,
                  size_t max_line, size_t max_bytes, bw_lines *res);

/* A page that resumes a cursor: from byte `at` of the text, which is on
 * line `first` (at a line's start, or inside it after a cut), as
 * bw_number_lines numbers it (json: the inside of a JSON string, no quotes,
 * numbered and escaped in one pass by bw_json_escape; caps, cuts and res
 * fields those of the raw text, raw_len its length), except that the
 * page ends with the first line it cuts (at max_line or max_bytes), and
 * next_byte, with next and mid_line, says where the cut left off: pages
 * read this way join into the text with no gap and no repeat. */
#define BW_LINES_BY_LINE ((size_t)-1)
int bw_lines_at(const char *data, size_t len, size_t at, size_t first,
                size_t limit, size_t max_line, size_t max_bytes, int json,
                bw_lines *res);

/* The page bw_number_lines (at == BW_LINES_BY_LINE) or bw_lines_at would
 * give, counted, not written: every res field but out (NULL), its length
 * and rows, raw_len the numbered text's bytes. For a page told (lines,
 * bytes, cursor, truncated) before its form is chosen (read_file's held
 * page: lpage.c). */
int bw_lines_count(const char *data, size_t len, size_t at, size_t first,
                   size_t limit, size_t max_line, size_t max_bytes,
                   bw_lines *res);

/* ---- JSON string escaping (jsonesc.c) ---- */

/* Worst output for n input bytes (every byte "\u00XX"; a UTF-8 sequence
 * may run 3 bytes past the end of a block). */
#define BW_JSON_WORST(n) ((n) * 6 + 16)

/* Escape *pp up to limit (a character may run on up to end) into o, which
 * has room for BW_JSON_WORST(limit - *pp): controls, '"' and '\\' escaped,
 * ill-formed UTF-8 as U+FFFD. Advances *pp; returns the new end of o. */
BW_SHARED char *bw_json_escape(char *o, const unsigned char **pp,
                     const unsigned char *limit, const unsigned char *end);

/* The last n lines of data[0, len), unnumbered, found by scanning back
 * from the end (the bytes before them are never touched): each cut at
 * max_line characters with a marker, CR of CRLF dropped, '\n' after each
 * (not after the last when the file has no final newline);
 * a BOM at the file's start is left out. Past max_bytes the earliest lines
 * are dropped (truncated). res->last is the number of lines shown and
 * res->first is 1 when they are the whole file. */
int bw_tail_lines(const char *data, size_t len, size_t n, size_t max_line,
                  size_t max_bytes, bw_lines *res);

/* Base64: encode with OpenSSL's codec; decode strictly (text.c says what
 * is accepted), refusals are BW_INVALID_ARGUMENT with the offset of the
 * first bad byte. bw_base64_size checks and measures without allocating.
 * Caller frees *out. */
int bw_base64_encode(const void *data, size_t len, char **out, size_t *out_len);
BW_SHARED int bw_base64_decode(const char *text, size_t len, char **out, size_t *out_len);
int bw_base64_size(const char *text, size_t len, size_t *out_len);

/* ---- writing (write.c) ---- */

/* The write lock of a directory: an exclusive flock(2) every burrow
 * process takes on the directory of a file around a write, so the hash
 * compared is the hash replaced (write.c says why per directory). */
/* The tree lock (write.c): a change into a directory holds every
 * directory above it, from the root down, with a shared flock(2), each
 * checked to be the entry its parent names; a subtree move or remove holds
 * its top with an exclusive one from before it is renamed aside until its
 * commit. So nothing lands in a tree while it is judged, and what lands
 * is reached by the path it was judged under. */
typedef struct bw_chain {
  int *fd;   /* the directories below the root, O_RDONLY, in path order */
  int n;
  int locked; /* how many of them (from the first) hold the shared lock */
  int parent; /* the directory holding the last (borrowed), and its name */
  char last[BW_NAME_MAX + 1];
} bw_chain;

/* Hold the directories of path (in-root, plain names: no link is
 * followed) beneath top (its fd, dev and mount), each shared-locked but
 * the last unless hold_last; the last must be the directory want (dev,
 * ino), else EAGAIN: it was moved since it was judged. */
int bw_chain_hold(const bw_root *top, const char *path, int hold_last,
                  int want, unsigned wait_ms, bw_chain *c);
/* Is the chain's last directory still the directory want? */
int bw_chain_check(const bw_chain *c, int want);
void bw_chain_release(bw_chain *c); /* idempotent */
/* A write view's chain path: r->at, then sub (a path beneath r->fd);
 * NULL r->at (not a view) gives "". */
int bw_chain_path(const bw_root *r, const char *sub, char out[BW_PATH_MAX + 1]);
/* The exclusive tree lock of the directory (dirfd, name), checked to be
 * still there once held: *fd, closed to release. */
int bw_lock_tree(int dirfd, const char *name, unsigned wait_ms, int *fd);

typedef struct bw_dir_lock {
  int fd;    /* the directory, O_RDONLY; -1: not held */
  dev_t dev; /* which directory it is */
  ino_t ino;
  bw_chain chain; /* the directories above it (a write view's) */
} bw_dir_lock;

#define BW_DIR_UNLOCKED ((bw_dir_lock){.fd = -1})

/* Lock the directory of an fd (O_PATH will do), waiting up to wait_ms
 * (0: 5 s) for another holder; a longer wait is EAGAIN. */
int bw_lock_dir(int dirfd, unsigned wait_ms, bw_dir_lock *l);
/* The write lock of dirfd, the directory sub (plain names) beneath r->fd:
 * on a write view its chain from the root held too, and dirfd checked to
 * be what the judged path reaches (else EAGAIN). */
int bw_lock_write(const bw_root *r, const char *sub, int dirfd,
                  unsigned wait_ms, bw_dir_lock *l);
/* Lock the directory rel's final name is in (resolved like a write). */
int bw_lock_parent(const bw_root *r, const char *rel, unsigned wait_ms,
                   bw_dir_lock *l);
/* Release, the chain too (idempotent). */
void bw_unlock_dir(bw_dir_lock *l);
/* The directory part of rel ("a/b/name" -> "a/b/", "name" -> ""): -1 if
 * too long. */
int bw_parent_path(const char *rel, char out[BW_PATH_MAX + 1]);
/* mkdir -p of rel beneath r with r->fd's chain held (a write view's). */
int bw_mkdirs_held(const bw_root *r, const char *rel);

typedef struct bw_write_opts {
  int create_dirs;           /* make missing parents */
  const char *expected_hash; /* NULL, "absent" or "sha256:<hex>" */
  int allow_symlink;         /* replace the target of an in-root link */
  int allow_hardlink;        /* replace a file with other links */
  size_t max_compare;        /* largest current file hashed for expected_hash */
  const bw_dir_lock *held;   /* the caller holds rel's directory lock: do not
                                lock again (it would wait for itself) */
  unsigned lock_wait_ms;     /* longest wait for the lock (0: 5 s) */
} bw_write_opts;

typedef struct bw_write_res {
  int created;
  char hash[BW_HASH_STR];
  char current_hash[BW_HASH_STR]; /* on HASH_MISMATCH: what is there now */
} bw_write_res;

int bw_write_file(const bw_root *r, const char *rel, const void *data,
                  size_t len, const bw_write_opts *o, bw_write_res *res);
/* What a replace checks at (dirfd, name) before it writes: a regular
 * file with one link, or nothing (*exists 0); never a link or a directory;
 * its hash against expected (NULL, "absent" or "sha256:<hex>"; current
 * holds the hash found on HASH_MISMATCH). */
int bw_write_check(int dirfd, const char *name, const char *expected,
                   size_t max, struct stat *st, int *exists,
                   char current[BW_HASH_STR]);
/* A new file's owner and mode: old's (set-id bits dropped), or, for a
 * file that did not exist, 0666 less the umask. */
int bw_write_meta(int fd, const struct stat *old, int exists);

/* Several writes' locks at once (txn.c): for each of n targets (r[i] a
 * write view or a root, rel[i] beneath it, dirfd[i] the directory rel[i]'s
 * final name is in), that
 * directory's write lock and, on a view, its chain from the root, every
 * directory held once however many targets share it (a flock of one
 * directory through two descriptions would wait for itself), taken in
 * path order; EAGAIN when a holder kept one past wait_ms (0: 5 s) or a
 * judged directory moved, nothing held then. */
struct bw_held;
typedef struct bw_lock_set {
  struct bw_held *v;
  size_t n;
} bw_lock_set;
int bw_lock_many(const bw_root *const *r, const char *const *rel,
                 const int *dirfd, size_t n, unsigned wait_ms, bw_lock_set *s);
/* The held descriptor (O_RDONLY) of the directory dirfd is, or -1. */
int bw_lock_many_fd(const bw_lock_set *s, int dirfd);
void bw_unlock_many(bw_lock_set *s); /* idempotent */
/* Remove stale temp files left in the directory fd by killed writers,
 * after settling its records of cut-short changes (recover.c). */
void bw_sweep_temps(int dirfd);
/* The same for one entry of dirfd whose records are settled: a write's
 * temp or a copy's stage (tree.c) whose owner is gone goes. Names not
 * starting ".burrow" (in any case) are never either. */
void bw_sweep_entry(int dirfd, const char *name);

/* ---- listing and stat (dir.c) ---- */

typedef struct bw_entry {
  const char *path;  /* relative to the listed directory */
  const char *name;
  char type;         /* 'f' file, 'd' dir, 'l' symlink, 'o' other */
  int depth;         /* 0 = direct child */
  struct stat st;    /* lstat data */
} bw_entry;

struct bw_rules; /* policy path rules (search.h, rules.c) */

/* The roots' own directories, by identity, for walks that may meet one
 * below their start (a nested root): below it, rules see that root's
 * in-root paths, not the outer root's. A walk records where it met each
 * (met: its path below the walk's start, malloc'd; freed by
 * bw_nest_clear). Shared by a walk's worker threads. */
enum { BW_NEST_MAX = 64 };
typedef struct bw_nest {
  int self;                   /* the caller's index of the walk's own root */
  size_t n;
  struct {
    uint64_t dev, ino;
    int root;                 /* the caller's index of the root */
    char *_Atomic met;
  } v[BW_NEST_MAX];
} bw_nest;

/* The root whose directory is (dev, ino), recording where it was met
 * (path, len); -1 if none. */
int bw_nest_enter(bw_nest *nest, uint64_t dev, uint64_t ino, const char *path, size_t len);
void bw_nest_clear(bw_nest *nest);

/* An entry the walk holds for the caller's verdict (bw_walk_opts.defer,
 * bw_list_opts.defer) */
typedef struct bw_wjudge {
  const char *path; /* below the walk's start */
  char type;        /* 'f', 'd', 'l', 'o' */
  size_t nest_at;   /* below another root's directory: where that root's
                       in-root paths start in path (0: not below one) */
  int root;         /* and that root (bw_nest's caller index), else 0 */
} bw_wjudge;

typedef struct bw_list_opts {
  int max_depth;       /* 0 = only the directory itself */
  int include_hidden;
  size_t max_entries;  /* entries delivered before we only count */
  size_t count_limit;  /* stop counting omitted entries here */
  /* Entries whose in-root path the rules deny reading are left out (not
   * delivered, not counted as omitted, a directory not entered) and
   * counted in *skipped_policy. rules, base and skipped_policy may be
   * NULL; base is the in-root path of rel ("." the root), NULL: rel made
   * canonical. */
  const struct bw_rules *rules;
  const char *base;
  size_t *skipped_policy;
  bw_nest *nest; /* other roots' directories: below one, its in-root paths (or NULL) */
  /* Entries whose in-root path these match (after rules) are judged
   * before they are delivered or entered: judge (on this thread, one at a
   * time) sets *allow; a refused one is left out and counted as the
   * rules' are, a non-zero return stops the listing with that code.
   * Without judge every such entry is refused. NULL: none. As
   * bw_walk_opts.defer: a policy's check_paths, asked in the one walk. */
  const struct bw_rules *defer;
  int (*judge)(void *judge_arg, const bw_wjudge *items, size_t n, unsigned char *allow);
  void *judge_arg;
} bw_list_opts;

/* Calls cb for each entry in sorted order (depth first); cb returns 0. */
typedef int (*bw_list_cb)(void *arg, const bw_entry *e);
int bw_list(const bw_root *r, const char *rel, const bw_list_opts *o,
            bw_list_cb cb, void *arg, size_t *omitted);

/* lstat semantics; target receives a symlink's text (or "") */
int bw_stat(const bw_root *r, const char *rel, struct stat *st,
            char *target, size_t target_size);

/* ---- Landlock confinement (confine.c) ---- */

enum {
  BW_LANDLOCK_READ,  /* read and list beneath it: a read-only root */
  BW_LANDLOCK_ALL,   /* every right beneath it: a read-write root */
  BW_LANDLOCK_FILES, /* read files, no listing: code, config (or this file) */
  BW_LANDLOCK_LOG,   /* create, write and rename files: a log and rotation */
};

typedef struct bw_landlock_rule {
  int fd;     /* a directory or a regular file (O_PATH is enough) */
  int access; /* BW_LANDLOCK_* */
} bw_landlock_rule;

/* Restrict this process (threads created later included) to the rules.
 * *abi is the Landlock ABI used, 0 if the kernel has none (not an error). */
int bw_landlock(const bw_landlock_rule *rules, int n, int *abi);

#endif
