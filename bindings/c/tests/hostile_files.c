/*
 * The hostile-world probes of issue 14 (the file, network and time half), run
 * from a C host with default signal handling: every one must come back as an
 * error result in bounded time, never a hang, an abort or a leak.
 *
 *   read of a FIFO          refused, does not block
 *   read of /dev/zero       refused, does not read until memory runs out
 *   webfetch, 20 GB body    "too-large" before the body is read
 *   secret echo             a server echoing the request gets [redacted]
 *   host tool past deadline the caller gets the timeout result at the
 *                           deadline; the late answer is dropped, and
 *                           user_data_free waits for the late callback
 *   cancelled host tool     tn_execute_with_cancel returns "cancelled" once
 *                           another thread triggers the token
 *
 * A watchdog alarm (default action: terminate) fails the run if any probe
 * hangs. Every server is on 127.0.0.1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "toolnexus.h"
#include "check.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;

#define FAIL(...)                                                            \
    do {                                                                     \
        failures++;                                                          \
        fprintf(stderr, "hostile_files: " __VA_ARGS__);                      \
        fputc('\n', stderr);                                                 \
    } while (0)

#define SECRET "probe-s3cr3t-9d41e7"

/* Executes and returns the result JSON (caller frees), or NULL. */
static char *execute(const tn_toolkit *tk, const char *name, const char *args, const char *ctx) {
    char *out = NULL;
    tn_status st = tn_execute(tk, name, args, ctx, &out);
    if (st != TN_OK) {
        FAIL("%s: status %d: %s", name, st, out ? out : "(null)");
        tn_string_free(out);
        return NULL;
    }
    return out;
}

/* Checks that the result is an error containing `want`. */
static void expect_error(const char *probe, char *out, const char *want) {
    if (out == NULL) return;
    if (strstr(out, "\"isError\":true") == NULL || strstr(out, want) == NULL)
        FAIL("%s: want an isError result with \"%s\", got %.300s", probe, want, out);
    tn_string_free(out);
}

/* ---- a one-connection-at-a-time HTTP server on 127.0.0.1 ---- */

static int listen_fd = -1;
static int port;

static int send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *serve(void *unused) {
    (void)unused;
    for (;;) {
        int fd = accept(listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR) continue;
            return NULL; /* closed: the run is over */
        }
        char head[8192];
        size_t have = 0;
        while (have < sizeof head - 1 && memmem(head, have, "\r\n\r\n", 4) == NULL) {
            ssize_t r = recv(fd, head + have, sizeof head - 1 - have, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            have += (size_t)r;
        }
        head[have] = '\0';
        char reply[12288];
        if (strncmp(head, "GET /huge", 9) == 0) {
            /* Announces 20 GB and sends a little of it. */
            const char *h = "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\n"
                            "content-length: 21474836480\r\nconnection: close\r\n\r\n";
            send_all(fd, h, strlen(h));
            memset(reply, 'a', sizeof reply);
            send_all(fd, reply, sizeof reply);
        } else {
            /* Echoes the request head back, as a 401 page quoting it. */
            int n = snprintf(reply, sizeof reply,
                             "HTTP/1.1 401 Unauthorized\r\ncontent-type: text/plain\r\n"
                             "content-length: %zu\r\nconnection: close\r\n\r\n%s",
                             have, head);
            if (n > 0) send_all(fd, reply, (size_t)n < sizeof reply ? (size_t)n : sizeof reply - 1);
        }
        close(fd);
    }
}

static int start_server(pthread_t *thread) {
    listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (listen_fd < 0) return -1;
    struct sockaddr_in addr;
    memset(&addr, 0, sizeof addr);
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (bind(listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(listen_fd, 16) != 0 ||
        getsockname(listen_fd, (struct sockaddr *)&addr, &len) != 0)
        return -1;
    port = ntohs(addr.sin_port);
    return pthread_create(thread, NULL, serve, NULL);
}

/* ---- host tools and their deadline ---- */

static atomic_long seen_deadline = -2;
static atomic_int late_finished;
static atomic_int user_data_freed;

/* Waits, looking at tn_call_cancelled, until it is set (or 10 s). */
static void patient(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    (void)args_json;
    atomic_store(&seen_deadline, (long)tn_call_deadline_ms(call));
    for (int i = 0; i < 1000 && !tn_call_cancelled(call); i++) sleep_ms(10);
    tn_call_set_output(call, tn_call_cancelled(call) ? "stopped" : "never cancelled", false);
}

/* Ignores its deadline and answers late. */
static void stubborn(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    (void)args_json;
    sleep_ms(400);
    tn_call_set_output(call, "late answer", false);
    atomic_store(&late_finished, 1);
}

static void *trigger_later(void *cancel) {
    sleep_ms(100);
    tn_cancel_trigger((const tn_cancel *)cancel);
    return NULL;
}

static void free_flag(void *user_data) {
    (void)user_data;
    atomic_store(&user_data_freed, 1);
}

int main(void) {
    alarm(120); /* watchdog: a hanging probe ends the run (SIGALRM, default action) */
    if (setenv("TN_C_PROBE_SECRET", SECRET, 1) != 0) return 1;

    char dir[] = "/tmp/tn-hostile-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    char fifo[256];
    snprintf(fifo, sizeof fifo, "%s/pipe", dir);
    if (mkfifo(fifo, 0600) != 0) {
        perror("mkfifo");
        return 1;
    }
    pthread_t server;
    if (start_server(&server) != 0) {
        perror("server");
        return 1;
    }

    char config[1024];
    snprintf(config, sizeof config,
             "{\"httpTools\":[{\"name\":\"echo\",\"url\":\"http://127.0.0.1:%d/echo\","
             "\"headers\":{\"Authorization\":\"Bearer ${TN_C_PROBE_SECRET}\"}}]}",
             port);
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(config, &tk, &err) != TN_OK) {
        FAIL("build: %s", err ? err : "(null)");
        tn_string_free(err);
        return 1;
    }

    char args[512];
    snprintf(args, sizeof args, "{\"path\":\"%s\"}", fifo);
    expect_error("FIFO read", execute(tk, "read", args, NULL), "is a FIFO (named pipe)");
    expect_error("/dev/zero read", execute(tk, "read", "{\"path\":\"/dev/zero\"}", NULL),
                 "is a character device");

    snprintf(args, sizeof args, "{\"url\":\"http://127.0.0.1:%d/huge\",\"format\":\"html\"}", port);
    expect_error("webfetch huge body", execute(tk, "webfetch", args, NULL),
                 "webfetch: transport failure: too-large");

    char *out = execute(tk, "echo", "{}", NULL);
    if (out != NULL) {
        if (strstr(out, SECRET) != NULL) FAIL("secret echo: the secret is in the result");
        if (strstr(out, "Bearer [redacted]") == NULL)
            FAIL("secret echo: the echo was not redacted in place (or not echoed)");
        tn_string_free(out);
    }

    if (tn_toolkit_register(tk, "patient", "", NULL, patient, NULL, NULL, &err) != TN_OK ||
        tn_toolkit_register(tk, "stubborn", "", NULL, stubborn, NULL, free_flag, &err) != TN_OK) {
        FAIL("register: %s", err ? err : "(null)");
        tn_string_free(err);
        return 1;
    }
    out = execute(tk, "patient", "{}", "{\"timeoutMs\":100}");
    expect_error("host tool past its deadline", out, "patient: timed out after 100 ms (timeoutMs)");
    long d = atomic_load(&seen_deadline);
    if (d < 0 || d > 100) FAIL("tn_call_deadline_ms gave %ld, want 0..100", d);

    out = execute(tk, "stubborn", "{}", "{\"timeoutMs\":50}");
    expect_error("late host answer", out, "stubborn: timed out after 50 ms (timeoutMs)");
    if (atomic_load(&late_finished)) FAIL("stubborn: tn_execute waited for the late answer");

    /* A cancel token triggered from another thread stops a host tool that has
     * no deadline; one triggered before the call stops a builtin at once. */
    tn_cancel *cancel = tn_cancel_new();
    pthread_t trigger;
    if (pthread_create(&trigger, NULL, trigger_later, cancel) != 0) return 1;
    out = NULL;
    if (tn_execute_with_cancel(tk, "patient", "{}", NULL, cancel, &out) != TN_OK) FAIL("cancel: status");
    pthread_join(trigger, NULL);
    expect_error("cancelled host tool", out, "patient: cancelled");
    out = NULL;
    if (tn_execute_with_cancel(tk, "grep", "{\"pattern\":\"x\",\"path\":\"/tmp\"}", NULL, cancel, &out) != TN_OK)
        FAIL("cancel grep: status");
    expect_error("cancelled grep", out, "grep: cancelled");
    /* The patient callback saw the cancel and returns; wait for it before the toolkit goes. */
    sleep_ms(50);
    tn_cancel_free(cancel);

    /* user_data_free runs once the late callback has returned, not before. */
    tn_toolkit_free(tk);
    for (int i = 0; i < 500 && !atomic_load(&user_data_freed); i++) sleep_ms(10);
    if (!atomic_load(&user_data_freed)) FAIL("user_data_free did not run after the late callback");
    if (!atomic_load(&late_finished)) FAIL("user_data_free ran before the late callback returned");

    shutdown(listen_fd, SHUT_RDWR);
    close(listen_fd);
    pthread_join(server, NULL);
    unlink(fifo);
    rmdir(dir);
    if (failures) {
        fprintf(stderr, "hostile_files: %d failure(s)\n", failures);
        return 1;
    }
    printf("hostile_files: 8 probes passed\n");
    return 0;
}
