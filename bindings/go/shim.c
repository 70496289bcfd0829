// The C side of Go tool registration: the library calls these two plain C
// functions, which hand the cgo.Handle (carried as user_data, an integer) to
// the exported Go functions in register.go.
#include <stdint.h>
#include "toolnexus.h"
#include "_cgo_export.h"

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
