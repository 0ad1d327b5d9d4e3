"""A DNS server of the test's own that answers a few names and records every
query it gets: how the egress tests see which names Squid resolves.

Squid (5.7) takes its nameservers as IP addresses only and always asks port
53, so the server binds port 53 (UDP and TCP) on a spare address of the
loopback range 127.0.0.0/8 (chosen at random in 127.53.0.0/16, another one if
taken): nothing leaves the host, and the system's resolver is never asked.

    r = CountingResolver({"allowed.test": "127.0.0.1"}).start()
    ... point Squid's dns_nameservers at r.address ...
    r.queries()  # [("allowed.test", "A"), ...], in arrival order
    r.stop()

Answers: A for a known name (its address), NOERROR with no answer for its
other types (AAAA included: the test's upstreams listen on IPv4 only),
NXDOMAIN for every other name (PTR included). Every query is recorded before
it is answered, a malformed one as ("<malformed>", "?"). Needs root (port 53).
"""

import errno
import random
import socket
import struct
import threading

QTYPES = {1: "A", 2: "NS", 5: "CNAME", 6: "SOA", 12: "PTR", 15: "MX", 16: "TXT", 28: "AAAA",
          33: "SRV", 65: "HTTPS", 255: "ANY"}


def parse_question(msg):
    """(id, flags, qname lowercased, qtype number) of a query, or None."""
    if len(msg) < 12:
        return None
    qid, flags, qd = struct.unpack("!HHH", msg[:6])
    if qd != 1 or flags & 0x8000:
        return None
    labels, i = [], 12
    while True:
        if i >= len(msg):
            return None
        n = msg[i]
        i += 1
        if n == 0:
            break
        if n & 0xC0 or i + n > len(msg):
            return None  # queries carry no compression
        labels.append(msg[i:i + n].decode("ascii", "replace").lower())
        i += n
    if i + 4 > len(msg):
        return None
    qtype, qclass = struct.unpack("!HH", msg[i:i + 4])
    return qid, flags, ".".join(labels), qtype, msg[12:i + 4]


class CountingResolver:
    def __init__(self, names):
        self.names = {k.lower(): v for k, v in names.items()}
        self.address = None
        self._seen = []
        self._lock = threading.Lock()
        self._socks = []
        self._stopping = False

    def start(self):
        for _ in range(50):
            addr = "127.53.%d.%d" % (random.randint(0, 255), random.randint(1, 254))
            udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            try:
                udp.bind((addr, 53))
                tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                tcp.bind((addr, 53))
            except OSError as e:
                udp.close()
                tcp.close()
                if e.errno == errno.EADDRINUSE:
                    continue
                raise
            tcp.listen(16)
            self.address, self._socks = addr, [udp, tcp]
            break
        else:
            raise RuntimeError("no free loopback address for the test resolver")
        threading.Thread(target=self._serve_udp, daemon=True).start()
        threading.Thread(target=self._serve_tcp, daemon=True).start()
        return self

    def stop(self):
        self._stopping = True
        for s in self._socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            s.close()

    def queries(self):
        """Every query so far: (name, type) pairs, in arrival order."""
        with self._lock:
            return list(self._seen)

    def names_asked(self, fragment):
        """The queries whose name contains fragment (case-insensitive)."""
        return [q for q in self.queries() if fragment.lower() in q[0]]

    def answer(self, msg):
        q = parse_question(msg)
        if q is None:
            with self._lock:
                self._seen.append(("<malformed>", "?"))
            return None
        qid, flags, name, qtype, question = q
        with self._lock:
            self._seen.append((name, QTYPES.get(qtype, str(qtype))))
        known = name in self.names
        rcode = 0 if known else 3  # NXDOMAIN
        answers = b""
        count = 0
        if known and qtype == 1:
            answers = struct.pack("!HHHIH", 0xC00C, 1, 1, 60, 4) + socket.inet_aton(self.names[name])
            count = 1
        # QR, the query's opcode and RD, AA, RA
        rflags = 0x8000 | (flags & 0x7900) | 0x0400 | 0x0080 | rcode
        return struct.pack("!HHHHHH", qid, rflags, 1, count, 0, 0) + question + answers

    def _serve_udp(self):
        s = self._socks[0]
        while not self._stopping:
            try:
                msg, peer = s.recvfrom(4096)
            except OSError:
                return
            out = self.answer(msg)
            if out is not None:
                try:
                    s.sendto(out, peer)
                except OSError:
                    pass

    def _serve_tcp(self):
        s = self._socks[1]
        while not self._stopping:
            try:
                c, _ = s.accept()
            except OSError:
                return
            threading.Thread(target=self._tcp_conn, args=(c,), daemon=True).start()

    def _tcp_conn(self, c):
        def read(n):
            buf = b""
            while len(buf) < n:
                b = c.recv(n - len(buf))
                if not b:
                    return None
                buf += b
            return buf
        c.settimeout(10)
        with c:
            try:
                while True:
                    h = read(2)
                    msg = h and read(struct.unpack("!H", h)[0])
                    if not msg:
                        return
                    out = self.answer(msg)
                    if out is None:
                        return
                    c.sendall(struct.pack("!H", len(out)) + out)
            except OSError:
                return
