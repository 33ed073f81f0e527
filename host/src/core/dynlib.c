/*
 * dynlib.c - open a shared library on first use and resolve all of its
 * user's symbols at once (dynlib.h). The outcome is kept: a library that
 * is missing is not looked for again on every call.
 */
#include "dynlib.h"

#include <dlfcn.h>
#include <stdio.h>

static int load(bw_dynlib *l) {
  void *h = dlopen(l->soname, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *e = dlerror();
    snprintf(l->why, sizeof l->why, "cannot load %s (Debian: apt-get install %s): %s",
             l->soname, l->package, e ? e : "not found");
    return -1;
  }
  for (size_t i = 0; i < l->nsyms; i++) {
    *l->syms[i].slot = dlsym(h, l->syms[i].name);
    if (!*l->syms[i].slot) {
      snprintf(l->why, sizeof l->why, "%s has no %s", l->soname, l->syms[i].name);
      for (size_t k = 0; k <= i; k++) *l->syms[k].slot = NULL;
      dlclose(h);
      return -1;
    }
  }
  return 1;
}

int bw_dynlib_load(bw_dynlib *l, char *err, size_t errlen) {
  int s = atomic_load_explicit(&l->state, memory_order_acquire);
  if (!s) {
    pthread_mutex_lock(&l->lock);
    if (!atomic_load_explicit(&l->state, memory_order_relaxed))
      atomic_store_explicit(&l->state, load(l), memory_order_release);
    pthread_mutex_unlock(&l->lock);
    s = atomic_load_explicit(&l->state, memory_order_acquire);
  }
  if (s == 1) return 0;
  if (err && errlen) snprintf(err, errlen, "%s", l->why);
  return -1;
}
