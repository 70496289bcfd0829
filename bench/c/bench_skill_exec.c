/* The `skill` tool through the C ABI beside its syscall floor (issue 15).
 *
 * usage: bench_skill_exec SKILLS_DIR [ROUNDS]
 *
 * Prints "name median_seconds" lines:
 *   execute_skill        tn_execute("skill", {"name":"skill-0500"}): JSON
 *                        args in, ToolResult JSON text out, the string freed
 *                        after the clock stops;
 *   execute_skill_floor  what the call cannot avoid asking the kernel: the
 *                        three directory listings of that skill (its folder,
 *                        scripts/, reference/), each opendir + readdir to the
 *                        end + closedir, in plain C.
 * The two are timed in alternating blocks of calls (ROUNDS blocks, default
 * 21, of 101 calls each); each figure is the median over every call.
 */
#include "toolnexus.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

enum { PER_BLOCK = 101, MAX_ROUNDS = 201 };

/* One directory listing; returns how many entries it saw (so the loop is
 * not optimized away). */
static int list_dir(const char *path) {
    DIR *d = opendir(path);
    if (!d) return -1;
    int n = 0;
    while (readdir(d)) n++;
    closedir(d);
    return n;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SKILLS_DIR [ROUNDS]\n", argv[0]);
        return 2;
    }
    int rounds = argc > 2 ? atoi(argv[2]) : 21;
    if (rounds < 1 || rounds > MAX_ROUNDS) rounds = 21;
    if (strlen(argv[1]) > 2000) {
        fprintf(stderr, "SKILLS_DIR is too long\n");
        return 2;
    }
    char cfg[4096], dirs[3][4096];
    snprintf(cfg, sizeof cfg, "{\"skillsDir\":\"%s\"}", argv[1]);
    /* gen_skills.py puts skill i under cat{i%10}/skill-{i:04d}. */
    snprintf(dirs[0], sizeof dirs[0], "%s/cat0/skill-0500", argv[1]);
    snprintf(dirs[1], sizeof dirs[1], "%s/cat0/skill-0500/scripts", argv[1]);
    snprintf(dirs[2], sizeof dirs[2], "%s/cat0/skill-0500/reference", argv[1]);

    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(cfg, &tk, &err) != TN_OK) {
        fprintf(stderr, "build failed: %s\n", err ? err : "?");
        tn_string_free(err);
        return 1;
    }
    for (int i = 0; i < 3; i++) {
        if (list_dir(dirs[i]) < 3) {
            fprintf(stderr, "%s: not a skill folder of gen_skills.py\n", dirs[i]);
            return 1;
        }
    }
    static double te[MAX_ROUNDS * PER_BLOCK], tf[MAX_ROUNDS * PER_BLOCK];
    int ne = 0, nf = 0;
    volatile int sink = 0;
    for (int r = 0; r < rounds; r++) {
        for (int i = 0; i < PER_BLOCK; i++) {
            char *out = NULL;
            double t0 = now();
            tn_status st = tn_execute(tk, "skill", "{\"name\":\"skill-0500\"}", NULL, &out);
            te[ne++] = now() - t0;
            if (st != TN_OK || !out || !strstr(out, "\"isError\":false") || !strstr(out, "<file>")) {
                fprintf(stderr, "execute failed: %s\n", out ? out : "?");
                return 1;
            }
            tn_string_free(out);
        }
        for (int i = 0; i < PER_BLOCK; i++) {
            double t0 = now();
            sink += list_dir(dirs[0]) + list_dir(dirs[1]) + list_dir(dirs[2]);
            tf[nf++] = now() - t0;
        }
    }
    printf("execute_skill %.9f\n", median(te, ne));
    printf("execute_skill_floor %.9f\n", median(tf, nf));
    tn_toolkit_free(tk);
    return sink < 0;
}
