/*
 * burrow.h - embedding API of burrow, the sandboxed filesystem tool host.
 *
 * A host serves tools (read_file, write_file, edit_file, list_dir, grep, ...)
 * over the roots its configuration names; arguments and results cross the
 * API as JSON text (UTF-8, object keys sorted). docs/embedding.md is the
 * guide; docs/tools.md lists the tools and their error codes.
 *
 *   burrow_host *h = burrow_open("roots: [{path: ., mount: /workspace}]", &err);
 *   char *res = NULL;
 *   int rc = burrow_call(h, "read_file", "{\"path\":\"README.md\"}", &res);
 *   ... rc == BURROW_OK: res is the result object ...
 *   burrow_free(res);
 *   burrow_close(h);
 *
 * Link: pkg-config --cflags --libs burrow (add --static for libburrow.a).
 * This header does not include lua.h; only burrow_open_state() and
 * burrow_open_state_file() mention a lua_State, as an incomplete type.
 *
 * OWNERSHIP. Every char * burrow returns (*errmsg, *result_json, the return
 * of burrow_tools) is malloc'd for the caller, who releases it with
 * burrow_free(). Strings passed in are only read during the call. Strings
 * passed to the approval callback live for the callback only.
 * burrow_free(NULL) and burrow_close(NULL) do nothing.
 *
 * THREADS. A host must be used by one thread at a time; different hosts run
 * on different threads at the same time (each has its own Lua state, or its
 * own thread of the engine's state: see burrow_open_state). A call made on a
 * host that is already inside a call (from another thread, or from its own
 * approval callback) is refused with BURROW_USAGE. Process-wide state
 * (the resolver choice, the SIGBUS guard of mapped reads, the umask read) is
 * listed in docs/embedding.md.
 *
 * Once a host has a worker (its first burrow_submit or burrow_fd, below),
 * its calls run on that one worker thread, one at a time, in the order
 * submitted: burrow_call queues behind the submitted calls and waits;
 * burrow_tools and burrow_set_approval wait for the call in flight instead
 * of being refused. burrow_submit, burrow_cancel, burrow_fd, burrow_poll,
 * burrow_take, burrow_set_progress, burrow_set_approver, burrow_answer and
 * burrow_take_ask may be called from any thread, but callbacks (the
 * approver's too) run only inside burrow_poll, on the thread that calls it
 * (the engine's: call it from one thread). Without an approver,
 * burrow_set_approval's callback answers a submitted call on the worker
 * thread. burrow_close, from a thread outside any callback, cancels the
 * call in flight, answers nothing more and joins the worker; callbacks not
 * yet polled never run.
 *
 * ERRORS. burrow_call returns BURROW_OK, BURROW_TOOL_ERROR or BURROW_USAGE.
 * A tool error's JSON carries a stable code string ("ENOENT",
 * "OUTSIDE_ROOT", "POLICY_DENIED", "INVALID_ARGUMENT", ...): match on the
 * code, not on the message text.
 *
 * VERSIONS AND ABI. BURROW_VERSION_* give the header's version,
 * burrow_version() the library's. Within a major version functions are only
 * added, never changed or removed, and burrow_host stays opaque; the shared
 * library's soname is libburrow.so.MAJOR (libburrow.so.0). Before 1.0, a minor
 * version may still add result fields to tools (never remove them).
 */
#ifndef BURROW_H
#define BURROW_H

#ifdef __cplusplus
extern "C" {
#endif

/* libburrow is built with hidden visibility: what this header declares is
 * all it exports (to its last line). */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

#define BURROW_VERSION_MAJOR 0
#define BURROW_VERSION_MINOR 1
#define BURROW_VERSION_PATCH 0
#define BURROW_VERSION_STRING "0.1.0"
/* MAJOR * 10000 + MINOR * 100 + PATCH, for #if */
#define BURROW_VERSION_NUM                                                  \
  (BURROW_VERSION_MAJOR * 10000 + BURROW_VERSION_MINOR * 100 +              \
   BURROW_VERSION_PATCH)

typedef struct burrow_host burrow_host;
struct lua_State;


/* Result codes of burrow_call. */
enum {
  BURROW_OK = 0,         /* *result_json holds the tool's result object */
  BURROW_TOOL_ERROR = 1, /* *result_json holds {"error":{"code","message",
                            "details"}} (details: docs/tools.md "Errors") */
  BURROW_USAGE = 2       /* misuse: a NULL argument, or the host is busy;
                            *result_json is not written */
};

/* Open a host. config_yaml is
 *   - NULL or "": serve the current directory, read-write;
 *   - YAML configuration text (roots, tools, policies, caps, audit:
 *     docs/config.md); relative paths start at the current directory;
 *   - a text that is one plain YAML string: a single root in the CLI's
 *     syntax, "DIR[:MOUNT][:ro]" (e.g. "/srv/repo:/workspace:ro").
 * On failure returns NULL and, if errmsg is not NULL, stores a message
 * ("CODE: ..." or "config:LINE:COL: ...") for the caller to burrow_free. */
burrow_host *burrow_open(const char *config_yaml, char **errmsg);

/* Open a host from a YAML configuration file; relative paths in it start at
 * the file's directory (as with `burrow mcp --config FILE`). Errors name the
 * file: "FILE:LINE:COL: ...". */
burrow_host *burrow_open_file(const char *path, char **errmsg);

/* Open a host on a lua_State the engine owns (same arguments as burrow_open
 * and burrow_open_file otherwise). burrow runs on a thread of L (anchored in
 * L's registry, with no debug hook) with its own copies of the standard
 * libraries, its own globals and its own package.loaded/package.preload:
 * nothing is added to or changed in the engine's globals, libraries or
 * package.loaded. burrow's entries are swapped into L's registry for the
 * duration of each call and swapped out before it returns (also around the
 * approval callback). What stays shared is listed in docs/embedding.md
 * ("A host on the engine's lua_State"): the allocator and collector, the
 * metatables named "burrow.*" in the registry, and the "FILE*" metatable.
 * L must be a Lua 5.4 state of the same liblua burrow links; call
 * burrow_close(h) before lua_close(L), and use h only from the thread that
 * runs L, never while L runs on another thread. */
burrow_host *burrow_open_state(struct lua_State *L, const char *config_yaml,
                               char **errmsg);
burrow_host *burrow_open_state_file(struct lua_State *L, const char *path,
                                    char **errmsg);

/* Call a tool with JSON arguments (NULL means "{}"). On BURROW_OK and
 * BURROW_TOOL_ERROR, *result_json receives the result or error object
 * (NULL only if memory ran out; after an internal Lua error, the bare error
 * text) for the caller to burrow_free. */
int burrow_call(burrow_host *h, const char *tool, const char *args_json,
                char **result_json);

/* The tool list as a JSON array in format "mcp" (also for NULL), "openai" or
 * "anthropic"; NULL for a NULL or busy host or an unknown format. */
char *burrow_tools(burrow_host *h, const char *format);

/* Approval of a policy's "ask": during burrow_call, on the calling thread,
 * burrow calls fn(ud, tool, operation, path, reason) and lets the call go
 * ahead if it returns nonzero; zero is POLICY_DENIED. operation is "read",
 * "write", "delete" or "list"; path is as the agent wrote it. fn NULL
 * removes the callback; without one an "ask" is denied with a message saying
 * approval was needed. fn must not call back into the same host. */
typedef int (*burrow_approve_fn)(void *ud, const char *tool,
                                 const char *operation, const char *path,
                                 const char *reason);
void burrow_set_approval(burrow_host *h, burrow_approve_fn fn, void *ud);

/* NON-BLOCKING CALLS (hosts from burrow_open and burrow_open_file; a host
 * on an engine's lua_State has no worker: burrow_submit returns 0 and
 * burrow_fd -1 for it).
 *
 *   int fd = burrow_fd(h);                 add fd to the engine's loop
 *   unsigned long long id = burrow_submit(h, "grep", "{\"pattern\":\"x\"}", done, ud);
 *   ... fd readable: burrow_poll(h) runs done(ud, id, rc, result_json)
 *
 * burrow_submit copies tool and args_json, queues the call and returns its
 * id (> 0) at once; 0 for a NULL host or tool, a host without a worker, or
 * no memory. When the call ends, cb(ud, id, rc, result_json) runs inside a
 * later burrow_poll on the polling thread; rc and result_json are as
 * burrow_call's, result_json lives for the callback only. A call submitted
 * with cb NULL waits instead for burrow_take. */
typedef void (*burrow_done_fn)(void *ud, unsigned long long id, int rc,
                               const char *result_json);
unsigned long long burrow_submit(burrow_host *h, const char *tool,
                                 const char *args_json, burrow_done_fn cb,
                                 void *ud);

/* An eventfd (non-blocking, close-on-exec, owned by the host: do not close
 * or read it) that becomes readable when a completion or a progress report
 * waits; -1 for a NULL host or one without a worker. Level-triggered use
 * (poll, epoll without EPOLLET, libuv's uv_poll) is simplest: it stays
 * readable until burrow_poll (or burrow_take, for calls without a callback)
 * has taken everything. */
int burrow_fd(burrow_host *h);

/* Run the callbacks of what has happened: progress reports first, then
 * completions, in order. Returns the number of completions delivered.
 * Never blocks. A callback may submit, cancel, or burrow_call (which waits
 * for the worker); it must not call burrow_poll or burrow_close. */
int burrow_poll(burrow_host *h);

/* The next completion of a call submitted without a callback: 1 and *id,
 * *rc, *result_json (for burrow_free), or 0 when none waits. For bindings
 * that cannot take C callbacks (LuaJIT FFI, other runtimes). */
int burrow_take(burrow_host *h, unsigned long long *id, int *rc,
                char **result_json);

/* Cancel a submitted call: 1 if it was queued or running, 0 if unknown or
 * finished. A queued call completes with a CANCELLED tool error and never
 * runs; a running grep or glob stops at its next check (between files and
 * at each start position of the regex: well under 100 ms) and completes
 * with its partial result and "cancelled": true; other tools finish. */
int burrow_cancel(burrow_host *h, unsigned long long id);

/* Progress of submitted walks (grep, glob: every 100 ms of searching):
 * fn(ud, id, done, total, message) runs inside burrow_poll, with the call's
 * ud; done counts entries, total is -1 when unknown; message lives for the
 * callback only. Only the latest report of a call is kept. NULL: none. */
typedef void (*burrow_progress_fn)(void *ud, unsigned long long id,
                                   double done, double total,
                                   const char *message);
void burrow_set_progress(burrow_host *h, burrow_progress_fn fn);

/* APPROVAL OF SUBMITTED CALLS. A policy's "ask" in a call made with
 * burrow_submit is put to the engine, on the thread that polls:
 *
 *   static int ask(void *ud, unsigned long long question, const char *tool,
 *                  const char *operation, const char *path,
 *                  const char *reason) {
 *     open_dialog(question, tool, operation, path, reason);  (the strings
 *     return BURROW_ASK_LATER;                  live for the callback only)
 *   }
 *   burrow_set_approver(h, ask, ud, 30000);
 *   ... the user clicks: burrow_answer(h, question, 1, NULL);
 *
 * Each question has its own id (never a call's, never reused); its call is
 * burrow_ask_call(h, question). An answer counts only for a question that
 * was handed out (to fn or burrow_take_ask) and is still open: a second
 * answer, or one sent before the question was handed out, changes nothing.
 *
 * With timeout_ms > 0, the worker stops at the question and waits for its
 * answer: fn(ud, id, tool, operation, path, reason) runs inside a later
 * burrow_poll and returns 1 (allow), 0 (deny) or BURROW_ASK_LATER, to answer
 * later, from any thread, with burrow_answer. With fn NULL the questions wait
 * for burrow_take_ask instead (bindings without C callbacks). The fd is
 * readable while a question waits to be handed out. No answer within
 * timeout_ms, burrow_cancel of the call or burrow_close: denied, and the
 * POLICY_DENIED message says which. timeout_ms <= 0 turns it off (the
 * default; a question waiting is denied): a submitted call's ask goes to
 * burrow_set_approval's callback, on the worker thread, or is denied when
 * there is none. burrow_call's asks always go to burrow_set_approval's
 * callback (the thread waiting in burrow_call may be the one that polls).
 * fn must not call burrow_call, burrow_tools or burrow_set_approval on this
 * host (they would wait for the call that waits for the answer, until the
 * timeout); it may answer, cancel and submit. */
#define BURROW_ASK_LATER (-1)
typedef int (*burrow_ask_fn)(void *ud, unsigned long long id, const char *tool,
                             const char *operation, const char *path,
                             const char *reason);
void burrow_set_approver(burrow_host *h, burrow_ask_fn fn, void *ud,
                         int timeout_ms);

/* Answer question id (the approver's, or burrow_take_ask's): allow nonzero
 * lets its call go ahead; why (may be NULL) is added to the POLICY_DENIED
 * message of a refusal. 1 if that question was handed out and waiting; 0
 * if not (answered, timed out, not handed out yet, or no such question). */
int burrow_answer(burrow_host *h, unsigned long long id, int allow,
                  const char *why);
/* The call a question still open belongs to (burrow_submit's id), or 0. */
unsigned long long burrow_ask_call(burrow_host *h, unsigned long long question);

/* The pull form of the approver (set with fn NULL): 1 and the question's
 * *id and *ask_json, {"call","operation","path","reason","tool"} (call:
 * burrow_submit's id; for burrow_free), for a question not yet handed out;
 * 0 when none waits. Answer with burrow_answer(h, *id, ...). */
int burrow_take_ask(burrow_host *h, unsigned long long *id, char **ask_json);

/* The library's version string, e.g. "0.1.0" (static: do not free). */
const char *burrow_version(void);

/* Release a string burrow returned. */
void burrow_free(void *p);

/* Close the roots' fds, the policies and the audit log, and the Lua state
 * (or, on an engine's state, drop burrow's thread and tables for the
 * engine's collector). */
void burrow_close(burrow_host *h);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif
