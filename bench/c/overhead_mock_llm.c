/* A scripted OpenAI-style chat completions endpoint for the client-loop
 * overhead benchmark (issue 11). It does the least a provider can do, so that
 * what a runner's per-run time adds up to is the runner's own work:
 *
 *   - a request whose messages hold no tool result yet gets one assistant
 *     turn with two tool calls: get_weather {"city":"Paris"} and add {"a":2,"b":2};
 *   - a request that holds a tool result (an OpenAI `"role": "tool"` message or
 *     an Anthropic `tool_result` block) gets the final answer, which says the
 *     weather only if the MCP server's answer ("Paris: sunny, 22C") is in it
 *     (so a runner whose tool calls failed cannot pass for a fast one).
 *
 * The tool names are the declared ones ending in get_weather and add.
 *
 * HTTP/1.1 with keep-alive (and `Connection: close` honoured), one thread per
 * connection, Nagle off, bodies by Content-Length. GET anything answers
 * {"ok":true}. Prints the port it listens on, then serves until killed.
 *
 *   overhead_mock_llm [PORT]      (0 or nothing: any free port on 127.0.0.1) */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

/* The tool turn, with the two tool names as the request declared them (a
 * runner may prefix an MCP server's tools, e.g. "bench_add"). */
static const char TOOL_TURN_FMT[] =
    "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"mock-model\","
    "\"choices\":[{\"index\":0,\"finish_reason\":\"tool_calls\",\"message\":{\"role\":\"assistant\",\"content\":null,"
    "\"tool_calls\":["
    "{\"id\":\"call_w\",\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}},"
    "{\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"%s\",\"arguments\":\"{\\\"a\\\":2,\\\"b\\\":2}\"}}]}}],"
    "\"usage\":{\"prompt_tokens\":24,\"completion_tokens\":10,\"total_tokens\":34}}";

static const char FINAL_TURN[] =
    "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"mock-model\","
    "\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\","
    "\"content\":\"The weather in Paris is sunny, 22C, and 2 + 2 = 4.\"}}],"
    "\"usage\":{\"prompt_tokens\":60,\"completion_tokens\":16,\"total_tokens\":76}}";

/* The final turn when the tool results did not hold what the server says. */
static const char LOST_TURN[] =
    "{\"id\":\"chatcmpl-bench\",\"object\":\"chat.completion\",\"created\":0,\"model\":\"mock-model\","
    "\"choices\":[{\"index\":0,\"finish_reason\":\"stop\",\"message\":{\"role\":\"assistant\","
    "\"content\":\"The tool results did not arrive.\"}}],"
    "\"usage\":{\"prompt_tokens\":60,\"completion_tokens\":6,\"total_tokens\":66}}";

static const char OK_BODY[] = "{\"ok\":true}";

/* Whether the body holds `"role"<ws>:<ws>"tool"` or `"tool_result"`. */
static int has_tool_result(const char *body, size_t len) {
    const char *end = body + len;
    for (const char *p = body; p + 6 <= end; p++) {
        if (*p != '"') continue;
        if (p + 13 <= end && memcmp(p, "\"tool_result\"", 13) == 0) return 1;
        if (memcmp(p, "\"role\"", 6) != 0) continue;
        const char *q = p + 6;
        while (q < end && isspace((unsigned char)*q)) q++;
        if (q >= end || *q != ':') continue;
        q++;
        while (q < end && isspace((unsigned char)*q)) q++;
        if (q + 6 <= end && memcmp(q, "\"tool\"", 6) == 0) return 1;
    }
    return 0;
}

/* The first `"name": "..."` value in the body that ends with `suffix`
 * (after nothing or an underscore) into out; else `suffix` itself. */
static void pick_name(const char *body, size_t len, const char *suffix, char *out, size_t cap) {
    const char *end = body + len;
    size_t sl = strlen(suffix);
    for (const char *p = body; p + 6 <= end; p++) {
        if (memcmp(p, "\"name\"", 6) != 0) continue;
        const char *q = p + 6;
        while (q < end && isspace((unsigned char)*q)) q++;
        if (q >= end || *q != ':') continue;
        q++;
        while (q < end && isspace((unsigned char)*q)) q++;
        if (q >= end || *q != '"') continue;
        const char *v = ++q;
        while (q < end && *q != '"' && *q != '\\') q++;
        size_t n = (size_t)(q - v);
        if (q < end && *q == '"' && n >= sl && n < cap && memcmp(v + n - sl, suffix, sl) == 0 &&
            (n == sl || v[n - sl - 1] == '_')) {
            memcpy(out, v, n);
            out[n] = 0;
            return;
        }
    }
    snprintf(out, cap, "%s", suffix);
}

static int send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

struct conn {
    int fd;
    char *buf;
    size_t cap, len;
};

/* Reads more bytes into the connection's buffer; -1 on EOF or error. */
static int fill(struct conn *c) {
    if (c->len + 4096 > c->cap) {
        size_t cap = c->cap * 2;
        char *b = realloc(c->buf, cap);
        if (!b) return -1;
        c->buf = b;
        c->cap = cap;
    }
    ssize_t n = recv(c->fd, c->buf + c->len, c->cap - c->len - 1, 0);
    if (n <= 0) return -1;
    c->len += (size_t)n;
    c->buf[c->len] = 0;
    return 0;
}

/* A header's value in the head [buf, end), or NULL. */
static const char *header(const char *buf, const char *end, const char *name) {
    size_t n = strlen(name);
    for (const char *p = buf; p + n + 2 < end; p++) {
        if (p[0] == '\n' && strncasecmp(p + 1, name, n) == 0 && p[1 + n] == ':') {
            const char *v = p + 2 + n;
            while (*v == ' ' || *v == '\t') v++;
            return v;
        }
    }
    return NULL;
}

static void *serve(void *arg) {
    struct conn c = {.fd = (int)(intptr_t)arg, .cap = 65536};
    c.buf = malloc(c.cap);
    if (c.buf) c.buf[0] = 0;
    int one = 1;
    setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    while (c.buf) {
        char *head_end;
        while (!(head_end = strstr(c.buf, "\r\n\r\n"))) {
            if (fill(&c) != 0) goto out;
        }
        size_t head_len = (size_t)(head_end + 4 - c.buf);
        const char *cl = header(c.buf, head_end, "content-length");
        size_t body_len = cl ? strtoul(cl, NULL, 10) : 0;
        const char *conn_h = header(c.buf, head_end, "connection");
        int close_after = conn_h && strncasecmp(conn_h, "close", 5) == 0;
        if (strncmp(c.buf, "HTTP/1.0", 8) == 0 || strstr(c.buf, " HTTP/1.0\r\n")) close_after = 1;
        int is_post = strncmp(c.buf, "POST ", 5) == 0;
        while (c.len < head_len + body_len) {
            if (fill(&c) != 0) goto out;
        }
        char tool_turn[2048];
        const char *body = OK_BODY;
        size_t n = sizeof OK_BODY - 1;
        if (is_post) {
            if (has_tool_result(c.buf + head_len, body_len)) {
                if (memmem(c.buf + head_len, body_len, "Paris: sunny, 22C", 17)) {
                    body = FINAL_TURN;
                    n = sizeof FINAL_TURN - 1;
                } else {
                    body = LOST_TURN;
                    n = sizeof LOST_TURN - 1;
                }
            } else {
                char weather[128], add[128];
                pick_name(c.buf + head_len, body_len, "get_weather", weather, sizeof weather);
                pick_name(c.buf + head_len, body_len, "add", add, sizeof add);
                n = (size_t)snprintf(tool_turn, sizeof tool_turn, TOOL_TURN_FMT, weather, add);
                body = tool_turn;
            }
        }
        char out[8192];
        int h = snprintf(out, sizeof out,
                         "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s\r\n", n,
                         close_after ? "Connection: close\r\n" : "");
        memcpy(out + h, body, n);
        if (send_all(c.fd, out, (size_t)h + n) != 0 || close_after) break;
        size_t used = head_len + body_len;
        memmove(c.buf, c.buf + used, c.len - used);
        c.len -= used;
        c.buf[c.len] = 0;
    }
out:
    free(c.buf);
    close(c.fd);
    return NULL;
}

int main(int argc, char **argv) {
    struct sockaddr_in a = {0};
    socklen_t al = sizeof a;
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)(argc > 1 ? atoi(argv[1]) : 0));
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&a, &al) != 0) {
        perror("overhead_mock_llm: listen");
        return 1;
    }
    printf("%d\n", ntohs(a.sin_port));
    fflush(stdout);
    for (;;) {
        int c = accept(fd, NULL, NULL);
        if (c < 0) continue;
        pthread_t t;
        if (pthread_create(&t, NULL, serve, (void *)(intptr_t)c) != 0) {
            close(c);
            continue;
        }
        pthread_detach(t);
    }
}
