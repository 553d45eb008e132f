"""Can a run be trusted? The verdict every run carries.

A run is valid when the emulation did what it claims:

- every sending host's NIC kept its paced rate (|error| <= 2 %);
- every link that stayed busy served at its configured rate (>= 97 % of it
  while busy, the starting burst removed): otherwise the kernel fell behind;
- no packet was dropped by the per-CPU backlog queues (softnet), a drop that
  belongs to the emulator, not to the network being emulated;
- the CPUs were not saturated (busy < 95 % over the run).

On a virtual machine the hypervisor can take the CPUs away for milliseconds
(steal time): timers then fire late and links lose capacity. The verdict
reports the steal share and names it when it invalidates a run; `attempts`
in `testbed.run.experiment.run_valid` re-runs such runs with the same seed.

Anything else is reported but does not invalidate a run: drops in a switch
queue are a result, not an emulation failure.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

PACING_TOLERANCE = 0.02
SERVICE_MIN = 0.97
CPU_BUSY_MAX = 0.95
STEAL_NOTE = 0.02  # above this, an invalid run's reasons mention hypervisor steal


@dataclass
class CpuTimes:
    busy: int
    steal: int
    total: int

    @classmethod
    def now(cls) -> CpuTimes:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        idle = v[3] + v[4]  # idle + iowait
        steal = v[7] if len(v) > 7 else 0
        return cls(sum(v) - idle - steal, steal, sum(v))

    def busy_since(self, before: CpuTimes) -> float:
        dt = self.total - before.total
        return (self.busy - before.busy) / dt if dt > 0 else 0.0

    def steal_since(self, before: CpuTimes) -> float:
        """Share of CPU time a hypervisor gave to someone else."""
        dt = self.total - before.total
        return (self.steal - before.steal) / dt if dt > 0 else 0.0


@dataclass
class Verdict:
    valid: bool
    reasons: list[str]
    pacing_error_max: float
    pacing_error_mean: float
    saturated_links: int
    saturated_service_min: float
    softnet_drops: int
    cpu_busy: float
    cpu_steal: float
    sample_rate_hz: float
    pacing_error_by_host: dict[str, float] = field(default_factory=dict)
    saturated_service_by_port: dict[str, float] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def verdict(pacing: dict[str, float], service: dict[str, float], softnet_drops: int, cpu_busy: float,
            cpu_steal: float, sample_rate_hz: float) -> Verdict:
    reasons = []
    worst_pacing = max((abs(v) for v in pacing.values()), default=0.0)
    if worst_pacing > PACING_TOLERANCE:
        host = max(pacing, key=lambda h: abs(pacing[h]))
        reasons.append(f"host pacing off by {100 * pacing[host]:+.1f} % at {host} (tolerance "
                       f"{100 * PACING_TOLERANCE:.0f} %)")
    worst_service = min(service.values(), default=1.0)
    if worst_service < SERVICE_MIN:
        port = min(service, key=lambda q: service[q])
        reasons.append(f"busy link {port} served at {100 * worst_service:.1f} % of its rate (minimum "
                       f"{100 * SERVICE_MIN:.0f} %)")
    if softnet_drops > 0:
        reasons.append(f"{softnet_drops} packets dropped by the per-CPU backlog (emulator overload)")
    if cpu_busy > CPU_BUSY_MAX:
        reasons.append(f"CPUs {100 * cpu_busy:.0f} % busy (maximum {100 * CPU_BUSY_MAX:.0f} %)")
    if reasons and cpu_steal > STEAL_NOTE:
        reasons.append(f"the hypervisor took {100 * cpu_steal:.0f} % of the CPU time (steal): rerun on a quieter "
                       f"machine or at a lower rate")
    return Verdict(
        valid=not reasons, reasons=reasons, pacing_error_max=worst_pacing,
        pacing_error_mean=sum(pacing.values()) / len(pacing) if pacing else 0.0,
        saturated_links=len(service), saturated_service_min=worst_service, softnet_drops=softnet_drops,
        cpu_busy=cpu_busy, cpu_steal=cpu_steal, sample_rate_hz=sample_rate_hz, pacing_error_by_host=pacing,
        saturated_service_by_port=service)
