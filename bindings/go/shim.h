// What the Go side and shim.c share about the shim's own functions.
#ifndef TNGO_SHIM_H
#define TNGO_SHIM_H
#include <stddef.h>
#include "toolnexus.h"

// What goToolCall answers the tool trampoline: the result was set from Go,
// or the output (NUL-terminated) is in the trampoline's buffer, to set as a
// success or as an error.
enum { TNGO_SET_BY_GO = 0, TNGO_OUT_OK = 1, TNGO_OUT_ERROR = 2 };

// tngo_execute's answer: the status, the answer's length, and the answer
// itself when it did not fit in the caller's buffer (NULL when it did).
typedef struct {
    tn_status status;
    size_t len;
    char *big;
} tngo_answer;

tngo_answer tngo_execute(const tn_toolkit *toolkit, const char *name, const char *args_json,
                         const char *context_json, const tn_cancel *cancel, char *buf, size_t cap);
#endif
