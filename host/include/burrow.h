/*
 * burrow.h - embedding API of burrow, the sandboxed filesystem tool host.
 *
 * A host serves tools (read_file, write_file, list_dir, stat, ...) over the
 * roots its configuration names; arguments and results are JSON text.
 *
 * Ownership: every char * returned by burrow is malloc'd for the caller and
 * released with burrow_free(). Threads: a host owns one lua_State and must be
 * used by one thread at a time; two hosts on two threads run concurrently.
 * ABI: functions are only added within a major version (BURROW_VERSION_MAJOR);
 * burrow_host stays opaque.
 */
#ifndef BURROW_H
#define BURROW_H

#ifdef __cplusplus
extern "C" {
#endif

#define BURROW_VERSION_MAJOR 0
#define BURROW_VERSION_MINOR 1
#define BURROW_VERSION_PATCH 0
#define BURROW_VERSION_STRING "0.1.0"

typedef struct burrow_host burrow_host;

/* Result codes of burrow_call. */
enum {
  BURROW_OK = 0,        /* *result_json holds the tool's result */
  BURROW_TOOL_ERROR = 1, /* *result_json holds {"error":{"code","message"}} */
  BURROW_USAGE = 2       /* bad arguments to the API itself (NULL host...) */
};

/* Open a host. config_yaml is YAML configuration text (docs/config.md;
 * relative paths start at the current directory), NULL to serve the current
 * directory, or a single root "DIR[:MOUNT][:ro]". On failure returns NULL and,
 * if errmsg is not NULL, a message (config errors say "config:LINE:COL: ...")
 * to burrow_free(). */
burrow_host *burrow_open(const char *config_yaml, char **errmsg);

/* Call a tool with JSON arguments ("{}" if NULL). *result_json receives the
 * JSON result or error object (burrow_free it). */
int burrow_call(burrow_host *h, const char *tool, const char *args_json,
                char **result_json);

/* The tool list as JSON, in format "mcp" (default), "openai" or "anthropic". */
char *burrow_tools(burrow_host *h, const char *format);

/* Approval of a policy's "ask": return nonzero to let the call go ahead.
 * tool, operation ("read", "write", "delete", "list"), path (as the agent
 * wrote it) and reason are valid during the call only. Without a callback an
 * "ask" is denied with a message saying approval was needed. */
typedef int (*burrow_approve_fn)(void *ud, const char *tool,
                                 const char *operation, const char *path,
                                 const char *reason);
void burrow_set_approval(burrow_host *h, burrow_approve_fn fn, void *ud);

/* The library's version string ("0.1.0"). */
const char *burrow_version(void);

void burrow_free(void *p);
void burrow_close(burrow_host *h);

#ifdef __cplusplus
}
#endif

#endif
