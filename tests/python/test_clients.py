#!/usr/bin/env python3
"""Drives a running sieved with redis-py, using its Bloom helpers (r.bf()) as applications do.

Usage: test_clients.py [PORT]  (or SIEVED_PORT in the environment; SIEVED_HOST, default 127.0.0.1)

Every check runs once per connection flavour: RESP2, RESP3 and, on redis-py versions that offer it,
RESP3 with unified (non-legacy) response parsing. Keys carry the flavour and check name, so checks
never see each other's data; each check first deletes the keys an earlier run of it left, and
touches nothing else. The last line printed is "N passed, M failed"; the exit status is non-zero
if anything failed.
"""

import inspect
import os
import sys
import time
import traceback

import redis

WRONGTYPE = "WRONGTYPE Operation against a key holding the wrong kind of value"


def flavours():
    found = [("resp2", {"protocol": 2}), ("resp3", {"protocol": 3})]
    if "legacy_responses" in inspect.signature(redis.Redis.__init__).parameters:
        found.append(("resp3-unified", {"protocol": 3, "legacy_responses": False}))
    return found


class Ctx:
    """One connection flavour: a client factory, and a key prefix private to one check."""

    def __init__(self, host, port, flavour, options, check):
        self.host, self.port, self.options = host, port, options
        self.resp3 = options["protocol"] == 3
        self.prefix = f"{flavour}:{check}:"
        self.r = self.connect()
        self.forget_keys()

    def forget_keys(self):
        """Deletes what an earlier run of this check left, in the databases the checks use."""
        for db in (0, 1):
            client = self.connect(db=db)
            for key in client.scan_iter(match=self.prefix + "*"):
                client.delete(key)
            client.close()

    def connect(self, **extra):
        return redis.Redis(
            host=self.host, port=self.port, decode_responses=True, **self.options, **extra
        )

    def key(self, name):
        return self.prefix + name


def check_flag(ctx, value, expected):
    """BF add/exists answers: RESP3 booleans come through as bool, RESP2 integers as int."""
    if ctx.resp3:
        assert value is expected, f"expected {expected!r}, got {value!r}"
    else:
        assert type(value) is int, f"expected an int, got {value!r}"
        assert value == int(expected), f"expected {int(expected)}, got {value!r}"


def check_flags(ctx, values, expected):
    assert isinstance(values, list), f"expected a list, got {values!r}"
    assert len(values) == len(expected), f"expected {expected!r}, got {values!r}"
    for value, flag in zip(values, expected):
        check_flag(ctx, value, flag)


def as_python_message(message):
    """redis-py drops the "ERR " code from error messages and keeps every other code."""
    return message[4:] if message.startswith("ERR ") else message


def check_error_value(value, message):
    assert isinstance(value, redis.ResponseError), f"expected an error, got {value!r}"
    assert str(value) == as_python_message(message), f"expected {message!r}, got {str(value)!r}"


def raises(call, message):
    try:
        result = call()
    except redis.ResponseError as error:
        check_error_value(error, message)
        return
    raise AssertionError(f"expected error {message!r}, got {result!r}")


def info_fields(info):
    """BF.INFO as redis-py returns it: a BFInfo object, or a plain dict (RESP3 legacy parsing)."""
    if isinstance(info, dict):
        names = {
            "Capacity": "capacity",
            "Size": "size",
            "Number of filters": "filterNum",
            "Number of items inserted": "insertedNum",
            "Expansion rate": "expansionRate",
        }
        assert set(info) == set(names), f"unexpected BF.INFO fields {sorted(info)}"
        return {names[label]: value for label, value in info.items()}
    return {
        field: getattr(info, field)
        for field in ("capacity", "size", "filterNum", "insertedNum", "expansionRate")
    }


def check_info(ctx, key, **expected):
    fields = info_fields(ctx.r.bf().info(key))
    assert isinstance(fields["size"], int) and fields["size"] > 0, f"bad size in {fields}"
    for name, value in expected.items():
        assert fields[name] == value, f"{name}: expected {value!r} in {fields}"
    return fields


def scandump(ctx, key):
    """The dump loop from redis-py's documentation."""
    chunks = []
    iter = 0
    while True:
        iter, data = ctx.r.bf().scandump(key, iter)
        if iter == 0:
            break
        chunks.append([iter, data])
    return chunks


# Checks, each run under every flavour.


def test_reserve_and_info(ctx):
    bf = ctx.r.bf()
    key = ctx.key("f")
    assert bf.create(key, 0.01, 1000) is True
    check_info(ctx, key, capacity=1000, filterNum=1, insertedNum=0, expansionRate=2)
    raises(lambda: bf.reserve(key, 0.01, 1000), "ERR item exists")

    assert bf.reserve(ctx.key("x4"), 0.01, 100, expansion=4) is True
    check_info(ctx, ctx.key("x4"), capacity=100, expansionRate=4)

    assert bf.create(ctx.key("ns"), 0.01, 100, noScale=True) is True
    check_info(ctx, ctx.key("ns"), capacity=100, filterNum=1, expansionRate=None)


def test_add_and_exists(ctx):
    bf = ctx.r.bf()
    key = ctx.key("a")
    check_flag(ctx, bf.add(key, "foo"), True)
    check_flag(ctx, bf.add(key, "foo"), False)
    check_flag(ctx, bf.add(key, ""), True)
    check_flag(ctx, bf.add(key, b"\x00\xff binary"), True)
    check_flag(ctx, bf.exists(key, "foo"), True)
    check_flag(ctx, bf.exists(key, b"\x00\xff binary"), True)
    check_flag(ctx, bf.exists(key, "bar"), False)
    check_flag(ctx, bf.exists(ctx.key("missing"), "foo"), False)
    # BF.ADD on a missing key creates a filter with the default settings.
    check_info(ctx, key, capacity=100, filterNum=1, insertedNum=3, expansionRate=2)


def test_madd_and_mexists(ctx):
    bf = ctx.r.bf()
    key = ctx.key("m")
    check_flags(ctx, bf.madd(key, "a", "b", "c", "a"), [True, True, True, False])
    check_flags(ctx, bf.madd(key, "a", "d"), [False, True])
    check_flags(ctx, bf.mexists(key, "a", "zz", "b", "d"), [True, False, True, True])
    check_flags(ctx, bf.mexists(ctx.key("missing"), "a", "b"), [False, False])
    assert bf.card(key) == 4


def test_insert_options(ctx):
    bf = ctx.r.bf()
    sized = ctx.key("sized")
    added = bf.insert(sized, ["a", "b", "a"], capacity=1000, error=0.001)
    check_flags(ctx, added, [True, True, False])
    check_info(ctx, sized, capacity=1000, insertedNum=2, expansionRate=2)
    # Options only apply when the key is created.
    check_flags(ctx, bf.insert(sized, ["c"], capacity=5, error=0.5, expansion=4), [True])
    check_info(ctx, sized, capacity=1000, insertedNum=3, expansionRate=2)
    check_flags(ctx, bf.insert(sized, ["c", "e"], noCreate=True), [False, True])

    absent = ctx.key("absent")
    raises(lambda: bf.insert(absent, ["a"], noCreate=True), "ERR not found")
    assert ctx.r.exists(absent) == 0

    check_flags(ctx, bf.insert(ctx.key("x3"), ["a"], expansion=3), [True])
    check_info(ctx, ctx.key("x3"), capacity=100, expansionRate=3)

    check_flags(ctx, bf.insert(ctx.key("ns"), ["a"], noScale=True), [True])
    check_info(ctx, ctx.key("ns"), capacity=100, expansionRate=None)

    # A non-scaling filter that fills up: the reply array ends with the error, in place.
    full = bf.insert(ctx.key("full"), ["a", "b", "c", "d", "e"], capacity=3, noScale=True)
    assert len(full) == 4, f"expected 3 flags and an error, got {full!r}"
    check_flags(ctx, full[:3], [True, True, True])
    check_error_value(full[3], "ERR non scaling filter is full")
    raises(lambda: bf.add(ctx.key("full"), "zz"), "ERR non scaling filter is full")
    check_flag(ctx, bf.add(ctx.key("full"), "a"), False)

    raises(lambda: bf.insert(ctx.key("bad"), ["a"], error=0), "Bad error rate")
    raises(lambda: bf.insert(ctx.key("bad"), ["a"], capacity=0), "Bad capacity")


def test_card(ctx):
    bf = ctx.r.bf()
    key = ctx.key("c")
    assert bf.card(key) == 0
    bf.madd(key, "a", "b", "b", "c")
    assert bf.card(key) == 3


def test_scandump_loadchunk_round_trip(ctx):
    bf = ctx.r.bf()
    source, copy = ctx.key("source"), ctx.key("copy")
    assert bf.create(source, 0.01, 100) is True
    items = [f"item{i}" for i in range(1000)]
    for start in range(0, len(items), 250):
        bf.madd(source, *items[start : start + 250])
    before = check_info(ctx, source)
    assert before["filterNum"] > 1, f"expected a chain of several filters, got {before}"

    chunks = scandump(ctx, source)
    assert len(chunks) >= 2, f"expected a header and data chunks, got {len(chunks)}"
    for iter, data in chunks:
        assert isinstance(data, bytes), f"chunk data should stay bytes, got {type(data)}"
        assert bf.loadchunk(copy, iter, data) in (True, "OK", b"OK")

    assert info_fields(bf.info(copy)) == before
    probes = items + [f"other{i}" for i in range(1000)]
    assert bf.mexists(copy, *probes) == bf.mexists(source, *probes)
    assert all(bf.mexists(copy, *items))
    assert scandump(ctx, copy) == chunks


def test_pipeline(ctx):
    # MULTI/EXEC is not served, so the pipeline is a plain (non-transactional) one.
    key = ctx.key("p")
    pipe = ctx.r.pipeline(transaction=False)
    bf = pipe.bf()
    for i in range(500):
        bf.add(key, f"i{i}")
    for i in range(500):
        bf.exists(key, f"i{i}")
    bf.card(key)
    pipe.set(ctx.key("s"), "v")
    pipe.get(ctx.key("s"))
    bf.info(ctx.key("missing"))
    replies = pipe.execute(raise_on_error=False)
    assert len(replies) == 1004
    adds, exists = replies[:500], replies[500:1000]
    for value in adds:
        assert value in (0, 1) and isinstance(value, bool) == ctx.resp3, f"BF.ADD gave {value!r}"
    check_flags(ctx, exists, [True] * 500)
    assert replies[1000] == sum(1 for value in adds if value)
    assert replies[1001] is True and replies[1002] == "v"
    check_error_value(replies[1003], "ERR not found")


def test_client_name_and_info(ctx):
    r = ctx.r
    name = "sieved-" + ctx.prefix.replace(":", "-").strip("-")
    assert r.client_setname(name) is True
    assert r.client_getname() == name
    me = r.client_info()
    assert me["name"] == name and me["id"] == r.client_id(), f"unexpected CLIENT INFO {me}"
    # redis-py announces itself with CLIENT SETINFO when it connects.
    assert me["lib-name"] == "redis-py", f"unexpected CLIENT INFO {me}"
    assert any(client["name"] == name for client in r.client_list()), "not in CLIENT LIST"


def test_ping_echo_info(ctx):
    r = ctx.r
    assert r.ping() is True
    assert r.echo("hello") == "hello"
    info = r.info()
    assert "redis_version" in info and "connected_clients" in info, f"unexpected INFO {info}"
    assert r.info("server")["redis_version"] == info["redis_version"]
    assert "used_memory" in r.info("memory")


def test_redis_py_test_fixtures(ctx):
    """What redis-py's own tests/conftest.py does before its first test, so that redis-py's suite
    starts against sieved: pytest_sessionstart reads INFO (_get_info: redis_version, arch_bits,
    cluster_enabled, and DPING to tell Redis Enterprise apart), then INFO's modules from the
    modules URL (skip_ifmodversion_lt compares their versions); each test gets a client from
    _get_client, a single connection from a pool built by parse_url, and flushes its database
    when done. Database 9, which no other check uses, stands in for the URL's."""
    url = f"redis://{ctx.host}:{ctx.port}/9"
    client = redis.Redis.from_url(url, **ctx.options)
    info = client.info()
    try:
        client.execute_command("DPING")
        enterprise = True
    except redis.ResponseError:
        enterprise = False
    client.connection_pool.disconnect()
    assert not enterprise
    version = tuple(int(part) for part in info["redis_version"].split("."))
    assert version >= (7, 0, 0), f"redis_version {info['redis_version']}"
    assert info["arch_bits"] == 64
    # A standalone server: the suite does not wait for a cluster to form.
    assert info["cluster_enabled"] == 0, f"cluster_enabled {info.get('cluster_enabled')!r}"
    # RedisBloom's module, at a version skip_ifmodversion_lt("2.8.0", "bf") lets through.
    modules = {module["name"]: module for module in info["modules"]}
    wanted = int("".join("%02d" % int(segment) for segment in "2.8.0".split(".")))
    assert modules["bf"]["ver"] >= wanted, f"modules {info['modules']}"
    listed = ctx.r.module_list()
    assert [(m["name"], m["ver"]) for m in listed] == [("bf", 80800), ("ReJSON", 20819)], f"MODULE LIST {listed}"

    pool = redis.ConnectionPool(**{**redis.connection.parse_url(url), **ctx.options})
    fixture = redis.Redis(connection_pool=pool).client()
    try:
        fixture.bf().add(ctx.key("seen"), "x")
        assert fixture.dbsize() == 1
    finally:
        fixture.flushdb()
        fixture.close()
        pool.disconnect()
    assert ctx.connect(db=9).dbsize() == 0


def test_set_get_type(ctx):
    r = ctx.r
    text, bloom = ctx.key("text"), ctx.key("bloom")
    assert r.set(text, "value") is True
    assert r.get(text) == "value"
    assert r.strlen(text) == 5
    assert r.get(ctx.key("missing")) is None
    r.bf().add(bloom, "x")
    assert r.type(bloom) == "MBbloom--"
    assert r.type(text) == "string"
    assert r.type(ctx.key("missing")) == "none"


def test_wrong_type_errors(ctx):
    r, bf = ctx.r, ctx.r.bf()
    text, bloom = ctx.key("text"), ctx.key("bloom")
    r.set(text, "value")
    bf.add(bloom, "x")
    raises(lambda: r.get(bloom), WRONGTYPE)
    raises(lambda: r.strlen(bloom), WRONGTYPE)
    raises(lambda: bf.add(text, "x"), WRONGTYPE)
    raises(lambda: bf.madd(text, "x", "y"), WRONGTYPE)
    raises(lambda: bf.insert(text, ["x"]), WRONGTYPE)
    raises(lambda: bf.create(text, 0.01, 100), WRONGTYPE)
    raises(lambda: bf.info(text), WRONGTYPE)
    raises(lambda: bf.card(text), WRONGTYPE)
    raises(lambda: bf.scandump(text, 0), WRONGTYPE)
    # RedisBloom answers "not there" rather than WRONGTYPE for lookups.
    check_flag(ctx, bf.exists(text, "x"), False)
    check_flags(ctx, bf.mexists(text, "x", "y"), [False, False])


def test_argument_errors(ctx):
    bf = ctx.r.bf()
    raises(lambda: bf.info(ctx.key("missing")), "ERR not found")
    raises(lambda: bf.scandump(ctx.key("missing"), 0), "ERR not found")
    raises(
        lambda: bf.create(ctx.key("e"), 1.5, 100),
        "ERR error rate must be in the range (0.000000, 1.000000)",
    )
    raises(
        lambda: bf.create(ctx.key("e"), 0.01, 0),
        "ERR capacity must be in the range [1, 1073741824]",
    )
    raises(
        lambda: bf.create(ctx.key("e"), 0.01, 100, expansion=2, noScale=True),
        "Nonscaling filters cannot expand",
    )
    raises(lambda: bf.loadchunk(ctx.key("e"), 1, b"garbage"), "ERR received bad data")
    raises(
        lambda: ctx.r.execute_command("BF.ADD", ctx.key("e")),
        "ERR wrong number of arguments for 'bf.add' command",
    )
    assert ctx.r.exists(ctx.key("e")) == 0

    key = ctx.key("n")
    assert bf.create(key, 0.01, 10, noScale=True) is True
    added = bf.madd(key, *[f"x{i}" for i in range(15)])
    assert len(added) == 11, f"expected 10 flags and an error, got {added!r}"
    check_flags(ctx, added[:10], [True] * 10)
    check_error_value(added[10], "ERR non scaling filter is full")
    assert bf.card(key) == 10


def test_expire_and_ttl(ctx):
    r = ctx.r
    key = ctx.key("e")
    r.bf().add(key, "x")
    assert r.ttl(key) == -1
    assert r.expire(key, 100) is True
    assert 0 < r.ttl(key) <= 100
    assert 0 < r.pttl(key) <= 100_000
    assert r.persist(key) is True
    assert r.ttl(key) == -1
    assert r.ttl(ctx.key("missing")) == -2
    assert r.expire(ctx.key("missing"), 100) is False
    assert r.pexpire(key, 1) is True
    # An expired key vanishes on its next access; wait for that rather than for the clock.
    while r.exists(key):
        time.sleep(0.001)
    check_flag(ctx, r.bf().exists(key, "x"), False)


def test_select(ctx):
    key = ctx.key("db")
    other = ctx.connect(db=1)
    other.bf().add(key, "x")
    assert other.exists(key) == 1
    assert ctx.r.exists(key) == 0
    check_flag(ctx, ctx.r.bf().exists(key, "x"), False)
    check_flag(ctx, other.bf().exists(key, "x"), True)
    other.close()


def test_json_documents(ctx):
    """redis-py's JSON helpers (r.json()), as applications use them against RedisJSON."""
    js = ctx.r.json()
    key = ctx.key("doc")
    doc = {"name": "crawl", "n": 1, "tags": ["a"], "meta": {"ok": True, "none": None}}
    assert js.set(key, "$", doc) is True
    assert js.get(key) == doc
    assert js.get(key, "$.meta.ok") == [True]
    assert js.get(key, ".name") == "crawl"
    assert js.set(key, "$.name", "again", nx=True) is None
    assert js.set(key, "$.new", 5, nx=True) is True
    assert js.numincrby(key, "$.n", 2) == [3]
    assert js.numincrby(key, "$.n", 0.5) == [3.5]
    assert js.arrappend(key, "$.tags", "b", "c") == [3]
    assert js.arrlen(key, "$.tags") == [3]
    assert js.arrindex(key, "$.tags", "c") == [2]
    assert js.arrpop(key, "$.tags") == ['"c"'] or js.get(key, "$.tags") == [["a", "b"]]
    assert js.strlen(key, "$.name") == [5]
    assert js.strappend(key, "!", "$.name") == [6]
    assert js.toggle(key, "$.meta.ok") == [0] or js.get(key, "$.meta.ok") == [False]
    assert sorted(js.objkeys(key, "$.meta")[0]) == ["none", "ok"]
    assert js.objlen(key, "$.meta") == [2]
    # RESP3 nests the per-path answers one level deeper.
    types = js.type(key, "$.meta.*")
    types = types[0] if ctx.resp3 else types
    assert [t[0] if isinstance(t, list) else t for t in types] == ["boolean", "null"], types
    assert js.merge(key, "$", {"meta": None, "added": [1]}) is True
    assert "meta" not in js.get(key)
    assert js.delete(key, "$.added") == 1
    assert js.clear(key, "$.tags") == 1
    assert js.get(key, "$.tags") == [[]]
    other = ctx.key("other")
    assert js.mset([(other, "$", {"x": 1}), (key, "$.x", 2)]) is True
    assert js.mget([key, other, ctx.key("missing")], "$.x") == [[2], [1], None]
    assert ctx.r.type(key) == "ReJSON-RL"
    assert js.debug("MEMORY", key) > 0
    raises(
        lambda: js.get(key, "$["),
        "Error occurred at position 2, Error at position 2: expected one of the following: "
        "'<string>[,<string>,...]', '<number>', ['start:end:steps'], '*'",
    )
    ctx.r.set(ctx.key("plain"), "v")
    raises(lambda: js.get(ctx.key("plain")), "Existing key has wrong Redis type")
    assert js.delete(key) == 1
    assert js.get(key) is None


CHECKS = [value for name, value in sorted(globals().items()) if name.startswith("test_")]


def main():
    port = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SIEVED_PORT")
    if not port:
        print("usage: test_clients.py PORT  (or set SIEVED_PORT)", file=sys.stderr)
        return 2
    host = os.environ.get("SIEVED_HOST", "127.0.0.1")
    print(f"redis-py {redis.__version__} against {host}:{port}")
    passed = failed = 0
    for flavour, options in flavours():
        for check in CHECKS:
            label = f"{check.__name__} [{flavour}]"
            try:
                ctx = Ctx(host, int(port), flavour, options, check.__name__)
                try:
                    check(ctx)
                finally:
                    ctx.r.close()
            except Exception:
                failed += 1
                print(f"FAIL {label}")
                traceback.print_exc(file=sys.stdout)
            else:
                passed += 1
                print(f"ok   {label}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
