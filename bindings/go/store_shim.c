// The C side of RegisterStore: the library calls this plain C function,
// which hands the cgo.Handle of the Go Store (carried as user_data) to the
// exported Go function in store.go.
#include <stdint.h>
#include "toolnexus.h"
#include "_cgo_export.h"

static void tngo_store_trampoline(void *user_data, const char *event_json, tn_reply *reply) {
    goStoreCall((uintptr_t)user_data, (char *)event_json, reply);
}

static void tngo_store_release(void *user_data) {
    goStoreRelease((uintptr_t)user_data);
}

tn_status tngo_store_register(const char *name, const char *options_json, uintptr_t handle, char **out_error) {
    return tn_store_register_with(name, options_json, tngo_store_trampoline, (void *)handle, tngo_store_release,
                                  out_error);
}
