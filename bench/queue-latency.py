#!/usr/bin/env python3
"""queue-latency: how long a queued ticket waits after the slot it waits for frees.

Used by scripts/bench-leases against a broker running with BROKER_CAPACITY=1.

  queue-latency.py --port PORT [--trials 50] [--poll-ms 2] [--settle-ms 100]

A holder lease takes the one slot. Each trial: client B acquires (must be 202
queued), waits --settle-ms (so the supervisor has consumed B's ticket from
Kafka and is idle, as with any ticket that waited a while), then the holder is
released and B's ticket is polled every --poll-ms until it reads "granted".
Measured per trial:
  from_resp  time from the release's 200 answer to the first "granted" poll answer
  from_send  time from sending the release request to the first "granted" poll answer
  grant_lag  the granted lease's createdAt (Redis TIME, 1 ms resolution) minus the wall
             clock when the release was sent: when the supervisor granted, server side
  poll_rtt   round trip of a poll that still reads "queued" (3 per trial, during the
             settle wait): the resolution of from_resp, since a poll is how a client learns
B is then the holder of the next trial; the last holder is released at the end.
Prints one QUEUERESULT line (milliseconds) plus a per-trial line with -v.

Every request carries "Authorization: Bearer <key>", the key taken from the
environment variable BENCH_BEARER (scripts/bench-leases sets it to a key it seeded
through OPENSANDBOX_API_KEYS); without it the script refuses to run. Any answer
other than the expected one (a 401 included) ends the run with exit status 1.
"""
import argparse
import datetime
import http.client
import json
import os
import statistics
import sys
import time


def pct(sorted_vals, p):
    """nearest-rank percentile"""
    if not sorted_vals:
        return float("nan")
    k = max(0, min(len(sorted_vals) - 1, int(round(p / 100.0 * len(sorted_vals) + 0.5)) - 1))
    return sorted_vals[k]


class Client:
    def __init__(self, port, key):
        self.port = port
        self.key = key
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)

    def call(self, method, path, body=None):
        hdrs = {"Authorization": "Bearer " + self.key}
        data = None
        if body is not None:
            data = json.dumps(body)
            hdrs["Content-Type"] = "application/json"
        try:
            self.conn.request(method, path, body=data, headers=hdrs)
            r = self.conn.getresponse()
            raw = r.read()
        except (http.client.HTTPException, OSError):
            # reconnect once (nginx closed a kept-alive connection)
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
            self.conn.request(method, path, body=data, headers=hdrs)
            r = self.conn.getresponse()
            raw = r.read()
        return r.status, json.loads(raw) if raw else None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--trials", type=int, default=50)
    ap.add_argument("--poll-ms", type=float, default=2.0)
    ap.add_argument("--settle-ms", type=float, default=100.0)
    ap.add_argument("--prefix", default="q")
    ap.add_argument("-v", action="store_true")
    a = ap.parse_args()
    key = os.environ.get("BENCH_BEARER", "")
    if not key:
        sys.exit("queue-latency: set BENCH_BEARER to an API key of the broker (every route but /health needs one)")

    holder_conn, waiter_conn = Client(a.port, key), Client(a.port, key)
    tag = "%s%d" % (a.prefix, int(time.time()))
    holder = {"userId": tag + "-h", "sessionId": "s0"}
    st, body = holder_conn.call("POST", "/v1/leases/acquire", holder)
    if st != 200 or body.get("status") != "granted":
        sys.exit("queue-latency: holder acquire answered %s %s (is BROKER_CAPACITY=1 and the broker empty?)" % (st, body))

    from_resp, from_send, polls, rtt, grant_lag = [], [], [], [], []
    for i in range(1, a.trials + 1):
        b = {"userId": "%s-b%d" % (tag, i), "sessionId": "s%d" % i}
        st, body = waiter_conn.call("POST", "/v1/leases/acquire", b)
        if st != 202 or body.get("status") != "queued":
            sys.exit("queue-latency: trial %d: B's acquire answered %s %s, expected 202 queued" % (i, st, body))
        ticket = body["ticketId"]
        t_settle = time.perf_counter() + a.settle_ms / 1000.0
        for _ in range(3):
            t0 = time.perf_counter()
            st, body = waiter_conn.call("GET", "/v1/leases/poll?ticketId=" + ticket)
            if st != 200 or body.get("status") != "queued":
                sys.exit("queue-latency: trial %d: poll before the release answered %s %s" % (i, st, body))
            rtt.append((time.perf_counter() - t0) * 1000.0)
        delay = t_settle - time.perf_counter()
        if delay > 0:
            time.sleep(delay)

        wall_send = time.time()
        t_send = time.perf_counter()
        st, body = holder_conn.call("POST", "/v1/leases/release", holder)
        t_resp = time.perf_counter()
        if st != 200:
            sys.exit("queue-latency: trial %d: release answered %s %s" % (i, st, body))

        n = 0
        next_poll = t_resp
        deadline = t_resp + 10.0
        while True:
            n += 1
            st, body = waiter_conn.call("GET", "/v1/leases/poll?ticketId=" + ticket)
            t = time.perf_counter()
            if st != 200:
                sys.exit("queue-latency: trial %d: poll answered %s %s" % (i, st, body))
            if body.get("status") == "granted":
                break
            if body.get("status") != "queued" or t > deadline:
                sys.exit("queue-latency: trial %d: ticket %s reads %s" % (i, ticket, body))
            next_poll += a.poll_ms / 1000.0
            delay = next_poll - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
        created = datetime.datetime.strptime(body["lease"]["createdAt"], "%Y-%m-%dT%H:%M:%S.%fZ")
        created = created.replace(tzinfo=datetime.timezone.utc).timestamp()
        grant_lag.append((created - wall_send) * 1000.0)
        from_resp.append((t - t_resp) * 1000.0)
        from_send.append((t - t_send) * 1000.0)
        polls.append(n)
        if a.v:
            print("trial %d: from_resp=%.2f ms from_send=%.2f ms grant_lag=%.1f ms polls=%d" % (i, from_resp[-1], from_send[-1], grant_lag[-1], n), file=sys.stderr)
        holder, holder_conn, waiter_conn = b, waiter_conn, holder_conn

    st, body = holder_conn.call("POST", "/v1/leases/release", holder)
    if st != 200:
        sys.exit("queue-latency: final release answered %s %s" % (st, body))

    def line(name, v):
        s = sorted(v)
        return "%s_median=%.2f %s_p90=%.2f %s_max=%.2f %s_min=%.2f" % (
            name, statistics.median(s), name, pct(s, 90), name, s[-1], name, s[0])

    print("QUEUERESULT trials=%d poll_ms=%g settle_ms=%g %s %s %s %s polls_median=%g polls_max=%d first_poll_granted=%d"
          % (a.trials, a.poll_ms, a.settle_ms, line("from_resp", from_resp), line("from_send", from_send),
             line("grant_lag", grant_lag), line("poll_rtt", rtt),
             statistics.median(polls), max(polls), sum(1 for n in polls if n == 1)))


if __name__ == "__main__":
    main()
