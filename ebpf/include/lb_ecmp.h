/* lb_ecmp.h: ECMP, a hash of the 5-tuple with a per-switch seed.
 *
 * Contract: lb_ecmp_pick() returns a valid uplink slot: the (hash mod number
 * of valid uplinks)-th valid one (`mask` is never 0 here). The hash is
 * mirrored exactly by testbed.models.decisions.ecmp_hash (same words, same
 * order):
 * the IPv4 addresses and the first 4 bytes of the L4 header (UDP/TCP ports)
 * are read as little-endian u32 words as they lie in the packet.
 * Stateless: no concurrency concerns.
 */
#pragma once
#include "lb_mask.h"

#define ECMP_MULT 0x9E3779B1u

static __always_inline __u32 lb_ecmp_mix(__u32 h, __u32 x)
{
    h ^= x;
    h *= ECMP_MULT;
    h ^= h >> 16;
    return h;
}

static __always_inline __u32 lb_ecmp_pick(__u32 seed, __u32 saddr, __u32 daddr, __u32 ports, __u32 proto,
                                          __u32 mask)
{
    __u32 h = lb_ecmp_mix(seed, saddr);
    h = lb_ecmp_mix(h, daddr);
    h = lb_ecmp_mix(h, ports);
    h = lb_ecmp_mix(h, proto);
    return lb_mask_draw(mask, h);
}
