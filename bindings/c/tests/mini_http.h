/*
 * A tiny keep-alive HTTP/1.1 server on 127.0.0.1 for the C tests: one thread
 * per connection, GET requests without a body. Routes:
 *   /echo/<id>  200 "echo:<id>"
 *   /ok         200 "fine"   (the request head is kept in last_head)
 *   /no         401 "denied"
 *   /slow       200 "late" after 800 ms
 *   anything else 404
 * Include after the system headers; the includer defines FAIL(...).
 */
#ifndef TN_MINI_HTTP_H
#define TN_MINI_HTTP_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define MAX_CONNS 256

struct server {
    int listen_fd;
    int port;
    pthread_t acceptor;
    pthread_mutex_t lock;
    pthread_t conns[MAX_CONNS];
    int conn_fds[MAX_CONNS];
    int n_conns;
    atomic_long requests;
    char last_head[4096]; /* under lock */
};

struct conn_arg {
    struct server *srv;
    int fd;
};

static int write_all(int fd, const char *p, size_t n) {
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void *serve_conn(void *p) {
    struct conn_arg a = *(struct conn_arg *)p;
    free(p);
    char buf[16384];
    size_t have = 0;
    for (;;) {
        char *end = memmem(buf, have, "\r\n\r\n", 4);
        if (end == NULL) {
            if (have == sizeof buf) break;
            ssize_t r = recv(a.fd, buf + have, sizeof buf - have, 0);
            if (r < 0 && errno == EINTR) continue;
            if (r <= 0) break;
            have += (size_t)r;
            continue;
        }
        size_t head_len = (size_t)(end - buf) + 4;
        /* GET only: no body expected. Request line: GET /echo/<id> HTTP/1.1 */
        char body[128];
        int status = 200;
        if (strncmp(buf, "GET /echo/", 10) == 0) {
            const char *id = buf + 10;
            size_t n = strcspn(id, " ?\r\n");
            if (n > 64) n = 64;
            snprintf(body, sizeof body, "echo:%.*s", (int)n, id);
        } else if (strncmp(buf, "GET /ok ", 8) == 0 || strncmp(buf, "GET /ok?", 8) == 0) {
            pthread_mutex_lock(&a.srv->lock);
            size_t n = head_len < sizeof a.srv->last_head ? head_len : sizeof a.srv->last_head - 1;
            memcpy(a.srv->last_head, buf, n);
            a.srv->last_head[n] = '\0';
            pthread_mutex_unlock(&a.srv->lock);
            snprintf(body, sizeof body, "fine");
        } else if (strncmp(buf, "GET /no", 7) == 0) {
            status = 401;
            snprintf(body, sizeof body, "denied");
        } else if (strncmp(buf, "GET /slow", 9) == 0) {
            struct timespec ts = {0, 800 * 1000 * 1000};
            nanosleep(&ts, NULL);
            snprintf(body, sizeof body, "late");
        } else {
            status = 404;
            snprintf(body, sizeof body, "no route");
        }
        char resp[512];
        int len = snprintf(resp, sizeof resp,
                           "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\n"
                           "Content-Length: %zu\r\n\r\n%s",
                           status, status == 200 ? "OK" : status == 401 ? "Unauthorized" : "Not Found",
                           strlen(body), body);
        /* Counted before the answer goes out: a caller that has its answer
         * may read the count at once. */
        atomic_fetch_add(&a.srv->requests, 1);
        if (write_all(a.fd, resp, (size_t)len) != 0) break;
        memmove(buf, buf + head_len, have - head_len);
        have -= head_len;
    }
    close(a.fd);
    return NULL;
}

static void *accept_loop(void *p) {
    struct server *srv = p;
    for (;;) {
        int fd = accept(srv->listen_fd, NULL, NULL);
        if (fd < 0) {
            if (errno == EINTR || errno == ECONNABORTED) continue;
            return NULL; /* shut down */
        }
        pthread_mutex_lock(&srv->lock);
        if (srv->n_conns == MAX_CONNS) {
            pthread_mutex_unlock(&srv->lock);
            close(fd);
            FAIL("more than %d connections: keep-alive is not working", MAX_CONNS);
            continue;
        }
        struct conn_arg *a = malloc(sizeof *a);
        if (a == NULL) abort();
        a->srv = srv;
        a->fd = fd;
        srv->conn_fds[srv->n_conns] = fd;
        if (pthread_create(&srv->conns[srv->n_conns], NULL, serve_conn, a) != 0) abort();
        srv->n_conns++;
        pthread_mutex_unlock(&srv->lock);
    }
}

static int server_start(struct server *srv) {
    memset(srv, 0, sizeof *srv);
    pthread_mutex_init(&srv->lock, NULL);
    srv->listen_fd = socket(AF_INET, SOCK_STREAM, 0);
    if (srv->listen_fd < 0) return -1;
    struct sockaddr_in addr = {0};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t alen = sizeof addr;
    if (bind(srv->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(srv->listen_fd, 128) != 0 ||
        getsockname(srv->listen_fd, (struct sockaddr *)&addr, &alen) != 0)
        return -1;
    srv->port = ntohs(addr.sin_port);
    return pthread_create(&srv->acceptor, NULL, accept_loop, srv);
}

/* After the toolkit (and with it the client's pool) is gone. */
static void server_stop(struct server *srv) {
    shutdown(srv->listen_fd, SHUT_RDWR);
    pthread_join(srv->acceptor, NULL);
    close(srv->listen_fd);
    pthread_mutex_lock(&srv->lock);
    for (int i = 0; i < srv->n_conns; i++) shutdown(srv->conn_fds[i], SHUT_RDWR);
    int n = srv->n_conns;
    pthread_mutex_unlock(&srv->lock);
    for (int i = 0; i < n; i++) pthread_join(srv->conns[i], NULL);
    pthread_mutex_destroy(&srv->lock);
}

#endif
