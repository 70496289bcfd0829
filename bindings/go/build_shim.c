// The C side of Build's host callbacks: user_data is the cgo.Handle of the
// Go provider, handed to the exported Go functions in build.go.
#include <stdint.h>
#include "toolnexus.h"
#include "_cgo_export.h"

static void tngo_build_trampoline(void *user_data, const char *event_json, tn_reply *reply) {
    (void)event_json;
    goBuildCallback((uintptr_t)user_data, reply);
}

static void tngo_build_release(void *user_data) {
    goBuildRelease((uintptr_t)user_data);
}

tn_status tngo_build_set_skill_provider(tn_build_options *opts, uintptr_t handle, char **out_error) {
    return tn_build_options_set_callback(opts, "skillProvider", tngo_build_trampoline, (void *)handle,
                                         tngo_build_release, out_error);
}
