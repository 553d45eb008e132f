/* timers.c: how late the kernel fired the qdisc timers that pace the testbed.
 *
 * Contract: attached to the tracepoint timer:hrtimer_expire_entry while a run
 * measures, it counts every expiry of a qdisc watchdog (the timer a TBF arms
 * for its next frame: every host NIC and link of the fabric; -DQDISC_WATCHDOG
 * is that function's address) on the CPU that fires it, in the per-CPU array
 * timer_late: TL_FIRED expiries, TL_SUM_NS and TL_MAX_NS of their lateness
 * (the tracepoint's `now` minus the timer's soft expiry), TL_OVER expiries
 * later than TL_OVER_NS. The watchdog is a hard-interrupt timer, so a late
 * one means the CPU took no interrupt: interrupts were off, or the hypervisor
 * was running something else on it. User space zeroes the array before a run
 * and reads it after; nothing here touches a packet.
 */
#include <linux/hrtimer.h>

#define TL_FIRED 0
#define TL_SUM_NS 1
#define TL_MAX_NS 2
#define TL_OVER 3
#define TL_OVER_NS 100000

BPF_PERCPU_ARRAY(timer_late, u64, 4);

struct expire_args { /* /sys/kernel/tracing/events/timer/hrtimer_expire_entry/format */
    u64 common;
    struct hrtimer *hrtimer;
    s64 now;
    void *function;
};

static __always_inline void add(int key, u64 v)
{
    u64 *p = timer_late.lookup(&key);
    if (p)
        *p += v;
}

int watchdog_expiry(struct expire_args *args)
{
    if ((u64)args->function != QDISC_WATCHDOG)
        return 0;
    s64 soft = 0;
    bpf_probe_read_kernel(&soft, sizeof(soft), &args->hrtimer->_softexpires);
    u64 late = args->now > soft ? args->now - soft : 0;
    add(TL_FIRED, 1);
    add(TL_SUM_NS, late);
    add(TL_OVER, late > TL_OVER_NS);
    int key = TL_MAX_NS;
    u64 *max = timer_late.lookup(&key);
    if (max && late > *max)
        *max = late; /* per CPU: no other writer */
    return 0;
}
