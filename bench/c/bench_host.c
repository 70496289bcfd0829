/* Host-call benchmarks through the C ABI.
 *
 * usage: bench_host [ROUNDS]
 *
 * Prints "name value unit" lines:
 *   host_round_trip_us    median per-call time of tn_execute on a host C tool
 *                         that sets "ok" (each round times BATCH calls; the
 *                         median is over rounds)
 *   host_parallel8_calls_per_s  8 threads calling that tool, total calls/s
 *   http_get_us           median per-call time of an HTTP tool GET against a
 *                         keep-alive HTTP/1.1 server on 127.0.0.1 (this program)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "toolnexus.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static atomic_long failures;
#define FAIL(...)                                                            \
    do {                                                                     \
        atomic_fetch_add(&failures, 1);                                      \
        fprintf(stderr, "bench_host: " __VA_ARGS__);                         \
        fputc('\n', stderr);                                                 \
    } while (0)

#include "../../bindings/c/tests/mini_http.h"

#include "bench_util.h"

static void ok_tool(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    (void)args_json;
    tn_call_set_output(call, "ok", false);
}

static void call_once(const tn_toolkit *tk, const char *name, const char *args) {
    char *out = NULL;
    if (tn_execute(tk, name, args, NULL, &out) != TN_OK || out == NULL ||
        strstr(out, "\"isError\":false") == NULL) {
        FAIL("%s: %s", name, out ? out : "(null)");
        exit(1);
    }
    tn_string_free(out);
}

#define BATCH 1000
#define PAR_THREADS 8
#define PAR_CALLS 50000

static void *par_worker(void *p) {
    const tn_toolkit *tk = p;
    for (int i = 0; i < PAR_CALLS; i++) call_once(tk, "noop", "{\"x\":1}");
    return NULL;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 200;
    if (rounds <= 0) rounds = 200;

    struct server srv;
    if (server_start(&srv) != 0) return 1;
    char config[512];
    snprintf(config, sizeof config,
             "{\"builtins\":false,\"httpTools\":[{\"name\":\"getUser\",\"description\":\"Fetch a "
             "user.\",\"method\":\"GET\",\"url\":\"http://127.0.0.1:%d/echo/{id}\"}]}",
             srv.port);
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(config, &tk, &err) != TN_OK) {
        fprintf(stderr, "build failed: %s\n", err ? err : "?");
        return 1;
    }
    if (tn_toolkit_register(tk, "noop", "A trivial tool.", NULL, ok_tool, NULL, NULL, &err) !=
        TN_OK) {
        fprintf(stderr, "register failed: %s\n", err ? err : "?");
        return 1;
    }

    /* host round trip */
    double *per = malloc(sizeof(double) * (size_t)rounds);
    if (per == NULL) return 1;
    for (int i = 0; i < BATCH; i++) call_once(tk, "noop", "{\"x\":1}");
    for (int r = 0; r < rounds; r++) {
        double t0 = now();
        for (int i = 0; i < BATCH; i++) call_once(tk, "noop", "{\"x\":1}");
        per[r] = (now() - t0) / BATCH;
    }
    printf("host_round_trip_us %.3f us\n", median(per, rounds) * 1e6);

    /* 8 threads, total calls/s */
    pthread_t ts[PAR_THREADS];
    double t0 = now();
    for (int t = 0; t < PAR_THREADS; t++) pthread_create(&ts[t], NULL, par_worker, tk);
    for (int t = 0; t < PAR_THREADS; t++) pthread_join(ts[t], NULL);
    double el = now() - t0;
    printf("host_parallel8_calls_per_s %.0f calls/s\n", PAR_THREADS * (double)PAR_CALLS / el);

    /* HTTP GET, per call */
    int http_n = rounds * 10;
    double *h = malloc(sizeof(double) * (size_t)http_n);
    if (h == NULL) return 1;
    for (int i = 0; i < 200; i++) call_once(tk, "getUser", "{\"id\":\"42\"}");
    for (int i = 0; i < http_n; i++) {
        double s = now();
        call_once(tk, "getUser", "{\"id\":\"42\"}");
        h[i] = now() - s;
    }
    printf("http_get_us %.1f us\n", median(h, http_n) * 1e6);

    tn_toolkit_free(tk);
    server_stop(&srv);
    free(per);
    free(h);
    return atomic_load(&failures) == 0 ? 0 : 1;
}
