#!/usr/bin/env python3
"""Records the ACL transcripts of this folder from a real redis-server (Redis 7.4).

Usage: generate.py REDIS_SERVER_BINARY [PORT]

Starts a fresh redis-server on 127.0.0.1:PORT (default 7491) for each file, with nothing saved to
disk, drives it over plain sockets, and writes one JSON object per line: the first gives the
protocol, every other one `{"conn": name, "cmd": [base64 args], "reply": base64 reply bytes}`, plus
the optional keys the README describes ("unordered", "masked", "closed"). Every choice comes from
random.Random(seed): the same binary and seed give the same commands. Nothing here is Redis code.
"""

import base64
import json
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


# --- A RESP client that returns each reply's exact bytes ------------------------------------------

class Conn:
    def __init__(self, port, name, protocol):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.settimeout(10)
        self.buf = b""
        self.name = name
        self.protocol = protocol
        self.closed = False
        if protocol == 3:
            self.raw(["HELLO", "3"])

    def _fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed")
        self.buf += data

    def _line(self, pos):
        while True:
            end = self.buf.find(b"\r\n", pos)
            if end >= 0:
                return end
            self._fill()

    def _skip(self, pos):
        """Returns the end of the RESP value starting at pos."""
        end = self._line(pos)
        kind = self.buf[pos:pos + 1]
        head = self.buf[pos + 1:end]
        if kind in (b"+", b"-", b":", b",", b"#", b"_", b"("):
            return end + 2
        if kind in (b"$", b"=", b"!"):
            n = int(head)
            if n < 0:
                return end + 2
            while len(self.buf) < end + 2 + n + 2:
                self._fill()
            return end + 2 + n + 2
        if kind in (b"*", b"~", b">", b"%", b"|"):
            n = int(head)
            if n < 0:
                return end + 2
            if kind in (b"%", b"|"):
                n *= 2
            pos = end + 2
            for _ in range(n):
                pos = self._skip(pos)
            if kind == b"|":  # an attribute precedes the real value
                pos = self._skip(pos)
            return pos
        raise ValueError("bad RESP type %r" % kind)

    def read_reply(self):
        end = self._skip(0)
        reply, self.buf = self.buf[:end], self.buf[end:]
        return reply

    def raw(self, args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a.encode() if isinstance(a, str) else a
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.read_reply()


class Recorder:
    def __init__(self, path, protocol, note):
        self.out = open(path, "w")
        self.protocol = protocol
        self.lines = 0
        self.out.write(json.dumps({"protocol": protocol, "note": note}, separators=(",", ":"))
                       + "\n")

    def send(self, conn, args, **extra):
        args = [a.encode() if isinstance(a, str) else a for a in args]
        closed = False
        try:
            reply = conn.raw(args)
        except (ConnectionError, ConnectionResetError, BrokenPipeError):
            reply, closed = b"", True
            conn.closed = True
        masked = extra.pop("mask", None)
        if masked and not closed:
            reply, names = masked(reply, self.protocol)
            if names:
                extra["masked"] = names
        line = {"conn": conn.name, "cmd": [base64.b64encode(a).decode() for a in args],
                "reply": base64.b64encode(reply).decode()}
        if closed:
            line["closed"] = True
        line.update(extra)
        self.out.write(json.dumps(line, separators=(",", ":")) + "\n")
        self.lines += 1
        return reply

    def close(self):
        self.out.close()


# --- RESP values, for masking what varies ---------------------------------------------------------

def parse(data, pos=0):
    end = data.index(b"\r\n", pos)
    kind, head = data[pos:pos + 1], data[pos + 1:end]
    if kind in (b"+", b"-", b":", b",", b"#", b"("):
        return (kind, head), end + 2
    if kind == b"_":
        return (kind, None), end + 2
    if kind in (b"$", b"="):
        n = int(head)
        if n < 0:
            return (kind, None), end + 2
        return (kind, data[end + 2:end + 2 + n]), end + 2 + n + 2
    n = int(head)
    if n < 0:
        return (kind, None), end + 2
    items, pos = [], end + 2
    for _ in range(n * 2 if kind == b"%" else n):
        item, pos = parse(data, pos)
        items.append(item)
    return (kind, items), pos


def encode(value):
    kind, body = value
    if body is None:
        return kind + (b"\r\n" if kind == b"_" else b"-1\r\n")
    if kind in (b"+", b"-", b":", b",", b"#", b"("):
        return kind + body + b"\r\n"
    if kind in (b"$", b"="):
        return kind + b"%d\r\n" % len(body) + body + b"\r\n"
    n = len(body) // 2 if kind == b"%" else len(body)
    return kind + b"%d\r\n" % n + b"".join(encode(v) for v in body)


# client-info fields whose values depend on the socket, the clock or the allocator.
VARYING_CLIENT_FIELDS = {b"id", b"addr", b"laddr", b"fd", b"age", b"idle", b"qbuf", b"qbuf-free",
                         b"argv-mem", b"multi-mem", b"rbs", b"rbp", b"obl", b"oll", b"omem",
                         b"tot-mem"}


def mask_client_info(text):
    fields = []
    for field in text.split(b" "):
        name, _, value = field.partition(b"=")
        fields.append(name + b"=*" if name in VARYING_CLIENT_FIELDS else field)
    return b" ".join(fields)


def mask_acl_log(reply, protocol):
    """ACL LOG: age-seconds becomes 0 (a double), timestamp-created and timestamp-last-updated
    become 0, and client-info keeps its stable fields, the others read `*`."""
    value, _ = parse(reply)
    if value[0] != b"*":
        return reply, None
    for entry in value[1]:
        fields = entry[1]
        for i in range(0, len(fields), 2):
            name = fields[i][1]
            if name == b"age-seconds":
                fields[i + 1] = (b",", b"0") if protocol == 3 else (b"$", b"0")
            elif name in (b"timestamp-created", b"timestamp-last-updated"):
                fields[i + 1] = (b":", b"0")
            elif name == b"client-info":
                fields[i + 1] = (b"$", mask_client_info(fields[i + 1][1]))
    return encode(value), ["age-seconds", "client-info", "timestamp-created",
                           "timestamp-last-updated"]


def mask_genpass(reply, protocol):
    """ACL GENPASS: every hex digit of the password becomes `x` (its length is the shape)."""
    if not reply.startswith(b"$"):
        return reply, None
    value, _ = parse(reply)
    return encode((b"$", b"x" * len(value[1]))), ["hex"]


def mask_client_list(reply, protocol):
    value, _ = parse(reply)
    if value[0] not in (b"$", b"="):
        return reply, None
    lines = value[1].split(b"\n")
    body = b"\n".join(mask_client_info(l) if l else l for l in lines)
    return encode((value[0], body)), ["client-info"]


# --- The server -----------------------------------------------------------------------------------

class Server:
    def __init__(self, binary, port, extra=()):
        self.dir = tempfile.mkdtemp(prefix="acl-ref-")
        self.port = port
        self.proc = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "no", "--dir", self.dir, "--logfile", os.path.join(self.dir, "log"),
             *extra],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port)).close()
                return
            except OSError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


# --- What the rules are made of -------------------------------------------------------------------

COMMANDS = ["get", "set", "mget", "mset", "append", "incr", "del", "exists", "expire", "ttl",
            "type", "rename", "copy", "keys", "scan", "dbsize", "lpush", "rpop", "lrange",
            "lmove", "blpop", "sadd", "smembers", "sinter", "sinterstore", "hset", "hget",
            "hgetall", "zadd", "zrange", "zunionstore", "publish", "subscribe", "psubscribe",
            "flushall", "flushdb", "multi", "exec", "eval", "ping", "info", "select", "auth",
            "hello", "setbit", "bitcount", "unlink", "getdel", "strlen", "time", "echo",
            "randomkey", "watch", "spublish", "ssubscribe"]
CONTAINERS = {"config": ["get", "set", "resetstat", "rewrite", "help"],
              "client": ["list", "kill", "setname", "getname", "id", "info", "no-evict"],
              "object": ["encoding", "freq", "help"],
              "memory": ["usage", "stats"],
              "command": ["info", "docs", "count", "list", "getkeys"],
              "pubsub": ["channels", "numsub", "numpat"],
              "slowlog": ["get", "reset", "len"],
              "acl": ["whoami", "cat", "log", "setuser", "getuser", "dryrun"],
              "script": ["load", "kill", "flush", "exists"],
              "function": ["list", "load", "delete"]}
CATEGORIES = ["keyspace", "read", "write", "set", "sortedset", "list", "hash", "string", "bitmap",
              "hyperloglog", "geo", "stream", "pubsub", "admin", "fast", "slow", "blocking",
              "dangerous", "connection", "transaction", "scripting", "all"]
PATTERNS = ["*", "urls:*", "urls:?", "cache:[abc]*", "k", "a*b", "ro:*", "wo:*", "x\\*y", "[^u]*",
            "team1:*", "team2:*", "h?llo", "", "{tag}*"]
CHANNELS = ["*", "news.*", "chat", "ch?", "alerts:[ab]", "", "orders:*"]
PASSWORDS = ["secret", "p@ss word", "", "hunter2", "\u00e9t\u00e9", "a" * 40]


def sha(text):
    import hashlib
    return hashlib.sha256(text.encode() if isinstance(text, str) else text).hexdigest()


def case(rng, text):
    """Mostly lower case, sometimes upper or mixed, as clients may send."""
    r = rng.random()
    if r < 0.75:
        return text
    if r < 0.88:
        return text.upper()
    return "".join(c.upper() if rng.random() < 0.5 else c for c in text)


def command_rule(rng, valid=False):
    sign = rng.choice("+-")
    r = rng.random() * (0.82 if valid else 1)
    if r < 0.35:
        return sign + case(rng, rng.choice(COMMANDS))
    if r < 0.55:
        return sign + "@" + case(rng, rng.choice(CATEGORIES))
    if r < 0.75:
        parent = rng.choice(list(CONTAINERS))
        sub = rng.choice(CONTAINERS[parent] + ([] if valid else ["nosuch"]))
        return sign + case(rng, parent + "|" + sub)
    if r < 0.82:
        return sign + case(rng, rng.choice(list(CONTAINERS)))
    if r < 0.95:
        # a first argument of a command without subcommands (allowed only with +)
        base = rng.choice(["select", "ping", "echo", "get"])
        return sign + case(rng, base) + "|" + rng.choice(["0", "1", "hello", "X"])
    return rng.choice(["+nosuchcmd", "-nosuchcmd", "+@nosuchcat", "-@", "+", "-", "+@",
                       "+config|get|x", "+config|", "-config|", "+get|", "+|get", "-select|0",
                       "+client|list|x", "+a|b|c"])


def key_rule(rng):
    r = rng.random()
    pat = rng.choice(PATTERNS)
    if r < 0.45:
        return "~" + pat
    if r < 0.75:
        return rng.choice(["%R~", "%W~", "%RW~", "%WR~", "%r~", "%w~", "%Rw~"]) + pat
    if r < 0.93:
        return rng.choice(["allkeys", "resetkeys", "AllKeys", "~*"])
    # broken ones: a doubled permission, an unknown letter, no tilde, a space
    return rng.choice(["%RR~a", "%X~a", "%~a", "%R", "%RW", "~a b", "%W~ x", "~\tx", "%R~%W~x"])


def channel_rule(rng):
    r = rng.random()
    if r < 0.7:
        return "&" + rng.choice(CHANNELS)
    if r < 0.95:
        return rng.choice(["allchannels", "resetchannels", "ALLCHANNELS"])
    return rng.choice(["&a b", "&\tc"])


def password_rule(rng):
    r = rng.random()
    if r < 0.35:
        return ">" + rng.choice(PASSWORDS)
    if r < 0.5:
        return "<" + rng.choice(PASSWORDS)
    if r < 0.62:
        return "#" + sha(rng.choice(PASSWORDS))
    if r < 0.7:
        return "!" + sha(rng.choice(PASSWORDS))
    if r < 0.9:
        return rng.choice(["nopass", "resetpass", "NoPass"])
    # hashes that are not: upper case, short, long, not hex
    h = sha(rng.choice(PASSWORDS))
    return rng.choice(["#" + h.upper(), "#" + h[:63], "#" + h + "0", "#" + "g" * 64, "!" + h[:10],
                       "#"])


def plain_rule(rng):
    r = rng.random()
    if r < 0.3:
        return command_rule(rng)
    if r < 0.48:
        return key_rule(rng)
    if r < 0.58:
        return channel_rule(rng)
    if r < 0.72:
        return password_rule(rng)
    if r < 0.95:
        return case(rng, rng.choice(["on", "off", "allcommands", "nocommands", "reset",
                                     "clearselectors", "sanitize-payload",
                                     "skip-sanitize-payload", "on", "on"]))
    return rng.choice(["", "bogus", "(", ")", "()", "on\x00junk", "+get\x00x", "resetkeys x",
                       "~", "&", "#", "!", ">", "<"])


def selector_ops(rng):
    ops = []
    for _ in range(rng.randint(0, 4)):
        r = rng.random()
        if r < 0.4:
            ops.append(command_rule(rng))
        elif r < 0.7:
            ops.append(key_rule(rng))
        elif r < 0.85:
            ops.append(channel_rule(rng))
        else:
            ops.append(rng.choice(["allkeys", "allcommands", "nocommands", "on", ">x", "reset",
                                   "resetkeys", "()"]))
    return ops


def rules(rng):
    """A SETUSER argument list: rules, selectors in one argument or spread over several."""
    out = []
    for _ in range(rng.randint(0, 6)):
        r = rng.random()
        if r < 0.12:
            ops = selector_ops(rng)
            # no spaces inside a rule of a selector given in one argument
            ops = [o for o in ops if " " not in o and "\t" not in o]
            if rng.random() < 0.6 or len(ops) < 2:
                out.append("(" + " ".join(ops) + ")")
            else:
                out.append("(" + ops[0])
                out.extend(ops[1:-1])
                out.append(ops[-1] + ")")
        elif r < 0.14:
            out.append(rng.choice(["(~a", "(+get ~b", "(+get) (", "(~x )x"]))
        else:
            out.append(plain_rule(rng))
    return out


USERS = ["worker", "dash", "op", "u1", "u2", "Alice", "a", "team:1"]


def rules_file(binary, port, protocol, seed, path, iterations):
    """Random SETUSER rule strings, each followed by GETUSER (and now and then LIST / USERS /
    DELUSER), and the errors of broken rules."""
    rng = random.Random(seed)
    server = Server(binary, port)
    rec = Recorder(path, protocol, "seeded random ACL SETUSER rules, GETUSER, LIST; seed %d" % seed
                   + ("; send HELLO 3 first" if protocol == 3 else ""))
    admin = Conn(port, "admin", protocol)
    try:
        rec.send(admin, ["ACL", "LIST"])
        rec.send(admin, ["ACL", "GETUSER", "default"])
        for _ in range(iterations):
            user = rng.choice(USERS)
            r = rng.random()
            if r < 0.8:
                reply = rec.send(admin, ["ACL", "SETUSER", user] + rules(rng))
                # after an error, GETUSER now and then shows that nothing was applied
                if reply.startswith(b"+") or rng.random() < 0.3:
                    rec.send(admin, ["ACL", "GETUSER", user])
            elif r < 0.83:
                rec.send(admin, ["ACL", "LIST"])
            elif r < 0.88:
                rec.send(admin, ["ACL", "USERS"])
            elif r < 0.93:
                names = rng.sample(USERS + ["nobody"], rng.randint(1, 3))
                if rng.random() < 0.1:
                    names.append("default")
                rec.send(admin, ["ACL", "DELUSER"] + names)
            elif r < 0.96:
                rec.send(admin, ["ACL", "GETUSER", rng.choice(USERS + ["nobody"])])
            else:
                odd = rng.choice(["with space", "tab\tname", "nul\x00name", "", "x" * 30])
                rec.send(admin, ["ACL", "SETUSER", odd, "on"])
                rec.send(admin, ["ACL", "GETUSER", odd])
        rec.send(admin, ["ACL", "LIST"])
        rec.send(admin, ["ACL", "USERS"])
    finally:
        rec.close()
        server.stop()
    return rec.lines


# --- DRYRUN ---------------------------------------------------------------------------------------

KEYS = ["urls:1", "urls:22", "cache:a1", "cache:z", "k", "ab", "axxb", "ro:1", "wo:1", "other",
        "team1:q", "team2:q", "hello", "x*y", "{tag}k", ""]
CHANS = ["news.1", "news.", "chat", "chx", "alerts:a", "alerts:c", "orders:9", "other", "*",
         "news.*", "ch?"]


def dryrun_command(rng):
    k = lambda: rng.choice(KEYS)
    c = lambda: rng.choice(CHANS)
    forms = [
        lambda: ["GET", k()], lambda: ["SET", k(), "v"], lambda: ["SET", k(), "v", "GET"],
        lambda: ["SET", k(), "v", "NX", "get"], lambda: ["MGET", k(), k(), k()],
        lambda: ["MSET", k(), "1", k(), "2"], lambda: ["APPEND", k(), "x"],
        lambda: ["INCR", k()], lambda: ["GETDEL", k()], lambda: ["STRLEN", k()],
        lambda: ["SETRANGE", k(), "0", "x"], lambda: ["GETRANGE", k(), "0", "1"],
        lambda: ["LPUSH", k(), "a", "b"], lambda: ["RPOP", k()], lambda: ["LRANGE", k(), "0", "-1"],
        lambda: ["LMOVE", k(), k(), "LEFT", "RIGHT"], lambda: ["BLPOP", k(), k(), "0"],
        lambda: ["LLEN", k()], lambda: ["SADD", k(), "m"], lambda: ["SMEMBERS", k()],
        lambda: ["SINTER", k(), k()], lambda: ["SINTERSTORE", k(), k(), k()],
        lambda: ["SMOVE", k(), k(), "m"], lambda: ["SCARD", k()], lambda: ["HSET", k(), "f", "v"],
        lambda: ["HGET", k(), "f"], lambda: ["HGETALL", k()], lambda: ["HDEL", k(), "f"],
        lambda: ["ZADD", k(), "1", "m"], lambda: ["ZRANGE", k(), "0", "-1"],
        lambda: ["ZUNIONSTORE", k(), "2", k(), k()], lambda: ["ZUNIONSTORE", k(), "3", k(), k()],
        lambda: ["ZUNIONSTORE", k(), "x", k(), k()], lambda: ["ZINTERCARD", "2", k(), k()],
        lambda: ["ZRANGESTORE", k(), k(), "0", "-1"], lambda: ["ZSCORE", k(), "m"],
        lambda: ["DEL", k(), k()], lambda: ["UNLINK", k()], lambda: ["EXISTS", k(), k()],
        lambda: ["EXPIRE", k(), "10"], lambda: ["TTL", k()], lambda: ["TYPE", k()],
        lambda: ["RENAME", k(), k()], lambda: ["COPY", k(), k()], lambda: ["TOUCH", k()],
        lambda: ["PERSIST", k()], lambda: ["DUMP", k()], lambda: ["KEYS", "*"],
        lambda: ["SCAN", "0"], lambda: ["DBSIZE"], lambda: ["RANDOMKEY"],
        lambda: ["OBJECT", "ENCODING", k()], lambda: ["MEMORY", "USAGE", k()],
        lambda: ["SETBIT", k(), "1", "1"], lambda: ["BITCOUNT", k()],
        lambda: ["BITOP", "AND", k(), k(), k()], lambda: ["BITFIELD", k(), "GET", "u8", "0"],
        lambda: ["BITFIELD", k(), "SET", "u8", "0", "1"], lambda: ["PUBLISH", c(), "hi"],
        lambda: ["SUBSCRIBE", c(), c()], lambda: ["PSUBSCRIBE", c(), c()],
        lambda: ["UNSUBSCRIBE", c()], lambda: ["PUNSUBSCRIBE"], lambda: ["SPUBLISH", c(), "x"],
        lambda: ["SSUBSCRIBE", c()], lambda: ["PUBSUB", "CHANNELS"],
        lambda: ["PUBSUB", "NUMSUB", c()], lambda: ["CONFIG", "GET", "maxmemory"],
        lambda: ["CONFIG", "SET", "maxmemory", "0"], lambda: ["config", "resetstat"],
        lambda: ["CONFIG", "NOSUCH"], lambda: ["CONFIG"], lambda: ["FLUSHALL"],
        lambda: ["FLUSHDB", "ASYNC"], lambda: ["MULTI"], lambda: ["EXEC"], lambda: ["DISCARD"],
        lambda: ["WATCH", k()], lambda: ["UNWATCH"], lambda: ["PING"], lambda: ["ECHO", "x"],
        lambda: ["INFO"], lambda: ["SELECT", "0"], lambda: ["SELECT", "1"],
        lambda: ["CLIENT", "LIST"], lambda: ["CLIENT", "SETNAME", "x"], lambda: ["CLIENT", "ID"],
        lambda: ["AUTH", "u", "p"], lambda: ["HELLO", "3"], lambda: ["TIME"],
        lambda: ["EVAL", "return 1", "2", k(), k()], lambda: ["EVAL", "return 1", "0"],
        lambda: ["EVAL", "return 1", "9", k()], lambda: ["SCRIPT", "LOAD", "return 1"],
        lambda: ["FCALL", "f", "1", k()], lambda: ["SLOWLOG", "GET"],
        lambda: ["COMMAND", "INFO", "get"], lambda: ["SAVE"], lambda: ["SHUTDOWN"],
        lambda: ["ACL", "WHOAMI"], lambda: ["ACL", "SETUSER", "x"], lambda: ["NOSUCH", "x"],
        lambda: ["GET"], lambda: ["GET", k(), k()], lambda: ["MGET"], lambda: ["get", k()],
    ]
    if rng.random() < 0.15:
        return rng.choice([["PUBLISH", c(), "x"], ["SUBSCRIBE", c()], ["PSUBSCRIBE", c()],
                           ["SPUBLISH", c(), "x"], ["SSUBSCRIBE", c(), c()]])
    return rng.choice(forms)()


def dryrun_rules(rng):
    # most users may run most commands, so that keys and channels get checked
    out = ["on", rng.choice(["+@all", "+@all", "+@read", "+@write", "+@read +@write", "-@all"])]
    out = out[:1] + out[1].split()
    for _ in range(rng.randint(1, 4)):
        out.append(command_rule(rng, valid=True) if rng.random() < 0.5 else
                   "+@" + rng.choice(["read", "write", "all", "string", "keyspace", "pubsub",
                                      "all", "admin", "connection"]))
    for _ in range(rng.randint(0, 3)):
        out.append(rng.choice(["~", "%R~", "%W~", "%RW~"]) + rng.choice(PATTERNS[1:]))
    if rng.random() < 0.15:
        out.append("allkeys")
    for _ in range(rng.randint(0, 2)):
        out.append("&" + rng.choice(CHANNELS[1:]))
    if rng.random() < 0.1:
        out.append("allchannels")
    if rng.random() < 0.3:
        ops = [command_rule(rng, valid=True), rng.choice(["~", "%R~", "%W~"]) + rng.choice(PATTERNS[1:])]
        if rng.random() < 0.5:
            ops.append("&" + rng.choice(CHANNELS[1:]))
        out.append("(" + " ".join(ops) + ")")
    return out


def dryrun_file(binary, port, protocol, seed, path, rounds, per_round):
    rng = random.Random(seed)
    server = Server(binary, port)
    rec = Recorder(path, protocol, "seeded random users and ACL DRYRUN; seed %d" % seed
                   + ("; send HELLO 3 first" if protocol == 3 else ""))
    admin = Conn(port, "admin", protocol)
    try:
        for round_ in range(rounds):
            user = "d%d" % (round_ % 6)
            rec.send(admin, ["ACL", "SETUSER", user, "reset"] + dryrun_rules(rng))
            rec.send(admin, ["ACL", "GETUSER", user])
            for _ in range(per_round):
                rec.send(admin, ["ACL", "DRYRUN", user] + dryrun_command(rng))
        rec.send(admin, ["ACL", "DRYRUN", "nobody", "GET", "k"])
        rec.send(admin, ["ACL", "DRYRUN", "d0"])
        rec.send(admin, ["ACL", "DRYRUN", "d0", "nosuch"])
        rec.send(admin, ["ACL", "DRYRUN", "default", "GET", "k"])
    finally:
        rec.close()
        server.stop()
    return rec.lines


# --- Categories and the command table -------------------------------------------------------------

def cat_file(binary, port, protocol, path, categories):
    server = Server(binary, port)
    rec = Recorder(path, protocol, "ACL CAT with and without a category"
                   + ("; send HELLO 3 first" if protocol == 3 else ""))
    admin = Conn(port, "admin", protocol)
    try:
        rec.send(admin, ["ACL", "CAT"])
        for cat in categories:
            rec.send(admin, ["ACL", "CAT", cat], unordered=True)
        for bad in ["all", "nosuch", "@read", ""]:
            rec.send(admin, ["ACL", "CAT", bad])
        rec.send(admin, ["ACL", "CAT", "read", "write"])
        rec.send(admin, ["ACL", "HELP"])
        rec.send(admin, ["ACL", "NOSUCH"])
        rec.send(admin, ["ACL"])
        rec.send(admin, ["ACL", "GETUSER"])
        rec.send(admin, ["ACL", "SETUSER"])
        rec.send(admin, ["ACL", "LOAD"])
        rec.send(admin, ["ACL", "SAVE"])
        rec.send(admin, ["ACL", "LIST", "x"])
    finally:
        rec.close()
        server.stop()
    return rec.lines


def table_file(binary, port, path):
    """The whole command table as Redis 7.4 reports it (COMMAND, RESP2): names, arity, flags,
    ACL categories, key specs and subcommands; the tests build the engine's table from it."""
    server = Server(binary, port)
    rec = Recorder(path, 2, "COMMAND (every command, RESP2), for the ACL engine's command table")
    admin = Conn(port, "admin", 2)
    try:
        rec.send(admin, ["COMMAND"], unordered=True)
    finally:
        rec.close()
        server.stop()
    return rec.lines


# --- Sessions: AUTH, NOPERM, ACL LOG, several connections -----------------------------------------

# Commands the probes may not really run: they block, stop the server, or change the
# connection's mode or protocol.
UNSAFE_TO_RUN = {"SHUTDOWN", "BLPOP", "SUBSCRIBE", "PSUBSCRIBE", "SSUBSCRIBE", "HELLO", "MULTI"}
# Commands whose replies vary from run to run (clock, randomness, timings).
VARYING = {"INFO", "TIME", "RANDOMKEY", "SLOWLOG"}


def session_file(binary, port, protocol, seed, path, probes):
    rng = random.Random(seed)
    server = Server(binary, port)
    rec = Recorder(path, protocol, "AUTH, HELLO AUTH, NOPERM on several connections, ACL LOG, "
                   "WHOAMI, GENPASS, DELUSER closing connections; seed %d" % seed
                   + ("; every connection sends HELLO 3 first (not recorded)"
                      if protocol == 3 else ""))
    admin = Conn(port, "admin", protocol)
    conns = {}

    def conn(name):
        if name not in conns or conns[name].closed:
            conns[name] = Conn(port, name, protocol)
        return conns[name]

    try:
        s = lambda c, args, **kw: rec.send(conn(c) if c != "admin" else admin, args, **kw)
        log = lambda *extra: s("admin", ["ACL", "LOG", *extra], mask=mask_acl_log)
        s("admin", ["ACL", "WHOAMI"])
        s("admin", ["ACL", "LOG"])
        s("admin", ["ACL", "SETUSER", "worker", "on", ">wpass", "+@bloom"])
        s("admin", ["ACL", "SETUSER", "worker", "on", ">wpass", "~urls:*", "+@read", "+@write",
                    "-@dangerous", "&jobs.*", "-config|set", "+config|get", "+publish",
                    "+spublish", "+multi", "+exec", "+acl|whoami", "+subscribe"])
        s("admin", ["ACL", "SETUSER", "dash", "on", ">dpass", "%R~*", "+@read", "+@connection",
                    "-@dangerous"])
        s("admin", ["ACL", "SETUSER", "op", "on", "#" + sha("opass"), "allkeys", "allchannels",
                    "+@all", "-flushall"])
        s("admin", ["ACL", "SETUSER", "sel", "on", "nopass", "~a:*", "+get",
                    "(~b:* +set)", "(%R~c:* +@read &c.*)"])
        s("admin", ["ACL", "SETUSER", "off1", "off", ">x", "+@all", "~*"])
        for name, pw in [("worker", "wpass"), ("dash", "dpass"), ("op", "opass")]:
            s(name, ["ACL", "WHOAMI"])
            s(name, ["AUTH", name, "wrong"])
            s(name, ["AUTH", name, pw])
            s(name, ["ACL", "WHOAMI"])
        s("sel", ["AUTH", "sel", "anything"])
        s("off1", ["AUTH", "off1", "x"])
        s("anon", ["AUTH", "nobody", "x"])
        s("anon", ["AUTH", "onlypassword"])
        s("anon", ["AUTH", "a", "b", "c"])
        s("anon", ["AUTH"])
        s("anon", ["HELLO", str(protocol), "AUTH", "worker", "nope"])
        s("anon", ["HELLO", str(protocol), "AUTH", "nobody", "nope"])
        log()
        # NOPERM of real commands
        plan = [
            ("worker", ["SET", "urls:1", "v"]), ("worker", ["GET", "urls:1"]),
            ("worker", ["GET", "other"]), ("worker", ["MGET", "urls:1", "other", "x"]),
            ("worker", ["CONFIG", "SET", "maxmemory", "0"]), ("worker", ["CONFIG", "GET", "port"]),
            ("worker", ["FLUSHALL"]), ("worker", ["KEYS", "*"]),
            ("worker", ["PUBLISH", "jobs.1", "x"]), ("worker", ["PUBLISH", "news", "x"]),
            ("worker", ["SPUBLISH", "news", "x"]), ("worker", ["DEBUG", "SLEEP", "0"]),
            ("worker", ["SPUBLISH", "jobs.2", "x"]), ("worker", ["ACL", "WHOAMI"]),
            ("worker", ["RENAME", "urls:1", "other"]), ("worker", ["COPY", "urls:1", "urls:2"]),
            ("dash", ["GET", "anything"]), ("dash", ["SET", "anything", "1"]),
            ("dash", ["HGETALL", "h"]), ("dash", ["DEL", "urls:1"]), ("dash", ["PING"]),
            ("dash", ["CLIENT", "SETNAME", "dashboard"]), ("dash", ["CLIENT", "KILL", "ID", "1"]),
            ("dash", ["SUBSCRIBE", "x"]), ("dash", ["ACL", "WHOAMI"]),
            ("worker", ["SUBSCRIBE", "news", "jobs.1"]),
            ("dash", ["ACL", "LOG"]),
            ("op", ["FLUSHALL"]), ("op", ["FLUSHDB"]), ("op", ["SET", "k", "v"]),
            ("sel", ["GET", "a:1"]), ("sel", ["GET", "b:1"]), ("sel", ["SET", "b:1", "x"]),
            ("sel", ["SET", "a:1", "x"]), ("sel", ["GET", "c:1"]), ("sel", ["MGET", "a:1", "c:1"]),
            ("sel", ["PUBLISH", "c.1", "x"]), ("sel", ["SET", "c:1", "x"]),
            ("sel", ["LPUSH", "zz", "1"]), ("sel", ["PUBLISH", "d", "x"]),
        ]
        for who, args in plan:
            s(who, args)
        log()
        log("3")
        # inside MULTI: the NOPERM is immediate and EXEC aborts
        s("worker", ["MULTI"])
        s("worker", ["SET", "urls:2", "v"])
        s("worker", ["GET", "nope"])
        s("worker", ["CONFIG", "SET", "maxmemory", "0"])
        s("worker", ["EXEC"])
        s("worker", ["SET", "urls:3", "v"])
        # scripts: a key reached through redis.call
        s("admin", ["ACL", "SETUSER", "scripter", "on", ">s", "~urls:*", "+@read", "+@write",
                    "+@scripting"])
        s("scripter", ["AUTH", "scripter", "s"])
        s("scripter", ["EVAL", "return redis.call('get', KEYS[1])", "1", "urls:1"])
        s("scripter", ["EVAL", "return redis.call('get', KEYS[1])", "1", "secret"])
        s("scripter", ["EVAL", "return redis.call('get', 'secret')", "0"])
        s("scripter", ["EVAL", "return redis.pcall('flushall')", "0"])
        s("scripter", ["EVAL", "return redis.call('set', 'urls:9', 'x')", "0"])
        log("4")
        # grouping: the same denial again bumps count
        for _ in range(3):
            s("worker", ["GET", "other"])
        log("2")
        # acllog-max-len
        s("admin", ["CONFIG", "SET", "acllog-max-len", "2"])
        s("dash", ["SET", "a", "1"])
        s("dash", ["SET", "b", "1"])
        s("dash", ["SET", "c", "1"])
        log()
        s("admin", ["CONFIG", "SET", "acllog-max-len", "0"])
        s("dash", ["SET", "d", "1"])
        log()
        s("admin", ["CONFIG", "SET", "acllog-max-len", "128"])
        s("dash", ["SET", "e", "1"])
        log("1")
        log("RESET")
        log()
        log("-1")
        log("x")
        log("1", "2")
        # acl-pubsub-default
        s("admin", ["CONFIG", "GET", "acl-pubsub-default"])
        s("admin", ["CONFIG", "SET", "acl-pubsub-default", "allchannels"])
        s("admin", ["ACL", "SETUSER", "pub1", "on"])
        s("admin", ["ACL", "GETUSER", "pub1"])
        s("admin", ["ACL", "SETUSER", "pub1", "reset"])
        s("admin", ["ACL", "GETUSER", "pub1"])
        s("admin", ["CONFIG", "SET", "acl-pubsub-default", "resetchannels"])
        s("admin", ["ACL", "SETUSER", "pub2", "on"])
        s("admin", ["ACL", "LIST"])
        # GENPASS shapes
        for bits in [None, "1", "4", "5", "7", "64", "255", "256", "257", "4096", "4097", "0",
                     "-1", "x"]:
            s("admin", ["ACL", "GENPASS"] + ([bits] if bits else []), mask=mask_genpass)
        # requirepass as the default user's password
        s("admin", ["CONFIG", "SET", "requirepass", "rootpw"])
        s("admin", ["ACL", "GETUSER", "default"])
        s("fresh", ["GET", "k"])
        s("fresh", ["AUTH", "wrong"])
        s("fresh", ["AUTH", "rootpw"])
        s("fresh", ["ACL", "WHOAMI"])
        s("admin", ["CONFIG", "SET", "requirepass", ""])
        s("admin", ["ACL", "GETUSER", "default"])
        # disabling and deleting users with open connections
        s("admin", ["ACL", "SETUSER", "dash", "off"])
        s("dash", ["GET", "x"])
        s("admin", ["ACL", "DELUSER", "worker", "nobody"])
        s("worker", ["PING"])
        s("admin", ["ACL", "DELUSER", "default"])
        s("admin", ["ACL", "SETUSER", "op", "resetchannels"])
        s("admin", ["ACL", "USERS"])
        log("1")
        # random NOPERM probes by the remaining users
        for _ in range(probes):
            who = rng.choice(["op", "sel", "scripter"])
            args = dryrun_command(rng)
            while args[0].upper() in UNSAFE_TO_RUN | VARYING:
                args = dryrun_command(rng)
            if args[:2] == ["CLIENT", "LIST"]:
                s(who, args, mask=mask_client_list)
            elif args[0] in ("KEYS", "SCAN"):
                s(who, args, unordered=True)
            else:
                s(who, args)
            if rng.random() < 0.05:
                log("1")
        log()
    finally:
        rec.close()
        server.stop()
    return rec.lines


def main():
    binary = sys.argv[1]
    port = int(sys.argv[2]) if len(sys.argv) > 2 else 7491
    path = lambda name: os.path.join(HERE, name)
    counts = {}
    counts["command-table.jsonl"] = table_file(binary, port, path("command-table.jsonl"))
    # RESP2 carries most of the sequences; RESP3 changes only the shapes of GETUSER (maps, a
    # set of flags) and ACL LOG (maps, a double), so its files are shorter runs.
    counts["cat-resp2.jsonl"] = cat_file(binary, port, 2, path("cat-resp2.jsonl"),
                                         CATEGORIES[:-1] + ["READ", "Write"])
    counts["cat-resp3.jsonl"] = cat_file(binary, port, 3, path("cat-resp3.jsonl"), ["string"])
    counts["rules-resp2.jsonl"] = rules_file(binary, port, 2, 201, path("rules-resp2.jsonl"), 300)
    counts["rules-resp3.jsonl"] = rules_file(binary, port, 3, 202, path("rules-resp3.jsonl"), 70)
    counts["dryrun-resp2.jsonl"] = dryrun_file(binary, port, 2, 203, path("dryrun-resp2.jsonl"),
                                               60, 8)
    counts["dryrun-resp3.jsonl"] = dryrun_file(binary, port, 3, 204, path("dryrun-resp3.jsonl"),
                                               8, 5)
    counts["sessions-resp2.jsonl"] = session_file(binary, port, 2, 205,
                                                  path("sessions-resp2.jsonl"), 60)
    counts["sessions-resp3.jsonl"] = session_file(binary, port, 3, 206,
                                                  path("sessions-resp3.jsonl"), 20)
    for name, n in counts.items():
        print(name, n)


if __name__ == "__main__":
    main()
