/* What every C test program of this directory shares: the pass count, the
 * CHECK macro that stops at the first failed check, and two small helpers.
 * Include it after the program's own feature macro and system headers. */
#ifndef TN_TESTS_CHECK_H
#define TN_TESTS_CHECK_H

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Unused by the programs that stop with a FAIL of their own. Atomic: a
 * check inside a callback runs on a library thread, beside the main
 * thread's checks (agents.c once counted 130 of its 131). */
static atomic_int passed __attribute__((unused));

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (cond) {                                                           \
            passed++;                                                         \
        } else {                                                              \
            fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__, __LINE__, \
                    #cond);                                                   \
            fprintf(stderr, __VA_ARGS__);                                     \
            fprintf(stderr, "\n1 failed (after %d passed)\n", passed);        \
            exit(1);                                                          \
        }                                                                     \
    } while (0)

static inline int contains(const char *haystack, const char *needle) {
    return haystack != NULL && strstr(haystack, needle) != NULL;
}

/* Sleeps ms milliseconds, through signals. */
static inline void sleep_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

#endif
