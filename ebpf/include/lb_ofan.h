/* lb_ofan.h: Ofan and pOfan per-destination rotation (paper sections 4.1, 5.1
 * and appendix F.2).
 *
 * Contract: lb_ofan_pick() advances the pointer of (destination key d, size
 * class cls) at switch sw and returns a valid uplink slot (bit set in `mask`,
 * never 0 here): a pointer value that maps to an invalid uplink is skipped
 * and the pointer advanced again (paper section 4.1, failures), so each
 * valid uplink still gets one packet per round. A CPU whose W tries on a
 * shared pointer all drew invalid uplinks (other CPUs took the values in
 * between) falls back to a valid uplink drawn from the last value: rare,
 * and never a failed link (it once sent 1 packet of 4,096 into one).
 * Pointer id = d + n_keys * cls. The pointer value i = old mod W is mapped to
 * a slot by port(i) = (xor_w(P[i], id1) + id2) mod W with id1 = the low
 * B_BITS bits of id, id2 = (id >> B_BITS) mod W and P = ofan_basis.
 * Which pointer:
 *   Ofan              one set per switch (pipe 0 of ofan_ptr);
 *   pOfan, P ports    one set per pipe, pipe = ingress port number / P;
 *   pOfan, per-CPU    one set per CPU (ofan_ptr_cpu), CPUs standing in for pipes.
 * Weighted Ofan (lb_wofan_pick): Ofan's pointer and port order, in rounds of
 * W pointer values; round j = (value / W) mod R of the destination key's R
 * rounds (wofan_round, R <= WOFAN_ROUNDS) makes only its eligible uplinks takeable, so an uplink
 * eligible in c of the R rounds gets c packets per R rounds. The control plane
 * makes the uplink of the largest weight eligible in every round, so W tries
 * always find one; a round with no valid eligible uplink (a failure the rounds
 * do not know yet) takes every valid one. No rounds (0), or one round with
 * every valid uplink (no failure, or equal weights), is Ofan, packet for packet.
 * Mirrored by testbed.models.decisions.ofan_port, wofan_port and pofan_pipe.
 * Concurrency: shared pointers (Ofan, pipes) take a 64-bit fetch-add, so each
 * packet gets its own pointer value even when CPUs race; per-CPU pointers are
 * only touched by their CPU and need no atomics.
 */
#pragma once
#include "maps.h"
#include "lb_mask.h"

static __always_inline __u32 lb_ofan_port(__u64 ptr_value, __u32 id)
{
    __u32 i = ptr_value % W;
    __u32 *p = ofan_basis.lookup(&i);
    if (!p)
        return 0;
    __u32 v = *p;
    __u32 x = v ^ (id & ((1u << B_BITS) - 1));
    if (x < W)
        v = x;
    v += (id >> B_BITS) % W;
    if (v >= W)
        v -= W;
    return v;
}

/* Advance *ptr until the uplink it maps to is valid and return that uplink.
 * `perm`: map pointer values through Ofan's port order (else slot order, as
 * Simple RR does); `shared`: the pointer is shared by all CPUs (fetch-add)
 * rather than per CPU. Both are constants at every call site. */
static __always_inline __u32 lb_rotate(__u64 *ptr, int shared, int perm, __u32 id, __u32 mask)
{
    __u32 port = 0;
#pragma clang loop unroll(disable)
    for (__u32 t = 0; t < W; t++) {
        __u64 old;
        if (shared) {
            old = __sync_fetch_and_add(ptr, 1);
        } else {
            old = *ptr;
            *ptr = old + 1;
        }
        port = perm ? lb_ofan_port(old, id) : old % W;
        if ((mask >> port) & 1)
            return port;
    }
    /* Only a shared pointer gets here: other CPUs took the values between our
     * W tries, and every one we drew was invalid. Never send into a failed
     * link: take a valid uplink drawn from the pointer value instead. */
    return lb_mask_draw(mask, port);
}

static __always_inline __u32 lb_ofan_pick(__u32 sw, __u32 pipe, __u32 d, __u32 n_keys, __u32 cls, __u32 mask)
{
    __u32 id = d + n_keys * cls;
    __u32 slot = (sw * K + pipe) * N_PTR + id;
    __u64 *ptr = ofan_ptr.lookup(&slot);
    return ptr ? lb_rotate(ptr, 1, 1, id, mask) : 0;
}

/* The uplinks of round `value` of key (sw, d), within `mask` (every valid one for a round naming none). */
static __always_inline __u32 lb_wofan_eligible(__u32 sw, __u32 d, __u64 value, __u32 mask)
{
    __u32 base = (sw * N_KEYS + d) * WOFAN_ROUNDS;
    __u64 *first = wofan_round.lookup(&base);
    __u32 rounds = first ? (__u32)(*first >> 32) : 0;
    if (rounds == 0 || rounds > WOFAN_ROUNDS)
        return mask;
    __u32 key = base + (__u32)((value / W) % rounds);
    __u64 *r = wofan_round.lookup(&key);
    __u32 e = r ? (__u32)*r & mask : 0;
    return e ? e : mask;
}

static __always_inline __u32 lb_wofan_pick(__u32 sw, __u32 d, __u32 n_keys, __u32 cls, __u32 mask)
{
    __u32 id = d + n_keys * cls;
    __u32 slot = sw * K * N_PTR + id;
    __u64 *ptr = ofan_ptr.lookup(&slot);
    if (!ptr)
        return 0;
    __u32 port = 0;
#pragma clang loop unroll(disable)
    for (__u32 t = 0; t < W; t++) {
        __u64 old = __sync_fetch_and_add(ptr, 1);
        port = lb_ofan_port(old, id);
        if ((lb_wofan_eligible(sw, d, old, mask) >> port) & 1)
            return port;
    }
    return lb_mask_draw(mask, port); /* other CPUs took the values between our W tries */
}

static __always_inline __u32 lb_ofan_pick_percpu(__u32 sw, __u32 d, __u32 n_keys, __u32 cls, __u32 mask)
{
    __u32 id = d + n_keys * cls;
    __u32 slot = sw * N_PTR + id;
    __u64 *ptr = ofan_ptr_cpu.lookup(&slot);
    return ptr ? lb_rotate(ptr, 0, 1, id, mask) : 0;
}
