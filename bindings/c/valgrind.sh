#!/usr/bin/env bash
# valgrind "$@", without the one warning Debian 12's valgrind 3.19 prints for
# every process of ours: it does not know pidfd_open (syscall 434), which the
# standard library's process spawning tries first; the call fails with ENOSYS
# under valgrind and the spawn falls back to its older path, so the five lines
# say nothing about our code. Dropping exactly them lets a real report stand
# out in CI's log; valgrind's own exit status is kept.
exec 3>&1
valgrind "$@" 2>&1 1>&3 3>&- \
  | grep -v -E '^--[0-9]+-- (WARNING: unhandled amd64-linux syscall: 434|You may be able to write your own handler\.|Read the file README_MISSING_SYSCALL_OR_IOCTL\.|Nevertheless we consider this a bug\.  Please report|it at http://valgrind\.org/support/bug_reports\.html\.)$' >&2
exit "${PIPESTATUS[0]}"
