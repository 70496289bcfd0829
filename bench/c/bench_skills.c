/* The skills benchmark through the C ABI, JSON in and out.
 *
 * `floor_walk_read_1000` is the syscall floor of the build (issue 15): the
 * same walk of the tree (every directory opened and read to its end, d_type
 * from getdents, `node_modules` and `.git` pruned) and one open/read/close of
 * every SKILL.md, on one thread, into a stack buffer, with nothing parsed
 * and nothing kept. `render_first_1000_openai` is the first render after a
 * build (the toolkit caches its renderings; the `render_1000_*` lines are
 * the cached ones).
 *
 * usage: bench_skills SKILLS_DIR        prints "name median_seconds" lines
 *        bench_skills SKILLS_DIR rss    builds the 1,000-skill toolkit once
 *                                        (run under /usr/bin/time -v)
 */
#include "toolnexus.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"

/* Walks `path` (of length len in a PATH_MAX buffer) and reads every SKILL.md
 * below it; returns the bytes read. */
static long walk_read(char *path, size_t len) {
    DIR *d = opendir(path);
    if (!d) return 0;
    long total = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *n = e->d_name;
        if (n[0] == '.' && (n[1] == 0 || (n[1] == '.' && n[2] == 0))) continue;
        size_t nl = strlen(n);
        if (len + 1 + nl + 1 > 4096) continue;
        path[len] = '/';
        memcpy(path + len + 1, n, nl + 1);
        if (e->d_type == DT_DIR) {
            if (strcmp(n, "node_modules") != 0 && strcmp(n, ".git") != 0)
                total += walk_read(path, len + 1 + nl);
        } else if (e->d_type == DT_REG && strcmp(n, "SKILL.md") == 0) {
            char buf[16384];
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
                ssize_t r;
                while ((r = read(fd, buf, sizeof buf)) == (ssize_t)sizeof buf) total += r;
                if (r > 0) total += r;
                close(fd);
            }
        }
    }
    path[len] = 0;
    closedir(d);
    return total;
}

static tn_toolkit *build(const char *cfg) {
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(cfg, &tk, &err) != TN_OK) {
        fprintf(stderr, "build failed: %s\n", err ? err : "?");
        tn_string_free(err);
        exit(1);
    }
    return tk;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s SKILLS_DIR [rss]\n", argv[0]);
        return 2;
    }
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "{\"skillsDir\":\"%s\"}", argv[1]);
    if (argc > 2 && strcmp(argv[2], "rss") == 0) {
        tn_toolkit *tk = build(cfg);
        tn_toolkit_free(tk);
        return 0;
    }

    enum { BUILDS = 31, RENDERS = 201, EXECS = 2001 };
    static double t[EXECS];

    static char path[4096];
    for (int i = 0; i < BUILDS; i++) {
        snprintf(path, sizeof path, "%s", argv[1]);
        double t0 = now();
        long bytes = walk_read(path, strlen(path));
        t[i] = now() - t0;
        if (bytes <= 0) {
            fprintf(stderr, "the floor walk read nothing under %s\n", argv[1]);
            return 1;
        }
    }
    printf("floor_walk_read_1000 %.9f\n", median(t, BUILDS));

    for (int i = 0; i < BUILDS; i++) {
        double t0 = now();
        tn_toolkit *tk = build(cfg);
        t[i] = now() - t0;
        tn_toolkit_free(tk);
    }
    printf("build_1000_skills %.9f\n", median(t, BUILDS));

    /* 1,000 declared tools (HTTP endpoints, never called) for the render. */
    size_t cap = 1 << 20, len = 0;
    char *tools_cfg = malloc(cap);
    if (!tools_cfg) return 1;
    len += (size_t)snprintf(tools_cfg + len, cap - len, "{\"builtins\":false,\"httpTools\":[");
    for (int i = 0; i < 1000; i++) {
        len += (size_t)snprintf(tools_cfg + len, cap - len,
            "%s{\"name\":\"tool_%04d\",\"description\":\"Benchmark tool %d.\",\"url\":\"http://127.0.0.1:9/x/{id}\","
            "\"inputSchema\":{\"type\":\"object\",\"properties\":{\"id\":{\"type\":\"string\",\"description\":\"Identifier\"},"
            "\"limit\":{\"type\":\"number\"}},\"required\":[\"id\"]}}",
            i ? "," : "", i, i);
    }
    snprintf(tools_cfg + len, cap - len, "]}");
    for (int i = 0; i < BUILDS; i++) {
        tn_toolkit *fresh = build(tools_cfg);
        char *out = NULL;
        double t0 = now();
        tn_render(fresh, "openai", &out);
        t[i] = now() - t0;
        tn_string_free(out);
        tn_toolkit_free(fresh);
    }
    printf("render_first_1000_openai %.9f\n", median(t, BUILDS));
    tn_toolkit *tools = build(tools_cfg);
    free(tools_cfg);
    const char *formats[] = {"openai", "anthropic", "gemini"};
    for (int f = 0; f < 3; f++) {
        for (int i = 0; i < RENDERS; i++) {
            char *out = NULL;
            double t0 = now();
            tn_render(tools, formats[f], &out);
            t[i] = now() - t0;
            tn_string_free(out);
        }
        printf("render_1000_%s %.9f\n", formats[f], median(t, RENDERS));
    }
    tn_toolkit_free(tools);

    tn_toolkit *tk = build(cfg);
    for (int i = 0; i < EXECS; i++) {
        char *out = NULL;
        double t0 = now();
        tn_execute(tk, "skill", "{\"name\":\"skill-0500\"}", NULL, &out);
        t[i] = now() - t0;
        if (i == 0 && (!out || !strstr(out, "\"isError\":false"))) {
            fprintf(stderr, "execute failed: %s\n", out ? out : "?");
            return 1;
        }
        tn_string_free(out);
    }
    printf("execute_skill %.9f\n", median(t, EXECS));
    tn_toolkit_free(tk);
    return 0;
}
