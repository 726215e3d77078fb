/*
 * The open-loop load generator of make bench-gateway's latency row (scripts/bench-gateway.sh),
 * in C on libcurl's multi interface: one thread, no interpreter, so its own lag stays far below
 * the latencies it measures (the Python generator's send lag p99 was 86 ms on a loaded 2-core
 * machine: more than the gateway's own time).
 *
 *   gateway_rate --items FILE --rate R --seconds S [--connections C] --out TSV URL...
 *
 * Single-notification POSTs to URL/v1/notifications, request i due at start + i/R whatever the
 * answers do (open loop); the URLs round robin; FILE's lines are the bodies, round robin. At
 * most C keep-alive connections (HTTP/1.1, TCP_NODELAY) in all (64 by default); a request due
 * while all are busy waits in libcurl's queue, and that wait is counted: the latency is measured
 * from each request's due time (no coordinated omission). Also measured from the send time
 * (libcurl's pre-transfer point: the connection is free and the request is about to be written),
 * so that the queue in front of the connections shows apart.
 *
 * Writes "id<TAB>due wall ms<TAB>answer wall ms<TAB>latency from due µs" per notification the
 * answer says is queued to TSV (as gateway_load.py rate does), and prints one JSON object on
 * stdout: sent, statuses, queued, p50Ms/p99Ms/maxMs from the due time, sendP50Ms/sendP99Ms/
 * sendMaxMs from the send time, lagP99Ms (send time minus due time), achievedPerSecond.
 * The API key is read from $PUSHSEAL_API_KEY (never argv). Between requests it sleeps in
 * curl_multi_poll on libcurl's sockets and a timerfd set to the next due time (Linux), so it uses
 * almost no CPU of the cores the server under test runs on.
 */
#define _POSIX_C_SOURCE 200809L
#include <curl/curl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

static int64_t mono_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static int64_t wall_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "gateway_rate: error: %s\n", what);
  exit(1);
}

typedef struct {
  CURL *easy;
  struct curl_slist *headers;
  long index;
  int64_t due, added;
  char *answer;
  size_t length, capacity;
} Request;

typedef struct {
  int64_t due_us, send_us, lag_us;
  long status;
  char id[40];
} Result;

static size_t collect(char *data, size_t size, size_t n, void *user) {
  Request *r = user;
  size_t more = size * n;
  if (r->length + more + 1 > r->capacity) {
    size_t cap = (r->length + more + 1) * 2;
    char *p = realloc(r->answer, cap);
    if (!p) return 0;
    r->answer = p;
    r->capacity = cap;
  }
  memcpy(r->answer + r->length, data, more);
  r->length += more;
  r->answer[r->length] = 0;
  return more;
}

static int by_value(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return (x > y) - (x < y);
}

static double percentile_ms(int64_t *sorted, long n, double p) {
  if (n == 0) return -1;
  long i = (long)(p / 100 * (double)(n - 1) + 0.5);
  if (i >= n) i = n - 1;
  return (double)sorted[i] / 1000.0;
}

int main(int argc, char **argv) {
  const char *items_path = NULL, *out_path = NULL;
  double rate = 0, seconds = 0;
  long connections = 64;
  char **urls = NULL;
  int url_count = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--items") && i + 1 < argc) items_path = argv[++i];
    else if (!strcmp(argv[i], "--out") && i + 1 < argc) out_path = argv[++i];
    else if (!strcmp(argv[i], "--rate") && i + 1 < argc) rate = atof(argv[++i]);
    else if (!strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = atof(argv[++i]);
    else if (!strcmp(argv[i], "--connections") && i + 1 < argc) connections = atol(argv[++i]);
    else if (argv[i][0] == '-') die("usage: gateway_rate --items FILE --rate R --seconds S [--connections C] --out TSV URL...");
    else { urls = argv + i; url_count = argc - i; break; }
  }
  if (!items_path || !out_path || rate <= 0 || seconds <= 0 || connections < 1 || url_count == 0)
    die("usage: gateway_rate --items FILE --rate R --seconds S [--connections C] --out TSV URL...");
  const char *key = getenv("PUSHSEAL_API_KEY");
  if (!key) key = "";

  /* The bodies: FILE's non-empty lines. */
  FILE *f = fopen(items_path, "r");
  if (!f) die("the items file cannot be read");
  char **items = NULL;
  long item_count = 0;
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  while ((got = getline(&line, &cap, f)) > 0) {
    while (got > 0 && (line[got - 1] == '\n' || line[got - 1] == '\r')) line[--got] = 0;
    if (got == 0) continue;
    items = realloc(items, sizeof *items * (size_t)(item_count + 1));
    if (!items) die("out of memory");
    items[item_count++] = strdup(line);
  }
  free(line);
  fclose(f);
  if (item_count == 0) die("the items file has no line");

  char **targets = malloc(sizeof *targets * (size_t)url_count);
  if (!targets) die("out of memory");
  for (int u = 0; u < url_count; u++) {
    targets[u] = malloc(strlen(urls[u]) + 32);
    if (!targets[u]) die("out of memory");
    sprintf(targets[u], "%s/v1/notifications", urls[u]);
  }
  char *authorization = malloc(strlen(key) + 32);
  if (!authorization) die("out of memory");
  sprintf(authorization, "Authorization: Bearer %s", key);

  if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0) die("libcurl did not start");
  CURLM *multi = curl_multi_init();
  if (!multi) die("libcurl did not start");
  curl_multi_setopt(multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, connections);
  curl_multi_setopt(multi, CURLMOPT_MAXCONNECTS, connections);
  curl_multi_setopt(multi, CURLMOPT_PIPELINING, (long)CURLPIPE_NOTHING);

  long total = (long)(rate * seconds);
  Result *results = calloc((size_t)total + 1, sizeof *results);
  if (!results) die("out of memory");
  Request **spare = calloc((size_t)total + 1, sizeof *spare);
  long spare_count = 0;
  if (!spare) die("out of memory");

  int timer = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (timer < 0) die("timerfd_create failed");
  int64_t start_mono = mono_ns() + 200000000, start_wall = wall_ns() + 200000000;
  long next = 0, done = 0, failures = 0;
  int running = 0;
  while (done < total) {
    int64_t now = mono_ns();
    while (next < total && start_mono + (int64_t)((double)next * 1e9 / rate) <= now) {
      Request *r = spare_count > 0 ? spare[--spare_count] : calloc(1, sizeof *r);
      if (!r) die("out of memory");
      if (!r->easy) {
        r->easy = curl_easy_init();
        if (!r->easy) die("libcurl did not make a handle");
        r->headers = curl_slist_append(NULL, authorization);
        r->headers = curl_slist_append(r->headers, "Content-Type: application/json");
        r->headers = curl_slist_append(r->headers, "Expect:");
        curl_easy_setopt(r->easy, CURLOPT_HTTPHEADER, r->headers);
        curl_easy_setopt(r->easy, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(r->easy, CURLOPT_WRITEDATA, r);
        curl_easy_setopt(r->easy, CURLOPT_PRIVATE, r);
        curl_easy_setopt(r->easy, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(r->easy, CURLOPT_TIMEOUT, 120L);
        curl_easy_setopt(r->easy, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
      }
      r->index = next;
      r->due = start_mono + (int64_t)((double)next * 1e9 / rate);
      r->length = 0;
      const char *body = items[next % item_count];
      curl_easy_setopt(r->easy, CURLOPT_URL, targets[next % url_count]);
      curl_easy_setopt(r->easy, CURLOPT_POSTFIELDS, body);
      curl_easy_setopt(r->easy, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
      r->added = mono_ns();
      if (curl_multi_add_handle(multi, r->easy) != CURLM_OK) die("libcurl refused a request");
      next++;
    }
    if (curl_multi_perform(multi, &running) != CURLM_OK) die("libcurl failed");
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(multi, &left))) {
      if (m->msg != CURLMSG_DONE) continue;
      int64_t answered = mono_ns();
      Request *r = NULL;
      curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&r);
      if (!r) die("libcurl lost a request");
      Result *o = &results[r->index];
      long status = 0;
      if (m->data.result == CURLE_OK) curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
      else if (failures++ == 0) fprintf(stderr, "gateway_rate: request %ld failed: %s\n", r->index, curl_easy_strerror(m->data.result));
      curl_off_t pre = 0;
      curl_easy_getinfo(r->easy, CURLINFO_PRETRANSFER_TIME_T, &pre);
      int64_t sent = r->added + (int64_t)pre * 1000;
      o->status = status;
      o->due_us = (answered - r->due) / 1000;
      o->send_us = (answered - sent) / 1000;
      o->lag_us = (sent - r->due) / 1000;
      o->id[0] = 0;
      if (status == 202 && r->answer) {
        /* {"notifications":[{"id":"…","recipient":…,"status":"queued"}]}: the first id. */
        const char *p = strstr(r->answer, "\"id\":\"");
        if (p && strstr(r->answer, "\"status\":\"queued\"")) {
          p += 6;
          size_t n = 0;
          while (p[n] && p[n] != '"' && n < sizeof o->id - 1) n++;
          memcpy(o->id, p, n);
          o->id[n] = 0;
        }
      }
      curl_multi_remove_handle(multi, r->easy);
      spare[spare_count++] = r;
      done++;
    }
    if (done >= total) break;
    /* Sleep until the next request is due or an answer arrives: the due time on a timerfd
       (absolute, ns), polled with libcurl's sockets. A millisecond timeout cannot say "in 0.7 ms",
       and polling with 0 until then kept a core busy for about half of every interval at 500/s,
       taken from the server being measured on the same cores. */
    if (next < total) {
      int64_t due = start_mono + (int64_t)((double)next * 1e9 / rate);
      if (due > mono_ns()) {
        struct itimerspec at = {{0, 0}, {(time_t)(due / 1000000000), (long)(due % 1000000000)}};
        if (timerfd_settime(timer, TFD_TIMER_ABSTIME, &at, NULL) != 0) die("timerfd_settime failed");
        struct curl_waitfd wake = {timer, CURL_WAIT_POLLIN, 0};
        curl_multi_poll(multi, &wake, 1, 1000, NULL);
        uint64_t expirations;
        if (read(timer, &expirations, sizeof expirations) < 0) { /* not expired yet: an answer woke us */ }
      }
    } else {
      curl_multi_poll(multi, NULL, 0, 100, NULL);
    }
  }
  int64_t elapsed = mono_ns() - start_mono;

  FILE *out = fopen(out_path, "w");
  if (!out) die("the TSV cannot be written");
  long queued = 0;
  long statuses[600] = {0};
  int64_t *due = malloc(sizeof *due * (size_t)(total + 1)), *send = malloc(sizeof *send * (size_t)(total + 1)),
          *lag = malloc(sizeof *lag * (size_t)(total + 1));
  if (!due || !send || !lag) die("out of memory");
  for (long i = 0; i < total; i++) {
    Result *o = &results[i];
    statuses[o->status >= 0 && o->status < 600 ? o->status : 0]++;
    due[i] = o->due_us;
    send[i] = o->send_us;
    lag[i] = o->lag_us;
    if (o->id[0]) {
      queued++;
      int64_t due_wall_ms = (start_wall + (int64_t)((double)i * 1e9 / rate)) / 1000000;
      fprintf(out, "%s\t%lld\t%lld\t%lld\n", o->id, (long long)due_wall_ms, (long long)(due_wall_ms + o->due_us / 1000), (long long)o->due_us);
    }
  }
  fclose(out);
  qsort(due, (size_t)total, sizeof *due, by_value);
  qsort(send, (size_t)total, sizeof *send, by_value);
  qsort(lag, (size_t)total, sizeof *lag, by_value);
  printf("{\"sent\":%ld,\"statuses\":{", total);
  int first = 1;
  for (int s = 0; s < 600; s++) {
    if (!statuses[s]) continue;
    printf("%s\"%d\":%ld", first ? "" : ",", s, statuses[s]);
    first = 0;
  }
  printf("},\"queued\":%ld,\"p50Ms\":%.2f,\"p99Ms\":%.2f,\"maxMs\":%.2f,\"sendP50Ms\":%.2f,\"sendP99Ms\":%.2f,\"sendMaxMs\":%.2f,"
         "\"lagP99Ms\":%.2f,\"achievedPerSecond\":%.1f}\n",
         queued, percentile_ms(due, total, 50), percentile_ms(due, total, 99), total ? (double)due[total - 1] / 1000.0 : -1,
         percentile_ms(send, total, 50), percentile_ms(send, total, 99), total ? (double)send[total - 1] / 1000.0 : -1,
         percentile_ms(lag, total, 99), (double)total / ((double)elapsed / 1e9));
  curl_multi_cleanup(multi);
  curl_global_cleanup();
  return 0;
}
