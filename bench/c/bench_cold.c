/* Cold start (issue 15): one process that loads the library, builds a
 * toolkit of the builtins and the skills under SKILLS_DIR, renders it for
 * OpenAI and exits. Timed from outside by bench_spawn.
 *
 * usage: bench_cold SKILLS_DIR
 */
#include "toolnexus.h"

#include <stdio.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s SKILLS_DIR\n", argv[0]);
        return 2;
    }
    char cfg[4096];
    snprintf(cfg, sizeof cfg, "{\"skillsDir\":\"%s\"}", argv[1]);
    tn_toolkit *tk = NULL;
    char *err = NULL;
    if (tn_toolkit_build(cfg, &tk, &err) != TN_OK) {
        fprintf(stderr, "build failed: %s\n", err ? err : "?");
        tn_string_free(err);
        return 1;
    }
    char *out = NULL;
    if (tn_render(tk, "openai", &out) != TN_OK || !out || out[0] != '[') {
        fprintf(stderr, "render failed\n");
        return 1;
    }
    tn_string_free(out);
    tn_toolkit_free(tk);
    return 0;
}
