/* The C parity harness: runs every case of the conformance vectors
 * (tests/conformance/vectors, or the directory in TN_CONFORMANCE_DIR) through
 * the C ABI and compares with what the upstream Clojure port recorded, by
 * the rules of tests/conformance/README.md. JSON via Debian's libcjson.
 *
 *   make -C bindings/c parity
 *
 * It applies the same decisions as the Go harness (bindings/go/parity_test.go):
 *   - hostSpecific: a ToolResult compares isError only, plus a trailing
 *     "exit code N" line of the recorded output; metadata is not compared and
 *     expectFiles compares file names only. A translate error compares only
 *     the failure status. Everything else of the case is compared as usual.
 *   - A case needs its op, plus "mcp"/"httpTools" when the toolkit declares
 *     them, plus "builtinExec" to execute one of the ten builtins; anything
 *     not in SUPPORTED counts S ("mcp" is supported as soon as the library
 *     lists an MCP server in its status, see mcp_wired), as does a call failing with a message saying
 *     "not implemented" or "not supported".
 *   - divergences.json cases count D, proposed-divergences.json ones count
 *     separately; neither runs.
 * Run from the repository root (the Makefile does), or set TN_REPO_ROOT. */
#include <arpa/inet.h>
#include <cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <regex.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "toolnexus.h"


/* What the library on this branch implements; TN_PARITY_SUPPORTED
 * (comma-separated) overrides it. */
static const char *SUPPORTED[] = {"render", "loadSkills", "execute", "builtinExec", "httpTools",
                                  "helper", "translate", "run", NULL};
/* "mcp" is supported when the library reports MCP servers (mcp_wired). */
static int mcp_supported;

static const char *BUILTINS[] = {"apply_patch", "bash", "edit", "glob", "grep", "question",
                                 "read", "todowrite", "webfetch", "write", NULL};

/* ------------------------------------------------------------------ */
/* small utilities                                                    */

struct buf {
    char *p;
    size_t len, cap;
};

static void buf_add(struct buf *b, const char *s, size_t n) {
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap * 2 : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) abort();
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

static void buf_printf(struct buf *b, const char *fmt, ...) {
    char tmp[2048];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n >= sizeof tmp) n = sizeof tmp - 1;
    buf_add(b, tmp, (size_t)n);
}

static char *read_file(const char *path, size_t *len_out) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    struct buf b = {0};
    char chunk[65536];
    size_t n;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) buf_add(&b, chunk, n);
    fclose(f);
    if (!b.p) buf_add(&b, "", 0);
    if (len_out) *len_out = b.len;
    return b.p;
}

static char *replace_all(const char *s, const char *from, const char *to) {
    struct buf b = {0};
    size_t fl = strlen(from), tl = strlen(to);
    const char *p = s, *q;
    while ((q = strstr(p, from)) != NULL) {
        buf_add(&b, p, (size_t)(q - p));
        buf_add(&b, to, tl);
        p = q + fl;
    }
    buf_add(&b, p, strlen(p));
    return b.p;
}

static int in_list(const char *const *list, const char *s) {
    for (; *list; list++)
        if (strcmp(*list, s) == 0) return 1;
    return 0;
}

/* A short JSON rendering of a value for diff lines. */
static char *show(const cJSON *v) {
    if (!v) return strdup("(absent)");
    char *s = cJSON_PrintUnformatted(v);
    if (!s) return strdup("?");
    if (strlen(s) > 300) strcpy(s + 297, "...");
    return s;
}

/* ------------------------------------------------------------------ */
/* comparison                                                         */

struct cmp {
    const cJSON *volatile_paths; /* array of dot-paths, may be NULL */
    const char *text_at;         /* a path whose string is JSON text, or NULL */
    int json_strings;            /* any string holding a JSON object/array compares as that value */
};

struct diffs {
    struct buf text;
    int count;
};

static void add_diff(struct diffs *d, const char *fmt, ...) {
    d->count++;
    if (d->count > 8) return;
    char tmp[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    buf_printf(&d->text, "  %s\n", tmp);
}

static int is_volatile(const struct cmp *o, const char *path) {
    const cJSON *v;
    if (!o->volatile_paths) return 0;
    cJSON_ArrayForEach(v, o->volatile_paths) {
        if (cJSON_IsString(v) && strcmp(v->valuestring, path) == 0) return 1;
    }
    return 0;
}

static void compare(const char *path, const cJSON *exp, const cJSON *act, const struct cmp *o,
                    struct diffs *d);

/* Two strings as the JSON values they encode; *both says whether both parsed. */
static int json_text_equal(const char *a, const char *b, int *both) {
    cJSON *av = cJSON_Parse(a), *bv = cJSON_Parse(b);
    int eq;
    if (!av || !bv) {
        *both = 0;
        eq = strcmp(a, b) == 0;
    } else {
        *both = 1;
        struct diffs d = {{0}, 0};
        struct cmp plain = {NULL, NULL, 0};
        compare("", av, bv, &plain, &d);
        eq = d.count == 0;
        free(d.text.p);
    }
    cJSON_Delete(av);
    cJSON_Delete(bv);
    return eq;
}

static void join_path(char *out, size_t n, const char *path, const char *key) {
    if (path[0])
        snprintf(out, n, "%s.%s", path, key);
    else
        snprintf(out, n, "%s", key);
}

static int ends_with(const char *s, const char *suffix) {
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && strcmp(s + a - b, suffix) == 0;
}

static void compare(const char *path, const cJSON *exp, const cJSON *act, const struct cmp *o,
                    struct diffs *d) {
    if (is_volatile(o, path)) return;
    const char *label = path[0] ? path : "(root)";
    char sub[1024];
    if (!exp) {
        if (act) add_diff(d, "%s: unexpected value", label);
        return;
    }
    if (cJSON_IsObject(exp)) {
        if (!cJSON_IsObject(act)) {
            char *a = show(act), *e = show(exp);
            add_diff(d, "%s: got %s, want object %s", label, a, e);
            free(a), free(e);
            return;
        }
        const cJSON *ec, *ac;
        cJSON_ArrayForEach(ec, exp) {
            join_path(sub, sizeof sub, path, ec->string);
            ac = cJSON_GetObjectItemCaseSensitive(act, ec->string);
            if (!ac) {
                if (!is_volatile(o, sub)) {
                    char *e = show(ec);
                    add_diff(d, "%s: missing, want %s", sub, e);
                    free(e);
                }
                continue;
            }
            compare(sub, ec, ac, o, d);
        }
        cJSON_ArrayForEach(ac, act) {
            if (!cJSON_GetObjectItemCaseSensitive(exp, ac->string)) {
                char *a = show(ac);
                join_path(sub, sizeof sub, path, ac->string);
                add_diff(d, "%s: unexpected, got %s", sub, a);
                free(a);
            }
        }
        return;
    }
    if (cJSON_IsArray(exp)) {
        int en = cJSON_GetArraySize(exp), an = cJSON_IsArray(act) ? cJSON_GetArraySize(act) : -1;
        if (an != en) {
            char *a = show(act), *e = show(exp);
            add_diff(d, "%s: got %s, want %s", label, a, e);
            free(a), free(e);
            return;
        }
        for (int i = 0; i < en; i++) {
            char idx[16];
            snprintf(idx, sizeof idx, "%d", i);
            join_path(sub, sizeof sub, path, idx);
            compare(sub, cJSON_GetArrayItem(exp, i), cJSON_GetArrayItem(act, i), o, d);
        }
        return;
    }
    if (cJSON_IsString(exp)) {
        if (!cJSON_IsString(act)) {
            char *a = show(act);
            add_diff(d, "%s: got %s, want string \"%s\"", label, a, exp->valuestring);
            free(a);
            return;
        }
        char dotted[1100];
        snprintf(dotted, sizeof dotted, ".%s", path);
        int json_text = o->json_strings && (exp->valuestring[0] == '{' || exp->valuestring[0] == '[');
        if (json_text || (o->text_at && strcmp(o->text_at, path) == 0) || ends_with(dotted, ".arguments")) {
            int both;
            int eq = json_text_equal(exp->valuestring, act->valuestring, &both);
            if (both) {
                if (!eq) add_diff(d, "%s: got JSON %s, want %s", label, act->valuestring, exp->valuestring);
                return;
            }
        }
        if (strcmp(exp->valuestring, act->valuestring) != 0) {
            char *a = show(act), *e = show(exp);
            add_diff(d, "%s: got %s, want %s", label, a, e);
            free(a), free(e);
        }
        return;
    }
    if (cJSON_IsNumber(exp)) {
        if (!cJSON_IsNumber(act) || exp->valuedouble != act->valuedouble) {
            char *a = show(act), *e = show(exp);
            add_diff(d, "%s: got %s, want %s", label, a, e);
            free(a), free(e);
        }
        return;
    }
    /* true, false, null */
    if ((exp->type & 0xFF) != (act ? (act->type & 0xFF) : -1)) {
        char *a = show(act), *e = show(exp);
        add_diff(d, "%s: got %s, want %s", label, a, e);
        free(a), free(e);
    }
}

/* Renames object keys at every depth (the recorded internal names to ours). */
static void rename_keys(cJSON *v, const char *const *pairs) {
    cJSON *c;
    if (!v) return;
    cJSON_ArrayForEach(c, v) {
        if (cJSON_IsObject(v) && c->string && !(c->type & cJSON_StringIsConst)) {
            for (const char *const *p = pairs; *p; p += 2) {
                if (strcmp(c->string, p[0]) == 0) {
                    free(c->string);
                    c->string = strdup(p[1]);
                    break;
                }
            }
        }
        rename_keys(c, pairs);
    }
}

/* Replaces ${ROOT} / ${BASE} in every string and key, at every depth. */
static void substitute(cJSON *v, const char *from, const char *to) {
    cJSON *c;
    if (cJSON_IsString(v) && strstr(v->valuestring, from)) {
        char *n = replace_all(v->valuestring, from, to);
        cJSON_SetValuestring(v, n);
        free(n);
    }
    cJSON_ArrayForEach(c, v) {
        if (c->string && !(c->type & cJSON_StringIsConst) && strstr(c->string, from)) {
            char *n = replace_all(c->string, from, to);
            free(c->string);
            c->string = n;
        }
        substitute(c, from, to);
    }
}

/* ------------------------------------------------------------------ */
/* mock HTTP server                                                   */

struct header {
    char *name; /* lower case */
    char *value;
};

struct request {
    char *method, *path, *query; /* query NULL when no '?' */
    struct header *headers;
    int nheaders;
    char *body;
    size_t body_len;
};

struct server {
    int fd, port;
    pthread_t accept_thread;
    pthread_mutex_t mu;
    cJSON *responses; /* array, owned by the case */
    int next;
    cJSON *tool_responses; /* op run: answers for paths under /tool/, or NULL */
    int tool_next;
    struct request *reqs;
    int nreqs;
    pthread_t *handlers;
    int nhandlers;
    volatile int stopping;
};

struct conn {
    struct server *srv;
    int fd;
};

static const char *reason(int status) {
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 301: return "Moved Permanently";
    case 302: return "Found";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 429: return "Too Many Requests";
    case 500: return "Internal Server Error";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
    }
}

static void send_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

static const char *header_get(const struct request *r, const char *name) {
    for (int i = 0; i < r->nheaders; i++)
        if (strcmp(r->headers[i].name, name) == 0) return r->headers[i].value;
    return NULL;
}

/* Reads one request (head + body, Content-Length or chunked) from fd. */
static int read_request(int fd, struct request *r) {
    struct buf in = {0};
    char chunk[8192];
    char *end = NULL;
    while (!(in.p && (end = strstr(in.p, "\r\n\r\n")))) {
        ssize_t n = recv(fd, chunk, sizeof chunk, 0);
        if (n <= 0) {
            free(in.p);
            return -1;
        }
        buf_add(&in, chunk, (size_t)n);
    }
    size_t head_len = (size_t)(end - in.p) + 4;
    *end = 0;
    char *save = NULL;
    char *line = strtok_r(in.p, "\r\n", &save);
    if (!line) {
        free(in.p);
        return -1;
    }
    char *sp1 = strchr(line, ' ');
    char *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
    if (!sp1 || !sp2) {
        free(in.p);
        return -1;
    }
    r->method = strndup(line, (size_t)(sp1 - line));
    char *uri = strndup(sp1 + 1, (size_t)(sp2 - sp1 - 1));
    char *q = strchr(uri, '?');
    if (q) {
        r->query = strdup(q + 1);
        *q = 0;
    }
    r->path = uri;
    while ((line = strtok_r(NULL, "\r\n", &save)) != NULL) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        r->headers = realloc(r->headers, sizeof *r->headers * (size_t)(r->nheaders + 1));
        char *name = strndup(line, (size_t)(colon - line));
        for (char *p = name; *p; p++)
            if (*p >= 'A' && *p <= 'Z') *p = (char)(*p - 'A' + 'a');
        const char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        char *value = strdup(v);
        size_t vl = strlen(value);
        while (vl > 0 && (value[vl - 1] == ' ' || value[vl - 1] == '\t')) value[--vl] = 0;
        r->headers[r->nheaders].name = name;
        r->headers[r->nheaders].value = value;
        r->nheaders++;
    }
    /* the body bytes already read follow the head */
    struct buf body = {0};
    buf_add(&body, in.p + head_len, in.len - head_len);
    free(in.p);
    const char *te = header_get(r, "transfer-encoding");
    const char *cl = header_get(r, "content-length");
    if (te && strcasestr(te, "chunked")) {
        struct buf out = {0};
        size_t pos = 0;
        for (;;) {
            char *crlf;
            while (!(crlf = body.p ? strstr(body.p + pos, "\r\n") : NULL)) {
                ssize_t n = recv(fd, chunk, sizeof chunk, 0);
                if (n <= 0) goto done_chunked;
                buf_add(&body, chunk, (size_t)n);
            }
            size_t size = strtoul(body.p + pos, NULL, 16);
            size_t data = (size_t)(crlf - body.p) + 2;
            while (body.len < data + size + 2) {
                ssize_t n = recv(fd, chunk, sizeof chunk, 0);
                if (n <= 0) goto done_chunked;
                buf_add(&body, chunk, (size_t)n);
            }
            if (size == 0) break;
            buf_add(&out, body.p + data, size);
            pos = data + size + 2;
        }
    done_chunked:
        free(body.p);
        if (!out.p) buf_add(&out, "", 0);
        r->body = out.p;
        r->body_len = out.len;
    } else {
        size_t want = cl ? strtoul(cl, NULL, 10) : 0;
        while (body.len < want) {
            ssize_t n = recv(fd, chunk, sizeof chunk, 0);
            if (n <= 0) break;
            buf_add(&body, chunk, (size_t)n);
        }
        if (!body.p) buf_add(&body, "", 0);
        r->body = body.p;
        r->body_len = body.len;
    }
    return 0;
}

static void respond(int fd, const cJSON *resp) {
    struct buf out = {0};
    if (!resp) {
        buf_printf(&out, "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        send_all(fd, out.p, out.len);
        free(out.p);
        return;
    }
    const cJSON *status = cJSON_GetObjectItemCaseSensitive(resp, "status");
    const cJSON *body = cJSON_GetObjectItemCaseSensitive(resp, "body");
    const cJSON *text = cJSON_GetObjectItemCaseSensitive(resp, "bodyText");
    const cJSON *headers = cJSON_GetObjectItemCaseSensitive(resp, "headers");
    const cJSON *delay = cJSON_GetObjectItemCaseSensitive(resp, "delayMs");
    if (cJSON_IsNumber(delay) && delay->valueint > 0) {
        struct timespec ts = {delay->valueint / 1000, (long)(delay->valueint % 1000) * 1000000L};
        nanosleep(&ts, NULL);
    }
    int code = cJSON_IsNumber(status) ? status->valueint : 200;
    char *payload = NULL;
    int json = 0;
    if (cJSON_IsString(text)) {
        payload = strdup(text->valuestring);
    } else if (body) {
        payload = cJSON_PrintUnformatted(body); /* compact, in the file's key order */
        json = 1;
    } else {
        payload = strdup("");
    }
    buf_printf(&out, "HTTP/1.1 %d %s\r\n", code, reason(code));
    if (json) buf_printf(&out, "content-type: application/json\r\n");
    const cJSON *h;
    cJSON_ArrayForEach(h, headers) {
        if (cJSON_IsString(h)) buf_printf(&out, "%s: %s\r\n", h->string, h->valuestring);
    }
    buf_printf(&out, "content-length: %zu\r\nconnection: close\r\n\r\n", strlen(payload));
    buf_add(&out, payload, strlen(payload));
    send_all(fd, out.p, out.len);
    free(out.p);
    free(payload);
}

/* op run: an HTTP tool's request, answered from serverResponses. */
static int is_tool_path(const char *path) { return path && strncmp(path, "/tool/", 6) == 0; }

static void *handle_conn(void *arg) {
    struct conn *c = arg;
    struct server *s = c->srv;
    struct request r = {0};
    if (read_request(c->fd, &r) == 0) {
        pthread_mutex_lock(&s->mu);
        s->reqs = realloc(s->reqs, sizeof *s->reqs * (size_t)(s->nreqs + 1));
        s->reqs[s->nreqs++] = r;
        const cJSON *resp = NULL;
        if (s->tool_responses && is_tool_path(r.path)) {
            if (s->tool_next < cJSON_GetArraySize(s->tool_responses))
                resp = cJSON_GetArrayItem(s->tool_responses, s->tool_next++);
        } else if (s->next < cJSON_GetArraySize(s->responses)) {
            resp = cJSON_GetArrayItem(s->responses, s->next++);
        }
        pthread_mutex_unlock(&s->mu);
        respond(c->fd, resp);
    }
    shutdown(c->fd, SHUT_WR);
    char drain[256];
    while (recv(c->fd, drain, sizeof drain, 0) > 0) {
    }
    close(c->fd);
    free(c);
    return NULL;
}

static void *accept_loop(void *arg) {
    struct server *s = arg;
    for (;;) {
        int fd = accept(s->fd, NULL, NULL);
        if (fd < 0) {
            if (s->stopping) return NULL;
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return NULL;
        }
        if (s->stopping) {
            close(fd);
            return NULL;
        }
        struct timeval tv = {10, 0};
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        struct conn *c = malloc(sizeof *c);
        c->srv = s;
        c->fd = fd;
        pthread_t t;
        if (pthread_create(&t, NULL, handle_conn, c) != 0) {
            close(fd);
            free(c);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        s->handlers = realloc(s->handlers, sizeof *s->handlers * (size_t)(s->nhandlers + 1));
        s->handlers[s->nhandlers++] = t;
        pthread_mutex_unlock(&s->mu);
    }
}

static struct server *server_start(void) {
    struct server *s = calloc(1, sizeof *s);
    pthread_mutex_init(&s->mu, NULL);
    s->fd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    socklen_t al = sizeof a;
    if (bind(s->fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(s->fd, 64) != 0 ||
        getsockname(s->fd, (struct sockaddr *)&a, &al) != 0) {
        close(s->fd);
        free(s);
        return NULL;
    }
    s->port = ntohs(a.sin_port);
    s->responses = cJSON_CreateArray();
    pthread_create(&s->accept_thread, NULL, accept_loop, s);
    return s;
}

static void free_request(struct request *r) {
    free(r->method);
    free(r->path);
    free(r->query);
    for (int i = 0; i < r->nheaders; i++) {
        free(r->headers[i].name);
        free(r->headers[i].value);
    }
    free(r->headers);
    free(r->body);
}

/* Stops accepting, waits for the handlers (a delayed answer included). */
static void server_stop(struct server *s) {
    if (!s) return;
    s->stopping = 1;
    shutdown(s->fd, SHUT_RDWR);
    close(s->fd);
    pthread_join(s->accept_thread, NULL);
    for (int i = 0; i < s->nhandlers; i++) pthread_join(s->handlers[i], NULL);
    for (int i = 0; i < s->nreqs; i++) free_request(&s->reqs[i]);
    free(s->reqs);
    free(s->handlers);
    cJSON_Delete(s->responses);
    cJSON_Delete(s->tool_responses);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* ------------------------------------------------------------------ */
/* the case's world: files, env, cwd                                  */

/* a + "/" + b into out; -1 when it does not fit. */
static int join2(char *out, size_t n, const char *a, const char *b) {
    int w = snprintf(out, n, "%s/%s", a, b);
    return (w < 0 || (size_t)w >= n) ? -1 : 0;
}

static int mkdir_p(const char *path) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
    return 0;
}

static int parent_dir(const char *path) {
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof tmp, "%s", path);
    char *slash = strrchr(tmp, '/');
    if (!slash) return 0;
    *slash = 0;
    return mkdir_p(tmp);
}

static int write_tree(const char *root, const cJSON *files, const cJSON *links) {
    const cJSON *f;
    char p[PATH_MAX];
    cJSON_ArrayForEach(f, files) {
        if (!cJSON_IsString(f)) continue;
        if (join2(p, sizeof p, root, f->string) != 0 || parent_dir(p) != 0) return -1;
        FILE *fp = fopen(p, "wb");
        if (!fp) return -1;
        fwrite(f->valuestring, 1, strlen(f->valuestring), fp);
        fclose(fp);
        if (strncmp(f->valuestring, "#!", 2) == 0) chmod(p, 0755);
    }
    cJSON_ArrayForEach(f, links) {
        if (!cJSON_IsString(f)) continue;
        if (join2(p, sizeof p, root, f->string) != 0 || parent_dir(p) != 0 || symlink(f->valuestring, p) != 0) return -1;
    }
    return 0;
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    return remove(path);
}

struct saved_env {
    char *name, *value; /* value NULL: was unset */
};

static struct saved_env *apply_env(const cJSON *env, int *n) {
    *n = cJSON_GetArraySize(env);
    struct saved_env *saved = calloc((size_t)(*n + 1), sizeof *saved);
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, env) {
        const char *old = getenv(e->string);
        saved[i].name = strdup(e->string);
        saved[i].value = old ? strdup(old) : NULL;
        if (cJSON_IsString(e))
            setenv(e->string, e->valuestring, 1);
        else
            unsetenv(e->string);
        i++;
    }
    return saved;
}

static void restore_env(struct saved_env *saved, int n) {
    for (int i = 0; i < n; i++) {
        if (saved[i].value)
            setenv(saved[i].name, saved[i].value, 1);
        else
            unsetenv(saved[i].name);
        free(saved[i].name);
        free(saved[i].value);
    }
    free(saved);
}

/* Every regular file under root (symlinks not followed): {relative: content}. */
static void list_files(const char *root, const char *rel, cJSON *out) {
    char dir[2 * PATH_MAX];
    snprintf(dir, sizeof dir, "%s%s%s", root, rel[0] ? "/" : "", rel);
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char full[2 * PATH_MAX], sub[2 * PATH_MAX];
        if (join2(full, sizeof full, dir, de->d_name) != 0) continue;
        if (rel[0] ? join2(sub, sizeof sub, rel, de->d_name) != 0 : join2(sub, sizeof sub, ".", de->d_name) != 0)
            continue;
        if (!rel[0]) memmove(sub, sub + 2, strlen(sub + 2) + 1);
        struct stat st;
        if (lstat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            list_files(root, sub, out);
        } else if (S_ISREG(st.st_mode)) {
            char *content = read_file(full, NULL);
            cJSON_AddStringToObject(out, sub, content ? content : "");
            free(content);
        }
    }
    closedir(d);
}

/* ------------------------------------------------------------------ */
/* running a case                                                     */

enum outcome { PASS, FAIL, SKIP };

struct run {
    cJSON *c; /* the case, substituted */
    const char *root;
    struct server *srv;
    struct diffs d;
    char *skip_reason;
    char *error; /* a call that failed when it should not have */
};

static int unsupported_message(const char *json) {
    return json && (strcasestr(json, "not implemented") || strcasestr(json, "not yet implemented") ||
                    strcasestr(json, "not supported") || strcasestr(json, "not yet supported"));
}

/* A library call failed: S if it says it is not built yet, else a failure. */
static void call_failed(struct run *r, const char *what, tn_status st, char *json) {
    if (unsupported_message(json)) {
        r->skip_reason = strdup(json);
    } else {
        char tmp[1024];
        snprintf(tmp, sizeof tmp, "%s: status %d: %.900s", what, (int)st, json ? json : "");
        r->error = strdup(tmp);
    }
    tn_string_free(json);
}

static tn_toolkit *build(struct run *r) {
    const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(r->c, "toolkit");
    char *text = cfg ? cJSON_PrintUnformatted(cfg) : strdup("{}");
    tn_toolkit *tk = NULL;
    char *err = NULL;
    tn_status st = tn_toolkit_build(text, &tk, &err);
    free(text);
    if (st != TN_OK) {
        call_failed(r, "tn_toolkit_build", st, err);
        return NULL;
    }
    return tk;
}

/* Renders tk in format and parses it; NULL on failure (recorded in r). */
static cJSON *render(struct run *r, tn_toolkit *tk, const char *format) {
    char *out = NULL;
    tn_status st = tn_render(tk, format, &out);
    if (st != TN_OK) {
        call_failed(r, "tn_render", st, out);
        return NULL;
    }
    cJSON *v = cJSON_Parse(out);
    if (!v) add_diff(&r->d, "render %s: not JSON: %.200s", format, out);
    tn_string_free(out);
    return v;
}

static const cJSON *get(const cJSON *o, const char *k) { return cJSON_GetObjectItemCaseSensitive(o, k); }

static void op_render(struct run *r) {
    tn_toolkit *tk = build(r);
    if (!tk) return;
    const char *format = cJSON_GetStringValue(get(r->c, "format"));
    const cJSON *order = get(r->c, "toolOrder");
    int mcp_status = format && strcmp(format, "mcpStatus") == 0;
    if (mcp_status) format = "status";
    char *spec;
    if (cJSON_IsArray(order)) {
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "format", format ? format : "");
        cJSON_AddItemToObject(o, "tools", cJSON_Duplicate(order, 1));
        spec = cJSON_PrintUnformatted(o);
        cJSON_Delete(o);
    } else {
        spec = strdup(format ? format : "");
    }
    cJSON *act = render(r, tk, spec);
    free(spec);
    tn_toolkit_free(tk);
    if (!act) return;
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(r->c, "expect");
    struct cmp o = {get(r->c, "volatile"), NULL, 0};
    if (mcp_status) {
        compare("statuses", get(exp, "statuses"), get(act, "statuses"), &o, &r->d);
        const cJSON *ee = get(exp, "errors"), *ae = get(act, "errors"), *k;
        int same = cJSON_GetArraySize(ee) == cJSON_GetArraySize(ae);
        cJSON_ArrayForEach(k, ee) {
            if (!get(ae, k->string)) same = 0;
        }
        if (!same) {
            char *a = show(ae), *e = show(ee);
            add_diff(&r->d, "errors: keys of %s, want keys of %s", a, e);
            free(a), free(e);
        }
    } else {
        compare("", exp, act, &o, &r->d);
    }
    cJSON_Delete(act);
}

static void op_load_skills(struct run *r) {
    tn_toolkit *tk = build(r);
    if (!tk) return;
    cJSON *exp = cJSON_GetObjectItemCaseSensitive(r->c, "expect");
    static const char *const names[] = {"filter-unmatched", "filterUnmatched", "sample-limit", "sampleLimit", NULL};
    struct cmp o = {get(r->c, "volatile"), NULL, 0};
    cJSON *loaded = cJSON_GetObjectItemCaseSensitive(exp, "loaded");
    if (loaded) {
        rename_keys(loaded, names);
        cJSON *act = render(r, tk, "skills");
        if (act) compare("loaded", loaded, act, &o, &r->d);
        cJSON_Delete(act);
    }
    const cJSON *inv = get(exp, "inventory");
    if (inv && !r->error && !r->skip_reason) {
        cJSON *act = render(r, tk, "skillsInventory");
        if (act) compare("inventory", inv, act, &o, &r->d);
        cJSON_Delete(act);
    }
    tn_toolkit_free(tk);
}

static int is_header_json(const struct request *q) {
    const char *ct = header_get(q, "content-type");
    return ct && strcasestr(ct, "json");
}

/* Only the headers the case records: names case-insensitively, values
 * exactly; a header sent twice never matches. */
static void compare_headers(struct run *r, const char *where, const cJSON *exp, const struct request *q) {
    const cJSON *h;
    cJSON_ArrayForEach(h, exp) {
        int count = 0;
        const char *val = NULL;
        for (int i = 0; i < q->nheaders; i++) {
            if (strcasecmp(q->headers[i].name, h->string) == 0) {
                count++;
                val = q->headers[i].value;
            }
        }
        const char *want = cJSON_GetStringValue(h);
        if (count != 1 || !want || strcmp(val, want) != 0)
            add_diff(&r->d, "%s header %s: got %s (%d times), want \"%s\"", where, h->string,
                     val ? val : "(none)", count, want ? want : "?");
    }
}

/* The server's requests whose path is (tool != 0) or is not under /tool/. */
static int pick_requests(const struct server *s, int tool, const struct request **out, int cap) {
    int n = 0;
    for (int i = 0; s && i < s->nreqs && n < cap; i++)
        if (is_tool_path(s->reqs[i].path) == tool) out[n++] = &s->reqs[i];
    return n;
}

static void compare_request_list(struct run *r, const cJSON *exp, const struct request *const *list, int n);

static void compare_server_requests(struct run *r, const cJSON *exp) {
    int n = r->srv ? r->srv->nreqs : 0;
    const struct request **list = calloc((size_t)n + 1, sizeof *list);
    for (int i = 0; i < n; i++) list[i] = &r->srv->reqs[i];
    compare_request_list(r, exp, list, n);
    free(list);
}

static void compare_request_list(struct run *r, const cJSON *exp, const struct request *const *list, int n) {
    if (cJSON_GetArraySize(exp) != n) {
        add_diff(&r->d, "server requests: got %d, want %d", n, cJSON_GetArraySize(exp));
        return;
    }
    for (int i = 0; i < n; i++) {
        const cJSON *e = cJSON_GetArrayItem(exp, i);
        const struct request *q = list[i];
        char where[32];
        snprintf(where, sizeof where, "request[%d]", i);
        const char *m = cJSON_GetStringValue(get(e, "method")), *p = cJSON_GetStringValue(get(e, "path"));
        if (!m || strcmp(m, q->method)) add_diff(&r->d, "%s method: got %s, want %s", where, q->method, m);
        if (!p || strcmp(p, q->path)) add_diff(&r->d, "%s path: got %s, want %s", where, q->path, p);
        const cJSON *eq = get(e, "query");
        const char *wq = cJSON_GetStringValue(eq);
        if ((wq == NULL) != (q->query == NULL) || (wq && strcmp(wq, q->query)))
            add_diff(&r->d, "%s query: got %s, want %s", where, q->query ? q->query : "null", wq ? wq : "null");
        compare_headers(r, where, get(e, "headers"), q);
        const char *wb = cJSON_GetStringValue(get(e, "body"));
        if (wb) {
            const char *ect = cJSON_GetStringValue(get(get(e, "headers"), "content-type"));
            int both = 0, eq_ = 0;
            if (is_header_json(q) || (ect && strcasestr(ect, "json"))) eq_ = json_text_equal(wb, q->body, &both);
            if (both) {
                if (!eq_) add_diff(&r->d, "%s body: got %s, want %s", where, q->body, wb);
            } else if (strlen(q->body) != q->body_len || strcmp(wb, q->body)) {
                add_diff(&r->d, "%s body: got \"%s\", want \"%s\"", where, q->body, wb);
            }
        }
    }
}

static int name_is_builtin(const char *name) { return name && in_list(BUILTINS, name); }

/* The outputs README says are JSON text standing for a value. */
static int output_is_json_text(const cJSON *c) {
    const char *name = cJSON_GetStringValue(get(c, "name"));
    const cJSON *tk = get(c, "toolkit"), *h;
    cJSON_ArrayForEach(h, get(tk, "httpTools")) {
        const char *n = cJSON_GetStringValue(get(h, "name")), *mode = cJSON_GetStringValue(get(h, "resultMode"));
        if (n && name && !strcmp(n, name) && mode && !strcmp(mode, "json")) return 1;
    }
    if (name && !strcmp(name, "question")) return 1;
    return get(tk, "mcpConfig") != NULL && !name_is_builtin(name);
}

static void op_execute(struct run *r) {
    tn_toolkit *tk = build(r);
    if (!tk) return;
    const char *name = cJSON_GetStringValue(get(r->c, "name"));
    const cJSON *args = get(r->c, "args"), *ctx = get(r->c, "ctx");
    char *args_text = args ? cJSON_PrintUnformatted(args) : strdup("{}");
    char *ctx_text = (ctx && !cJSON_IsNull(ctx)) ? cJSON_PrintUnformatted(ctx) : NULL;
    char *out = NULL;
    tn_status st = tn_execute(tk, name ? name : "", args_text, ctx_text, &out);
    free(args_text);
    free(ctx_text);
    tn_toolkit_free(tk); /* ends MCP children before the files are listed */
    if (st != TN_OK) {
        call_failed(r, "tn_execute", st, out);
        return;
    }
    cJSON *act = cJSON_Parse(out);
    if (!act) {
        add_diff(&r->d, "ToolResult is not JSON: %.300s", out);
        tn_string_free(out);
        return;
    }
    tn_string_free(out);
    const cJSON *exp = cJSON_GetObjectItemCaseSensitive(r->c, "expect");
    int host = get(r->c, "hostSpecific") != NULL;
    if (host) {
        const cJSON *ei = get(exp, "isError"), *ai = get(act, "isError");
        if (!ai || (ei->type & 0xFF) != (ai->type & 0xFF)) {
            char *o = show(get(act, "output"));
            add_diff(&r->d, "isError: got %s, want %s (output %s)", cJSON_IsTrue(ai) ? "true" : "false",
                     cJSON_IsTrue(ei) ? "true" : "false", o);
            free(o);
        }
        const char *eo = cJSON_GetStringValue(get(exp, "output")), *ao = cJSON_GetStringValue(get(act, "output"));
        if (eo) {
            const char *last = strrchr(eo, '\n');
            last = last ? last + 1 : eo;
            if (strncmp(last, "exit code ", 10) == 0 && (!ao || !ends_with(ao, last)))
                add_diff(&r->d, "output: got \"%s\", want it to end with \"%s\"", ao ? ao : "", last);
        }
    } else {
        struct cmp o = {get(r->c, "volatile"), output_is_json_text(r->c) ? "output" : NULL, 0};
        compare("", exp, act, &o, &r->d);
    }
    cJSON_Delete(act);

    const cJSON *files = get(r->c, "expectFiles");
    if (files) {
        cJSON *got = cJSON_CreateObject();
        list_files(r->root, "", got);
        const cJSON *f;
        cJSON_ArrayForEach(f, files) {
            const cJSON *g = get(got, f->string);
            if (!g)
                add_diff(&r->d, "expectFiles: %s missing", f->string);
            else if (!host && strcmp(g->valuestring, f->valuestring))
                add_diff(&r->d, "expectFiles: %s = \"%.200s\", want \"%.200s\"", f->string, g->valuestring, f->valuestring);
        }
        cJSON_ArrayForEach(f, got) {
            if (!get(files, f->string)) add_diff(&r->d, "expectFiles: unexpected file %s", f->string);
        }
        cJSON_Delete(got);
    }
    const cJSON *reqs = get(r->c, "expectServerRequests");
    if (reqs) compare_server_requests(r, reqs);
}

static void op_helper(struct run *r) {
    const char *fn = cJSON_GetStringValue(get(r->c, "fn"));
    const cJSON *args = get(r->c, "args");
    char *args_text = args ? cJSON_PrintUnformatted(args) : strdup("[]");
    char *out = NULL;
    tn_status st = tn_helper(fn ? fn : "", args_text, &out);
    free(args_text);
    if (st != TN_OK) {
        call_failed(r, "tn_helper", st, out);
        return;
    }
    cJSON *act = cJSON_Parse(out);
    if (!act) {
        add_diff(&r->d, "helper output is not JSON: %.300s", out);
    } else {
        struct cmp o = {get(r->c, "volatile"), (fn && !strcmp(fn, "argsString")) ? "" : NULL, 0};
        compare("", get(r->c, "expect"), act, &o, &r->d);
    }
    cJSON_Delete(act);
    tn_string_free(out);
}

static void compare_provider_request(struct run *r, const char *where, const cJSON *e, const struct request *q) {
    const char *m = cJSON_GetStringValue(get(e, "method")), *p = cJSON_GetStringValue(get(e, "path"));
    if (!m || strcmp(m, q->method)) add_diff(&r->d, "%s method: got %s, want %s", where, q->method, m);
    if (!p || strcmp(p, q->path)) add_diff(&r->d, "%s path: got %s, want %s", where, q->path, p);
    compare_headers(r, where, get(e, "headers"), q);
    const cJSON *body = get(e, "body");
    if (body) {
        cJSON *act = cJSON_Parse(q->body);
        if (!act) {
            add_diff(&r->d, "%s body is not JSON: %.200s", where, q->body);
        } else {
            char path[64];
            snprintf(path, sizeof path, "%s.body", where);
            struct cmp o = {NULL, NULL, 0};
            compare(path, body, act, &o, &r->d);
        }
        cJSON_Delete(act);
    }
}

static void op_translate(struct run *r) {
    const cJSON *client = get(r->c, "client"), *request = get(r->c, "request");
    cJSON *exp = cJSON_GetObjectItemCaseSensitive(r->c, "expect");
    cJSON *result = cJSON_GetObjectItemCaseSensitive(exp, "result");
    /* A toolkit recorded inside the request is, for us, tn_translate's own
     * toolkit argument. */
    cJSON *req = request ? cJSON_Duplicate(request, 1) : cJSON_CreateObject();
    cJSON *tk_config = cJSON_DetachItemFromObjectCaseSensitive(req, "toolkit");
    tn_toolkit *tk = NULL;
    if (tk_config) {
        char *cfg = cJSON_PrintUnformatted(tk_config);
        char *err = NULL;
        tn_status bs = tn_toolkit_build(cfg, &tk, &err);
        free(cfg);
        cJSON_Delete(tk_config);
        if (bs != TN_OK) {
            cJSON_Delete(req);
            call_failed(r, "tn_toolkit_build", bs, err);
            return;
        }
    }
    char *ct = client ? cJSON_PrintUnformatted(client) : strdup("{}");
    char *rt = cJSON_PrintUnformatted(req);
    cJSON_Delete(req);
    char *out = NULL;
    tn_status st = tn_translate(ct, rt, tk, NULL, &out);
    tn_toolkit_free(tk);
    free(ct);
    free(rt);
    const cJSON *want_err = get(result, "error");
    if (want_err && cJSON_GetArraySize(result) == 1) {
        if (st == TN_OK) {
            add_diff(&r->d, "want failure \"%s\", got result %.300s", cJSON_GetStringValue(want_err), out);
        } else if (st != TN_PROVIDER_ERROR && st != TN_TIMEOUT) {
            if (unsupported_message(out)) {
                r->skip_reason = strdup(out);
                tn_string_free(out);
                return;
            }
            add_diff(&r->d, "want provider_error or timeout, got status %d: %.300s", (int)st, out);
        } else if (!get(r->c, "hostSpecific")) {
            /* "LLM <status>: <provider body>": the message must carry both. */
            const char *msg = cJSON_GetStringValue(want_err);
            cJSON *ej = cJSON_Parse(out);
            const char *got = cJSON_GetStringValue(get(get(ej, "error"), "message"));
            if (msg && strncmp(msg, "LLM ", 4) == 0 && strlen(msg) > 9 && msg[4] >= '0' && msg[4] <= '9' &&
                msg[7] == ':' && msg[8] == ' ') {
                char code[4] = {msg[4], msg[5], msg[6], 0};
                if (!got || !strstr(got, code) || !strstr(got, msg + 9))
                    add_diff(&r->d, "error message \"%s\" does not carry status %s and body \"%s\"",
                             got ? got : "", code, msg + 9);
            }
            cJSON_Delete(ej);
        }
        tn_string_free(out);
    } else {
        if (st != TN_OK) {
            call_failed(r, "tn_translate", st, out);
            return;
        }
        cJSON *act = cJSON_Parse(out);
        tn_string_free(out);
        if (!act) {
            add_diff(&r->d, "translate result is not JSON");
            return;
        }
        cJSON_DeleteItemFromObjectCaseSensitive(act, "raw"); /* ours carries the raw answer */
        static const char *const names[] = {"prompt-tokens", "promptTokens", "completion-tokens", "completionTokens",
                                            "total-tokens", "totalTokens", NULL};
        rename_keys(result, names);
        struct cmp o = {get(r->c, "volatile"), NULL, 0};
        compare("result", result, act, &o, &r->d);
        cJSON_Delete(act);
    }

    int n = r->srv ? r->srv->nreqs : 0;
    const cJSON *list = get(exp, "providerRequests");
    const cJSON *one = get(exp, "providerRequest");
    if (cJSON_IsArray(list)) {
        if (cJSON_GetArraySize(list) != n) {
            add_diff(&r->d, "provider requests: got %d, want %d", n, cJSON_GetArraySize(list));
        } else {
            for (int i = 0; i < n; i++) {
                char where[48];
                snprintf(where, sizeof where, "providerRequests[%d]", i);
                compare_provider_request(r, where, cJSON_GetArrayItem(list, i), &r->srv->reqs[i]);
            }
        }
    } else if (one) {
        if (cJSON_IsNull(one)) {
            if (n != 0) add_diff(&r->d, "provider requests: got %d, want none", n);
        } else if (n != 1) {
            add_diff(&r->d, "provider requests: got %d, want 1", n);
        } else {
            compare_provider_request(r, "providerRequest", one, &r->srv->reqs[0]);
        }
    }
}

/* ---- op run: the client loop ---- */

/* What a run's callbacks saw; they may run concurrently (a turn's tool calls
 * run in parallel), hence the lock. */
struct run_log {
    pthread_mutex_t mu;
    cJSON *hook_calls;    /* [{hook, ...event}] */
    cJSON *wait_requests; /* [Request] */
    const cJSON *wait_spec;
};

struct hook_slot {
    struct run_log *log;
    const char *hook;
    const cJSON *rules;
};

/* The first rule matching the event (optional name, optional turn), without
 * those keys; NULL when none matches (the hook observes). */
static cJSON *rule_reply(const cJSON *rules, const cJSON *event) {
    const cJSON *rule;
    cJSON_ArrayForEach(rule, rules) {
        const cJSON *n = get(rule, "name"), *t = get(rule, "turn");
        const cJSON *en = get(event, "name"), *et = get(event, "turn");
        if (n && !(cJSON_IsString(en) && cJSON_IsString(n) && !strcmp(n->valuestring, en->valuestring))) continue;
        if (t && !(cJSON_IsNumber(et) && cJSON_IsNumber(t) && t->valuedouble == et->valuedouble)) continue;
        cJSON *reply = cJSON_Duplicate(rule, 1);
        cJSON_DeleteItemFromObjectCaseSensitive(reply, "name");
        cJSON_DeleteItemFromObjectCaseSensitive(reply, "turn");
        return reply;
    }
    return NULL;
}

static void hook_callback(void *user_data, const char *event_json, tn_reply *reply) {
    struct hook_slot *h = user_data;
    cJSON *event = cJSON_Parse(event_json);
    if (!event) {
        tn_reply_set_error(reply, "parity: the hook event is not JSON");
        return;
    }
    cJSON *rec = cJSON_Duplicate(event, 1);
    cJSON_AddStringToObject(rec, "hook", h->hook);
    pthread_mutex_lock(&h->log->mu);
    cJSON_AddItemToArray(h->log->hook_calls, rec);
    pthread_mutex_unlock(&h->log->mu);
    cJSON *answer = rule_reply(h->rules, event);
    if (answer) {
        char *text = cJSON_PrintUnformatted(answer);
        tn_reply_set_json(reply, text);
        free(text);
        cJSON_Delete(answer);
    }
    cJSON_Delete(event);
}

/* waitFor as data: {answer} for every Request or {answers} in order (the last
 * repeats); the Answer is {id, ok, data?, reason? (not ok only)}. */
static void wait_callback(void *user_data, const char *request_json, tn_reply *reply) {
    struct run_log *log = user_data;
    cJSON *request = cJSON_Parse(request_json);
    if (!request) {
        tn_reply_set_error(reply, "parity: the Request is not JSON");
        return;
    }
    pthread_mutex_lock(&log->mu);
    int seen = cJSON_GetArraySize(log->wait_requests);
    cJSON_AddItemToArray(log->wait_requests, cJSON_Duplicate(request, 1));
    pthread_mutex_unlock(&log->mu);
    const cJSON *given = get(log->wait_spec, "answer");
    const cJSON *list = get(log->wait_spec, "answers");
    if (!given && cJSON_IsArray(list)) {
        int n = cJSON_GetArraySize(list);
        given = n > 0 ? cJSON_GetArrayItem(list, seen < n ? seen : n - 1) : NULL;
    }
    int ok = cJSON_IsTrue(get(given, "ok"));
    cJSON *answer = cJSON_CreateObject();
    const cJSON *id = get(request, "id");
    cJSON_AddItemToObject(answer, "id", id ? cJSON_Duplicate(id, 1) : cJSON_CreateNull());
    cJSON_AddBoolToObject(answer, "ok", ok);
    if (get(given, "data")) cJSON_AddItemToObject(answer, "data", cJSON_Duplicate(get(given, "data"), 1));
    if (!ok && get(given, "reason")) cJSON_AddItemToObject(answer, "reason", cJSON_Duplicate(get(given, "reason"), 1));
    char *text = cJSON_PrintUnformatted(answer);
    tn_reply_set_json(reply, text);
    free(text);
    cJSON_Delete(answer);
    cJSON_Delete(request);
}

static const char *HOOKS[] = {"beforeLLM", "afterLLM", "beforeTool", "afterTool", NULL};

static int hook_rank(const cJSON *v) {
    const char *h = cJSON_GetStringValue(get(v, "hook"));
    for (int i = 0; HOOKS[i]; i++)
        if (h && !strcmp(h, HOOKS[i])) return i;
    return 9;
}

/* README: sorted by turn, then beforeLLM < beforeTool < afterTool, then id. */
static int cmp_hook_call(const void *a, const void *b) {
    const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
    double tx = cJSON_GetNumberValue(get(x, "turn")), ty = cJSON_GetNumberValue(get(y, "turn"));
    if (tx != ty) return tx < ty ? -1 : 1;
    int hx = hook_rank(x), hy = hook_rank(y);
    if (hx != hy) return hx - hy;
    const char *ix = cJSON_GetStringValue(get(x, "id")), *iy = cJSON_GetStringValue(get(y, "id"));
    return strcmp(ix ? ix : "", iy ? iy : "");
}

static cJSON *sorted_hook_calls(cJSON *calls) {
    int n = cJSON_GetArraySize(calls);
    cJSON **v = calloc((size_t)n + 1, sizeof *v);
    for (int i = 0; i < n; i++) v[i] = cJSON_GetArrayItem(calls, i);
    qsort(v, (size_t)n, sizeof *v, cmp_hook_call);
    cJSON *out = cJSON_CreateArray();
    for (int i = 0; i < n; i++) cJSON_AddItemToArray(out, cJSON_Duplicate(v[i], 1));
    free(v);
    return out;
}

/* `metadata: null` is the same as no metadata. */
static void drop_null_metadata(cJSON *v) {
    if (!v) return;
    if (cJSON_IsObject(v)) {
        const cJSON *m = get(v, "metadata");
        if (m && cJSON_IsNull(m)) cJSON_DeleteItemFromObjectCaseSensitive(v, "metadata");
    }
    cJSON *c;
    cJSON_ArrayForEach(c, v) drop_null_metadata(c);
}

static void compare_run_error(struct run *r, const cJSON *want_err, tn_status st, const char *out) {
    if (st == TN_OK) {
        add_diff(&r->d, "want failure \"%s\", got result %.300s", cJSON_GetStringValue(want_err), out);
        return;
    }
    if (st != TN_PROVIDER_ERROR && st != TN_TIMEOUT) {
        add_diff(&r->d, "want provider_error or timeout, got status %d: %.300s", (int)st, out);
        return;
    }
    const char *msg = cJSON_GetStringValue(want_err);
    cJSON *ej = cJSON_Parse(out);
    const char *got = cJSON_GetStringValue(get(get(ej, "error"), "message"));
    if (msg && strncmp(msg, "LLM ", 4) == 0 && strlen(msg) > 9 && msg[4] >= '0' && msg[4] <= '9' && msg[7] == ':' &&
        msg[8] == ' ') {
        char code[4] = {msg[4], msg[5], msg[6], 0};
        if (!got || !strstr(got, code) || !strstr(got, msg + 9))
            add_diff(&r->d, "error message \"%s\" does not carry status %s and body \"%s\"", got ? got : "", code,
                     msg + 9);
    }
    cJSON_Delete(ej);
}

static void op_run(struct run *r) {
    cJSON *exp = cJSON_GetObjectItemCaseSensitive(r->c, "expect");
    tn_toolkit *tk = build(r);
    if (!tk) return;
    const cJSON *client = get(r->c, "client");
    char *ct = client ? cJSON_PrintUnformatted(client) : strdup("{}");
    tn_client *cl = NULL;
    char *err = NULL;
    tn_status st = tn_client_new(ct, &cl, &err);
    free(ct);
    if (st != TN_OK) {
        tn_toolkit_free(tk);
        call_failed(r, "tn_client_new", st, err);
        return;
    }
    struct run_log log;
    pthread_mutex_init(&log.mu, NULL);
    log.hook_calls = cJSON_CreateArray();
    log.wait_requests = cJSON_CreateArray();
    log.wait_spec = get(r->c, "waitFor");
    struct hook_slot slots[4];
    int nslots = 0;
    const cJSON *hooks = get(r->c, "hooks");
    for (int i = 0; HOOKS[i]; i++) {
        const cJSON *rules = get(hooks, HOOKS[i]);
        if (!cJSON_IsArray(rules)) continue;
        slots[nslots] = (struct hook_slot){&log, HOOKS[i], rules};
        if (tn_client_set_callback(cl, HOOKS[i], hook_callback, &slots[nslots], NULL, &err) != TN_OK) {
            add_diff(&r->d, "tn_client_set_callback %s: %s", HOOKS[i], err);
            tn_string_free(err);
        }
        nslots++;
    }
    if (log.wait_spec && !cJSON_IsNull(log.wait_spec)) {
        if (tn_client_set_callback(cl, "waitFor", wait_callback, &log, NULL, &err) != TN_OK) {
            add_diff(&r->d, "tn_client_set_callback waitFor: %s", err);
            tn_string_free(err);
        }
    }
    cJSON *request = cJSON_CreateObject();
    const cJSON *prompt = get(r->c, "prompt"), *history = get(r->c, "history");
    cJSON_AddItemToObject(request, "prompt", prompt ? cJSON_Duplicate(prompt, 1) : cJSON_CreateString(""));
    if (history) cJSON_AddItemToObject(request, "history", cJSON_Duplicate(history, 1));
    char *rt = cJSON_PrintUnformatted(request);
    cJSON_Delete(request);
    char *out = NULL;
    st = tn_run(cl, tk, rt, NULL, NULL, &out);
    free(rt);
    tn_client_free(cl);
    tn_toolkit_free(tk); /* ends MCP children before the files are listed */

    cJSON *result = cJSON_GetObjectItemCaseSensitive(exp, "result");
    const cJSON *want_err = get(result, "error");
    if (want_err && cJSON_GetArraySize(result) == 1) {
        compare_run_error(r, want_err, st, out);
        tn_string_free(out);
    } else if (st != TN_OK) {
        call_failed(r, "tn_run", st, out);
    } else {
        cJSON *act = cJSON_Parse(out);
        tn_string_free(out);
        if (!act) {
            add_diff(&r->d, "RunResult is not JSON");
        } else {
            static const char *const names[] = {"tool-calls", "toolCalls", "tool-call-count", "toolCallCount",
                                                "prompt-tokens", "promptTokens", "completion-tokens",
                                                "completionTokens", "total-tokens", "totalTokens", NULL};
            rename_keys(result, names);
            drop_null_metadata(result);
            drop_null_metadata(act);
            struct cmp o = {get(r->c, "volatile"), NULL, 1};
            compare("result", result, act, &o, &r->d);
            cJSON_Delete(act);
        }
    }
    struct cmp o = {get(r->c, "volatile"), NULL, 1};
    cJSON *want_waits = cJSON_GetObjectItemCaseSensitive(exp, "waitForRequests");
    if (want_waits) compare("waitForRequests", want_waits, log.wait_requests, &o, &r->d);
    cJSON *want_hooks = cJSON_GetObjectItemCaseSensitive(exp, "hookCalls");
    if (want_hooks) {
        cJSON *got = sorted_hook_calls(log.hook_calls);
        drop_null_metadata(want_hooks);
        drop_null_metadata(got);
        compare("hookCalls", want_hooks, got, &o, &r->d);
        cJSON_Delete(got);
    }
    cJSON_Delete(log.hook_calls);
    cJSON_Delete(log.wait_requests);
    pthread_mutex_destroy(&log.mu);

    int cap = r->srv ? r->srv->nreqs : 0;
    const struct request **list = calloc((size_t)cap + 1, sizeof *list);
    int n = pick_requests(r->srv, 0, list, cap);
    const cJSON *want = get(exp, "providerRequests");
    if (cJSON_GetArraySize(want) != n) {
        add_diff(&r->d, "provider requests: got %d, want %d", n, cJSON_GetArraySize(want));
    } else {
        for (int i = 0; i < n; i++) {
            char where[48];
            snprintf(where, sizeof where, "providerRequests[%d]", i);
            compare_provider_request(r, where, cJSON_GetArrayItem(want, i), list[i]);
        }
    }
    const cJSON *server = get(r->c, "expectServerRequests");
    if (server) {
        n = pick_requests(r->srv, 1, list, cap);
        compare_request_list(r, server, list, n);
    }
    free(list);

    const cJSON *files = get(r->c, "expectFiles");
    if (files) {
        cJSON *got = cJSON_CreateObject();
        list_files(r->root, "", got);
        const cJSON *f;
        cJSON_ArrayForEach(f, files) {
            const cJSON *g = get(got, f->string);
            if (!g)
                add_diff(&r->d, "expectFiles: %s missing", f->string);
            else if (strcmp(g->valuestring, f->valuestring))
                add_diff(&r->d, "expectFiles: %s = \"%.200s\", want \"%.200s\"", f->string, g->valuestring,
                         f->valuestring);
        }
        cJSON_ArrayForEach(f, got) {
            if (!get(files, f->string)) add_diff(&r->d, "expectFiles: unexpected file %s", f->string);
        }
        cJSON_Delete(got);
    }
}

/* Does the library connect MCP servers yet? A toolkit with one unspawnable
 * server must list that server in its status. */
static int mcp_wired(void) {
    tn_toolkit *tk = NULL;
    char *err = NULL, *out = NULL;
    if (tn_toolkit_build("{\"builtins\":false,\"mcpConfig\":{\"mcpServers\":{\"tn-probe\":"
                         "{\"command\":[\"/nonexistent/tn-probe\"]}}}}",
                         &tk, &err) != TN_OK) {
        tn_string_free(err);
        return 0;
    }
    int wired = 0;
    if (tn_render(tk, "status", &out) == TN_OK) {
        cJSON *st = cJSON_Parse(out);
        wired = get(get(st, "statuses"), "tn-probe") != NULL;
        cJSON_Delete(st);
    }
    tn_string_free(out);
    tn_toolkit_free(tk);
    return wired;
}

static int supported_feature(const char *feature) {
    const char *env = getenv("TN_PARITY_SUPPORTED");
    if (!env || !*env) return in_list(SUPPORTED, feature) || (mcp_supported && !strcmp(feature, "mcp"));
    char *copy = strdup(env), *save = NULL;
    int found = 0;
    for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ') t++;
        if (!strcmp(t, feature)) found = 1;
    }
    free(copy);
    return found;
}

/* The capability a case needs that is missing, or NULL. */
static const char *missing_capability(const cJSON *c) {
    const char *op = cJSON_GetStringValue(get(c, "op"));
    if (!op || !supported_feature(op)) return op ? op : "(no op)";
    const cJSON *tk = get(c, "toolkit");
    int mcp = get(tk, "mcpConfig") != NULL, http = get(tk, "httpTools") != NULL;
    if (mcp && !supported_feature("mcp")) return "mcp";
    if (http && !supported_feature("httpTools")) return "httpTools";
    if (!strcmp(op, "execute") && !mcp && !http && name_is_builtin(cJSON_GetStringValue(get(c, "name"))) &&
        !supported_feature("builtinExec"))
        return "builtinExec";
    return NULL;
}

static int has_key(const cJSON *c, const char *k) { return get(c, k) != NULL; }

static enum outcome run_case(const cJSON *original, char **why) {
    *why = NULL;
    const char *missing = missing_capability(original);
    if (missing) {
        char tmp[128];
        snprintf(tmp, sizeof tmp, "needs %s", missing);
        *why = strdup(tmp);
        return SKIP;
    }
    char tmpl[] = "/tmp/tnparity-XXXXXX";
    if (!mkdtemp(tmpl)) {
        *why = strdup("mkdtemp failed");
        return FAIL;
    }
    char root[PATH_MAX];
    if (!realpath(tmpl, root)) snprintf(root, sizeof root, "%s", tmpl);

    struct run r = {0};
    r.root = root;
    r.c = cJSON_Duplicate(original, 1);
    substitute(r.c, "${ROOT}", root);
    char *text = cJSON_PrintUnformatted(r.c);
    int need_server = has_key(r.c, "serverResponse") || has_key(r.c, "serverResponses") ||
                      has_key(r.c, "providerResponse") || has_key(r.c, "providerResponses") ||
                      strstr(text, "${BASE}") != NULL;
    free(text);
    if (need_server) {
        r.srv = server_start();
        if (!r.srv) {
            *why = strdup("mock server did not start");
            cJSON_Delete(r.c);
            return FAIL;
        }
        char base[64];
        snprintf(base, sizeof base, "http://127.0.0.1:%d", r.srv->port);
        substitute(r.c, "${BASE}", base);
        const char *singles[] = {"serverResponse", "providerResponse"};
        const char *lists[] = {"serverResponses", "providerResponses"};
        pthread_mutex_lock(&r.srv->mu);
        for (int i = 0; i < 2; i++) {
            const cJSON *one = get(r.c, singles[i]);
            if (cJSON_IsObject(one)) cJSON_AddItemToArray(r.srv->responses, cJSON_Duplicate(one, 1));
        }
        /* op run: HTTP tools (paths under /tool/) are answered from
         * serverResponses, the provider from providerResponses. */
        int routed = !strcmp(cJSON_GetStringValue(get(r.c, "op")) ? cJSON_GetStringValue(get(r.c, "op")) : "", "run");
        if (routed) r.srv->tool_responses = cJSON_CreateArray();
        for (int i = 0; i < 2; i++) {
            const cJSON *e;
            cJSON *into = (routed && i == 0) ? r.srv->tool_responses : r.srv->responses;
            cJSON_ArrayForEach(e, get(r.c, lists[i])) cJSON_AddItemToArray(into, cJSON_Duplicate(e, 1));
        }
        pthread_mutex_unlock(&r.srv->mu);
    }

    char old_cwd[PATH_MAX];
    int nenv = 0;
    struct saved_env *saved = NULL;
    if (write_tree(root, get(r.c, "files"), get(r.c, "symlinks")) != 0) {
        r.error = strdup("writing the case's files failed");
    } else if (!getcwd(old_cwd, sizeof old_cwd) || chdir(root) != 0) {
        r.error = strdup("chdir to ROOT failed");
    } else {
        saved = apply_env(get(r.c, "env"), &nenv);
        const char *op = cJSON_GetStringValue(get(r.c, "op"));
        if (!strcmp(op, "render"))
            op_render(&r);
        else if (!strcmp(op, "loadSkills"))
            op_load_skills(&r);
        else if (!strcmp(op, "execute"))
            op_execute(&r);
        else if (!strcmp(op, "helper"))
            op_helper(&r);
        else if (!strcmp(op, "translate"))
            op_translate(&r);
        else if (!strcmp(op, "run"))
            op_run(&r);
        else
            r.skip_reason = strdup("unknown op");
        restore_env(saved, nenv);
        if (chdir(old_cwd) != 0) r.error = strdup("chdir back failed");
    }
    server_stop(r.srv);
    nftw(root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    cJSON_Delete(r.c);

    enum outcome result;
    if (r.skip_reason) {
        *why = r.skip_reason;
        free(r.error);
        free(r.d.text.p);
        return SKIP;
    }
    if (r.error) {
        struct buf b = {0};
        buf_printf(&b, "  %s\n", r.error);
        free(r.error);
        free(r.d.text.p);
        *why = b.p;
        return FAIL;
    }
    if (r.d.count > 0) {
        if (r.d.count > 8) buf_printf(&r.d.text, "  ... and %d more\n", r.d.count - 8);
        *why = r.d.text.p;
        result = FAIL;
    } else {
        free(r.d.text.p);
        result = PASS;
    }
    return result;
}

/* ------------------------------------------------------------------ */
/* driver                                                             */

static cJSON *load_divergences(const char *path, cJSON *into) {
    char *text = read_file(path, NULL);
    if (!text) return into;
    cJSON *doc = cJSON_Parse(text);
    free(text);
    if (!doc) {
        fprintf(stderr, "parity: %s is not valid JSON\n", path);
        exit(2);
    }
    const cJSON *d;
    cJSON_ArrayForEach(d, get(doc, "divergences")) {
        if (!get(into, d->string)) cJSON_AddTrueToObject(into, d->string);
    }
    cJSON_Delete(doc);
    return into;
}

struct files {
    char **v;
    int n;
};

static void collect(const char *dir, struct files *out) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.') continue;
        char full[2 * PATH_MAX];
        snprintf(full, sizeof full, "%s/%s", dir, de->d_name);
        struct stat st;
        if (stat(full, &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            collect(full, out);
        } else if (ends_with(de->d_name, ".json") && strcmp(de->d_name, "divergences.json") &&
                   strcmp(de->d_name, "proposed-divergences.json")) {
            out->v = realloc(out->v, sizeof *out->v * (size_t)(out->n + 1));
            out->v[out->n++] = strdup(full);
        }
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

int main(void) {
    signal(SIGPIPE, SIG_IGN);
    mcp_supported = mcp_wired();
    const char *repo = getenv("TN_REPO_ROOT");
    char cwd[PATH_MAX];
    if (!repo) repo = getcwd(cwd, sizeof cwd);
    char vec[PATH_MAX], path[2 * PATH_MAX];
    const char *dir_env = getenv("TN_CONFORMANCE_DIR");
    if (dir_env && *dir_env)
        snprintf(vec, sizeof vec, "%s", dir_env);
    else
        snprintf(vec, sizeof vec, "%s/tests/conformance/vectors", repo);

    cJSON *div = cJSON_CreateObject(), *proposed = cJSON_CreateObject();
    snprintf(path, sizeof path, "%s/divergences.json", vec);
    load_divergences(path, div);
    snprintf(path, sizeof path, "%s/../divergences.json", vec);
    load_divergences(path, div);
    if (cJSON_GetArraySize(div) == 0) {
        snprintf(path, sizeof path, "%s/tests/conformance/divergences.json", repo);
        load_divergences(path, div);
    }
    snprintf(path, sizeof path, "%s/tests/conformance/proposed-divergences.json", repo);
    load_divergences(path, proposed);
    snprintf(path, sizeof path, "%s/proposed-divergences.json", vec);
    load_divergences(path, proposed);
    snprintf(path, sizeof path, "%s/../proposed-divergences.json", vec);
    load_divergences(path, proposed);

    struct files files = {0};
    collect(vec, &files);
    if (files.n == 0) {
        fprintf(stderr, "parity: no vector files under %s\n", vec);
        return 2;
    }
    qsort(files.v, (size_t)files.n, sizeof *files.v, cmp_str);

    int P = 0, F = 0, D = 0, S = 0, X = 0;
    struct buf failures = {0};
    int verbose = getenv("TN_PARITY_VERBOSE") != NULL;
    for (int i = 0; i < files.n; i++) {
        char *text = read_file(files.v[i], NULL);
        cJSON *doc = text ? cJSON_Parse(text) : NULL;
        free(text);
        if (!doc) {
            fprintf(stderr, "parity: %s is not valid JSON\n", files.v[i]);
            return 2;
        }
        const cJSON *cases = cJSON_IsArray(doc) ? doc : get(doc, "cases");
        int p = 0, f = 0, d = 0, s = 0, x = 0;
        /* Why cases were skipped, printed with the file's line so no skipped
         * count goes unexplained (the first 4 distinct reasons, counted). */
        char *why_text[4] = {0};
        int why_n[4] = {0}, why_other = 0;
        const cJSON *c;
        cJSON_ArrayForEach(c, cases) {
            const char *id = cJSON_GetStringValue(get(c, "id"));
            if (!id) id = "(no id)";
            if (get(div, id)) {
                d++;
                continue;
            }
            if (get(proposed, id)) {
                x++;
                continue;
            }
            char *why = NULL;
            switch (run_case(c, &why)) {
            case PASS: p++; break;
            case SKIP: {
                s++;
                if (verbose) fprintf(stderr, "skip %s: %s\n", id, why ? why : "");
                const char *w = why ? why : "no reason given";
                int k = 0;
                while (k < 4 && why_text[k] && strcmp(why_text[k], w) != 0) k++;
                if (k == 4) {
                    why_other++;
                } else {
                    if (!why_text[k]) why_text[k] = strdup(w);
                    why_n[k]++;
                }
                break;
            }
            case FAIL:
                f++;
                buf_printf(&failures, "FAIL %s\n", id);
                if (why) buf_add(&failures, why, strlen(why));
                break;
            }
            free(why);
        }
        const char *rel = files.v[i] + strlen(vec);
        while (*rel == '/') rel++;
        printf("parity[%s]: %d passed, %d failed, %d divergences, %d skipped, %d proposed", rel, p, f, d, s, x);
        for (int k = 0; k < 4 && why_text[k]; k++) {
            printf("%s%d %s", k == 0 ? " (skipped: " : "; ", why_n[k], why_text[k]);
            free(why_text[k]);
        }
        if (why_other) printf("; %d for other reasons (TN_PARITY_VERBOSE=1 lists them)", why_other);
        printf("%s\n", s ? ")" : "");
        fflush(stdout);
        P += p, F += f, D += d, S += s, X += x;
        cJSON_Delete(doc);
        free(files.v[i]);
    }
    free(files.v);
    if (failures.p) fputs(failures.p, stdout);
    free(failures.p);
    printf("parity: %d passed, %d failed, %d divergences, %d skipped (%d proposed divergences)\n", P, F, D, S, X);
    cJSON_Delete(div);
    cJSON_Delete(proposed);
    return F > 0 ? 1 : 0;
}
