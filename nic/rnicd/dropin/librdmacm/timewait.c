/* SPDX-License-Identifier: BSD-2-Clause */
/* TIMEWAIT_EXIT as the kernel's rdma_cm delivers it on IB transport
 * (RoCE): not with DISCONNECTED, but once the IB CM's timewait is over,
 * for an id the program still has. ib_cm enters timewait when its side
 * of the disconnect is through (the DREP received, sent, or the DREQ
 * timed out) and leaves it after the path's packet lifetime + 1 as a
 * timeout: 4.096 us x 2^17, which cm_convert_to_ms makes 512 ms on RoCE
 * (CMA_IBOE_PACKET_LIFETIME 16). An id destroyed before then gets
 * nothing: rping and most programs never see the event. iWARP's CM has no
 * timewait and sends none.
 *
 * The library has no thread: each channel has a timerfd in its epoll set,
 * armed for the earliest timewait of its ids, so channel->fd polls
 * readable when one ends; rdma_get_cm_event then queues the events due. */
#include "cm.h"

#include <time.h>
#include <unistd.h>
#include <sys/timerfd.h>

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* cm_timewait_arm sets ch's timer to the earliest timewait end among its
 * ids (or disarms it). Caller holds cm_mu. */
void cm_timewait_arm(struct cm_channel *ch)
{
	struct itimerspec its = {0};
	long long due = 0;
	if (!ch || ch->timerfd < 0)
		return;
	for (struct cm_id *c = cm_ids; c; c = c->next)
		if (c->timewait_due && !c->destroyed && c->id.channel == &ch->ch && (!due || c->timewait_due < due))
			due = c->timewait_due;
	if (due) { /* absolute on CLOCK_MONOTONIC: a past end fires at once */
		its.it_value.tv_sec = due / 1000;
		its.it_value.tv_nsec = (due % 1000) * 1000000;
	}
	timerfd_settime(ch->timerfd, TFD_TIMER_ABSTIME, &its, NULL);
}

/* timewait_exit starts c's timewait: its local side of the disconnect is
 * through. Caller holds cm_mu. */
void timewait_exit(struct cm_id *c)
{
	if (c->timewait_sent)
		return;
	c->timewait_sent = 1;
	if (cm_on_iwarp(c))
		return;
	c->timewait_due = now_ms() + CM_TIMEWAIT_MS;
	cm_timewait_arm(to_cch(c->id.channel));
}

/* cm_timewait_fire queues TIMEWAIT_EXIT for ch's ids whose timewait is
 * over, then arms the timer for the next. Caller holds cm_mu. */
void cm_timewait_fire(struct cm_channel *ch)
{
	uint64_t n;
	long long now = now_ms();
	if (ch->timerfd < 0)
		return;
	if (read(ch->timerfd, &n, sizeof(n)) < 0) {
		/* not expired yet: nothing to clear */
	}
	for (struct cm_id *c = cm_ids; c; c = c->next) {
		struct cm_event *e;
		if (!c->timewait_due || c->timewait_due > now || c->id.channel != &ch->ch)
			continue;
		c->timewait_due = 0;
		if (!c->destroyed && (e = cm_event_new(c, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0)))
			cm_event_queue(e);
	}
	cm_timewait_arm(ch);
}
