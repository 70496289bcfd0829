// Keeps the header honest: it must compile as C++ (and as C99, see the
// Makefile's cxx target), and including it twice must be harmless.
#include "toolnexus.h"
#include "toolnexus.h"

#ifdef __cplusplus
static_assert(TN_ABI_VERSION == 1, "ABI version");
#endif

int tn_header_cxx_probe(void);
int tn_header_cxx_probe(void) {
    tn_status (*build)(const char *, tn_toolkit **, char **) = tn_toolkit_build;
    void (*release)(char *) = tn_string_free;
    return (build != 0 && release != 0 && TN_OK == 0) ? 0 : 1;
}
