// The C side of Go tool registration: the library calls these two plain C
// functions, which hand the cgo.Handle (carried as user_data, an integer) to
// the exported Go functions in register.go.
#include <stdint.h>
#include <string.h>
#include "toolnexus.h"
#include "shim.h"
#include "_cgo_export.h"

/* Room for a Go tool's plain output on the trampoline's stack. */
enum { TNGO_TOOL_OUT = 1024 };

/* What the library calls for a Go tool. What Go would otherwise ask the
 * library in calls of its own (each a cgo crossing) is asked here, in C: the
 * length of the args, the call's deadline and whether it can be cancelled,
 * and, when the output fits in `out`, the output is set here too. */
static void tngo_tool_trampoline(void *user_data, const char *args_json, tn_call *call) {
    char out[TNGO_TOOL_OUT];
    int got = goToolCall((uintptr_t)user_data, (char *)args_json, args_json ? strlen(args_json) : 0, call,
                         tn_call_deadline_ms(call), tn_call_cancellable(call), out, sizeof out);
    if (got != TNGO_SET_BY_GO) {
        tn_call_set_output(call, out, got == TNGO_OUT_ERROR);
    }
}

/* tn_execute_with_cancel for Go (toolnexus.go, executeOnce): an answer that
 * fits in buf with its NUL is copied there and freed here, so Go makes no
 * second call to free it; a longer one is handed back in `big`. */
tngo_answer tngo_execute(const tn_toolkit *toolkit, const char *name, const char *args_json,
                         const char *context_json, const tn_cancel *cancel, char *buf, size_t cap) {
    char *out = NULL;
    tngo_answer a = {tn_execute_with_cancel(toolkit, name, args_json, context_json, cancel, &out), 0, NULL};
    if (out == NULL) {
        return a;
    }
    a.len = strlen(out);
    if (a.len < cap) {
        memcpy(buf, out, a.len);
        tn_string_free(out);
    } else {
        a.big = out;
    }
    return a;
}

static void tngo_tool_release(void *user_data) {
    goToolRelease((uintptr_t)user_data);
}

tn_status tngo_register(const tn_toolkit *toolkit, const char *name, const char *description,
                        const char *schema, uintptr_t handle, char **out_error) {
    return tn_toolkit_register(toolkit, name, description, schema, tngo_tool_trampoline,
                               (void *)handle, tngo_tool_release, out_error);
}

/* The C side of a Go client's callbacks: user_data is the cgo.Handle of the
 * slot's Go function, run_data the cgo.Handle of the run (its context). */
static void tngo_client_trampoline(void *user_data, const char *event_json, tn_reply *reply) {
    goClientCallback((uintptr_t)user_data, (uintptr_t)tn_reply_run_data(reply), (char *)event_json, reply);
}

static void tngo_client_release(void *user_data) {
    goClientRelease((uintptr_t)user_data);
}

tn_status tngo_set_callback(const tn_client *client, const char *slot, uintptr_t handle, char **out_error) {
    return tn_client_set_callback(client, slot, tngo_client_trampoline, (void *)handle, tngo_client_release,
                                  out_error);
}

tn_status tngo_run(const tn_client *client, const tn_toolkit *toolkit, const char *request_json,
                   const tn_cancel *cancel, uintptr_t run, char **out_json) {
    return tn_run(client, toolkit, request_json, cancel, (void *)run, out_json);
}

tn_status tngo_run_resume(const tn_client *client, const tn_toolkit *toolkit, const char *resume_json,
                          const tn_cancel *cancel, uintptr_t run, char **out_json) {
    return tn_run_resume(client, toolkit, resume_json, cancel, (void *)run, out_json);
}

tn_status tngo_ask(const tn_client *client, const tn_toolkit *toolkit, const char *ask_json, bool stream,
                   const tn_cancel *cancel, uintptr_t run, char **out_json) {
    return tn_ask(client, toolkit, ask_json, stream, cancel, (void *)run, out_json);
}

static void tngo_serve_on_call(void *user_data, const char *event_json) {
    goServeOnCall((uintptr_t)user_data, (char *)event_json);
}

static void tngo_serve_on_task(void *user_data, const char *event_json) {
    goServeOnTask((uintptr_t)user_data, (char *)event_json);
}

static void tngo_serve_release(void *user_data) {
    goServeRelease((uintptr_t)user_data);
}

/* tn_serve_with_client for Go (serve.go): without a client and an `a2a`
 * block it is tn_serve. One handle carries both hooks; either may be off. */
tn_status tngo_serve(const tn_toolkit *toolkit, const tn_client *client, const char *serve_json,
                     uintptr_t handle, int on_call, int on_task, tn_server **out_server, char **out_json) {
    if (!on_call && !on_task) {
        return tn_serve_with_client(toolkit, client, serve_json, NULL, NULL, NULL, NULL, out_server, out_json);
    }
    return tn_serve_with_client(toolkit, client, serve_json, on_call ? tngo_serve_on_call : NULL,
                                on_task ? tngo_serve_on_task : NULL, (void *)handle, tngo_serve_release,
                                out_server, out_json);
}
