/* ringbuf.h: a consumer of a pinned BPF ring buffer, without libbpf.
 *
 * Contract. rb_open() opens the map pinned at `path` (BPF_OBJ_GET) and maps
 * its consumer page (read-write) and its producer page and data (read-only,
 * the data twice in a row, as the kernel lays it out) for a ring of `size`
 * bytes (a power of two, the map's max_entries). rb_consume() hands every
 * committed record to `fn`, in order, skips discarded ones, stops at the
 * first record still being written, and releases what it read. One
 * consumer only. The protocol is the kernel's (kernel/bpf/ringbuf.c): an
 * 8-byte header per record whose length has BUSY (bit 31) and DISCARD
 * (bit 30), records rounded up to 8 bytes, positions as 64-bit counters.
 */
#pragma once
#include <linux/bpf.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

struct rb {
    int fd;
    size_t page, size;
    unsigned long *cons_pos;
    unsigned long *prod_pos;
    uint8_t *data;
};

static int rb_open(struct rb *r, const char *path, size_t size)
{
    union bpf_attr attr;
    memset(&attr, 0, sizeof(attr));
    attr.pathname = (uint64_t)(unsigned long)path;
    r->fd = (int)syscall(__NR_bpf, BPF_OBJ_GET, &attr, sizeof(attr));
    if (r->fd < 0)
        return -1;
    r->page = (size_t)sysconf(_SC_PAGESIZE);
    r->size = size;
    void *c = mmap(NULL, r->page, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
    if (c == MAP_FAILED)
        return -1;
    void *p = mmap(NULL, r->page + 2 * size, PROT_READ, MAP_SHARED, r->fd, (off_t)r->page);
    if (p == MAP_FAILED)
        return -1;
    r->cons_pos = c;
    r->prod_pos = p;
    r->data = (uint8_t *)p + r->page;
    return 0;
}

/* the records committed so far, each to fn(ctx, record, length); returns how many */
static int rb_consume(struct rb *r, void (*fn)(void *ctx, const void *rec, uint32_t len), void *ctx)
{
    unsigned long cons = __atomic_load_n(r->cons_pos, __ATOMIC_ACQUIRE);
    unsigned long prod = __atomic_load_n(r->prod_pos, __ATOMIC_ACQUIRE);
    int n = 0;
    while (cons < prod) {
        uint32_t *hdr = (uint32_t *)(r->data + (cons & (r->size - 1)));
        uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
        if (len & BPF_RINGBUF_BUSY_BIT)
            break;
        uint32_t body = len & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
        if (!(len & BPF_RINGBUF_DISCARD_BIT)) {
            fn(ctx, (uint8_t *)hdr + BPF_RINGBUF_HDR_SZ, body);
            n++;
        }
        cons += (body + BPF_RINGBUF_HDR_SZ + 7) & ~7UL;
        __atomic_store_n(r->cons_pos, cons, __ATOMIC_RELEASE);
        prod = __atomic_load_n(r->prod_pos, __ATOMIC_ACQUIRE);
    }
    return n;
}
