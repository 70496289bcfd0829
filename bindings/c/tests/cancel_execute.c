/*
 * Cancelling tn_execute from another thread (issue 17), one tool kind at a
 * time. Each call is cancelled while its tool is busy and must come back as
 * the cancelled ToolResult (isError, metadata {"error":"cancelled"}) long
 * before the tool would have finished, with what it started ended:
 *
 *   bash `sleep 30`          the shell and its sleep are gone
 *   bash with background     the background job and a grandchild (a job of
 *   jobs and a grandchild    a subshell) are gone too (pids written by the
 *                            command, looked up in /proc)
 *   slow HTTP tool           the server sees the connection closed before it
 *                            answered
 *   host tool, not looking   the caller returns; the late answer is dropped;
 *                            user_data_free waits for the late callback
 *   host tool, looking       it sees tn_call_cancelled and returns
 *   MCP tool (hang_call.py)  the server never answers; the call returns and
 *                            the session stays connected
 *
 * After each the toolkit is still usable (a second call works). A watchdog
 * alarm fails the run if anything hangs. Run from the repository root (the
 * MCP server script is found there). Only 127.0.0.1 networking.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "toolnexus.h"
#include "check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define FAIL(...)                                                            \
    do {                                                                     \
        failures++;                                                          \
        fprintf(stderr, "cancel_execute: " __VA_ARGS__);                     \
        fputc('\n', stderr);                                                 \
    } while (0)

/* Far below every "would have finished" time used here (30 s commands, a 20 s
 * MCP timeout, a 10 s HTTP answer): a call that ran its tool to the end fails. */
#define PROMPT_MS 8000

static long now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ------------------------------------------------------------------------ */
/* cancelling from another thread                                           */

/* What the trigger thread waits for before it cancels: a predicate polled
 * every 10 ms (at most 10 s), then the trigger. */
struct trigger {
    tn_cancel *cancel;
    int (*ready)(void *);
    void *arg;
};

static void *trigger_when_ready(void *p) {
    struct trigger *t = p;
    if (t->ready == NULL) sleep_ms(200);
    for (int i = 0; i < 1000 && t->ready != NULL && !t->ready(t->arg); i++) sleep_ms(10);
    sleep_ms(20);
    tn_cancel_trigger(t->cancel);
    return NULL;
}

/* Runs `name` with a fresh token that another thread triggers once `ready`
 * says so; returns the ToolResult JSON (caller frees) or NULL after a FAIL. */
static char *execute_cancelled(const tn_toolkit *tk, const char *name, const char *args, int (*ready)(void *),
                               void *arg) {
    struct trigger t = {tn_cancel_new(), ready, arg};
    pthread_t th;
    if (pthread_create(&th, NULL, trigger_when_ready, &t) != 0) {
        FAIL("%s: pthread_create", name);
        tn_cancel_free(t.cancel);
        return NULL;
    }
    char *out = NULL;
    long start = now_ms();
    tn_status st = tn_execute_with_cancel(tk, name, args, NULL, t.cancel, &out);
    long took = now_ms() - start;
    pthread_join(th, NULL);
    tn_cancel_free(t.cancel);
    if (st != TN_OK) {
        FAIL("%s: status %d: %s", name, st, out ? out : "(null)");
        tn_string_free(out);
        return NULL;
    }
    if (took > PROMPT_MS) FAIL("%s: the cancelled call took %ld ms: it ran its tool to the end", name, took);
    return out;
}

/* The result must be the cancelled ToolResult and contain `want`. Frees it. */
static void expect_cancelled(const char *what, char *out, const char *want) {
    if (out == NULL) return;
    if (strstr(out, "\"isError\":true") == NULL) FAIL("%s: not an error: %s", what, out);
    if (strstr(out, "\"metadata\":{\"error\":\"cancelled\"}") == NULL)
        FAIL("%s: no cancelled metadata: %s", what, out);
    if (strstr(out, want) == NULL) FAIL("%s: want %s in %s", what, want, out);
    tn_string_free(out);
}

static void expect_output(const tn_toolkit *tk, const char *what, const char *name, const char *args,
                          const char *want) {
    char *out = NULL;
    if (tn_execute(tk, name, args, NULL, &out) != TN_OK || out == NULL || strstr(out, want) == NULL)
        FAIL("%s: want %s, got %s", what, want, out ? out : "(null)");
    tn_string_free(out);
}

/* ------------------------------------------------------------------------ */
/* bash                                                                     */

static char dir[] = "/tmp/tn-cancel-XXXXXX";

/* The pid in dir/<name>, or -1 while it is not written yet. */
static long read_pid(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "r");
    if (f == NULL) return -1;
    long pid = -1;
    if (fscanf(f, "%ld", &pid) != 1) pid = -1;
    fclose(f);
    return pid;
}

static const char *PIDS[] = {"sh.pid", "job.pid", "sub.pid", "grandchild.pid"};

static int all_pids_written(void *n) {
    for (int i = 0; i < *(int *)n; i++)
        if (read_pid(PIDS[i]) <= 0) return 0;
    return 1;
}

/* Whether `pid` still runs: a /proc entry whose state is not zombie/dead. */
static int running(long pid) {
    char path[64], stat[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) return 0;
    size_t n = fread(stat, 1, sizeof stat - 1, f);
    fclose(f);
    stat[n] = '\0';
    const char *close = strrchr(stat, ')');
    if (close == NULL || close[1] != ' ') return 0;
    return close[2] != 'Z' && close[2] != 'X';
}

static void expect_gone(const char *what, int n) {
    for (int i = 0; i < n; i++) {
        long pid = read_pid(PIDS[i]);
        if (pid <= 0) {
            FAIL("%s: %s was never written", what, PIDS[i]);
            continue;
        }
        /* A grandchild re-parented to init may take a moment to be reaped. */
        for (int j = 0; j < 200 && running(pid); j++) sleep_ms(10);
        if (running(pid)) FAIL("%s: %s (%ld) is still running", what, PIDS[i], pid);
    }
}

static void clear_pids(void) {
    char path[256];
    for (size_t i = 0; i < sizeof PIDS / sizeof PIDS[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, PIDS[i]);
        unlink(path);
    }
}

static void probe_bash(const tn_toolkit *tk) {
    char args[1024];
    int n = 2;
    snprintf(args, sizeof args,
             "{\"command\":\"echo started; echo $$ > %s/sh.pid; sleep 30 & echo $! > %s/job.pid; wait\"}", dir, dir);
    char *out = execute_cancelled(tk, "bash", args, all_pids_written, &n);
    expect_cancelled("bash sleep 30", out, "started\\ncommand cancelled");
    expect_gone("bash sleep 30", n);
    clear_pids();

    /* A background job, and a subshell in the background that starts a
     * grandchild of the shell and waits for it. */
    n = 4;
    snprintf(args, sizeof args,
             "{\"command\":\"echo $$ > %s/sh.pid; sleep 30 & echo $! > %s/job.pid; "
             "( sleep 30 & echo $! > %s/grandchild.pid; wait ) & echo $! > %s/sub.pid; sleep 30\"}",
             dir, dir, dir, dir);
    out = execute_cancelled(tk, "bash", args, all_pids_written, &n);
    expect_cancelled("bash with background jobs", out, "command cancelled");
    expect_gone("bash with background jobs", n);
    clear_pids();

    expect_output(tk, "bash after the cancels", "bash", "{\"command\":\"echo again\"}", "again");
}

/* ------------------------------------------------------------------------ */
/* a slow HTTP endpoint                                                     */

static int listen_fd = -1;
static atomic_int http_requests;    /* request heads read */
static atomic_int http_closed_early; /* connections the client closed before the answer */

/* One connection at a time: reads a request head, then waits up to 10 s for
 * the client to close before answering "late". */
static void *slow_server(void *unused) {
    (void)unused;
    for (;;) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR) continue;
            return NULL;
        }
        char buf[8192];
        size_t have = 0;
        while (memmem(buf, have, "\r\n\r\n", 4) == NULL && have < sizeof buf) {
            ssize_t r = recv(fd, buf + have, sizeof buf - have, 0);
            if (r <= 0) break;
            have += (size_t)r;
        }
        if (memmem(buf, have, "\r\n\r\n", 4) != NULL) {
            atomic_fetch_add(&http_requests, 1);
            int closed = 0;
            if (strncmp(buf, "GET /slow", 9) == 0) {
                struct pollfd p = {fd, POLLIN, 0};
                long until = now_ms() + 10000;
                while (!closed && now_ms() < until) {
                    int r = poll(&p, 1, 50);
                    if (r > 0) {
                        char c;
                        closed = recv(fd, &c, 1, MSG_DONTWAIT) == 0;
                    }
                }
            }
            if (closed) {
                atomic_fetch_add(&http_closed_early, 1);
            } else {
                const char *resp = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\nConnection: close\r\n\r\nlate";
                (void)send(fd, resp, strlen(resp), MSG_NOSIGNAL);
            }
        }
        close(fd);
    }
}

static int start_server(void) {
    listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    if (listen_fd < 0 || bind(listen_fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(listen_fd, 16) != 0 ||
        getsockname(listen_fd, (struct sockaddr *)&a, &len) != 0)
        return -1;
    return ntohs(a.sin_port);
}

static int request_arrived(void *want) {
    return atomic_load(&http_requests) >= *(int *)want;
}

static void probe_http(const tn_toolkit *tk) {
    int want = atomic_load(&http_requests) + 1;
    char *out = execute_cancelled(tk, "slow_http", "{}", request_arrived, &want);
    expect_cancelled("slow HTTP tool", out, "slow_http: cancelled");
    for (int i = 0; i < 300 && atomic_load(&http_closed_early) < 1; i++) sleep_ms(10);
    if (atomic_load(&http_closed_early) != 1) FAIL("slow HTTP tool: the server never saw the request ended");
    expect_output(tk, "HTTP tool after the cancel", "fast_http", "{}", "\"output\":\"late\"");
}

/* ------------------------------------------------------------------------ */
/* host tools                                                               */

static atomic_int sleepy_started, sleepy_finished, sleepy_freed, watcher_started, watcher_saw_cancel;
static atomic_int probe_cancellable = -1;

/* Sleeps 1 s without looking at its call, then answers. */
static void sleepy(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    (void)args_json;
    atomic_store(&sleepy_started, 1);
    sleep_ms(1000);
    tn_call_set_output(call, "late answer", false);
    atomic_store(&sleepy_finished, 1);
}

static void sleepy_free(void *user_data) {
    (void)user_data;
    /* Must come after the late callback returned. */
    atomic_store(&sleepy_freed, atomic_load(&sleepy_finished) ? 1 : 2);
}

/* Looks at tn_call_cancelled every 5 ms (for at most 10 s). */
static void watcher(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    (void)args_json;
    atomic_store(&watcher_started, 1);
    for (int i = 0; i < 2000 && !tn_call_cancelled(call); i++) sleep_ms(5);
    if (tn_call_cancelled(call)) atomic_store(&watcher_saw_cancel, 1);
    tn_call_set_output(call, "watcher stopped", false);
}

static void probe(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    (void)args_json;
    atomic_store(&probe_cancellable, tn_call_cancellable(call) ? 1 : 0);
    tn_call_set_output(call, tn_call_cancelled(call) ? "cancelled?" : "probe ok", false);
}

static int flag_set(void *flag) {
    return atomic_load((atomic_int *)flag) != 0;
}

static void probe_host(const tn_toolkit *tk) {
    char *out = execute_cancelled(tk, "sleepy", "{}", flag_set, &sleepy_started);
    expect_cancelled("host tool not looking", out, "sleepy: cancelled");
    if (atomic_load(&sleepy_finished)) FAIL("host tool not looking: the caller waited for the late answer");

    out = execute_cancelled(tk, "watcher", "{}", flag_set, &watcher_started);
    expect_cancelled("host tool looking", out, "watcher: cancelled");
    for (int i = 0; i < 300 && !atomic_load(&watcher_saw_cancel); i++) sleep_ms(10);
    if (!atomic_load(&watcher_saw_cancel)) FAIL("host tool looking: tn_call_cancelled never turned true");

    /* Without a token or a timeout a call cannot be stopped, and says so. */
    expect_output(tk, "host tool after the cancels", "probe", "{}", "probe ok");
    if (atomic_load(&probe_cancellable) != 0) FAIL("tn_call_cancellable: true for a call without token or timeout");
    tn_cancel *c = tn_cancel_new();
    out = NULL;
    if (tn_execute_with_cancel(tk, "probe", "{}", NULL, c, &out) != TN_OK || out == NULL ||
        strstr(out, "probe ok") == NULL)
        FAIL("probe with an untriggered token: %s", out ? out : "(null)");
    tn_string_free(out);
    tn_cancel_free(c);
    if (atomic_load(&probe_cancellable) != 1) FAIL("tn_call_cancellable: false for a call with a token");
}

/* ------------------------------------------------------------------------ */
/* MCP                                                                      */

static void probe_mcp(void) {
    const char *config = "{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"hang\":"
                         "{\"command\":[\"python3\",\"tests/mcp_servers/hang_call.py\"],\"timeout\":20000}}}}";
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(config, &tk, &err) != TN_OK) {
        FAIL("mcp build: %s", err ? err : "(null)");
        tn_string_free(err);
        return;
    }
    for (int round = 0; round < 2; round++) {
        /* No ready signal to wait for: cancel 200 ms in. */
        char *out = execute_cancelled(tk, "hang_ping", "{}", NULL, NULL);
        expect_cancelled("MCP tool", out, "mcp server \\\"hang\\\" failed at tools/call: cancelled");
        char *status = NULL;
        if (tn_render(tk, "status", &status) != TN_OK || status == NULL ||
            strstr(status, "\"hang\":\"connected\"") == NULL)
            FAIL("MCP session after the cancel: %s", status ? status : "(null)");
        tn_string_free(status);
    }
    tn_toolkit_free(tk);
}

/* ------------------------------------------------------------------------ */

int main(void) {
    alarm(120); /* watchdog: a hang ends the run (SIGALRM, default action) */
    if (mkdtemp(dir) == NULL) return 1;
    int port = start_server();
    if (port < 0) {
        FAIL("cannot listen on 127.0.0.1");
        return 1;
    }
    pthread_t server;
    if (pthread_create(&server, NULL, slow_server, NULL) != 0) return 1;

    char config[1024];
    snprintf(config, sizeof config,
             "{\"httpTools\":[{\"name\":\"slow_http\",\"url\":\"http://127.0.0.1:%d/slow\"},"
             "{\"name\":\"fast_http\",\"url\":\"http://127.0.0.1:%d/fast\"}]}",
             port, port);
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(config, &tk, &err) != TN_OK ||
        tn_toolkit_register(tk, "sleepy", "", NULL, sleepy, NULL, sleepy_free, &err) != TN_OK ||
        tn_toolkit_register(tk, "watcher", "", NULL, watcher, NULL, NULL, &err) != TN_OK ||
        tn_toolkit_register(tk, "probe", "", NULL, probe, NULL, NULL, &err) != TN_OK) {
        FAIL("build/register: %s", err ? err : "(null)");
        tn_string_free(err);
        return 1;
    }

    probe_bash(tk);
    probe_http(tk);
    probe_host(tk);

    /* Freed while the sleepy callback may still run: user_data_free waits for it. */
    tn_toolkit_free(tk);
    for (int i = 0; i < 500 && !atomic_load(&sleepy_freed); i++) sleep_ms(10);
    if (atomic_load(&sleepy_freed) != 1)
        FAIL("host tool not looking: user_data_free %s", atomic_load(&sleepy_freed) ? "ran before the late callback returned"
                                                                                    : "never ran");

    probe_mcp();

    shutdown(listen_fd, SHUT_RDWR);
    close(listen_fd);
    pthread_join(server, NULL);
    rmdir(dir);
    if (failures) {
        fprintf(stderr, "cancel_execute: %d failure(s)\n", failures);
        return 1;
    }
    printf("cancel_execute: bash (2), HTTP, host (2), MCP (2) cancelled cleanly\n");
    return 0;
}
