/* The skills benchmark through the C ABI, JSON in and out.
 *
 * usage: bench_skills SKILLS_DIR        prints "name median_seconds" lines
 *        bench_skills SKILLS_DIR rss    builds the 1,000-skill toolkit once
 *                                        (run under /usr/bin/time -v)
 */
#include "toolnexus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

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
