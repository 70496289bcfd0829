/* toolnexus from C in one page: build a toolkit from a skill and the builtins,
 * add a C function as a tool, render it for OpenAI, run two tools by name.
 *
 *   make -C bindings/c test      (builds the library and runs this too)
 *   ./bindings/c/build/quickstart
 */
#include <stdio.h>
#include <string.h>

#include "toolnexus.h"

/* A host tool: the library calls it with the args JSON and copies whatever
 * result it sets; nothing allocated here is freed by the library. */
static void word_count(void *user_data, const char *args_json, tn_call *call) {
    (void)user_data;
    int words = 0, in_word = 0;
    for (const char *p = args_json; *p; p++) {
        int letter = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
        if (letter && !in_word) words++;
        in_word = letter;
    }
    char out[64];
    snprintf(out, sizeof out, "%d words (keys included)", words);
    tn_call_set_output(call, out, false);
}

static int fail(const char *what, tn_status status, char *error_json) {
    fprintf(stderr, "%s failed (status %d): %s\n", what, (int)status, error_json ? error_json : "");
    tn_string_free(error_json);
    return 1;
}

int main(void) {
    printf("libtoolnexus %s (ABI %u)\n", tn_version(), (unsigned)tn_abi_version());

    const char *config =
        "{\"skills\":[{\"name\":\"haiku\",\"description\":\"Write a haiku on request.\","
        "\"content\":\"Write three lines of 5, 7 and 5 syllables.\"}],"
        "\"disableTools\":[\"bash\"]}";
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_status st = tn_toolkit_build(config, &tk, &err);
    if (st != TN_OK) return fail("tn_toolkit_build", st, err);

    st = tn_toolkit_register(tk, "word_count", "Count the words in the arguments.",
                             "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\"}}}",
                             word_count, NULL, NULL, &err);
    if (st != TN_OK) {
        tn_toolkit_free(tk);
        return fail("tn_toolkit_register", st, err);
    }

    char *out = NULL;
    st = tn_render(tk, "toolNames", &out);
    if (st != TN_OK) {
        tn_toolkit_free(tk);
        return fail("tn_render", st, out);
    }
    printf("tools: %s\n", out);
    tn_string_free(out);

    st = tn_render(tk, "{\"format\":\"openai\",\"tools\":[\"skill\",\"word_count\"]}", &out);
    if (st != TN_OK) {
        tn_toolkit_free(tk);
        return fail("tn_render", st, out);
    }
    printf("openai tools: %s\n", out);
    tn_string_free(out);

    st = tn_execute(tk, "skill", "{\"name\":\"haiku\"}", NULL, &out);
    if (st != TN_OK) {
        tn_toolkit_free(tk);
        return fail("tn_execute", st, out);
    }
    printf("skill: %s\n", out);
    tn_string_free(out);

    /* Arguments may also arrive as the OpenAI wire form: a JSON string. */
    st = tn_execute(tk, "word_count", "\"{\\\"text\\\":\\\"an old silent pond\\\"}\"", NULL, &out);
    if (st != TN_OK) {
        tn_toolkit_free(tk);
        return fail("tn_execute", st, out);
    }
    printf("word_count: %s\n", out);
    tn_string_free(out);

    tn_toolkit_free(tk);
    return 0;
}
