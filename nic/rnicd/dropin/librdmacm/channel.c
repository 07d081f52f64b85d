/* SPDX-License-Identifier: BSD-2-Clause */
/* Event channels: the queue of an id's events, its fd (an epoll set of an
 * eventfd written for each queued event, a timerfd for its ids' timewait
 * ends and the devices' sockets, so it polls readable when an event may
 * be had, and may be made non-blocking),
 * rdma_get_cm_event / rdma_ack_cm_event, and DEVICE_REMOVAL for the ids
 * of a daemon that went away. */
#include "cm.h"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

struct cm_channel *cm_channels;

CM_EXPORT struct rdma_event_channel *rdma_create_event_channel(void)
{
	struct cm_channel *ch;
	struct epoll_event ev = {.events = EPOLLIN};
	int err = cm_init();

	if (err)
		return errno = err, NULL;
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return errno = ENOMEM, NULL;
	ch->ch.fd = epoll_create1(EPOLL_CLOEXEC);
	ch->evfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ch->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (ch->ch.fd < 0 || ch->evfd < 0 || ch->timerfd < 0 || epoll_ctl(ch->ch.fd, EPOLL_CTL_ADD, ch->evfd, &ev) < 0 ||
	    epoll_ctl(ch->ch.fd, EPOLL_CTL_ADD, ch->timerfd, &ev) < 0) {
		err = errno;
		goto fail;
	}
	pthread_mutex_lock(&cm_mu);
	for (int i = 0; i < cm_ndevs; i++)
		if (!cm_devs[i].dead && epoll_ctl(ch->ch.fd, EPOLL_CTL_ADD, cm_devs[i].fd, &ev) < 0)
			err = errno;
	if (!err) {
		ch->next = cm_channels;
		cm_channels = ch;
	}
	pthread_mutex_unlock(&cm_mu);
	if (!err)
		return &ch->ch;
fail:
	if (ch->ch.fd >= 0)
		close(ch->ch.fd);
	if (ch->evfd >= 0)
		close(ch->evfd);
	if (ch->timerfd >= 0)
		close(ch->timerfd);
	free(ch);
	errno = err;
	return NULL;
}

/* rdma_destroy_event_channel: a thread still waiting in rdma_get_cm_event
 * (rping's event thread, when main returns) stays blocked, as in the
 * kernel's read(2) of a closed rdma_cm fd; it frees the channel. */
CM_EXPORT void rdma_destroy_event_channel(struct rdma_event_channel *channel)
{
	struct cm_channel *ch = to_cch(channel), **p;
	int last;
	if (!channel)
		return;
	pthread_mutex_lock(&cm_mu);
	for (p = &cm_channels; *p; p = &(*p)->next)
		if (*p == ch) {
			*p = ch->next;
			break;
		}
	while (ch->head) {
		struct cm_event *e = ch->head;
		ch->head = e->next;
		cm_id_unref(e->owner);
		free(e);
	}
	ch->destroyed = 1;
	close(ch->ch.fd);
	close(ch->evfd);
	close(ch->timerfd);
	last = ch->waiters == 0;
	pthread_mutex_unlock(&cm_mu);
	if (last)
		free(ch);
}

/* cm_event_new makes an event of id (taking a reference). Caller holds
 * cm_mu; the event is queued with cm_event_queue. */
struct cm_event *cm_event_new(struct cm_id *id, enum rdma_cm_event_type type, int status)
{
	struct cm_event *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->ev.id = &id->id;
	e->ev.event = type;
	e->ev.status = status;
	e->owner = id;
	id->refs++;
	return e;
}

/* wake makes ch's fd poll readable. */
static void wake(struct cm_channel *ch)
{
	uint64_t one = 1;
	if (write(ch->evfd, &one, sizeof(one)) < 0) {
		/* saturated: readable anyway */
	}
}

void cm_event_queue(struct cm_event *e)
{
	struct cm_channel *ch = to_cch(e->owner->id.channel);
	if (!ch || e->owner->destroyed) {
		cm_id_unref(e->owner);
		free(e);
		return;
	}
	if (ch->tail)
		ch->tail->next = e;
	else
		ch->head = e;
	ch->tail = e;
	wake(ch);
}

/* all_dead: every device's daemon is gone, so no event can come but those
 * queued. Caller holds cm_mu. */
static int all_dead(void)
{
	for (int i = 0; i < cm_ndevs; i++)
		if (!cm_devs[i].dead)
			return 0;
	return cm_ndevs > 0;
}

/* dev_died: the daemon of device i is gone: its socket leaves every
 * channel's set (it would poll readable for ever) and each id on it gets
 * DEVICE_REMOVAL, once, and no TIMEWAIT_EXIT (the kernel destroys the
 * IB CM's ids of a removed device). Once every daemon is gone each
 * channel's fd polls readable for good and rdma_get_cm_event fails with
 * ENODEV after the queued events: nothing else can come, and a program
 * waiting for a connection's next event would wait for ever. Caller holds
 * cm_mu. */
static void dev_died(int i)
{
	if (cm_devs[i].dead)
		return;
	cm_devs[i].dead = 1;
	for (struct cm_channel *ch = cm_channels; ch; ch = ch->next)
		epoll_ctl(ch->ch.fd, EPOLL_CTL_DEL, cm_devs[i].fd, NULL);
	for (struct cm_id *id = cm_ids; id; id = id->next) {
		struct cm_event *e;
		if (id->destroyed || id->removal_sent || (id->dev != i && !id->listener[i]))
			continue;
		id->removal_sent = 1;
		id->timewait_due = 0;
		if ((e = cm_event_new(id, RDMA_CM_EVENT_DEVICE_REMOVAL, 0)))
			cm_event_queue(e);
	}
	if (all_dead())
		for (struct cm_channel *ch = cm_channels; ch; ch = ch->next)
			wake(ch);
}

/* cm_sink receives a context's CM events (with its connection locked). */
void cm_sink(void *key, uint16_t op, const uint8_t *body, size_t n)
{
	pthread_mutex_lock(&cm_mu);
	for (int i = 0; i < cm_ndevs; i++) {
		if (cm_devs[i].key != key)
			continue;
		if (op == RNICD_OP_CM_RESULT)
			cm_on_result(i, body, n);
		else if (op == RNICD_OP_CM_DISCONNECTED)
			cm_on_disconnected(i, body, n);
		break;
	}
	pthread_mutex_unlock(&cm_mu);
}

/* poll_devices reads every live device's socket (no lock held). */
static void poll_devices(void)
{
	for (int i = 0; i < cm_ndevs; i++) {
		if (__atomic_load_n(&cm_devs[i].dead, __ATOMIC_RELAXED))
			continue;
		if (rnic_private_cm_poll(cm_devs[i].verbs) == EIO) {
			pthread_mutex_lock(&cm_mu);
			dev_died(i);
			pthread_mutex_unlock(&cm_mu);
		}
	}
}

/* pop takes the channel's next event. Caller holds cm_mu. */
static struct cm_event *pop(struct cm_channel *ch)
{
	struct cm_event *e;
	uint64_t v;
	if (read(ch->evfd, &v, sizeof(v)) < 0) {
		/* empty: nothing was signalled since the last read */
	}
	e = ch->head;
	if (e) {
		ch->head = e->next;
		if (!ch->head)
			ch->tail = NULL;
		e->next = NULL;
	}
	if (ch->head || all_dead()) /* more to come, or ENODEV: stay readable */
		wake(ch);
	return e;
}

/* orphaned: the channel was destroyed under its waiter, who frees it if
 * last and then blocks for good (the kernel's reader of a closed fd
 * does). Caller holds cm_mu, released here. */
static void orphaned(struct cm_channel *ch)
{
	int last = --ch->waiters == 0;
	pthread_mutex_unlock(&cm_mu);
	if (last)
		free(ch);
	for (;;)
		pause();
}

/* next_event: an event of ch, or NULL and *nonblock, or NULL and *gone
 * (every daemon gone, nothing queued). Takes cm_mu. */
static struct cm_event *next_event(struct cm_channel *ch, int *nonblock, int *gone)
{
	struct cm_event *e;
	pthread_mutex_lock(&cm_mu);
	if (ch->destroyed)
		orphaned(ch);
	cm_timewait_fire(ch);
	e = pop(ch);
	*nonblock = !e && (fcntl(ch->ch.fd, F_GETFL) & O_NONBLOCK);
	*gone = !e && all_dead();
	pthread_mutex_unlock(&cm_mu);
	return e;
}

CM_EXPORT int rdma_get_cm_event(struct rdma_event_channel *channel, struct rdma_cm_event **event)
{
	struct cm_channel *ch = to_cch(channel);
	struct cm_event *e;
	struct pollfd pfd = {.fd = channel ? channel->fd : -1, .events = POLLIN};
	int nonblock, gone = 0, err = 0;

	if (!channel || !event)
		return cm_fail(EINVAL);
	pthread_mutex_lock(&cm_mu);
	ch->waiters++;
	pthread_mutex_unlock(&cm_mu);
	for (;;) {
		poll_devices();
		cm_rearm();
		if ((e = next_event(ch, &nonblock, &gone)) || nonblock || gone)
			break;
		if (poll(&pfd, 1, -1) < 0) { /* EINTR too, as librdmacm's write to the ucma fd */
			err = errno;
			break;
		}
	}
	pthread_mutex_lock(&cm_mu);
	ch->waiters--;
	pthread_mutex_unlock(&cm_mu);
	if (!e)
		return cm_fail(gone ? ENODEV : err ? err : EAGAIN);
	if (e->mc)
		cm_mc_taken(e);
	cm_trace("%s status %d id %p", rdma_event_str(e->ev.event), e->ev.status, (void *)e->ev.id);
	*event = &e->ev;
	return 0;
}

CM_EXPORT int rdma_ack_cm_event(struct rdma_cm_event *event)
{
	struct cm_event *e = to_cev(event);
	if (!event)
		return cm_fail(EINVAL);
	pthread_mutex_lock(&cm_mu);
	if (event->event == RDMA_CM_EVENT_CONNECT_REQUEST && event->listen_id)
		cm_id_unref(to_cid(event->listen_id));
	cm_id_unref(e->owner);
	pthread_mutex_unlock(&cm_mu);
	free(e);
	return 0;
}
