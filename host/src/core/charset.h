/*
 * charset.h - encodings other than UTF-8 (charset.c): detection (BOM,
 * UTF-8 validity, libuchardet) and the round trip through UTF-8 (iconv).
 * Plain C: no Lua here.
 */
#ifndef BURROW_CHARSET_H
#define BURROW_CHARSET_H

#include "core.h"

typedef struct bw_charset {
  char name[48]; /* lower case: "utf-8", "utf-16le", "shift_jis", ... */
  size_t bom;    /* bytes of BOM at the start (0 if none) */
  int utf8;      /* UTF-8 (or no better answer): the bytes are served as they are */
} bw_charset;

/* The fallback list when the operator gives none (config `charsets:`). */
#define BW_CHARSET_FALLBACK "windows-1252"

/* The encoding of a file's bytes: a BOM, else UTF-16 by its NULs, else
 * UTF-8 when valid, else libuchardet's guess on the first 64 KiB if
 * burrow's rule trusts it, else the first of fallback (comma-separated
 * names, NULL: BW_CHARSET_FALLBACK) that defines every byte, else the
 * bytes as they are. BW_BINARY when there is a NUL in the first 8 KiB
 * and no UTF-16/32 explains it. */
int bw_charset_detect(const char *d, size_t n, const char *fallback, bw_charset *cs);
/* Is name one a fallback list may hold: known to iconv, and reading ASCII
 * as ASCII (not UTF-16/32, which have a BOM or NULs to be told by)? */
int bw_charset_fallback_ok(const char *name);
/* The length of a BOM at d (0 if none), and its encoding's name. */
size_t bw_charset_bom(const char *d, size_t n, const char **name);
/* The BOM bytes of an encoding ("" and 0 when it has none). */
const char *bw_charset_bom_bytes(const char *charset, size_t *len);
/* Does iconv know this encoding? */
int bw_charset_known(const char *name);
/* Offset of the first byte that is not valid UTF-8 (n when all are). */
size_t bw_utf8_valid_upto(const char *s, size_t n);
/* s (no BOM) in charset to UTF-8 (malloc'd); INVALID_ARGUMENT with the
 * offset of a byte the encoding does not have. */
int bw_charset_decode(const char *charset, const char *s, size_t n, char **out,
                      size_t *olen);
/* UTF-8 s to charset (malloc'd, no BOM added); INVALID_ARGUMENT naming
 * the first character it cannot hold and its line. */
int bw_charset_encode(const char *charset, const char *s, size_t n, char **out,
                      size_t *olen);

#endif
