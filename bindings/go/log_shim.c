// The C side of SetLogger: the library calls this plain C function, which
// hands the cgo.Handle (carried as user_data) to the exported Go function in
// log.go.
#include <stdint.h>
#include "toolnexus.h"
#include "_cgo_export.h"

static void tngo_log_trampoline(void *user_data, int32_t level, const char *target, const char *message) {
    goLog((uintptr_t)user_data, level, (char *)target, (char *)message);
}

static void tngo_log_release(void *user_data) {
    goLogRelease((uintptr_t)user_data);
}

void tngo_log_set(int32_t level, uintptr_t handle) {
    tn_log_set(level, handle ? tngo_log_trampoline : NULL, (void *)handle, handle ? tngo_log_release : NULL);
}
