/* The client loop from C: a client, a toolkit with a C function as a tool and
 * the built-in question tool, hooks, and a waitFor that answers the question.
 * The "model" is a mock OpenAI-style provider this program starts on
 * 127.0.0.1, which answers two scripted turns:
 *
 *   1. call add {"a":2,"b":3} and question {"questions":[...]}
 *   2. (sees both results) say the final answer
 *
 * Build: make -C bindings/c (build/loop). No network, no API key. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "toolnexus.h"

/* ---- a mock provider: one scripted answer per request ---- */

static const char *SCRIPT[] = {
    "{\"choices\":[{\"index\":0,\"finish_reason\":\"tool_calls\",\"message\":{\"role\":\"assistant\","
    "\"content\":null,\"tool_calls\":["
    "{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"add\",\"arguments\":\"{\\\"a\\\":2,\\\"b\\\":3}\"}},"
    "{\"id\":\"call_2\",\"type\":\"function\",\"function\":{\"name\":\"question\",\"arguments\":"
    "\"{\\\"questions\\\":[{\\\"question\\\":\\\"Who is asking?\\\"}]}\"}}]}}],"
    "\"usage\":{\"prompt_tokens\":20,\"completion_tokens\":9,\"total_tokens\":29}}",
    "{\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\","
    "\"content\":\"2 + 3 = 5, Ada.\"}}],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":6,\"total_tokens\":46}}",
};
#define TURNS (sizeof SCRIPT / sizeof *SCRIPT)

struct mock {
    int fd;
    pthread_t thread;
};

/* Reads one request (head, then Content-Length bytes of body); 0 on success. */
static int read_request(int fd) {
    char buf[65536];
    size_t len = 0;
    char *end = NULL;
    while (!end) {
        ssize_t n = recv(fd, buf + len, sizeof buf - 1 - len, 0);
        if (n <= 0) return -1;
        len += (size_t)n;
        buf[len] = 0;
        end = strstr(buf, "\r\n\r\n");
        if (!end && len >= sizeof buf - 1) return -1;
    }
    size_t body = 0;
    for (char *p = buf; p < end; p++) {
        if (strncasecmp(p, "\ncontent-length:", 16) == 0) body = (size_t)strtoul(p + 16, NULL, 10);
    }
    size_t have = len - (size_t)(end + 4 - buf);
    while (have < body) {
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) return -1;
        have += (size_t)n;
    }
    return 0;
}

static void *serve(void *arg) {
    struct mock *m = arg;
    for (size_t turn = 0; turn < TURNS; turn++) {
        int c = accept(m->fd, NULL, NULL);
        if (c < 0) return NULL;
        if (read_request(c) == 0) {
            char head[256];
            int n = snprintf(head, sizeof head,
                             "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %zu\r\n"
                             "connection: close\r\n\r\n",
                             strlen(SCRIPT[turn]));
            if (send(c, head, (size_t)n, 0) < 0 || send(c, SCRIPT[turn], strlen(SCRIPT[turn]), 0) < 0)
                perror("mock: send");
        }
        close(c);
    }
    return NULL;
}

static int mock_start(struct mock *m, int *port) {
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    m->fd = socket(AF_INET, SOCK_STREAM, 0);
    if (m->fd < 0 || bind(m->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(m->fd, 8) != 0 ||
        getsockname(m->fd, (struct sockaddr *)&a, &al) != 0)
        return -1;
    *port = ntohs(a.sin_port);
    return pthread_create(&m->thread, NULL, serve, m);
}

/* ---- the host's side ---- */

/* A C function as a tool: adds a and b (a real host would parse the JSON). */
static void add_tool(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    tn_call_set_output(call, strstr(args_json, "\"a\":2") ? "5" : "cannot add that", 0);
}

/* beforeTool: observes every call (it may also deny it, or rewrite its args);
 * user_data counts them. Tool calls of one turn run concurrently. */
static void before_tool(void *user_data, const char *event_json, tn_reply *reply) {
    (void)reply; /* no reply: the call runs as the model asked */
    atomic_fetch_add((atomic_int *)user_data, 1);
    printf("beforeTool %s\n", event_json);
}

/* waitFor: the question tool suspended; answer it (no id: the Request's). */
static void wait_for(void *user_data, const char *request_json, tn_reply *reply) {
    (void)user_data;
    printf("waitFor %s\n", request_json);
    tn_reply_set_json(reply, "{\"ok\":true,\"data\":{\"answers\":[[\"Ada\"]]}}");
}

static void free_counter(void *user_data) { free(user_data); }

int main(void) {
    struct mock mock;
    int port = 0;
    if (mock_start(&mock, &port) != 0) {
        perror("mock provider");
        return 1;
    }
    char client_json[256];
    snprintf(client_json, sizeof client_json,
             "{\"baseUrl\":\"http://127.0.0.1:%d\",\"style\":\"openai\",\"model\":\"mock\",\"apiKey\":\"none\","
             "\"systemPrompt\":\"You are terse.\",\"maxTurns\":4,\"retries\":0}",
             port);

    int status = 1;
    char *err = NULL, *out = NULL;
    tn_toolkit *tk = NULL;
    tn_client *client = NULL;
    if (tn_toolkit_build("{\"builtins\":{\"tools\":{\"bash\":false,\"read\":false,\"write\":false,\"edit\":false,"
                         "\"grep\":false,\"glob\":false,\"webfetch\":false,\"apply_patch\":false,\"todowrite\":false}}}",
                         &tk, &err) != TN_OK ||
        tn_toolkit_register(tk, "add", "Adds a and b.",
                            "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"b\":{\"type\":\"number\"}}}",
                            add_tool, NULL, NULL, &err) != TN_OK ||
        tn_client_new(client_json, &client, &err) != TN_OK) {
        fprintf(stderr, "setup: %s\n", err);
        goto done;
    }
    atomic_int *calls = calloc(1, sizeof *calls);
    if (tn_client_set_callback(client, "beforeTool", before_tool, calls, free_counter, &err) != TN_OK ||
        tn_client_set_callback(client, "waitFor", wait_for, NULL, NULL, &err) != TN_OK) {
        fprintf(stderr, "callbacks: %s\n", err);
        goto done;
    }
    tn_cancel *cancel = tn_cancel_new(); /* tn_cancel_trigger from any thread stops the run */
    tn_status st = tn_run(client, tk, "{\"prompt\":\"Add 2 and 3, and greet whoever asks.\"}", cancel, NULL, &out);
    tn_cancel_free(cancel);
    if (st != TN_OK) {
        fprintf(stderr, "tn_run: status %d: %s\n", (int)st, out);
        goto done;
    }
    /* {"text":"2 + 3 = 5, Ada.","messages":[...],"toolCalls":[...],...,"status":"done"} */
    printf("%s\n", out);
    status = strstr(out, "\"text\":\"2 + 3 = 5, Ada.\"") && strstr(out, "\"status\":\"done\"") &&
                     atomic_load(calls) == 2
                 ? 0
                 : 1;
    if (status) fprintf(stderr, "unexpected RunResult\n");

done:
    tn_string_free(out);
    tn_string_free(err);
    tn_client_free(client); /* runs free_counter */
    tn_toolkit_free(tk);
    shutdown(mock.fd, SHUT_RDWR);
    close(mock.fd);
    pthread_join(mock.thread, NULL);
    return status;
}
