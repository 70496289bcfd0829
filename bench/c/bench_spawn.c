/* Wall time of whole processes, in interleaved rounds: each round runs every
 * command once, in turn, so a change in the machine's load falls on all of
 * them alike. Prints "label median_seconds min_seconds" per command.
 *
 * usage: bench_spawn ROUNDS LABEL CMD ARGS... [-- LABEL CMD ARGS...]...
 */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "bench_util.h"

extern char **environ;

enum { MAX_CMDS = 8, MAX_ROUNDS = 1001 };

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s ROUNDS LABEL CMD ARGS... [-- LABEL CMD ARGS...]...\n", argv[0]);
        return 2;
    }
    int rounds = atoi(argv[1]);
    if (rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "ROUNDS must be 1..%d\n", MAX_ROUNDS);
        return 2;
    }
    char **cmd[MAX_CMDS];
    const char *label[MAX_CMDS];
    int n = 0;
    for (int i = 2; i < argc && n < MAX_CMDS;) {
        label[n] = argv[i];
        cmd[n] = &argv[i + 1];
        int j = i + 1;
        while (j < argc && strcmp(argv[j], "--") != 0) j++;
        if (j == i + 1) {
            fprintf(stderr, "no command after label %s\n", argv[i]);
            return 2;
        }
        if (j < argc) argv[j] = NULL;
        n++;
        i = j + 1;
    }
    static double t[MAX_CMDS][MAX_ROUNDS];
    for (int r = 0; r < rounds; r++) {
        for (int c = 0; c < n; c++) {
            pid_t pid;
            double t0 = now();
            if (posix_spawnp(&pid, cmd[c][0], NULL, NULL, cmd[c], environ) != 0) {
                fprintf(stderr, "cannot start %s\n", cmd[c][0]);
                return 1;
            }
            int status = 0;
            if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                fprintf(stderr, "%s failed\n", label[c]);
                return 1;
            }
            t[c][r] = now() - t0;
        }
    }
    for (int c = 0; c < n; c++) {
        double m = median(t[c], rounds);
        printf("%s %.9f %.9f\n", label[c], m, t[c][0]);
    }
    return 0;
}
