/* lb_ofan.h: Ofan per-destination rotation (paper section 4.1, appendix F.2).
 *
 * Contract: lb_ofan_pick(sw, d, n_keys, cls) advances the pointer of
 * (destination key d, size class cls) at switch sw and returns an uplink slot
 * in [0, W). Pointer id = d + n_keys * cls. The pointer value i = old mod W
 * is mapped to a slot by port(i) = (xor_w(P[i], id1) + id2) mod W with
 * id1 = low B_BITS bits of id, id2 = (id >> B_BITS) mod W, P = ofan_basis.
 * Mirrored by testbed.schemes.ofan_port.
 * Concurrency: one pointer is shared by all CPUs of the switch; the 64-bit
 * fetch-add makes each packet take a distinct pointer value.
 */
#pragma once
#include "maps.h"

static __always_inline __u32 lb_ofan_pick(__u32 sw, __u32 d, __u32 n_keys, __u32 cls)
{
    __u32 id = d + n_keys * cls;
    __u32 slot = sw * N_PTR + id;
    __u64 *ptr = ofan_ptr.lookup(&slot);
    if (!ptr)
        return 0;
    __u64 old = __sync_fetch_and_add(ptr, 1);
    __u32 i = old % W;
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
