/*
 * redis.c - one connection to Redis/Valkey (redis.h): the URL parsed,
 * a non-blocking socket under poll deadlines (connect, then each command
 * as a whole), TLS by libssl for rediss:// (certificate and host name
 * verified unless the operator turns it off), AUTH from a password file,
 * SELECT, and RESP by hiredis's formatter and reader. The password never
 * enters a message; SIGPIPE never reaches the process from here.
 */
#include "redis.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "dynlib.h"

/* ---- the libraries, opened on first use */

static struct {
  __typeof__(&redisReaderCreate) reader_create;
  __typeof__(&redisReaderFree) reader_free;
  __typeof__(&redisReaderFeed) reader_feed;
  __typeof__(&redisReaderGetReply) reader_get;
  __typeof__(&redisFormatCommandArgv) format;
  __typeof__(&redisFreeCommand) free_command;
  __typeof__(&freeReplyObject) free_reply;
} hr;

static const bw_dynsym hr_syms[] = {
    {(void **)&hr.reader_create, "redisReaderCreate"},
    {(void **)&hr.reader_free, "redisReaderFree"},
    {(void **)&hr.reader_feed, "redisReaderFeed"},
    {(void **)&hr.reader_get, "redisReaderGetReply"},
    {(void **)&hr.format, "redisFormatCommandArgv"},
    {(void **)&hr.free_command, "redisFreeCommand"},
    {(void **)&hr.free_reply, "freeReplyObject"},
};
static bw_dynlib hr_lib = BW_DYNLIB("libhiredis.so.0.14", "libhiredis0.14", hr_syms);

/* libssl (and the libcrypto it brings: its error queue is that copy's,
 * not the one linked into burrow) */
static struct {
  __typeof__(&TLS_client_method) client_method;
  __typeof__(&SSL_CTX_new) ctx_new;
  __typeof__(&SSL_CTX_free) ctx_free;
  __typeof__(&SSL_CTX_ctrl) ctx_ctrl;
  __typeof__(&SSL_CTX_set_verify) ctx_set_verify;
  __typeof__(&SSL_CTX_load_verify_locations) ctx_load_locations;
  __typeof__(&SSL_CTX_set_default_verify_paths) ctx_default_paths;
  __typeof__(&SSL_new) new_;
  __typeof__(&SSL_free) free_;
  __typeof__(&SSL_set_fd) set_fd;
  __typeof__(&SSL_ctrl) ctrl;
  __typeof__(&SSL_set1_host) set1_host;
  __typeof__(&SSL_get0_param) get0_param;
  __typeof__(&X509_VERIFY_PARAM_set1_ip_asc) set1_ip;
  __typeof__(&SSL_connect) connect;
  __typeof__(&SSL_read) read;
  __typeof__(&SSL_write) write;
  __typeof__(&SSL_shutdown) shutdown;
  __typeof__(&SSL_get_error) get_error;
  __typeof__(&SSL_get_verify_result) verify_result;
  __typeof__(&X509_verify_cert_error_string) verify_string;
  __typeof__(&ERR_get_error) err_get;
  __typeof__(&ERR_error_string_n) err_string;
  __typeof__(&ERR_clear_error) err_clear;
  __typeof__(&SSL_pending) pending;
} ssl;

static const bw_dynsym ssl_syms[] = {
    {(void **)&ssl.client_method, "TLS_client_method"},
    {(void **)&ssl.ctx_new, "SSL_CTX_new"},
    {(void **)&ssl.ctx_free, "SSL_CTX_free"},
    {(void **)&ssl.ctx_ctrl, "SSL_CTX_ctrl"},
    {(void **)&ssl.ctx_set_verify, "SSL_CTX_set_verify"},
    {(void **)&ssl.ctx_load_locations, "SSL_CTX_load_verify_locations"},
    {(void **)&ssl.ctx_default_paths, "SSL_CTX_set_default_verify_paths"},
    {(void **)&ssl.new_, "SSL_new"},
    {(void **)&ssl.free_, "SSL_free"},
    {(void **)&ssl.set_fd, "SSL_set_fd"},
    {(void **)&ssl.ctrl, "SSL_ctrl"},
    {(void **)&ssl.set1_host, "SSL_set1_host"},
    {(void **)&ssl.get0_param, "SSL_get0_param"},
    {(void **)&ssl.set1_ip, "X509_VERIFY_PARAM_set1_ip_asc"},
    {(void **)&ssl.connect, "SSL_connect"},
    {(void **)&ssl.read, "SSL_read"},
    {(void **)&ssl.write, "SSL_write"},
    {(void **)&ssl.shutdown, "SSL_shutdown"},
    {(void **)&ssl.get_error, "SSL_get_error"},
    {(void **)&ssl.verify_result, "SSL_get_verify_result"},
    {(void **)&ssl.verify_string, "X509_verify_cert_error_string"},
    {(void **)&ssl.err_get, "ERR_get_error"},
    {(void **)&ssl.err_string, "ERR_error_string_n"},
    {(void **)&ssl.err_clear, "ERR_clear_error"},
    {(void **)&ssl.pending, "SSL_pending"},
};
static bw_dynlib ssl_lib = BW_DYNLIB("libssl.so.3", "libssl3", ssl_syms);

/* ---- failures: a detail that outlives the call, per thread */

static __thread char why[512];
static __thread int unreached; /* the last failure never reached the server */

int bw_redis_unreached(void) { return unreached; }

int bw_redis_fail(int code, const char *fmt, ...) {
  unreached = 0;
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(why, sizeof why, "state store (redis): ");
  vsnprintf(why + n, sizeof why - n, fmt, ap);
  va_end(ap);
  return bw_fail(code, why);
}

/* A failure that never reached the server (no such host, nothing
 * listening, no answer in time, the connection lost): an outage, which a
 * store opened with opts->down outlives; a refusal by the server (AUTH,
 * a certificate) is not one. */
static int outage(int rc) {
  unreached = 1;
  return rc;
}

/* ---- the target */

struct bw_redis_target {
  char host[256], port[8], user[128];
  char name[300]; /* host:port/db, for messages */
  int db, tls, verify;
  char *password_file;
  int64_t connect_ms, command_ms;
  SSL_CTX *ctx;
};

static int64_t ms_of(double s) {
  if (!(s > 0)) return 2000;
  if (s > 3600) s = 3600;
  return (int64_t)(s * 1000) + 1;
}

static int bad_url(const char *what) {
  return bw_redis_fail(BW_INVALID_ARGUMENT, "the URL is redis://[user@]host[:port][/db] or rediss://...: %s",
                       what);
}

static int parse_url(bw_redis_target *t, const char *url) {
  const char *p;
  if (!strncmp(url, "redis://", 8)) p = url + 8;
  else if (!strncmp(url, "rediss://", 9)) p = url + 9, t->tls = 1;
  else return bad_url("it starts with neither");
  size_t alen = strcspn(p, "/?#");
  const char *at = NULL, *hp = p;
  for (const char *q = p; q < p + alen; q++)
    if (*q == '@') at = q; /* the last '@' */
  if (at) {
    if (memchr(p, ':', at - p))
      return bad_url("a password in the URL is refused: give password_file");
    if ((size_t)(at - p) >= sizeof t->user) return bad_url("the user name is too long");
    memcpy(t->user, p, at - p);
    hp = at + 1;
  }
  const char *end = p + alen, *colon;
  if (*hp == '[') { /* [v6] */
    const char *rb = memchr(hp, ']', end - hp);
    if (!rb) return bad_url("an unclosed [");
    if ((size_t)(rb - hp - 1) >= sizeof t->host) return bad_url("the host is too long");
    memcpy(t->host, hp + 1, rb - hp - 1);
    colon = rb + 1 < end && rb[1] == ':' ? rb + 1 : NULL;
    if (rb + 1 < end && !colon) return bad_url("junk after ]");
  } else {
    colon = memchr(hp, ':', end - hp);
    const char *he = colon ? colon : end;
    if ((size_t)(he - hp) >= sizeof t->host) return bad_url("the host is too long");
    memcpy(t->host, hp, he - hp);
  }
  if (!t->host[0]) return bad_url("no host");
  long port = 6379;
  if (colon) {
    char *e;
    port = strtol(colon + 1, &e, 10);
    if (e != end || e == colon + 1 || port < 1 || port > 65535) return bad_url("the port is 1 to 65535");
  }
  snprintf(t->port, sizeof t->port, "%ld", port);
  p = end;
  if (*p == '/' && p[1]) {
    char *e;
    long db = strtol(p + 1, &e, 10);
    if (*e || e == p + 1 || db < 0 || db > 1000000) return bad_url("the path is a database number");
    t->db = (int)db;
  } else if (*p == '/') {
    p++;
  }
  if (*p == '?' || *p == '#') return bad_url("it takes no query or fragment");
  snprintf(t->name, sizeof t->name, "%s%s%s:%s/%d", strchr(t->host, ':') ? "[" : "", t->host,
           strchr(t->host, ':') ? "]" : "", t->port, t->db);
  return BW_OK;
}

static int tls_error(const bw_redis_target *t, const char *what) {
  char buf[200] = "";
  unsigned long e = ssl.err_get();
  if (e) ssl.err_string(e, buf, sizeof buf);
  ssl.err_clear();
  return bw_redis_fail(BW_STORE_UNAVAILABLE, "%s: %s%s%s", t->name, what, buf[0] ? ": " : "", buf);
}

static int make_tls(bw_redis_target *t, const bw_state_redis_opts *o) {
  char err[300];
  if (bw_dynlib_load(&ssl_lib, err, sizeof err))
    return bw_redis_fail(BW_STORE_UNAVAILABLE, "rediss:// needs libssl: %s", err);
  ssl.err_clear();
  t->ctx = ssl.ctx_new(ssl.client_method());
  if (!t->ctx) return tls_error(t, "no TLS context");
  ssl.ctx_ctrl(t->ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_2_VERSION, NULL);
  ssl.ctx_ctrl(t->ctx, SSL_CTRL_MODE, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER, NULL);
  t->verify = !o->verify_off;
  ssl.ctx_set_verify(t->ctx, t->verify ? SSL_VERIFY_PEER : SSL_VERIFY_NONE, NULL);
  if (o->ca_file) {
    if (ssl.ctx_load_locations(t->ctx, o->ca_file, NULL) != 1)
      return tls_error(t, "cannot load the CA file (ca_file)");
  } else if (ssl.ctx_default_paths(t->ctx) != 1) {
    return tls_error(t, "cannot load the system's CA certificates");
  }
  return BW_OK;
}

void bw_redis_target_free(bw_redis_target *t) {
  if (!t) return;
  if (t->ctx) ssl.ctx_free(t->ctx);
  free(t->password_file);
  free(t);
}

int bw_redis_target_new(const char *url, const bw_state_redis_opts *o, bw_redis_target **out) {
  static const bw_state_redis_opts none;
  if (!o) o = &none;
  char err[300];
  if (bw_dynlib_load(&hr_lib, err, sizeof err))
    return bw_redis_fail(BW_STORE_UNAVAILABLE, "%s", err);
  bw_redis_target *t = calloc(1, sizeof *t);
  if (!t) return bw_fail(BW_ENOMEM, "state store: out of memory");
  int rc = parse_url(t, url);
  if (!rc && o->password_file && !(t->password_file = strdup(o->password_file)))
    rc = bw_fail(BW_ENOMEM, "state store: out of memory");
  t->connect_ms = ms_of(o->connect_timeout);
  t->command_ms = ms_of(o->timeout);
  if (!rc && t->tls) rc = make_tls(t, o);
  if (rc) {
    bw_redis_target_free(t);
    return rc;
  }
  *out = t;
  return BW_OK;
}

double bw_redis_timeout(const bw_redis_target *t) { return t->command_ms / 1000.0; }

/* ---- the connection */

struct bw_redis_conn {
  const bw_redis_target *t;
  int fd;
  SSL *ssl;
  redisReader *rd;
};

/* Wait for ev on fd until the deadline: 1 ready, 0 timed out, -1 error. */
static int wait_fd(int fd, short ev, int64_t until) {
  for (;;) {
    int64_t left = until - bw_now_ms();
    if (left <= 0) return 0;
    struct pollfd p = {fd, ev, 0};
    int n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
    if (n > 0) return 1;
    if (n < 0 && errno != EINTR) return -1;
  }
}

static int io_fail(bw_redis_conn *c, const char *what, int err) {
  if (err) return outage(bw_redis_fail(BW_STORE_UNAVAILABLE, "%s: %s: %s", c->t->name, what, strerror(err)));
  return outage(bw_redis_fail(BW_STORE_UNAVAILABLE, "%s: %s", c->t->name, what));
}

/* A TLS call that wants to wait: poll for what it wants; else fail. */
static int tls_wait(bw_redis_conn *c, int ret, int64_t until, const char *what) {
  int e = ssl.get_error(c->ssl, ret), saved = errno;
  short ev = e == SSL_ERROR_WANT_READ ? POLLIN : e == SSL_ERROR_WANT_WRITE ? POLLOUT : 0;
  if (!ev) {
    if (e == SSL_ERROR_ZERO_RETURN) return io_fail(c, "the server closed the connection", 0);
    if (e == SSL_ERROR_SYSCALL) return io_fail(c, what, saved ? saved : ECONNRESET);
    return tls_error(c->t, what);
  }
  int w = wait_fd(c->fd, ev, until);
  if (w == 0) return io_fail(c, "timed out", 0);
  if (w < 0) return io_fail(c, what, errno);
  return BW_OK;
}

static int send_all(bw_redis_conn *c, const char *buf, size_t len, int64_t until) {
  while (len) {
    ssize_t n;
    if (c->ssl) {
      /* OpenSSL writes with write(): SIGPIPE held back on this thread */
      sigset_t pipe, old;
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      pthread_sigmask(SIG_BLOCK, &pipe, &old);
      ssl.err_clear();
      int r = ssl.write(c->ssl, buf, len > INT_MAX ? INT_MAX : (int)len);
      int epipe = r <= 0 && errno == EPIPE;
      if (epipe) {
        struct timespec zero = {0, 0};
        sigtimedwait(&pipe, NULL, &zero);
      }
      pthread_sigmask(SIG_SETMASK, &old, NULL);
      if (r <= 0) {
        int rc = tls_wait(c, r, until, "cannot send");
        if (rc) return rc;
        continue;
      }
      n = r;
    } else {
      n = send(c->fd, buf, len, MSG_NOSIGNAL);
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno != EAGAIN) return io_fail(c, "cannot send", errno);
        int w = wait_fd(c->fd, POLLOUT, until);
        if (w <= 0) return w ? io_fail(c, "cannot send", errno) : io_fail(c, "timed out", 0);
        continue;
      }
    }
    buf += n;
    len -= (size_t)n;
  }
  return BW_OK;
}

/* Some bytes into buf (*got > 0), or a failure (EOF too). */
static int recv_some(bw_redis_conn *c, char *buf, size_t cap, size_t *got, int64_t until) {
  for (;;) {
    if (c->ssl) {
      ssl.err_clear();
      int r = ssl.read(c->ssl, buf, (int)cap);
      if (r > 0) {
        *got = (size_t)r;
        return BW_OK;
      }
      int rc = tls_wait(c, r, until, "cannot receive");
      if (rc) return rc;
      continue;
    }
    ssize_t n = recv(c->fd, buf, cap, 0);
    if (n > 0) {
      *got = (size_t)n;
      return BW_OK;
    }
    if (n == 0) return io_fail(c, "the server closed the connection", 0);
    if (errno == EINTR) continue;
    if (errno != EAGAIN) return io_fail(c, "cannot receive", errno);
    int w = wait_fd(c->fd, POLLIN, until);
    if (w <= 0) return w ? io_fail(c, "cannot receive", errno) : io_fail(c, "timed out", 0);
  }
}

static int call_until(bw_redis_conn *c, int argc, const char **argv, const size_t *lens,
                      redisReply **out, int64_t until) {
  *out = NULL;
  char *cmd = NULL;
  int len = hr.format(&cmd, argc, argv, lens);
  if (len < 0) return bw_fail(BW_ENOMEM, "state store: out of memory");
  int rc = send_all(c, cmd, (size_t)len, until);
  explicit_bzero(cmd, (size_t)len); /* AUTH's carries the password */
  hr.free_command(cmd);
  if (rc) return rc;
  for (;;) {
    void *reply = NULL;
    if (hr.reader_get(c->rd, &reply) != REDIS_OK)
      return io_fail(c, c->rd->errstr[0] ? c->rd->errstr : "a protocol error", 0);
    if (reply) {
      *out = reply;
      return BW_OK;
    }
    char buf[16384];
    size_t got = 0;
    rc = recv_some(c, buf, sizeof buf, &got, until);
    if (rc) return rc;
    if (hr.reader_feed(c->rd, buf, got) != REDIS_OK) return bw_fail(BW_ENOMEM, "state store: out of memory");
  }
}

int bw_redis_call(bw_redis_conn *c, int argc, const char **argv, const size_t *lens,
                  redisReply **out) {
  return call_until(c, argc, argv, lens, out, bw_now_ms() + c->t->command_ms);
}

int bw_redis_send(bw_redis_conn *c, int argc, const char **argv, const size_t *lens) {
  char *cmd = NULL;
  int len = hr.format(&cmd, argc, argv, lens);
  if (len < 0) return bw_fail(BW_ENOMEM, "state store: out of memory");
  int rc = send_all(c, cmd, (size_t)len, bw_now_ms() + c->t->command_ms);
  hr.free_command(cmd);
  return rc;
}

int bw_redis_next(bw_redis_conn *c, int wait_ms, int stop_fd, redisReply **out) {
  *out = NULL;
  int64_t until = bw_now_ms() + wait_ms;
  for (;;) {
    void *reply = NULL;
    if (hr.reader_get(c->rd, &reply) != REDIS_OK)
      return io_fail(c, c->rd->errstr[0] ? c->rd->errstr : "a protocol error", 0);
    if (reply) {
      *out = reply;
      return BW_OK;
    }
    if (!(c->ssl && ssl.pending(c->ssl) > 0)) { /* TLS may hold decrypted bytes the socket no longer shows */
      int64_t left = until - bw_now_ms();
      if (left <= 0) return BW_OK;
      struct pollfd p[2] = {{c->fd, POLLIN, 0}, {stop_fd, POLLIN, 0}};
      int n = poll(p, stop_fd >= 0 ? 2 : 1, left > INT_MAX ? INT_MAX : (int)left);
      if (n < 0 && errno != EINTR) return io_fail(c, "cannot wait", errno);
      if (n <= 0 || (stop_fd >= 0 && p[1].revents)) return BW_OK;
    }
    char buf[16384];
    size_t got = 0;
    int rc = recv_some(c, buf, sizeof buf, &got, bw_now_ms() + c->t->command_ms);
    if (rc) return rc;
    if (hr.reader_feed(c->rd, buf, got) != REDIS_OK) return bw_fail(BW_ENOMEM, "state store: out of memory");
  }
}

void bw_redis_reply_free(redisReply *r) {
  if (r) hr.free_reply(r);
}

void bw_redis_close(bw_redis_conn *c) {
  if (!c) return;
  if (c->ssl) {
    /* a close_notify if it goes out at once; never wait for the peer's */
    sigset_t pipe, old;
    sigemptyset(&pipe);
    sigaddset(&pipe, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe, &old);
    ssl.shutdown(c->ssl);
    struct timespec zero = {0, 0};
    sigtimedwait(&pipe, NULL, &zero);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    ssl.err_clear();
    ssl.free_(c->ssl);
  }
  if (c->rd) hr.reader_free(c->rd);
  if (c->fd >= 0) close(c->fd);
  free(c);
}

int bw_redis_alive(bw_redis_conn *c) {
  char b;
  ssize_t n = recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
  /* nothing to read: alive; EOF, an error, or bytes nobody asked for
   * (a close_notify, an error before closing): not */
  return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static int tcp_connect(bw_redis_conn *c, int64_t until) {
  const bw_redis_target *t = c->t;
  struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
  int g = getaddrinfo(t->host, t->port, &hints, &ai);
  if (g)
    return outage(
        bw_redis_fail(BW_STORE_UNAVAILABLE, "%s: cannot resolve the host: %s", t->name, gai_strerror(g)));
  int err = 0, timed_out = 0;
  for (struct addrinfo *a = ai; a; a = a->ai_next) {
    int fd = socket(a->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      err = errno;
      continue;
    }
    int r = connect(fd, a->ai_addr, a->ai_addrlen);
    if (r < 0 && errno == EINPROGRESS) {
      int w = wait_fd(fd, POLLOUT, until);
      socklen_t sl = sizeof err;
      if (w > 0 && !getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) && !err) r = 0;
      else if (w == 0) timed_out = 1;
      else if (w < 0) err = errno;
    } else if (r < 0) {
      err = errno;
    }
    if (r == 0) {
      int one = 1;
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
      c->fd = fd;
      freeaddrinfo(ai);
      return BW_OK;
    }
    close(fd);
    if (timed_out) break;
  }
  freeaddrinfo(ai);
  if (timed_out) return outage(bw_redis_fail(BW_STORE_UNAVAILABLE, "%s: cannot connect: timed out", t->name));
  return outage(
      bw_redis_fail(BW_STORE_UNAVAILABLE, "%s: cannot connect: %s", t->name, strerror(err ? err : ECONNREFUSED)));
}

static int tls_handshake(bw_redis_conn *c, int64_t until) {
  const bw_redis_target *t = c->t;
  ssl.err_clear();
  if (!(c->ssl = ssl.new_(t->ctx)) || ssl.set_fd(c->ssl, c->fd) != 1) return tls_error(t, "no TLS session");
  struct in6_addr ip;
  int is_ip = inet_pton(AF_INET, t->host, &ip) == 1 || inet_pton(AF_INET6, t->host, &ip) == 1;
  if (!is_ip) ssl.ctrl(c->ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (void *)t->host);
  if (t->verify) {
    int ok = is_ip ? ssl.set1_ip(ssl.get0_param(c->ssl), t->host) : ssl.set1_host(c->ssl, t->host);
    if (ok != 1) return tls_error(t, "cannot set the name to verify");
  }
  for (;;) {
    ssl.err_clear();
    int r = ssl.connect(c->ssl);
    if (r == 1) return BW_OK;
    long v = ssl.verify_result(c->ssl);
    if (t->verify && v != X509_V_OK)
      return bw_redis_fail(BW_STORE_UNAVAILABLE, "%s: the server's certificate is not trusted: %s", t->name,
                           ssl.verify_string(v));
    int e = ssl.get_error(c->ssl, r);
    if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return tls_error(t, "TLS handshake failed");
    int w = wait_fd(c->fd, e == SSL_ERROR_WANT_READ ? POLLIN : POLLOUT, until);
    if (w <= 0) return io_fail(c, w ? "TLS handshake failed" : "TLS handshake timed out", w ? errno : 0);
  }
}

/* The password file's first line into buf (cleared by the caller). */
static int read_password(const bw_redis_target *t, char *buf, size_t cap, size_t *len) {
  int fd = open(t->password_file, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    return bw_redis_fail(BW_STORE_UNAVAILABLE, "cannot read the password file: %s", strerror(e));
  }
  ssize_t n = read(fd, buf, cap - 1);
  int e = errno;
  close(fd);
  if (n < 0) return bw_redis_fail(BW_STORE_UNAVAILABLE, "cannot read the password file: %s", strerror(e));
  buf[n] = 0;
  *len = strcspn(buf, "\r\n");
  if (!*len) return bw_redis_fail(BW_STORE_UNAVAILABLE, "the password file's first line is empty");
  return BW_OK;
}

int bw_redis_password_check(const bw_redis_target *t) {
  if (!t->password_file) return BW_OK;
  char pw[1024];
  size_t pl = 0;
  int rc = read_password(t, pw, sizeof pw, &pl);
  explicit_bzero(pw, sizeof pw);
  return rc ? bw_fail(BW_INVALID_ARGUMENT, why) : BW_OK;
}

static int refused(const bw_redis_target *t, const char *what, const redisReply *r) {
  return bw_redis_fail(BW_STORE_UNAVAILABLE, "%s: %s: %.*s", t->name, what,
                       r->type == REDIS_REPLY_ERROR ? (int)(r->len > 200 ? 200 : r->len) : 16,
                       r->type == REDIS_REPLY_ERROR ? r->str : "an unexpected reply");
}

/* AUTH and SELECT on a new connection */
static int hello(bw_redis_conn *c, int64_t until) {
  const bw_redis_target *t = c->t;
  redisReply *r;
  int rc = BW_OK;
  if (t->password_file) {
    char pw[1024];
    size_t pl = 0;
    rc = read_password(t, pw, sizeof pw, &pl);
    if (!rc) {
      const char *argv[] = {"AUTH", t->user, pw};
      size_t lens[] = {4, strlen(t->user), pl};
      int user = t->user[0] != 0;
      argv[1 + user] = pw;
      lens[1 + user] = pl;
      rc = call_until(c, 2 + user, argv, lens, &r, until);
    }
    explicit_bzero(pw, sizeof pw);
    if (rc) return rc;
    if (r->type == REDIS_REPLY_ERROR) rc = refused(t, "AUTH refused", r);
    hr.free_reply(r);
    if (rc) return rc;
  }
  if (t->db) {
    char db[16];
    int dl = snprintf(db, sizeof db, "%d", t->db);
    const char *argv[] = {"SELECT", db};
    size_t lens[] = {6, (size_t)dl};
    if ((rc = call_until(c, 2, argv, lens, &r, until))) return rc;
    if (r->type == REDIS_REPLY_ERROR) rc = refused(t, "SELECT refused", r);
    hr.free_reply(r);
  }
  return rc;
}

int bw_redis_connect(const bw_redis_target *t, bw_redis_conn **out) {
  bw_redis_conn *c = calloc(1, sizeof *c);
  if (!c) return bw_fail(BW_ENOMEM, "state store: out of memory");
  c->t = t;
  c->fd = -1;
  int64_t until = bw_now_ms() + t->connect_ms;
  int rc = (c->rd = hr.reader_create()) ? BW_OK : bw_fail(BW_ENOMEM, "state store: out of memory");
  if (!rc) rc = tcp_connect(c, until);
  if (!rc && t->tls) rc = tls_handshake(c, until);
  if (!rc) rc = hello(c, bw_now_ms() + t->command_ms);
  if (rc) {
    bw_err_saved s;
    bw_err_save(&s);
    bw_redis_close(c);
    return bw_err_restore(rc, &s);
  }
  *out = c;
  return BW_OK;
}
