/*
 * dynlib.h - a shared library opened with dlopen the first time it is
 * needed (dynlib.c), so a start that never needs it never loads it: every
 * symbol its user calls is looked up at once, and a missing one fails the
 * load, never a later call. Users: mhd.c (libmicrohttpd, for --http) and
 * charset.c (libuchardet, for text that is not UTF-8).
 */
#ifndef BURROW_DYNLIB_H
#define BURROW_DYNLIB_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>

#include "core.h" /* BW_SHARED */

typedef struct bw_dynsym {
  void **slot; /* where the address goes (a function pointer's storage) */
  const char *name;
} bw_dynsym;

typedef struct bw_dynlib {
  const char *soname;  /* the ABI the header describes: "libuchardet.so.0" */
  const char *package; /* the Debian package that ships it, for the message */
  const bw_dynsym *syms;
  size_t nsyms;
  pthread_mutex_t lock;
  _Atomic int state; /* 0 not tried, 1 loaded, -1 failed (for good) */
  char why[256];     /* why not, when not */
} bw_dynlib;

#define BW_DYNLIB(soname, package, syms) \
  {(soname), (package), (syms), sizeof(syms) / sizeof *(syms), PTHREAD_MUTEX_INITIALIZER, 0, ""}

/* Open the library once (thread-safe; later calls cost one atomic load):
 * 0, or -1 with the reason in err (when err is not NULL). */
BW_SHARED int bw_dynlib_load(bw_dynlib *lib, char *err, size_t errlen);

#endif
