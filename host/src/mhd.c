/*
 * mhd.c - libmicrohttpd opened with dlopen the first time a listener
 * starts (see mhd.h): by the soname of the ABI the header describes
 * (Debian 12: libmicrohttpd12), every function burrow calls looked up at
 * once, so a missing one fails the start, never a request.
 */
#include "mhd.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>

#define MHD_SONAME "libmicrohttpd.so.12"

bw_mhd_api bw_mhd;

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;
static char why[256]; /* why not, when not */

static void load(void) {
  void *lib = dlopen(MHD_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    snprintf(why, sizeof why, "cannot load %s (Debian: apt-get install libmicrohttpd12): %s",
             MHD_SONAME, dlerror());
    return;
  }
  struct { void **slot; const char *name; } fns[] = {
      {(void **)&bw_mhd.start_daemon, "MHD_start_daemon"},
      {(void **)&bw_mhd.stop_daemon, "MHD_stop_daemon"},
      {(void **)&bw_mhd.get_daemon_info, "MHD_get_daemon_info"},
      {(void **)&bw_mhd.get_connection_info, "MHD_get_connection_info"},
      {(void **)&bw_mhd.lookup_connection_value, "MHD_lookup_connection_value"},
      {(void **)&bw_mhd.create_response_from_buffer, "MHD_create_response_from_buffer"},
      {(void **)&bw_mhd.create_response_from_callback, "MHD_create_response_from_callback"},
      {(void **)&bw_mhd.add_response_header, "MHD_add_response_header"},
      {(void **)&bw_mhd.queue_response, "MHD_queue_response"},
      {(void **)&bw_mhd.destroy_response, "MHD_destroy_response"},
  };
  for (size_t i = 0; i < sizeof fns / sizeof *fns; i++) {
    *fns[i].slot = dlsym(lib, fns[i].name);
    if (!*fns[i].slot) {
      snprintf(why, sizeof why, "%s has no %s", MHD_SONAME, fns[i].name);
      return;
    }
  }
  loaded = 1;
}

int bw_mhd_load(char *err, size_t errlen) {
  pthread_once(&once, load);
  if (loaded) return 0;
  snprintf(err, errlen, "%s", why);
  return -1;
}
