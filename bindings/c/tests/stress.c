/*
 * Stress test through the C ABI: THREADS threads each make CALLS tn_execute
 * calls on ONE toolkit, mixing a host C function tool, an HTTP tool against a
 * keep-alive HTTP/1.1 server on 127.0.0.1 (in this program), and the skill
 * tool. Every result is checked against the value the call must produce.
 *
 *   TN_STRESS_CALLS=n    calls per thread (default 10000)
 *   TN_STRESS_THREADS=n  threads (default 16)
 *
 * Exit status 0 when every call returned what it must.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "toolnexus.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static atomic_long failures;
static atomic_long host_calls;
static atomic_long user_data_freed;

#define FAIL(...)                                                            \
    do {                                                                     \
        if (atomic_fetch_add(&failures, 1) < 20) {                           \
            fprintf(stderr, "stress: " __VA_ARGS__);                         \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

#include "mini_http.h"

/* ---- the host tool: {"n": k} -> output "2k" ---- */

static void double_it(void *user_data, const char *args_json, tn_call *call) {
    atomic_fetch_add((atomic_long *)user_data, 1);
    const char *p = strstr(args_json, "\"n\":");
    if (p == NULL) {
        tn_call_set_output(call, "missing n", true);
        return;
    }
    long n = strtol(p + 4, NULL, 10);
    char out[32];
    snprintf(out, sizeof out, "%ld", 2 * n);
    if (tn_call_set_output(call, out, false) != TN_OK) abort();
}

static void count_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&user_data_freed, 1);
}

/* ---- the workers ---- */

struct worker {
    const tn_toolkit *tk;
    int index;
    long calls;
};

static void *work(void *p) {
    struct worker *w = p;
    char args[64], want[160];
    for (long i = 0; i < w->calls; i++) {
        long id = (long)w->index * 1000000L + i;
        int kind = (int)((i + w->index) % 3);
        const char *name;
        if (kind == 0) {
            name = "double";
            snprintf(args, sizeof args, "{\"n\":%ld}", id);
            snprintf(want, sizeof want, "{\"output\":\"%ld\",\"isError\":false}", 2 * id);
        } else if (kind == 1) {
            name = "echo";
            snprintf(args, sizeof args, "{\"id\":\"%ld\"}", id);
            snprintf(want, sizeof want,
                     "{\"output\":\"echo:%ld\",\"isError\":false,\"metadata\":{\"status\":200}}", id);
        } else {
            name = "skill";
            snprintf(args, sizeof args, "{\"name\":\"greet\"}");
            want[0] = '\0';
        }
        char *out = NULL;
        tn_status st = tn_execute(w->tk, name, args, NULL, &out);
        if (st != TN_OK || out == NULL) {
            FAIL("thread %d call %ld (%s): status %d, %s", w->index, i, name, st,
                 out ? out : "(null)");
        } else if (kind != 2 && strcmp(out, want) != 0) {
            FAIL("thread %d call %ld (%s): got %s, want %s", w->index, i, name, out, want);
        } else if (kind == 2 && (strstr(out, "Say hello.") == NULL ||
                                 strstr(out, "\"isError\":false") == NULL)) {
            FAIL("thread %d call %ld (skill): got %s", w->index, i, out);
        }
        tn_string_free(out);
    }
    return NULL;
}

static long env_long(const char *name, long dflt) {
    const char *v = getenv(name);
    if (v == NULL || *v == '\0') return dflt;
    char *end;
    long n = strtol(v, &end, 10);
    if (*end != '\0' || n <= 0) {
        fprintf(stderr, "stress: %s must be a positive integer, got '%s'\n", name, v);
        exit(2);
    }
    return n;
}

int main(void) {
    long calls = env_long("TN_STRESS_CALLS", 10000);
    long threads = env_long("TN_STRESS_THREADS", 16);

    struct server srv;
    if (server_start(&srv) != 0) {
        perror("stress: server");
        return 1;
    }

    char config[1024];
    snprintf(config, sizeof config,
             "{\"builtins\":false,"
             "\"skills\":[{\"name\":\"greet\",\"description\":\"Greets.\",\"content\":\"Say hello.\"}],"
             "\"httpTools\":[{\"name\":\"echo\",\"description\":\"Echoes an id.\",\"method\":\"GET\","
             "\"url\":\"http://127.0.0.1:%d/echo/{id}\",\"timeout\":30000}]}",
             srv.port);
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(config, &tk, &err) != TN_OK) {
        fprintf(stderr, "stress: build failed: %s\n", err);
        tn_string_free(err);
        return 1;
    }
    if (tn_toolkit_register(tk, "double", "Doubles n.",
                            "{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"integer\"}}}",
                            double_it, &host_calls, count_free, &err) != TN_OK) {
        fprintf(stderr, "stress: register failed: %s\n", err);
        tn_string_free(err);
        return 1;
    }

    struct worker *ws = calloc((size_t)threads, sizeof *ws);
    pthread_t *ts = calloc((size_t)threads, sizeof *ts);
    if (ws == NULL || ts == NULL) abort();
    for (long t = 0; t < threads; t++) {
        ws[t] = (struct worker){.tk = tk, .index = (int)t, .calls = calls};
        if (pthread_create(&ts[t], NULL, work, &ws[t]) != 0) abort();
    }
    for (long t = 0; t < threads; t++) pthread_join(ts[t], NULL);

    /* Expected counts: call i of thread t is kind (i + t) % 3. */
    long want_host = 0, want_http = 0;
    for (long t = 0; t < threads; t++)
        for (long i = 0; i < calls; i++) {
            int k = (int)((i + t) % 3);
            want_host += k == 0;
            want_http += k == 1;
        }

    tn_toolkit_free(tk);
    if (atomic_load(&user_data_freed) != 1)
        FAIL("user_data_free ran %ld times, want 1", atomic_load(&user_data_freed));
    if (atomic_load(&host_calls) != want_host)
        FAIL("host tool ran %ld times, want %ld", atomic_load(&host_calls), want_host);
    if (atomic_load(&srv.requests) != want_http)
        FAIL("server answered %ld requests, want %ld", atomic_load(&srv.requests), want_http);
    int conns = srv.n_conns;
    server_stop(&srv);
    free(ws);
    free(ts);

    long f = atomic_load(&failures);
    printf("stress: %ld threads x %ld calls: %ld host, %ld http over %d connection(s), %ld skill; "
           "%ld failure(s)\n",
           threads, calls, want_host, want_http, conns, threads * calls - want_host - want_http, f);
    return f == 0 ? 0 : 1;
}
