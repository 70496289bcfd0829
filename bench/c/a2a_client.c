/* The A2A client of bench/run_a2a.sh: the same JSON-RPC bytes (upstream's
 * "toolnexus" profile: SendMessage / GetTask, no A2A-Version header) to any
 * agent, over HTTP/1.1 keep-alive where the server keeps the connection (a
 * server that answers HTTP/1.0 or `Connection: close` gets a new connection
 * for the next request, as any client would). Nagle off.
 *
 *   a2a_client BASE rt RUNS WARMUP
 *       RUNS round trips: SendMessage, then GetTask at once and again until
 *       the task is neither submitted nor working; each checked to be
 *       `completed` with the answer "Hello.". Prints one JSON line:
 *       {"latencies_ms":[...],"send_ms":[...],"polls":[...],"ok":true|false}
 *       (send_ms: the SendMessage exchange alone)
 *
 *   a2a_client BASE get TASKS CALLS CONNS
 *       TASKS tasks sent and run to completion first, then CALLS GetTask
 *       calls for them (round robin) on CONNS connections at once (one
 *       thread each). Prints {"p50_us","p90_us","p99_us","calls_per_s","ok"}.
 *
 *   a2a_client BASE floor CALLS CONNS
 *       The same GetTask bytes to any keep-alive HTTP server (the floor row:
 *       bench/c/overhead_mock_llm.c), the answers not looked at.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static char host[64];
static int port;

typedef struct {
    int fd;
    char *buf; /* response body */
    size_t cap;
    size_t len;
} conn;

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static int dial(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    inet_pton(AF_INET, host, &a.sin_addr);
    if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
        perror("connect");
        exit(2);
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            perror("write");
            exit(2);
        }
        p += w;
        n -= (size_t)w;
    }
}

/* One POST / with BODY; the response body lands in c->buf (NUL-ended). */
static void post(conn *c, const char *body) {
    char head[256];
    for (int attempt = 0;; attempt++) {
        if (c->fd < 0) c->fd = dial();
        int hn = snprintf(head, sizeof head,
                          "POST / HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: application/json\r\n"
                          "Content-Length: %zu\r\n\r\n",
                          host, port, strlen(body));
        write_all(c->fd, head, (size_t)hn);
        write_all(c->fd, body, strlen(body));
        /* Read the head, then Content-Length bytes. */
        size_t got = 0, hend = 0;
        for (;;) {
            if (got + 4096 > c->cap) {
                c->cap = (got + 4096) * 2;
                c->buf = realloc(c->buf, c->cap);
            }
            ssize_t r = read(c->fd, c->buf + got, c->cap - got - 1);
            if (r <= 0) break;
            got += (size_t)r;
            c->buf[got] = 0;
            char *e = strstr(c->buf, "\r\n\r\n");
            if (e) {
                hend = (size_t)(e - c->buf) + 4;
                break;
            }
        }
        if (!hend) { /* the server closed a kept connection: once more on a new one */
            close(c->fd);
            c->fd = -1;
            if (attempt < 1) continue;
            fprintf(stderr, "no response\n");
            exit(2);
        }
        c->buf[hend - 1] = 0;
        int closes = strncmp(c->buf, "HTTP/1.0", 8) == 0;
        size_t clen = 0;
        for (char *l = strstr(c->buf, "\r\n"); l && l[2]; l = strstr(l + 2, "\r\n")) {
            if (strncasecmp(l + 2, "content-length:", 15) == 0) clen = strtoul(l + 17, NULL, 10);
            if (strncasecmp(l + 2, "connection:", 11) == 0) {
                const char *v = l + 13;
                while (*v == ' ') v++;
                if (strncasecmp(v, "close", 5) == 0) closes = 1;
                if (strncasecmp(v, "keep-alive", 10) == 0) closes = 0;
            }
        }
        c->buf[hend - 1] = '\n';
        size_t have = got - hend;
        if (hend + clen + 1 > c->cap) {
            c->cap = hend + clen + 1;
            c->buf = realloc(c->buf, c->cap);
        }
        while (have < clen) {
            ssize_t r = read(c->fd, c->buf + hend + have, clen - have);
            if (r <= 0) {
                fprintf(stderr, "short body\n");
                exit(2);
            }
            have += (size_t)r;
        }
        memmove(c->buf, c->buf + hend, clen);
        c->buf[clen] = 0;
        c->len = clen;
        if (closes) {
            close(c->fd);
            c->fd = -1;
        }
        return;
    }
}

/* The string value of the first KEY after FROM in c->buf, into OUT. */
static int field(const char *from, const char *key, char *out, size_t n) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\"", key);
    const char *p = strstr(from, pat);
    if (!p) return 0;
    p += strlen(pat);
    while (*p == ' ' || *p == ':') p++;
    if (*p != '"') return 0;
    p++;
    size_t i = 0;
    while (*p && *p != '"' && i + 1 < n) out[i++] = *p++;
    out[i] = 0;
    return 1;
}

static const char SEND[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"SendMessage\",\"params\":{\"message\":{\"role\":\"user\","
    "\"messageId\":\"m1\",\"parts\":[{\"kind\":\"text\",\"text\":\"hi\"}]},\"configuration\":{\"blocking\":false}}}";

static void send_task(conn *c, char *id, size_t n) {
    post(c, SEND);
    const char *r = strstr(c->buf, "\"result\"");
    if (!r || !field(r, "id", id, n)) {
        fprintf(stderr, "SendMessage answered: %s\n", c->buf);
        exit(2);
    }
}

static void get_task(conn *c, const char *id) {
    char body[256];
    snprintf(body, sizeof body, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"GetTask\",\"params\":{\"id\":\"%s\"}}", id);
    post(c, body);
}

/* Polls until the task settles; returns the polls, sets *ok. */
static int settle(conn *c, const char *id, int *ok) {
    char state[32];
    for (int polls = 1;; polls++) {
        get_task(c, id);
        if (!field(c->buf, "state", state, sizeof state)) {
            fprintf(stderr, "GetTask answered: %s\n", c->buf);
            exit(2);
        }
        if (strcmp(state, "submitted") && strcmp(state, "working")) {
            *ok = !strcmp(state, "completed") && strstr(c->buf, "Hello.") != NULL;
            return polls;
        }
    }
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct {
    char (*ids)[64];
    int ntasks, calls, start, check;
    double *lat;
    int ok;
} worker;

static void *run_worker(void *arg) {
    worker *w = arg;
    conn c = {.fd = -1};
    char state[32];
    for (int i = 0; i < w->calls; i++) {
        const char *id = w->ids[(w->start + i) % w->ntasks];
        double t0 = now_s();
        get_task(&c, id);
        w->lat[i] = (now_s() - t0) * 1e6;
        if (w->check && (!field(c.buf, "state", state, sizeof state) || strcmp(state, "completed"))) w->ok = 0;
    }
    if (c.fd >= 0) close(c.fd);
    free(c.buf);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc < 4 || sscanf(argv[1], "http://%63[^:]:%d", host, &port) != 2) {
        fprintf(stderr, "usage: a2a_client http://HOST:PORT rt RUNS WARMUP | get TASKS CALLS CONNS | floor CALLS CONNS\n");
        return 2;
    }
    conn c = {.fd = -1};
    char id[64];
    if (!strcmp(argv[2], "rt")) {
        int runs = atoi(argv[3]), warm = argc > 4 ? atoi(argv[4]) : 0, ok = 1, one;
        double *lat = calloc((size_t)runs, sizeof *lat), *sent = calloc((size_t)runs, sizeof *sent);
        int *polls = calloc((size_t)runs, sizeof *polls);
        for (int i = 0; i < warm + runs; i++) {
            double t0 = now_s();
            send_task(&c, id, sizeof id);
            double t1 = now_s();
            int p = settle(&c, id, &one);
            ok &= one;
            if (i >= warm) {
                lat[i - warm] = (now_s() - t0) * 1e3;
                sent[i - warm] = (t1 - t0) * 1e3;
                polls[i - warm] = p;
            }
        }
        printf("{\"latencies_ms\":[");
        for (int i = 0; i < runs; i++) printf("%s%.4f", i ? "," : "", lat[i]);
        printf("],\"send_ms\":[");
        for (int i = 0; i < runs; i++) printf("%s%.4f", i ? "," : "", sent[i]);
        printf("],\"polls\":[");
        for (int i = 0; i < runs; i++) printf("%s%d", i ? "," : "", polls[i]);
        printf("],\"ok\":%s}\n", ok ? "true" : "false");
        return 0;
    }
    int floor = !strcmp(argv[2], "floor") && argc > 4;
    if ((!strcmp(argv[2], "get") && argc > 5) || floor) {
        int ntasks = floor ? 1 : atoi(argv[3]), ok = 1, one;
        int calls = atoi(argv[floor ? 3 : 4]), conns = atoi(argv[floor ? 4 : 5]);
        char(*ids)[64] = calloc((size_t)ntasks, 64);
        if (floor) strcpy(ids[0], "00000000-0000-4000-8000-000000000000");
        for (int i = 0; i < ntasks && !floor; i++) send_task(&c, ids[i], 64);
        for (int i = 0; i < ntasks && !floor; i++) {
            settle(&c, ids[i], &one);
            ok &= one;
        }
        double *lat = calloc((size_t)calls, sizeof *lat);
        worker *ws = calloc((size_t)conns, sizeof *ws);
        pthread_t *th = calloc((size_t)conns, sizeof *th);
        int per = calls / conns;
        double t0 = now_s();
        for (int k = 0; k < conns; k++) {
            ws[k] = (worker){ids, ntasks, per, k * 7919, !floor, lat + (size_t)k * per, 1};
            pthread_create(&th[k], NULL, run_worker, &ws[k]);
        }
        for (int k = 0; k < conns; k++) {
            pthread_join(th[k], NULL);
            ok &= ws[k].ok;
        }
        double wall = now_s() - t0;
        int n = per * conns;
        qsort(lat, (size_t)n, sizeof *lat, cmp_d);
        printf("{\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,\"calls_per_s\":%.0f,\"ok\":%s}\n",
               lat[n / 2], lat[n * 9 / 10], lat[n * 99 / 100], n / wall, ok ? "true" : "false");
        return 0;
    }
    fprintf(stderr, "unknown mode %s\n", argv[2]);
    return 2;
}
