/* Handles freed while a call still uses them (issue 25 H3): a client freed
 * inside its own beforeTool hook, by both parallel calls' hooks, or from
 * another thread while the run waits in waitFor; a toolkit freed inside a
 * run's hook and inside its own host tool during tn_execute; a cancel token
 * freed inside a run's hook; a server stopped while another thread waits on
 * it. Each free is deferred until the call returns:
 * the call finishes normally, the user_data_free of what was freed runs
 * once, after the call. Run plain, under ASan+UBSan and under valgrind: on
 * a library that frees at once each scenario is a use-after-free. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolnexus.h"

#include "check.h"

/* ---- an in-process model: turn 0 asks for `calls` echo calls ---------- */

static atomic_int generate_frees;
static atomic_int echo_frees;

static void count_generate_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&generate_frees, 1);
}

static void count_echo_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&echo_frees, 1);
}

/* user_data: the number of tool calls turn 0 asks for (1 or 2). */
static void generate(void *user_data, const char *event_json, tn_reply *reply) {
    int calls = *(const int *)user_data;
    if (contains(event_json, "\"turn\":0")) {
        tn_reply_set_json(reply, calls == 2 ? "{\"toolCalls\":[{\"name\":\"echo\",\"arguments\":{\"n\":1}},"
                                              "{\"name\":\"echo\",\"arguments\":{\"n\":2}}]}"
                                            : "{\"toolCalls\":[{\"name\":\"echo\",\"arguments\":{\"n\":1}}]}");
        return;
    }
    tn_reply_set_json(reply, "{\"content\":\"done\"}");
}

static const int ONE = 1, TWO = 2;

static void echo(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    (void)args_json;
    tn_call_set_output(call, "echoed", false);
}

static tn_client *new_client(const int *calls) {
    tn_client *client = NULL;
    char *err = NULL;
    tn_status st = tn_client_new_in_process("{\"model\":\"local\"}", generate, (void *)calls, count_generate_free,
                                            &client, &err);
    CHECK(st == TN_OK && client != NULL, "%d %s", st, err);
    return client;
}

static tn_toolkit *new_toolkit(void) {
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_status st = tn_toolkit_build("{\"builtins\":false}", &tk, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    st = tn_toolkit_register(tk, "echo", "echoes", NULL, echo, NULL, count_echo_free, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    return tk;
}

static void set_callback(tn_client *client, const char *slot, tn_callback cb, void *user_data) {
    char *err = NULL;
    tn_status st = tn_client_set_callback(client, slot, cb, user_data, NULL, &err);
    CHECK(st == TN_OK, "%s: %d %s", slot, st, err);
}

static void expect_done(tn_status st, char *out) {
    CHECK(st == TN_OK, "run: %d %s", st, out);
    CHECK(contains(out, "\"text\":\"done\"") && contains(out, "\"output\":\"echoed\""), "%s", out);
    tn_string_free(out);
}

/* ---- 1 and 2: the client freed by its own beforeTool hook(s) ----------- */

static void free_client_hook(void *user_data, const char *event_json, tn_reply *reply) {
    (void)event_json;
    (void)reply;
    tn_client_free(*(tn_client **)user_data);
    /* Not freed yet: the run still holds the client. */
    CHECK(atomic_load(&generate_frees) == 0, "generate's user_data freed inside the run");
}

static void test_client_freed_in_hook(const int *calls) {
    atomic_store(&generate_frees, 0);
    tn_toolkit *tk = new_toolkit();
    tn_client *client = new_client(calls);
    set_callback(client, "beforeTool", free_client_hook, &client);
    char *out = NULL;
    tn_status st = tn_run(client, tk, "{\"prompt\":\"go\"}", NULL, NULL, &out);
    expect_done(st, out);
    CHECK(atomic_load(&generate_frees) == 1, "generate's user_data freed once, after the run: %d",
          atomic_load(&generate_frees));
    tn_toolkit_free(tk);
}

/* ---- 3: the client freed from another thread while waitFor waits -------- */

static atomic_int suspended;

static void suspend_once(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)event_json;
    if (atomic_fetch_add(&suspended, 1) == 0) {
        tn_reply_set_json(reply, "{\"result\":{\"output\":\"\",\"isError\":false,\"metadata\":{\"pending\":"
                                 "{\"id\":\"r1\",\"kind\":\"input\",\"prompt\":\"ok?\"}}}}");
    }
}

static void *free_client_thread(void *arg) {
    tn_client_free(*(tn_client **)arg);
    return NULL;
}

static void wait_for_while_freed(void *user_data, const char *event_json, tn_reply *reply) {
    (void)event_json;
    pthread_t t;
    CHECK(pthread_create(&t, NULL, free_client_thread, user_data) == 0, "pthread_create");
    pthread_join(t, NULL);
    CHECK(atomic_load(&generate_frees) == 0, "generate's user_data freed while waitFor waits");
    tn_reply_set_json(reply, "{\"id\":\"r1\",\"ok\":true,\"data\":{\"output\":\"yes\"}}");
}

static void test_client_freed_while_waiting(void) {
    atomic_store(&generate_frees, 0);
    atomic_store(&suspended, 0);
    tn_toolkit *tk = new_toolkit();
    tn_client *client = new_client(&ONE);
    set_callback(client, "beforeTool", suspend_once, NULL);
    set_callback(client, "waitFor", wait_for_while_freed, &client);
    char *out = NULL;
    tn_status st = tn_run(client, tk, "{\"prompt\":\"go\"}", NULL, NULL, &out);
    CHECK(st == TN_OK && contains(out, "\"text\":\"done\""), "run: %d %s", st, out);
    tn_string_free(out);
    CHECK(atomic_load(&generate_frees) == 1, "generate's user_data freed once, after the run");
    tn_toolkit_free(tk);
}

/* ---- 4: the toolkit freed by a run's hook, before its tool runs --------- */

static void free_toolkit_hook(void *user_data, const char *event_json, tn_reply *reply) {
    (void)event_json;
    (void)reply;
    tn_toolkit_free(*(tn_toolkit **)user_data);
    CHECK(atomic_load(&echo_frees) == 0, "the host tool's user_data freed inside the run");
}

static void test_toolkit_freed_in_run(void) {
    atomic_store(&echo_frees, 0);
    atomic_store(&generate_frees, 0);
    tn_toolkit *tk = new_toolkit();
    tn_client *client = new_client(&ONE);
    set_callback(client, "beforeTool", free_toolkit_hook, &tk);
    char *out = NULL;
    tn_status st = tn_run(client, tk, "{\"prompt\":\"go\"}", NULL, NULL, &out);
    expect_done(st, out);
    CHECK(atomic_load(&echo_frees) == 1, "the host tool's user_data freed once, after the run");
    tn_client_free(client);
    CHECK(atomic_load(&generate_frees) == 1, "client freed");
}

/* ---- 5: the toolkit freed by its own host tool during tn_execute -------- */

static void free_own_toolkit(void *user_data, const char *args_json, tn_call *call) {
    (void)args_json;
    tn_toolkit_free(*(tn_toolkit **)user_data);
    CHECK(atomic_load(&echo_frees) == 0, "the host tool's user_data freed during its own call");
    tn_call_set_output(call, "freed my toolkit", false);
}

static void test_toolkit_freed_by_its_tool(void) {
    atomic_store(&echo_frees, 0);
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_status st = tn_toolkit_build("{\"builtins\":false}", &tk, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    st = tn_toolkit_register(tk, "suicide", "frees its toolkit", NULL, free_own_toolkit, &tk, count_echo_free,
                             &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    char *out = NULL;
    st = tn_execute(tk, "suicide", "{}", NULL, &out);
    CHECK(st == TN_OK && contains(out, "freed my toolkit"), "%d %s", st, out);
    tn_string_free(out);
    CHECK(atomic_load(&echo_frees) == 1, "the host tool's user_data freed once, after the call");
}

/* ---- 6: the cancel token freed by a run's hook -------------------------- */

static void free_cancel_hook(void *user_data, const char *event_json, tn_reply *reply) {
    (void)event_json;
    (void)reply;
    tn_cancel_free(*(tn_cancel **)user_data);
}

static void test_cancel_freed_in_run(void) {
    atomic_store(&generate_frees, 0);
    tn_toolkit *tk = new_toolkit();
    tn_client *client = new_client(&ONE);
    tn_cancel *cancel = tn_cancel_new();
    set_callback(client, "beforeTool", free_cancel_hook, &cancel);
    char *out = NULL;
    tn_status st = tn_run(client, tk, "{\"prompt\":\"go\"}", cancel, NULL, &out);
    expect_done(st, out);
    tn_client_free(client);
    tn_toolkit_free(tk);
}

/* ---- 7: a server stopped while another thread waits on it -------------- */

static atomic_int on_call_frees;

static void count_on_call_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&on_call_frees, 1);
}

static void heard(void *user_data, const char *event_json) {
    (void)user_data;
    (void)event_json;
}

static void *wait_server(void *arg) {
    bool ended = tn_serve_wait((const tn_server *)arg, -1);
    return ended ? arg : NULL;
}

static void test_server_stopped_while_waited_on(void) {
    atomic_store(&on_call_frees, 0);
    tn_toolkit *tk = new_toolkit();
    tn_server *server = NULL;
    char *out = NULL;
    tn_status st = tn_serve(tk, "{\"addr\":\"127.0.0.1:0\"}", heard, NULL, count_on_call_free, &server, &out);
    CHECK(st == TN_OK && server != NULL, "%d %s", st, out);
    tn_string_free(out);
    pthread_t t;
    CHECK(pthread_create(&t, NULL, wait_server, server) == 0, "pthread_create");
    sleep_ms(200);
    tn_serve_stop(server);
    void *ended = NULL;
    pthread_join(t, &ended);
    CHECK(ended == server, "tn_serve_wait returned true once the server stopped");
    CHECK(atomic_load(&on_call_frees) == 1, "on_call's user_data freed once");
    tn_toolkit_free(tk);
}

/* ---- 8: a server stopped by its own on_call ----------------------------- */

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* POSTs one JSON-RPC body to 127.0.0.1:port/mcp; the answer's first bytes
 * go to answer (NUL-terminated). */
static void post(int port, const char *body, char *answer, size_t cap) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    CHECK(fd >= 0, "socket");
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof a) == 0, "connect");
    char req[1024];
    int n = snprintf(req, sizeof req,
                     "POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\n"
                     "accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n"
                     "content-length: %zu\r\nconnection: close\r\n\r\n%s",
                     strlen(body), body);
    CHECK(write(fd, req, (size_t)n) == n, "write");
    size_t got = 0;
    ssize_t r;
    while (got + 1 < cap && (r = read(fd, answer + got, cap - 1 - got)) > 0) got += (size_t)r;
    answer[got] = 0;
    close(fd);
}

static tn_server *self_stopping;

static void stop_myself(void *user_data, const char *event_json) {
    (void)user_data;
    (void)event_json;
    tn_serve_stop(self_stopping);
}

static void test_server_stopped_by_its_own_callback(void) {
    atomic_store(&on_call_frees, 0);
    tn_toolkit *tk = new_toolkit();
    char *out = NULL;
    tn_status st = tn_serve(tk, "{\"addr\":\"127.0.0.1:0\"}", stop_myself, NULL, count_on_call_free,
                            &self_stopping, &out);
    CHECK(st == TN_OK && self_stopping != NULL, "%d %s", st, out);
    const char *colon = strrchr(out, ':');
    int port = colon ? atoi(colon + 1) : 0;
    tn_string_free(out);
    char answer[4096];
    long start = now_ms();
    post(port, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
               "\"arguments\":{}}}",
         answer, sizeof answer);
    /* Stopping cancels the calls in flight, this one included: any answer
     * (or none) will do, as long as nothing breaks. */
    long until = now_ms() + 10000;
    while (atomic_load(&on_call_frees) == 0 && now_ms() < until) sleep_ms(5);
    CHECK(atomic_load(&on_call_frees) == 1, "on_call's user_data freed once the callback returned");
    CHECK(now_ms() - start < 2000, "stopping from on_call took %ld ms", now_ms() - start);
    tn_toolkit_free(tk);
    /* The thread that frees the server ends just after: let it, so that
     * valgrind does not see what it holds at exit. */
    sleep_ms(300);
}

/* With an argument, only that scenario (1-8) runs. */
int main(int argc, char **argv) {
    int only = argc > 1 ? atoi(argv[1]) : 0;
    if (only == 0 || only == 1) test_client_freed_in_hook(&ONE);
    if (only == 0 || only == 2) test_client_freed_in_hook(&TWO);
    if (only == 0 || only == 3) test_client_freed_while_waiting();
    if (only == 0 || only == 4) test_toolkit_freed_in_run();
    if (only == 0 || only == 5) test_toolkit_freed_by_its_tool();
    if (only == 0 || only == 6) test_cancel_freed_in_run();
    if (only == 0 || only == 7) test_server_stopped_while_waited_on();
    if (only == 0 || only == 8) test_server_stopped_by_its_own_callback();
    printf("%d passed, 0 failed\n", passed);
    return 0;
}
