/* Timing helpers shared by the C benchmark programs in bench/c. */
#ifndef TN_BENCH_UTIL_H
#define TN_BENCH_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static inline int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorts v in place). */
static inline double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* The overhead scenario's configurations (issue 11): a toolkit of the
 * stdio MCP server at `mcp` alone, and a client of the OpenAI-style
 * provider at `url`. */
static inline void overhead_configs(const char *mcp, const char *url, char *toolkit_json, size_t toolkit_size,
                                    char *client_json, size_t client_size) {
    snprintf(toolkit_json, toolkit_size,
             "{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"bench\":{\"type\":\"local\",\"command\":[\"%s\"],"
             "\"enabled\":true,\"timeout\":30000}}}}",
             mcp);
    snprintf(client_json, client_size,
             "{\"baseUrl\":\"%s\",\"style\":\"openai\",\"model\":\"mock-model\",\"apiKey\":\"sk-mock\"}", url);
}

#endif
