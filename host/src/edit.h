/*
 * edit.h - the edit engine (edit.c) and the other mutations beneath a root
 * (mutate.c). Plain C over bytes and root fds: no Lua here. Functions
 * return a bw_code and fill out-parameters, as in core.h.
 */
#ifndef BURROW_EDIT_H
#define BURROW_EDIT_H

#include "core.h"

/* ---- matching and splicing (edit.c) ---- */

/* Matching levels, strictest first; match = "loose" tries them in order. */
enum {
  BW_LEVEL_EXACT = 0, /* bytes (an LF old_text matches CRLF lines) */
  BW_LEVEL_RSTRIP,    /* whole lines, trailing whitespace ignored */
  BW_LEVEL_INDENT,    /* whole lines, indentation ignored, new_text re-indented */
  BW_LEVEL_UNICODE,   /* and Unicode punctuation folded (quotes, dashes, NBSP) */
  BW_LEVELS
};
const char *bw_level_name(int level);

typedef struct bw_edit {
  const char *old_text;
  size_t old_len;
  const char *new_text;
  size_t new_len;
  int replace_all;
  size_t count; /* out: replacements made */
  int level;    /* out: the level that matched */
  size_t line;  /* out: 1-based line of the first match */
} bw_edit;

enum { BW_DIAG_LINES = 20, BW_DIAG_TEXT = 160 };

/* Why an edit failed, for a message that teaches. Lines are 1-based. */
typedef struct bw_edit_diag {
  size_t edit;                  /* the failing edit (0-based) */
  size_t other;                 /* OVERLAPPING_EDITS: the edit it overlaps */
  int level;                    /* AMBIGUOUS_TEXT: the level that found several */
  size_t matches;               /* AMBIGUOUS_TEXT: how many places */
  size_t lines[BW_DIAG_LINES];  /* AMBIGUOUS_TEXT: the first of their lines */
  size_t nlines;
  size_t near_line;             /* NOT_FOUND_TEXT: nearest candidate, 0 = none */
  int near_level;               /* a looser level that matches there, or -1 */
  int near_percent;             /* how similar the nearest line is */
  char near_text[BW_DIAG_TEXT]; /* the file's line there */
  size_t diverge_line;          /* first file line where the block differs */
  char want_text[BW_DIAG_TEXT]; /* old_text's line there */
  char have_text[BW_DIAG_TEXT]; /* the file's line there */
  const char *differs;          /* what differs there ("indentation", ...) */
} bw_edit_diag;

typedef struct bw_edit_opts {
  int loose;       /* try the ladder past the exact level */
  size_t context;  /* lines of diff context */
  size_t max_diff; /* diff bytes kept (whole lines); the rest is cut */
} bw_edit_opts;

typedef struct bw_edit_out {
  char *text; /* the new content (malloc'd) */
  size_t len;
  char *diff; /* unified hunks ("@@ ..."), no file headers; NUL-terminated */
  size_t diff_len;
  int diff_truncated;
  size_t first_line; /* first changed line */
  size_t added, removed;
  size_t total_lines; /* lines of the original */
  bw_edit_diag diag;
} bw_edit_out;

/* Apply every edit to data (each matched against the original; all or
 * nothing). Line endings, BOM and the bytes outside the matched spans are
 * kept; new_text takes the line ending of the span it replaces. */
int bw_edit_apply(const char *data, size_t len, bw_edit *e, size_t n,
                  const bw_edit_opts *o, bw_edit_out *out);
/* Insert text as lines before line (1-based; total + 1 appends). */
int bw_insert_apply(const char *data, size_t len, size_t line, const char *text,
                    size_t tlen, const bw_edit_opts *o, bw_edit_out *out);
void bw_edit_out_free(bw_edit_out *out);

/* The same on a file beneath a root: read, apply, then an atomic
 * compare-and-set write against the hash of what was read. */
typedef struct bw_edit_file_opts {
  bw_edit_opts e;
  const char *expected_hash; /* NULL or "sha256:<hex>" */
  int dry_run;               /* compute, write nothing */
  size_t max_bytes;          /* largest file edited (max_file_size) */
  size_t keep_original;      /* copy the old bytes out up to this size */
} bw_edit_file_opts;

typedef struct bw_edit_file_res {
  bw_edit_out out;
  size_t old_size;
  char old_hash[BW_HASH_STR];
  char hash[BW_HASH_STR];
  char current_hash[BW_HASH_STR]; /* HASH_MISMATCH: what is there now */
  char *original;                 /* the old bytes when kept, else NULL */
  size_t original_len;
} bw_edit_file_res;

int bw_edit_file(const bw_root *r, const char *rel, bw_edit *e, size_t n,
                 const bw_edit_file_opts *o, bw_edit_file_res *res);
int bw_insert_file(const bw_root *r, const char *rel, size_t line,
                   const char *text, size_t tlen, const bw_edit_file_opts *o,
                   bw_edit_file_res *res);
void bw_edit_file_res_free(bw_edit_file_res *res);

/* A regular file's bytes in memory of our own (malloc'd: a mapping could
 * shrink under its user), at most max bytes. */
int bw_read_copy(const bw_root *r, const char *rel, size_t max, char **data,
                 size_t *len);

/* ---- other mutations (mutate.c) ---- */

/* mkdir; parents = mkdir -p. *created is 0 when it already existed. */
int bw_mkdir(const bw_root *r, const char *rel, int parents, int *created);

typedef struct bw_remove_res {
  size_t files; /* non-directories removed (links count here) */
  size_t dirs;
} bw_remove_res;

/* Remove a file, a link (never its target) or, with recursive, a tree.
 * Never follows links, never crosses a mount, refuses the root itself. An
 * expected_hash makes removing a regular file compare-and-set. */
int bw_remove(const bw_root *r, const char *rel, int recursive,
              const char *expected_hash, bw_remove_res *res);

/* rename; RENAME_NOREPLACE unless overwrite. A link moves as a link. */
int bw_move(const bw_root *rs, const char *src, const bw_root *rd,
            const char *dst, int overwrite);

typedef struct bw_copy_opts {
  int overwrite;
  int recursive;
  size_t max_bytes; /* largest file copied */
} bw_copy_opts;

typedef struct bw_copy_res {
  size_t files, dirs, links, skipped;
  size_t bytes;
  char hash[BW_HASH_STR]; /* a single file's content hash */
} bw_copy_res;

/* Copy a file, or with recursive a tree (links copied as links, FIFOs and
 * devices skipped, mounts not entered). Writes go through bw_write_file. */
int bw_copy(const bw_root *rs, const char *src, const bw_root *rd,
            const char *dst, const bw_copy_opts *o, bw_copy_res *res);

typedef struct bw_append_res {
  int created;
  size_t old_size, size;
  char hash[BW_HASH_STR]; /* of the whole file after the append */
} bw_append_res;

/* Append with O_APPEND on the resolved file; create it when absent. */
int bw_append(const bw_root *r, const char *rel, const void *data, size_t len,
              int create_dirs, size_t max_bytes, bw_append_res *res);

#endif
