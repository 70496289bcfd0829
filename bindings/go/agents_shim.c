// The C side of a Go agents runtime's generate callback: user_data is the
// cgo.Handle of the Go function, handed to the exported Go functions in
// agents.go.
#include <stdint.h>
#include "toolnexus.h"
#include "_cgo_export.h"

static void tngo_agents_generate(void *user_data, const char *event_json, tn_reply *reply) {
    goAgentsGenerate((uintptr_t)user_data, (char *)event_json, reply);
}

static void tngo_agents_release(void *user_data) {
    goAgentsRelease((uintptr_t)user_data);
}

tn_status tngo_agents_new(const char *config_json, const tn_toolkit *toolkit, uintptr_t handle,
                          tn_agents **out_agents, char **out_error) {
    if (handle == 0) {
        return tn_agents_new(config_json, toolkit, NULL, NULL, NULL, out_agents, out_error);
    }
    return tn_agents_new(config_json, toolkit, tngo_agents_generate, (void *)handle, tngo_agents_release,
                         out_agents, out_error);
}

tn_status tngo_agents_set_callback(const tn_agents *agents, const char *slot, uintptr_t handle, char **out_error) {
    if (handle == 0) {
        return tn_agents_set_callback(agents, slot, NULL, NULL, NULL, out_error);
    }
    return tn_agents_set_callback(agents, slot, tngo_agents_generate, (void *)handle, tngo_agents_release,
                                  out_error);
}
