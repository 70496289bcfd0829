/*
 * An expanded ${ENV} header value crosses the C ABI in no direction but to
 * the server: HTTP tools whose headers name a secret in the environment are
 * called for success, a non-2xx answer, a refused connection and a timeout;
 * every ToolResult, every error JSON and every render format is searched for
 * the secret. The server must see it, or the test proves nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "toolnexus.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static atomic_long failures;

#define FAIL(...)                                                            \
    do {                                                                     \
        atomic_fetch_add(&failures, 1);                                      \
        fprintf(stderr, "secrets: " __VA_ARGS__);                            \
        fputc('\n', stderr);                                                 \
    } while (0)

#include "mini_http.h"

#define SECRET "c-s3cr3t-Qx81-b7d0e5"

static long searched;

/* Checks one string the library handed out, then frees it. Never prints it:
 * a failure message must not carry the secret either. */
static void check(const char *what, char *s) {
    if (s == NULL) {
        FAIL("%s: no string", what);
        return;
    }
    searched++;
    if (strstr(s, SECRET) != NULL) FAIL("%s: the secret is in the output", what);
    tn_string_free(s);
}

/* Executes and checks the output matches want exactly; returns nothing. */
static void execute(const tn_toolkit *tk, const char *name, const char *ctx, const char *want) {
    char *out = NULL;
    tn_status st = tn_execute(tk, name, "{\"q\":\"x\"}", ctx, &out);
    if (st != TN_OK || out == NULL) FAIL("%s: status %d", name, st);
    else if (strstr(out, SECRET) == NULL && strcmp(out, want) != 0)
        FAIL("%s: got %s, want %s", name, out, want);
    check(name, out);
}

int main(void) {
    if (setenv("TN_C_HTTP_SECRET", SECRET, 1) != 0) return 1;
    /* A value that cannot be a header once expanded (CR LF). */
    if (setenv("TN_C_HTTP_SECRET_BAD", SECRET "\r\nX-Injected: 1", 1) != 0) return 1;

    struct server srv;
    if (server_start(&srv) != 0) {
        perror("secrets: server");
        return 1;
    }
    /* A port with nothing listening: bind, read the port, close. */
    int closed_port;
    {
        struct server tmp;
        if (server_start(&tmp) != 0) return 1;
        closed_port = tmp.port;
        server_stop(&tmp);
    }

    const char *headers =
        "\"headers\":{\"Authorization\":\"Bearer ${TN_C_HTTP_SECRET}\","
        "\"X-Api-Key\":\"${TN_C_HTTP_SECRET}\"},\"query\":[\"q\"]";
    char config[4096];
    snprintf(config, sizeof config,
             "{\"builtins\":false,\"httpTools\":["
             "{\"name\":\"ok\",\"url\":\"http://127.0.0.1:%d/ok\",%s},"
             "{\"name\":\"no\",\"url\":\"http://127.0.0.1:%d/no\",%s},"
             "{\"name\":\"refused\",\"url\":\"http://127.0.0.1:%d/x\",%s},"
             "{\"name\":\"slow\",\"url\":\"http://127.0.0.1:%d/slow\",%s},"
             "{\"name\":\"bad\",\"url\":\"http://127.0.0.1:%d/ok\","
             "\"headers\":{\"Authorization\":\"Bearer ${TN_C_HTTP_SECRET_BAD}\"}},"
             /* the secret written out literally in a declaration with a fault */
             "{\"name\":\"broken\",\"url\":\"http://127.0.0.1:%d/ok\",\"timeout\":-1,"
             "\"headers\":{\"Authorization\":\"Bearer " SECRET "\"}}"
             "]}",
             srv.port, headers, srv.port, headers, closed_port, headers, srv.port, headers,
             srv.port, srv.port);

    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(config, &tk, &err) != TN_OK) {
        FAIL("build failed");
        check("build error", err);
        return 1;
    }

    execute(tk, "ok", NULL, "{\"output\":\"fine\",\"isError\":false,\"metadata\":{\"status\":200}}");
    pthread_mutex_lock(&srv.lock);
    int seen = strstr(srv.last_head, "Bearer " SECRET "\r\n") != NULL &&
               strcasestr(srv.last_head, "x-api-key: " SECRET "\r\n") != NULL;
    pthread_mutex_unlock(&srv.lock);
    if (!seen) FAIL("the server did not receive the expanded headers");

    execute(tk, "no", NULL, "{\"output\":\"HTTP 401: denied\",\"isError\":true,\"metadata\":{\"status\":401}}");
    execute(tk, "refused", NULL,
            "{\"output\":\"HTTP transport failure: connect-failed\",\"isError\":true,"
            "\"metadata\":{\"error\":\"connect-failed\"}}");
    execute(tk, "slow", "{\"timeoutMs\":50}",
            "{\"output\":\"HTTP transport failure: timeout\",\"isError\":true,"
            "\"metadata\":{\"error\":\"timeout\"}}");

    /* bad: refused before sending; the exact wording is the library's. */
    char *out = NULL;
    long before = atomic_load(&srv.requests);
    if (tn_execute(tk, "bad", "{}", NULL, &out) != TN_OK || out == NULL ||
        strstr(out, "\"isError\":true") == NULL)
        FAIL("bad: expected an isError result");
    check("bad", out);
    if (atomic_load(&srv.requests) != before) FAIL("bad: a request was sent");

    /* Error JSON from the boundary, for each tool. */
    const char *names[] = {"ok", "no", "refused", "slow", "bad", "broken"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        out = NULL;
        if (tn_execute(tk, names[i], "{not json", NULL, &out) == TN_OK)
            FAIL("%s: bad args accepted", names[i]);
        check("args error", out);
        out = NULL;
        if (tn_execute(tk, names[i], "{}", "{\"timeoutMs\":\"soon\"}", &out) == TN_OK)
            FAIL("%s: bad context accepted", names[i]);
        check("context error", out);
    }

    /* Every render format, including status (which names the broken entry). */
    const char *formats[] = {"openai", "anthropic", "gemini", "toolNames", "skillsPrompt",
                             "tools", "status", "skills", "skillsInventory",
                             "{\"format\":\"openai\",\"tools\":[\"ok\",\"bad\"]}"};
    int status_names_broken = 0;
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        out = NULL;
        if (tn_render(tk, formats[i], &out) != TN_OK) FAIL("render %s failed", formats[i]);
        if (strcmp(formats[i], "status") == 0 && out != NULL && strstr(out, "httpTools[5]") != NULL)
            status_names_broken = 1;
        check(formats[i], out);
    }
    if (!status_names_broken) FAIL("status does not report httpTools[5]");

    /* A build that fails outright with the literal secret in the config. */
    tn_toolkit *tk2 = NULL;
    err = NULL;
    if (tn_toolkit_build("{\"httpTools\":{\"Authorization\":\"Bearer " SECRET "\"}}", &tk2, &err) ==
        TN_OK) {
        FAIL("a wrong httpTools type was accepted");
        tn_toolkit_free(tk2);
    }
    check("build error", err);

    tn_toolkit_free(tk);
    server_stop(&srv);
    long f = atomic_load(&failures);
    printf("secrets: %ld outputs searched, %ld failure(s)\n", searched, f);
    return f == 0 ? 0 : 1;
}
