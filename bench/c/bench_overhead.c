/* The client-loop overhead benchmark (issue 11), this library's runner: the
 * scenario of upstream's overhead benchmark through the C ABI. One question,
 * answered by the mock provider with two parallel tool calls (get_weather and
 * add, served by a stdio MCP server), then a final answer: every run is 2 LLM
 * round trips and 2 MCP tool calls through tn_run.
 *
 *   init     = tn_toolkit_build (spawn the MCP server, initialize, list its
 *              tools) + tn_client_new, as upstream's runners time it
 *   per run  = one tn_run, RunResult text freed after the clock stops
 *
 * Options:
 *   --url URL         the mock provider (bench/c/overhead_mock_llm.c)
 *   --mcp PATH        the stdio MCP server (bench/c/overhead_mcp_server.c)
 *   --runs N          measured runs (default 200)
 *   --warmup N        runs before them (default 20)
 *   --on-metric       set an onMetric callback (counts the events)
 *   --render          render tn_client_metrics after each run (timed apart)
 *   --idle-ms N       then leave the client and toolkit idle for N ms and
 *                     report the process CPU time spent meanwhile
 *
 * Prints one JSON line: {"framework","init_ms","latencies_ms":[...],
 * "final_ok", "rss_*_kb" (after init and after the runs: all resident memory,
 * and the file-backed part of it), "render_us":[...]?, "metric_events"?, "idle_ms"?, "idle_cpu_ms"?}. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench_util.h"
#include "toolnexus.h"

static const char *QUESTION = "{\"prompt\":\"What's the weather in Paris and what is 2+2?\"}";

static void on_metric(void *user_data, const char *event_json, tn_reply *reply) {
    (void)event_json;
    (void)reply;
    atomic_fetch_add((atomic_long *)user_data, 1);
}

static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           (double)ru.ru_stime.tv_usec / 1e6;
}

/* Resident and file-backed (shared: code, read-only data) memory now, in kB,
 * from /proc/self/status (Linux); 0 where it cannot be read. */
static void rss_now(long *rss_kb, long *file_kb) {
    *rss_kb = *file_kb = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6)) *rss_kb = atol(line + 6);
        if (!strncmp(line, "RssFile:", 8)) *file_kb = atol(line + 8);
    }
    fclose(f);
}

static int one_run(const tn_client *client, const tn_toolkit *tk, int *ok) {
    char *out = NULL;
    tn_status st = tn_run(client, tk, QUESTION, NULL, NULL, &out);
    if (st != TN_OK) {
        fprintf(stderr, "tn_run: status %d: %s\n", (int)st, out ? out : "");
        tn_string_free(out);
        return -1;
    }
    *ok = strstr(out, "\"text\":\"The weather in Paris is sunny, 22C, and 2 + 2 = 4.\"") != NULL &&
          strstr(out, "\"toolCallCount\":2") != NULL && strstr(out, "Paris: sunny, 22C") != NULL &&
          strstr(out, "\"status\":\"done\"") != NULL;
    if (!*ok) fprintf(stderr, "unexpected RunResult: %s\n", out);
    tn_string_free(out);
    return 0;
}

int main(int argc, char **argv) {
    const char *url = "http://127.0.0.1:8900", *mcp = NULL;
    int runs = 200, warmup = 20, with_metric = 0, render = 0;
    long idle_ms = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--url") && i + 1 < argc) url = argv[++i];
        else if (!strcmp(argv[i], "--mcp") && i + 1 < argc) mcp = argv[++i];
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc) runs = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--warmup") && i + 1 < argc) warmup = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--idle-ms") && i + 1 < argc) idle_ms = atol(argv[++i]);
        else if (!strcmp(argv[i], "--on-metric")) with_metric = 1;
        else if (!strcmp(argv[i], "--render")) render = 1;
        else {
            fprintf(stderr, "bench_overhead: unknown or incomplete option %s\n", argv[i]);
            return 2;
        }
    }
    if (!mcp || runs < 1) {
        fprintf(stderr, "usage: bench_overhead --mcp SERVER [--url URL] [--runs N] [--warmup N] [--on-metric] "
                        "[--render] [--idle-ms N]\n");
        return 2;
    }

    char tk_json[4096], client_json[1024];
    overhead_configs(mcp, url, tk_json, sizeof tk_json, client_json, sizeof client_json);

    tn_toolkit *tk = NULL;
    tn_client *client = NULL;
    char *err = NULL;
    double t0 = now();
    if (tn_toolkit_build(tk_json, &tk, &err) != TN_OK || tn_client_new(client_json, &client, &err) != TN_OK) {
        fprintf(stderr, "setup: %s\n", err ? err : "");
        return 1;
    }
    double init_ms = (now() - t0) * 1e3;
    long rss_init, file_init;
    rss_now(&rss_init, &file_init);

    atomic_long *events = calloc(1, sizeof *events);
    if (with_metric && tn_client_set_callback(client, "onMetric", on_metric, events, NULL, &err) != TN_OK) {
        fprintf(stderr, "onMetric: %s\n", err ? err : "");
        return 1;
    }

    int ok = 1, all_ok = 1;
    for (int i = 0; i < warmup; i++) {
        if (one_run(client, tk, &ok) != 0) return 1;
        all_ok &= ok;
    }
    double *lat = malloc(sizeof *lat * (size_t)runs);
    double *rend = malloc(sizeof *rend * (size_t)runs);
    size_t metrics_len = 0;
    for (int i = 0; i < runs; i++) {
        double s = now();
        if (one_run(client, tk, &ok) != 0) return 1;
        lat[i] = (now() - s) * 1e3;
        all_ok &= ok;
        if (render) {
            char *text = NULL;
            double r = now();
            tn_status st = tn_client_metrics(client, &text);
            rend[i] = (now() - r) * 1e6;
            if (st != TN_OK) {
                fprintf(stderr, "tn_client_metrics: %s\n", text ? text : "");
                return 1;
            }
            metrics_len = strlen(text);
            tn_string_free(text);
        }
    }

    long rss_end, file_end;
    rss_now(&rss_end, &file_end);
    double idle_cpu_ms = 0;
    if (idle_ms > 0) {
        double c0 = cpu_seconds();
        struct timespec ts = {idle_ms / 1000, (idle_ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        idle_cpu_ms = (cpu_seconds() - c0) * 1e3;
    }

    printf("{\"framework\":\"toolnexus-rs-c-abi\",\"language\":\"c\",\"init_ms\":%.3f,\"latencies_ms\":[", init_ms);
    for (int i = 0; i < runs; i++) printf("%s%.4f", i ? "," : "", lat[i]);
    printf("],\"final_ok\":%s,\"rss_init_kb\":%ld,\"rss_file_init_kb\":%ld,\"rss_end_kb\":%ld,"
           "\"rss_file_end_kb\":%ld",
           all_ok ? "true" : "false", rss_init, file_init, rss_end, file_end);
    if (render) {
        printf(",\"metrics_bytes\":%zu,\"render_us\":[", metrics_len);
        for (int i = 0; i < runs; i++) printf("%s%.2f", i ? "," : "", rend[i]);
        printf("]");
    }
    if (with_metric) printf(",\"metric_events\":%ld", atomic_load(events));
    if (idle_ms > 0) printf(",\"idle_ms\":%ld,\"idle_cpu_ms\":%.3f", idle_ms, idle_cpu_ms);
    printf("}\n");

    free(lat);
    free(rend);
    tn_client_free(client);
    tn_toolkit_free(tk);
    free(events);
    return all_ok ? 0 : 1;
}
