// The C side of a toolkit's Go waitFor (elicit.go): user_data is the
// cgo.Handle of the Go function, carried as an integer.
#include <stdint.h>
#include "toolnexus.h"
#include "_cgo_export.h"

static void tngo_wait_for_trampoline(void *user_data, const char *event_json, tn_reply *reply) {
    goToolkitWaitFor((uintptr_t)user_data, (char *)event_json, reply);
}

static void tngo_wait_for_release(void *user_data) {
    goToolkitWaitForRelease((uintptr_t)user_data);
}

tn_status tngo_build_set_wait_for(tn_build_options *opts, uintptr_t handle, char **out_error) {
    return tn_build_options_set_callback(opts, "waitFor", tngo_wait_for_trampoline, (void *)handle,
                                         tngo_wait_for_release, out_error);
}

// The C side of a toolkit's Go authorize (authorize.go), the same way.
static void tngo_authorize_trampoline(void *user_data, const char *event_json, tn_reply *reply) {
    goToolkitAuthorize((uintptr_t)user_data, (char *)event_json, reply);
}

static void tngo_authorize_release(void *user_data) {
    goToolkitAuthorizeRelease((uintptr_t)user_data);
}

tn_status tngo_build_set_authorize(tn_build_options *opts, uintptr_t handle, char **out_error) {
    return tn_build_options_set_callback(opts, "authorize", tngo_authorize_trampoline, (void *)handle,
                                         tngo_authorize_release, out_error);
}

// The C side of a toolkit's Go toolsChanged listener (tools_changed.go).
static void tngo_tools_changed_trampoline(void *user_data, const char *event_json, tn_reply *reply) {
    (void)reply;
    goToolkitToolsChanged((uintptr_t)user_data, (char *)event_json);
}

static void tngo_tools_changed_release(void *user_data) {
    goToolkitToolsChangedRelease((uintptr_t)user_data);
}

tn_status tngo_build_set_tools_changed(tn_build_options *opts, uintptr_t handle, char **out_error) {
    return tn_build_options_set_callback(opts, "toolsChanged", tngo_tools_changed_trampoline, (void *)handle,
                                         tngo_tools_changed_release, out_error);
}
