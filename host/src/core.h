/*
 * core.h - the sandboxed core of burrow: roots held as directory fds,
 * resolution beneath them, reads, atomic writes, listing, hashing, text
 * scanning. Plain C: no Lua here. Every function returns a bw_code (0 = ok)
 * and fills out-parameters; a static detail string may explain the code.
 */
#ifndef BURROW_CORE_H
#define BURROW_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

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
  BW_CODE_COUNT
} bw_code;

const char *bw_code_name(int code);
/* Map an errno from a syscall on a resolved object to a code. */
int bw_code_from_errno(int err);

/* Per-thread detail for the last failure ("name too long", ...); static text. */
const char *bw_detail(void);
int bw_fail(int code, const char *detail); /* sets the detail, returns code */
void bw_clear_detail(void);

/* ---- roots and path mapping (root.c) ---- */

typedef struct bw_root {
  int fd;          /* O_PATH|O_DIRECTORY fd, held for the root's life */
  int readonly;
  dev_t dev;       /* st_dev of the root: walks never leave it */
  uint64_t mnt_id; /* mount id of the root (statx), 0 if unknown */
  char *mount;     /* absolute, normalised; the agent's name for the root */
  char *alias;     /* canonical host spelling accepted too (NULL if same or
                      if the mount is virtual) */
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

/* Pick the backend: BW_OPENAT2 falls back to BW_WALK for good when the
 * kernel lacks openat2 (ENOSYS, or EPERM from seccomp). */
void bw_set_backend(bw_backend b);
bw_backend bw_get_backend(void);
const char *bw_backend_name(void);
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
/* mkdir -p of rel beneath the root; each step acts on a parent fd. */
int bw_mkdirs(const bw_root *r, const char *rel);

/* ---- reading (fileio.c) ---- */

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
/* Read an open regular fd (size from st, never trusted beyond max_bytes). */
int bw_read_fd(int fd, const struct stat *st, size_t max_bytes, bw_buf *b);
void bw_buf_free(bw_buf *b);

/* Run fn(arg) so that a SIGBUS from a mapped file becomes BW_EIO. fn returns
 * a bw_code. Whatever fn allocated must be reachable from arg. */
int bw_guard(int (*fn)(void *arg), void *arg);

/* ---- hashing (hash.c) ---- */

enum { BW_HASH_HEX = 64 };
/* "sha256:" + 64 hex + NUL */
enum { BW_HASH_STR = 7 + BW_HASH_HEX + 1 };
int bw_sha256(const void *data, size_t len, char out[BW_HASH_STR]);

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

/* Line-numbered view "N\tline\n" of lines [first, first+limit) of a text.
 * res->out is owned by the caller even when this fails (or a SIGBUS guard
 * jumps out of it): free it. */
typedef struct bw_lines {
  char *out;          /* malloc'd text */
  size_t out_len;
  size_t first;       /* first line shown (1-based), 0 if none */
  size_t last;        /* last line shown */
  size_t next;        /* next line to read, 0 if the end was reached */
  int truncated;      /* stopped by max_bytes rather than limit or the end */
  size_t cut_lines;   /* lines cut at max_line */
  size_t out_cap;
} bw_lines;

int bw_number_lines(const char *data, size_t len, size_t first, size_t limit,
                    size_t max_line, size_t max_bytes, bw_lines *res);

/* Base64 (OpenSSL's codec). Caller frees *out. */
int bw_base64_encode(const void *data, size_t len, char **out, size_t *out_len);
int bw_base64_decode(const char *text, size_t len, char **out, size_t *out_len);

/* ---- writing (write.c) ---- */

typedef struct bw_write_opts {
  int create_dirs;           /* make missing parents */
  const char *expected_hash; /* NULL, "absent" or "sha256:<hex>" */
  int allow_symlink;         /* replace the target of an in-root link */
  int allow_hardlink;        /* replace a file with other links */
  size_t max_compare;        /* largest current file hashed for expected_hash */
} bw_write_opts;

typedef struct bw_write_res {
  int created;
  char hash[BW_HASH_STR];
  char current_hash[BW_HASH_STR]; /* on HASH_MISMATCH: what is there now */
} bw_write_res;

int bw_write_file(const bw_root *r, const char *rel, const void *data,
                  size_t len, const bw_write_opts *o, bw_write_res *res);
/* Remove stale temp files left in the directory fd by killed writers. */
void bw_sweep_temps(int dirfd);

/* ---- listing and stat (dir.c) ---- */

typedef struct bw_entry {
  const char *path;  /* relative to the listed directory */
  const char *name;
  char type;         /* 'f' file, 'd' dir, 'l' symlink, 'o' other */
  int depth;         /* 0 = direct child */
  struct stat st;    /* lstat data */
} bw_entry;

struct bw_rules; /* policy path rules (search.h, rules.c) */

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
} bw_list_opts;

/* Calls cb for each entry in sorted order (depth first); cb returns 0. */
typedef int (*bw_list_cb)(void *arg, const bw_entry *e);
int bw_list(const bw_root *r, const char *rel, const bw_list_opts *o,
            bw_list_cb cb, void *arg, size_t *omitted);

/* lstat semantics; target receives a symlink's text (or "") */
int bw_stat(const bw_root *r, const char *rel, struct stat *st,
            char *target, size_t target_size);

/* ---- Landlock confinement (confine.c) ---- */

typedef struct bw_landlock_rule {
  int fd;    /* a directory (O_PATH is enough) */
  int write; /* all rights beneath it, else read only */
} bw_landlock_rule;

/* Restrict this process (threads created later included) to the rules.
 * *abi is the Landlock ABI used, 0 if the kernel has none (not an error). */
int bw_landlock(const bw_landlock_rule *rules, int n, int *abi);

#endif
