/* The floor of the client-loop overhead benchmark (issue 11): the wire work
 * of one run with no client library at all, so that a runner's figure can be
 * read as "floor + what the runner adds". One thread, no JSON handling:
 *
 *   init    = start the MCP server (fork + exec, pipes), initialize,
 *             notifications/initialized, tools/list, and open the provider
 *             connection (keep-alive)
 *   per run = POST the first turn (the question and three tool declarations),
 *             read the answer; write both tools/call lines, read both
 *             answers; POST the second turn (with the two tool results), read
 *             the answer.
 *
 * Options as bench_overhead: --url http://127.0.0.1:PORT --mcp PATH --runs N
 * --warmup N. Prints {"framework","init_ms","latencies_ms":[...],"final_ok"}. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench_util.h"

static const char TURN1[] =
    "{\"model\":\"mock-model\",\"messages\":[{\"role\":\"user\",\"content\":\"What's the weather in Paris and "
    "what is 2+2?\"}],\"tools\":["
    "{\"type\":\"function\",\"function\":{\"name\":\"bench_add\",\"description\":\"Adds two integers.\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"integer\"}},"
    "\"required\":[\"a\",\"b\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"bench_echo\",\"description\":\"Returns its text.\","
    "\"parameters\":{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}},\"required\":[\"text\"]}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"bench_get_weather\",\"description\":\"The current weather in a "
    "city.\",\"parameters\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"]}}}]"
    "}";

static const char TURN2_HEAD[] =
    "{\"model\":\"mock-model\",\"messages\":[{\"role\":\"user\",\"content\":\"What's the weather in Paris and "
    "what is 2+2?\"},{\"role\":\"assistant\",\"content\":null,\"tool_calls\":["
    "{\"id\":\"call_w\",\"type\":\"function\",\"function\":{\"name\":\"bench_get_weather\",\"arguments\":"
    "\"{\\\"city\\\":\\\"Paris\\\"}\"}},"
    "{\"id\":\"call_a\",\"type\":\"function\",\"function\":{\"name\":\"bench_add\",\"arguments\":"
    "\"{\\\"a\\\":2,\\\"b\\\":2}\"}}]},"
    "{\"role\":\"tool\",\"tool_call_id\":\"call_w\",\"content\":\"Paris: sunny, 22C\"},"
    "{\"role\":\"tool\",\"tool_call_id\":\"call_a\",\"content\":\"4\"}],\"tools\":[]}";

static const char CALLS[] =
    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"get_weather\","
    "\"arguments\":{\"city\":\"Paris\"}}}\n"
    "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"add\","
    "\"arguments\":{\"a\":2,\"b\":2}}}\n";

static int to_server, from_server, http_fd;
static char rbuf[1 << 16];
static size_t rlen;

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Reads from the server until `lines` newline-terminated lines have come. */
static int read_lines(int lines, char *last, size_t cap) {
    char buf[8192];
    size_t len = 0;
    for (;;) {
        int seen = 0;
        for (size_t i = 0; i < len; i++) seen += buf[i] == '\n';
        if (seen >= lines) break;
        ssize_t n = read(from_server, buf + len, sizeof buf - 1 - len);
        if (n <= 0) return -1;
        len += (size_t)n;
    }
    buf[len] = 0;
    snprintf(last, cap, "%s", buf);
    return 0;
}

/* One POST over the keep-alive connection; the body of the answer into out. */
static int post(const char *body, char *out, size_t cap) {
    char head[256];
    size_t n = strlen(body);
    int h = snprintf(head, sizeof head,
                     "POST /chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     n);
    char msg[8192];
    memcpy(msg, head, (size_t)h);
    memcpy(msg + h, body, n);
    if (send(http_fd, msg, (size_t)h + n, MSG_NOSIGNAL) < 0) return -1;
    rlen = 0;
    for (;;) {
        rbuf[rlen] = 0;
        char *end = strstr(rbuf, "\r\n\r\n");
        if (end) {
            char *cl = strcasestr(rbuf, "\ncontent-length:");
            size_t body_len = cl ? strtoul(cl + 16, NULL, 10) : 0;
            size_t have = rlen - (size_t)(end + 4 - rbuf);
            if (have >= body_len) {
                snprintf(out, cap, "%.*s", (int)body_len, end + 4);
                return 0;
            }
        }
        ssize_t r = recv(http_fd, rbuf + rlen, sizeof rbuf - 1 - rlen, 0);
        if (r <= 0) return -1;
        rlen += (size_t)r;
    }
}

static int start(const char *url, const char *mcp) {
    int in[2], out[2];
    if (pipe(in) != 0 || pipe(out) != 0) return -1;
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[1]);
        close(out[0]);
        execl(mcp, mcp, (char *)NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    to_server = in[1];
    from_server = out[0];
    char line[8192];
    const char *hello =
        "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"2025-06-18\","
        "\"capabilities\":{},\"clientInfo\":{\"name\":\"floor\",\"version\":\"1\"}}}\n";
    const char *list = "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
                       "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/list\"}\n";
    if (write_all(to_server, hello, strlen(hello)) || read_lines(1, line, sizeof line) ||
        write_all(to_server, list, strlen(list)) || read_lines(1, line, sizeof line) || !strstr(line, "get_weather"))
        return -1;

    int port = 0;
    if (sscanf(url, "http://127.0.0.1:%d", &port) != 1) return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((unsigned short)port);
    http_fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(http_fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return connect(http_fd, (struct sockaddr *)&a, sizeof a);
}

static int one_run(int id, int *ok) {
    char answer[8192], calls[1024];
    if (post(TURN1, answer, sizeof answer) != 0) return -1;
    *ok = strstr(answer, "bench_get_weather") != NULL;
    int n = snprintf(calls, sizeof calls, CALLS, id, id + 1);
    if (write_all(to_server, calls, (size_t)n) != 0 || read_lines(2, answer, sizeof answer) != 0) return -1;
    *ok &= strstr(answer, "Paris: sunny, 22C") != NULL;
    if (post(TURN2_HEAD, answer, sizeof answer) != 0) return -1;
    *ok &= strstr(answer, "The weather in Paris is sunny, 22C, and 2 + 2 = 4.") != NULL;
    return 0;
}

int main(int argc, char **argv) {
    const char *url = "http://127.0.0.1:8900", *mcp = NULL;
    int runs = 200, warmup = 20;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--url")) url = argv[i + 1];
        else if (!strcmp(argv[i], "--mcp")) mcp = argv[i + 1];
        else if (!strcmp(argv[i], "--runs")) runs = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup")) warmup = atoi(argv[i + 1]);
    }
    if (!mcp || runs < 1) {
        fprintf(stderr, "usage: overhead_floor --mcp SERVER [--url URL] [--runs N] [--warmup N]\n");
        return 2;
    }
    double t0 = now();
    if (start(url, mcp) != 0) {
        perror("overhead_floor: start");
        return 1;
    }
    double init_ms = (now() - t0) * 1e3;
    int ok = 1, all_ok = 1, id = 2;
    for (int i = 0; i < warmup; i++, id += 2) {
        if (one_run(id, &ok) != 0) return 1;
        all_ok &= ok;
    }
    double *lat = malloc(sizeof *lat * (size_t)runs);
    for (int i = 0; i < runs; i++, id += 2) {
        double s = now();
        if (one_run(id, &ok) != 0) return 1;
        lat[i] = (now() - s) * 1e3;
        all_ok &= ok;
    }
    printf("{\"framework\":\"floor\",\"language\":\"c\",\"init_ms\":%.3f,\"latencies_ms\":[", init_ms);
    for (int i = 0; i < runs; i++) printf("%s%.4f", i ? "," : "", lat[i]);
    printf("],\"final_ok\":%s}\n", all_ok ? "true" : "false");
    close(to_server);
    close(http_fd);
    wait(NULL);
    free(lat);
    return all_ok ? 0 : 1;
}
