/* The issue-3 builtin benchmark through the C ABI, JSON in and out:
 * `read` of a 1 MiB file and of a 1 MiB PNG (a base64 content part), `grep` for a regex over the bench/gen_tree.py tree,
 * `glob` of every .txt file over it. Prints "name median_seconds" lines.
 * For scale, `cat_1mib` is what `cat` does without starting a process:
 * open, read(2) the same file into a page-aligned buffer, close. (Aligned
 * on purpose: on this machine's AMD CPU the kernel's copy to a buffer 1 to
 * 31 bytes past a page boundary, as malloc hands out for a large block, is
 * about ten times slower.)
 *
 * usage: bench_builtins TREE_OUT_DIR     (the directory gen_tree.py wrote)
 */
#include "toolnexus.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

static double run(tn_toolkit *tk, const char *tool, const char *args, int n) {
    double *t = malloc(sizeof(double) * (size_t)n);
    if (!t) exit(1);
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        double t0 = now();
        tn_status st = tn_execute(tk, tool, args, NULL, &out);
        t[i] = now() - t0;
        if (st != TN_OK || !out || strstr(out, "\"isError\":true")) {
            fprintf(stderr, "%s failed: %.300s\n", tool, out ? out : "?");
            exit(1);
        }
        tn_string_free(out);
    }
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    double m = t[n / 2];
    free(t);
    return m;
}

static double cat(const char *path, int n) {
    double *t = malloc(sizeof(double) * (size_t)n);
    char *buf = aligned_alloc(4096, 2 << 20);
    if (!t || !buf) exit(1);
    for (int i = 0; i < n; i++) {
        double t0 = now();
        int fd = open(path, O_RDONLY);
        ssize_t got, total = 0;
        while (fd >= 0 && (got = read(fd, buf + total, (size_t)(2 << 20) - (size_t)total)) > 0) total += got;
        if (fd >= 0) close(fd);
        t[i] = now() - t0;
        if (total != 1 << 20) {
            fprintf(stderr, "cat %s: read %zd bytes\n", path, total);
            exit(1);
        }
    }
    free(buf);
    double m = median(t, n);
    free(t);
    return m;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TREE_OUT_DIR\n", argv[0]);
        return 2;
    }
    const char *dir = argv[1];
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build("{}", &tk, &err) != TN_OK) {
        fprintf(stderr, "build: %s\n", err);
        return 1;
    }
    char args[4096];
    snprintf(args, sizeof args, "{\"path\":\"%s/read-1mib.txt\"}", dir);
    printf("read_1mib %.9f\n", run(tk, "read", args, 201));
    snprintf(args, sizeof args, "{\"path\":\"%s/read-1mib.png\"}", dir);
    printf("read_png_1mib %.9f\n", run(tk, "read", args, 201));
    snprintf(args, sizeof args, "%s/read-1mib.txt", dir);
    printf("cat_1mib %.9f\n", cat(args, 201));
    snprintf(args, sizeof args, "{\"pattern\":\"TNX_NEEDLE_[0-9]+_ZQ\",\"path\":\"%s/tree\"}", dir);
    printf("grep_tree %.9f\n", run(tk, "grep", args, 31));
    snprintf(args, sizeof args, "{\"pattern\":\"**/*.txt\",\"path\":\"%s/tree\"}", dir);
    printf("glob_tree %.9f\n", run(tk, "glob", args, 51));
    tn_toolkit_free(tk);
    return 0;
}
