/* topology.h: the fabric as the programs see it: node tiers, ports, switches, destinations.
 *
 * Contract: every value here is written by Python and only read by the programs.
 * LEVEL_* are testbed.topology.Level; port_info.stage is testbed.topology.Stage.
 * The structs are mirrored field by field in testbed/dataplane/maps.py (PortInfo,
 * SwitchCfg, DstInfo: checked against the compiled program when it is loaded) and
 * written by testbed/dataplane/switches.py. All integer fields are host-endian.
 */
#pragma once

/* Node tiers (testbed.topology.Level). */
#define LEVEL_HOST 0
#define LEVEL_EDGE 1
#define LEVEL_AGG  2
#define LEVEL_CORE 3

/* Port of a switch or host: port_info[ifindex]. */
struct port_info {
    __u32 node;         /* switch id (switches) or host id (hosts) */
    __u32 level;        /* LEVEL_* of the node owning this port */
    __u32 peer_ifindex; /* ifindex of the other end of the link */
    __u32 stage;        /* testbed.topology.Stage of this port's egress */
    __u32 to_host;      /* 1 if the peer is a host */
    __u32 local;        /* port number inside its switch: downlinks first, then uplinks */
    __u8  mac[8];       /* this port's MAC (6 bytes used) */
};

/* Per-switch configuration: switch_cfg[switch id]. */
struct switch_cfg {
    __u32 level;
    __u32 pod;
    __u32 index;        /* edge/agg index inside the pod */
    __u32 edge_global;  /* pod * k/2 + index, edges only */
    __u32 scheme;       /* SCHEME_* (schemes.h) */
    __u32 seed;         /* ECMP hash seed */
    __u32 pipe_size;    /* pOfan: ports per pipe, or PIPES_PER_CPU (schemes.h) */
    __u32 top;          /* 1 for a switch with no uplinks (a core, or a spine of a leaf-spine) */
};

/* Where a destination address lives: dst_info[IPv4 daddr, network order]. */
struct dst_info {
    __u32 host;
    __u32 pod;
    __u32 edge;         /* edge index inside the pod */
    __u32 edge_global;
    __u32 slot;         /* host index under its edge */
    __u32 pad;
    __u8  mac[8];
};
