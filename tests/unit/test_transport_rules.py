"""The transport's rules in C (traffic/cca.c, traffic/transport.c), compiled
as a library and driven with synthetic ACKs: each CCA's cases, and loss
recovery (duplicate-ACK threshold, NewReno, timeouts). No kernel needed."""

from __future__ import annotations

import ctypes as ct
import subprocess
from pathlib import Path
from typing import Any

import pytest

TRAFFIC = Path(__file__).resolve().parents[2] / "traffic"
R = {
    "increase": 0,
    "decrease": 1,
    "held": 2,
    "fair": 3,
    "prop": 4,
    "fast": 5,
    "nochange": 6,
    "loss": 7,
    "rto": 8,
    "quick": 9,
}
DCTCP, SWIFT, NSCC = 1, 2, 3
US = 1000


class Params(ct.Structure):
    _fields_ = [("kind", ct.c_int)] + [
        (n, ct.c_double)
        for n in (
            "base_rtt_ns",
            "init_cwnd",
            "min_cwnd",
            "max_cwnd",
            "dctcp_g",
            "swift_target_ns",
            "swift_ai",
            "swift_beta",
            "swift_max_mdf",
            "nscc_target_ns",
            "nscc_alpha",
            "nscc_fi",
            "nscc_eta",
            "nscc_gamma",
            "nscc_fi_scale",
            "nscc_ewma",
            "nscc_fast_ns",
        )
    ]


class Cca(ct.Structure):
    _fields_ = [
        ("cwnd", ct.c_double),
        ("srtt_ns", ct.c_double),
        ("alpha", ct.c_double),
        ("win_acked", ct.c_uint32),
        ("win_marked", ct.c_uint32),
        ("win_start_ns", ct.c_uint64),
        ("last_cut_ns", ct.c_uint64),
        ("avg_delay_ns", ct.c_double),
        ("inc", ct.c_double),
        ("last_eta_ns", ct.c_uint64),
        ("fast_since_ns", ct.c_uint64),
        ("epoch_start_ns", ct.c_uint64),
        ("epoch_acked", ct.c_uint32),
        ("last_epoch_acked", ct.c_uint32),
        ("fast_ok", ct.c_int),
    ]


@pytest.fixture(scope="module")
def lib(tmp_path_factory: Any) -> Any:
    so = tmp_path_factory.mktemp("cc") / "libtransport.so"
    subprocess.run(
        [
            "gcc",
            "-O2",
            "-Wall",
            "-shared",
            "-fPIC",
            "-o",
            str(so),
            str(TRAFFIC / "cca.c"),
            str(TRAFFIC / "transport.c"),
        ],
        check=True,
    )
    lib = ct.CDLL(str(so))
    lib.cca_on_ack.argtypes = [ct.POINTER(Cca), ct.POINTER(Params), ct.c_uint64, ct.c_double, ct.c_int]
    lib.cca_init.argtypes = [ct.POINTER(Cca), ct.POINTER(Params), ct.c_uint64]
    lib.cca_on_loss.argtypes = [ct.POINTER(Cca), ct.POINTER(Params), ct.c_uint64]
    lib.tp_sizeof.restype = ct.c_size_t
    lib.tp_init.argtypes = [ct.c_void_p, ct.c_uint32, ct.c_uint32, ct.POINTER(Params), ct.c_double, ct.c_uint64]
    lib.tp_next.argtypes = [ct.c_void_p, ct.c_uint64, ct.POINTER(ct.c_uint32), ct.POINTER(ct.c_int)]
    lib.tp_ack.argtypes = [ct.c_void_p, ct.c_uint64, ct.c_uint32, ct.c_double, ct.c_int]
    lib.tp_rto_due.argtypes = [ct.c_void_p, ct.c_uint64]
    lib.tp_rto.argtypes = [ct.c_void_p, ct.c_uint64]
    lib.tp_stats.argtypes = [ct.c_void_p, ct.POINTER(ct.c_uint64)]
    lib.tp_free.argtypes = [ct.c_void_p]
    return lib


def params(kind: int, **kw: float) -> Params:
    base = 100 * US
    p = Params(
        kind=kind,
        base_rtt_ns=base,
        init_cwnd=100,
        min_cwnd=1,
        max_cwnd=150,
        dctcp_g=1 / 16,
        swift_target_ns=base + 20 * US,
        swift_ai=1,
        swift_beta=0.8,
        swift_max_mdf=0.5,
        nscc_target_ns=base,
        nscc_alpha=4 / base,
        nscc_fi=5,
        nscc_eta=0.15,
        nscc_gamma=0.8,
        nscc_fi_scale=0.25,
        nscc_ewma=0.0125,
        nscc_fast_ns=base / 12,
    )
    for k, v in kw.items():
        setattr(p, k, v)
    return p


def fresh(lib: Any, p: Params) -> Cca:
    c = Cca()
    lib.cca_init(ct.byref(c), ct.byref(p), 1)
    return c


def test_nscc_four_cases(lib: Any) -> None:
    p = params(NSCC)
    base, target = p.base_rtt_ns, p.nscc_target_ns
    cases = {
        (False, True): R["fair"],
        (False, False): R["prop"],
        (True, True): R["decrease"],
        (True, False): R["nochange"],
    }
    for (ecn, above), rule in cases.items():
        c = fresh(lib, p)
        c.fast_ok = 0  # no fast increase in play
        rtt = base + (2 * target if above else target / 2)
        w0 = c.cwnd
        got = lib.cca_on_ack(ct.byref(c), ct.byref(p), 1 + 10 * US, rtt, int(ecn))
        assert got == rule, (ecn, above)
        if rule == R["decrease"]:
            # avg_delay starts at this delay (2 targets): cwnd * max(1 - 0.8 * (2t - t) / 2t, 0.5) = 0.6 cwnd
            assert c.cwnd == pytest.approx(0.6 * w0)
        elif rule == R["nochange"]:
            assert c.cwnd == w0
        else:
            assert c.cwnd > w0


def test_nscc_decreases_at_most_once_per_base_rtt(lib: Any) -> None:
    p = params(NSCC)
    c = fresh(lib, p)
    t, rules = 1 + US, []
    for _ in range(30):  # ACKs 10 us apart, all marked and above target: 300 us = 3 base RTTs
        rules.append(lib.cca_on_ack(ct.byref(c), ct.byref(p), t, p.base_rtt_ns + 2 * p.nscc_target_ns, 1))
        t += 10 * US
    assert rules.count(R["decrease"]) == 3 and rules.count(R["held"]) == 27


def test_dctcp_alpha_and_one_cut_per_rtt(lib: Any) -> None:
    p = params(DCTCP)
    c = fresh(lib, p)
    assert c.alpha == 1.0
    w0 = c.cwnd
    assert lib.cca_on_ack(ct.byref(c), ct.byref(p), 2, p.base_rtt_ns, 1) == R["decrease"]
    assert c.cwnd == pytest.approx(w0 / 2)  # alpha 1: a halving
    assert lib.cca_on_ack(ct.byref(c), ct.byref(p), 3, p.base_rtt_ns, 1) == R["held"]
    # a whole RTT without marks: alpha <- 15/16 alpha, the window grows by about one packet
    c2 = fresh(lib, p)
    w = c2.cwnd
    for i in range(100):
        lib.cca_on_ack(ct.byref(c2), ct.byref(p), 2 + i * US, p.base_rtt_ns, 0)
    assert c2.cwnd == pytest.approx(w + 1, abs=0.05)
    lib.cca_on_ack(ct.byref(c2), ct.byref(p), 2 + 100 * US + 1, p.base_rtt_ns, 0)
    assert c2.alpha == pytest.approx(15 / 16)
    lib.cca_on_loss(ct.byref(c2), ct.byref(p), 3 + 100 * US)
    assert c2.cwnd == pytest.approx((w + 1) / 2, abs=0.05)


def test_swift_increase_below_target_decrease_above(lib: Any) -> None:
    p = params(SWIFT)
    c = fresh(lib, p)
    w0 = c.cwnd
    assert lib.cca_on_ack(ct.byref(c), ct.byref(p), 2, p.swift_target_ns - US, 0) == R["increase"]
    assert c.cwnd == pytest.approx(w0 + 1 / w0)
    w1 = c.cwnd
    rtt = 2 * p.swift_target_ns
    assert lib.cca_on_ack(ct.byref(c), ct.byref(p), 3, rtt, 0) == R["decrease"]
    assert c.cwnd == pytest.approx(w1 * max(1 - 0.8 * (rtt - p.swift_target_ns) / rtt, 0.5))
    assert lib.cca_on_ack(ct.byref(c), ct.byref(p), 4, rtt, 0) == R["held"]


class Flow:
    def __init__(self, lib: Any, npkts: int, dupthresh: int, p: Params) -> None:
        self.lib, self.p = lib, p
        self.buf = ct.create_string_buffer(lib.tp_sizeof())
        assert lib.tp_init(self.buf, npkts, dupthresh, ct.byref(p), 1e6, 0) == 0

    def send_all(self, now: int) -> list[tuple[int, int]]:
        out = []
        psn, rtx = ct.c_uint32(), ct.c_int()
        while self.lib.tp_next(self.buf, now, ct.byref(psn), ct.byref(rtx)):
            out.append((psn.value, rtx.value))
        return out

    def ack(self, psn: int, now: int = 10) -> int:
        return int(self.lib.tp_ack(self.buf, now, psn, self.p.base_rtt_ns, 0))

    def stats(self) -> dict[str, int]:
        v = (ct.c_uint64 * 10)()
        self.lib.tp_stats(self.buf, v)
        return dict(
            zip(
                (
                    "una",
                    "inflight",
                    "acked",
                    "lost",
                    "retransmits",
                    "fast_rtx",
                    "rtos",
                    "spurious",
                    "in_recovery",
                    "dupacks",
                ),
                map(int, v),
                strict=False,
            )
        )


def test_duplicate_ack_threshold_and_new_reno(lib: Any) -> None:
    p = params(DCTCP, init_cwnd=20)
    f = Flow(lib, 20, 5, p)
    assert [x for x, _ in f.send_all(0)] == list(range(20))
    for psn in range(2, 6):  # 0 and 1 missing: four duplicate ACKs, below the threshold of 5
        f.ack(psn)
    assert f.stats()["fast_rtx"] == 0
    f.ack(6)  # the fifth: PSN 0 is declared lost and sent again first
    s = f.stats()
    assert s["fast_rtx"] == 1 and s["lost"] == 1 and s["in_recovery"] == 1
    assert f.send_all(20)[0] == (0, 1)
    f.ack(0)  # a partial ACK: una moves to 1, the next hole, declared lost at once (NewReno)
    s = f.stats()
    assert s["una"] == 1 and s["lost"] == 1
    f.ack(1)  # the original 1 arrives after all: that loss was spurious; una jumps to 7, still below the
    s = f.stats()  # recovery point, so 7 is the next hole: NewReno declares it lost too (reordering costs this)
    assert s["spurious"] == 1 and s["una"] == 7 and s["lost"] == 1
    assert f.ack(3) == -1  # a packet acknowledged twice feeds nothing
    lib.tp_free(f.buf)


def test_timeout_declares_everything_in_flight_lost(lib: Any) -> None:
    p = params(DCTCP, init_cwnd=10)
    f = Flow(lib, 10, 5, p)
    f.send_all(0)
    f.ack(4)
    assert not lib.tp_rto_due(f.buf, 500 * US)
    assert lib.tp_rto_due(f.buf, 2_000 * US)  # min RTO 1 ms
    # a clock read before the flow's last progress (the ACK thread's, taken before a sender's send) is no time
    # elapsed: an unsigned difference wrapped to 2^64 fired a timeout 8 ms into a k=12 DCTCP run
    late = Flow(lib, 10, 5, p)
    late.send_all(3_000 * US)
    assert not lib.tp_rto_due(late.buf, 2_999 * US)
    lib.tp_free(late.buf)
    lib.tp_rto(f.buf, 2_000 * US)
    s = f.stats()
    assert s["rtos"] == 1 and s["lost"] == 9 and s["inflight"] == 0
    resent = f.send_all(2_000 * US)  # the window restarted at one packet
    assert resent == [(0, 1)]
    lib.tp_free(f.buf)
