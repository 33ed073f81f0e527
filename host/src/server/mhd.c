/*
 * mhd.c - libmicrohttpd opened with dlopen the first time a listener
 * starts (see mhd.h): by the soname of the ABI the header describes
 * (Debian 12: libmicrohttpd12), every function burrow calls looked up at
 * once (dynlib.c), so a missing one fails the start, never a request.
 */
#include "mhd.h"

#include "dynlib.h"

bw_mhd_api bw_mhd;

static const bw_dynsym fns[] = {
    {(void **)&bw_mhd.start_daemon, "MHD_start_daemon"},
    {(void **)&bw_mhd.stop_daemon, "MHD_stop_daemon"},
    {(void **)&bw_mhd.get_daemon_info, "MHD_get_daemon_info"},
    {(void **)&bw_mhd.get_connection_info, "MHD_get_connection_info"},
    {(void **)&bw_mhd.lookup_connection_value, "MHD_lookup_connection_value"},
    {(void **)&bw_mhd.get_connection_values, "MHD_get_connection_values"},
    {(void **)&bw_mhd.create_response_from_buffer, "MHD_create_response_from_buffer"},
    {(void **)&bw_mhd.create_response_from_callback, "MHD_create_response_from_callback"},
    {(void **)&bw_mhd.add_response_header, "MHD_add_response_header"},
    {(void **)&bw_mhd.queue_response, "MHD_queue_response"},
    {(void **)&bw_mhd.destroy_response, "MHD_destroy_response"},
    {(void **)&bw_mhd.set_connection_option, "MHD_set_connection_option"},
    {(void **)&bw_mhd.suspend_connection, "MHD_suspend_connection"},
    {(void **)&bw_mhd.resume_connection, "MHD_resume_connection"},
};

static bw_dynlib lib = BW_DYNLIB("libmicrohttpd.so.12", "libmicrohttpd12", fns);

int bw_mhd_load(char *err, size_t errlen) { return bw_dynlib_load(&lib, err, errlen); }
