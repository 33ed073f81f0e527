/*
 * cpuprobe.c - libcrypto's CPU probe at the first hash, not at every start.
 *
 * The command links libcrypto's static archive for SHA-256 and SHA-1
 * (hash.c, the Redis store's script names), and with it OpenSSL's .init,
 * which calls OPENSSL_cpuid_setup before main: CPUID instructions, each a
 * trap to the hypervisor in a virtual machine, ~1.4% of a `burrow call
 * stat`'s CPU time, which hashes nothing (docs/benchmarks.md, Start-up).
 * The command's link wraps that symbol (Makefile: --wrap), so .init calls
 * the empty wrapper below, and the first digest runs the real probe once
 * (bw_hash_ready). Until then libcrypto's capability vector is zero, which
 * its SHA code reads as a plain x86-64: a digest taken before the probe
 * would still be right, only slower. Only in the command: the rock and
 * libburrow take libcrypto as a shared library, whose probe is its own.
 */
#include <pthread.h>

#include "core.h"

void __real_OPENSSL_cpuid_setup(void);
void __wrap_OPENSSL_cpuid_setup(void);

void __wrap_OPENSSL_cpuid_setup(void) {}

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void probe(void) { pthread_once(&once, __real_OPENSSL_cpuid_setup); }

__attribute__((constructor)) static void set_hook(void) { bw_hash_probe_hook(probe); }
