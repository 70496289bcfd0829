// The C side of Go tool registration: the library calls these two plain C
// functions, which hand the cgo.Handle (carried as user_data, an integer) to
// the exported Go functions in register.go.
#include <stdint.h>
#include "toolnexus.h"
#include "_cgo_export.h"

struct tn_cancel;

static void tngo_tool_trampoline(void *user_data, const char *args_json, tn_call *call) {
    goToolCall((uintptr_t)user_data, (char *)args_json, call);
}

static void tngo_tool_release(void *user_data) {
    goToolRelease((uintptr_t)user_data);
}

tn_status tngo_register(const tn_toolkit *toolkit, const char *name, const char *description,
                        const char *schema, uintptr_t handle, char **out_error) {
    return tn_toolkit_register(toolkit, name, description, schema, tngo_tool_trampoline,
                               (void *)handle, tngo_tool_release, out_error);
}

/* tn_translate, tn_helper and the cancel token arrive in the library after
 * the toolkit calls. They are referenced weakly: a library that lacks one
 * makes the wrapper report TNGO_MISSING instead of failing to link. (The
 * archive member holding every tn_ function is pulled in by the strong
 * references to the others, so a present definition is found.) */
tn_status tn_translate(const char *client_json, const char *request_json, const tn_toolkit *toolkit,
                       const struct tn_cancel *cancel, char **out_json) __attribute__((weak));
tn_status tn_helper(const char *name, const char *args_json, char **out_json) __attribute__((weak));
struct tn_cancel *tn_cancel_new(void) __attribute__((weak));
void tn_cancel_trigger(const struct tn_cancel *cancel) __attribute__((weak));
void tn_cancel_free(struct tn_cancel *cancel) __attribute__((weak));

#define TNGO_MISSING (-1)

tn_status tngo_translate(const char *client_json, const char *request_json, const tn_toolkit *toolkit,
                         const struct tn_cancel *cancel, char **out_json) {
    if (!tn_translate) {
        *out_json = NULL;
        return TNGO_MISSING;
    }
    return tn_translate(client_json, request_json, toolkit, cancel, out_json);
}

tn_status tngo_helper(const char *name, const char *args_json, char **out_json) {
    if (!tn_helper) {
        *out_json = NULL;
        return TNGO_MISSING;
    }
    return tn_helper(name, args_json, out_json);
}

struct tn_cancel *tngo_cancel_new(void) { return tn_cancel_new ? tn_cancel_new() : NULL; }

void tngo_cancel_trigger(const struct tn_cancel *cancel) {
    if (tn_cancel_trigger && cancel) tn_cancel_trigger(cancel);
}

void tngo_cancel_free(struct tn_cancel *cancel) {
    if (tn_cancel_free && cancel) tn_cancel_free(cancel);
}
