/*
 * mhd.h - libmicrohttpd, opened when the first listener starts (mhd.c).
 * `burrow mcp --http` is its only user, and the library brings GnuTLS and
 * its chain, which would cost every other start (a `burrow call`, a stdio
 * server, an engine's host) their loading and initialising. http.c
 * includes this instead of <microhttpd.h>: the calls below go through the
 * table bw_mhd_load fills.
 */
#ifndef BURROW_MHD_H
#define BURROW_MHD_H

#include <stddef.h>
#include <microhttpd.h>

typedef struct bw_mhd_api {
  __typeof__(&MHD_start_daemon) start_daemon;
  __typeof__(&MHD_stop_daemon) stop_daemon;
  __typeof__(&MHD_get_daemon_info) get_daemon_info;
  __typeof__(&MHD_get_connection_info) get_connection_info;
  __typeof__(&MHD_lookup_connection_value) lookup_connection_value;
  __typeof__(&MHD_get_connection_values) get_connection_values;
  __typeof__(&MHD_create_response_from_buffer) create_response_from_buffer;
  __typeof__(&MHD_create_response_from_callback) create_response_from_callback;
  __typeof__(&MHD_add_response_header) add_response_header;
  __typeof__(&MHD_queue_response) queue_response;
  __typeof__(&MHD_destroy_response) destroy_response;
  __typeof__(&MHD_set_connection_option) set_connection_option;
  __typeof__(&MHD_suspend_connection) suspend_connection;
  __typeof__(&MHD_resume_connection) resume_connection;
} bw_mhd_api;

extern bw_mhd_api bw_mhd;

/* Open the library once (thread-safe); 0, or -1 with the reason in err. */
int bw_mhd_load(char *err, size_t errlen);

#define MHD_start_daemon bw_mhd.start_daemon
#define MHD_stop_daemon bw_mhd.stop_daemon
#define MHD_get_daemon_info bw_mhd.get_daemon_info
#define MHD_get_connection_info bw_mhd.get_connection_info
#define MHD_lookup_connection_value bw_mhd.lookup_connection_value
#define MHD_get_connection_values bw_mhd.get_connection_values
#define MHD_create_response_from_buffer bw_mhd.create_response_from_buffer
#define MHD_create_response_from_callback bw_mhd.create_response_from_callback
#define MHD_add_response_header bw_mhd.add_response_header
#define MHD_queue_response bw_mhd.queue_response
#define MHD_destroy_response bw_mhd.destroy_response
#define MHD_set_connection_option bw_mhd.set_connection_option
#define MHD_suspend_connection bw_mhd.suspend_connection
#define MHD_resume_connection bw_mhd.resume_connection

#endif
