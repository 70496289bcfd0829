/* The MCP elicitation bridge (SPEC §2) from C, through nothing but
 * include/toolnexus.h: a toolkit built with a C waitFor (the "waitFor" slot of
 * tn_build_options_set_callback, then tn_toolkit_build_with) over a server on the
 * official Python MCP SDK (tests/mcp_servers/sdk_elicit_server.py) whose
 * tools call ctx.elicit (form mode) and ctx.elicit_url (URL mode) during
 * tools/call. What the C callback answers is what the server's tool sees:
 * accept with content, decline, cancel, a failing callback, the call's
 * deadline ending the wait (tn_reply_cancelled), and a toolkit without a
 * waitFor, which does not advertise elicitation and is refused.
 *
 * Run from the repository root (the server's path is relative), with the
 * SDK's python3 first on PATH. Exits non-zero on the first failed check;
 * prints "N passed, 0 failed". */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "toolnexus.h"
#include "check.h"

static const char *CONFIG =
    "{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"el\":{"
    "\"command\":[\"python3\",\"tests/mcp_servers/sdk_elicit_server.py\",\"stdio\"],"
    "\"timeout\":20000}}}}";

/* What the waitFor does next, and what it saw. */
enum mode { ACCEPT, DECLINE, EXPIRE, FAIL, NO_ANSWER, WAIT_UNTIL_CANCELLED };

struct host {
    atomic_int mode;
    atomic_int calls;
    atomic_int saw_cancelled;
    atomic_int frees;
    char last_event[4096];
};

static void wait_for(void *user_data, const char *event_json, tn_reply *reply) {
    struct host *h = user_data;
    atomic_fetch_add(&h->calls, 1);
    snprintf(h->last_event, sizeof h->last_event, "%s", event_json);
    switch (atomic_load(&h->mode)) {
    case ACCEPT:
        if (contains(event_json, "\"kind\":\"input\"")) {
            tn_reply_set_json(reply, "{\"ok\":true,\"data\":{\"name\":\"Ada\",\"age\":36}}");
        } else {
            tn_reply_set_json(reply, "{\"ok\":true}");
        }
        return;
    case DECLINE:
        tn_reply_set_json(reply, "{\"ok\":false,\"reason\":\"declined\"}");
        return;
    case EXPIRE:
        tn_reply_set_json(reply, "{\"ok\":false,\"reason\":\"expired\"}");
        return;
    case FAIL:
        tn_reply_set_error(reply, "nobody at the keyboard");
        return;
    case NO_ANSWER:
        return;
    case WAIT_UNTIL_CANCELLED:
        for (int i = 0; i < 1500 && !tn_reply_cancelled(reply); i++) {
            struct timespec pause = {0, 10 * 1000 * 1000};
            nanosleep(&pause, NULL);
        }
        atomic_store(&h->saw_cancelled, tn_reply_cancelled(reply) ? 1 : 0);
        tn_reply_set_json(reply, "{\"ok\":true,\"data\":{\"name\":\"too late\"}}");
        return;
    }
}

static void host_free(void *user_data) {
    struct host *h = user_data;
    atomic_fetch_add(&h->frees, 1);
}

/* The tool's output (a JSON string; the SDK wraps a str as {"result": ...}). */
static char *run(tn_toolkit *tk, const char *tool, const char *context) {
    char *out = NULL;
    tn_status st = tn_execute(tk, tool, "{}", context, &out);
    CHECK(st == TN_OK, "tn_execute %s: %d %s", tool, st, out ? out : "(null)");
    return out;
}

static void expect(tn_toolkit *tk, const char *tool, const char *needle) {
    char *out = run(tk, tool, NULL);
    CHECK(contains(out, needle), "%s: expected %s in %s", tool, needle, out);
    tn_string_free(out);
}

int main(void) {
    struct host h = {0};
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_build_options *opts = tn_build_options_new();
    tn_status st = tn_build_options_set_callback(opts, "waitFor", wait_for, &h, host_free, &err);
    CHECK(st == TN_OK && err == NULL, "set waitFor: %d %s", st, err ? err : "");
    st = tn_toolkit_build_with(CONFIG, opts, &tk, &err);
    CHECK(st == TN_OK && tk != NULL, "build: %d %s", st, err ? err : "");
    /* First the server (it needs the pinned venv's python3 on PATH): a
       toolkit whose only MCP server failed keeps no waitFor to hold. */
    char *status = NULL;
    tn_render(tk, "status", &status);
    CHECK(contains(status, "\"el\":\"connected\""), "the server did not connect: %s", status);
    tn_string_free(status);

    /* The toolkit keeps its waitFor: the options may go now. */
    tn_build_options_free(opts);
    CHECK(atomic_load(&h.frees) == 0, "user_data_free ran while the toolkit holds it");

    /* Advertised: form and URL mode. */
    expect(tk, "el_client_caps", "form");
    expect(tk, "el_client_caps", "url");

    /* Form mode, accepted: the content reaches the tool; the Request carries the schema. */
    atomic_store(&h.mode, ACCEPT);
    expect(tk, "el_ask_name", "accepted: name=Ada age=36");
    CHECK(contains(h.last_event, "\"kind\":\"input\""), "%s", h.last_event);
    CHECK(contains(h.last_event, "\"prompt\":\"Who are you?\""), "%s", h.last_event);
    CHECK(contains(h.last_event, "\"schema\":{"), "%s", h.last_event);

    /* URL mode: an authorization Request with the link. */
    expect(tk, "el_login", "\\\"accept\\\"");
    CHECK(contains(h.last_event, "\"kind\":\"authorization\""), "%s", h.last_event);
    CHECK(contains(h.last_event, "\"url\":\"https://auth.example/authorize?client=tn\""), "%s",
          h.last_event);

    /* declined → decline; any other refusal → cancel. */
    atomic_store(&h.mode, DECLINE);
    expect(tk, "el_ask_name", "\\\"decline\\\"");
    atomic_store(&h.mode, EXPIRE);
    expect(tk, "el_ask_name", "\\\"cancel\\\"");

    /* A failing callback, or one that answers nothing: the server's request
     * fails, its tool reports it, the call ends with a result. */
    atomic_store(&h.mode, FAIL);
    expect(tk, "el_ask_name", "refused: the waitFor callback failed: nobody at the keyboard");
    atomic_store(&h.mode, NO_ANSWER);
    expect(tk, "el_ask_name", "set no Answer");

    /* The call's deadline ends the wait: the call times out, the callback
     * learns through tn_reply_cancelled. */
    atomic_store(&h.mode, WAIT_UNTIL_CANCELLED);
    char *out = run(tk, "el_ask_name", "{\"timeoutMs\":400}");
    CHECK(contains(out, "\"isError\":true") && contains(out, "timeout"), "%s", out);
    tn_string_free(out);
    for (int i = 0; i < 1500 && atomic_load(&h.saw_cancelled) == 0; i++) {
        struct timespec pause = {0, 10 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    CHECK(atomic_load(&h.saw_cancelled) == 1, "the waitFor never saw tn_reply_cancelled");

    int calls = atomic_load(&h.calls);
    CHECK(calls == 7, "waitFor ran %d times", calls);
    tn_toolkit_free(tk);
    CHECK(atomic_load(&h.frees) == 1, "user_data_free ran %d times", atomic_load(&h.frees));

    /* Without a waitFor: not advertised, and a server that asks anyway is refused. */
    st = tn_toolkit_build_with(CONFIG, NULL, &tk, &err);
    CHECK(st == TN_OK && tk != NULL, "build: %d %s", st, err ? err : "");
    expect(tk, "el_client_caps", "\\\"none\\\"");
    expect(tk, "el_ask_name", "without a waitFor");
    tn_toolkit_free(tk);

    /* A build that fails keeps nothing: user_data goes, once, with the options. */
    struct host bad = {0};
    opts = tn_build_options_new();
    tn_build_options_set_callback(opts, "waitFor", wait_for, &bad, host_free, NULL);
    st = tn_toolkit_build_with("{\"nope\":1}", opts, &tk, &err);
    CHECK(st == TN_INVALID_CONFIG && tk == NULL, "%d", st);
    tn_string_free(err);
    tn_build_options_free(opts);
    CHECK(atomic_load(&bad.frees) == 1, "user_data_free ran %d times", atomic_load(&bad.frees));

    printf("%d passed, 0 failed\n", passed);
    return 0;
}
