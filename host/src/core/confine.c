/*
 * confine.c - defence in depth for `burrow mcp --landlock`: the process
 * restricts itself with Landlock to its roots (read-write or read-only),
 * the files and directories it must read (its Lua code, its config and the
 * files it names), a directory to log into, plus no_new_privs. The
 * resolver stays the sandbox; this only catches a code path that would
 * open a host path directly. Best effort by ABI: rights a kernel does not
 * know are left out; no Landlock at all is reported, not fatal.
 */
#include <errno.h>
#include <linux/landlock.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core.h"

#ifndef LANDLOCK_ACCESS_FS_REFER
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

#define READ_RIGHTS (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
/* the audit log: append, create the new file, rename the old one over .1 */
#define LOG_RIGHTS                                                         \
  (LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG |           \
   LANDLOCK_ACCESS_FS_REMOVE_FILE)
/* the rights a rule on a file (not a directory) may carry */
#define FILE_RIGHTS                                                        \
  (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |            \
   LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |            \
   LANDLOCK_ACCESS_FS_IOCTL_DEV)

/* Every filesystem right the given ABI knows. */
static __u64 rights_of(int abi) {
  __u64 r = (1ULL << 13) - 1; /* ABI 1: EXECUTE .. MAKE_SYM */
  if (abi >= 2) r |= LANDLOCK_ACCESS_FS_REFER;
  if (abi >= 3) r |= LANDLOCK_ACCESS_FS_TRUNCATE;
  if (abi >= 5) r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
  return r;
}

/* The rights of one rule: by its kind, cut to what a file can carry when
 * the rule names a file, and to what the ABI knows. */
static __u64 rule_rights(const bw_landlock_rule *r, __u64 all) {
  __u64 want = r->access == BW_LANDLOCK_ALL    ? all
               : r->access == BW_LANDLOCK_READ ? READ_RIGHTS
               : r->access == BW_LANDLOCK_LOG  ? LOG_RIGHTS
                                               : LANDLOCK_ACCESS_FS_READ_FILE;
  struct stat st;
  if (fstat(r->fd, &st) == 0 && !S_ISDIR(st.st_mode)) want &= FILE_RIGHTS;
  return want & all;
}

int bw_landlock(const bw_landlock_rule *rules, int n, int *abi_out) {
  *abi_out = 0;
  long abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
                     LANDLOCK_CREATE_RULESET_VERSION);
  if (abi < 1) return BW_OK; /* no Landlock here: the caller says so */
  __u64 all = rights_of((int)abi);
  struct landlock_ruleset_attr attr = {.handled_access_fs = all};
  int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
  if (rs < 0) return bw_code_from_errno(errno);
  int rc = BW_OK;
  for (int i = 0; i < n && rc == BW_OK; i++) {
    struct landlock_path_beneath_attr pb = {
        .allowed_access = rule_rights(&rules[i], all),
        .parent_fd = rules[i].fd,
    };
    if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0))
      rc = bw_code_from_errno(errno);
  }
  if (rc == BW_OK && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
    rc = bw_code_from_errno(errno);
  if (rc == BW_OK && syscall(SYS_landlock_restrict_self, rs, 0))
    rc = bw_code_from_errno(errno);
  close(rs);
  if (rc == BW_OK) *abi_out = (int)abi;
  return rc;
}
