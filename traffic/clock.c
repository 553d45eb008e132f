/* clock.c: the clocks, sleeping and real-time priority the sender's threads share.
 *
 * Contract. mono_ns(): CLOCK_MONOTONIC in ns (the kernel's ACK timestamps'
 * clock); now_s(): the same in seconds (deadlines, starts); sleep_us():
 * sleeps that long, resumed after signals; realtime(): SCHED_FIFO at `prio`
 * for the calling thread, best effort (the transport's threads: window.c,
 * acks.c).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <time.h>

#include "sender.h"

uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void sleep_us(unsigned long us)
{
    struct timespec ts = {.tv_sec = us / 1000000, .tv_nsec = (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Real-time priority for the transport's threads (best effort: the verdict measures what it achieved). The
 * ACK thread above the sender threads: under a loaded fabric a normal thread woke hundreds of us late. */
void realtime(int prio)
{
    struct sched_param sp = {.sched_priority = prio};
    pthread_setschedparam(pthread_self(), SCHED_FIFO, &sp);
}
