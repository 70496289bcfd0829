/* What a C host gets around the client loop (SPEC §8), through nothing but
 * include/toolnexus.h: an in-process client whose turns a C generate
 * function answers (no HTTP at all) calling a C host tool, onMetric events
 * and the Prometheus text of tn_client_metrics, tn_ask with an id over the
 * client's own store and over a host store (storeGet/storeSave), and a
 * streamed run (tn_stream) against an SSE server on 127.0.0.1 with its
 * events delivered to onEvent; a beforeTool hook that blocks past the run's
 * cancel or timeoutMs (the run returns on time, the hook sees
 * tn_reply_cancelled), and tn_client_set_callback with a NULL out_error;
 * a host store (tn_store_register) keeping ask's conversations, refused
 * registrations, garbage and failures naming the store, and the store kept
 * alive by the client past tn_store_unregister; a host store whose callback
 * hangs behind a served A2A agent (tn_store_register_with's timeoutMs): its
 * GetTask answers a JSON-RPC error naming the store at the deadline and the
 * server answers the next request.
 *
 * Exits non-zero on the first failed check; prints "N passed, 0 failed". */
#define _POSIX_C_SOURCE 200809L
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "toolnexus.h"
#include "check.h"

static int count_of(const char *haystack, const char *needle) {
    int n = 0;
    for (const char *p = haystack; (p = strstr(p, needle)) != NULL; p += strlen(needle)) n++;
    return n;
}

/* ---- a host tool: add(a, b) --------------------------------------------- */

static double number_after(const char *json, const char *key) {
    const char *p = strstr(json, key);
    return p ? atof(p + strlen(key)) : 0.0;
}

static void add_tool(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    char out[64];
    snprintf(out, sizeof out, "%g", number_after(args_json, "\"a\":") + number_after(args_json, "\"b\":"));
    tn_call_set_output(call, out, false);
}

/* ---- the generate function of the in-process model ---------------------- */

static atomic_int generate_frees;

static void count_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&generate_frees, 1);
}

/* Turn 0 calls add(2, 3); afterwards the answer names the tool's result and
 * how many user messages the model was sent (what ask's memory changes). */
static void generate(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    if (contains(event_json, "\"turn\":0") && contains(event_json, "add 2 and 3")) {
        tn_reply_set_json(reply,
                          "{\"toolCalls\":[{\"name\":\"add\",\"arguments\":{\"a\":2,\"b\":3}}],"
                          "\"usage\":{\"promptTokens\":4,\"completionTokens\":1}}");
        return;
    }
    if (contains(event_json, "fail please")) {
        tn_reply_set_error(reply, "the local model is not loaded");
        return;
    }
    char answer[128];
    snprintf(answer, sizeof answer,
             "{\"content\":\"%s users=%d\",\"usage\":{\"promptTokens\":2,\"completionTokens\":2}}",
             contains(event_json, "\"role\":\"tool\",\"tool_call_id\":\"call_0\",\"content\":\"5\"") ? "sum 5"
                                                                                                       : "plain",
             count_of(event_json, "\"role\":\"user\""));
    tn_reply_set_json(reply, answer);
}

/* ---- observers ------------------------------------------------------------ */

struct log {
    pthread_mutex_t lock;
    char text[16384];
};

static void log_event(void *user_data, const char *event_json, tn_reply *reply) {
    (void)reply;
    struct log *log = user_data;
    pthread_mutex_lock(&log->lock);
    size_t used = strlen(log->text);
    snprintf(log->text + used, sizeof log->text - used, "%s\n", event_json);
    pthread_mutex_unlock(&log->lock);
}

/* A host conversation store keeping one transcript (enough for one id). */
struct store {
    char id[64];
    char *messages; /* the JSON array, malloc'd */
    int saves;
};

static void store_get(void *user_data, const char *event_json, tn_reply *reply) {
    struct store *s = user_data;
    if (s->messages != NULL && contains(event_json, s->id)) tn_reply_set_json(reply, s->messages);
}

static void store_save(void *user_data, const char *event_json, tn_reply *reply) {
    (void)reply;
    struct store *s = user_data;
    /* {"id":"...","messages":[...]}: the array runs to the last '}'. */
    const char *start = strstr(event_json, "\"messages\":");
    const char *end = strrchr(event_json, '}');
    if (start == NULL || end == NULL) return;
    start += strlen("\"messages\":");
    free(s->messages);
    s->messages = strndup(start, (size_t)(end - start));
    s->saves++;
}

static void set_slot(tn_client *client, const char *slot, tn_callback fn, void *user_data) {
    char *err = NULL;
    tn_status st = tn_client_set_callback(client, slot, fn, user_data, NULL, &err);
    CHECK(st == TN_OK, "set %s: %s", slot, err ? err : "");
}

static void test_in_process(void) {
    char *err = NULL;
    tn_toolkit *tk = NULL;
    CHECK(tn_toolkit_build("{\"builtins\":false}", &tk, &err) == TN_OK, "toolkit: %s", err);
    CHECK(tn_toolkit_register(tk, "add", "adds a and b", NULL, add_tool, NULL, NULL, &err) == TN_OK,
          "register: %s", err);

    /* An in-process client takes no endpoint; generate is required. */
    tn_client *client = NULL;
    tn_status st = tn_client_new_in_process("{\"model\":\"local\",\"baseUrl\":\"http://x\"}", generate,
                                            NULL, count_free, &client, &err);
    CHECK(st == TN_INVALID_CONFIG && client == NULL && contains(err, "baseUrl"), "%d %s", st, err);
    tn_string_free(err);
    CHECK(atomic_load(&generate_frees) == 1, "user_data freed on failure");
    st = tn_client_new_in_process("{\"model\":\"local\"}", NULL, NULL, NULL, &client, &err);
    CHECK(st == TN_NULL_ARGUMENT && contains(err, "generate"), "%d %s", st, err);
    tn_string_free(err);

    st = tn_client_new_in_process("{\"model\":\"local\",\"systemPrompt\":\"be brief\"}", generate, NULL,
                                  count_free, &client, &err);
    CHECK(st == TN_OK && client != NULL && err == NULL, "%d %s", st, err);

    struct log metrics = {PTHREAD_MUTEX_INITIALIZER, {0}};
    set_slot(client, "onMetric", log_event, &metrics);

    char *out = NULL;
    char *before = NULL;
    CHECK(tn_client_metrics(client, &before) == TN_OK, "metrics");
    CHECK(!contains(before, "\ntoolnexus_") && contains(before, "# TYPE toolnexus_run_errors_total counter\n"),
          "%s", before);
    tn_string_free(before);

    st = tn_run(client, tk, "{\"prompt\":\"add 2 and 3\"}", NULL, NULL, &out);
    CHECK(st == TN_OK, "run: %s", out);
    CHECK(contains(out, "\"text\":\"sum 5 users=1\""), "%s", out);
    CHECK(contains(out, "\"toolCallCount\":1") && contains(out, "\"turns\":2"), "%s", out);
    CHECK(contains(out, "\"usage\":{\"promptTokens\":6,\"completionTokens\":3,\"totalTokens\":9}"), "%s", out);
    tn_string_free(out);

    CHECK(count_of(metrics.text, "\"event\":\"llm\"") == 2, "%s", metrics.text);
    CHECK(contains(metrics.text, "{\"event\":\"tool\",\"tool\":\"add\",\"source\":\"native\",\"isError\":false"),
          "%s", metrics.text);
    CHECK(contains(metrics.text, "{\"event\":\"run\",\"model\":\"local\",\"turns\":2,\"toolCalls\":1,\"totalTokens\":9"),
          "%s", metrics.text);

    char *text = NULL;
    CHECK(tn_client_metrics(client, &text) == TN_OK, "metrics");
    CHECK(contains(text, "\ntoolnexus_llm_requests_total{model=\"local\",status=\"ok\"} 2\n"), "%s", text);
    CHECK(contains(text, "\ntoolnexus_llm_tokens_total{type=\"completion\"} 3\n"), "%s", text);
    CHECK(contains(text, "\ntoolnexus_tool_calls_total{tool=\"add\",source=\"native\",is_error=\"false\",pending=\"false\"} 1\n"),
          "%s", text);
    CHECK(text[strlen(text) - 1] == '\n', "trailing newline");
    tn_string_free(text);

    /* ask with an id remembers; without, it does not. */
    const char *asks[][2] = {
        {"{\"prompt\":\"hello\",\"id\":\"c1\"}", "plain users=1"},
        {"{\"prompt\":\"again\",\"id\":\"c1\"}", "plain users=2"},
        {"{\"prompt\":\"alone\"}", "plain users=1"},
        {"{\"prompt\":\"third\",\"id\":\"c1\"}", "plain users=3"},
    };
    for (size_t i = 0; i < sizeof asks / sizeof asks[0]; i++) {
        st = tn_ask(client, tk, asks[i][0], false, NULL, NULL, &out);
        CHECK(st == TN_OK && contains(out, asks[i][1]), "ask %zu: %s", i, out);
        tn_string_free(out);
    }

    /* A host store through storeGet/storeSave. */
    struct store s = {"\"h1\"", NULL, 0};
    set_slot(client, "storeGet", store_get, &s);
    set_slot(client, "storeSave", store_save, &s);
    for (int i = 1; i <= 2; i++) {
        st = tn_ask(client, tk, "{\"prompt\":\"hi\",\"id\":\"h1\"}", false, NULL, NULL, &out);
        char want[32];
        snprintf(want, sizeof want, "plain users=%d", i);
        CHECK(st == TN_OK && contains(out, want), "host store ask %d: %s", i, out);
        tn_string_free(out);
    }
    CHECK(s.saves == 2 && count_of(s.messages, "\"role\":\"user\"") == 2, "%d %s", s.saves, s.messages);

    /* No streaming from a generate function; a failing one is an error. */
    st = tn_stream(client, tk, "{\"prompt\":\"q\"}", NULL, NULL, &out);
    CHECK(st == TN_INVALID_ARGUMENT, "%d %s", st, out);
    tn_string_free(out);
    st = tn_run(client, tk, "{\"prompt\":\"fail please\"}", NULL, NULL, &out);
    CHECK(st == TN_CALLBACK_ERROR && contains(out, "not loaded"), "%d %s", st, out);
    tn_string_free(out);
    CHECK(tn_client_metrics(client, &text) == TN_OK, "metrics");
    CHECK(contains(text, "\ntoolnexus_run_errors_total{model=\"local\"} 1\n"), "%s", text);
    tn_string_free(text);

    tn_client_free(client);
    CHECK(atomic_load(&generate_frees) == 2, "generate's user_data freed with the client");
    free(s.messages);
    tn_toolkit_free(tk);
}

/* ---- a streamed run against an SSE server ------------------------------- */

static const char *SSE_TOOL =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"Adding.\"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\","
    "\"function\":{\"name\":\"add\",\"arguments\":\"{\\\"a\\\":\"}}]}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":"
    "\"2,\\\"b\\\":3}\"}}]}}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"completion_tokens\":4,\"total_tokens\":9}}\n\n"
    "data: [DONE]\n\n";

static const char *SSE_TEXT =
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"The sum \"}}]}\n\n"
    "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"is 5.\"},\"finish_reason\":\"stop\"}]}\n\n"
    "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":6,\"completion_tokens\":1,\"total_tokens\":7}}\n\n"
    "data: [DONE]\n\n";

struct sse_server {
    int fd;
    int port;
    pthread_t thread;
};

/* Two connections, one request each: the first answers a tool call, the
 * second the final text, each SSE body written in small pieces and ended by
 * closing the connection. */
static void *sse_serve(void *p) {
    struct sse_server *srv = p;
    for (int n = 0; n < 2; n++) {
        int c = accept(srv->fd, NULL, NULL);
        if (c < 0) return NULL;
        char buf[65536];
        size_t got = 0;
        long want = -1;
        while (got < sizeof buf - 1) {
            ssize_t k = read(c, buf + got, sizeof buf - 1 - got);
            if (k <= 0) break;
            got += (size_t)k;
            buf[got] = 0;
            char *end = strstr(buf, "\r\n\r\n");
            if (end != NULL) {
                char *cl = strstr(buf, "content-length: ");
                long len = cl ? atol(cl + 16) : 0;
                want = (long)(end + 4 - buf) + len;
                if ((long)got >= want) break;
            }
        }
        const char *head = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";
        const char *body = n == 0 ? SSE_TOOL : SSE_TEXT;
        if (write(c, head, strlen(head)) < 0) {
            close(c);
            return NULL;
        }
        for (size_t i = 0, len = strlen(body); i < len; i += 11) {
            size_t piece = len - i < 11 ? len - i : 11;
            if (write(c, body + i, piece) < 0) break;
            usleep(100);
        }
        close(c);
    }
    return NULL;
}

static void test_stream(void) {
    struct sse_server srv;
    srv.fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(srv.fd, (struct sockaddr *)&addr, sizeof addr) == 0, "bind");
    socklen_t alen = sizeof addr;
    CHECK(getsockname(srv.fd, (struct sockaddr *)&addr, &alen) == 0, "getsockname");
    srv.port = ntohs(addr.sin_port);
    CHECK(listen(srv.fd, 4) == 0, "listen");
    pthread_create(&srv.thread, NULL, sse_serve, &srv);

    char *err = NULL;
    tn_toolkit *tk = NULL;
    CHECK(tn_toolkit_build("{\"builtins\":false}", &tk, &err) == TN_OK, "toolkit: %s", err);
    CHECK(tn_toolkit_register(tk, "add", "adds a and b", NULL, add_tool, NULL, NULL, &err) == TN_OK,
          "register: %s", err);
    char json[256];
    snprintf(json, sizeof json,
             "{\"baseUrl\":\"http://127.0.0.1:%d/v1\",\"style\":\"openai\",\"model\":\"m\",\"apiKey\":\"k\"}",
             srv.port);
    tn_client *client = NULL;
    CHECK(tn_client_new(json, &client, &err) == TN_OK, "client: %s", err);
    struct log events = {PTHREAD_MUTEX_INITIALIZER, {0}};
    set_slot(client, "onEvent", log_event, &events);

    char *out = NULL;
    tn_status st = tn_stream(client, tk, "{\"prompt\":\"add 2 and 3\"}", NULL, NULL, &out);
    CHECK(st == TN_OK, "stream: %s", out);
    CHECK(contains(out, "\"text\":\"The sum is 5.\"") && contains(out, "\"totalTokens\":16"), "%s", out);
    tn_string_free(out);
    const char *order[] = {
        "{\"type\":\"text\",\"delta\":\"Adding.\"}\n",
        "{\"type\":\"tool_call\",\"id\":\"c1\",\"name\":\"add\",\"args\":{\"a\":2,\"b\":3}}\n",
        "{\"type\":\"tool_result\",\"id\":\"c1\",\"name\":\"add\",\"output\":\"5\",\"isError\":false}\n",
        "{\"type\":\"text\",\"delta\":\"The sum \"}\n",
        "{\"type\":\"text\",\"delta\":\"is 5.\"}\n",
        "{\"type\":\"usage\",\"usage\":{\"promptTokens\":11,\"completionTokens\":5,\"totalTokens\":16}}\n",
        "{\"type\":\"done\",\"result\":{",
    };
    const char *at = events.text;
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        const char *found = strstr(at, order[i]);
        CHECK(found == at, "event %zu: want %s at\n%s", i, order[i], at);
        at = found + strlen(order[i]);
    }
    pthread_join(srv.thread, NULL);
    close(srv.fd);
    tn_client_free(client);
    tn_toolkit_free(tk);
}

/* ---- a hook that blocks past the run's cancel or deadline (issue 25 M6) -- */

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void add_once(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    tn_reply_set_json(reply, contains(event_json, "\"turn\":0")
                                 ? "{\"toolCalls\":[{\"name\":\"add\",\"arguments\":{\"a\":1,\"b\":1}}]}"
                                 : "{\"content\":\"done\"}");
}

/* 0 while the hook runs; then 1 if it saw tn_reply_cancelled, 2 if not. */
static atomic_int hook_outcome;

/* Blocks up to 5 s, returning early once its answer is no longer awaited. */
static void blocking_hook(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    (void)event_json;
    long until = now_ms() + 5000;
    while (!tn_reply_cancelled(reply) && now_ms() < until) sleep_ms(5);
    bool seen = tn_reply_cancelled(reply);
    tn_reply_set_json(reply, "{\"result\":{\"output\":\"late\",\"isError\":false}}");
    atomic_store(&hook_outcome, seen ? 1 : 2);
}

static void *cancel_later(void *arg) {
    sleep_ms(300);
    tn_cancel_trigger((tn_cancel *)arg);
    return NULL;
}

static void run_blocked(const char *client_json, bool cancel_it, tn_status want, const char *code) {
    tn_client *client = NULL;
    char *err = NULL;
    tn_status st = tn_client_new_in_process(client_json, add_once, NULL, NULL, &client, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    /* L2: out_error is optional here as everywhere a call reports only a status. */
    CHECK(tn_client_set_callback(client, "beforeTool", blocking_hook, NULL, NULL, NULL) == TN_OK,
          "set_callback with a NULL out_error");
    CHECK(tn_client_set_callback(client, "nope", blocking_hook, NULL, NULL, NULL) == TN_INVALID_ARGUMENT,
          "an unknown slot with a NULL out_error is still invalid_argument");
    tn_toolkit *tk = NULL;
    st = tn_toolkit_build("{\"builtins\":false}", &tk, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    st = tn_toolkit_register(tk, "add", "adds", NULL, add_tool, NULL, NULL, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    tn_cancel *cancel = tn_cancel_new();
    pthread_t t;
    if (cancel_it) CHECK(pthread_create(&t, NULL, cancel_later, cancel) == 0, "pthread_create");
    atomic_store(&hook_outcome, 0);
    char *out = NULL;
    long start = now_ms();
    st = tn_run(client, tk, "{\"prompt\":\"go\"}", cancel, NULL, &out);
    long took = now_ms() - start;
    CHECK(st == want && contains(out, code), "%d %s", st, out);
    CHECK(took < 2000, "the run returned %ld ms after it started, the hook still blocking", took);
    tn_string_free(out);
    if (cancel_it) pthread_join(t, NULL);
    long until = now_ms() + 6000;
    while (atomic_load(&hook_outcome) == 0 && now_ms() < until) sleep_ms(5);
    CHECK(atomic_load(&hook_outcome) == 1, "the hook saw tn_reply_cancelled (%d)", atomic_load(&hook_outcome));
    tn_cancel_free(cancel);
    tn_client_free(client);
    tn_toolkit_free(tk);
}

static void test_blocking_hook(void) {
    run_blocked("{\"model\":\"local\"}", true, TN_CANCELLED, "\"cancelled\"");
    run_blocked("{\"model\":\"local\",\"timeoutMs\":300}", false, TN_TIMEOUT, "\"timeout\"");
}


/* ---- a host store (tn_store_register): records in a small C table -------- */

#define TABLE_ROWS 16

struct table {
    pthread_mutex_t lock;
    int mode; /* 0 works, 1 get answers garbage, 2 save fails */
    int rows;
    char key[TABLE_ROWS][96]; /* "kind/id" */
    char *record[TABLE_ROWS]; /* malloc'd JSON */
    int ops;
};

static atomic_int table_frees;

static void table_free(void *user_data) {
    struct table *t = user_data;
    for (int i = 0; i < t->rows; i++) free(t->record[i]);
    t->rows = 0;
    atomic_fetch_add(&table_frees, 1);
}

/* Copies the string value of "key":"..." into out (empty when absent). */
static void string_of(const char *json, const char *key, char *out, size_t cap) {
    out[0] = 0;
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *p = strstr(json, pat);
    if (p == NULL) return;
    p += strlen(pat);
    const char *end = strchr(p, '"');
    if (end == NULL || (size_t)(end - p) >= cap) return;
    memcpy(out, p, (size_t)(end - p));
    out[end - p] = 0;
}

static int row_of(struct table *t, const char *key) {
    for (int i = 0; i < t->rows; i++)
        if (strcmp(t->key[i], key) == 0) return i;
    return -1;
}

static void table_store(void *user_data, const char *event_json, tn_reply *reply) {
    struct table *t = user_data;
    char op[16], kind[32], id[64], key[96];
    string_of(event_json, "op", op, sizeof op);
    string_of(event_json, "kind", kind, sizeof kind);
    string_of(event_json, "id", id, sizeof id);
    snprintf(key, sizeof key, "%s/%s", kind, id);
    pthread_mutex_lock(&t->lock);
    t->ops++;
    int row = row_of(t, key);
    if (strcmp(op, "get") == 0) {
        if (t->mode == 1) {
            /* Not JSON: refused by tn_reply_set_json, so nothing is set. */
            CHECK(tn_reply_set_json(reply, "{not json") == TN_INVALID_JSON, "garbage refused");
        } else {
            tn_reply_set_json(reply, row < 0 ? "null" : t->record[row]);
        }
    } else if (strcmp(op, "save") == 0) {
        if (t->mode == 2) {
            tn_reply_set_error(reply, "disk full");
        } else {
            /* The record is the event's last key: it runs to the last '}'. */
            const char *start = strstr(event_json, "\"record\":");
            const char *end = strrchr(event_json, '}');
            if (start != NULL && end != NULL && (row >= 0 || t->rows < TABLE_ROWS)) {
                start += strlen("\"record\":");
                if (row < 0) {
                    row = t->rows++;
                    snprintf(t->key[row], sizeof t->key[row], "%s", key);
                } else {
                    free(t->record[row]);
                }
                t->record[row] = strndup(start, (size_t)(end - start));
            } else {
                tn_reply_set_error(reply, "the table is full");
            }
        }
    } else if (strcmp(op, "delete") == 0) {
        tn_reply_set_json(reply, row < 0 ? "false" : "true");
    }
    pthread_mutex_unlock(&t->lock);
}

static void test_host_store(void) {
    char *err = NULL;
    tn_toolkit *tk = NULL;
    CHECK(tn_toolkit_build("{\"builtins\":false}", &tk, &err) == TN_OK, "toolkit: %s", err);
    static struct table table = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {{0}}, {0}, 0};
    static struct table spare = {PTHREAD_MUTEX_INITIALIZER, 0, 0, {{0}}, {0}, 0};

    /* The refusals: each releases the user_data it was handed. */
    tn_status st = tn_store_register("c-table", NULL, &spare, table_free, &err);
    CHECK(st == TN_NULL_ARGUMENT && contains(err, "callback"), "%d %s", st, err);
    tn_string_free(err);
    CHECK(atomic_load(&table_frees) == 1, "user_data freed on a NULL callback");
    st = tn_store_register("", table_store, &spare, table_free, &err);
    CHECK(st == TN_INVALID_ARGUMENT, "%d %s", st, err);
    tn_string_free(err);
    st = tn_store_register("bad\xff", table_store, &spare, table_free, &err);
    CHECK(st == TN_INVALID_UTF8, "%d %s", st, err);
    tn_string_free(err);
    CHECK(atomic_load(&table_frees) == 3, "user_data freed on each refusal");

    st = tn_store_register("c-table", table_store, &table, table_free, &err);
    CHECK(st == TN_OK && err == NULL, "%d %s", st, err);
    st = tn_store_register("c-table", table_store, &spare, table_free, NULL);
    CHECK(st == TN_INVALID_ARGUMENT, "a name registered twice: %d", st);
    CHECK(atomic_load(&table_frees) == 4, "the refused duplicate's user_data freed at once");

    /* A selector naming no store is refused where it is used. */
    tn_client *client = NULL;
    st = tn_client_new_in_process("{\"model\":\"local\",\"store\":\"host:nope\"}", generate, NULL, NULL, &client,
                                  &err);
    CHECK(st == TN_INVALID_CONFIG && client == NULL && contains(err, "host:nope"), "%d %s", st, err);
    tn_string_free(err);

    /* ask with an id keeps its conversation in the C table. */
    st = tn_client_new_in_process("{\"model\":\"local\",\"store\":\"host:c-table\"}", generate, NULL, NULL,
                                  &client, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    /* Unregistered while the client holds it: the client keeps it. */
    CHECK(tn_store_unregister("c-table", &err) == TN_OK, "unregister: %s", err);
    st = tn_store_unregister("c-table", &err);
    CHECK(st == TN_INVALID_ARGUMENT && contains(err, "c-table"), "%d %s", st, err);
    tn_string_free(err);
    char *out = NULL;
    st = tn_ask(client, tk, "{\"prompt\":\"first\",\"id\":\"conv-1\"}", false, NULL, NULL, &out);
    CHECK(st == TN_OK && contains(out, "plain users=1"), "%d %s", st, out);
    tn_string_free(out);
    st = tn_ask(client, tk, "{\"prompt\":\"second\",\"id\":\"conv-1\"}", false, NULL, NULL, &out);
    CHECK(st == TN_OK && contains(out, "plain users=2"), "%d %s", st, out);
    tn_string_free(out);
    pthread_mutex_lock(&table.lock);
    int row = row_of(&table, "conversation/conv-1");
    CHECK(row >= 0 && contains(table.record[row], "\"second\"") && table.ops == 4, "row %d, %d ops", row,
          table.ops);
    pthread_mutex_unlock(&table.lock);

    /* A store that answers garbage or fails is an error naming it. */
    table.mode = 1;
    st = tn_ask(client, tk, "{\"prompt\":\"third\",\"id\":\"conv-1\"}", false, NULL, NULL, &out);
    CHECK(st == TN_CALLBACK_ERROR && contains(out, "store \\\"host:c-table\\\": get set no valid answer"), "%d %s",
          st, out);
    tn_string_free(out);
    table.mode = 2;
    st = tn_ask(client, tk, "{\"prompt\":\"third\",\"id\":\"conv-1\"}", false, NULL, NULL, &out);
    CHECK(st == TN_CALLBACK_ERROR && contains(out, "store \\\"host:c-table\\\": save failed: disk full"), "%d %s",
          st, out);
    tn_string_free(out);
    CHECK(atomic_load(&table_frees) == 4, "not released while the client holds it");
    tn_client_free(client);
    CHECK(atomic_load(&table_frees) == 5, "released with the client, its last user");
    tn_toolkit_free(tk);
}

/* ---- a host store that hangs, behind a served A2A agent ------------------- */

static atomic_int slow_frees;
static atomic_int slow_saw_cancel;

static void slow_free(void *user_data) {
    (void)user_data;
    atomic_fetch_add(&slow_frees, 1);
}

/* Hangs on the id "hang" until the library stops waiting (at most 30 s),
 * then answers anyway (dropped); knows no other task. */
static void slow_store(void *user_data, const char *event_json, tn_reply *reply) {
    (void)user_data;
    if (contains(event_json, "\"id\":\"hang\"")) {
        for (int i = 0; i < 15000 && !tn_reply_cancelled(reply); i++) sleep_ms(2);
        if (tn_reply_cancelled(reply)) atomic_fetch_add(&slow_saw_cancel, 1);
        tn_reply_set_json(reply, "{\"id\":\"hang\",\"status\":{\"state\":\"completed\"}}");
        return;
    }
    tn_reply_set_json(reply, "null");
}

/* POSTs body to http://127.0.0.1:port/ and returns the whole response
 * (malloc'd), or NULL. */
static char *http_post(int port, const char *body) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) return NULL;
    struct timeval tv = {30, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_port = htons((uint16_t)port);
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        return NULL;
    }
    char head[256];
    int n = snprintf(head, sizeof head,
                     "POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                     port, strlen(body));
    if (send(fd, head, (size_t)n, MSG_NOSIGNAL) != n ||
        send(fd, body, strlen(body), MSG_NOSIGNAL) != (ssize_t)strlen(body)) {
        close(fd);
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *out = malloc(cap);
    for (;;) {
        if (len + 1 == cap) out = realloc(out, cap *= 2);
        ssize_t r = recv(fd, out + len, cap - len - 1, 0);
        if (r <= 0) break;
        len += (size_t)r;
    }
    out[len] = 0;
    close(fd);
    return out;
}

static void test_hanging_store(void) {
    char *err = NULL;
    tn_status st = tn_store_register_with("c-slow", "{\"timeoutMs\":0}", slow_store, NULL, slow_free, &err);
    CHECK(st == TN_INVALID_ARGUMENT && contains(err, "timeoutMs"), "%d %s", st, err);
    tn_string_free(err);
    CHECK(atomic_load(&slow_frees) == 1, "a refused registration frees its user_data");
    st = tn_store_register_with("c-slow", "{\"timeoutMs\":200}", slow_store, NULL, slow_free, &err);
    CHECK(st == TN_OK && err == NULL, "%d %s", st, err);

    tn_toolkit *tk = NULL;
    CHECK(tn_toolkit_build("{\"builtins\":false}", &tk, &err) == TN_OK, "toolkit: %s", err);
    tn_client *client = NULL;
    st = tn_client_new_in_process("{\"model\":\"local\"}", generate, NULL, NULL, &client, &err);
    CHECK(st == TN_OK, "%d %s", st, err);
    tn_server *server = NULL;
    char *out = NULL;
    st = tn_serve_with_client(tk, client, "{\"addr\":\"127.0.0.1:0\",\"a2a\":{\"store\":\"host:c-slow\"}}", NULL,
                              NULL, NULL, NULL, &server, &out);
    CHECK(st == TN_OK && server != NULL, "serve: %d %s", st, out);
    const char *colon = strstr(out, "127.0.0.1:");
    int port = colon ? atoi(colon + strlen("127.0.0.1:")) : 0;
    CHECK(port > 0, "the server's url: %s", out);
    tn_string_free(out);

    char *answer = http_post(port, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"GetTask\",\"params\":{\"id\":\"hang\"}}");
    CHECK(contains(answer, "\"code\":-32603") &&
              contains(answer, "store \\\"host:c-slow\\\": get did not answer within 200 ms"),
          "a hanging store's GetTask: %s", answer);
    free(answer);
    /* The next request is answered (the store answers it in time). */
    answer = http_post(port, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"GetTask\",\"params\":{\"id\":\"nope\"}}");
    CHECK(contains(answer, "{\"code\":-32001,\"message\":\"Task not found: nope\"}"), "the next GetTask: %s",
          answer);
    free(answer);

    tn_serve_stop(server);
    tn_client_free(client);
    tn_toolkit_free(tk);
    CHECK(tn_store_unregister("c-slow", &err) == TN_OK, "unregister: %s", err);
    /* Released once the abandoned callback returned, having seen
     * tn_reply_cancelled. */
    for (int i = 0; i < 15000 && atomic_load(&slow_frees) < 2; i++) sleep_ms(2);
    CHECK(atomic_load(&slow_frees) == 2 && atomic_load(&slow_saw_cancel) == 1, "frees %d, saw cancel %d",
          atomic_load(&slow_frees), atomic_load(&slow_saw_cancel));
}

int main(void) {
    test_in_process();
    test_host_store();
    test_hanging_store();
    test_stream();
    test_blocking_hook();
    printf("%d passed, 0 failed\n", passed);
    return 0;
}
