/* The C ABI as a C host sees it, using nothing but include/toolnexus.h:
 * statuses and error JSON for bad input, ownership of strings, NULL no-ops,
 * one toolkit shared by many threads, and a host function as a tool.
 *
 * Exits non-zero on the first failed check; prints "N passed, 0 failed". */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "toolnexus.h"
#include "check.h"


/* An error JSON has the shape {"error":{"code":"<code>","message":"..."}}. */
static void check_error_json(const char *json, const char *code) {
    char want[128];
    snprintf(want, sizeof want, "\"code\":\"%s\"", code);
    CHECK(json != NULL, "no error JSON for %s", code);
    CHECK(strncmp(json, "{\"error\":{", 10) == 0, "error JSON shape: %s", json);
    CHECK(contains(json, want), "want code %s in %s", code, json);
    CHECK(contains(json, "\"message\":\""), "no message in %s", json);
}

static int iterations(void) {
    const char *s = getenv("TN_TEST_ITERATIONS");
    int n = s ? atoi(s) : 200;
    return n > 0 ? n : 1;
}

static void test_version(void) {
    CHECK(strcmp(tn_version(), TOOLNEXUS_VERSION) == 0, "tn_version %s vs header %s", tn_version(),
          TOOLNEXUS_VERSION);
    CHECK(tn_abi_version() == TN_ABI_VERSION, "abi %u", (unsigned)tn_abi_version());
    char v[32];
    snprintf(v, sizeof v, "%d.%d.%d", TOOLNEXUS_VERSION_MAJOR, TOOLNEXUS_VERSION_MINOR,
             TOOLNEXUS_VERSION_PATCH);
    CHECK(strcmp(v, TOOLNEXUS_VERSION) == 0, "version macros %s vs %s", v, TOOLNEXUS_VERSION);
}

/* Runs first, before anything starts the library's I/O runtime: a count
 * out of range is refused by name, 1 is taken, and once a build has
 * started the runtime a second count is refused naming the one running. */
static void test_io_threads_before_start(void) {
    char *err = NULL;
    CHECK(tn_set_io_threads(0, &err) == TN_INVALID_ARGUMENT && err &&
              contains(err, "threads must be 1 to 64, got 0"),
          "0 threads: %s", err ? err : "(null)");
    tn_string_free(err);
    CHECK(tn_set_io_threads(TN_MAX_IO_THREADS + 1, NULL) == TN_INVALID_ARGUMENT,
          "65 threads without out_error");
    err = (char *)(uintptr_t)1; /* must be overwritten with NULL */
    CHECK(tn_set_io_threads(1, &err) == TN_OK && err == NULL, "1 thread before start");
}

static void test_io_threads_once_running(void) {
    char *err = NULL;
    CHECK(tn_set_io_threads(4, &err) == TN_INVALID_ARGUMENT && err &&
              contains(err, "already running with 1 worker thread:"),
          "a count once running: %s", err ? err : "(null)");
    tn_string_free(err);
}

static void test_build_errors(void) {
    tn_toolkit *tk = (tn_toolkit *)(uintptr_t)1; /* must be overwritten with NULL */
    char *err = (char *)(uintptr_t)1;
    tn_status st = tn_toolkit_build(NULL, &tk, &err);
    CHECK(st == TN_NULL_ARGUMENT, "NULL config: status %d", st);
    CHECK(tk == NULL, "NULL config: toolkit not NULL");
    check_error_json(err, "null_argument");
    tn_string_free(err);

    err = NULL;
    st = tn_toolkit_build("{}", NULL, &err);
    CHECK(st == TN_NULL_ARGUMENT, "NULL out_toolkit: status %d", st);
    if (err) check_error_json(err, "null_argument"); /* written when it can be */
    tn_string_free(err);

    st = tn_toolkit_build("{\"skills\":[{\"name\":\"\xff\xfe\"}]}", &tk, &err);
    CHECK(st == TN_INVALID_UTF8, "invalid UTF-8: status %d", st);
    CHECK(tk == NULL, "invalid UTF-8: toolkit not NULL");
    check_error_json(err, "invalid_utf8");
    tn_string_free(err);

    st = tn_toolkit_build("{\"skills\": [", &tk, &err);
    CHECK(st == TN_INVALID_JSON, "malformed JSON: status %d", st);
    CHECK(tk == NULL, "malformed JSON: toolkit not NULL");
    check_error_json(err, "invalid_json");
    tn_string_free(err);

    st = tn_toolkit_build("{\"noSuchOption\": true}", &tk, &err);
    CHECK(st == TN_INVALID_CONFIG, "unknown key: status %d", st);
    check_error_json(err, "invalid_config");
    CHECK(contains(err, "noSuchOption"), "error must name the key: %s", err);
    tn_string_free(err);

    st = tn_toolkit_build("{\"skillSampleLimit\": \"ten\"}", &tk, &err);
    CHECK(st == TN_INVALID_CONFIG, "wrong type: status %d", st);
    CHECK(contains(err, "skillSampleLimit"), "error must name the key: %s", err);
    tn_string_free(err);

    st = tn_toolkit_build("[1,2]", &tk, &err);
    CHECK(st == TN_INVALID_CONFIG || st == TN_INVALID_JSON, "array config: status %d", st);
    CHECK(tk == NULL, "array config: toolkit not NULL");
    tn_string_free(err);
}

static tn_toolkit *build_ok(const char *config) {
    tn_toolkit *tk = NULL;
    char *err = (char *)(uintptr_t)1;
    tn_status st = tn_toolkit_build(config, &tk, &err);
    CHECK(st == TN_OK, "build %s: status %d: %s", config, st, st == TN_OK ? "" : err);
    CHECK(tk != NULL, "build ok without toolkit");
    CHECK(err == NULL, "build ok must set out_error to NULL");
    return tk;
}

static void test_render_errors(tn_toolkit *tk) {
    char *out = (char *)(uintptr_t)1;
    tn_status st = tn_render(NULL, "openai", &out);
    CHECK(st == TN_NULL_ARGUMENT, "render NULL toolkit: %d", st);
    check_error_json(out, "null_argument");
    tn_string_free(out);

    st = tn_render(tk, NULL, &out);
    CHECK(st == TN_NULL_ARGUMENT, "render NULL format: %d", st);
    check_error_json(out, "null_argument");
    tn_string_free(out);

    st = tn_render(tk, NULL, NULL);
    CHECK(st == TN_NULL_ARGUMENT, "render NULL out: %d", st);

    st = tn_render(tk, "cobol", &out);
    CHECK(st == TN_UNKNOWN_FORMAT, "unknown format: %d", st);
    check_error_json(out, "unknown_format");
    CHECK(contains(out, "cobol"), "error must name the format: %s", out);
    tn_string_free(out);

    st = tn_render(tk, "open\xc3", &out);
    CHECK(st == TN_INVALID_UTF8, "invalid UTF-8 format: %d", st);
    check_error_json(out, "invalid_utf8");
    tn_string_free(out);

    st = tn_render(tk, "{\"format\":\"openai\",\"tools\":[\"no_such_tool\"]}", &out);
    CHECK(st == TN_INVALID_ARGUMENT, "subset with unknown tool: %d", st);
    check_error_json(out, "invalid_argument");
    CHECK(contains(out, "no_such_tool"), "error must name the tool: %s", out);
    tn_string_free(out);
}

static void test_render(tn_toolkit *tk) {
    char *out = NULL;
    tn_status st = tn_render(tk, "toolNames", &out);
    CHECK(st == TN_OK, "toolNames: %d %s", st, out);
    /* The ten builtins, sorted by name, plus the skill tool (render.json). */
    CHECK(strcmp(out,
                 "[\"apply_patch\",\"bash\",\"edit\",\"glob\",\"grep\",\"question\",\"read\","
                 "\"skill\",\"todowrite\",\"webfetch\",\"write\"]") == 0,
          "toolNames: %s", out);
    tn_string_free(out);

    st = tn_render(tk, "{\"format\":\"anthropic\",\"tools\":[\"write\",\"bash\"]}", &out);
    CHECK(st == TN_OK, "subset: %d %s", st, out);
    CHECK(strncmp(out, "[{\"name\":\"write\"", 16) == 0, "subset order: %s", out);
    CHECK(contains(out, "},{\"name\":\"bash\""), "subset order: %s", out);
    tn_string_free(out);

    st = tn_render(tk, "gemini", &out);
    CHECK(st == TN_OK, "gemini: %d", st);
    CHECK(strncmp(out, "[{\"functionDeclarations\":[", 26) == 0, "gemini: %.80s", out);
    tn_string_free(out);
}

static void test_execute(tn_toolkit *tk) {
    char *out = (char *)(uintptr_t)1;
    tn_status st = tn_execute(tk, "no_such_tool", "{}", NULL, &out);
    CHECK(st == TN_OK, "unknown tool is a ToolResult: %d", st);
    CHECK(contains(out, "unknown tool: no_such_tool"), "unknown tool: %s", out);
    CHECK(contains(out, "\"isError\":true"), "unknown tool isError: %s", out);
    tn_string_free(out);

    st = tn_execute(tk, "skill", "{\"name\":\"greet\"}", NULL, &out);
    CHECK(st == TN_OK, "skill: %d", st);
    CHECK(contains(out, "Say hello politely."), "skill output: %s", out);
    CHECK(contains(out, "\"isError\":false"), "skill isError: %s", out);
    tn_string_free(out);

    /* Args as a JSON string holding the object: the OpenAI wire form. */
    st = tn_execute(tk, "skill", "\"{\\\"name\\\":\\\"greet\\\"}\"", NULL, &out);
    CHECK(st == TN_OK, "skill string args: %d", st);
    CHECK(contains(out, "Say hello politely."), "skill output (string args): %s", out);
    tn_string_free(out);

    st = tn_execute(tk, NULL, "{}", NULL, &out);
    CHECK(st == TN_NULL_ARGUMENT, "NULL name: %d", st);
    check_error_json(out, "null_argument");
    tn_string_free(out);

    /* NULL args means {} (header): a result, not an ABI error. */
    st = tn_execute(tk, "no_such_tool", NULL, NULL, &out);
    CHECK(st == TN_OK, "NULL args: %d", st);
    CHECK(contains(out, "unknown tool: no_such_tool"), "NULL args: %s", out);
    tn_string_free(out);

    st = tn_execute(tk, "skill", "{\"name\":", NULL, &out);
    CHECK(st == TN_INVALID_JSON, "malformed args: %d", st);
    check_error_json(out, "invalid_json");
    tn_string_free(out);

    st = tn_execute(tk, "sk\xe9ll", "{}", NULL, &out);
    CHECK(st == TN_INVALID_UTF8, "invalid UTF-8 name: %d", st);
    check_error_json(out, "invalid_utf8");
    tn_string_free(out);

    st = tn_execute(tk, "skill", "{}", "{\"timeoutMs\":", &out);
    CHECK(st == TN_INVALID_JSON, "malformed context: %d", st);
    check_error_json(out, "invalid_json");
    tn_string_free(out);
}

/* ---- a host function as a tool ---- */

struct counter {
    pthread_mutex_t mu;
    int calls;
    int freed;
};

static void echo_tool(void *user_data, const char *args_json, tn_call *call) {
    struct counter *c = user_data;
    pthread_mutex_lock(&c->mu);
    c->calls++;
    pthread_mutex_unlock(&c->mu);
    char buf[512];
    snprintf(buf, sizeof buf, "echo:%s", args_json);
    tn_call_set_output(call, buf, false);
}

static void meta_tool(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    (void)args_json;
    tn_call_set_result_json(call, "{\"output\":\"with meta\",\"isError\":true,\"metadata\":{\"k\":7}}");
}

static void free_counter(void *user_data) {
    struct counter *c = user_data;
    c->freed++;
}

static void test_host_tools(void) {
    struct counter c = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    tn_toolkit *tk = build_ok("{\"builtins\":false}");
    char *err = (char *)(uintptr_t)1;
    tn_status st = tn_toolkit_register(tk, "echo", "Echo the args.",
                                       "{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"number\"}}}",
                                       echo_tool, &c, free_counter, &err);
    CHECK(st == TN_OK, "register echo: %d %s", st, st == TN_OK ? "" : err);
    CHECK(err == NULL, "register ok must set out_error NULL");
    st = tn_toolkit_register(tk, "meta", "Metadata.", NULL, meta_tool, NULL, NULL, &err);
    CHECK(st == TN_OK, "register meta: %d", st);

    st = tn_toolkit_register(tk, NULL, "x", NULL, echo_tool, NULL, NULL, &err);
    CHECK(st == TN_NULL_ARGUMENT, "register NULL name: %d", st);
    check_error_json(err, "null_argument");
    tn_string_free(err);
    st = tn_toolkit_register(tk, "bad", "x", "{not json", echo_tool, NULL, NULL, &err);
    CHECK(st == TN_INVALID_JSON, "register bad schema: %d", st);
    check_error_json(err, "invalid_json");
    tn_string_free(err);

    char *out = NULL;
    st = tn_render(tk, "tools", &out);
    CHECK(st == TN_OK, "render tools: %d", st);
    CHECK(contains(out, "\"name\":\"echo\""), "echo listed: %s", out);
    CHECK(contains(out, "\"source\":\"native\""), "native source: %s", out);
    tn_string_free(out);

    st = tn_execute(tk, "echo", "{\"x\":1}", NULL, &out);
    CHECK(st == TN_OK, "execute echo: %d", st);
    CHECK(contains(out, "echo:{\\\"x\\\":1}"), "echo output: %s", out);
    CHECK(contains(out, "\"isError\":false"), "echo isError: %s", out);
    tn_string_free(out);

    st = tn_execute(tk, "meta", "{}", NULL, &out);
    CHECK(st == TN_OK, "execute meta: %d", st);
    CHECK(contains(out, "\"output\":\"with meta\""), "meta output: %s", out);
    CHECK(contains(out, "\"metadata\":{\"k\":7}"), "meta metadata: %s", out);
    tn_string_free(out);

    CHECK(c.calls == 1, "echo called %d times", c.calls);
    CHECK(c.freed == 0, "user_data freed too early");
    tn_toolkit_free(tk);
    CHECK(c.freed == 1, "user_data_free ran %d times, want 1", c.freed);
}

/* ---- many threads on one toolkit ---- */

struct shared {
    tn_toolkit *tk;
    const char *want_render;
    const char *want_skill;
    struct counter *counter;
    int failures;
    pthread_mutex_t mu;
};

static void *worker(void *arg) {
    struct shared *s = arg;
    int n = iterations();
    for (int i = 0; i < n; i++) {
        char *out = NULL;
        int bad = 0;
        if (tn_render(s->tk, "openai", &out) != TN_OK || strcmp(out, s->want_render) != 0) bad = 1;
        tn_string_free(out);
        if (tn_execute(s->tk, "skill", "{\"name\":\"greet\"}", NULL, &out) != TN_OK ||
            strcmp(out, s->want_skill) != 0)
            bad = 1;
        tn_string_free(out);
        if (tn_execute(s->tk, "echo", "{}", NULL, &out) != TN_OK || !contains(out, "echo:{}")) bad = 1;
        tn_string_free(out);
        if (bad) {
            pthread_mutex_lock(&s->mu);
            s->failures++;
            pthread_mutex_unlock(&s->mu);
        }
    }
    return NULL;
}

static void test_threads(const char *config) {
    enum { THREADS = 8 };
    struct counter c = {PTHREAD_MUTEX_INITIALIZER, 0, 0};
    struct shared s = {0};
    pthread_mutex_init(&s.mu, NULL);
    s.tk = build_ok(config);
    s.counter = &c;
    char *err = NULL;
    CHECK(tn_toolkit_register(s.tk, "echo", "Echo.", NULL, echo_tool, &c, free_counter, &err) == TN_OK,
          "register: %s", err);
    char *render = NULL, *skill = NULL;
    CHECK(tn_render(s.tk, "openai", &render) == TN_OK, "render");
    CHECK(tn_execute(s.tk, "skill", "{\"name\":\"greet\"}", NULL, &skill) == TN_OK, "skill");
    s.want_render = render;
    s.want_skill = skill;

    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++) CHECK(pthread_create(&th[i], NULL, worker, &s) == 0, "thread");
    for (int i = 0; i < THREADS; i++) pthread_join(th[i], NULL);
    CHECK(s.failures == 0, "%d thread iterations saw a wrong result", s.failures);
    CHECK(c.calls == THREADS * iterations(), "host tool calls %d, want %d", c.calls, THREADS * iterations());

    tn_string_free(render);
    tn_string_free(skill);
    tn_toolkit_free(s.tk);
    CHECK(c.freed == 1, "user_data_free ran %d times", c.freed);
    pthread_mutex_destroy(&s.mu);
}

static void test_null_noops(void) {
    tn_string_free(NULL);
    tn_toolkit_free(NULL);
    tn_cancel_free(NULL);
    tn_cancel_trigger(NULL);
    passed++;
}

static void test_helper_and_translate_errors(void) {
    char *out = NULL;
    tn_status st = tn_helper(NULL, "[]", &out);
    CHECK(st == TN_NULL_ARGUMENT, "helper NULL name: %d", st);
    check_error_json(out, "null_argument");
    tn_string_free(out);

    st = tn_translate(NULL, "{}", NULL, NULL, &out);
    CHECK(st == TN_NULL_ARGUMENT, "translate NULL client: %d", st);
    check_error_json(out, "null_argument");
    tn_string_free(out);

    st = tn_translate("{\"baseUrl\":", "{\"messages\":[]}", NULL, NULL, &out);
    CHECK(st == TN_INVALID_JSON, "translate malformed client: %d", st);
    check_error_json(out, "invalid_json");
    tn_string_free(out);

    st = tn_count_tokens(NULL, "{}", NULL, NULL, &out);
    CHECK(st == TN_NULL_ARGUMENT, "count_tokens NULL client: %d", st);
    check_error_json(out, "null_argument");
    tn_string_free(out);

    st = tn_count_tokens("{\"baseUrl\":", "{\"messages\":[]}", NULL, NULL, &out);
    CHECK(st == TN_INVALID_JSON, "count_tokens malformed client: %d", st);
    check_error_json(out, "invalid_json");
    tn_string_free(out);

    st = tn_count_tokens("{\"baseUrl\":\"http://127.0.0.1:9\",\"style\":\"anthropic\"}",
                         "{\"messages\":[]}", NULL, NULL, &out);
    CHECK(st == TN_INVALID_CONFIG, "count_tokens client without a model: %d", st);
    check_error_json(out, "invalid_config");
    tn_string_free(out);

    st = tn_count_tokens("{}", "{\"messages\":\"\xff\"}", NULL, NULL, &out);
    CHECK(st == TN_INVALID_UTF8, "count_tokens invalid UTF-8 request: %d", st);
    check_error_json(out, "invalid_utf8");
    tn_string_free(out);

    st = tn_count_tokens("{}", "{}", NULL, NULL, NULL);
    CHECK(st == TN_NULL_ARGUMENT, "count_tokens NULL out_json: %d", st);

    tn_cancel *c = tn_cancel_new();
    CHECK(c != NULL, "tn_cancel_new");
    tn_cancel_trigger(c);
    tn_cancel_trigger(c); /* idempotent */
    tn_cancel_free(c);
}

/* ---- tn_translate cancelled from another thread ---- */

struct translate_job {
    char client[128];
    tn_cancel *cancel;
    tn_status status;
    char *out;
};

static void *run_translate(void *arg) {
    struct translate_job *job = arg;
    job->status = tn_translate(job->client, "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}]}", NULL,
                               job->cancel, &job->out);
    return NULL;
}

/* A provider on 127.0.0.1 that accepts the connection and never answers: only
 * the cancel token can end the call. */
static void test_translate_cancel(void) {
    int srv = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof a;
    CHECK(bind(srv, (struct sockaddr *)&a, sizeof a) == 0 && listen(srv, 4) == 0 &&
              getsockname(srv, (struct sockaddr *)&a, &al) == 0,
          "mock provider socket");
    struct translate_job job;
    memset(&job, 0, sizeof job);
    snprintf(job.client, sizeof job.client,
             "{\"baseUrl\":\"http://127.0.0.1:%d\",\"style\":\"openai\",\"model\":\"m\",\"apiKey\":\"k\"}",
             ntohs(a.sin_port));
    job.cancel = tn_cancel_new();
    CHECK(job.cancel != NULL, "tn_cancel_new");
    pthread_t th;
    CHECK(pthread_create(&th, NULL, run_translate, &job) == 0, "thread");
    int conn = accept(srv, NULL, NULL); /* the request is in flight */
    CHECK(conn >= 0, "accept");
    tn_cancel_trigger(job.cancel);
    pthread_join(th, NULL);
    CHECK(job.status == TN_CANCELLED, "cancelled translate: status %d: %s", job.status, job.out);
    check_error_json(job.out, "cancelled");
    tn_string_free(job.out);
    tn_cancel_free(job.cancel);
    close(conn);
    close(srv);
}

/* ---- the client loop's ABI: statuses, callbacks, ownership ---- */

struct hook_probe {
    int freed;
    int calls;
    tn_status bad_json; /* what tn_reply_set_json said to text that is not JSON */
    void *run_data;     /* what tn_reply_run_data gave */
    int rendered;       /* a re-entrant tn_render from inside the callback worked */
    tn_toolkit *tk;
};

static void probe_free(void *user_data) { ((struct hook_probe *)user_data)->freed++; }

/* beforeLLM that checks the reply API, calls back into the library, then
 * fails: the run must end with TN_CALLBACK_ERROR before any provider call. */
static void failing_before_llm(void *user_data, const char *event_json, tn_reply *reply) {
    struct hook_probe *p = user_data;
    p->calls++;
    p->bad_json = tn_reply_set_json(reply, "{not json");
    p->run_data = tn_reply_run_data(reply);
    char *out = NULL;
    if (tn_render(p->tk, "toolNames", &out) == TN_OK && contains(out, "[")) p->rendered = 1;
    tn_string_free(out);
    if (contains(event_json, "\"turn\":0")) tn_reply_set_error(reply, "the guard said no");
}

static void test_client_abi(void) {
    tn_client *client = (tn_client *)(uintptr_t)1;
    char *err = NULL;
    CHECK(tn_client_new(NULL, &client, &err) == TN_NULL_ARGUMENT && client == NULL, "NULL client json");
    check_error_json(err, "null_argument");
    tn_string_free(err);
    CHECK(tn_client_new("{\"baseUrl\":\"http://127.0.0.1:1\",\"model\":\"m\",\"maxTurn\":2}", &client, &err) ==
              TN_INVALID_CONFIG,
          "unknown client key");
    CHECK(contains(err, "maxTurn"), "the error names the key: %s", err);
    tn_string_free(err);
    CHECK(tn_client_new("{\"baseUrl\":\"http://127.0.0.1:1\",\"model\":\"m\",\"apiKey\":\"k\",\"retries\":0}",
                        &client, &err) == TN_OK &&
              client != NULL && err == NULL,
          "client: %s", err);

    struct hook_probe p;
    memset(&p, 0, sizeof p);
    p.tk = build_ok("{\"builtins\":false}");
    CHECK(tn_client_set_callback(client, "beforeLlm", failing_before_llm, &p, probe_free, &err) ==
              TN_INVALID_ARGUMENT,
          "unknown slot");
    CHECK(contains(err, "beforeLLM") && p.freed == 1, "the error lists the slots, user_data released: %s", err);
    tn_string_free(err);
    CHECK(tn_client_set_callback(client, "beforeLLM", failing_before_llm, &p, probe_free, &err) == TN_OK &&
              err == NULL,
          "set beforeLLM: %s", err);

    char *out = NULL;
    CHECK(tn_run(client, p.tk, NULL, NULL, NULL, &out) == TN_NULL_ARGUMENT, "NULL request");
    tn_string_free(out);
    CHECK(tn_run(client, p.tk, "{\"prompt\":", NULL, NULL, &out) == TN_INVALID_JSON, "bad request JSON");
    tn_string_free(out);
    CHECK(tn_run(client, p.tk, "{\"history\":[]}", NULL, NULL, &out) == TN_INVALID_ARGUMENT, "no prompt");
    CHECK(contains(out, "prompt"), "names prompt: %s", out);
    tn_string_free(out);

    int marker = 0;
    tn_status st = tn_run(client, p.tk, "{\"prompt\":\"Hi\"}", NULL, &marker, &out);
    CHECK(st == TN_CALLBACK_ERROR, "a failing hook: status %d: %s", st, out);
    check_error_json(out, "callback_error");
    CHECK(contains(out, "beforeLLM") && contains(out, "the guard said no"), "names slot and message: %s", out);
    tn_string_free(out);
    CHECK(p.calls == 1 && p.bad_json == TN_INVALID_JSON && p.run_data == &marker && p.rendered,
          "callback probes: calls %d bad_json %d run_data %p rendered %d", p.calls, p.bad_json, p.run_data,
          p.rendered);

    st = tn_run_resume(client, p.tk,
                       "{\"history\":[{\"role\":\"user\",\"content\":\"x\"}],\"pending\":{\"id\":\"a\",\"kind\":"
                       "\"question\",\"prompt\":\"?\"},\"answer\":{\"id\":\"b\",\"ok\":true}}",
                       NULL, NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT && contains(out, "echo"), "mismatched answer id: %d %s", st, out);
    tn_string_free(out);

    /* Clearing the slot releases its user_data; then the run reaches the
     * (closed) provider port and fails there. */
    CHECK(tn_client_set_callback(client, "beforeLLM", NULL, NULL, NULL, &err) == TN_OK, "clear");
    CHECK(p.freed == 2, "the replaced callback's user_data was released: %d", p.freed);
    st = tn_run(client, NULL, "{\"prompt\":\"Hi\"}", NULL, NULL, &out);
    CHECK(st == TN_PROVIDER_ERROR, "no provider: status %d: %s", st, out);
    tn_string_free(out);
    CHECK(tn_client_set_callback(client, "afterTool", failing_before_llm, &p, probe_free, &err) == TN_OK, "set");
    tn_client_free(client);
    CHECK(p.freed == 3, "tn_client_free released the last user_data: %d", p.freed);
    tn_client_free(NULL);
    tn_toolkit_free(p.tk);
}

int main(void) {
    const char *config =
        "{\"skills\":[{\"name\":\"greet\",\"description\":\"Greets people.\","
        "\"content\":\"Say hello politely.\"}]}";
    test_io_threads_before_start();
    test_version();
    test_null_noops();
    test_build_errors();
    tn_toolkit *tk = build_ok(config);
    test_render_errors(tk);
    test_render(tk);
    test_execute(tk);
    tn_toolkit_free(tk);
    test_host_tools();
    test_threads(config);
    test_helper_and_translate_errors();
    test_translate_cancel();
    test_client_abi();
    test_io_threads_once_running();
    printf("test_abi: %d passed, 0 failed\n", passed);
    return 0;
}
